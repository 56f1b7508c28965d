/* encode.h — the coders of every trace record (docs/FORMAT.md), header-only, expanded from
 * the declarations in ncclscope/records.h.
 *
 * Contract: the one place that turns record structs into bytes and back. The shim's writer,
 * the synthetic trace generator, the tests and the fuzzers encode through here, and the
 * decoder (decoder/io/trace.c, model/topo.c, analysis/profile.c) decodes through here, so writer and reader
 * cannot disagree: neither writes a field order of its own.
 *   - ncs_encode_call() is the hot-path CALL encoder: no allocation, no bounds checks
 *     needed beyond the caller giving NCS_CALL_MAX bytes; it keeps the per-chunk delta state.
 *     ncs_encode_call_run() writes the same bytes, faster for a run of like calls (a memo);
 *     ncs_encode_call_or_run() writes such a run as CALL_RUN records (format 5.0, row chunks
 *     only), which ncs_dec_call_run reads back as the same calls.
 *   - Every record is appended to a bounded byte writer (struct ncs_wbuf) either as a body
 *     only (ncs_enc_<name>_body, for ncs_emit() in shim/hooks.h) or as a whole record with
 *     type and length (ncs_enc_<name>). A writer that runs out of room sets `overflow`, stops
 *     writing and takes the unfinished record back out; nothing is written past `cap`.
 *     Reset with ncs_wbuf_init (e.g. after compressing the buffer into a chunk).
 *   - Every body is read by ncs_dec_<name> through a bounded reader (struct ncs_rbuf) that
 *     never reads past the body and copies strings into a scratch area the caller sizes.
 *   - CALL and GPU_TIME records of a column chunk are read from their field values, a block
 *     at a time, by ncs_decv_<name> (same structs and delta state as from their rows). 
 * Strings: `const char *` fields are NUL-terminated (NULL reads as empty) except where a
 * length travels with them (STRN: kv values, log lines). All functions are static inline. */
#ifndef NCCLSCOPE_ENCODE_H
#define NCCLSCOPE_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "format.h"
#include "records.h"

/* ---- bounded writer ---- */

struct ncs_wbuf { uint8_t *buf; size_t len, cap; int overflow; };

static inline void ncs_wbuf_init(struct ncs_wbuf *w, void *buf, size_t cap) {
  w->buf = (uint8_t *)buf; w->len = 0; w->cap = cap; w->overflow = 0;
}
static inline void ncs_w_bytes(struct ncs_wbuf *w, const void *s, size_t n) {
  if (w->overflow || n > w->cap - w->len) { w->overflow = 1; return; }
  if (n) memcpy(w->buf + w->len, s, n);
  w->len += n;
}
static inline void ncs_w_varint(struct ncs_wbuf *w, uint64_t v) {
  uint8_t t[10];
  ncs_w_bytes(w, t, ncs_put_varint(t, v));
}
static inline void ncs_w_svarint(struct ncs_wbuf *w, int64_t v) { ncs_w_varint(w, ncs_zigzag(v)); }
static inline void ncs_w_u64(struct ncs_wbuf *w, uint64_t v) {
  uint8_t t[8];
  ncs_put_u64(t, v);
  ncs_w_bytes(w, t, 8);
}
/* string: varint length + bytes; s may be NULL when n is 0. */
static inline void ncs_w_strn(struct ncs_wbuf *w, const char *s, size_t n) {
  ncs_w_varint(w, n);
  ncs_w_bytes(w, s, n);
}
static inline void ncs_w_str(struct ncs_wbuf *w, const char *s) { ncs_w_strn(w, s, s ? strlen(s) : 0); }

/* Record framing: ncs_rec_begin writes the type and reserves room for the length and returns
 * where the record starts; encode the body; ncs_rec_end writes the length and moves the body
 * up against it. When the record did not fit, ncs_rec_end takes it back out (len returns to
 * the record's start) and `overflow` stays set: the bytes before it are whole records. */
static inline size_t ncs_rec_begin(struct ncs_wbuf *w, uint32_t type) {
  static const uint8_t zeros[10] = {0};
  size_t start = w->len;
  ncs_w_varint(w, type);
  ncs_w_bytes(w, zeros, 10);
  return start;
}
static inline void ncs_rec_end(struct ncs_wbuf *w, size_t start) {
  if (w->overflow) { if (w->len > start) w->len = start; return; }
  const uint8_t *tp = w->buf + start;
  uint64_t type;
  (void)ncs_get_varint(&tp, w->buf + w->len, &type);
  size_t body_start = (size_t)(tp - w->buf) + 10;
  size_t body_len = w->len - body_start;
  uint8_t *lenp = w->buf + body_start - 10;
  size_t n = ncs_put_varint(lenp, body_len);
  memmove(lenp + n, w->buf + body_start, body_len);
  w->len -= 10 - n;
}
/* A whole record from an already encoded body. */
static inline void ncs_enc_record(struct ncs_wbuf *w, uint32_t type, const void *body, size_t len) {
  ncs_w_varint(w, type);
  ncs_w_varint(w, len);
  ncs_w_bytes(w, body, len);
}

/* ---- bounded reader of record bodies ----
 * A field absent at the end of a body reads as its default (records.h); a field cut short,
 * a varint over 10 bytes, or an array longer than its body can hold sets `bad` and ends the
 * body. Strings and arrays are copied into the scratch area given to ncs_rbuf_init: 2 * len
 * + 16 bytes hold every string of a body of len bytes; arrays may need more, and a scratch
 * area too small sets `bad` and `full` (grow it, decode again). Records of numbers and CHARS
 * need none (NULL, 0). */
