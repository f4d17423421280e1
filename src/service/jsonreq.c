/* JSON request bodies of the service API: bounded parsing and typed fields with errors naming them.
 */
#include "service/jsonreq.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

/* One JSON object of at most max_len bytes nesting at most `depth`; errors
 * of `kind` naming `noun` ("the body", "the document"). */
static int parse_object(const char *text, size_t len, size_t max_len, int depth,
			enum err_kind kind, const char *noun, json_t **ret, struct err *e)
{
	json_error_t je;

	if (len == 0)
		return err_setk(e, kind, 0, "%s is empty; expected a JSON object", noun);
	if (len > max_len)
		return err_setk(e, kind, 0, "%s is %zu bytes; at most %zu are accepted", noun, len,
				max_len);
	/* jansson recurses once per level and has no depth option of its own. */
	if (json_nesting_exceeds(text, len, depth))
		return err_setk(e, kind, 0, "the JSON nests deeper than %d levels", depth);
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return err_setk(e, kind, 0, "malformed JSON at line %d, column %d: %s", je.line,
				je.column, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return err_setk(e, kind, 0, "expected a JSON object");
	}
	*ret = doc;
	return 0;
}

int jsonreq_parse(const char *text, size_t len, size_t max_len, json_t **ret, struct err *e)
{
	return parse_object(text, len, max_len, JSONREQ_MAX_DEPTH, ERR_USAGE, "the body", ret, e);
}

int jsonreq_parse_doc(const char *text, size_t len, size_t max_len, int depth, const char *what,
		      json_t **ret, struct err *e)
{
	if (parse_object(text, len, max_len, depth, ERR_INPUT, "the document", ret, e) < 0)
		return err_wrap(e, "%s", what);
	return 0;
}

/* A member name for an error: cut, and without control characters. */
static void shown_key(const char *key, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *k = key; *k && n + 4 < cap && n < 64; k++)
		out[n++] = (unsigned char)*k < 0x20 || *k == 0x7f ? '?' : *k;
	if (strlen(key) > 64 && n + 4 < cap)
		out[n++] = '.', out[n++] = '.', out[n++] = '.';
	out[n] = '\0';
}

int jsonreq_only_at(const json_t *obj, const char *const *allowed, const char *prefix,
		    struct err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		bool known = false;
		for (size_t i = 0; allowed[i] && !known; i++)
			known = strcmp(key, allowed[i]) == 0;
		if (!known) {
			char shown[80];
			shown_key(key, shown, sizeof(shown));
			return err_setk(e, ERR_INPUT, 0, "unknown field '%s%s'", prefix, shown);
		}
	}
	return 0;
}

int jsonreq_only(const json_t *obj, const char *const *allowed, struct err *e)
{
	return jsonreq_only_at(obj, allowed, "", e);
}

int jsonreq_string(const json_t *obj, const char *key, bool required, size_t max_len,
		   const char **ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return err_setk(e, ERR_INPUT, 0, "'%s' is required", key);
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return err_setk(e, ERR_INPUT, 0, "'%s' must be a string", key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > max_len)
		return err_setk(e, ERR_INPUT, 0, "'%s' must be 1 to %zu bytes, got %zu", key,
				max_len, n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return err_setk(e, ERR_INPUT, 0, "'%s' holds a control character", key);
	*ret = s;
	return 0;
}

int jsonreq_int_at(const json_t *obj, const char *prefix, const char *key, bool required,
		   int64_t lo, int64_t hi, int64_t *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return err_setk(e, ERR_INPUT, 0, "'%s%s' is required", prefix, key);
		return 0;
	}
	json_int_t n = json_integer_value(v);
	if (!json_is_integer(v) || n < lo || n > hi)
		return err_setk(e, ERR_INPUT, 0, "'%s%s' must be a whole number from %lld to %lld",
				prefix, key, (long long)lo, (long long)hi);
	*ret = (int64_t)n;
	return 0;
}

int jsonreq_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
		int64_t *ret, struct err *e)
{
	return jsonreq_int_at(obj, "", key, required, lo, hi, ret, e);
}

int jsonreq_bool(const json_t *obj, const char *key, bool def, bool *ret, struct err *e)
{
	const json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		*ret = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return err_setk(e, ERR_INPUT, 0, "'%s' must be true or false", key);
	*ret = json_is_true(v);
	return 0;
}
