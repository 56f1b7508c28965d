/* encode.h — encoders for every record of the trace format (docs/FORMAT.md), header-only.
 *
 * Contract: the one place that turns record structs into bytes. The shim's writer, the
 * synthetic trace generator and the tests all encode through here, and the decoder's reader
 * (decoder/io/trace.c) decodes into the same structs, so writer and reader cannot disagree.
 *   - ncs_encode_call() is the hot-path CALL encoder: no allocation, no bounds checks
 *     needed beyond the caller giving NCS_CALL_MAX bytes; it keeps the per-chunk delta state.
 *   - Every other record is appended to a bounded byte writer (struct ncs_wbuf) either as a
 *     body only (ncs_enc_*_body, for ncs_emit() in shim/hooks.h) or as a whole record with
 *     type and length (ncs_enc_*). A writer that runs out of room sets `overflow`, stops
 *     writing and takes the unfinished record back out; nothing is written past `cap`.
 *     Reset with ncs_wbuf_init (e.g. after compressing the buffer into a chunk).
 *   - ncs_encode_file_header() and ncs_frame_chunk() produce the file header and a chunk
 *     header (with its checksum) for an already compressed payload.
 * Strings: `const char *` fields are NUL-terminated (NULL reads as empty) except where a
 * length travels with them (kv values, log lines). All functions are static inline. */
#ifndef NCCLSCOPE_ENCODE_H
#define NCCLSCOPE_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "format.h"

/* ---- record structs (also what decoder/io/trace.h hands to its visitors) ---- */

/* 5 CALL. t_exit is stored as duration = t_exit - t_enter. */
struct ncs_call {
  uint32_t op, thread, comm, datatype, redop, depth, callsite, flags;
  int32_t root, rc;
  uint64_t tcall, seq, count, stream, t_enter, t_exit, group;
};
/* 1 PROCESS: one key/value pair. key is NUL-terminated; value has value_len bytes (may hold
 * NULs, e.g. cmdline) and, from the reader, is also NUL-terminated after value_len. */
struct ncs_kv { const char *key, *value; size_t value_len; };
/* 3 COMM */
struct ncs_comm {
  uint32_t comm, init_op, flags, thread;
  uint64_t comm_id, handle, parent_id, t_enter, t_exit;
  int32_t rank, nranks, device, rc;
};
/* 4 COMM_END */
struct ncs_comm_end { uint32_t comm, op, thread; int32_t rc; uint64_t t_enter, t_exit; };
/* 2 THREAD */
struct ncs_thread { uint32_t thread; uint64_t tid; const char *name; };
/* 6 CALLSITE and its frames */
struct ncs_frame { uint32_t module; uint64_t offset, symbol_offset; const char *symbol; };
struct ncs_callsite { uint32_t id, nframes; const struct ncs_frame *frames; };
/* 7 MODULE */
struct ncs_module { uint32_t module; uint64_t base; const char *path; };
/* 8 DROP */
struct ncs_drop { uint32_t reason, thread; uint64_t records; };
/* 9 CLOCK */
struct ncs_clock { uint64_t realtime_ns, monotonic_ns, uncertainty_ns; };
/* 10 GPU_TIME */
struct ncs_gpu_time { uint32_t kind, thread, flags; uint64_t ref, gpu_start, gpu_end; };
/* 11 NCCL_LOG: line has len bytes (no newline). */
struct ncs_log_line { uint64_t t; const char *line; size_t len; };

/* ---- CALL: the hot path ---- */

/* Largest CALL record: type (1) + length (1) + body (at most 120 bytes: ten 32-bit fields of
 * at most 5 bytes and seven 64-bit Δ fields of at most 10). The body is under 128 bytes, so
 * its length varint is always one byte. */
#define NCS_CALL_BODY_MAX 120
#define NCS_CALL_MAX 128

/* Previous values of the Δ fields of CALL and GPU_TIME records (FORMAT.md): the per-chunk
 * delta state. Zero it at the start of every chunk. */