struct ncs_rbuf { const uint8_t *p, *e; int bad, full; uint8_t *s, *se; };
static inline void ncs_rbuf_init(struct ncs_rbuf *r, const void *body, size_t len, void *scratch,
                                 size_t cap) {
  r->p = r->e = (const uint8_t *)body;
  if (len) r->e += len;
  r->bad = 0; r->full = 0;
  r->s = r->se = (uint8_t *)scratch;
  if (scratch) r->se += cap;
}
/* The same without scratch, for one call: ncs_dec_topo_link(ncs_rbuf_on(&r, body, len), &l). */
static inline struct ncs_rbuf *ncs_rbuf_on(struct ncs_rbuf *r, const void *body, size_t len) {
  ncs_rbuf_init(r, body, len, NULL, 0);
  return r;
}
static inline int ncs_r_more(const struct ncs_rbuf *r) { return r->p < r->e; }
static inline void ncs_r_fail(struct ncs_rbuf *r) { r->bad = 1; r->p = r->e; }
static inline uint64_t ncs_r_varint(struct ncs_rbuf *r) {
  uint64_t v = 0;
  if (r->p >= r->e) return 0;
  if (*r->p < 0x80) return *r->p++; /* most fields fit one byte */
  if (ncs_get_varint(&r->p, r->e, &v) != 0) { ncs_r_fail(r); return 0; }
  return v;
}
static inline int64_t ncs_r_svarint(struct ncs_rbuf *r) { return ncs_unzigzag(ncs_r_varint(r)); }
static inline uint64_t ncs_r_fix64(struct ncs_rbuf *r) {
  if (r->p >= r->e) return 0;
  if (r->e - r->p < 8) { ncs_r_fail(r); return 0; }
  uint64_t v = ncs_get_u64(r->p);
  r->p += 8;
  return v;
}
/* The bytes of a string field (not terminated) and their count; NULL when absent or bad. */
static inline const uint8_t *ncs_r_bytes(struct ncs_rbuf *r, size_t *n) {
  uint64_t k = 0;
  *n = 0;
  if (r->p >= r->e) return NULL;
  if (ncs_get_varint(&r->p, r->e, &k) != 0 || k > (uint64_t)(r->e - r->p)) { ncs_r_fail(r); return NULL; }
  const uint8_t *s = r->p;
  r->p += k;
  *n = (size_t)k;
  return s;
}
/* A string into out[cap] (cap >= 1), cut to fit; the rest of out is zeroed. */
static inline void ncs_r_str(struct ncs_rbuf *r, char *out, size_t cap) {
  size_t n;
  const uint8_t *s = ncs_r_bytes(r, &n);
  size_t k = n < cap - 1 ? n : cap - 1;
  memset(out, 0, cap);
  if (k) memcpy(out, s, k);
}
/* `n` bytes from the scratch area, aligned for any struct; NULL (and bad) when it is full. */
static inline void *ncs_r_alloc(struct ncs_rbuf *r, size_t n) {
  size_t pad = (16 - ((uintptr_t)r->s & 15)) & 15;
  if (!r->s || pad > (size_t)(r->se - r->s) || n > (size_t)(r->se - r->s) - pad) {
    ncs_r_fail(r);
    r->full = 1;
    return NULL;
  }
  uint8_t *p = r->s + pad;
  r->s = p + n;
  return p;
}
/* A string copied into the scratch area and NUL-terminated ("" when absent); its length in
 * *len when len is not NULL. */
static inline const char *ncs_r_strdup(struct ncs_rbuf *r, size_t *len) {
  size_t n;
  const uint8_t *s = ncs_r_bytes(r, &n);
  if (len) *len = n;
  if (!r->s || n >= (size_t)(r->se - r->s)) { ncs_r_fail(r); r->full = 1; return ""; }
  char *d = (char *)r->s;
  if (n) memcpy(d, s, n);
  d[n] = 0;
  r->s += n + 1;
  return d;
}
/* Room for an array of `count` elements of `size` bytes, each taking at least `min_bytes` of
 * the body: NULL (and bad) when the body cannot hold that many. */
static inline void *ncs_r_array(struct ncs_rbuf *r, uint64_t count, size_t min_bytes, size_t size) {
  if (r->bad || count > (uint64_t)(r->e - r->p) / min_bytes + 1) { ncs_r_fail(r); return NULL; }
  return ncs_r_alloc(r, (size_t)count * size);
}

/* ---- the coders, expanded from ncclscope/records.h ----
 * For each record R(TYPE, name, STATE, READ) of NCS_RECORDS (and each element of NCS_ELEMENTS):
 *   void ncs_enc_<name>_body(struct ncs_wbuf *w, [struct ncs_call_delta *d,] const T *x)
 *       its body through the bounded writer (for ncs_emit in shim/hooks.h, which frames it);
 *   void ncs_enc_<name>(w, [d,] x)  the whole record: type, length, body;
 *   int ncs_dec_<name>(struct ncs_rbuf *r, [d,] T *x)  reads a body: 0, or -1 when damaged
 *       or when the scratch area was too small (r->full: grow it and decode again).
 * [d] is the chunk's delta state, taken by records whose STATE is DELTA; it moves only when
 * the record was written whole. T is struct ncs_<name>. */

/* The chunk's delta state: the previous value of every DELTA and SPAN field (a SPAN keeps its
 * length), per record. Zero it at the start of every chunk. */
#define NCS_DM_(K, f, a) NCS_DM_##K(f)
#define NCS_DM_U32(f)
#define NCS_DM_I32(f)
#define NCS_DM_U64(f)
#define NCS_DM_FIX64(f)
#define NCS_DM_DELTA(f) uint64_t f;
#define NCS_DM_SPAN(f) uint64_t f;
#define NCS_DM_STR(f)
#define NCS_DM_STRN(f)
#define NCS_DM_CHARS(f)
#define NCS_DM_ARRAY(f)
#define NCS_DSTRUCT_(T, name, st, rd) NCS_DSTRUCT_##st(name)
#define NCS_DSTRUCT_PLAIN(name)
#define NCS_DSTRUCT_DELTA(name) struct ncs_delta_##name { NCS_FIELDS_##name(NCS_DM_) };
NCS_RECORDS(NCS_DSTRUCT_)
#define NCS_DMEMBER_(T, name, st, rd) NCS_DMEMBER_##st(name)
#define NCS_DMEMBER_PLAIN(name)
#define NCS_DMEMBER_DELTA(name) struct ncs_delta_##name name;
struct ncs_call_delta { NCS_RECORDS(NCS_DMEMBER_) };
static inline void ncs_call_delta_reset(struct ncs_call_delta *d) { memset(d, 0, sizeof *d); }
#define NCS_DPARAM_PLAIN
#define NCS_DPARAM_DELTA struct ncs_call_delta *d,
#define NCS_DARG_PLAIN
#define NCS_DARG_DELTA d,
/* CALL and GPU_TIME (the DELTA records) are most of a trace: their decoders are inlined into
 * the reader's record loop */
