/* exposure.c — exposed communication from kernel activity: the union of the NCCL kernels a
 * process ran, and its part with no other kernel, copy or set of the process beside it, summed
 * as kernels arrive (live metrics, promexport.c; bounded mode's whole-run figures, aggregate.c).
 *
 * Contract: writer thread only; each user owns its own struct ncs_expo (zeroed = empty).
 * Kernel activity arrives late and out of order (CUPTI hands a kernel over when it ends; the
 * kernels collector polls every 100 ms), so kernels wait (at most `cap`) until the user lines
 * up a stretch of time [until, h) it judges complete; kernels that end by h are done with,
 * the others wait with their part before h cut off. A kernel that arrives after its stretch
 * was lined up counts from `until` on only. When `cap` kernels wait, what they cover up to
 * the newest start is lined up early. Memory: cap kernels and 2 x cap pieces, allocated at the
 * first kernel; none without one. No memory: kernels are not counted (the sums stay as they
 * were). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ncs_expo_piece { uint64_t s, e; };

static int piece_cmp(const void *a, const void *b) {
  const struct ncs_expo_piece *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}
/* Sorts pieces by start and merges them in place into their union; returns how many remain. */
static unsigned piece_union(struct ncs_expo_piece *v, unsigned n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, piece_cmp);
  unsigned m = 0;
  for (unsigned i = 1; i < n; i++) {
    if (v[i].s <= v[m].e) { if (v[i].e > v[m].e) v[m].e = v[i].e; }
    else v[++m] = v[i];
  }
  return m + 1;
}

void ncs_expo_line_up(struct ncs_expo *x, uint64_t h) {
  if (h <= x->until || !x->scratch) return;
  struct ncs_expo_piece *comm = x->scratch, *comp = x->scratch + x->cap;
  unsigned nc = 0, nq = 0, keep = 0;
  for (unsigned i = 0; i < x->n; i++) {
    struct ncs_kernel k = x->pend[i];
    uint64_t ke = k.start + k.duration;
    uint64_t s = k.start > x->until ? k.start : x->until, e = ke < h ? ke : h;
    if (e > s) {
      if (k.kclass == NCS_KCLASS_NCCL) comm[nc++] = (struct ncs_expo_piece){s, e};
      else comp[nq++] = (struct ncs_expo_piece){s, e};
    }
    if (ke > h) { /* waits on, from h */
      k.duration = ke - (k.start > h ? k.start : h);
      if (k.start < h) k.start = h;
      x->pend[keep++] = k;
    }
  }
  x->n = keep;
  nc = piece_union(comm, nc);
  nq = piece_union(comp, nq);
  uint64_t total = 0, hidden = 0;
  for (unsigned i = 0, j = 0; i < nc; i++) {
    total += comm[i].e - comm[i].s;
    while (j < nq && comp[j].e <= comm[i].s) j++;
    for (unsigned k = j; k < nq && comp[k].s < comm[i].e; k++) {
      uint64_t a = comp[k].s > comm[i].s ? comp[k].s : comm[i].s, b = comp[k].e < comm[i].e ? comp[k].e : comm[i].e;
      if (b > a) hidden += b - a;
    }
  }
  x->comm_ns += total;
  x->exposed_ns += total - hidden;
  x->until = h;
}

void ncs_expo_kernel(struct ncs_expo *x, const struct ncs_kernel *k, unsigned cap) {
  if (!x->pend) {
    if (x->nomem || !cap) return;
    x->pend = malloc(cap * sizeof *x->pend);
    x->scratch = malloc(2 * (size_t)cap * sizeof *x->scratch);
    if (!x->pend || !x->scratch) {
      free(x->pend);
      free(x->scratch);
      x->pend = NULL;
      x->scratch = NULL;
      x->nomem = 1;
      return;
    }
    x->cap = cap;
  }
  struct ncs_kernel c = *k;
  uint64_t e = c.start + c.duration;
  if (c.start < x->until) c.start = x->until; /* late: its part before the horizon is not lined up */
  if (e <= c.start) return;
  c.duration = e - c.start;
  x->kernels++;
  if (x->n == x->cap) { /* full: line up to the newest start now */
    uint64_t h = 0;
    for (unsigned i = 0; i < x->n; i++) if (x->pend[i].start > h) h = x->pend[i].start;
    ncs_expo_line_up(x, h);
    if (c.start < x->until) c.start = x->until;
    if (e <= c.start || x->n == x->cap) return;
    c.duration = e - c.start;
  }
  x->pend[x->n++] = c;
}

void ncs_expo_free(struct ncs_expo *x) {
  free(x->pend);
  free(x->scratch);
  memset(x, 0, sizeof *x);
}
