/* profile_format.h — the PROFILE (14) record body (docs/FORMAT-TOPO.md): one collective as
 * NCCL described it to its profiler plugin (shim/profiler.c). Header-only: the encoder is used
 * by the shim and by tests that write traces, the decoder by decoder/analysis/profile.c.
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

static inline int ncs_dec_profile(const uint8_t *body, size_t len, struct ncs_profile *p) {
  struct ncs_rbuf r;
  ncs_rbuf_init(&r, body, len);
  memset(p, 0, sizeof *p);
  p->comm_hash = ncs_r_varint(&r);
  p->rank = ncs_r_i32(&r);
  p->nranks = ncs_r_u32(&r);
  p->seq = ncs_r_varint(&r);
  ncs_r_str(&r, p->func, sizeof p->func);
  ncs_r_str(&r, p->algo, sizeof p->algo);
  ncs_r_str(&r, p->proto, sizeof p->proto);
  p->nchannels = ncs_r_u32(&r);
  p->nwarps = ncs_r_u32(&r);
  p->count = ncs_r_varint(&r);
  ncs_r_str(&r, p->datatype, sizeof p->datatype);
  p->root = ncs_r_i32(&r);
  p->t = ncs_r_varint(&r);
  p->dropped = ncs_r_varint(&r);
  p->version = ncs_r_u32(&r);
  return r.bad ? -1 : 0;
}
#endif