#define NCS_DINLINE_PLAIN
#define NCS_DINLINE_DELTA __attribute__((always_inline))
#define NCS_DLOCAL_PLAIN(name)
#define NCS_DLOCAL_DELTA(name) struct ncs_delta_##name *s = &d->name;

/* number of fields, and the most bytes a body of numbers takes */
#define NCS_ONE_(K, f, a) + 1
#define NCS_MAXB_(K, f, a) + NCS_MAXB_##K
#define NCS_MAXB_U32 5
#define NCS_MAXB_I32 5
#define NCS_MAXB_U64 10
#define NCS_MAXB_FIX64 8
#define NCS_MAXB_DELTA 10
#define NCS_MAXB_SPAN 10

/* encoding one field through the bounded writer */
#define NCS_W_(K, f, a) NCS_W_##K(f, a)
#define NCS_W_U32(f, a) ncs_w_varint(w, x->f);
#define NCS_W_I32(f, a) ncs_w_svarint(w, x->f);
#define NCS_W_U64(f, a) ncs_w_varint(w, x->f);
#define NCS_W_FIX64(f, a) ncs_w_u64(w, x->f);
#define NCS_W_DELTA(f, a) ncs_w_svarint(w, (int64_t)(x->f - s->f));
#define NCS_W_SPAN(f, a) ncs_w_svarint(w, (int64_t)((x->f - x->a) - s->f));
#define NCS_W_STR(f, a) ncs_w_str(w, x->f);
#define NCS_W_STRN(f, a) ncs_w_strn(w, x->f, x->f ? x->a : 0);
#define NCS_W_CHARS(f, a) ncs_w_str(w, x->f);
#define NCS_W_ARRAY(f, a) \
  ncs_w_varint(w, x->n##f); \
  for (uint32_t i_ = 0; i_ < x->n##f; i_++) ncs_enc_##a##_body(w, &x->f[i_]);
/* moving the delta state once the record is written */
#define NCS_WC_(K, f, a) NCS_WC_##K(f, a)
#define NCS_WC_U32(f, a)
#define NCS_WC_I32(f, a)
#define NCS_WC_U64(f, a)
#define NCS_WC_FIX64(f, a)
#define NCS_WC_DELTA(f, a) s->f = x->f;
#define NCS_WC_SPAN(f, a) s->f = x->f - x->a;
#define NCS_WC_STR(f, a)
#define NCS_WC_STRN(f, a)
#define NCS_WC_CHARS(f, a)
#define NCS_WC_ARRAY(f, a)
/* encoding one field at a raw pointer (the hot path: numbers only); ncs_put_varint's bytes,
 * with the one- and two-byte values (nearly every field of a CALL) written without its loop */
static inline uint8_t *ncs_put_varint_hot(uint8_t *p, uint64_t v) {
  if (__builtin_expect(v < 0x80, 1)) { p[0] = (uint8_t)v; return p + 1; }
  if (v < 0x4000) { p[0] = (uint8_t)(v | 0x80); p[1] = (uint8_t)(v >> 7); return p + 2; }
  return p + ncs_put_varint(p, v);
}
#define NCS_P_(K, f, a) NCS_P_##K(f, a)
#define NCS_P_U32(f, a) p = ncs_put_varint_hot(p, x->f);
#define NCS_P_I32(f, a) p = ncs_put_varint_hot(p, ncs_zigzag(x->f));
#define NCS_P_U64(f, a) p = ncs_put_varint_hot(p, x->f);
#define NCS_P_DELTA(f, a) p = ncs_put_varint_hot(p, ncs_zigzag((int64_t)(x->f - s->f))); s->f = x->f;
#define NCS_P_SPAN(f, a) p = ncs_put_varint_hot(p, ncs_zigzag((int64_t)((x->f - x->a) - s->f))); s->f = x->f - x->a;
/* decoding one field */
#define NCS_R_(K, f, a) NCS_R_##K(f, a)
#define NCS_R_U32(f, a) x->f = ncs_r_more(r) ? (uint32_t)ncs_r_varint(r) : (uint32_t)(a);
#define NCS_R_I32(f, a) x->f = ncs_r_more(r) ? (int32_t)ncs_r_svarint(r) : (int32_t)(a);
#define NCS_R_U64(f, a) x->f = ncs_r_more(r) ? ncs_r_varint(r) : (uint64_t)(a);
#define NCS_R_FIX64(f, a) x->f = ncs_r_more(r) ? ncs_r_fix64(r) : (uint64_t)(a);
#define NCS_R_DELTA(f, a) x->f = s->f += (uint64_t)ncs_r_svarint(r);
#define NCS_R_SPAN(f, a) s->f += (uint64_t)ncs_r_svarint(r); x->f = x->a + s->f;
#define NCS_R_STR(f, a) x->f = ncs_r_strdup(r, NULL);
#define NCS_R_STRN(f, a) x->f = ncs_r_strdup(r, &x->a);
#define NCS_R_CHARS(f, a) ncs_r_str(r, x->f, sizeof x->f);
#define NCS_R_ARRAY(f, a) { \
    uint64_t n_ = ncs_r_varint(r); \
    struct ncs_##a *e_ = (struct ncs_##a *)ncs_r_array(r, n_, NCS_NF_##a, sizeof *e_); \
    uint32_t k_ = 0; \
    for (; e_ && k_ < n_ && !r->bad; k_++) { \
      if (!ncs_r_more(r)) { ncs_r_fail(r); break; } /* an element starts inside the body */ \
      ncs_dec_##a(r, &e_[k_]); \
    } \
    x->n##f = k_; \
    x->f = e_; }
#define NCS_CODERS_(T, name, st, rd) \
  enum { NCS_NF_##name = 0 NCS_FIELDS_##name(NCS_ONE_) }; \
  static inline void ncs_enc_##name##_body(struct ncs_wbuf *w, NCS_DPARAM_##st const struct ncs_##name *x) { \
    NCS_DLOCAL_##st(name) \
    NCS_FIELDS_##name(NCS_W_) \
    if (!w->overflow) { NCS_FIELDS_##name(NCS_WC_) } \
  } \
  static inline NCS_DINLINE_##st int ncs_dec_##name(struct ncs_rbuf *r, NCS_DPARAM_##st struct ncs_##name *x) { \
    NCS_DLOCAL_##st(name) \
    NCS_FIELDS_##name(NCS_R_) \
    return r->bad ? -1 : 0; \
  }
#define NCS_WHOLE_(T, name, st, rd) \
  static inline void ncs_enc_##name(struct ncs_wbuf *w, NCS_DPARAM_##st const struct ncs_##name *x) { \
    size_t m_ = ncs_rec_begin(w, NCS_REC_##T); \
    ncs_enc_##name##_body(w, NCS_DARG_##st x); \
    ncs_rec_end(w, m_); \
  }
/* decoding n records of one type from their field values (a column chunk's split records,
 * columns.h: every field a varint; v[j][i] is the value field j's varint holds in record i,
 * for j < nf, or when bit j of `sgn` is set (a signed column) its unzigzag; bit j of `same`:
 * v[j][0 .. n) are all one value): x[0..n) and the delta state as ncs_dec_<name> gives them
 * for the rows of those varints, one after another. Field by field, so each loop is short and
 * regular; a signed field of a signed column (every one our writers write) is taken as it
 * comes, with no zigzag either way; a field whose n values are one value already held by
 * x[0 .. n) (the memo *m says so) is not written again. Only for records whose fields are all
 * numbers (the others are never split): ncs_decv_call, ncs_decv_gpu_time, ncs_decv_kernel. */
#define NCS_DECV_MEMO_FIELDS 32
/* What a block of structs that only ncs_decv_<name> writes holds already: field j of
 * x[0 .. n[j]) is what key[j] gives (a column value, or a DELTA field's running value). Zeroed
 * before the first call (nothing known). */
struct ncs_decv_memo { uint64_t key[NCS_DECV_MEMO_FIELDS]; size_t n[NCS_DECV_MEMO_FIELDS]; };
#define NCS_V_(K, f, a) NCS_V_##K(f, a) j_++;
#define NCS_V_FILL_(f, K_, V_) /* every x[i].f is V_: written unless the memo says it is */ \
  if (m->n[j_] < n || m->key[j_] != (K_)) { \
    for (size_t i_ = 0; i_ < n; i_++) x[i_].f = (V_); \
    m->n[j_] = n; \
    m->key[j_] = (K_); \
  }
/* A column whose sign is not its field's (not written by our writers): field j_'s values as
 * its kind takes them (ks: signed, the varints' unzigzags; else the varints), V_ of each as cv_. */
static inline uint64_t ncs_decv_flip(uint64_t c, int ks) { return ks ? (uint64_t)ncs_unzigzag(c) : ncs_zigzag((int64_t)c); }
#define NCS_V_FLIP_(ks) (j_ < nf && (sgn >> j_ & 1) != (ks))
#define NCS_V_FLIPPED_(ks, V_) \
  { const uint64_t *c_ = v[j_]; \
    for (size_t i_ = 0; i_ < n; i_++) { uint64_t cv_ = ncs_decv_flip(c_[i_], ks); V_; } \
    m->n[j_] = 0; }
#define NCS_V_PLAIN_(f, CONV, dflt, ks) \
  if (j_ >= nf) { for (size_t i_ = 0; i_ < n; i_++) x[i_].f = (dflt); m->n[j_] = 0; } \
  else if (NCS_V_FLIP_(ks)) NCS_V_FLIPPED_(ks, x[i_].f = CONV(cv_)) \
  else if (same >> j_ & 1) { uint64_t k_ = v[j_][0]; NCS_V_FILL_(f, k_, CONV(k_)) } \
  else { const uint64_t *c_ = v[j_]; for (size_t i_ = 0; i_ < n; i_++) x[i_].f = CONV(c_[i_]); m->n[j_] = 0; }
#define NCS_VC_U32(c) ((uint32_t)(c))
#define NCS_VC_I32(c) ((int32_t)(c))
#define NCS_VC_U64(c) (c)
#define NCS_V_U32(f, a) NCS_V_PLAIN_(f, NCS_VC_U32, (uint32_t)(a), 0)
#define NCS_V_I32(f, a) NCS_V_PLAIN_(f, NCS_VC_I32, (int32_t)(a), 1)
#define NCS_V_U64(f, a) NCS_V_PLAIN_(f, NCS_VC_U64, (uint64_t)(a), 0)
#define NCS_V_DELTA(f, a) { /* a change of 0 (varint 0) or none: one value */ \
    uint64_t s_ = s->f; \
    if (NCS_V_FLIP_(1)) NCS_V_FLIPPED_(1, x[i_].f = s_ += cv_) \
    else if (j_ >= nf || ((same >> j_ & 1) && v[j_][0] == 0)) { NCS_V_FILL_(f, s_, s_) } \
    else if (same >> j_ & 1) { \
      uint64_t d_ = v[j_][0]; \
      for (size_t i_ = 0; i_ < n; i_++) x[i_].f = s_ += d_; \
      m->n[j_] = 0; \
    } else { \
      const uint64_t *c_ = v[j_]; \
      for (size_t i_ = 0; i_ < n; i_++) x[i_].f = s_ += c_[i_]; \
      m->n[j_] = 0; \
    } \
    s->f = s_; }
