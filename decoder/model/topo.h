/* topo.h — the GPU topology of one host, built from TOPO_GPU / TOPO_LINK records
 * (docs/FORMAT-TOPO.md), printed in `nvidia-smi topo -m` form with an optional overlay.
 *
 * Contract: a fixed-size value (no allocation), at most NCS_TOPO_MAX GPUs by NVML index;
 * records for larger indexes are counted in `dropped`. Adding the same GPU or link twice (one
 * record per process on the host) keeps the first. */
#ifndef NCS_TOPO_H
#define NCS_TOPO_H
#include <stdint.h>
#include <stdio.h>
#include "base/json.h"
#include "ncclscope/encode.h"

#define NCS_TOPO_MAX 64
struct ncs_topo {
  char host[64];
  int ngpus;                        /* highest index seen + 1 */
  unsigned char have_gpu[NCS_TOPO_MAX];
  struct ncs_topo_gpu gpu[NCS_TOPO_MAX];
  unsigned char have_link[NCS_TOPO_MAX][NCS_TOPO_MAX];
  unsigned char nv[NCS_TOPO_MAX][NCS_TOPO_MAX];   /* NVLink count, symmetric */
  unsigned char rel[NCS_TOPO_MAX][NCS_TOPO_MAX];  /* enum ncs_pcie_rel, symmetric */
  unsigned dropped;
};

void ncs_topo_init(struct ncs_topo *t, const char *host);
void ncs_topo_add_gpu(struct ncs_topo *t, const struct ncs_topo_gpu *g);
void ncs_topo_add_link(struct ncs_topo *t, const struct ncs_topo_link *l);
/* Decodes a raw record body of type NCS_REC_TOPO_GPU/LINK into t. Returns 0, -1 when damaged,
 * 1 when the type is not a topology record. */
int ncs_topo_add_raw(struct ncs_topo *t, uint32_t type, const uint8_t *body, size_t len);
/* NVML index of the GPU whose PCI bus id matches NCCL's busId text ("1a000", "0000:1a:00.0"),
 * or -1. */
int ncs_topo_find_bus(const struct ncs_topo *t, const char *nccl_bus);
/* Total NVLink pairs (a < b with nv > 0). */
int ncs_topo_nvlink_pairs(const struct ncs_topo *t);
/* nvidia-smi-like cell for a pair: "X", "NV12", "PIX", ... */
const char *ncs_topo_cell(const struct ncs_topo *t, int a, int b, char *buf, size_t cap);
/* Prints the matrix. overlay(ctx, a, b) may return a short string printed after the cell
 * ("NV12>P2P") or NULL. */
void ncs_topo_print(const struct ncs_topo *t, FILE *f, const char *indent,
                    const char *(*overlay)(void *ctx, int a, int b), void *ctx);
/* JSON object {host, gpus: [...], links: [{a, b, nvlinks, pcie}]} */
void ncs_topo_json(const struct ncs_topo *t, struct ncs_json *j, const char *key);
/* Peak per-direction bandwidth in GB/s of the link between a and b as the GPUs describe it
 * (NVLink count x per-link rate for the GPU's generation, else PCIe gen x width), 0 unknown.
 * Figures from docs/REFERENCE-FIGURES.md. */
double ncs_topo_peak_gbps(const struct ncs_topo *t, int a, int b, const char **why);
#endif
