/* seqsigs.c — a communicator's signature per collective sequence number (contract in seqsigs.h). */
#include "model/seqsigs.h"

#include <stdlib.h>
#include <string.h>

#define BLK NCS_SEQSIGS_BLK
#define FULL_PRIVATE (BLK + 1) /* full, but the pool could not take it (out of memory) */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
static int sig_eq(const struct ncs_seqsig *a, const struct ncs_seqsig *b) {
  return a->count == b->count && a->root == b->root && a->op == b->op && a->dtype == b->dtype && a->rank == b->rank;
}
static uint64_t sig_hash(const struct ncs_seqsig *s) {
  return mix(s->count ^ mix(((uint64_t)(uint32_t)s->root << 32 | (uint64_t)s->op << 24 | (uint64_t)s->dtype << 16) ^
                            ((uint64_t)(uint32_t)s->rank << 1)));
}

/* The id of s (1-based), added when new; 0 when the dictionary is full or out of memory. */
static uint16_t dict_id(struct ncs_seqsigs *t, const struct ncs_seqsig *s) {
  if (t->last_id && sig_eq(&t->dict[t->last_id - 1], s)) return t->last_id;
  if (2 * (t->ndict + 1) > t->dhcap) { /* keep the table at most half full */
    uint32_t nc = t->dhcap ? 2 * t->dhcap : 64;
    uint16_t *nh = calloc(nc, sizeof *nh);
    if (!nh) return 0;
    for (uint32_t i = 0; i < t->ndict; i++) {
      uint32_t k = (uint32_t)sig_hash(&t->dict[i]) & (nc - 1);
      while (nh[k]) k = (k + 1) & (nc - 1);
      nh[k] = (uint16_t)(i + 1);
    }
    free(t->dhash);
    t->dhash = nh;
    t->dhcap = nc;
  }
  uint32_t k = (uint32_t)sig_hash(s) & (t->dhcap - 1);
  for (; t->dhash[k]; k = (k + 1) & (t->dhcap - 1))
    if (sig_eq(&t->dict[t->dhash[k] - 1], s)) return t->last_id = t->dhash[k];
  if (t->ndict >= UINT16_MAX) return 0;
  if (t->ndict == t->capdict) {
    uint32_t nc = t->capdict ? 2 * t->capdict : 16;
    struct ncs_seqsig *nd = realloc(t->dict, nc * sizeof *nd);
    if (!nd) return 0;
    t->dict = nd;
    t->capdict = nc;
  }
  t->dict[t->ndict++] = *s;
  return t->dhash[k] = t->last_id = (uint16_t)t->ndict;
}

static uint64_t blk_hash(const uint16_t *b) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < BLK; i += 4) {
    uint64_t w;
    memcpy(&w, b + i, sizeof w);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return mix(h);
}
/* Block bi just filled: share it with an identical full block, or put it in the pool. */
static void blk_intern(struct ncs_seqsigs *t, size_t bi) {
  uint16_t *b = t->blk[bi];
  if (2 * (t->npool + 1) > t->pcap) {
    size_t nc = t->pcap ? 2 * t->pcap : 16;
    uint16_t **np = calloc(nc, sizeof *np);
    if (!np) { t->nset[bi] = FULL_PRIVATE; return; }
    for (size_t i = 0; i < t->pcap; i++) {
      if (!t->pool[i]) continue;
      size_t k = blk_hash(t->pool[i]) & (nc - 1);
      while (np[k]) k = (k + 1) & (nc - 1);
      np[k] = t->pool[i];
    }
    free(t->pool);
    t->pool = np;
    t->pcap = nc;
  }
  size_t k = blk_hash(b) & (t->pcap - 1);
  for (; t->pool[k]; k = (k + 1) & (t->pcap - 1))
    if (!memcmp(t->pool[k], b, BLK * sizeof *b)) {
      free(b);
      t->blk[bi] = t->pool[k];
      return;
    }
  t->pool[k] = b;
  t->npool++;
}

const struct ncs_seqsig *ncs_seqsigs_put(struct ncs_seqsigs *t, uint64_t seq, const struct ncs_seqsig *s) {
  if (seq >= NCS_SEQSIGS_MAX) return NULL;
  size_t bi = (size_t)(seq / BLK);
  if (bi >= t->nblk) {
    size_t nc = t->nblk ? t->nblk : 16;
    while (nc <= bi) nc *= 2;
    uint16_t **nb = realloc(t->blk, nc * sizeof *nb);
    if (!nb) return NULL;
    t->blk = nb;
    uint16_t *ns = realloc(t->nset, nc * sizeof *ns);
    if (!ns) return NULL;
    t->nset = ns;
    memset(nb + t->nblk, 0, (nc - t->nblk) * sizeof *nb);
    memset(ns + t->nblk, 0, (nc - t->nblk) * sizeof *ns);
    t->nblk = nc;
  }
  uint16_t *b = t->blk[bi];
  if (!b && !(b = t->blk[bi] = calloc(BLK, sizeof *b))) return NULL;
  uint16_t *e = &b[seq % BLK];
  if (*e) return &t->dict[*e - 1];
  uint16_t id = dict_id(t, s);
  if (!id) return NULL;
  *e = id; /* a full block is never written: every seq in it is set */
  if (++t->nset[bi] == BLK) blk_intern(t, bi);
  return NULL;
}

void ncs_seqsigs_free(struct ncs_seqsigs *t) {
  for (size_t i = 0; i < t->nblk; i++)
    if (t->nset[i] != BLK) free(t->blk[i]); /* the pool owns the shared ones */
  for (size_t i = 0; i < t->pcap; i++) free(t->pool[i]);
  free(t->blk);
  free(t->nset);
  free(t->pool);
  free(t->dict);
  free(t->dhash);
  memset(t, 0, sizeof *t);
}