#define NCS_V_SPAN(f, a) { \
    uint64_t s_ = s->f; \
    if (NCS_V_FLIP_(1)) NCS_V_FLIPPED_(1, x[i_].f = x[i_].a + (s_ += cv_)) \
    else if (j_ < nf && !(same >> j_ & 1)) { \
      const uint64_t *c_ = v[j_]; \
      for (size_t i_ = 0; i_ < n; i_++) x[i_].f = x[i_].a + (s_ += c_[i_]); \
    } else { \
      uint64_t d_ = j_ < nf ? v[j_][0] : 0; \
      for (size_t i_ = 0; i_ < n; i_++) x[i_].f = x[i_].a + (s_ += d_); \
    } \
    s->f = s_; }
#define NCS_DECV_(name, st) \
  _Static_assert(NCS_NF_##name <= NCS_DECV_MEMO_FIELDS, "ncs_decv_memo holds every field"); \
  static inline void ncs_decv_##name(const uint64_t *const *v, uint32_t nf, uint64_t same, uint64_t sgn, size_t n, \
                                     struct ncs_decv_memo *m, NCS_DPARAM_##st struct ncs_##name *x) { \
    NCS_DLOCAL_##st(name) \
    uint32_t j_ = 0; \
    NCS_FIELDS_##name(NCS_V_) \
    (void)j_; \
  }
