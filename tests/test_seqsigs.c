/* test_seqsigs.c — the per-sequence signature store (decoder/model/seqsigs.c) against a plain
 * array the test keeps itself: three "ranks" put a periodic training loop's signatures in
 * batches of seqs, some out of order, with gaps (seqs the first rank lacks) and one rank diverging at chosen seqs; the
 * store must return, for every put, exactly what the array says was kept first (NULL for the
 * first put of a seq). Memory: the periodic loop's full blocks are shared (a few pool blocks for
 * 2^20 seqs), a non-repeating one's are not; seqs at and past 2^32 are not kept; more than
 * 65535 distinct signatures: the 65536th is not kept. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/seqsigs.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int same(const struct ncs_seqsig *a, const struct ncs_seqsig *b) {
  return a->count == b->count && a->root == b->root && a->op == b->op && a->dtype == b->dtype && a->rank == b->rank;
}
/* the loop's signature at seq for rank r: a 13-call step of bucket sizes, rank 2 odd at `odd` */
static struct ncs_seqsig loop_sig(uint64_t seq, int r, uint64_t odd, int periodic) {
  uint64_t k = periodic ? seq % 13 : seq;
  struct ncs_seqsig s = {.count = 1000 + 37 * k, .root = -1, .op = (uint8_t)(k % 3 ? 2 : 0), .dtype = 7, .rank = r};
  if (r == 2 && seq == odd) s.count++;
  return s;
}

static void run(int periodic, uint64_t nseq, int gaps, const char *what) {
  struct ncs_seqsigs t;
  memset(&t, 0, sizeof t);
  struct ncs_seqsig *kept = calloc(nseq + 1, sizeof *kept);
  unsigned char *has = calloc(nseq + 1, 1);
  uint64_t odd = nseq / 2 + 7, bad = 0, puts = 0, mism = 0, nb = (nseq + 1023) / 1024;
  uint64_t *order = malloc(nb * sizeof *order);
  for (int r = 0; r < 3; r++) {
    /* rank r puts its seqs in batches of 1024, each in ascending order; rank 1's batches come
     * with some neighbours swapped: the way files read in parallel reach the table */
    for (uint64_t i = 0; i < nb; i++) order[i] = 1 + 1024 * i;
    if (r == 1)
      for (uint64_t i = 0; i + 1 < nb; i += 2)
        if (next() & 1) { uint64_t x = order[i]; order[i] = order[i + 1]; order[i + 1] = x; }
    for (uint64_t i = 0; i < nb; i++)
      for (uint64_t s = order[i]; s < order[i] + 1024 && s <= nseq; s++) {
        if (gaps && r == 0 && s % 5000 == 17) continue; /* seqs the first rank read lacks */
        struct ncs_seqsig sig = loop_sig(s, r, odd, periodic);
        const struct ncs_seqsig *got = ncs_seqsigs_put(&t, s, &sig);
        puts++;
        if (!has[s]) { if (got) bad++; kept[s] = sig; has[s] = 1; }
        else if (!got || !same(got, &kept[s])) bad++;
        else if (got->count != sig.count) mism++;
      }
  }
  CHECK(bad == 0, "%s: every put of %llu (3 ranks, %llu seqs) returns what was kept first (%llu wrong)", what,
        (unsigned long long)puts, (unsigned long long)nseq, (unsigned long long)bad);
  CHECK(mism == 1, "%s: the one diverging collective differs from the signature kept (%llu found)", what,
        (unsigned long long)mism);
  if (periodic)
    CHECK(t.npool <= 13, "%s: %llu full blocks kept for %llu blocks of seqs (a 13-call loop: at most 13)", what,
          (unsigned long long)t.npool, (unsigned long long)(nseq / NCS_SEQSIGS_BLK));
  else
    CHECK(t.npool + 1 >= nseq / NCS_SEQSIGS_BLK, "%s: no two full blocks alike, %llu kept of %llu", what,
          (unsigned long long)t.npool, (unsigned long long)(nseq / NCS_SEQSIGS_BLK));
  ncs_seqsigs_free(&t);
  free(order);
  free(kept);
  free(has);
}

int main(void) {
  run(1, 1 << 20, 0, "periodic loop");
  run(0, 60000, 1, "non-repeating sizes, gaps in the first rank read");

  struct ncs_seqsigs t;
  memset(&t, 0, sizeof t);
  struct ncs_seqsig a = {.count = 8, .root = -1, .op = 0, .dtype = 7, .rank = 0};
  const struct ncs_seqsig *r1 = ncs_seqsigs_put(&t, NCS_SEQSIGS_MAX, &a);
  const struct ncs_seqsig *r2 = ncs_seqsigs_put(&t, NCS_SEQSIGS_MAX, &a);
  CHECK(!r1 && !r2 && t.nblk == 0, "seq 2^32 is not kept (nothing allocated)");
  ncs_seqsigs_put(&t, NCS_SEQSIGS_MAX - 1, &a);
  const struct ncs_seqsig *r3 = ncs_seqsigs_put(&t, NCS_SEQSIGS_MAX - 1, &a);
  CHECK(r3 && r3->count == 8, "seq 2^32 - 1 is kept");
  ncs_seqsigs_free(&t);

  memset(&t, 0, sizeof t);
  int kept_all = 1;
  for (uint64_t s = 1; s <= 65536; s++) {
    struct ncs_seqsig x = {.count = s, .root = -1, .op = 0, .dtype = 7, .rank = 0};
    ncs_seqsigs_put(&t, s, &x);
    const struct ncs_seqsig *g = ncs_seqsigs_put(&t, s, &x);
    if (s <= 65535 && (!g || g->count != s)) kept_all = 0;
    if (s == 65536) CHECK(!g, "the 65536th distinct signature is not kept");
  }
  CHECK(kept_all, "65535 distinct signatures are kept, each returned as put");
  ncs_seqsigs_free(&t);
  return check_done();
}
