/* Capped capture buffer for a program's output, UTF-8 repair, and text made safe to display. */
#ifndef PROCTOR_CAPBUF_H
#define PROCTOR_CAPBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Keeps the first `cap` bytes written to it and counts the rest.  Memory is
 * allocated once, at init, so a flood of any size costs `cap` bytes.
 * `data` is owned by the buffer and valid until capbuf_free().
 */
struct capbuf {
	char *data;
	size_t len;     /* bytes kept, <= cap */
	size_t cap;
	uint64_t total; /* bytes seen, kept or not */
	bool truncated; /* total > cap */
};

int capbuf_init(struct capbuf *b, size_t cap);
void capbuf_append(struct capbuf *b, const void *buf, size_t n);
void capbuf_free(struct capbuf *b);

/*
 * Return a newly allocated, NUL-terminated copy of [in, in+len) that is valid
 * UTF-8: every maximal ill-formed subsequence becomes U+FFFD (the W3C/Unicode
 * "substitution of maximal subparts" practice).  When `cut` is true the input
 * was truncated, and an incomplete but so-far-valid sequence at its very end
 * is dropped rather than replaced, so a cut never shows half a character.
 * NUL bytes are kept; `ret_len` receives the length.  Returns NULL on OOM.
 */
char *utf8_sanitize(const char *in, size_t len, bool cut, size_t *ret_len);

/*
 * Copy the C string at most `len` bytes of `src` into dst (cap bytes, always
 * NUL-terminated) as valid UTF-8: ill-formed sequences become U+FFFD, and
 * the copy is cut on a character boundary when it does not fit.  For text
 * that is shown as it is (a reason, a message).  Returns the length.
 */
size_t utf8_fix_into(char *dst, size_t cap, const char *src, size_t len);

/*
 * Write `len` bytes of `src` (any bytes: a file name from a sandbox) into
 * dst (cap bytes, always NUL-terminated) as text safe to quote in a one-line
 * message: printable, well-formed UTF-8 is kept; controls, DEL, C1
 * characters, backslashes and every byte of an ill-formed sequence become
 * \xNN.  Cut on a character (or escape) boundary, ending in "..." when cut,
 * so the result is valid UTF-8 whatever the input.  Returns dst.
 */
char *text_escape(char *dst, size_t cap, const char *src, size_t len);

/* Whether [s, s+len) is well-formed UTF-8 (what a JSON string holds). */
bool utf8_valid(const char *s, size_t len);

/*
 * The terminal's one sanitizer: the C string `src` as one line in dst (len
 * bytes, always NUL-terminated).  C0 and C1 controls and DEL become `repl`,
 * and so does every byte past ASCII when `src` is not UTF-8; a character
 * cut by the cap is dropped.  Messages quoting what a user typed or a file
 * name use '?'; prose from a report, whose newlines were breaks, ' '.
 */
void text_printable(char *dst, size_t len, const char *src, char repl);

#endif
