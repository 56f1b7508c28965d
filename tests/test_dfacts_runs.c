/* test_dfacts_runs.c — doctor_facts (decoder/analysis/doctor_facts.c) fed a run of calls at once
 * gives the same facts as fed one call at a time (the host window, the call count, the host
 * communication time), and that time is the union of the communication calls' host intervals,
 * computed here independently (every nanosecond marked): overlapping, nested and empty calls,
 * and several threads' calls interleaved out of order in the file (a rank per thread), where an
 * instant counts once and the share never passes 100 %; also with each thread's batch per
 * chunk far longer than the union's buffer (as at 1 M calls/s: model/ivunion.h), the chunk
 * ends told, and threads calling at different rates. */
#include <stdlib.h>
#include <string.h>

#include "analysis/doctor_facts.h"
#include "check.h"
#include "ncclscope/ops.h"

#define NCALLS 4096

/* The facts of x[0..n) fed in runs of `run` calls (1: one call at a time), finished. */
static struct ncs_dfacts *feed(const struct ncs_call *x, size_t n, size_t run) {
  struct ncs_dfacts *f = ncs_dfacts_new("t");
  struct ncs_mux m;
  memset(&m, 0, sizeof m);
  if (!f) return NULL;
  ncs_dfacts_attach(f, &m);
  for (size_t i = 0; i < n; i += run) m.v[0].calls(m.v[0].ctx, x + i, n - i < run ? n - i : run);
  ncs_dfacts_finish(f, 0, NULL);
  return f;
}

/* The same, in chunks of `chunk` calls, the visitor told each chunk's end. */
static struct ncs_dfacts *feed_chunks(const struct ncs_call *x, size_t n, size_t chunk) {
  struct ncs_dfacts *f = ncs_dfacts_new("t");
  struct ncs_mux m;
  memset(&m, 0, sizeof m);
  if (!f) return NULL;
  ncs_dfacts_attach(f, &m);
  for (size_t i = 0, k = 0; i < n; i += chunk, k++) {
    for (size_t j = i; j < i + chunk && j < n; j += 256) m.v[0].calls(m.v[0].ctx, x + j, (i + chunk < n ? i + chunk : n) - j < 256 ? (i + chunk < n ? i + chunk : n) - j : 256);
    m.v[0].chunk(m.v[0].ctx, k, 0, 0, 0);
  }
  ncs_dfacts_finish(f, 0, NULL);
  return f;
}

static int same_facts(const struct ncs_dfacts *a, const struct ncs_dfacts *b) {
  return a->ncalls == b->ncalls && a->t_first == b->t_first && a->t_last == b->t_last && a->comm_ns == b->comm_ns;
}

static struct ncs_call call(uint32_t op, uint32_t thread, uint64_t s, uint64_t e) {
  return (struct ncs_call){.op = op, .thread = thread, .datatype = 7, .root = -1, .t_enter = s, .t_exit = e};
}

/* The union's length by marking every nanosecond of every communication call (the truth). */
static double marked_union(const struct ncs_call *x, size_t n, uint64_t span) {
  unsigned char *mark = calloc(span, 1);
  double len = 0;
  if (!mark) return -1;
  for (size_t i = 0; i < n; i++) {
    int k = ncs_op_kind(x[i].op);
    if (k != NCS_KIND_COLL && k != NCS_KIND_P2P && x[i].op != NCS_OP_GroupEnd) continue;
    for (uint64_t t = x[i].t_enter; t < x[i].t_exit && t < span; t++) mark[t] = 1;
  }
  for (uint64_t t = 0; t < span; t++) len += mark[t];
  free(mark);
  return len;
}

static struct ncs_call x[NCALLS];

