/* JSON request bodies of the service API: bounded parsing and typed fields with errors naming them.
 */
#include "service/jsonreq.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

int jsonreq_parse(const char *text, size_t len, size_t max_len, json_t **ret, struct err *e)
{
	json_error_t je;

	if (len == 0)
		return err_setk(e, ERR_USAGE, 0, "the body is empty; expected a JSON object");
	if (len > max_len)
		return err_setk(e, ERR_USAGE, 0, "the body is %zu bytes; at most %zu are accepted",
				len, max_len);
	/* jansson recurses once per level and has no depth option of its own. */
	if (json_nesting_exceeds(text, len, JSONREQ_MAX_DEPTH))
		return err_setk(e, ERR_USAGE, 0, "the JSON nests deeper than %d levels",
				JSONREQ_MAX_DEPTH);
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return err_setk(e, ERR_USAGE, 0, "malformed JSON at line %d, column %d: %s",
				je.line, je.column, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return err_setk(e, ERR_USAGE, 0, "expected a JSON object");
	}
	*ret = doc;
	return 0;
}

int jsonreq_only(const json_t *obj, const char *const *allowed, struct err *e)
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
			size_t n = strlen(key);
			snprintf(shown, sizeof(shown), "%.64s%s", key, n > 64 ? "..." : "");
			return err_setk(e, ERR_INPUT, 0, "unknown field '%s'", shown);
		}
	}
	return 0;
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

int jsonreq_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
		int64_t *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return err_setk(e, ERR_INPUT, 0, "'%s' is required", key);
		return 0;
	}
	if (!json_is_integer(v))
		return err_setk(e, ERR_INPUT, 0, "'%s' must be a whole number", key);
	json_int_t n = json_integer_value(v);
	if (n < lo || n > hi)
		return err_setk(e, ERR_INPUT, 0, "'%s' must be from %lld to %lld, got %lld", key,
				(long long)lo, (long long)hi, (long long)n);
	*ret = (int64_t)n;
	return 0;
}