struct ncs_call_delta {
  uint64_t tcall, seq, count, stream, t_enter, duration, group; /* CALL */
  uint64_t gpu_ref, gpu_start, gpu_duration;                    /* GPU_TIME */
};
static inline void ncs_call_delta_reset(struct ncs_call_delta *d) { memset(d, 0, sizeof *d); }

static inline size_t ncs_put_svarint(uint8_t *p, int64_t v) { return ncs_put_varint(p, ncs_zigzag(v)); }
static inline size_t ncs_put_delta_(uint8_t *p, uint64_t *prev, uint64_t v) {
  size_t n = ncs_put_svarint(p, (int64_t)(v - *prev));
  *prev = v;
  return n;
}

/* Writes the whole CALL record (type, length, body) of `c` at `out` (room for NCS_CALL_MAX
 * bytes) and updates the delta state. Returns the bytes written (at most NCS_CALL_MAX). */
static inline size_t ncs_encode_call(uint8_t *out, struct ncs_call_delta *d, const struct ncs_call *c) {
  uint8_t *p = out + 2; /* type and one-byte length go first */
  p += ncs_put_varint(p, c->op);
  p += ncs_put_varint(p, c->thread);
  p += ncs_put_delta_(p, &d->tcall, c->tcall);
  p += ncs_put_varint(p, c->comm);
  p += ncs_put_delta_(p, &d->seq, c->seq);
  p += ncs_put_delta_(p, &d->count, c->count);
  p += ncs_put_varint(p, c->datatype);
  p += ncs_put_varint(p, c->redop);
  p += ncs_put_svarint(p, c->root);
  p += ncs_put_delta_(p, &d->stream, c->stream);
  p += ncs_put_delta_(p, &d->t_enter, c->t_enter);
  p += ncs_put_delta_(p, &d->duration, c->t_exit - c->t_enter);
  p += ncs_put_svarint(p, c->rc);
  p += ncs_put_varint(p, c->depth);
  p += ncs_put_delta_(p, &d->group, c->group);
  p += ncs_put_varint(p, c->callsite);
  p += ncs_put_varint(p, c->flags);
  out[0] = NCS_REC_CALL;
  out[1] = (uint8_t)(p - out - 2);
  return (size_t)(p - out);
}

/* Decodes a CALL body of `len` bytes into *c, updating the delta state. A body that ends
 * early leaves the remaining fields at 0 (Δ fields: delta 0); bytes after the known fields
 * are ignored. Returns 0, or -1 when a varint runs past the body (damage). */
static inline int ncs_decode_call(const uint8_t *body, size_t len, struct ncs_call_delta *d,
                                  struct ncs_call *c) {
  const uint8_t *p = body, *end = body + len;
  uint64_t f[17];
  int n = 0;
  while (n < 17 && p < end) {
    if (*p < 0x80) { f[n++] = *p++; continue; } /* most fields fit one byte */
    if (ncs_get_varint(&p, end, &f[n]) != 0) return -1;
    n++;
  }
  while (n < 17) f[n++] = 0;
  c->op = (uint32_t)f[0];
  c->thread = (uint32_t)f[1];
  c->tcall = d->tcall += (uint64_t)ncs_unzigzag(f[2]);
  c->comm = (uint32_t)f[3];
  c->seq = d->seq += (uint64_t)ncs_unzigzag(f[4]);
  c->count = d->count += (uint64_t)ncs_unzigzag(f[5]);
  c->datatype = (uint32_t)f[6];
  c->redop = (uint32_t)f[7];
  c->root = (int32_t)ncs_unzigzag(f[8]);
  c->stream = d->stream += (uint64_t)ncs_unzigzag(f[9]);
  c->t_enter = d->t_enter += (uint64_t)ncs_unzigzag(f[10]);
  d->duration += (uint64_t)ncs_unzigzag(f[11]);
  c->t_exit = c->t_enter + d->duration;
  c->rc = (int32_t)ncs_unzigzag(f[12]);
  c->depth = (uint32_t)f[13];
  c->group = d->group += (uint64_t)ncs_unzigzag(f[14]);
  c->callsite = (uint32_t)f[15];
  c->flags = (uint32_t)f[16];
  return 0;
}

