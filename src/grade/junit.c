/* JUnit XML reports from pytest, JUnit 5, jest-junit, go-junit-report and node, read by SAX. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "capbuf.h"
#include "grade/report.h"

/*
 * The document comes from a runner the submission controls, so the parse is
 * SAX (streaming): memory is bounded by the caps, never by the document's
 * element count, and no tree is built.
 *
 * SECURITY: entities.  No XML_PARSE_NOENT, DTDLOAD, DTDATTR or HUGE; NONET;
 * and any DOCTYPE stops the parse the moment libxml2 reports it, before its
 * internal subset is read, so no entity is ever declared, let alone expanded
 * (billion laughs, file:///etc/passwd).  No producer we accept writes one.
 * The only references left are the five predefined ones and character
 * references.  The encoding is forced to UTF-8, which every producer writes:
 * no iconv converter is ever reached from hostile input.
 *
 * Outcome of a <testcase>: from its most severe child <error> > <skipped> >
 * <failure>, else passed.  <skipped> outranks <failure> because node writes
 * a failing `todo` test as both, and a TODO failure is not a failure (as in
 * TAP).  The message is that child's `message` attribute, else its text
 * (jest-junit and JUnit 5's <skipped> have no attribute), trimmed.
 *
 * Time.  libxml2 2.9 (Debian 12's) checks the attributes of a start tag for
 * duplicates pairwise, and resolves every element and prefixed attribute
 * by walking all namespace declarations in scope: one <testcase> with
 * 700,000 attributes took it a minute.  So before libxml2 sees a document,
 * one linear pass (prescan) finds its markup the way the XML grammar does
 * and refuses it when an element has more than caps->max_attrs attributes,
 * a name is longer than caps->max_name bytes, elements nest deeper than
 * caps->max_depth or more than caps->max_ns namespace declarations are in
 * scope.  Within those bounds libxml2's work per byte is bounded, and a
 * parse costs time in proportion to the document's size.
 *
 * The pass and libxml2 need only agree where the document is well formed.
 * Past its first error libxml2 carries on and may read markup where the
 * pass saw none (a comment holding a bad character is resumed as content,
 * and its "<a ...>" parsed as a tag), so libxml2 reads the document through
 * a callback (feed_read) a few KiB at a time and gets nothing more once it
 * has reported an error: what it parses unchecked is what it had buffered.
 * Markup the pass cannot read is not well-formed: libxml2 then gets the
 * document only up to 4 KiB past that point, enough to name the error in
 * its own words, and the document is refused whatever libxml2 says.
 */

/* ---- prescan: the markup's shape, in one linear pass ---- */

/* How much of a document libxml2 still reads past markup the pass could
 * not read: where it says what is wrong, not where it could do much work. */
#define PRESCAN_SLACK	  4096u
#define PRESCAN_MAX_DEPTH 4096u
/* What libxml2 gets per read: it asks for more when under 250 bytes are
 * left, so it never holds more than this and a little unparsed. */
#define FEED_CHUNK 4096u

enum prescan_result {
	PRESCAN_OK,	   /* every bound holds */
	PRESCAN_REFUSED,   /* a bound does not: e says which, and where */
	PRESCAN_MALFORMED, /* markup it cannot read, where it stopped: e says what */
};

struct prescan {
	const char *buf;
	size_t len, pos;
	const struct report_caps *caps;
	size_t depth, max_depth;
	size_t ns;     /* namespace declarations in scope */
	size_t *ns_at; /* [depth]: declared by the open element at that depth */
	struct err *e;
};

