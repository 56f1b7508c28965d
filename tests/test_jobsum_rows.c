/* test_jobsum_rows.c — the job summary's per-rank rows (analysis/jobsum.c): a rank calling more
 * sizes than its row array first holds (16) has every call counted in its row, also the calls
 * of sizes seen before the array grew (the size memo keeps each size's row, moved with it).
 * The calls' events carry their communicator's id, rank and ranks (kept with each size), also
 * after a COMM record remade the communicator of sizes called before, and none for a call
 * without one; the rank's call counts and window (its collectives' first entry to last end, a
 * run of calls at a time) are those of its calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_trace_writer.h"
#include "analysis/jobsum.h"

enum { SIZES = 20, ROUNDS = 3 };

/* per tcall: the communicator its event must carry (comm_id 0: none) */
enum { NCALLS = SIZES * ROUNDS + 2 * SIZES + 2 };
static struct { uint64_t comm_id; int rank, nranks; } want[NCALLS + 1];
static int64_t want_first, want_last;
static uint64_t want_gpu;

static int write_trace(const char *path) {
  struct tw t;
  if (tw_open(&t, path, 1000, 1700000000000000000ull)) return -1;
  struct ncs_kv kv[] = {{"host", "node-a", 6}, {"pid", "1000", 4}, {"format_version", "1.0", 3}};
  tw_kv(&t, kv, sizeof kv / sizeof *kv);
  struct ncs_clock ck = {1700000000000000000ull, 1000000000ull, 40}; /* job time: monotonic - 1 s */
  tw_clock(&t, &ck);
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 0xabcdef12ull,
                        .t_enter = 1000100000ull, .t_exit = 1000200000ull, .rank = 0, .nranks = 2};
  tw_comm(&t, &cm);
  uint64_t now = 1001000000ull, n = 0;
  struct ncs_call gs = {.op = NCS_OP_GroupStart, .thread = 1, .t_enter = now - 500000, .t_exit = now - 400000};
  gs.tcall = ++n;
  tw_call(&t, &gs); /* no communicator, before every collective: not in the window */
  want[n].rank = -1;
  for (int r = 0; r < ROUNDS + 2; r++) {
    if (r == ROUNDS) { /* the communicator remade: the same sizes now of another (after two pairs: the calls
                          before it are released before its record is read) */
      for (int k = 1; k <= 2; k++) {
        struct ncs_clock p = {1700000000000000000ull + now + 1000ull * (uint64_t)k - 1000000000ull, now + 1000ull * (uint64_t)k, 40};
        tw_clock(&t, &p);
      }
      now += 10000;
      cm = (struct ncs_comm){.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 0x99ull,
                             .t_enter = now, .t_exit = now + 1000, .rank = 5, .nranks = 8};
      tw_comm(&t, &cm);
      now += 10000;
    }
    for (int i = 0; i < SIZES; i++) {
      n++;
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = n, .comm = 1, .seq = n, .datatype = 7, .root = -1,
                           .count = 1ull << (i + 4), .t_enter = now, .t_exit = now + 5000};
      tw_call(&t, &c);
      want[n].comm_id = cm.comm_id; want[n].rank = cm.rank; want[n].nranks = cm.nranks;
      if (!want_first) want_first = (int64_t)now - 1000000000;
      want_last = (int64_t)now + 5000 - 1000000000;
      if (n % 3 == 1) { /* GPU-timed (the last before the remake too: none waits for one): its GPU end, past its exit */
        struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = n, .gpu_start = now + 100, .gpu_end = now + 7000};
        tw_gpu_time(&t, &g);
        want_gpu++;
        want_last = (int64_t)now + 7000 - 1000000000;
      }
      now += 10000;
    }
  }
  gs.tcall = ++n;
  gs.t_enter = now + 500000; gs.t_exit = now + 600000;
  tw_call(&t, &gs); /* after every collective: not in the window */
  want[n].rank = -1;
  struct ncs_clock ck2 = {1700000000000000000ull + now + 1000000 - 1000000000ull, now + 1000000, 40};
  tw_clock(&t, &ck2);
  return tw_close(&t, 1);
}

/* Every call's event against want[] (on_file_calls: runs of one file's calls). */
static int ev_seen, ev_wrong;
static void ev_calls(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e, size_t n) {
  (void)ctx; (void)file; (void)r;
  for (size_t i = 0; i < n; i++, ev_seen++) {
    uint64_t k = e[i].c->tcall;
    if (k > NCALLS || e[i].comm_id != want[k].comm_id || e[i].rank != want[k].rank || e[i].nranks != want[k].nranks ||
        !e[i].transport || strcmp(e[i].transport, "?") != 0)
      ev_wrong++;
  }
}

int main(void) {
  (void)tw_golden_rank;
  char dir[] = "/tmp/ncs-test-jobsum-rows.XXXXXX", path[64];
  CHECK(mkdtemp(dir) != NULL, "jobsum_rows: a scratch directory");
  snprintf(path, sizeof path, "%s/r0.ncs", dir);
  CHECK(write_trace(path) == 0, "jobsum_rows: trace written");
  char *files[1] = {path};
  struct ncs_load_opts o = {.threads = 1};
  struct ncs_jobsum_events ev = {.on_file_calls = ev_calls};
  struct ncs_jobdata *J = NULL;
  int rc = ncs_jobsum_load(1, files, &o, &ev, &J);
  int rows = 0, right = 0;
  uint64_t calls = 0;
  const struct ncs_jrank *r = rc == 0 && J ? &J->r[0] : NULL;
  if (r) {
    rows = r->nops;
    for (int k = 0; k < r->nops; k++) {
      int remade = r->ops[k].comm_id == 0x99;
      right += r->ops[k].calls == (remade ? 2 : ROUNDS);
      calls += r->ops[k].calls;
    }
  }
  CHECK(rc == 0 && rows == 2 * SIZES && right == 2 * SIZES && calls == SIZES * (ROUNDS + 2),
        "jobsum_rows: %d sizes called %d times each, then twice on the communicator remade: %d rows, %d of them with every "
        "call (%llu calls)", SIZES, ROUNDS, rows, right, (unsigned long long)calls);
  CHECK(ev_seen == NCALLS && ev_wrong == 0,
        "jobsum_rows: each call's event carries its communicator's id, rank and ranks as made when it was called, none "
        "without one (%d events, %d wrong)", ev_seen, ev_wrong);
  CHECK(r && r->calls == NCALLS && r->gpu_calls == want_gpu && r->t_first == want_first && r->t_last == want_last,
        "jobsum_rows: the rank's calls (%llu), GPU-timed ones (%llu of %llu) and window (%lld .. %lld, want %lld .. %lld): "
        "its collectives' first entry to last end",
        r ? (unsigned long long)r->calls : 0ull, r ? (unsigned long long)r->gpu_calls : 0ull, (unsigned long long)want_gpu,
        r ? (long long)r->t_first : 0ll, r ? (long long)r->t_last : 0ll, (long long)want_first, (long long)want_last);
  ncs_job_free(J);
  unlink(path);
  rmdir(dir);
  return check_done();
}
