/* test_linkref.c — the α-β reference of expected bus bandwidth (decoder/model/linkref.c) against
 * the public figures it is built from (docs/REFERENCE-FIGURES.md; the constants below are those
 * figures, written here, not read from the code): a healthy large all-reduce reaches ~370 GB/s
 * busbw over 8x H100 NV18 and ~230 over 8x A100 NV12; an 8-GPU small all-reduce takes ~33.7 us
 * over NVLink and ~42 us over PCIe; SHM and PCIe P2P are priced on the PCIe generation and width
 * the topology records (Gen5 x16: 63 GB/s peak, not Gen4's 31.5); NET on one 400 Gb/s NIC
 * (48 GB/s). A latency-bound 16 KiB all-reduce on 4 ranks is judged against what that size can
 * reach, not against the large-message figure; a ring is bounded by its slower link. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "io/nccllog.h"
#include "model/linkref.h"
#include "model/rules.h"

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

static void box(struct ncs_topo *t, const char *name, int n, int nv, unsigned gen, unsigned width) {
  ncs_topo_init(t, "h");
  for (int i = 0; i < n; i++) {
    struct ncs_topo_gpu g;
    memset(&g, 0, sizeof g);
    g.index = (uint32_t)i;
    snprintf(g.name, sizeof g.name, "%s", name);
    g.pcie_gen = gen;
    g.pcie_width = width;
    g.nvlinks = (uint32_t)(nv * (n - 1));
    ncs_topo_add_gpu(t, &g);
  }
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++) {
      struct ncs_topo_link l = {(uint32_t)a, (uint32_t)b, (uint32_t)nv, NCS_REL_NODE, 0, 0};
      ncs_topo_add_link(t, &l);
    }
}

/* bus bytes and steps of k all-reduces of S bytes on n ranks */
static double bus_ar(double S, int n, int k) { return k * S * 2.0 * (n - 1) / n; }

