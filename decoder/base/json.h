/* json.h — a streaming JSON writer with correct escaping, shared by every decoder command.
 *
 * Contract: callers open/close objects and arrays and emit members; the writer inserts commas
 * and escapes every string (control bytes as \u00XX, invalid UTF-8 bytes as \u00XX of the
 * byte, so output is always valid JSON). `key` is NULL inside arrays and at top level.
 * Non-finite doubles are written as null. Depth is limited to 64; deeper calls are ignored. */
#ifndef NCS_JSON_H
#define NCS_JSON_H
#include <stdint.h>
#include <stdio.h>

struct ncs_json {
  FILE *f;
  int depth;
  int pretty;
  unsigned char first[64]; /* 1 while the container at that depth has no member yet */
};

void ncs_json_init(struct ncs_json *j, FILE *f, int pretty);
void ncs_json_obj_begin(struct ncs_json *j, const char *key);
void ncs_json_obj_end(struct ncs_json *j);
void ncs_json_arr_begin(struct ncs_json *j, const char *key);
void ncs_json_arr_end(struct ncs_json *j);
void ncs_json_str(struct ncs_json *j, const char *key, const char *s);        /* NULL -> null */
void ncs_json_strn(struct ncs_json *j, const char *key, const char *s, size_t n);
void ncs_json_int(struct ncs_json *j, const char *key, int64_t v);
void ncs_json_uint(struct ncs_json *j, const char *key, uint64_t v);
void ncs_json_num(struct ncs_json *j, const char *key, double v);
void ncs_json_bool(struct ncs_json *j, const char *key, int v);
void ncs_json_null(struct ncs_json *j, const char *key);
/* Ends the document: closes nothing, writes a final newline. */
void ncs_json_done(struct ncs_json *j);

/* Writes s (n bytes) to f for a terminal or text file: printable ASCII and valid UTF-8 pass,
 * control bytes (ESC included) and invalid bytes become \xNN, so a hostile trace cannot move
 * the cursor or change colours. */
void ncs_text_escape(FILE *f, const char *s, size_t n);
/* Writes s (n bytes) to f escaped for HTML text and attribute values (& < > " '). */
void ncs_html_escape(FILE *f, const char *s, size_t n);
#endif