static bool xml_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t line_at(const char *buf, size_t pos)
{
	size_t line = 1;

	for (const char *p = buf, *end = buf + pos; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		line++;
	return line;
}

static enum prescan_result refuse(struct prescan *ps, const char *what)
{
	err_set(ps->e, 0, "%s at line %zu", what, line_at(ps->buf, ps->pos));
	return PRESCAN_REFUSED;
}

static enum prescan_result malformed(struct prescan *ps, const char *what)
{
	err_set(ps->e, 0, "not well-formed XML at line %zu: %s", line_at(ps->buf, ps->pos), what);
	return PRESCAN_MALFORMED;
}

static size_t skip_space(struct prescan *ps)
{
	size_t from = ps->pos;

	while (ps->pos < ps->len && xml_space(ps->buf[ps->pos]))
		ps->pos++;
	return ps->pos - from;
}

/* Whether c can be part of a name as the pass reads one. */
static bool name_byte(char c)
{
	switch (c) {
	case ' ':
	case '\t':
	case '\n':
	case '\r':
	case '<':
	case '>':
	case '/':
	case '=':
	case '"':
	case '\'':
		return false;
	default:
		return true;
	}
}

/*
 * The name at pos: the bytes up to a space or one of <>/="'.  No XML name
 * holds any of those, and in well-formed markup a name is followed by one,
 * so this is the XML name wherever the document is well formed.
 * Returns its length (0: none), or SIZE_MAX when it is over max_name.
 */
static size_t name_at(struct prescan *ps)
{
	size_t n = 0, left = ps->len - ps->pos;
	const char *s = ps->buf + ps->pos;

	while (n < left && name_byte(s[n])) {
		if (++n > ps->caps->max_name)
			return SIZE_MAX;
	}
	return n;
}

static bool is_ns_decl(const char *s, size_t n)
{
	return (n == 5 && memcmp(s, "xmlns", 5) == 0) || (n > 6 && memcmp(s, "xmlns:", 6) == 0);
}

/* After a markup opener: skip past the first `close` from ps->pos. */
static enum prescan_result skip_to(struct prescan *ps, const char *close, const char *what)
{
	const char *end = memmem(ps->buf + ps->pos, ps->len - ps->pos, close, strlen(close));

	if (!end)
		return malformed(ps, what);
	ps->pos = (size_t)(end - ps->buf) + strlen(close);
	return PRESCAN_OK;
}

/* '<' Name (S Attribute)* S? '/'? '>', at ps->pos. */
static enum prescan_result start_tag(struct prescan *ps)
{
	size_t n, attrs = 0, ns = 0;
	bool empty = false;

	ps->pos++;
	n = name_at(ps);
	if (n == SIZE_MAX)
		return refuse(ps, "an element name is too long");
	if (n == 0)
		return malformed(ps, "'<' not followed by a name");
	ps->pos += n;
	for (;;) {
		size_t space = skip_space(ps);

		if (ps->pos >= ps->len)
			return malformed(ps, "a start tag is not closed");
		if (ps->buf[ps->pos] == '>') {
			ps->pos++;
			break;
		}
		if (ps->buf[ps->pos] == '/') {
			if (ps->pos + 1 >= ps->len || ps->buf[ps->pos + 1] != '>')
				return malformed(ps, "'/' in a start tag");
			ps->pos += 2;
			empty = true;
			break;
		}
		if (space == 0)
			return malformed(ps, "no space before an attribute");
		n = name_at(ps);
		if (n == SIZE_MAX)
			return refuse(ps, "an attribute name is too long");
		if (n == 0)
			return malformed(ps, "an attribute without a name");
		if (++attrs > ps->caps->max_attrs) {
			char what[80];

			snprintf(what, sizeof(what), "an element has more than %zu attributes",
				 ps->caps->max_attrs);
			return refuse(ps, what);
		}
		if (is_ns_decl(ps->buf + ps->pos, n) && ps->ns + ++ns > ps->caps->max_ns) {
			char what[80];

			snprintf(what, sizeof(what),
				 "more than %zu XML namespace declarations in scope",
				 ps->caps->max_ns);
			return refuse(ps, what);
		}
		ps->pos += n;
		skip_space(ps);
		if (ps->pos >= ps->len || ps->buf[ps->pos] != '=')
			return malformed(ps, "an attribute without a value");
		ps->pos++;
		skip_space(ps);
		if (ps->pos >= ps->len || (ps->buf[ps->pos] != '"' && ps->buf[ps->pos] != '\''))
			return malformed(ps, "an attribute value without quotes");
		const char *v = ps->buf + ps->pos + 1,
			   *close = memchr(v, ps->buf[ps->pos], ps->len - ps->pos - 1), *lt;
		if (!close)
			return malformed(ps, "an attribute value is not closed");
		lt = memchr(v, '<', (size_t)(close - v));
		if (lt) {
			ps->pos = (size_t)(lt - ps->buf);
			return malformed(ps, "'<' in an attribute value");
		}
		ps->pos = (size_t)(close - ps->buf) + 1;
	}
	if (ps->depth + 1 > ps->max_depth) {
		err_set(ps->e, 0, "XML nested deeper than %zu elements", ps->max_depth);
		return PRESCAN_REFUSED;
	}
	if (!empty) {
		ps->ns_at[++ps->depth] = ns;
		ps->ns += ns;
	}
	return PRESCAN_OK;
}

/* '</' Name S? '>', at ps->pos.  Whether it matches is libxml2's to say. */
static enum prescan_result end_tag(struct prescan *ps)
{
	size_t n;

	ps->pos += 2;
	n = name_at(ps);
	if (n == SIZE_MAX)
		return refuse(ps, "an element name is too long");
	if (n == 0)
		return malformed(ps, "'</' not followed by a name");
	ps->pos += n;
	skip_space(ps);
	if (ps->pos >= ps->len || ps->buf[ps->pos] != '>')
		return malformed(ps, "an end tag is not closed");
	if (ps->depth == 0)
		return malformed(ps, "an end tag without a start tag");
	ps->pos++;
	ps->ns -= ps->ns_at[ps->depth--];
	return PRESCAN_OK;
}

static enum prescan_result prescan_markup(struct prescan *ps)
{
	const char *s = ps->buf + ps->pos;
	size_t left = ps->len - ps->pos;

	if (left >= 4 && memcmp(s, "<!--", 4) == 0) {
		ps->pos += 4;
		return skip_to(ps, "-->", "a comment is not closed");
	}
	if (left >= 9 && memcmp(s, "<![CDATA[", 9) == 0) {
		ps->pos += 9;
		return skip_to(ps, "]]>", "a CDATA section is not closed");
	}
	if (left >= 9 && memcmp(s, "<!DOCTYPE", 9) == 0) {
		err_set(ps->e, 0, "a DOCTYPE is not allowed in a test report");
		return PRESCAN_REFUSED;
	}
	if (left >= 2 && s[1] == '!')
		return malformed(ps, "'<!' not followed by a comment or CDATA");
	if (left >= 2 && s[1] == '?') {
		ps->pos += 2;
		return skip_to(ps, "?>", "a processing instruction is not closed");
	}
	if (left >= 2 && s[1] == '/')
		return end_tag(ps);
	return start_tag(ps);
}

/*
 * One pass over the document's markup: tags, comments, CDATA sections and
 * processing instructions; text and references are left to libxml2.  On
 * PRESCAN_MALFORMED, *ret_stop is where the pass stopped reading.
 */
static enum prescan_result prescan(const char *buf, size_t len, const struct report_caps *caps,
				   size_t *ret_stop, struct err *e)
{
	struct prescan ps = {.buf = buf, .len = len, .caps = caps, .e = e};
	enum prescan_result rc = PRESCAN_OK;

	/* (libxml2 itself stops at 256 levels without XML_PARSE_HUGE.) */
	ps.max_depth = caps->max_depth < PRESCAN_MAX_DEPTH ? caps->max_depth : PRESCAN_MAX_DEPTH;
	ps.ns_at = calloc(ps.max_depth + 1, sizeof(*ps.ns_at));
	if (!ps.ns_at) {
		err_set(e, ENOMEM, "XML prescan");
		return PRESCAN_REFUSED;
	}
	while (rc == PRESCAN_OK && ps.pos < len) {
		const char *lt = memchr(buf + ps.pos, '<', len - ps.pos);

		if (!lt)
			break;
		ps.pos = (size_t)(lt - buf);
		rc = prescan_markup(&ps);
	}
	free(ps.ns_at);
	*ret_stop = ps.pos;
	return rc;
}

/* ---- the SAX parse ---- */

enum result_kind { RESULT_NONE, RESULT_FAILURE, RESULT_SKIPPED, RESULT_ERROR };

struct junit_state {
	xmlParserCtxtPtr ctxt;
	const struct report_caps *caps;
	struct report report;
	size_t depth; /* of the current element; the root is 1 */
	bool stopped; /* we stopped the parser: `err` says why */
	struct err err;
	struct err xml_err; /* libxml2's first error */
	bool have_xml_err;
	const char *feed; /* what feed_read gives libxml2 */
	size_t feed_len, feed_pos;

	/* The <testcase> being read, when tc_depth != 0. */
	size_t tc_depth;
	bool tc_dropped; /* the report is full: only its end is looked for */
	struct report_entry tc;
	enum result_kind tc_kind;

	/* Its <failure>/<error>/<skipped> child being read, when res_depth != 0. */
	size_t res_depth;
	enum result_kind res_kind;
	char *res_message; /* from the attribute */
	char *text;	   /* else the text, max_message + 4 bytes kept */
	size_t text_len;
	bool text_cut;
};

static struct junit_state *state_of(void *ctx)
{
	return ((xmlParserCtxtPtr)ctx)->_private;
}

static void stop(struct junit_state *st)
{
	st->stopped = true;
	xmlStopParser(st->ctxt);
}

static void stop_oom(struct junit_state *st, const char *what)
{
	err_set(&st->err, ENOMEM, "%s", what);
	stop(st);
}

/* SAX2 attributes come as (localname, prefix, URI, value, end) quintuples. */
static const xmlChar **find_attr(int n, const xmlChar **attrs, const char *name)
{
	for (int i = 0; i < n; i++) {
		if (strcmp((const char *)attrs[i * 5], name) == 0)
			return &attrs[i * 5];
	}
	return NULL;
}

/*
 * An attribute value as a capped string, or NULL if absent (*ret_oom tells
 * the two NULLs apart).  Without entity substitution libxml2 hands '&' over
 * as "&#38;" (its reparsing convention): that is the only '&' a value can
 * hold, so it is decoded back here.
 */
static char *attr_str(struct junit_state *st, int n, const xmlChar **attrs, const char *name,
		      bool *ret_oom)
{
	const xmlChar **a = find_attr(n, attrs, name);
	const char *v, *end;
	char *buf, *out;
	size_t len = 0;

	*ret_oom = false;
	if (!a)
		return NULL;
	v = (const char *)a[3];
	end = (const char *)a[4];
	buf = malloc((size_t)(end - v) + 1);
	if (!buf) {
		*ret_oom = true;
		return NULL;
	}
	while (v < end) {
		if (end - v >= 5 && memcmp(v, "&#38;", 5) == 0) {
			buf[len++] = '&';
			v += 5;
		} else {
			buf[len++] = *v++;
		}
	}
	out = report_str(buf, len, st->caps->max_message, false);
	free(buf);
	*ret_oom = out == NULL;
	return out;
}

static enum result_kind result_kind_of(const char *name)
{
	if (strcmp(name, "failure") == 0)
		return RESULT_FAILURE;
	if (strcmp(name, "error") == 0)
		return RESULT_ERROR;
	if (strcmp(name, "skipped") == 0)
		return RESULT_SKIPPED;
	return RESULT_NONE;
}

static void start_testcase(struct junit_state *st, int n, const xmlChar **attrs)
{
	bool oom1, oom2;

	st->tc = (struct report_entry){.score = -1, .max_score = -1};
	st->tc_kind = RESULT_NONE;
	st->tc_depth = st->depth;
	st->tc_dropped = st->report.n >= st->caps->max_entries;
	if (st->tc_dropped) {
		st->report.truncated = true;
		return;
	}
	st->tc.name = attr_str(st, n, attrs, "name", &oom1);
	st->tc.classname = attr_str(st, n, attrs, "classname", &oom2);
	if (!st->tc.name && !oom1)
		st->tc.name = strdup("");
	if (!st->tc.name || oom2)
		stop_oom(st, "testcase name");
}

static void start_result(struct junit_state *st, enum result_kind kind, int n,
			 const xmlChar **attrs)
{
	bool oom;

	st->res_depth = st->depth;
	st->res_kind = kind;
	st->text_len = 0;
	st->text_cut = false;
	st->res_message = attr_str(st, n, attrs, "message", &oom);
	if (oom) {
		stop_oom(st, "failure message");
		return;
	}
	if (st->res_message && st->res_message[0] == '\0') {
		free(st->res_message);
		st->res_message = NULL; /* an empty attribute: use the text */
	}
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
		     int n_ns, const xmlChar **ns, int n_attrs, int n_defaulted,
		     const xmlChar **attrs)
{
	struct junit_state *st = state_of(ctx);
	const char *name = (const char *)localname;
	enum result_kind kind;

	if (st->stopped)
		return;
	if (++st->depth > st->caps->max_depth) {
		err_set(&st->err, 0, "XML nested deeper than %zu elements", st->caps->max_depth);
		stop(st);
		return;
	}
	if (st->depth == 1 && strcmp(name, "testsuites") != 0 && strcmp(name, "testsuite") != 0) {
		err_set(&st->err, 0, "no <testsuites> or <testsuite> root element");
		stop(st);
		return;
	}
	if (st->tc_depth == 0) {
		if (strcmp(name, "testcase") == 0)
			start_testcase(st, n_attrs, attrs);
		return;
	}
	kind = result_kind_of(name);
	if (!st->tc_dropped && st->depth == st->tc_depth + 1 && kind != RESULT_NONE)
		start_result(st, kind, n_attrs, attrs);
}

static void on_text(void *ctx, const xmlChar *ch, int len)
{
	struct junit_state *st = state_of(ctx);
	const char *s = (const char *)ch;
	size_t n = (size_t)len, room, keep = st->caps->max_message + 4;

	if (st->stopped || st->res_depth == 0 || st->res_message || len <= 0)
		return;
	if (st->text_len == 0) {
		while (n > 0 && xml_space(*s)) {
			s++;
			n--;
		}
		if (n == 0)
			return;
	}
	if (!st->text) {
		st->text = malloc(keep);
		if (!st->text) {
			stop_oom(st, "failure text");
			return;
		}
	}
	room = keep - st->text_len;
	if (n > room) {
		n = room;
		st->text_cut = true;
	}
	memcpy(st->text + st->text_len, s, n);
	st->text_len += n;
}

static void end_result(struct junit_state *st)
{
	char *msg = st->res_message;

	st->res_message = NULL;
	st->res_depth = 0;
	if (!msg && st->text_len > 0) {
		size_t len = st->text_len;

		while (!st->text_cut && len > 0 && xml_space(st->text[len - 1]))
			len--;
		msg = report_str(st->text, len, st->caps->max_message, st->text_cut);
		if (!msg) {
			stop_oom(st, "failure text");
			return;
		}
	}
	if (st->res_kind > st->tc_kind) {
		st->tc_kind = st->res_kind;
		free(st->tc.message);
		st->tc.message = msg;
	} else {
		free(msg);
	}
}

static void end_testcase(struct junit_state *st)
{
	static const enum test_outcome outcomes[] = {
	    [RESULT_NONE] = OUTCOME_PASSED,
	    [RESULT_FAILURE] = OUTCOME_FAILED,
	    [RESULT_SKIPPED] = OUTCOME_SKIPPED,
	    [RESULT_ERROR] = OUTCOME_ERROR,
	};

	st->tc_depth = 0;
	if (st->tc_dropped)
		return;
	st->tc.outcome = outcomes[st->tc_kind];
	if (report_append(&st->report, st->caps, &st->tc, &st->err) < 0)
		stop(st);
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri)
{
	struct junit_state *st = state_of(ctx);

	if (st->stopped)
		return;
	if (st->res_depth == st->depth)
		end_result(st);
	if (!st->stopped && st->tc_depth == st->depth)
		end_testcase(st);
	st->depth--;
}

static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
		       const xmlChar *system_id)
{
	struct junit_state *st = state_of(ctx);

	if (st->stopped)
		return;
	err_set(&st->err, 0, "a DOCTYPE is not allowed in a test report");
	stop(st);
}