/* ---- bounded writer for the other records ---- */

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

/* ---- bodies, field order exactly as in docs/FORMAT.md ---- */

static inline void ncs_enc_process_body(struct ncs_wbuf *w, const struct ncs_kv *kv, size_t n) {
  ncs_w_varint(w, n);
  for (size_t i = 0; i < n; i++) {
    ncs_w_str(w, kv[i].key);
    ncs_w_strn(w, kv[i].value, kv[i].value ? kv[i].value_len : 0);
  }
}
static inline void ncs_enc_thread_body(struct ncs_wbuf *w, const struct ncs_thread *t) {
  ncs_w_varint(w, t->thread);
  ncs_w_varint(w, t->tid);
  ncs_w_str(w, t->name);
}
static inline void ncs_enc_comm_body(struct ncs_wbuf *w, const struct ncs_comm *c) {
  ncs_w_varint(w, c->comm);
  ncs_w_u64(w, c->comm_id);
  ncs_w_varint(w, c->handle);
  ncs_w_svarint(w, c->rank);
  ncs_w_svarint(w, c->nranks);
  ncs_w_svarint(w, c->device);
  ncs_w_varint(w, c->init_op);
  ncs_w_u64(w, c->parent_id);
  ncs_w_varint(w, c->flags);
  ncs_w_svarint(w, c->rc);
  ncs_w_varint(w, c->t_enter);
  ncs_w_varint(w, c->t_exit);
  ncs_w_varint(w, c->thread);
}
static inline void ncs_enc_comm_end_body(struct ncs_wbuf *w, const struct ncs_comm_end *e) {
  ncs_w_varint(w, e->comm);
  ncs_w_varint(w, e->op);
  ncs_w_svarint(w, e->rc);
  ncs_w_varint(w, e->t_enter);
  ncs_w_varint(w, e->t_exit);
  ncs_w_varint(w, e->thread);
}
static inline void ncs_enc_callsite_body(struct ncs_wbuf *w, const struct ncs_callsite *cs) {
  ncs_w_varint(w, cs->id);
  ncs_w_varint(w, cs->nframes);
  for (uint32_t i = 0; i < cs->nframes; i++) {
    const struct ncs_frame *f = &cs->frames[i];
    ncs_w_varint(w, f->module);
    ncs_w_varint(w, f->offset);
    ncs_w_str(w, f->symbol);
    ncs_w_varint(w, f->symbol_offset);
  }
}
static inline void ncs_enc_module_body(struct ncs_wbuf *w, const struct ncs_module *m) {
  ncs_w_varint(w, m->module);
  ncs_w_varint(w, m->base);
  ncs_w_str(w, m->path);
}
static inline void ncs_enc_drop_body(struct ncs_wbuf *w, const struct ncs_drop *d) {
  ncs_w_varint(w, d->reason);
  ncs_w_varint(w, d->records);
  ncs_w_varint(w, d->thread);
}
static inline void ncs_enc_clock_body(struct ncs_wbuf *w, const struct ncs_clock *c) {
  ncs_w_varint(w, c->realtime_ns);
  ncs_w_varint(w, c->monotonic_ns);
  ncs_w_varint(w, c->uncertainty_ns);
}
/* GPU_TIME: ref, start and duration are Δ fields of the chunk's delta state, which moves only
 * when the record was written whole. */
static inline void ncs_enc_gpu_time_body(struct ncs_wbuf *w, struct ncs_call_delta *d,
                                         const struct ncs_gpu_time *g) {
  uint64_t dur = g->gpu_end - g->gpu_start;
  ncs_w_varint(w, g->kind);
  ncs_w_varint(w, g->thread);
  ncs_w_svarint(w, (int64_t)(g->ref - d->gpu_ref));
  ncs_w_svarint(w, (int64_t)(g->gpu_start - d->gpu_start));
  ncs_w_svarint(w, (int64_t)(dur - d->gpu_duration));
  ncs_w_varint(w, g->flags);
  if (!w->overflow) { d->gpu_ref = g->ref; d->gpu_start = g->gpu_start; d->gpu_duration = dur; }
}
/* Decodes a GPU_TIME body against the chunk's delta state. Returns 0, or -1 when the body
 * ends inside a field. Missing trailing fields (flags) read as 0. */
