/* JUnit XML reports from pytest, JUnit 5, jest-junit, go-junit-report and node, read by SAX. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

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
 */

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

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
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
		while (n > 0 && is_space(*s)) {
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

		while (!st->text_cut && len > 0 && is_space(st->text[len - 1]))
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

/* Keep libxml2's first error, on one line with no control characters. */
static void on_error(void *ctx, xmlErrorPtr error)
{
	struct junit_state *st = state_of(ctx);
	char msg[200];
	size_t i;

	if (st->have_xml_err || !error || error->level < XML_ERR_ERROR)
		return;
	st->have_xml_err = true;
	snprintf(msg, sizeof(msg), "%s", error->message ? error->message : "unknown error");
	for (i = 0; msg[i] != '\0' && msg[i] != '\n'; i++) {
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = ' ';
	}
	msg[i] = '\0';
	err_set(&st->xml_err, 0, "not well-formed XML at line %d: %s", error->line, msg);
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
	xmlDocPtr doc;
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
	doc = xmlCtxtReadMemory(st.ctxt, buf, (int)len, NULL, "UTF-8",
				XML_PARSE_NONET | XML_PARSE_IGNORE_ENC);
	xmlFreeDoc(doc);

	if (st.stopped)
		*e = st.err;
	else if (!st.ctxt->wellFormed || st.have_xml_err)
		*e = st.have_xml_err ? st.xml_err : (struct err){.msg = "not well-formed XML"};
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
