/* stepdiff.c — the parts of a step-time change (stepdiff.h). */
#include "analysis/stepdiff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_PART 0.001 /* of the base step */

static void put(struct ncs_stepdiff *o, const char *id, const char *op, int rank, double b, double n) {
  if (o->n >= NCS_STEPDIFF_MAX) return;
  o->p[o->n++] = (struct ncs_stepdiff_part){id, op, rank, b, n, n - b, 0, 0};
}

static int cmp_part(const void *a, const void *b) {
  double x = fabs(((const struct ncs_stepdiff_part *)a)->change_s), y = fabs(((const struct ncs_stepdiff_part *)b)->change_s);
  return x > y ? -1 : x < y;
}

void ncs_stepdiff(const struct ncs_whatif *B, const struct ncs_whatif *N, struct ncs_stepdiff *o) {
  memset(o, 0, sizeof *o);
  if (!B->have || !N->have) {
    const struct ncs_whatif *w = !B->have ? B : N;
    snprintf(o->why_not, sizeof o->why_not, "%s run: %s", !B->have ? "base" : "new",
             w->why_not[0] ? w->why_not : "no steps on the GPU");
    return;
  }
  o->have = 1;
  o->base_s = B->step_s;
  o->new_s = N->step_s;
  o->change_s = N->step_s - B->step_s;
  const struct ncs_whatif_split *b = &B->split, *n = &N->split;
  put(o, "compute", NULL, -1, b->compute, n->compute);
  double hb = 0, hn = 0;
  for (int k = 0; k < NCS_WHATIF_KOPS; k++) {
    if (!n->kop[k]) continue;
    put(o, "transfer", n->kop[k], -1, b->transfer_all[k], n->transfer_all[k]);
    o->p[o->n - 1].gbps_base = b->busbw_gbps[k];
    o->p[o->n - 1].gbps_new = n->busbw_gbps[k];
    hb += b->transfer_all[k] - b->transfer[k];
    hn += n->transfer_all[k] - n->transfer[k];
  }
  /* what was hidden counts against the step: a part of -hidden */
  put(o, "overlap", NULL, -1, -hb, -hn);
  put(o, "waiting", NULL, n->wait_rank, b->wait, n->wait);
  put(o, "idle", NULL, -1, b->idle, n->idle);
  /* small parts and the medians' rest: the remainder */
  double listed = 0;
  int m = 0;
  for (int i = 0; i < o->n; i++) {
    if (fabs(o->p[i].change_s) < MIN_PART * o->base_s) continue;
    o->p[m++] = o->p[i];
    listed += o->p[i].change_s;
  }
  o->n = m;
  qsort(o->p, (size_t)o->n, sizeof *o->p, cmp_part);
  double rb = 0, rn = 0; /* the remainder's own base and new: the step minus the listed parts */
  rb = o->base_s, rn = o->new_s;
  for (int i = 0; i < o->n; i++) { rb -= o->p[i].base_s; rn -= o->p[i].new_s; }
  put(o, "remainder", NULL, -1, rb, rn);
  o->p[o->n - 1].change_s = o->change_s - listed; /* exactly what closes the sum */
}
