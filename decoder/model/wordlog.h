/* wordlog.h — a log of timed entries as 32-bit words, appended in time order and read back once
 * in order: the encoding that model/kact.c (a process's calls per kernel operation) and
 * model/launches.c (its NCCL launches, for whatif) keep their logs in.
 *
 * Contract: an entry is its time minus the previous entry's (the first's minus 0; two's
 * complement, so an entry may be earlier) and either a code 1..255 that the owner gives it (the
 * index + 1 of its shape in a table of the owner's), in one word `code << 24 | difference` when
 * the difference is under 2^24 ns (16.7 ms), or else an escape: a 0 word, the difference in two
 * words (low first) and the owner's `nesc` words. The owner uses one nesc for a log. Blocks of
 * 16 Ki words are chained (no copy as the log grows) and kept by a reset. Not thread-safe. A
 * writer in a hot loop may put one-word entries itself (ncs_wlog_word at l->at, while
 * l->at < l->end, then l->n and l->last_t), as model/kact.c does, and then calls
 * ncs_wlog_seal before the log is read. */
#ifndef NCS_WORDLOG_H
#define NCS_WORDLOG_H
#include <stdint.h>

#define NCS_WLOG_BLOCK (16u << 10) /* words a block */
#define NCS_WLOG_DT_BITS 24
#define NCS_WLOG_MAX_ESC 8         /* the most words an owner's escape takes */
struct ncs_wlog_block { struct ncs_wlog_block *next; uint32_t used; uint32_t w[NCS_WLOG_BLOCK]; };
struct ncs_wlog {
  struct ncs_wlog_block *head, *tail;
  uint32_t *at, *end;              /* the last block's free words */
  uint64_t n, last_t;              /* entries, the last entry's time */
};
struct ncs_wlog_cur { const struct ncs_wlog_block *b; uint32_t at; uint64_t t; };

/* 1 when an entry of code `code` (0: none) `d` after the previous one takes one word. */
static inline int ncs_wlog_fits(uint32_t code, uint64_t d) { return code && d < (1u << NCS_WLOG_DT_BITS); }
/* That word. */
static inline uint32_t ncs_wlog_word(uint32_t code, uint64_t d) { return code << NCS_WLOG_DT_BITS | (uint32_t)d; }

/* Appends an entry at time t: one word when ncs_wlog_fits, else an escape with esc[0..nesc).
 * 0, or -1 when out of memory (the entry is not kept). A log starts zeroed. */
int ncs_wlog_put(struct ncs_wlog *l, uint64_t t, uint32_t code, const uint32_t *esc, unsigned nesc);
/* Room for `words` more words at l->at (a new or kept block when the last has less): 0, or -1
 * when out of memory. */
int ncs_wlog_room(struct ncs_wlog *l, unsigned words);
/* Empties the log, keeping its blocks for the next entries. */
void ncs_wlog_reset(struct ncs_wlog *l);
void ncs_wlog_free(struct ncs_wlog *l);
/* After words written at l->at by the caller: the log's end as the reader sees it. */
static inline void ncs_wlog_seal(struct ncs_wlog *l) {
  if (l->tail) l->tail->used = (uint32_t)(l->at - l->tail->w);
}
/* Reading: a cursor at the first entry, then ncs_wlog_next for each of the l->n entries (the
 * caller counts them): it returns the entry's code, or 0 for an escape with esc[0..nesc)
 * filled, and sets *t to the entry's time. */
static inline void ncs_wlog_begin(const struct ncs_wlog *l, struct ncs_wlog_cur *c) {
  *c = (struct ncs_wlog_cur){l->head, 0, 0};
}
static inline uint32_t ncs_wlog_next(struct ncs_wlog_cur *c, unsigned nesc, uint64_t *t, uint32_t *esc) {
  if (c->at >= c->b->used) { c->b = c->b->next; c->at = 0; }
  const uint32_t *w = c->b->w + c->at;
  uint32_t code = w[0] >> NCS_WLOG_DT_BITS;
  if (w[0]) {
    c->t += w[0] & ((1u << NCS_WLOG_DT_BITS) - 1);
    c->at++;
  } else {
    c->t += (uint64_t)w[1] | (uint64_t)w[2] << 32;
    for (unsigned i = 0; i < nesc; i++) esc[i] = w[3 + i];
    c->at += 3 + nesc;
  }
  *t = c->t;
  return code;
}
#endif