/*
 * Keep libxml2's first error, on one line with no control characters, as
 * valid UTF-8: it quotes names from the document, and a cut must not split
 * a character (the message travels in JSON).  From here feed_read gives
 * libxml2 no more input.  (xmlStopParser() is no way to stop it here: in
 * libxml2 2.9 it frees the input under the function that is reporting the
 * error, which may still read it.)
 */
static void on_error(void *ctx, xmlErrorPtr error)
{
	struct junit_state *st = state_of(ctx);
	const char *text;
	char msg[200];
	size_t i;

	if (st->have_xml_err || !error || error->level < XML_ERR_ERROR)
		return;
	st->have_xml_err = true;
	text = error->message ? error->message : "unknown error";
	utf8_fix_into(msg, sizeof(msg), text, strcspn(text, "\n"));
	for (i = 0; msg[i] != '\0'; i++) {
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = ' ';
	}
	err_set(&st->xml_err, 0, "not well-formed XML at line %d: %s", error->line, msg);
}

/* libxml2's input: at most FEED_CHUNK bytes a call, none after an error. */
static int feed_read(void *ctx, char *out, int len)
{
	struct junit_state *st = ctx;
	size_t n = st->feed_len - st->feed_pos;

	if (st->have_xml_err || st->stopped || len <= 0)
		return 0;
	if (n > (size_t)len)
		n = (size_t)len;
	if (n > FEED_CHUNK)
		n = FEED_CHUNK;
	memcpy(out, st->feed + st->feed_pos, n);
	st->feed_pos += n;
	return (int)n;
}