static inline int ncs_decode_gpu_time(const uint8_t *body, size_t len, struct ncs_call_delta *d,
                                      struct ncs_gpu_time *g) {
  const uint8_t *p = body, *end = body + len;
  uint64_t f[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 6 && p < end; i++)
    if (ncs_get_varint(&p, end, &f[i]) != 0) return -1;
  g->kind = (uint32_t)f[0];
  g->thread = (uint32_t)f[1];
  g->ref = d->gpu_ref + (uint64_t)ncs_unzigzag(f[2]);
  g->gpu_start = d->gpu_start + (uint64_t)ncs_unzigzag(f[3]);
  uint64_t dur = d->gpu_duration + (uint64_t)ncs_unzigzag(f[4]);
  g->gpu_end = g->gpu_start + dur;
  g->flags = (uint32_t)f[5];
  d->gpu_ref = g->ref; d->gpu_start = g->gpu_start; d->gpu_duration = dur;
  return 0;
}
static inline void ncs_enc_log_line_body(struct ncs_wbuf *w, const struct ncs_log_line *l) {
  ncs_w_varint(w, l->t);
  ncs_w_strn(w, l->line, l->line ? l->len : 0);
}

/* ---- whole records (type + length + body) ---- */
#define NCS_ENC_WHOLE_(name, TYPE, T) \
  static inline void ncs_enc_##name(struct ncs_wbuf *w, const T *x) { \
    size_t m_ = ncs_rec_begin(w, TYPE); \
    ncs_enc_##name##_body(w, x); \
    ncs_rec_end(w, m_); \
  }
NCS_ENC_WHOLE_(thread, NCS_REC_THREAD, struct ncs_thread)
NCS_ENC_WHOLE_(comm, NCS_REC_COMM, struct ncs_comm)
NCS_ENC_WHOLE_(comm_end, NCS_REC_COMM_END, struct ncs_comm_end)
NCS_ENC_WHOLE_(callsite, NCS_REC_CALLSITE, struct ncs_callsite)
NCS_ENC_WHOLE_(module, NCS_REC_MODULE, struct ncs_module)
NCS_ENC_WHOLE_(drop, NCS_REC_DROP, struct ncs_drop)
NCS_ENC_WHOLE_(clock, NCS_REC_CLOCK, struct ncs_clock)
NCS_ENC_WHOLE_(log_line, NCS_REC_NCCL_LOG, struct ncs_log_line)
#undef NCS_ENC_WHOLE_
static inline void ncs_enc_gpu_time(struct ncs_wbuf *w, struct ncs_call_delta *d, const struct ncs_gpu_time *g) {
  size_t m = ncs_rec_begin(w, NCS_REC_GPU_TIME);
  ncs_enc_gpu_time_body(w, d, g);
  ncs_rec_end(w, m);
}
static inline void ncs_enc_process(struct ncs_wbuf *w, const struct ncs_kv *kv, size_t n) {
  size_t m = ncs_rec_begin(w, NCS_REC_PROCESS);
  ncs_enc_process_body(w, kv, n);
  ncs_rec_end(w, m);
}
/* A CALL through the bounded writer (generators, tests). */
static inline void ncs_enc_call(struct ncs_wbuf *w, struct ncs_call_delta *d, const struct ncs_call *c) {
  if (w->overflow || w->cap - w->len < NCS_CALL_MAX) { w->overflow = 1; return; }
  w->len += ncs_encode_call(w->buf + w->len, d, c);
}

/* ---- a bounded reader of record bodies (decoders of TOPO_*, PROFILE, ...) ----
 * Fields missing at the end of a body read as 0 / "" (FORMAT.md); a field cut short or a
 * varint over 10 bytes sets `bad` and ends the body. */
