/* libFuzzer target: junit_parse() on any bytes, the invariants of its report, and its prescan
 * against libxml2's own view. */
#include <libxml/parser.h>

#include "fuzz_report.h"

/*
 * The prescan (src/grade/junit.c) must see the markup as libxml2 does
 * wherever the document is well formed.  A second, plain libxml2 parse of
 * the same bytes measures what the caps bound, as libxml2 sees it, and
 * says whether the document is well formed:
 * - a document junit_parse() accepts never exceeds a cap in libxml2's view
 *   (the prescan did not undercount);
 * - a well-formed document without a DOCTYPE is never refused as not
 *   well-formed (the prescan is not stricter than XML).
 */
struct measure {
	size_t depth, ns, ns_at[512];
	size_t max_attrs, max_name, max_depth, max_ns;
	bool have_error;
};

static size_t qname_len(const xmlChar *prefix, const xmlChar *local)
{
	return (prefix ? strlen((const char *)prefix) + 1 : 0) + strlen((const char *)local);
}

static void measure_start(void *ctx, const xmlChar *localname, const xmlChar *prefix,
			  const xmlChar *uri, int n_ns, const xmlChar **ns, int n_attrs,
			  int n_defaulted, const xmlChar **attrs)
{
	struct measure *m = ((xmlParserCtxtPtr)ctx)->_private;
	size_t n;

	if (++m->depth > m->max_depth)
		m->max_depth = m->depth;
	if ((size_t)(n_attrs + n_ns) > m->max_attrs)
		m->max_attrs = (size_t)(n_attrs + n_ns);
	n = qname_len(prefix, localname);
	for (int i = 0; i < n_attrs; i++) {
		size_t a = qname_len(attrs[i * 5 + 1], attrs[i * 5]);
		n = a > n ? a : n;
	}
	for (int i = 0; i < n_ns; i++) {
		size_t a = ns[i * 2] ? 6 + strlen((const char *)ns[i * 2]) : 5; /* xmlns:p */
		n = a > n ? a : n;
	}
	if (n > m->max_name)
		m->max_name = n;
	if (m->depth < sizeof(m->ns_at) / sizeof(m->ns_at[0]))
		m->ns_at[m->depth] = (size_t)n_ns;
	m->ns += (size_t)n_ns;
	if (m->ns > m->max_ns)
		m->max_ns = m->ns;
}

static void measure_end(void *ctx, const xmlChar *localname, const xmlChar *prefix,
			const xmlChar *uri)
{
	struct measure *m = ((xmlParserCtxtPtr)ctx)->_private;

	if (m->depth < sizeof(m->ns_at) / sizeof(m->ns_at[0]))
		m->ns -= m->ns_at[m->depth];
	m->depth--;
}

static void measure_error(void *ctx, xmlErrorPtr error)
{
	struct measure *m = ((xmlParserCtxtPtr)ctx)->_private;

	if (error && error->level >= XML_ERR_ERROR)
		m->have_error = true;
}

static void ignore_generic(void *ctx, const char *msg, ...)
{
}

/* libxml2's plain view: true when the document is well formed. */
static bool measure(const uint8_t *data, size_t size, struct measure *m)
{
	xmlSAXHandler sax = {0};
	xmlParserCtxtPtr ctxt;
	bool ok;

	*m = (struct measure){0};
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = measure_start;
	sax.endElementNs = measure_end;
	sax.serror = measure_error;
	ctxt = xmlNewParserCtxt();
	if (!ctxt)
		return false;
	*ctxt->sax = sax;
	ctxt->_private = m;
	xmlFreeDoc(xmlCtxtReadMemory(ctxt, (const char *)data, (int)size, NULL, "UTF-8",
				     XML_PARSE_NONET | XML_PARSE_IGNORE_ENC));
	ok = ctxt->wellFormed && !m->have_error;
	xmlFreeParserCtxt(ctxt);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_caps caps;
	struct report r;
	struct measure m;
	struct err e;
	int rc;

	fuzz_report(junit_parse, data, size);

	if (size == 0 || size > (1u << 20))
		return 0;
	xmlSetGenericErrorFunc(NULL, ignore_generic);
	fuzz_caps(&caps);
	rc = junit_parse((const char *)data, size, &caps, &r, &e);
	if (rc == 0)
		report_free(&r);
	bool well_formed = measure(data, size, &m);
	if (rc == 0 &&
	    (!well_formed || m.max_attrs > caps.max_attrs || m.max_name > caps.max_name ||
	     m.max_depth > caps.max_depth || m.max_ns > caps.max_ns))
		abort(); /* accepted past a cap: the prescan undercounted */
	if (rc < 0 && well_formed && !memmem(data, size, "<!DOCTYPE", 9) &&
	    strstr(e.msg, "not well-formed"))
		abort(); /* a well-formed document refused as malformed */
	return 0;
}
