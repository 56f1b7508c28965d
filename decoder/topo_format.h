/* topo_format.h — TOPO_GPU (12) and TOPO_LINK (13) record bodies (docs/FORMAT-TOPO.md):
 * header-only encoders (used by shim/topo.c and by tests that write traces) and decoders
 * (used by decoder/model/topo.c).
 *
 * Contract: encoders append one whole record through the bounded writer of
 * ncclscope/encode.h; decoders read a body of `len` bytes, treat missing trailing fields as
 * 0 / empty, ignore extra trailing bytes, and return -1 only when a present field is cut in
 * the middle. Decoded strings are copied, truncated and NUL-terminated. */
#ifndef NCS_TOPO_FORMAT_H
#define NCS_TOPO_FORMAT_H
#include <stdint.h>
#include <string.h>
#include "ncclscope/encode.h"

/* PCIe relationship between two GPUs: NVML's nvmlGpuTopologyLevel_t values. */
enum ncs_pcie_rel {
  NCS_REL_X = 0,      /* NVML_TOPOLOGY_INTERNAL: the same GPU */
  NCS_REL_PIX = 10,   /* NVML_TOPOLOGY_SINGLE: one PCIe switch */
  NCS_REL_PXB = 20,   /* NVML_TOPOLOGY_MULTIPLE: several PCIe switches, no host bridge */
  NCS_REL_PHB = 30,   /* NVML_TOPOLOGY_HOSTBRIDGE: through a PCIe host bridge */
  NCS_REL_NODE = 40,  /* NVML_TOPOLOGY_NODE: host bridges of one NUMA node */
  NCS_REL_SYS = 50,   /* NVML_TOPOLOGY_SYSTEM: across NUMA nodes (SMP interconnect) */
  NCS_REL_UNKNOWN = 255
};
static inline const char *ncs_pcie_rel_name(unsigned rel) {
  switch (rel) {
  case NCS_REL_X: return "X";
  case NCS_REL_PIX: return "PIX";
  case NCS_REL_PXB: return "PXB";
  case NCS_REL_PHB: return "PHB";
  case NCS_REL_NODE: return "NODE";
  case NCS_REL_SYS: return "SYS";
  default: return "?";
  }
}

struct ncs_topo_gpu {
  uint32_t index;            /* NVML index */
  char name[64];
  char bus_id[32];           /* NVML's busId, "00000000:1A:00.0" */
  char uuid[64];
  uint32_t pcie_gen, pcie_width;          /* current link */
  uint32_t pcie_gen_max, pcie_width_max;  /* maximum of the link */
  uint32_t nvlinks;          /* NVLinks in state active */
};
struct ncs_topo_link {
  uint32_t a, b;             /* NVML indexes, a < b */
  uint32_t nvlinks;          /* active NVLinks of a whose remote end is b (nvidia-smi's NV#) */
  uint32_t pcie;             /* enum ncs_pcie_rel */
  uint32_t p2p_read;         /* nvmlGpuP2PStatus_t for P2P read (0 = OK), 255 unknown */
  uint32_t p2p_nvlink;       /* nvmlGpuP2PStatus_t for P2P over NVLink (0 = OK), 255 unknown */
};

/* Bodies only (for ncs_emit, which frames the record itself). */
static inline void ncs_enc_topo_gpu_body(struct ncs_wbuf *w, const struct ncs_topo_gpu *g) {
  ncs_w_varint(w, g->index);
  ncs_w_str(w, g->name);
  ncs_w_str(w, g->bus_id);
  ncs_w_str(w, g->uuid);
  ncs_w_varint(w, g->pcie_gen);
  ncs_w_varint(w, g->pcie_width);
  ncs_w_varint(w, g->pcie_gen_max);
  ncs_w_varint(w, g->pcie_width_max);
  ncs_w_varint(w, g->nvlinks);
}
static inline void ncs_enc_topo_link_body(struct ncs_wbuf *w, const struct ncs_topo_link *l) {
  ncs_w_varint(w, l->a);
  ncs_w_varint(w, l->b);
  ncs_w_varint(w, l->nvlinks);
  ncs_w_varint(w, l->pcie);
  ncs_w_varint(w, l->p2p_read);
  ncs_w_varint(w, l->p2p_nvlink);
}
/* Whole records (type, length, body). */
static inline void ncs_enc_topo_gpu(struct ncs_wbuf *w, const struct ncs_topo_gpu *g) {
  size_t s = ncs_rec_begin(w, NCS_REC_TOPO_GPU);
  ncs_enc_topo_gpu_body(w, g);
  ncs_rec_end(w, s);
}
static inline void ncs_enc_topo_link(struct ncs_wbuf *w, const struct ncs_topo_link *l) {
  size_t s = ncs_rec_begin(w, NCS_REC_TOPO_LINK);
  ncs_enc_topo_link_body(w, l);
  ncs_rec_end(w, s);
}

/* ---- decoding ---- */
static inline int ncs_dec_topo_gpu(const uint8_t *body, size_t len, struct ncs_topo_gpu *g) {
  struct ncs_rbuf r;
  ncs_rbuf_init(&r, body, len);
  memset(g, 0, sizeof *g);
  g->index = ncs_r_u32(&r);
  ncs_r_str(&r, g->name, sizeof g->name);
  ncs_r_str(&r, g->bus_id, sizeof g->bus_id);
  ncs_r_str(&r, g->uuid, sizeof g->uuid);
  g->pcie_gen = ncs_r_u32(&r);
  g->pcie_width = ncs_r_u32(&r);
  g->pcie_gen_max = ncs_r_u32(&r);
  g->pcie_width_max = ncs_r_u32(&r);
  g->nvlinks = ncs_r_u32(&r);
  return r.bad ? -1 : 0;
}
static inline int ncs_dec_topo_link(const uint8_t *body, size_t len, struct ncs_topo_link *l) {
  struct ncs_rbuf r;
  ncs_rbuf_init(&r, body, len);
  memset(l, 0, sizeof *l);
  l->a = ncs_r_u32(&r);
  l->b = ncs_r_u32(&r);
  l->nvlinks = ncs_r_u32(&r);
  l->pcie = ncs_r_more(&r) ? ncs_r_u32(&r) : NCS_REL_UNKNOWN;
  l->p2p_read = ncs_r_more(&r) ? ncs_r_u32(&r) : 255;
  l->p2p_nvlink = ncs_r_more(&r) ? ncs_r_u32(&r) : 255;
  return r.bad ? -1 : 0;
}
#endif