struct ncs_rbuf { const uint8_t *p, *e; int bad; };
static inline void ncs_rbuf_init(struct ncs_rbuf *r, const uint8_t *body, size_t len) {
  r->p = body; r->e = body + len; r->bad = 0;
}
static inline int ncs_r_more(const struct ncs_rbuf *r) { return r->p < r->e; }
static inline uint64_t ncs_r_varint(struct ncs_rbuf *r) {
  uint64_t v = 0;
  if (r->p >= r->e) return 0;
  if (ncs_get_varint(&r->p, r->e, &v) != 0) { r->bad = 1; r->p = r->e; return 0; }
  return v;
}
static inline uint32_t ncs_r_u32(struct ncs_rbuf *r) { /* saturating */
  uint64_t v = ncs_r_varint(r);
  return v > 0xffffffffu ? 0xffffffffu : (uint32_t)v;
}
static inline int64_t ncs_r_svarint(struct ncs_rbuf *r) { return ncs_unzigzag(ncs_r_varint(r)); }
static inline int32_t ncs_r_i32(struct ncs_rbuf *r) { /* saturating */
  int64_t v = ncs_r_svarint(r);
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}
/* A string into out[cap] (cap >= 1), cut to fit and NUL-terminated. */
static inline void ncs_r_str(struct ncs_rbuf *r, char *out, size_t cap) {
  uint64_t n = 0;
  out[0] = 0;
  if (r->p >= r->e) return;
  if (ncs_get_varint(&r->p, r->e, &n) != 0 || n > (uint64_t)(r->e - r->p)) { r->bad = 1; r->p = r->e; return; }
  size_t k = n < cap - 1 ? (size_t)n : cap - 1;
  memcpy(out, r->p, k);
  out[k] = 0;
  r->p += n;
}

/* ---- file and chunk framing ---- */

/* The 64-byte file header (format NCS_FORMAT_MAJOR.NCS_FORMAT_MINOR). */
static inline void ncs_encode_file_header(uint8_t out[NCS_FILE_HEADER_SIZE], uint64_t realtime_ns,
                                          uint32_t pid) {
  memset(out, 0, NCS_FILE_HEADER_SIZE);
  memcpy(out + NCS_FH_MAGIC, NCS_FILE_MAGIC, 8);
  ncs_put_u16(out + NCS_FH_MAJOR, NCS_FORMAT_MAJOR);
  ncs_put_u16(out + NCS_FH_MINOR, NCS_FORMAT_MINOR);
  ncs_put_u32(out + NCS_FH_SIZE, NCS_FILE_HEADER_SIZE);
  ncs_put_u64(out + NCS_FH_REALTIME, realtime_ns);
  ncs_put_u32(out + NCS_FH_PID, pid);
}

/* The 40-byte chunk header for `payload` (one complete zstd frame of payload_size bytes that
 * decompresses to raw_size bytes holding `records` records), checksum included. */
static inline void ncs_frame_chunk(uint8_t out[NCS_CHUNK_HEADER_SIZE], const void *payload,
                                   uint32_t payload_size, uint32_t raw_size, uint32_t records,
                                   uint64_t index, uint64_t dropped_total, uint32_t flags) {
  ncs_put_u32(out + NCS_CH_MAGIC, NCS_CHUNK_MAGIC);
  ncs_put_u32(out + NCS_CH_PAYLOAD, payload_size);
  ncs_put_u32(out + NCS_CH_RAW, raw_size);
  ncs_put_u32(out + NCS_CH_RECORDS, records);
  ncs_put_u64(out + NCS_CH_INDEX, index);
  ncs_put_u64(out + NCS_CH_DROPPED, dropped_total);
  uint32_t h = ncs_fnv1a(NCS_FNV_INIT, out, NCS_CH_CHECKSUM);
  h = ncs_fnv1a(h, payload, payload_size);
  ncs_put_u32(out + NCS_CH_CHECKSUM, h);
  ncs_put_u32(out + NCS_CH_FLAGS, flags);
}

#endif
