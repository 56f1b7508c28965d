/* json.c — the streaming JSON writer and the text/HTML escapers (json.h).
 *
 * Contract: see json.h. Output is valid JSON whatever bytes the strings hold: control
 * characters, quotes and backslashes are escaped, and each byte that is not part of a valid
 * UTF-8 sequence (overlong forms, surrogates and code points past U+10FFFF included) is
 * written as \u00XX of that byte. */
#include "base/json.h"

#include <math.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
  else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
  else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
  return len;
}

void ncs_json_init(struct ncs_json *j, FILE *f, int pretty) {
  memset(j, 0, sizeof *j);
  j->f = f;
  j->pretty = pretty;
  j->first[0] = 1;
}

static void indent(struct ncs_json *j) {
  if (!j->pretty) return;
#define SP16 "                "
  static const char nl_spaces[] = "\n" SP16 SP16 SP16 SP16 SP16 SP16 SP16 SP16; /* two spaces a level, 64 */
#undef SP16
  size_t w = 1 + 2 * (size_t)(j->depth > 0 ? j->depth : 0);
  fwrite(nl_spaces, 1, w < sizeof nl_spaces - 1 ? w : sizeof nl_spaces - 1, j->f);
}

/* Bytes written as they are: printable ASCII but the quote and the backslash. */
static int plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

static void write_str(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  for (size_t i = 0; i < n;) {
    size_t run = i;
    while (run < n && plain(p[run])) run++;
    if (run > i) { fwrite(p + i, 1, run - i, f); i = run; continue; } /* one write per run */
    unsigned char c = p[i];
    if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); i++; continue; }
    if (c < 0x20 || c == 0x7f) {
      switch (c) {
      case '\n': fputs("\\n", f); break;
      case '\t': fputs("\\t", f); break;
      case '\r': fputs("\\r", f); break;
      default: fprintf(f, "\\u%04x", c);
      }
      i++;
      continue;
    }
    size_t l = utf8_len(p + i, n - i);
    if (l == 0) { fprintf(f, "\\u%04x", c); i++; continue; }
    fwrite(p + i, 1, l, f);
    i += l;
  }
  fputc('"', f);
}

/* Comma, newline and key before a value. Returns 0 when the value must be skipped. */
static int member(struct ncs_json *j, const char *key) {
  if (j->depth >= 64) return 0;
  if (!j->first[j->depth]) fputc(',', j->f);
  j->first[j->depth] = 0;
  if (j->depth > 0) indent(j);
  if (key && j->depth > 0) {
    write_str(j->f, key, strlen(key));
    fputs(j->pretty ? ": " : ":", j->f);
  }
  return 1;
}

/* A container opened at depth d is written only when d < 63 (its members use first[d+1]);
 * deeper ones are counted, not written, so opens and closes stay balanced. */
static void open_(struct ncs_json *j, const char *key, char c) {
  if (j->depth >= 63 || !member(j, key)) { j->depth++; return; }
  fputc(c, j->f);
  j->depth++;
  j->first[j->depth] = 1;
}

static void close_(struct ncs_json *j, char c) {
  if (j->depth <= 0) return;
  j->depth--;
  if (j->depth >= 63) return; /* the container was never opened */
  if (!j->first[j->depth + 1]) indent(j);
  fputc(c, j->f);
}

void ncs_json_obj_begin(struct ncs_json *j, const char *key) { open_(j, key, '{'); }
void ncs_json_obj_end(struct ncs_json *j) { close_(j, '}'); }
void ncs_json_arr_begin(struct ncs_json *j, const char *key) { open_(j, key, '['); }
void ncs_json_arr_end(struct ncs_json *j) { close_(j, ']'); }

void ncs_json_strn(struct ncs_json *j, const char *key, const char *s, size_t n) {
  if (!member(j, key)) return;
  if (!s) fputs("null", j->f);
  else write_str(j->f, s, n);
}
void ncs_json_str(struct ncs_json *j, const char *key, const char *s) {
  ncs_json_strn(j, key, s, s ? strlen(s) : 0);
}
/* Writes a minus sign when neg, the decimal digits of m, then tail (printf's %d / %.1f of an
 * integer, without its format parsing). */
static void put_dec(FILE *f, int neg, uint64_t m, const char *tail, size_t ntail) {
  char b[24 + 2];
  char *e = b + sizeof b, *p = e - ntail;
  memcpy(p, tail, ntail);
  do { *--p = (char)('0' + m % 10); m /= 10; } while (m);
  if (neg) *--p = '-';
  fwrite(p, 1, (size_t)(e - p), f);
}
void ncs_json_int(struct ncs_json *j, const char *key, int64_t v) {
  if (member(j, key)) put_dec(j->f, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, "", 0);
}
void ncs_json_uint(struct ncs_json *j, const char *key, uint64_t v) {
  if (member(j, key)) put_dec(j->f, 0, v, "", 0);
}
void ncs_json_num(struct ncs_json *j, const char *key, double v) {
  if (!member(j, key)) return;
  if (!isfinite(v)) fputs("null", j->f);
  else if (v == floor(v) && fabs(v) < 1e15) put_dec(j->f, signbit(v), (uint64_t)fabs(v), ".0", 2); /* as %.1f: -0.0 too */
  else fprintf(j->f, "%.12g", v);
}
void ncs_json_bool(struct ncs_json *j, const char *key, int v) {
  if (member(j, key)) fputs(v ? "true" : "false", j->f);
}
void ncs_json_null(struct ncs_json *j, const char *key) {
  if (member(j, key)) fputs("null", j->f);
}
void ncs_json_done(struct ncs_json *j) { fputc('\n', j->f); }

void ncs_text_escape(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f) { /* a run of them in one write */
      size_t run = i + 1;
      while (run < n && p[run] >= 0x20 && p[run] < 0x7f) run++;
      fwrite(p + i, 1, run - i, f);
      i = run;
      continue;
    }
    size_t l = c >= 0x80 ? utf8_len(p + i, n - i) : 0;
    /* C1 controls (U+0080..U+009F) act as terminal controls too */
    if (l == 2 && c == 0xc2 && p[i + 1] < 0xa0) l = 0;
    if (l == 0) { fprintf(f, "\\x%02x", c); i++; continue; }
    fwrite(p + i, 1, l, f);
    i += l;
  }
}

void ncs_html_escape(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    switch (c) {
    case '&': fputs("&amp;", f); i++; continue;
    case '<': fputs("&lt;", f); i++; continue;
    case '>': fputs("&gt;", f); i++; continue;
    case '"': fputs("&quot;", f); i++; continue;
    case '\'': fputs("&#39;", f); i++; continue;
    default: break;
    }
    if (c < 0x20 && c != '\n' && c != '\t') { fprintf(f, "&#xfffd;"); i++; continue; }
    if (c < 0x80) { fputc(c, f); i++; continue; }
    size_t l = utf8_len(p + i, n - i);
    if (l == 0) { fputs("&#xfffd;", f); i++; continue; }
    fwrite(p + i, 1, l, f);
    i += l;
  }
}