#define NCS_ELEMENT_(name) NCS_CODERS_(-, name, PLAIN, -)
NCS_ELEMENTS(NCS_ELEMENT_)
NCS_RECORDS(NCS_CODERS_)
NCS_RECORDS(NCS_WHOLE_)
NCS_DECV_(call, DELTA)
NCS_DECV_(gpu_time, DELTA)
NCS_DECV_(kernel, PLAIN) /* (KERNEL: the reader's runs of a column chunk's KERNEL records) */

/* ---- CALL rows, fast (the reader's row walk) ----
 * ncs_dec_call_fast(p, e, d, x) reads the CALL body [p, e) (at most 127 bytes) as
 * ncs_dec_call does, for a body that holds every field whole (what a writer writes): then it
 * returns 0 with x and the delta state as ncs_dec_call leaves them. Otherwise (a field
 * missing, cut short at e, or a varint over 10 bytes) it returns -1 with d untouched and x
 * undefined: decode it with ncs_dec_call, which tells a short body from a bad one. It reads
 * without a bounds check per byte, so the caller guarantees NCS_CALL_FAST_READ readable bytes
 * from p (past e: the chunk's next rows); it checks once, at the end, that every field ended
 * inside the body. */
enum { NCS_CALL_FAST_READ = 10 * NCS_NF_call };
/* A varint at p + i, no bounds check: at most 10 bytes. Where it takes more than one byte,
 * p moves on by the extra bytes (so field j of a body always reads at p + j); one that runs
 * on past 10 bytes moves p to the body's end e (the end check then fails). */
static inline __attribute__((always_inline)) uint64_t ncs_u_varint(const uint8_t **pp, unsigned i, const uint8_t *e) {
  const uint8_t *p = *pp + i;
  uint64_t v = p[0], b;
  if (__builtin_expect(v < 0x80, 1)) return v;
#define NCS_U_BYTE_(k) /* bytes added whole, then the continuation bits taken out */ \
  b = p[k]; \
  v += b << (7 * (k)); \
  if (b < 0x80) { *pp += (k); return v - (((1ull << (7 * (k))) - 1) / 127 * 128); }
  NCS_U_BYTE_(1) NCS_U_BYTE_(2) NCS_U_BYTE_(3)
#undef NCS_U_BYTE_
  v -= ((1ull << 21) - 1) / 127 * 128;
  for (unsigned k = 4;; k++) {
    b = p[k];
    v ^= (b ^ 1) << (7 * k);
    if (b < 0x80) { *pp += k; return v; }
    if (k == 9) { *pp = e; return v; }
  }
}
/* The same for a zigzag varint: one byte (most signed fields: small changes) by a table. */
#define NCS_ZZ1_(b) (int8_t)(((b) >> 1) ^ -((b) & 1))
#define NCS_ZZ4_(b) NCS_ZZ1_(b), NCS_ZZ1_((b) + 1), NCS_ZZ1_((b) + 2), NCS_ZZ1_((b) + 3)
#define NCS_ZZ16_(b) NCS_ZZ4_(b), NCS_ZZ4_((b) + 4), NCS_ZZ4_((b) + 8), NCS_ZZ4_((b) + 12)
#define NCS_ZZ64_(b) NCS_ZZ16_(b), NCS_ZZ16_((b) + 16), NCS_ZZ16_((b) + 32), NCS_ZZ16_((b) + 48)
static const int8_t ncs_unzigzag1[128] = {NCS_ZZ64_(0), NCS_ZZ64_(64)};
#undef NCS_ZZ64_
#undef NCS_ZZ16_
#undef NCS_ZZ4_
#undef NCS_ZZ1_
static inline __attribute__((always_inline)) int64_t ncs_u_svarint(const uint8_t **pp, unsigned i, const uint8_t *e) {
  uint8_t b = (*pp)[i];
  if (__builtin_expect(b < 0x80, 1)) return ncs_unzigzag1[b];
  return ncs_unzigzag(ncs_u_varint(pp, i, e));
}
#define NCS_UF_(K, f, a) NCS_UF_##K(f, a) j_++;
#define NCS_UF_U32(f, a) x->f = (uint32_t)ncs_u_varint(&p, j_, e);
#define NCS_UF_I32(f, a) x->f = (int32_t)ncs_u_svarint(&p, j_, e);
#define NCS_UF_U64(f, a) x->f = ncs_u_varint(&p, j_, e);
#define NCS_UF_DELTA(f, a) x->f = s->f + (uint64_t)ncs_u_svarint(&p, j_, e);
#define NCS_UF_SPAN(f, a) x->f = x->a + s->f + (uint64_t)ncs_u_svarint(&p, j_, e);
#define NCS_UC_(K, f, a) NCS_UC_##K(f, a)
#define NCS_UC_U32(f, a)
#define NCS_UC_I32(f, a)
#define NCS_UC_U64(f, a)
#define NCS_UC_DELTA(f, a) s->f = x->f;
#define NCS_UC_SPAN(f, a) s->f = x->f - x->a;
static inline __attribute__((always_inline)) int ncs_dec_call_fast(const uint8_t *p, const uint8_t *e,
                                                                    struct ncs_call_delta *d, struct ncs_call *x) {
  struct ncs_delta_call *s = &d->call;
  unsigned j_ = 0; /* the field: each reads at p + j_ (constant: the fields are unrolled) */
  NCS_FIELDS_call(NCS_UF_)
  if (__builtin_expect(p + j_ > e, 0)) return -1;
  NCS_FIELDS_call(NCS_UC_)
  return 0;
}

/* ---- KERNEL rows, fast (the reader's runs of KERNEL rows) ----
 * ncs_dec_kernel_fast(p, e, x) reads the KERNEL body [p, e) (at most 127 bytes) as
 * ncs_dec_kernel does, for a body that holds every field whole: then 0 with x as ncs_dec_kernel
 * leaves it; otherwise -1 (decode it with ncs_dec_kernel). Reading as ncs_dec_call_fast: no
 * bounds check per byte, so the caller guarantees NCS_KERNEL_FAST_READ readable bytes from p
 * (a body's 127 bytes, then room for the fields read after a varint that ran on to e). */