int main(void) {
  /* one thread: overlapping, nested, out-of-order, empty and non-communication calls */
  static const struct { uint32_t op; uint64_t s, e; } shape[] = {
    {NCS_OP_AllReduce, 1000, 1500}, {NCS_OP_AllReduce, 1200, 1400}, {NCS_OP_Send, 1450, 1700},
    {NCS_OP_CommInitRank, 50, 5000}, {NCS_OP_AllReduce, 2000, 2000}, {NCS_OP_Recv, 1900, 2100},
    {NCS_OP_GroupEnd, 2500, 2600}, {NCS_OP_AllGather, 800, 900}, {NCS_OP_AllReduce, 3000, 3100},
    {NCS_OP_Broadcast, 2950, 3050},
  };
  size_t ns = sizeof shape / sizeof *shape, n = 0;
  for (int rep = 0; rep < 4; rep++)
    for (size_t i = 0; i < ns; i++)
      x[n++] = call(shape[i].op, 1, shape[i].s + 10000 * (uint64_t)rep, shape[i].e + 10000 * (uint64_t)rep);
  struct ncs_dfacts *one = feed(x, n, 1), *run;
  double truth = marked_union(x, n, 50000);
  CHECK(one && one->comm_ns == truth, "dfacts: host communication time is the union of the intervals (%.0f, truth %.0f ns)",
        one ? one->comm_ns : -1, truth);
  int ok = one != NULL;
  for (size_t r = 2; ok && r <= n; r++) {
    run = feed(x, n, r);
    ok = run && same_facts(one, run);
    ncs_dfacts_free(run);
  }
  CHECK(ok, "dfacts: runs of 2..%zu calls give the same facts as call by call (host window, union, count)", n);
  ncs_dfacts_free(one);

  /* 2 to 8 threads of one process, each a rank making back-to-back collectives of its own
   * lengths, their records in the file a thread's batch after another's (as the writer drains
   * each thread's ring): intervals arrive out of time order, across the union's buffer too */
  for (uint32_t nt = 2; nt <= 8; nt++) {
    n = 0;
    uint64_t tnext[8] = {0};
    for (uint32_t t = 0; t < nt; t++) tnext[t] = 100 + 37 * t;
    while (n + nt * 16 <= NCALLS)
      for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 16; k++) {
          uint64_t len = 50 + (uint64_t)((t * 7 + (uint32_t)k * 13) % 40), gap = 30 + 10 * t;
          x[n++] = call(k % 2 ? NCS_OP_AllReduce : NCS_OP_Broadcast, t + 1, tnext[t], tnext[t] + len);
          tnext[t] += len + gap;
        }
    uint64_t span = 0;
    for (size_t i = 0; i < n; i++) span = x[i].t_exit > span ? x[i].t_exit : span;
    truth = marked_union(x, n, span + 1);
    one = feed(x, n, 1);
    run = feed(x, n, 64);
    double window = one ? (double)(one->t_last - one->t_first) : 0;
    CHECK(one && run && one->comm_ns == truth && run->comm_ns == truth && truth <= window,
          "dfacts: %u ranks on threads of one process, interleaved: the union counts an instant once (%.0f, truth %.0f ns, window %.0f)",
          nt, one ? one->comm_ns : -1, truth, window);
    ncs_dfacts_free(one);
    ncs_dfacts_free(run);
  }

  /* 2 and 4 threads, 12,000 calls each per chunk (three times the union's first buffer), a
   * thread's batch after another's, thread t calling with gaps of 30 + 25 t ns (their times
   * drift apart), 4 chunks */
  for (uint32_t nt = 2; nt <= 4; nt += 2) {
    size_t per = 12000, nc = 4, m = 0;
    struct ncs_call *y = malloc(nt * per * nc * sizeof *y);
    uint64_t tnext[4] = {0};
    if (!y) { CHECK(0, "dfacts: memory"); break; }
    for (uint32_t t = 0; t < nt; t++) tnext[t] = 100 + 37 * t;
    for (size_t c = 0; c < nc; c++)
      for (uint32_t t = 0; t < nt; t++)
        for (size_t k = 0; k < per; k++) {
          uint64_t len = 50 + (uint64_t)((t * 7 + (uint32_t)k * 13) % 40), gap = 30 + 25 * t;
          y[m++] = call(NCS_OP_AllReduce, t + 1, tnext[t], tnext[t] + len);
          tnext[t] += len + gap;
        }
    uint64_t span = 0;
    for (size_t i = 0; i < m; i++) span = y[i].t_exit > span ? y[i].t_exit : span;
    truth = marked_union(y, m, span + 1);
    one = feed_chunks(y, m, nt * per);
    CHECK(one && one->comm_ns == truth && one->comm_late == 0,
          "dfacts: %u threads' batches of %zu calls per chunk, drifting rates: the union is exact (%.0f, truth %.0f ns, %llu late)",
          nt, per, one ? one->comm_ns : -1, truth, one ? (unsigned long long)one->comm_late : 0ull);
    ncs_dfacts_free(one);
    free(y);
  }
  return check_done();
}