static void state_free(struct junit_state *st)
{
	free(st->tc.name);
	free(st->tc.classname);
	free(st->tc.message);
	free(st->res_message);
	free(st->text);
	report_free(&st->report);
}

int junit_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
		struct err *e)
{
	struct report_caps defaults;
	struct junit_state st = {0};
	xmlSAXHandler sax = {0};
	enum prescan_result shape;
	struct err scan_err;
	xmlDocPtr doc;
	size_t stop;
	int rc = -1;

	if (!caps) {
		report_caps_default(&defaults);
		caps = &defaults;
	}
	if (len > caps->max_bytes || len > INT_MAX)
		return err_set(e, 0, "JUnit report is %zu bytes, more than %zu", len,
			       caps->max_bytes);
	if (len == 0)
		return err_set(e, 0, "JUnit report is empty");
	shape = prescan(buf, len, caps, &stop, &scan_err);
	if (shape == PRESCAN_REFUSED) {
		*e = scan_err;
		return -1;
	}
	st.feed = buf;
	st.feed_len = len;
	if (shape == PRESCAN_MALFORMED && len > PRESCAN_SLACK && stop < len - PRESCAN_SLACK)
		st.feed_len = stop + PRESCAN_SLACK;
	/* libxml2 skips a UTF-8 byte order mark only in what it holds when
	 * the encoding is set, and through feed_read it holds nothing yet. */
	if (st.feed_len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		st.feed_pos = 3;

	/* Only the callbacks below: no tree, no comments or PIs kept. */
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = on_start;
	sax.endElementNs = on_end;
	sax.characters = on_text;
	sax.cdataBlock = on_text;
	sax.internalSubset = on_doctype;
	sax.externalSubset = on_doctype;
	sax.serror = on_error;

	st.caps = caps;
	st.ctxt = xmlNewParserCtxt();
	if (!st.ctxt)
		return err_set(e, ENOMEM, "XML parser");
	*st.ctxt->sax = sax;
	st.ctxt->_private = &st;
	doc = xmlCtxtReadIO(st.ctxt, feed_read, NULL, &st, NULL, "UTF-8",
			    XML_PARSE_NONET | XML_PARSE_IGNORE_ENC);
	xmlFreeDoc(doc);

	if (st.stopped)
		*e = st.err;
	else if (st.have_xml_err)
		*e = st.xml_err;
	else if (shape == PRESCAN_MALFORMED)
		*e = scan_err; /* whatever libxml2 made of it: the pass could not read it */
	else if (!st.ctxt->wellFormed)
		*e = (struct err){.msg = "not well-formed XML"};
	else
		rc = 0;
	xmlFreeParserCtxt(st.ctxt);
	if (rc == 0) {
		*ret = st.report;
		st.report = (struct report){0};
	}
	state_free(&st);
	return rc;
}
