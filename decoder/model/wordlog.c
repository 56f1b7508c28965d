/* wordlog.c — timed entries as 32-bit words (wordlog.h). */
#include "model/wordlog.h"

#include <stdlib.h>
#include <string.h>

int ncs_wlog_room(struct ncs_wlog *l, unsigned words) {
  if (l->end - l->at >= (long)words) return 0;
  struct ncs_wlog_block *b = l->tail ? l->tail->next : l->head; /* a block kept by a reset */
  if (!b) {
    if (!(b = malloc(sizeof *b))) return -1;
    b->next = NULL;
    if (l->tail) l->tail->next = b; else l->head = b;
  }
  ncs_wlog_seal(l);
  b->used = 0;
  l->tail = b;
  l->at = b->w;
  l->end = b->w + NCS_WLOG_BLOCK;
  return 0;
}

int ncs_wlog_put(struct ncs_wlog *l, uint64_t t, uint32_t code, const uint32_t *esc, unsigned nesc) {
  uint64_t d = t - l->last_t;
  if (ncs_wlog_fits(code, d)) {
    if (ncs_wlog_room(l, 1) != 0) return -1;
    *l->at++ = ncs_wlog_word(code, d);
  } else {
    if (ncs_wlog_room(l, 3 + nesc) != 0) return -1;
    uint32_t *w = l->at;
    w[0] = 0;
    w[1] = (uint32_t)d; w[2] = (uint32_t)(d >> 32);
    for (unsigned i = 0; i < nesc; i++) w[3 + i] = esc[i];
    l->at += 3 + nesc;
  }
  l->tail->used = (uint32_t)(l->at - l->tail->w);
  l->last_t = t;
  l->n++;
  return 0;
}

void ncs_wlog_reset(struct ncs_wlog *l) {
  struct ncs_wlog_block *head = l->head;
  memset(l, 0, sizeof *l);
  l->head = head; /* tail NULL: ncs_wlog_room starts again at head */
}

void ncs_wlog_free(struct ncs_wlog *l) {
  for (struct ncs_wlog_block *b = l->head, *nx; b; b = nx) { nx = b->next; free(b); }
  memset(l, 0, sizeof *l);
}

