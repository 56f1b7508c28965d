/* nccl_double.h — what the NCCL double and the test jobs must agree on: the link model.
 *
 * Contract: an operation on the double lasts, on its stream's device clock (docs/DOUBLES.md),
 * from the moment every rank's kernel started, lat + S·factor/bw, with S and factor as
 * nccl-tests defines them (docs/REFERENCE-FIGURES.md), so busbw measured over the operation
 * gives bw back for large messages. lat and bw come from the transport NCCL chose for the
 * communicator's ring on the NVML topology (ndbl_link_price: the figures and where they come
 * from), or, when NCCLDOUBLE_LAT_US / NCCLDOUBLE_BW_GBPS are set, from them (flat latency;
 * an unset one counts 0). A group of point-to-point operations on one stream takes
 * lat + max(bytes sent, bytes received)/bw in total. No libm needed. */
#ifndef NCCL_DOUBLE_MODEL_H
#define NCCL_DOUBLE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum ndbl_rule { NDBL_RULE_ALLREDUCE, NDBL_RULE_ONE, NDBL_RULE_NTIMES };

/* Nanoseconds modelled for one operation moving count elements of dtsize bytes on n ranks
 * under rule; lat_us and bw_gbps (1e9 bytes/s, bus bandwidth); bw_gbps <= 0 means no
 * bandwidth term. */
static inline uint64_t ndbl_model_ns(enum ndbl_rule rule, size_t count, size_t dtsize, int n,
                                     double lat_us, double bw_gbps) {
  double s = (double)count * (double)dtsize, factor = 1.0;
  if (rule == NDBL_RULE_ALLREDUCE) factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  if (rule == NDBL_RULE_NTIMES) { s *= n; factor = n > 1 ? (double)(n - 1) / n : 0.0; }
  double ns = lat_us * 1e3;
  if (bw_gbps > 0) ns += s * factor / bw_gbps; /* bytes / (GB/s) = ns */
  return ns > 0 ? (uint64_t)(ns + 0.5) : 0;
}

/* The link model's parameters from NCCLDOUBLE_LAT_US and NCCLDOUBLE_BW_GBPS (0 when unset).
 * Returns 1 when either is set (they then replace the topology's figures), else 0. */
static inline int ndbl_model_env(double *lat_us, double *bw_gbps) {
  const char *l = getenv("NCCLDOUBLE_LAT_US"), *b = getenv("NCCLDOUBLE_BW_GBPS");
  *lat_us = l && *l ? strtod(l, NULL) : 0.0;
  *bw_gbps = b && *b ? strtod(b, NULL) : 0.0;
  if (*lat_us < 0) *lat_us = 0;
  return (l && *l) || (b && *b);
}

/* The hop a ring is priced by (its slowest): what NCCL chose and over which link. */
enum ndbl_link { NDBL_LINK_NVLINK, NDBL_LINK_PCIE_P2P, NDBL_LINK_SHM, NDBL_LINK_NET_IB, NDBL_LINK_NET_SOCKET };
struct ndbl_hop {
  enum ndbl_link link;
  int nvlinks;         /* NVLink: links between the two GPUs (NVSwitch: per GPU) */
  int nvlink_gen;      /* 3 (A100, GA102 bridges), 4 (H100/H200), 5 (B200) */
  double nvlink_gbps;  /* per link, per direction: 25 (NVLink 3 and 4), 50 (NVLink 5),
                          14.0625 (GA102 bridge: 56.25 GB/s over 4 links) */
  int pcie_gen, pcie_width; /* the narrower GPU of the two (PCIe P2P, SHM) */
};

/* Ring busbw (GB/s) and latency (us: base + per ring step) of one hop kind, calibrated on
 * docs/REFERENCE-FIGURES.md:
 *   NVLink   peak = links x per-link; ring busbw = peak x 230/300 on NVLink 3 (8x A100:
 *            230 GB/s of 300), x 370/450 on NVLink 4 and later (8x H100 ring: 370 of 450).
 *            Latency 6 + 2 per step: 34 us for an 8-GPU all-reduce (14 steps; measured 32-35).
 *   SHM      through host memory over PCIe: 28/63 of the PCIe peak (8x RTX 5090 on Gen5 x16,
 *            no P2P: 28 GB/s of 63); 7 + 2.5 per step: 42 us at 8 GPUs (8x RTX 4090, PCIe).
 *   PCIe P2P 75% of the PCIe peak (an assumption: no public figure in the reference); latency
 *            as SHM.
 *   NET/IB   48 GB/s (one NDR400 NIC); 10 + 5 per step (assumed).
 *   NET/Socket 1.2 GB/s (10 GbE at ~95%, assumed); 20 + 20 per step (assumed).
 * PCIe peak per x16 link: Gen3 15.75, Gen4 31.5, Gen5 63 GB/s (scaled by width/16). */
static inline void ndbl_link_price(const struct ndbl_hop *h, double *busbw_gbps, double *lat_base_us,
                                   double *lat_step_us) {
  double lane = h->pcie_gen >= 5 ? 63.0 / 16 : h->pcie_gen == 3 ? 15.75 / 16 : 31.5 / 16;
  double pcie = lane * (h->pcie_width > 0 ? h->pcie_width : 16);
  switch (h->link) {
  case NDBL_LINK_NVLINK:
    *busbw_gbps = h->nvlinks * h->nvlink_gbps * (h->nvlink_gen >= 4 ? 370.0 / 450 : 230.0 / 300);
    *lat_base_us = 6; *lat_step_us = 2;
    return;
  case NDBL_LINK_PCIE_P2P: *busbw_gbps = pcie * 0.75; *lat_base_us = 7; *lat_step_us = 2.5; return;
  case NDBL_LINK_SHM: *busbw_gbps = pcie * 28.0 / 63; *lat_base_us = 7; *lat_step_us = 2.5; return;
  case NDBL_LINK_NET_IB: *busbw_gbps = 48; *lat_base_us = 10; *lat_step_us = 5; return;
  case NDBL_LINK_NET_SOCKET: default: *busbw_gbps = 1.2; *lat_base_us = 20; *lat_step_us = 20; return;
  }
}

/* Ring steps of one operation on n ranks (its latency is base + steps x per step): all-reduce
 * 2(n-1) (reduce-scatter then all-gather), the others n-1, point-to-point 1. */
static inline int ndbl_ring_steps(enum ndbl_rule rule, int n, int p2p) {
  if (p2p) return 1;
  if (n < 2) return 0;
  return rule == NDBL_RULE_ALLREDUCE ? 2 * (n - 1) : n - 1;
}
#endif
