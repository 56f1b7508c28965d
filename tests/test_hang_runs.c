/* test_hang_runs.c — the hang analysis (decoder/analysis/hang.c) fed a file's calls in runs gives
 * what it gives fed them one at a time: on_run counts each collective on its communicator in
 * order but writes a communicator's recent calls (the last 64, read by the verdicts) only for
 * the run's last 64 collectives on it, backwards from the run's end, each into the slot it would
 * have had. Two ranks, collectives interleaved over two 2-rank communicators and a one-rank one
 * (no signature), other operations and seq-0 calls between, an error on one; rank 1 stops
 * earlier on the first communicator, so its next collective is the hung one and rank 0's record
 * of it comes from its recent calls: kept when rank 0 went on 63 collectives past it, not kept
 * at 64 (the ring's edge). Fed one call at a time (on_call), in one run, and in runs of 1 to
 * 300 calls: the same verdicts (every text) and the same ranks' figures. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hang.h"
#include "check.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define S 1000000000ull
#define RT0 1700000000000000000ull
#define MAXC 4096

static uint64_t lcg(uint64_t *x) { *x = *x * 6364136223846793005ull + 1442695040888963407ull; return *x >> 33; }

/* Rank r's calls until it has made `last` collectives on communicator 1; returns how many. */
static size_t make_calls(struct ncs_call *c, int r, uint64_t last) {
  uint64_t x = 12345, seq[4] = {0}, t = 2 * S, tcall = 0;
  size_t n = 0;
  while (seq[1] < last && n < MAXC) {
    uint64_t p = lcg(&x) % 16;
    struct ncs_call k = {.thread = 1, .datatype = 7, .root = -1, .count = 1024 + p};
    k.tcall = ++tcall;
    k.t_enter = t;
    k.t_exit = t + 1000 + p;
    t += 10000000; /* 10 ms: each call's own time in the evidence (ms) */
    if (p < 7) { k.op = NCS_OP_AllReduce; k.comm = 1; }
    else if (p < 9) { k.op = NCS_OP_Broadcast; k.comm = 1; k.root = 0; }
    else if (p < 12) { k.op = NCS_OP_AllReduce; k.comm = 2; }
    else if (p < 13) { k.op = NCS_OP_AllGather; k.comm = 3; }
    else if (p < 14) { k.op = NCS_OP_GroupStart; }
    else if (p < 15) { k.op = NCS_OP_AllReduce; k.comm = 2; k.seq = 0; } /* no seq: not counted */
    else { k.op = NCS_OP_ReduceScatter; k.comm = 2; }
    if (k.comm && !(p == 14)) k.seq = ++seq[k.comm];
    if (k.comm == 2 && k.seq == 37 && r == 0) k.rc = ncclInternalError; /* an error, once */
    c[n++] = k;
  }
  return n;
}

struct fed { char text[65536]; size_t len; };
static void put(struct fed *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct fed *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->text + o->len, sizeof o->text - o->len, fmt, ap);
  va_end(ap);
  if (k > 0) o->len += (size_t)k < sizeof o->text - o->len ? (size_t)k : sizeof o->text - o->len - 1;
}

/* Both ranks' calls fed in runs of `run` calls (0: random lengths 1..300); the verdicts' and
 * the ranks' text into o. */
