/* test_straggler.c — the straggler engine (decoder/analysis/straggler.h) on arrivals fed
 * directly: a communicator's window when its first arrival, or a later one, lies past what the
 * window may hold (a trace whose first collectives were dropped), and which calls it lines up
 * (ncs_strag_lines_up: only those on a communicator a COMM record registered), and the
 * mismatches named when open collectives' second signatures come and go. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "analysis/straggler.h"
#include "ncclscope/ops.h"

static void comm(struct ncs_strag *s, int file, uint32_t idx, int rank, int nranks, int rc) {
  struct ncs_comm c;
  memset(&c, 0, sizeof c);
  c.comm = idx; c.comm_id = 0xabcdef; c.rank = rank; c.nranks = nranks; c.rc = rc; c.device = rank;
  ncs_strag_comm(s, file, &c);
}
static void arrive_n(struct ncs_strag *s, int file, uint32_t idx, uint64_t seq, int64_t t, uint64_t count) {
  struct ncs_strag_arrival a = {.comm = idx, .op = NCS_OP_AllReduce, .datatype = 7, .root = -1,
                                .seq = seq, .count = count, .t = t};
  ncs_strag_arrive_batch(s, file, &a, 1);
}
static void arrive(struct ncs_strag *s, int file, uint32_t idx, uint64_t seq, int64_t t) {
  arrive_n(s, file, idx, seq, t, 1024);
}
/* The order of seqs both one-rank batch cases feed: 1..1000 in order; 1101..1200 ahead of the
 * window; 1001..1200 in one stretch; 1150 again; 1201..1300. Returns how many (1,601). */
static size_t one_rank_order(uint64_t *order) {
  size_t n = 0;
  for (uint64_t q = 1; q <= 1000; q++) order[n++] = q;
  for (uint64_t q = 1101; q <= 1200; q++) order[n++] = q;
  for (uint64_t q = 1001; q <= 1200; q++) order[n++] = q;
  order[n++] = 1150;
  for (uint64_t q = 1201; q <= 1300; q++) order[n++] = q;
  return n;
}

/* Their truth, once s is finished: 1300 distinct collectives, each complete once, one arrival
 * each, the skew's seq the lowest (1), one open at most; and no lateness when late0. Frees s. */
static void check_one_rank(struct ncs_strag *s, int late0, const char *what) {
  const struct ncs_strag_rank *rk = NULL;
  int nrk = ncs_strag_ranks(s, &rk);
  CHECK(ncs_strag_collectives(s) == 1300 && ncs_strag_incomplete(s) == 0 && nrk == 1 && rk[0].arrivals == 1300 &&
        rk[0].last_count == 1300 && (!late0 || rk[0].mean_late_us == 0) && ncs_strag_result(s)->skew_max_seq == 1 &&
        ncs_strag_peak_window(s) == 1,
        "straggler: %s: each collective once (complete %llu, incomplete %llu, rows %d, arrivals %llu, last %llu, "
        "skew seq %llu, peak open %zu; want 1300, 0, 1, 1300, 1300, 1, 1)",
        what, (unsigned long long)ncs_strag_collectives(s), (unsigned long long)ncs_strag_incomplete(s), nrk,
        nrk ? (unsigned long long)rk[0].arrivals : 0ull, nrk ? (unsigned long long)rk[0].last_count : 0ull,
        (unsigned long long)ncs_strag_result(s)->skew_max_seq, ncs_strag_peak_window(s));
  ncs_strag_free(s);
}

