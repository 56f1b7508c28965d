/* linkref.c — the α-β reference of expected bus bandwidth (linkref.h). Every figure is
 * docs/REFERENCE-FIGURES.md's, named there "Expected bus bandwidth". */
#include "model/linkref.h"

#include <stdio.h>
#include <string.h>

#include "io/nccllog.h"

/* α per step, us: the 8-GPU small all-reduce latencies over 2(n-1) = 14 ring steps */
#define ALPHA_NVLINK_US (33.7 / 14)   /* 8x A100 NVSwitch, 33.7 us */
#define ALPHA_PCIE_US (42.0 / 14)     /* 8x RTX 4090 over PCIe, 42 us */
#define ALPHA_NET_US 8.0              /* assumed: no public figure in the reference set */
/* β: the measured large-message busbw over the link's peak */
#define EFF_NVLINK3 (230.0 / 300.0)   /* DGX A100 */
#define EFF_NVLINK4 (370.0 / 450.0)   /* DGX H100, ring; also assumed for NVLink 5 and bridges */
#define EFF_NVLS (475.0 / 450.0)      /* DGX H100, NVLS: above the line rate */
#define EFF_PCIE (28.0 / 63.0)        /* 8x RTX 5090, PCIe Gen5 x16 only */
#define NET_PEAK_GBPS 50.0            /* one NDR 400 Gb/s NIC */
#define EFF_NET (48.0 / 50.0)

/* NVLink generation and per-link rate (GB/s per direction) from the GPU's name. */
static int nvlink_gen(const char *name, double *per_link) {
  if (strstr(name, "B200") || strstr(name, "B100") || strstr(name, "GB200")) { *per_link = 50.0; return 5; }
  if (strstr(name, "3090") || strstr(name, "A6000") || strstr(name, "A40")) { *per_link = 14.0625; return 0; } /* GA102 bridge */
  if (strstr(name, "A100") || strstr(name, "A800")) { *per_link = 25.0; return 3; }
  *per_link = 25.0;
  return 4; /* H100, H800, H200, H20 and unknown names */
}

/* The slowest NVLinked pair of t: its link count and the GPU name's generation; 0 when none. */
static int slowest_nvlink(const struct ncs_topo *t, double *peak, int *gen, int *links) {
  int found = 0;
  for (int a = 0; a < t->ngpus; a++)
    for (int b = a + 1; b < t->ngpus; b++) {
      if (!t->nv[a][b]) continue;
      double per;
      int g = nvlink_gen(t->have_gpu[a] ? t->gpu[a].name : "", &per);
      double p = per * t->nv[a][b];
      if (!found || p < *peak) { *peak = p; *gen = g; *links = t->nv[a][b]; found = 1; }
    }
  return found;
}

/* The slowest GPU's PCIe link of t (current generation and width): its peak; 0 when unknown. */
static double slowest_pcie(const struct ncs_topo *t, int *gen, int *width) {
  double best = 0;
  for (int i = 0; i < t->ngpus; i++) {
    if (!t->have_gpu[i] || !t->gpu[i].pcie_gen || !t->gpu[i].pcie_width) continue;
    unsigned g = t->gpu[i].pcie_gen;
    double lane = g >= 3 ? 0.984375 * (double)(1u << (g - 3)) : 0.5; /* GB/s per lane: Gen3 x16 = 15.75 */
    double v = lane * t->gpu[i].pcie_width;
    if (best == 0 || v < best) { best = v; *gen = (int)g; *width = (int)t->gpu[i].pcie_width; }
  }
  return best;
}

static void set(struct ncs_link *o, int tclass, double peak, double eff, double alpha) {
  o->tclass = tclass;
  o->peak_gbps = peak;
  o->beta_gbps = peak * eff;
  o->alpha_us = alpha;
}

int ncs_linkref_of(int tclass, const struct ncs_topo *t, struct ncs_link *out) {
  memset(out, 0, sizeof *out);
  double peak = 0;
  int gen = 0, links = 0, width = 0;
  switch (tclass) {
  case NCS_TC_P2P:
  case NCS_TC_NVLS:
    if (t && slowest_nvlink(t, &peak, &gen, &links)) {
      double eff = tclass == NCS_TC_NVLS ? EFF_NVLS : gen == 3 ? EFF_NVLINK3 : EFF_NVLINK4;
      set(out, tclass, peak, eff, ALPHA_NVLINK_US);
      if (gen) snprintf(out->why, sizeof out->why, "%s over NVLink %d x%d", tclass == NCS_TC_NVLS ? "NVLS" : "P2P", gen, links);
      else snprintf(out->why, sizeof out->why, "P2P over an NVLink bridge x%d", links);
      break;
    }
    if (tclass == NCS_TC_P2P && t && (peak = slowest_pcie(t, &gen, &width)) > 0) {
      set(out, tclass, peak, EFF_PCIE, ALPHA_PCIE_US);
      snprintf(out->why, sizeof out->why, "P2P over PCIe Gen%d x%d", gen, width);
      break;
    }
    set(out, tclass, 450, tclass == NCS_TC_NVLS ? EFF_NVLS : EFF_NVLINK4, ALPHA_NVLINK_US);
    snprintf(out->why, sizeof out->why, "%s, NVLink 4 x18 assumed (no NVLink topology recorded)", tclass == NCS_TC_NVLS ? "NVLS" : "P2P");
    break;
  case NCS_TC_SHM:
    if (t && (peak = slowest_pcie(t, &gen, &width)) > 0) {
      set(out, tclass, peak, EFF_PCIE, ALPHA_PCIE_US);
      snprintf(out->why, sizeof out->why, "SHM through host memory over PCIe Gen%d x%d", gen, width);
    } else {
      set(out, tclass, 31.5, EFF_PCIE, ALPHA_PCIE_US);
      snprintf(out->why, sizeof out->why, "SHM, PCIe Gen4 x16 assumed (no PCIe link recorded)");
    }
    break;
  case NCS_TC_NET:
  case NCS_TC_COLLNET:
    set(out, tclass, NET_PEAK_GBPS, EFF_NET, ALPHA_NET_US);
    snprintf(out->why, sizeof out->why, "NET, one 400 Gb/s NIC assumed (the network's speed is not recorded)");
    break;
  default:
    return -1;
  }
  size_t k = strlen(out->why);
  snprintf(out->why + k, sizeof out->why - k, ": peak %.1f GB/s, large messages %.1f GB/s busbw, %.2g us a step",
           out->peak_gbps, out->beta_gbps, out->alpha_us);
  return 0;
}

const struct ncs_link *ncs_linkref_slower(const struct ncs_link *a, const struct ncs_link *b) {
  if (!a || !a->tclass) return b;
  if (!b || !b->tclass) return a;
  return b->beta_gbps < a->beta_gbps ? b : a;
}

double ncs_linkref_busbw(const struct ncs_link *l, double busbytes, double steps) {
  if (!l || !l->tclass || l->beta_gbps <= 0 || busbytes <= 0) return 0;
  double t_ns = (steps > 0 ? steps : 0) * l->alpha_us * 1e3 + busbytes / l->beta_gbps; /* bytes / (GB/s) = ns */
  return t_ns > 0 ? busbytes / t_ns : 0;
}
