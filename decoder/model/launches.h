/* launches.h — the NCCL launches of one process, kept in the order they were made as a compact
 * log: what `whatif` pairs with NCCL kernels once the file is read (analysis/whatif.c).
 *
 * Contract: a launch is a call, or a group's calls of one kernel operation: its first call's
 * entry time, its enum ncs_op and kernel-operation index, its bus bytes and algorithm steps.
 * ncs_launches_add appends one (a writer in a hot loop may put one-word entries of the last
 * shape, l->last, itself: model/wordlog.h); ncs_launches_next_shape reads them back in order,
 * from a cursor, each as its shape's entry and code (ncs_launches_next: as a copy).
 * Memory: 4 bytes a launch while launches are under 16.7 ms apart (in entry order) and take
 * fewer than 256 distinct (op, kop, bus bytes, steps); 36 bytes otherwise (model/wordlog.h,
 * the encoding model/kact.c's call logs use too). Not thread-safe; one log per file being read. */
#ifndef NCS_LAUNCHES_H
#define NCS_LAUNCHES_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "model/wordlog.h"

struct ncs_launch { uint64_t t_first; unsigned op; int kop; double busbytes, steps; };

#define NCS_LAUNCH_SHAPES 255
struct ncs_launches {
  struct ncs_wlog log;                    /* one entry a launch (model/wordlog.h) */
  struct ncs_launch shape[NCS_LAUNCH_SHAPES]; /* (t_first unused) */
  uint8_t slot[512];                      /* hash slots: shape index + 1, 0 empty */
  uint32_t nshape;
  uint32_t last;                          /* the code of the launch added last, 0 none */
};
struct ncs_launch_cur { struct ncs_wlog_cur c; uint64_t left; };

/* 0, or -1 when out of memory (the launch is not kept). l starts zeroed. Inline: a launch of the
 * shape added last, one word in room there is (a call each, in report's hot loop); the rest in
 * ncs_launches_add_slow. */
int ncs_launches_add_slow(struct ncs_launches *l, const struct ncs_launch *x);
static inline int ncs_launches_add(struct ncs_launches *l, const struct ncs_launch *x) {
  if (l->last && l->log.at < l->log.end) {
    const struct ncs_launch *s = &l->shape[l->last - 1];
    uint64_t d = x->t_first - l->log.last_t, sb, xb, ss, xs;
    memcpy(&sb, &s->busbytes, sizeof sb); memcpy(&xb, &x->busbytes, sizeof xb); /* (the bits: launches.c's same_shape) */
    memcpy(&ss, &s->steps, sizeof ss); memcpy(&xs, &x->steps, sizeof xs);
    if (s->op == x->op && s->kop == x->kop && sb == xb && ss == xs && ncs_wlog_fits(l->last, d)) {
      *l->log.at++ = ncs_wlog_word(l->last, d);
      l->log.tail->used = (uint32_t)(l->log.at - l->log.tail->w);
      l->log.last_t = x->t_first;
      l->log.n++;
      return 0;
    }
  }
  return ncs_launches_add_slow(l, x);
}
void ncs_launches_free(struct ncs_launches *l); /* and zeroes it */
/* Empties l and keeps its blocks, for the launches of another file (no new pages). */
void ncs_launches_reset(struct ncs_launches *l);
/* A cursor at the first launch; then ncs_launches_next_shape for each: the next launch's shape
 * (op, kop, bus bytes, steps; its t_first not meant) and *t its time, *code its shape's code
 * (1 + its index in l->shape: launches of one code have one shape; 0: a launch written out, read
 * into *scratch, whose shape the result then points at), or NULL past the last. */
void ncs_launches_begin(const struct ncs_launches *l, struct ncs_launch_cur *c);
const struct ncs_launch *ncs_launches_next_shape_slow(const struct ncs_launches *l, struct ncs_launch_cur *c, uint64_t *t,
                                                      uint32_t *code, struct ncs_launch *scratch);
static inline const struct ncs_launch *ncs_launches_next_shape(const struct ncs_launches *l, struct ncs_launch_cur *c, uint64_t *t,
                                                               uint32_t *code, struct ncs_launch *scratch) {
  const struct ncs_wlog_block *b = c->c.b;
  if (c->left && b && c->c.at < b->used && b->w[c->c.at]) { /* a one-word entry in this block */
    uint32_t w = b->w[c->c.at++];
    c->c.t += w & ((1u << NCS_WLOG_DT_BITS) - 1);
    *t = c->c.t;
    *code = w >> NCS_WLOG_DT_BITS;
    c->left--;
    return &l->shape[*code - 1];
  }
  return ncs_launches_next_shape_slow(l, c, t, code, scratch);
}
/* The same as a copy: 1 and the next launch in *x (t_first its time), or 0 past the last. */
static inline int ncs_launches_next(const struct ncs_launches *l, struct ncs_launch_cur *c, struct ncs_launch *x) {
  uint64_t t;
  uint32_t code;
  const struct ncs_launch *s = ncs_launches_next_shape(l, c, &t, &code, x);
  if (!s) return 0;
  if (s != x) *x = *s;
  x->t_first = t;
  return 1;
}
#endif
