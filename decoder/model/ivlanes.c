/* ivlanes.c — per-thread commit limits of a streaming union (ivlanes.h). */
#include "model/ivlanes.h"

#include <stdlib.h>

/* Notes that the current lane had an interval in the chunk being read, when it had one since
 * it became current or since the last chunk end. */
static void note_cur(struct ncs_lanes *l) {
  struct ncs_lane *c = ncs_lane_at(l, l->cur);
  if (c->last != l->mark) c->seen = l->chunks + 1;
  l->mark = c->last;
}

void ncs_lanes_switch(struct ncs_lanes *l, uint32_t thread) {
  if (l->n) note_cur(l);
  uint32_t i = 0;
  while (i < l->n && ncs_lane_at(l, i)->thread != thread) i++;
  if (i == l->n) {
    if (l->n == NCS_LANES_IN && !l->more) l->more = malloc((NCS_LANES - NCS_LANES_IN) * sizeof *l->more);
    if (l->n < NCS_LANES && (l->n < NCS_LANES_IN || l->more)) {
      *ncs_lane_at(l, l->n++) = (struct ncs_lane){thread, 0, 0};
    } else {
      i = NCS_LANES;
      ncs_lane_at(l, i)->thread = thread;
    }
  }
  l->cur = i;
  struct ncs_lane *c = ncs_lane_at(l, i);
  c->seen = l->chunks + 1; /* an interval of it is being added */
  l->mark = c->last;
}

void ncs_lanes_free(struct ncs_lanes *l) {
  if (!l->more) return;
  if (l->cur >= NCS_LANES_IN && l->cur != NCS_LANES) { /* the current lane goes: the untracked one takes its place */
    l->in[NCS_LANES_IN] = l->more[l->cur - NCS_LANES_IN];
    l->cur = NCS_LANES;
  }
  free(l->more);
  l->more = NULL;
  if (l->n > NCS_LANES_IN) l->n = NCS_LANES_IN;
}

uint64_t ncs_lanes_cut(const struct ncs_lanes *l) {
  if (l->by_chunk && !l->chunks && !l->held_end) return 0;
  uint64_t cut = UINT64_MAX;
  for (uint32_t i = 0; i < l->n; i++) {
    const struct ncs_lane *x = ncs_lane_at((struct ncs_lanes *)l, i);
    int live = (i == l->cur && x->last != l->mark) || (x->seen && (!l->by_chunk || x->seen >= l->chunks));
    if (live && x->last < cut) cut = x->last;
  }
  return cut;
}

void ncs_lanes_hold_end(struct ncs_lanes *l) { l->held_end = 1; }

void ncs_lanes_chunk(struct ncs_lanes *l) {
  if (l->n && l->cur < NCS_LANES) note_cur(l);
  l->chunks++;
}

void ncs_lanes_forced(struct ncs_lanes *l, uint64_t fr) {
  for (uint32_t i = 0; i < l->n; i++)
    if (ncs_lane_at(l, i)->last < fr && i != l->cur) ncs_lane_at(l, i)->seen = 0;
}
