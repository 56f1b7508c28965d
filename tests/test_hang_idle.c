/* test_hang_idle.c — dead-rank and the writer's idle heartbeat (format 5.6, chunk flag `idle`;
 * analysis/hang.c): a rank whose trace ends with an `idle` chunk is not judged dead before its
 * next heartbeat could have come (2 x 2 s + 100 ms), one whose trace ends with any other chunk
 * is judged by its flush period as before. (The rule that a call read after an `idle` chunk
 * ends the allowance, for a killed process's rings file, needs a rings file: test_hang's kill
 * case.)
 * Synthetic 2-rank traces (test_trace_writer.h): both ranks make AllReduce seq 1..4, a chunk every
 * 0.5 s; rank 0 then waits inside seq 5 (INFLIGHT), chunks every 0.5 s up to `peer_end`; rank 1's
 * trace is cut at 3.0 s (its last chunk a CLOCK alone, flagged `idle` or not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hang.h"
#include "check.h"
#include "test_trace_writer.h"

static char dir[] = "/tmp/ncs-hang-idle.XXXXXX";
#define S 1000000000ull
#define RT0 1700000000000000000ull

static void clock_at(struct tw *t, uint64_t mono) {
  struct ncs_clock ck = {RT0 + mono, mono, 40};
  tw_clock(t, &ck);
}

static void head(struct tw *t, int rank) {
  char rk[4];
  snprintf(rk, sizeof rk, "%d", rank);
  struct ncs_kv kv[] = {{"host", "h", 1}, {"pid", rank ? "11" : "10", 2}, {"env.RANK", rk, 1}};
  tw_kv(t, kv, sizeof kv / sizeof *kv);
  clock_at(t, 1 * S);
  struct ncs_thread th = {1, 100u + (unsigned)rank, "main", 0};
  tw_thread(t, &th);
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 0x1234, .handle = 0x1000u + (unsigned)rank,
                        .t_enter = 1 * S, .t_exit = 1 * S + 1000, .rank = rank, .nranks = 2, .color = -1};
  tw_comm(t, &cm);
}

/* seq 1..4 at 1.1, 1.6, 2.1, 2.6 s, a chunk after each at +0.4 s */
static void steps(struct tw *t) {
  for (uint64_t s = 1; s <= 4; s++) {
    uint64_t at = 1 * S + s * S / 2 - 4 * S / 10;
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = s, .comm = 1, .seq = s, .count = 1024, .datatype = 7,
                         .redop = 0, .root = -1, .t_enter = at, .t_exit = at + 1000000};
    tw_call(t, &c);
    clock_at(t, at + 4 * S / 10);
    tw_flush(t, 0);
  }
}

/* Writes the pair; returns the verdict kinds found as a bit set (1 << kind). */
static unsigned scenario(const char *name, uint32_t last_flags, uint64_t peer_end) {
  char p0[300], p1[300];
  snprintf(p0, sizeof p0, "%s/%s-0.ncs", dir, name);
  snprintf(p1, sizeof p1, "%s/%s-1.ncs", dir, name);
  struct tw t;
  /* rank 0: waits inside seq 5 from 3.1 s, a chunk every 0.5 s up to peer_end */
  tw_open(&t, p0, 10, RT0 + 1 * S);
  head(&t, 0);
  steps(&t);
  for (uint64_t at = 35 * S / 10; at <= peer_end; at += S / 2) {
    struct ncs_inflight f = {.kind = NCS_INFLIGHT_HOST, .thread = 1, .op = NCS_OP_AllReduce, .comm = 1, .datatype = 7,
                             .root = -1, .nranks = 2, .tcall = 5, .seq = 5, .count = 1024, .t_enter = 31 * S / 10, .t_seen = at};
    ncs_enc_inflight(&t.w, &f);
    t.nrec++;
    clock_at(&t, at);
    tw_flush(&t, 0);
  }
  fclose(t.f);
  free(t.raw);
  /* rank 1: its heartbeat alone at 3.0 s, then cut */
  tw_open(&t, p1, 11, RT0 + 1 * S);
  head(&t, 1);
  steps(&t);
  clock_at(&t, 3 * S);
  tw_flush(&t, last_flags);
  fclose(t.f);
  free(t.raw);
  char *paths[2] = {p0, p1};
  struct ncs_hang *h = ncs_hang_new(2, paths, 0.5);
  unsigned kinds = 0;
  if (h && ncs_hang_read_all(h) == 0) {
    ncs_hang_finish(h);
    for (int i = 0; i < ncs_hang_nverdicts(h); i++) kinds |= 1u << ncs_hang_verdict_at(h, i)->kind;
  }
  ncs_hang_free(h);
  return kinds;
}

int main(void) {
  (void)tw_golden_rank;
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  /* the peer alive 2.5 s after rank 1's last heartbeat: over 2 x 0.5 s + 0.1 s, under 2 x 2 s + 0.1 s */
  unsigned busy = scenario("busy", 0, 55 * S / 10);
  CHECK(busy & (1u << NCS_HANG_DEAD), "hang idle: a trace cut after a chunk that is not idle, peer alive 2.5 s later: dead-rank (verdicts %#x)", busy);
  unsigned idle = scenario("idle", NCS_CHUNK_F_IDLE, 55 * S / 10);
  CHECK(!(idle & (1u << NCS_HANG_DEAD)), "hang idle: a trace cut after an idle heartbeat, peer alive 2.5 s later: no dead-rank (its next heartbeat may be 2 s away) (verdicts %#x)", idle);
  unsigned late = scenario("late", NCS_CHUNK_F_IDLE, 75 * S / 10);
  CHECK(late & (1u << NCS_HANG_DEAD), "hang idle: ... peer alive 4.5 s later (over 2 x 2 s + 0.1 s): dead-rank (verdicts %#x)", late);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  return check_done();
}