enum { NCS_KERNEL_FAST_READ = 128 + 10 * NCS_NF_kernel };
static inline __attribute__((always_inline)) int ncs_dec_kernel_fast(const uint8_t *p, const uint8_t *e,
                                                                      struct ncs_kernel *x) {
  unsigned j_ = 0;
  NCS_FIELDS_kernel(NCS_UF_)
  return __builtin_expect(p + j_ > e, 0) ? -1 : 0;
}

/* A PROCESS record from n pairs. */
static inline void ncs_enc_process(struct ncs_wbuf *w, const struct ncs_kv *kv, size_t n) {
  struct ncs_process_kv pk = {(uint32_t)n, kv};
  ncs_enc_process_kv(w, &pk);
}

/* ---- CALL on the hot path ---- */

/* Largest CALL record: type (1) + length (1) + body. The body is under 128 bytes, so its
 * length varint is always one byte. */
enum { NCS_CALL_BODY_MAX = 0 NCS_FIELDS_call(NCS_MAXB_) };
#define NCS_CALL_MAX 128
_Static_assert(NCS_CALL_BODY_MAX + 2 <= NCS_CALL_MAX && NCS_CALL_BODY_MAX < 128,
               "a CALL record fits NCS_CALL_MAX bytes with a one-byte length");

/* Writes the whole CALL record (type, length, body) of `x` at `out` (room for NCS_CALL_MAX
 * bytes) and updates the delta state; no bounds checks, no allocation. Returns the bytes
 * written (at most NCS_CALL_MAX). */
static inline size_t ncs_encode_call(uint8_t *out, struct ncs_call_delta *d, const struct ncs_call *x) {
  struct ncs_delta_call *s = &d->call;
  uint8_t *p = out + 2; /* type and one-byte length go first */
  NCS_FIELDS_call(NCS_P_)
  out[0] = NCS_REC_CALL;
  out[1] = (uint8_t)(p - out - 2);
  return (size_t)(p - out);
}

/* ---- CALL on the hot path, a run of like calls (the shim's writer) ----
 * A loop that makes the same call again and again (the calls a writer meets at a high rate)
 * gives records that differ from the last one only in their times: every other field is the
 * same, or (DELTA fields: the call counters) moved by the same step as in the last record, so
 * its varint is the same. ncs_encode_call_run writes the same bytes as ncs_encode_call (same
 * delta state, same room needed), but keeps a memo of the last record: when the next one is
 * the memo's prediction in every field but t_enter and t_exit (compared 16 bytes at a time),
 * the bytes before t_enter and after t_exit are the last record's, copied, and only the two
 * times are encoded. Reset the memo with the delta state (ncs_call_run_reset). */
typedef uint64_t ncs_v2u64 __attribute__((vector_size(16)));
typedef uint64_t ncs_v2u64_u __attribute__((vector_size(16), aligned(8))); /* a struct ncs_call's */
#define NCS_CALL_VECS (sizeof(struct ncs_call) / sizeof(ncs_v2u64))
#define NCS_FSIZE_(K, f, a) + sizeof(((struct ncs_call *)0)->f)
#define NCS_NSPAN_(K, f, a) + NCS_NSPAN_##K
#define NCS_NSPAN_U32 0
#define NCS_NSPAN_I32 0
#define NCS_NSPAN_U64 0
#define NCS_NSPAN_DELTA 0
#define NCS_NSPAN_SPAN 1
_Static_assert(sizeof(struct ncs_call) % sizeof(ncs_v2u64) == 0 && sizeof(struct ncs_call) == 0 NCS_FIELDS_call(NCS_FSIZE_),
               "struct ncs_call is whole 16-byte vectors of fields, no padding: the memo compares all its bytes");
_Static_assert(0 NCS_FIELDS_call(NCS_NSPAN_) == 1 && offsetof(struct ncs_call, t_enter) % 8 == 0 &&
                   offsetof(struct ncs_call, t_exit) % 8 == 0 && sizeof(((struct ncs_call *)0)->t_enter) == 8 &&
                   sizeof(((struct ncs_call *)0)->t_exit) == 8,
               "the memo encodes the one SPAN field (t_exit) and t_enter itself; they fill 64-bit lanes");
_Static_assert(NCS_CALL_VECS == 6, "NCS_RUN_EACH_ names every vector of a struct ncs_call");
#define NCS_RUN_EACH_(M) M(0) M(1) M(2) M(3) M(4) M(5)
#define NCS_LANE_CARE_(k) (8u * (k) == offsetof(struct ncs_call, t_enter) || 8u * (k) == offsetof(struct ncs_call, t_exit) ? 0 : ~0ull)
struct ncs_call_run {
  ncs_v2u64 pred[NCS_CALL_VECS]; /* the next record, if it is like the last (times aside) */
  ncs_v2u64 step[NCS_CALL_VECS]; /* what each DELTA field moved by in the last record; 0 elsewhere */
  uint8_t head[16], tail[16];     /* the last record's field bytes before t_enter, after t_exit */
  uint32_t nhead, ntail;
  int valid;                      /* pred/head/tail hold a record (nhead, ntail <= 16) */
};
static inline void ncs_call_run_reset(struct ncs_call_run *m) { m->valid = 0; }
/* the slow path: ncs_encode_call's field loop, noting each DELTA field's step and where the
 * times' bytes begin and end */
#define NCS_PR_(K, f, a) uint8_t *at_##f __attribute__((unused)) = p; NCS_PR_##K(f, a) \
  uint8_t *end_##f __attribute__((unused)) = p;
#define NCS_PR_U32(f, a) NCS_P_U32(f, a) st.f = 0;
#define NCS_PR_I32(f, a) NCS_P_I32(f, a) st.f = 0;
#define NCS_PR_U64(f, a) NCS_P_U64(f, a) st.f = 0;
#define NCS_PR_DELTA(f, a) st.f = x->f - s->f; NCS_P_DELTA(f, a)
#define NCS_PR_SPAN(f, a) NCS_P_SPAN(f, a) st.f = 0;
#define NCS_PM_(K, f, a) NCS_PM_##K(f, a)
#define NCS_PM_U32(f, a)
#define NCS_PM_I32(f, a)
#define NCS_PM_U64(f, a)
#define NCS_PM_DELTA(f, a) s->f = x->f;
#define NCS_PM_SPAN(f, a)
/* (ncs_encode_call_run and the CALL_RUN writer) loads x into v: 1 when it is the memo's
 * prediction in every field but its times */
