/* launches.c — a process's NCCL launches as a compact log (launches.h): an entry of a word log
 * (model/wordlog.h) a launch, its code 1 + its shape's index; a launch with no code (the table
 * full) or long after the previous one escapes with six words: op, kop, bus bytes and steps
 * (64 bits each as doubles' bits), low word first. */
#include "model/launches.h"

#include <stdlib.h>
#include <string.h>

#define ESC_WORDS 6

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

int ncs_launches_add_slow(struct ncs_launches *l, const struct ncs_launch *x) {
  /* mostly the shape of the launch before (l->last), one word in room there is */
  uint32_t s = l->last && same_shape(&l->shape[l->last - 1], x) ? l->last : shape_code(l, x);
  uint64_t d = x->t_first - l->log.last_t;
  l->last = s;
  if (ncs_wlog_fits(s, d) && l->log.at < l->log.end) {
    *l->log.at++ = ncs_wlog_word(s, d);
    l->log.tail->used = (uint32_t)(l->log.at - l->log.tail->w);
    l->log.last_t = x->t_first;
    l->log.n++;
    return 0;
  }
  uint32_t esc[ESC_WORDS];
  if (!ncs_wlog_fits(s, x->t_first - l->log.last_t)) {
    uint64_t bb = bits_of(x->busbytes), st = bits_of(x->steps);
    esc[0] = x->op; esc[1] = (uint32_t)x->kop;
    esc[2] = (uint32_t)bb; esc[3] = (uint32_t)(bb >> 32);
    esc[4] = (uint32_t)st; esc[5] = (uint32_t)(st >> 32);
  }
  return ncs_wlog_put(&l->log, x->t_first, s, esc, ESC_WORDS);
}

void ncs_launches_reset(struct ncs_launches *l) {
  struct ncs_wlog log = l->log;
  memset(l, 0, sizeof *l);
  ncs_wlog_reset(&log);
  l->log = log;
}

void ncs_launches_free(struct ncs_launches *l) {
  ncs_wlog_free(&l->log);
  memset(l, 0, sizeof *l);
}

void ncs_launches_begin(const struct ncs_launches *l, struct ncs_launch_cur *c) {
  ncs_wlog_begin(&l->log, &c->c);
  c->left = l->log.n;
}

const struct ncs_launch *ncs_launches_next_shape_slow(const struct ncs_launches *l, struct ncs_launch_cur *c, uint64_t *t,
                                                      uint32_t *code, struct ncs_launch *x) {
  if (!c->left) return NULL;
  uint32_t esc[ESC_WORDS];
  uint32_t s = ncs_wlog_next(&c->c, ESC_WORDS, t, esc);
  c->left--;
  *code = s;
  if (s) return &l->shape[s - 1];
  x->op = esc[0];
  x->kop = (int32_t)esc[1];
  x->busbytes = double_of((uint64_t)esc[2] | (uint64_t)esc[3] << 32);
  x->steps = double_of((uint64_t)esc[4] | (uint64_t)esc[5] << 32);
  x->t_first = *t;
  return x;
}