static void feed(struct fed *o, const struct ncs_call *const *c, const size_t *n, size_t run) {
  static char p0[] = "r0", p1[] = "r1";
  char *paths[2] = {p0, p1};
  memset(o, 0, sizeof *o);
  struct ncs_hang *h = ncs_hang_new(2, paths, 0.5);
  if (!h) return;
  uint64_t x = 99;
  for (int r = 0; r < 2; r++) {
    struct ncs_visitor v;
    ncs_hang_visitor(h, r, &v);
    struct ncs_clock ck = {RT0 + 1 * S, 1 * S, 40};
    v.clock(v.ctx, &ck);
    for (uint32_t idx = 1; idx <= 3; idx++) {
      struct ncs_comm cm = {.comm = idx, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = idx == 3 ? 0xC0u + (unsigned)r : 0xA0 + idx, /* 3: each rank's own */
                            .handle = 0x1000u + idx, .t_enter = 1 * S, .t_exit = 1 * S + 1000,
                            .rank = idx == 3 ? 0 : r, .nranks = idx == 3 ? 1 : 2, .color = -1};
      v.comm(v.ctx, &cm);
    }
    for (size_t i = 0; i < n[r];) {
      size_t k = run ? run : 1 + lcg(&x) % 300;
      if (k > n[r] - i) k = n[r] - i;
      v.calls(v.ctx, c[r] + i, k);
      i += k;
    }
    struct ncs_clock end = {RT0 + 60 * S, 60 * S, 40}; /* both alive long after */
    v.clock(v.ctx, &end);
    struct ncs_read_status st = {.chunks = 1, .last_realtime_ns = RT0 + 60 * S};
    ncs_hang_file_done(h, r, 0, &st);
  }
  ncs_hang_finish(h);
  for (int i = 0; i < ncs_hang_nverdicts(h); i++) {
    const struct ncs_hang_verdict *d = ncs_hang_verdict_at(h, i);
    put(o, "verdict %s kind %d comm %" PRIx64 " seq %" PRIu64 " op %u in %d miss %d\n", d->id, d->kind, d->comm_id, d->seq, d->op,
        d->nentered, d->nmissing);
    for (int e = 0; e < d->nevidence; e++) put(o, "  %s\n", d->evidence[e]);
  }
  for (int i = 0; i < ncs_hang_nranks(h); i++) {
    const struct ncs_hang_rank *k = ncs_hang_rank_at(h, i);
    put(o, "rank %d calls %" PRIu64 " last %u seq %" PRIu64 " comm %" PRIx64 " exit %" PRId64 "\n", k->rank, k->calls, k->last_op,
        k->last_seq, k->last_comm_id, k->last_exit_rt);
  }
  ncs_hang_free(h);
}

/* Rank 0 goes on `past` collectives on communicator 1 beyond the one rank 1 never entered. */
static void scenario(uint64_t past, int kept) {
  static struct ncs_call c0[MAXC], c1[MAXC];
  static struct fed one, whole, random;
  uint64_t r1_last = 150;
  size_t n[2] = {make_calls(c0, 0, r1_last + 1 + past), make_calls(c1, 1, r1_last)};
  const struct ncs_call *c[2] = {c0, c1};
  feed(&one, c, n, 1);
  feed(&whole, c, n, MAXC);
  feed(&random, c, n, 0);
  CHECK(strstr(one.text, "verdict hang kind 4 comm a2") && strstr(one.text, "rank 0 calls"),
        "hang runs (%" PRIu64 " past): one call at a time, a hang on the second communicator and the ranks' figures", past);
  /* rank 0's entry into the hung collective, read from its recent calls: the verdict's first
   * arrival (without it, no arrival is known and no verdict made) */
  char at[160];
  snprintf(at, sizeof at, "collective seq %" PRIu64 " AllReduce: never entered by 1 rank: 1; first entered at", r1_last + 1);
  CHECK(kept ? strstr(one.text, at) != NULL : strstr(one.text, at) == NULL,
        "hang runs (%" PRIu64 " past): rank 0's record of the hung collective %s its recent calls", past, kept ? "in" : "past");
  CHECK(!strcmp(one.text, whole.text), "hang runs (%" PRIu64 " past): one run gives what one call at a time gives", past);
  CHECK(!strcmp(one.text, random.text), "hang runs (%" PRIu64 " past): runs of 1..300 give what one call at a time gives", past);
  if (getenv("SHOW")) printf("%s", one.text);
  if (strcmp(one.text, whole.text)) printf("-- one at a time:\n%s-- one run:\n%s", one.text, whole.text);
}

int main(void) {
  scenario(63, 1);  /* the 64th most recent: kept */
  scenario(64, 0);  /* the 65th: overwritten */
  scenario(10, 1);
  return check_done();
}
