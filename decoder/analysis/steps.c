/* steps.c — a few steps of every rank for the html page's picture (steps.h). */
#include "analysis/steps.h"

#include <stdlib.h>

int ncs_steps_init(struct ncs_steps *s, int nfiles) {
  s->nfiles = nfiles;
  s->f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *s->f);
  return s->f ? 0 : -1;
}

void ncs_steps_call(struct ncs_steps *s, int file, const struct ncs_jev *e) {
  if (!s->f || file < 0 || file >= s->nfiles || !e->bytes || e->end < e->start) return;
  struct ncs_step_file *sf = &s->f[file];
  for (int k = sf->full; k < NCS_STEP_CKPT && ncs_step_ckpt(k) <= e->start; k++) {
    int *n = &sf->n[k];
    if (*n >= NCS_STEP_CALLS) continue;
    if (!sf->sp[k] && !(sf->sp[k] = malloc(NCS_STEP_CALLS * sizeof *sf->sp[k]))) continue;
    int64_t d = e->end - e->start;
    sf->sp[k][(*n)++] = (struct ncs_step_span){e->start, d > UINT32_MAX ? UINT32_MAX : (uint32_t)d, e->c->op};
  }
  while (sf->full < NCS_STEP_CKPT && sf->n[sf->full] >= NCS_STEP_CALLS) sf->full++;
}

void ncs_steps_free(struct ncs_steps *s) {
  for (int i = 0; s->f && i < s->nfiles; i++)
    for (int k = 0; k < NCS_STEP_CKPT; k++) free(s->f[i].sp[k]);
  free(s->f);
  s->f = NULL;
}