int main(void) {
  struct ncs_topo t;
  struct ncs_link l;
  const double big = 1024.0 * 1024 * 1024; /* 1 GiB: the latency part is negligible */

  box(&t, "NVIDIA H100 80GB HBM3", 8, 18, 5, 16);
  CHECK(ncs_linkref_of(NCS_TC_P2P, &t, &l) == 0 && l.peak_gbps == 450, "H100 NV18: P2P over NVLink 4 x18, peak 450 GB/s (%g)", l.peak_gbps);
  double x = ncs_linkref_busbw(&l, bus_ar(big, 8, 1), ncs_rule_steps(NCS_OP_AllReduce, 8));
  CHECK(near(x, 370, 0.01), "8x H100 NV18, 1 GiB all-reduce: expected busbw ~370 GB/s (%.1f)", x);
  /* 8-GPU small all-reduce (8 bytes): its expected time is the measured small-message latency */
  double bb = bus_ar(8, 8, 1), t_us = bb / ncs_linkref_busbw(&l, bb, ncs_rule_steps(NCS_OP_AllReduce, 8)) / 1e3;
  CHECK(near(t_us, 33.7, 0.01), "8x NVLink, 8 B all-reduce: expected time ~33.7 us (%.2f)", t_us);
  /* 16 KiB all-reduce on 4 ranks: 6 ring steps of 33.7/14 us, plus 24 KiB of bus bytes at 370 GB/s */
  bb = bus_ar(16384, 4, 1);
  double want = bb / (6 * 33.7 / 14 * 1e3 + bb / 370.0);
  x = ncs_linkref_busbw(&l, bb, ncs_rule_steps(NCS_OP_AllReduce, 4));
  CHECK(near(x, want, 0.01) && x < 0.01 * 370, "16 KiB all-reduce on 4 ranks: judged against what its size reaches, %.2f GB/s (want %.2f), not ~370", x, want);
  /* NVLS exceeds the line rate */
  CHECK(ncs_linkref_of(NCS_TC_NVLS, &t, &l) == 0 && near(l.beta_gbps, 475, 0.01), "H100 NVLS: large messages ~475 GB/s (%.1f)", l.beta_gbps);
  /* SHM on this box: PCIe Gen5 x16 as recorded */
  CHECK(ncs_linkref_of(NCS_TC_SHM, &t, &l) == 0 && near(l.peak_gbps, 63, 0.001) && strstr(l.why, "Gen5 x16"),
        "SHM on a Gen5 x16 box: peak 63 GB/s (%g), named Gen5 x16", l.peak_gbps);
  struct ncs_link shm = l;

  box(&t, "NVIDIA A100-SXM4-80GB", 8, 12, 4, 16);
  ncs_linkref_of(NCS_TC_P2P, &t, &l);
  x = ncs_linkref_busbw(&l, bus_ar(big, 8, 1), ncs_rule_steps(NCS_OP_AllReduce, 8));
  CHECK(l.peak_gbps == 300 && near(x, 230, 0.01), "8x A100 NV12: peak 300, 1 GiB all-reduce ~230 GB/s (%.1f)", x);
  ncs_linkref_of(NCS_TC_SHM, &t, &l);
  CHECK(near(l.peak_gbps, 31.5, 0.001), "SHM on a Gen4 x16 box: peak 31.5 GB/s (%g)", l.peak_gbps);

  /* PCIe only: 8x RTX 5090 (Gen5 x16, no NVLink): ~28 GB/s large, ~42 us small */
  box(&t, "NVIDIA GeForce RTX 5090", 8, 0, 5, 16);
  ncs_linkref_of(NCS_TC_P2P, &t, &l);
  x = ncs_linkref_busbw(&l, bus_ar(big, 8, 1), ncs_rule_steps(NCS_OP_AllReduce, 8));
  bb = bus_ar(8, 8, 1);
  t_us = bb / ncs_linkref_busbw(&l, bb, ncs_rule_steps(NCS_OP_AllReduce, 8)) / 1e3;
  CHECK(near(x, 28, 0.01) && near(t_us, 42, 0.01), "8x PCIe Gen5 x16 P2P: ~28 GB/s large (%.1f), ~42 us small (%.1f)", x, t_us);

  /* NET: one NDR 400 Gb/s NIC assumed */
  CHECK(ncs_linkref_of(NCS_TC_NET, NULL, &l) == 0 && near(l.beta_gbps, 48, 0.01) && strstr(l.why, "assumed"),
        "NET: ~48 GB/s large messages, the NIC speed said to be assumed (%.1f)", l.beta_gbps);
  CHECK(ncs_linkref_slower(&shm, &l) == &shm, "a ring through SHM (Gen5: 28 GB/s) and NET (48): SHM bounds it");
  /* no topology: assumed, and said */
  CHECK(ncs_linkref_of(NCS_TC_SHM, NULL, &l) == 0 && near(l.peak_gbps, 31.5, 0.001) && strstr(l.why, "assumed"),
        "SHM without a recorded topology: PCIe Gen4 x16 assumed, and said");
  CHECK(ncs_linkref_busbw(&l, 0, 0) == 0 && ncs_linkref_of(NCS_TC_UNKNOWN, NULL, &l) == -1, "no bytes or no link: no expectation");
  /* steps of a ring per operation */
  CHECK(ncs_rule_steps(NCS_OP_AllReduce, 8) == 14 && ncs_rule_steps(NCS_OP_AllGather, 8) == 7 &&
        ncs_rule_steps(NCS_OP_Broadcast, 8) == 7 && ncs_rule_steps(NCS_OP_Send, 8) == 1 && ncs_rule_steps(NCS_OP_CommInitRank, 8) == 0,
        "ring steps: all-reduce 2(n-1), all-gather and broadcast n-1, send 1, no data 0");
  return check_done();
}
