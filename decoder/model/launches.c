/* launches.c — a process's NCCL launches as a compact log (launches.h). A launch is one word,
 * 1 + its shape's index in the top 8 bits and its entry time minus the previous launch's in the
 * low 24; else an escape word 0 and eight more: the time difference (64 bits, two's
 * complement), op, kop, bus bytes and steps (64 bits each as doubles' bits), low word first. */
#include "model/launches.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_WORDS (16u << 10)
#define ESCAPE_WORDS 9
#define DT_BITS 24
struct ncs_launch_block { struct ncs_launch_block *next; uint32_t used; uint32_t w[BLOCK_WORDS]; };

static uint64_t bits_of(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
static double double_of(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }

static int same_shape(const struct ncs_launch *a, const struct ncs_launch *b) {
  return a->op == b->op && a->kop == b->kop && bits_of(a->busbytes) == bits_of(b->busbytes) &&
         bits_of(a->steps) == bits_of(b->steps);
}
/* 1 + the shape index of x (added when new), 0 when the table is full. */
static uint32_t shape_code(struct ncs_launches *l, const struct ncs_launch *x) {
  uint64_t h = (bits_of(x->busbytes) ^ bits_of(x->steps) * 31 ^ (uint64_t)x->op << 40 ^ (uint64_t)(uint32_t)x->kop << 48) *
               0x9e3779b97f4a7c15ull;
  uint32_t i = (uint32_t)(h >> 55) & 511;
  for (;; i = (i + 1) & 511) {
    uint8_t s = l->slot[i];
    if (!s) break;
    if (same_shape(&l->shape[s - 1], x)) return s;
  }
  if (l->nshape == NCS_LAUNCH_SHAPES) return 0;
  l->shape[l->nshape] = *x;
  l->slot[i] = (uint8_t)++l->nshape;
  return l->nshape;
}

/* Room for ESCAPE_WORDS more words at the end of the log; -1 when out of memory. */
static int room(struct ncs_launches *l) {
  if (l->end - l->at >= ESCAPE_WORDS) return 0;
  struct ncs_launch_block *b = l->tail ? l->tail->next : l->head; /* a block kept by a reset */
  if (!b) {
    if (!(b = malloc(sizeof *b))) return -1;
    b->next = NULL;
    if (l->tail) l->tail->next = b; else l->head = b;
  }
  b->used = 0;
  l->tail = b;
  l->at = b->w;
  l->end = b->w + BLOCK_WORDS;
  return 0;
}

int ncs_launches_add(struct ncs_launches *l, const struct ncs_launch *x) {
  if (room(l) != 0) return -1;
  uint64_t d = x->t_first - l->last_t;
  uint32_t s = shape_code(l, x);
  if (s && d < (1u << DT_BITS)) {
    *l->at++ = s << DT_BITS | (uint32_t)d;
  } else {
    uint32_t *w = l->at;
    uint64_t bb = bits_of(x->busbytes), st = bits_of(x->steps);
    w[0] = 0;
    w[1] = (uint32_t)d; w[2] = (uint32_t)(d >> 32);
    w[3] = x->op; w[4] = (uint32_t)x->kop;
    w[5] = (uint32_t)bb; w[6] = (uint32_t)(bb >> 32);
    w[7] = (uint32_t)st; w[8] = (uint32_t)(st >> 32);
    l->at += ESCAPE_WORDS;
  }
  l->tail->used = (uint32_t)(l->at - l->tail->w);
  l->last_t = x->t_first;
  l->n++;
  return 0;
}

void ncs_launches_reset(struct ncs_launches *l) {
  struct ncs_launch_block *head = l->head;
  memset(l, 0, sizeof *l);
  l->head = head; /* tail NULL: room() starts again at head */
}

void ncs_launches_free(struct ncs_launches *l) {
  for (struct ncs_launch_block *b = l->head, *nx; b; b = nx) { nx = b->next; free(b); }
  memset(l, 0, sizeof *l);
}

void ncs_launches_begin(const struct ncs_launches *l, struct ncs_launch_cur *c) {
  *c = (struct ncs_launch_cur){l->head, 0, 0, l->n};
}

int ncs_launches_next(const struct ncs_launches *l, struct ncs_launch_cur *c, struct ncs_launch *x) {
  if (!c->left) return 0;
  if (c->at >= c->b->used) { c->b = c->b->next; c->at = 0; }
  const uint32_t *w = c->b->w + c->at;
  if (w[0]) {
    *x = l->shape[(w[0] >> DT_BITS) - 1];
    c->t += w[0] & ((1u << DT_BITS) - 1);
    c->at++;
  } else {
    c->t += (uint64_t)w[1] | (uint64_t)w[2] << 32;
    x->op = w[3];
    x->kop = (int32_t)w[4];
    x->busbytes = double_of((uint64_t)w[5] | (uint64_t)w[6] << 32);
    x->steps = double_of((uint64_t)w[7] | (uint64_t)w[8] << 32);
    c->at += ESCAPE_WORDS;
  }
  x->t_first = c->t;
  c->left--;
  return 1;
}