static inline __attribute__((always_inline)) int ncs_call_run_like(const struct ncs_call_run *m, const struct ncs_call *x,
                                                                   ncs_v2u64 v[NCS_CALL_VECS]) {
  ncs_v2u64 diff = {0, 0};
#define NCS_RUN_CMP_(i) \
  v[i] = ((const ncs_v2u64_u *)x)[i]; \
  diff |= (v[i] ^ m->pred[i]) & (ncs_v2u64){NCS_LANE_CARE_(2 * (i)), NCS_LANE_CARE_(2 * (i) + 1)};
  NCS_RUN_EACH_(NCS_RUN_CMP_)
#undef NCS_RUN_CMP_
  return m->valid && (diff[0] | diff[1]) == 0;
}
/* (same) a record ncs_call_run_like said is like: its two times' varints at p, the delta
 * state and the memo moved on; returns the end of what it wrote (at most 20 bytes) */
static inline __attribute__((always_inline)) uint8_t *ncs_call_run_times(uint8_t *p, struct ncs_call_delta *d,
                                                                         struct ncs_call_run *m, const struct ncs_call *x,
                                                                         const ncs_v2u64 v[NCS_CALL_VECS]) {
  struct ncs_delta_call *s = &d->call;
  NCS_P_DELTA(t_enter, 0)
  NCS_P_SPAN(t_exit, t_enter)
  NCS_FIELDS_call(NCS_PM_) /* the DELTA fields' state, as the slow path leaves it */
#define NCS_RUN_NEXT_(i) m->pred[i] = v[i] + m->step[i];
  NCS_RUN_EACH_(NCS_RUN_NEXT_)
#undef NCS_RUN_NEXT_
  return p;
}
/* (same) any record: the whole CALL (type, length, body) at out, through ncs_encode_call's
 * field loop, noting each DELTA field's step and where the times' bytes begin and end for the
 * memo; returns the bytes written */
static inline size_t ncs_call_run_full(uint8_t *out, struct ncs_call_delta *d, struct ncs_call_run *m,
                                       const struct ncs_call *x, const ncs_v2u64 v[NCS_CALL_VECS]) {
  struct ncs_delta_call *s = &d->call;
  struct ncs_call st;
  uint8_t *p = out + 2;
  NCS_FIELDS_call(NCS_PR_)
  size_t nh = (size_t)(at_t_enter - out - 2), nt = (size_t)(p - end_t_exit);
  m->valid = end_t_enter == at_t_exit && nh <= 16 && nt <= 16;
  if (m->valid) {
    memcpy(m->head, out + 2, nh);
    memcpy(m->tail, end_t_exit, nt);
    m->nhead = (uint32_t)nh;
    m->ntail = (uint32_t)nt;
    for (size_t i = 0; i < NCS_CALL_VECS; i++) {
      m->step[i] = ((const ncs_v2u64_u *)&st)[i];
      m->pred[i] = v[i] + m->step[i];
    }
  }
  out[0] = NCS_REC_CALL;
  out[1] = (uint8_t)(p - out - 2);
  return (size_t)(p - out);
}
static inline size_t ncs_encode_call_run(uint8_t *out, struct ncs_call_delta *d, struct ncs_call_run *m,
                                         const struct ncs_call *x) {
  ncs_v2u64 v[NCS_CALL_VECS];
  if (__builtin_expect(!ncs_call_run_like(m, x, v), 0)) return ncs_call_run_full(out, d, m, x, v);
  memcpy(out + 2, m->head, 16);
  uint8_t *p = ncs_call_run_times(out + 2 + m->nhead, d, m, x, v);
  memcpy(p, m->tail, 16);
  p += m->ntail;
  out[0] = NCS_REC_CALL;
  out[1] = (uint8_t)(p - out - 2);
  return (size_t)(p - out);
}

/* ---- CALL_RUN (format 5.0): a run of like calls in a row chunk ----
 * Body: pairs (svarint a, svarint b) to its end, one per call. Each call is the CALL record
 * the chunk's last CALL record before it (the template; CALL_RUN elements are not CALL
 * records) would be with its t_enter change replaced by a and its duration change (t_exit's
 * SPAN value) by b: every other field as the template decodes, each DELTA field moved on by
 * the template's own change. So a CALL_RUN element stands for exactly the row
 * ncs_encode_call_run writes for a call the memo predicted (the memo's head and tail are the
 * template's bytes). The writer (ncs_encode_call_or_run) keeps a body under 128 bytes, so its
 * length is one byte.
 * A reader: ncs_call_tmpl_set on each CALL body it reads (or only on the last one before a
 * CALL_RUN), then ncs_dec_call_run. */
#define NCS_CALL_RUN_BODY_MAX 127u
/* The writer's side: x as one more element of the CALL_RUN open at *open when the memo
 * predicts it (opening one at p when none is open or the open one is full; *nrec counts each
 * record opened), else as a whole CALL (closing the open CALL_RUN; counted too). Returns the
 * end of what it wrote: at most NCS_CALL_MAX bytes. Close the last with ncs_call_run_close
 * before anything else is written after it. Reset the memo and the delta state together, at
 * the start of every chunk. */
