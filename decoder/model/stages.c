/* stages.c — the table of what one analysis computes once and others read (stages.h). */
#include "model/stages.h"

#include <stdlib.h>
#include <string.h>

#include "model/replay.h"

int ncs_stages_init(struct ncs_stages *s, int nfiles) {
  memset(s, 0, sizeof *s);
  size_t n = nfiles > 0 ? (size_t)nfiles : 1;
  s->starts = calloc(n, sizeof *s->starts);
  s->fig = calloc(n, sizeof *s->fig);
  s->replay = calloc(n, sizeof *s->replay);
  s->kern = calloc(n, sizeof *s->kern);
  s->kern_asked = calloc(n, 1);
  if (!s->starts || !s->fig || !s->replay || !s->kern || !s->kern_asked) {
    free(s->starts); free(s->fig); free(s->replay); free(s->kern); free(s->kern_asked);
    memset(s, 0, sizeof *s);
    return -1;
  }
  s->n = nfiles;
  for (int i = 0; i < nfiles; i++) s->fig[i].state = -1;
  return 0;
}

/* The starts log: a start is one word, its difference from the previous start (under
 * UINT32_MAX); else the escape word UINT32_MAX and the start itself, low word first. */

int ncs_starts_add_slow(struct ncs_step_starts *s, uint64_t t) {
  if (s->end - s->at < 3) {
    struct ncs_starts_block *b = malloc(sizeof *b);
    if (!b) return -1;
    b->next = NULL;
    b->used = 0;
    if (s->tail) s->tail->next = b; else s->head = b;
    s->tail = b;
    s->at = b->w;
    s->end = b->w + NCS_STARTS_BLOCK;
  }
  uint64_t d = t - s->last;
  if (s->n && t >= s->last && d < UINT32_MAX) *s->at++ = (uint32_t)d;
  else { s->at[0] = UINT32_MAX; s->at[1] = (uint32_t)t; s->at[2] = (uint32_t)(t >> 32); s->at += 3; }
  s->tail->used = (uint32_t)(s->at - s->tail->w);
  s->last = t;
  s->n++;
  return 0;
}


void ncs_starts_begin(const struct ncs_step_starts *s, struct ncs_starts_cur *c) {
  *c = (struct ncs_starts_cur){s->head, 0, 0, 0, s->n};
}

int ncs_starts_next_slow(struct ncs_starts_cur *c, uint64_t *t) {
  while (c->b && c->i >= c->b->used) c->b = c->b->next, c->i = 0;
  if (!c->b || c->k >= c->n) return 0;
  const uint32_t *w = c->b->w + c->i;
  if (*w == UINT32_MAX) { c->x = (uint64_t)w[1] | (uint64_t)w[2] << 32; c->i += 3; }
  else { c->x += *w; c->i++; }
  c->k++;
  *t = c->x;
  return 1;
}

void ncs_starts_copy(const struct ncs_step_starts *s, uint64_t *t) {
  struct ncs_starts_cur c;
  ncs_starts_begin(s, &c);
  while (ncs_starts_next(&c, t)) t++;
}

void ncs_starts_free(struct ncs_step_starts *s) {
  for (struct ncs_starts_block *b = s->head, *nx; b; b = nx) { nx = b->next; free(b); }
  memset(s, 0, sizeof *s);
}

void ncs_stages_free(struct ncs_stages *s) {
  for (int i = 0; s->starts && i < s->n; i++) ncs_starts_free(&s->starts[i]);
  for (int i = 0; s->replay && i < s->n; i++) ncs_replay_free(s->replay[i]);
  for (int i = 0; s->kern && i < s->n; i++) ncs_kstore_free(&s->kern[i]);
  free(s->kern);
  free(s->kern_asked);
  free(s->starts);
  free(s->replay);
  free(s->fig);
  memset(s, 0, sizeof *s);
}

void ncs_stages_put_starts(struct ncs_stages *s, int file, struct ncs_step_starts *t) {
  if (!s || file < 0 || file >= s->n) { ncs_starts_free(t); return; }
  ncs_starts_free(&s->starts[file]);
  s->starts[file] = *t;
  memset(t, 0, sizeof *t);
}

size_t ncs_stages_starts(const struct ncs_stages *s, int file, const struct ncs_step_starts **t) {
  *t = NULL;
  if (!s || file < 0 || file >= s->n || !s->starts[file].n) return 0;
  *t = &s->starts[file];
  return s->starts[file].n;
}

void ncs_stages_put_replay(struct ncs_stages *s, int file, struct ncs_replay *r) {
  if (!s || !s->replay || file < 0 || file >= s->n) { ncs_replay_free(r); return; }
  ncs_replay_free(s->replay[file]);
  s->replay[file] = r;
}

const struct ncs_replay *ncs_stages_replay(const struct ncs_stages *s, int file) {
  return s && s->replay && file >= 0 && file < s->n ? s->replay[file] : NULL;
}

void ncs_stages_drop_file(struct ncs_stages *s, int file) {
  if (!s || file < 0 || file >= s->n) return;
  ncs_starts_free(&s->starts[file]);
  ncs_replay_free(s->replay[file]);
  s->replay[file] = NULL;
  ncs_kstore_free(&s->kern[file]);
  s->kern_asked[file] = 0;
}

struct ncs_kstore *ncs_stages_kernels(struct ncs_stages *s, int file, int *fill) {
  *fill = 0;
  if (!s || !s->kern || file < 0 || file >= s->n) return NULL;
  *fill = !s->kern_asked[file];
  s->kern_asked[file] = 1;
  return &s->kern[file];
}

const struct ncs_kact_fig *ncs_stages_fig(const struct ncs_stages *s, int file) {
  return s && s->fig_on && file >= 0 && file < s->n ? &s->fig[file] : NULL;
}
