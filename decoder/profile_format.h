/* profile_format.h — the PROFILE (14) record body (docs/FORMAT-TOPO.md): one collective as
 * NCCL described it to its profiler plugin (shim/profiler.c). Header-only: the encoder is used
 * by the shim and by tests that write traces, the decoder by decoder/profile.c.
 *
 * Contract: the encoder appends a body through the bounded writer of ncclscope/encode.h; the
 * decoder reads a body of `len` bytes, treats missing trailing fields as 0 / empty, ignores
 * extra trailing bytes, and returns -1 only when a present field is cut in the middle or a
 * varint is malformed. Decoded strings are copied, truncated and NUL-terminated. */
#ifndef NCS_PROFILE_FORMAT_H
#define NCS_PROFILE_FORMAT_H
#include <stdint.h>
#include <string.h>
#include "ncclscope/encode.h"

#define NCS_PROF_STR 24 /* func, algo, proto, datatype: NCCL's names are short ("ReduceScatter") */

struct ncs_profile {
  uint64_t comm_hash;      /* NCCL's commHash as handed to the plugin's init (not COMM's comm_id) */
  int32_t rank;            /* rank in that communicator */
  uint32_t nranks;
  uint64_t seq;            /* NCCL's per-communicator, per-function sequence number */
  char func[NCS_PROF_STR]; /* "AllReduce", "Broadcast", ... as NCCL names it */
  char algo[NCS_PROF_STR]; /* "Ring", "Tree", "CollNetDirect", "NVLS", "PAT", ... */
  char proto[NCS_PROF_STR];/* "LL", "LL128", "Simple" */
  uint32_t nchannels, nwarps;
  uint64_t count;          /* elements */
  char datatype[NCS_PROF_STR]; /* NCCL's name, e.g. "ncclFloat32" */
  int32_t root;
  uint64_t t;              /* CLOCK_MONOTONIC ns at startEvent */
  uint64_t dropped;        /* collective events this process lost before this one (ring full) */
  uint32_t version;        /* profiler interface version NCCL used: 5 or 4 */
};

static inline void ncs_enc_profile_body(struct ncs_wbuf *w, const struct ncs_profile *p) {
  ncs_w_varint(w, p->comm_hash);
  ncs_w_svarint(w, p->rank);
  ncs_w_varint(w, p->nranks);
  ncs_w_varint(w, p->seq);
  ncs_w_str(w, p->func);
  ncs_w_str(w, p->algo);
  ncs_w_str(w, p->proto);
  ncs_w_varint(w, p->nchannels);
  ncs_w_varint(w, p->nwarps);
  ncs_w_varint(w, p->count);
  ncs_w_str(w, p->datatype);
  ncs_w_svarint(w, p->root);
  ncs_w_varint(w, p->t);
  ncs_w_varint(w, p->dropped);
  ncs_w_varint(w, p->version);
}
static inline void ncs_enc_profile(struct ncs_wbuf *w, const struct ncs_profile *p) {
  size_t s = ncs_rec_begin(w, NCS_REC_PROFILE);
  ncs_enc_profile_body(w, p);
  ncs_rec_end(w, s);
}

struct ncs_prof_rd_ { const uint8_t *p, *e; int bad; };
static inline uint64_t ncs_prof_rd_u_(struct ncs_prof_rd_ *r) {
  uint64_t v = 0;
  if (r->p >= r->e) return 0;
  if (ncs_get_varint(&r->p, r->e, &v) != 0) { r->bad = 1; r->p = r->e; return 0; }
  return v;
}
static inline int64_t ncs_prof_rd_s_(struct ncs_prof_rd_ *r) {
  uint64_t v = ncs_prof_rd_u_(r);
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
static inline void ncs_prof_rd_str_(struct ncs_prof_rd_ *r, char *out, size_t cap) {
  uint64_t n = 0;
  out[0] = 0;
  if (r->p >= r->e) return;
  if (ncs_get_varint(&r->p, r->e, &n) != 0 || n > (uint64_t)(r->e - r->p)) { r->bad = 1; r->p = r->e; return; }
  size_t k = n < cap - 1 ? (size_t)n : cap - 1;
  memcpy(out, r->p, k);
  out[k] = 0;
  r->p += n;
}
static inline uint32_t ncs_prof_u32_(uint64_t v) { return v > 0xffffffffu ? 0xffffffffu : (uint32_t)v; }
static inline int32_t ncs_prof_i32_(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

static inline int ncs_dec_profile(const uint8_t *body, size_t len, struct ncs_profile *p) {
  struct ncs_prof_rd_ r = { body, body + len, 0 };
  memset(p, 0, sizeof *p);
  p->comm_hash = ncs_prof_rd_u_(&r);
  p->rank = ncs_prof_i32_(ncs_prof_rd_s_(&r));
  p->nranks = ncs_prof_u32_(ncs_prof_rd_u_(&r));
  p->seq = ncs_prof_rd_u_(&r);
  ncs_prof_rd_str_(&r, p->func, sizeof p->func);
  ncs_prof_rd_str_(&r, p->algo, sizeof p->algo);
  ncs_prof_rd_str_(&r, p->proto, sizeof p->proto);
  p->nchannels = ncs_prof_u32_(ncs_prof_rd_u_(&r));
  p->nwarps = ncs_prof_u32_(ncs_prof_rd_u_(&r));
  p->count = ncs_prof_rd_u_(&r);
  ncs_prof_rd_str_(&r, p->datatype, sizeof p->datatype);
  p->root = ncs_prof_i32_(ncs_prof_rd_s_(&r));
  p->t = ncs_prof_rd_u_(&r);
  p->dropped = ncs_prof_rd_u_(&r);
  p->version = ncs_prof_u32_(ncs_prof_rd_u_(&r));
  return r.bad ? -1 : 0;
}
#endif