static inline void ncs_call_run_close(uint8_t **open, const uint8_t *p) {
  if (*open) (*open)[1] = (uint8_t)(p - *open - 2);
  *open = NULL;
}
static inline __attribute__((always_inline)) uint8_t *ncs_encode_call_or_run(uint8_t *p, uint8_t **open, uint32_t *nrec,
                                                                             struct ncs_call_delta *d,
                                                                             struct ncs_call_run *m,
                                                                             const struct ncs_call *x) {
  ncs_v2u64 v[NCS_CALL_VECS];
  if (__builtin_expect(ncs_call_run_like(m, x, v), 1)) {
    if (!*open || p - *open > (ptrdiff_t)(2 + NCS_CALL_RUN_BODY_MAX - 20)) { /* room for 20 more bytes */
      ncs_call_run_close(open, p);
      *open = p;
      p[0] = NCS_REC_CALL_RUN;
      p += 2;
      ++*nrec;
    }
    return ncs_call_run_times(p, d, m, x, v);
  }
  ncs_call_run_close(open, p);
  ++*nrec;
  return p + ncs_call_run_full(p, d, m, x, v);
}
/* The template's decoded values with a zero delta state: DELTA fields hold their changes. */
struct ncs_call_tmpl {
  struct ncs_call c;
  int valid;
};
static inline int ncs_call_tmpl_set(struct ncs_call_tmpl *t, const uint8_t *body, size_t len) {
  struct ncs_call_delta z;
  struct ncs_rbuf r;
  ncs_call_delta_reset(&z);
  ncs_rbuf_init(&r, body, len, NULL, 0);
  t->valid = ncs_dec_call(&r, &z, &t->c) == 0;
  t->c.t_exit -= t->c.t_enter; /* the SPAN's change */
  return t->valid ? 0 : -1;
}
/* one element's record from its two changes a, b */
#define NCS_RA_(K, f, a) NCS_RA_##K(f, a)
#define NCS_RA_U32(f, a) x->f = t->f;
#define NCS_RA_I32(f, a) x->f = t->f;
#define NCS_RA_U64(f, a) x->f = t->f;
#define NCS_RA_DELTA(f, a) x->f = s->f += t->f;
#define NCS_RA_SPAN(f, a) s->f += t->f; x->f = x->a + s->f;
static inline __attribute__((always_inline)) void ncs_call_run_apply(const struct ncs_call *tm, uint64_t a, uint64_t b,
                                                                     struct ncs_delta_call *s, struct ncs_call *x) {
  struct ncs_call tc = *tm;
  const struct ncs_call *t = &tc;
  tc.t_enter = a;
  tc.t_exit = b;
  NCS_FIELDS_call(NCS_RA_)
}
/* ncs_get_varint, with its one- and two-byte cases (a CALL_RUN's changes) in line */
static inline __attribute__((always_inline)) int ncs_get_varint_short(const uint8_t **pp, const uint8_t *e, uint64_t *out) {
  const uint8_t *p = *pp;
  if (__builtin_expect(e - p >= 2, 1)) {
    if (p[0] < 0x80) { *out = p[0]; *pp = p + 1; return 0; }
    if (p[1] < 0x80) { *out = (p[0] & 0x7fu) | (uint64_t)p[1] << 7; *pp = p + 2; return 0; }
  }
  return ncs_get_varint(pp, e, out);
}
/* Decodes the elements of the CALL_RUN body [*pp, e) into x[0 ..), at most max of them, with
 * the template t and the chunk's delta state d (moved on as by the CALL rows they stand for).
 * Returns how many, *pp moved past them (at e when the body is done); -1 when the body is
 * damaged (no template, empty, a pair cut short or a varint over 10 bytes), d then moved by
 * the elements before. Call it again while *pp < e. The delta state is a local copy during
 * the loop (x's stores cannot alias it). */
static inline long ncs_dec_call_run(const uint8_t **pp, const uint8_t *e, const struct ncs_call_tmpl *t,
                                    struct ncs_call_delta *d, struct ncs_call *x, size_t max) {
  const uint8_t *p = *pp;
  if (!t->valid || p >= e) return -1; /* no template, or an empty body */
  struct ncs_delta_call s = d->call;
  size_t n = 0;
  long ret = -1;
  for (; n < max && p < e; n++) {
    uint64_t a, b;
    if (ncs_get_varint_short(&p, e, &a) || ncs_get_varint_short(&p, e, &b)) goto out;
    ncs_call_run_apply(&t->c, (uint64_t)ncs_unzigzag(a), (uint64_t)ncs_unzigzag(b), &s, &x[n]);
  }
  *pp = p;
  ret = (long)n;
out:
  d->call = s;
  return ret;
}

/* PROFILE and PROFILE_ID (format 3.1) into each other. A name's id is 1 + its place in
 * NCS_PROFILE_NAMES, 0 for the empty name; ncs_profile_name gives NULL for an id not listed.
 * ncs_profile_to_id returns -1 when a name is not listed (the shim then writes the PROFILE),
 * ncs_profile_from_id -1 when an id is not (a reader counts the record as bad). */
static inline const char *ncs_profile_name(uint32_t id) {
#define NCS_PNAME_(s) s,
  static const char *const names[] = {"", NCS_PROFILE_NAMES(NCS_PNAME_)};
#undef NCS_PNAME_
  return id < sizeof names / sizeof *names ? names[id] : NULL;
}
static inline int ncs_profile_name_id(const char *s, uint32_t *id) {
  const char *n;
  if (!s[0]) { *id = 0; return 0; }
  for (uint32_t i = 1; (n = ncs_profile_name(i)) != NULL; i++)
    if (n[0] == s[0] && !strcmp(n, s)) { *id = i; return 0; }
  return -1;
}
static inline int ncs_profile_to_id(const struct ncs_profile *p, struct ncs_profile_id *x) {
  x->comm_hash = p->comm_hash; x->rank = p->rank; x->nranks = p->nranks; x->seq = p->seq;
  x->nchannels = p->nchannels; x->nwarps = p->nwarps; x->count = p->count; x->root = p->root;
  x->t = p->t; x->dropped = p->dropped; x->version = p->version;
  return ncs_profile_name_id(p->func, &x->func) || ncs_profile_name_id(p->algo, &x->algo) ||
         ncs_profile_name_id(p->proto, &x->proto) || ncs_profile_name_id(p->datatype, &x->datatype) ? -1 : 0;
}
static inline int ncs_profile_from_id(const struct ncs_profile_id *x, struct ncs_profile *p) {
  const char *f = ncs_profile_name(x->func), *a = ncs_profile_name(x->algo), *r = ncs_profile_name(x->proto),
             *d = ncs_profile_name(x->datatype);
  if (!f || !a || !r || !d) return -1;
  memset(p, 0, sizeof *p);
  p->comm_hash = x->comm_hash; p->rank = x->rank; p->nranks = x->nranks; p->seq = x->seq;
  p->nchannels = x->nchannels; p->nwarps = x->nwarps; p->count = x->count; p->root = x->root;
  p->t = x->t; p->dropped = x->dropped; p->version = x->version;
  memcpy(p->func, f, strlen(f) + 1); /* every listed name is shorter than NCS_PROF_STR */
  memcpy(p->algo, a, strlen(a) + 1);
  memcpy(p->proto, r, strlen(r) + 1);
  memcpy(p->datatype, d, strlen(d) + 1);
  return 0;
}

#endif