int main(void) {
  /* one file of a two-rank job given alone: the communicator may not be fully traced, so its
   * window holds 4096 open collectives; the file's first kept collective is seq 10000 */
  struct ncs_strag *s = ncs_strag_new(1);
  comm(s, 0, 1, 0, 2, 0);
  arrive(s, 0, 1, 10000, 5000);
  arrive(s, 0, 1, 10001, 6000);
  ncs_strag_finish(s);
  CHECK(ncs_strag_collectives(s) == 0 && ncs_strag_partial(s) == 1,
        "straggler: a first arrival past the window of a partly traced communicator is taken (collectives %llu, partial %d)",
        (unsigned long long)ncs_strag_collectives(s), ncs_strag_partial(s));
  ncs_strag_free(s);

  /* both ranks: rank 0 enters seq 1..10 alone, then both enter seq 3,000,000 (2^20 open
   * collectives at most: the 10 open ones are given up) and 3,000,001 */
  s = ncs_strag_new(2);
  comm(s, 0, 1, 0, 2, 0);
  comm(s, 1, 4, 1, 2, 0);
  for (uint64_t q = 1; q <= 10; q++) arrive(s, 0, 1, q, (int64_t)q * 1000);
  for (int r = 0; r < 2; r++) {
    arrive(s, r, r ? 4 : 1, 3000000, 10000000 + r * 500);
    arrive(s, r, r ? 4 : 1, 3000001, 10001000 + r * 700);
  }
  ncs_strag_finish(s);
  long long given_up = (long long)ncs_strag_result(s)->given_up;
  CHECK(ncs_strag_collectives(s) == 2 && given_up == 10,
        "straggler: a jump past the window gives up the open collectives and lines up the next (complete %llu, given up %lld)",
        (unsigned long long)ncs_strag_collectives(s), given_up);
  CHECK(ncs_strag_skew_max_us(s) == 0.7, "straggler: the skew after the jump (max %.3f us, want 0.700)",
        ncs_strag_skew_max_us(s));
  ncs_strag_free(s);

  /* sums of entry times past 2^64 ns (a hostile or far-off clock): the figures are those of
   * long double running sums, added in the same order */
  s = ncs_strag_new(2);
  comm(s, 0, 1, 0, 2, 0);
  comm(s, 1, 1, 1, 2, 0);
  long double sum_t[2] = {0, 0}, sum_min = 0, wait1 = 0;
  const int K = 24;
  for (int j = 0; j < K; j++) {
    int64_t t0 = 4000000000000000000ll + (int64_t)j * 1000000007ll + (j * 7919) % 1000, t1 = t0 + 1000 + j;
    arrive(s, 0, 1, (uint64_t)j + 1, t0);
    arrive(s, 1, 1, (uint64_t)j + 1, t1);
    sum_t[0] += (long double)t0; sum_t[1] += (long double)t1; sum_min += (long double)t0;
    wait1 += (long double)(2 * (uint64_t)t1 - ((uint64_t)t0 + (uint64_t)t1));
  }
  ncs_strag_finish(s);
  const struct ncs_strag_rank *rk;
  int nrk = ncs_strag_ranks(s, &rk);
  double late[2] = {-1, -1}, waits[2] = {-1, -1};
  for (int i = 0; i < nrk; i++) if (rk[i].rank >= 0 && rk[i].rank < 2) {
    late[rk[i].rank] = rk[i].mean_late_us;
    waits[rk[i].rank] = rk[i].wait_caused_s;
  }
  double want0 = (double)((sum_t[0] - sum_min) / (long double)K / 1e3L), want1 = (double)((sum_t[1] - sum_min) / (long double)K / 1e3L);
  CHECK(nrk == 2 && late[0] == want0 && late[1] == want1 && waits[1] == (double)(wait1 / 1e9L) && waits[0] == 0,
        "straggler: lateness and wait from sums past 2^64 ns equal long double running sums (late %.6f %.6f us, want %.6f %.6f)",
        late[0], late[1], want0, want1);
  ncs_strag_free(s);

  /* a one-rank communicator (two threads of one process on it: their chunks out of order by
   * 300,000 collectives), then a jump past the window: every distinct collective is complete at
   * once; a second arrival of one, or one left behind the jump, is not counted again */
  s = ncs_strag_new(1);
  comm(s, 0, 1, 0, 1, 0);
  for (uint64_t q = 300001; q <= 600000; q++) arrive(s, 0, 1, q, (int64_t)q * 1000);
  for (uint64_t q = 1; q <= 300000; q++) arrive(s, 0, 1, q, (int64_t)q * 1000);
  arrive(s, 0, 1, 7, 7000);             /* entered again */
  arrive(s, 0, 1, 5000000, 5000000000); /* past 2^20 of the last */
  arrive(s, 0, 1, 600001, 600001000);   /* behind the window now */
  ncs_strag_finish(s);
  nrk = ncs_strag_ranks(s, &rk);
  given_up = (long long)ncs_strag_result(s)->given_up;
  CHECK(ncs_strag_collectives(s) == 600001 && ncs_strag_incomplete(s) == 0 && given_up == 0 && nrk == 1 &&
        rk[0].arrivals == 600001 && rk[0].last_count == 600001 && ncs_strag_peak_window(s) == 1,
        "straggler: a one-rank communicator closes each distinct collective once, out of order too (complete %llu, "
        "incomplete %llu, given up %lld, rows %d, arrivals %llu, peak open %zu; want 600001, 0, 0, 1, 600001, 1)",
        (unsigned long long)ncs_strag_collectives(s), (unsigned long long)ncs_strag_incomplete(s), given_up, nrk,
        nrk ? (unsigned long long)rk[0].arrivals : 0ull, ncs_strag_peak_window(s));
  ncs_strag_free(s);

  /* the same kind of communicator fed in batches of 256 (a run in order from the window's start
   * is folded at once, arrive_one_run): 1..1000 in order; 1101..1200 ahead of the window; 1001..
   * 1200 in one stretch (1101..1200 are closed already: each counted once); 1150 again; 1201..1300
   * with one negative entry time. Truth: 1300 distinct collectives, each complete once, one
   * arrival each, the skew's seq the lowest (1), one open at most. */
  s = ncs_strag_new(1);
  comm(s, 0, 1, 0, 1, 0);
  {
    static struct ncs_strag_arrival b[2048];
    size_t nb = 0;
    uint64_t order[1600];
    size_t no = one_rank_order(order);
    for (size_t k = 0; k < no; k++)
      b[nb++] = (struct ncs_strag_arrival){.comm = 1, .op = NCS_OP_AllReduce, .datatype = 7, .root = -1, .seq = order[k],
                                           .count = 1024, .t = order[k] == 1250 ? -5 : (int64_t)order[k] * 1000};
    for (size_t k = 0; k < nb; k += 256) ncs_strag_arrive_batch(s, 0, b + k, nb - k < 256 ? nb - k : 256);
  }
  ncs_strag_finish(s);
  check_one_rank(s, 1, "a one-rank communicator fed in batches, in order, ahead and again");

  /* the same order of collectives given as calls (ncs_strag_arrive_one_calls, as straggler_report
   * hands a one-rank communicator's runs), in stretches of 500: the same truth */
  s = ncs_strag_new(1);
  comm(s, 0, 1, 0, 1, 0);
  {
    static struct ncs_call cl[1600];
    uint64_t order[1600];
    size_t ncl = one_rank_order(order);
    for (size_t k = 0; k < ncl; k++)
      cl[k] = (struct ncs_call){.op = NCS_OP_AllReduce, .comm = 1, .datatype = 7, .count = 1024, .root = -1, .seq = order[k]};
    for (size_t k = 0; k < ncl; k += 500) ncs_strag_arrive_one_calls(s, 0, 1, cl + k, ncl - k < 500 ? ncl - k : 500);
  }
  ncs_strag_finish(s);
  check_one_rank(s, 0, "a one-rank communicator's calls handed as they are, in order, ahead and again");

  /* two ranks, rank 1's record of seq 5 dropped (the shim's DROP), then 300,000 collectives
   * (past PASSED_LAG): seq 5 stays incomplete, reported as where the ranks parted, the rest
   * complete; rank 1 enters each 1 us after rank 0 */
  s = ncs_strag_new(2);
  comm(s, 0, 1, 0, 2, 0);
  comm(s, 1, 1, 1, 2, 0);
  for (uint64_t q = 1; q <= 300000; q += 1000) {
    for (uint64_t k = q; k < q + 1000; k++) arrive(s, 0, 1, k, (int64_t)k * 10000);
    for (uint64_t k = q; k < q + 1000; k++) if (k != 5) arrive(s, 1, 1, k, (int64_t)k * 10000 + 1000);
  }
  ncs_strag_finish(s);
  nrk = ncs_strag_ranks(s, &rk);
  const struct ncs_strag_rank *r0 = NULL, *r1 = NULL;
  for (int i = 0; i < nrk; i++) { if (rk[i].rank == 0) r0 = &rk[i]; if (rk[i].rank == 1) r1 = &rk[i]; }
  const struct ncs_strag_result *res = ncs_strag_result(s);
  long long missing_seq = res->nmissing ? (long long)res->missing[0].seq : -1;
  CHECK(ncs_strag_collectives(s) == 299999 && ncs_strag_incomplete(s) == 1 && r0 && r1 && r0->arrivals == 300000 &&
        r1->arrivals == 299999 && r1->last_count == 299999 && r0->mean_late_us == 0 && missing_seq == 5 &&
        res->nmissing == 1 && res->missing[0].entered == 1 && res->given_up == 0,
        "straggler: a collective one rank's record of which was dropped stays incomplete, 300,000 collectives on "
        "(complete %llu, incomplete %llu, missing seq %lld; want 299999, 1, 5)",
        (unsigned long long)ncs_strag_collectives(s), (unsigned long long)ncs_strag_incomplete(s), missing_seq);
  ncs_strag_free(s);

  /* which calls are lined up: those on a communicator index with an accepted COMM record */
  s = ncs_strag_new(2);
  int before = ncs_strag_lines_up(s, 0, 1);
  comm(s, 0, 1, 0, 2, 0);
  comm(s, 0, 2, 0, 2, 5);  /* a failed init (ncclInvalidArgument) */
  comm(s, 1, 3, 1, 2, 7);  /* a non-blocking init in progress counts */
  CHECK(!before && ncs_strag_lines_up(s, 0, 1) && !ncs_strag_lines_up(s, 0, 2) && !ncs_strag_lines_up(s, 0, 3) &&
        ncs_strag_lines_up(s, 1, 3) && !ncs_strag_lines_up(s, 1, 1) && !ncs_strag_lines_up(s, 2, 1) &&
        !ncs_strag_lines_up(NULL, 0, 1),
        "straggler: lines up the calls of registered communicators only, per file");
  ncs_strag_free(s);

  /* second signatures of open collectives, kept apart from the window and reused: 4 ranks, each
   * file read whole in rank order (every collective open until rank 3's file). Seqs 1..20: rank 3
   * enters with count 2048; all close. Seqs 21..32: rank 1 with count 512, ranks 2 and 3 with
   * 4096 (a third signature): the odd one named is rank 1's (1 against 1: the higher lowest
   * rank), counted once, whatever the entries the first 20 left */
  s = ncs_strag_new(4);
  for (int r = 0; r < 4; r++) comm(s, r, 1, r, 4, 0);
  for (int r = 0; r < 4; r++)
    for (uint64_t q = 1; q <= 20; q++) arrive_n(s, r, 1, q, (int64_t)q * 1000 + r, r == 3 ? 2048 : 1024);
  for (int r = 0; r < 4; r++)
    for (uint64_t q = 21; q <= 32; q++) arrive_n(s, r, 1, q, (int64_t)q * 1000 + r, r == 0 ? 1024 : r == 1 ? 512 : 4096);
  ncs_strag_finish(s);
  res = ncs_strag_result(s);
  int good = res->nmismatch == 32 && res->mismatches == 32;
  for (int i = 0; good && i < res->nmismatch; i++) {
    const struct ncs_strag_mismatch *m = &res->mismatch[i];
    uint64_t q = (uint64_t)i + 1;
    if (q <= 20) good = m->seq == q && m->rank == 3 && m->odd == 1 && m->got.count == 2048 && m->want.count == 1024;
    else good = m->seq == q && m->rank == 1 && m->odd == 1 && m->got.count == 512 && m->want.count == 1024;
    if (!good) printf("  mismatch %d: seq %llu rank %d odd %u got %llu want %llu\n", i, (unsigned long long)m->seq, m->rank,
                      m->odd, (unsigned long long)m->got.count, (unsigned long long)m->want.count);
  }
  CHECK(good && ncs_strag_collectives(s) == 32 && ncs_strag_incomplete(s) == 0,
        "straggler: 32 mismatches named, rank 3 (2048 for 1024) at seqs 1-20, rank 1 (512, once) at 21-32 past a "
        "third signature (listed %d of %llu, complete %llu)",
        res->nmismatch, (unsigned long long)res->mismatches, (unsigned long long)ncs_strag_collectives(s));
  ncs_strag_free(s);
  return check_done();
}
