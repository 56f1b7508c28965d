/* test_gate_samples.c — the CI gate's communication-share blocks (analysis/gate_samples.h) of
 * one file whose calling threads' batches interleave as a trace holds them (each chunk: one
 * thread's calls of a time range, then the other's of the same range; the threads call at
 * different rates and lengths, and the times are negative at first: the job clock may start
 * after a call), against the exact union computed here (all intervals sorted at once, then
 * swept) cut at the 8 parts of the window. The window (80 ms from the first start to the last
 * end) makes the parts whole 1-ms fine blocks, so the gate's blocks are exact, not spread in
 * proportion. Batches of 6,000-7,000 calls, over the union's first buffer (4,096). Then a
 * thread that first appears after the union was committed past its interval's start: counted
 * late at the file's end (ncs_gsamples_done), and the block holding it lacks at most that. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/gate_samples.h"
#include "check.h"

#define MS 1000000LL
#define T0 (-30 * MS) /* the window's start on the job clock */
#define NIV 60000

static int64_t iv[NIV][2];
static int niv;

static int cmp_iv(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The exact union's share of part p (10 ms) in percent. */
static void exact_parts(double *part) {
  int64_t (*a)[2] = malloc((size_t)niv * sizeof *a);
  for (int i = 0; i < niv; i++) { a[i][0] = iv[i][0]; a[i][1] = iv[i][1]; }
  qsort(a, (size_t)niv, sizeof *a, cmp_iv);
  double ns[8] = {0};
  int64_t cs = a[0][0], ce = a[0][1];
  for (int i = 1; i <= niv; i++) {
    if (i < niv && a[i][0] <= ce) { if (a[i][1] > ce) ce = a[i][1]; continue; }
    for (int p = 0; p < 8; p++) { /* [cs, ce) over the parts */
      int64_t lo = T0 + p * 10 * MS, hi = lo + 10 * MS;
      int64_t s = cs > lo ? cs : lo, e = ce < hi ? ce : hi;
      if (e > s) ns[p] += (double)(e - s);
    }
    if (i < niv) { cs = a[i][0]; ce = a[i][1]; }
  }
  for (int p = 0; p < 8; p++) part[p] = 100.0 * ns[p] / (10.0 * MS);
  free(a);
}

static struct ncs_call call[4];

static void give(struct ncs_gsamples *g, uint32_t thread, int64_t s, int64_t e) {
  struct ncs_jev ev = {.c = &call[thread], .start = s, .end = e, .nranks = 1};
  ncs_gsamples_call(g, 0, &ev);
  iv[niv][0] = s; iv[niv][1] = e; niv++;
}

/* Two threads, chunks of `chunk_ms`; with `late`, a third thread's one interval in the last
 * chunk, starting at 1 ms into the window. Returns the gate. */
static struct ncs_gsamples *run(int chunk_ms, int late) {
  struct ncs_gsamples *g = ncs_gsamples_new(1);
  struct ncs_mux m = {0};
  ncs_gsamples_attach(g, 0, &m);
  niv = 0;
  for (uint32_t t = 0; t < 4; t++) call[t] = (struct ncs_call){.op = 24, .thread = t + 1, .seq = 1};
  int64_t end = T0 + 80 * MS;
  uint64_t k = 0;
  for (int64_t c0 = T0; c0 < end; c0 += chunk_ms * MS, k++) {
    int64_t c1 = c0 + chunk_ms * MS;
    for (int64_t s = c0; s < c1; s += 3000) give(g, 0, s, s + 1000 < end ? s + 1000 : end);
    for (int64_t s = c0 + 500; s + 1500 < c1; s += 3700) give(g, 1, s, s + 1500);
    if (late && c1 >= end) give(g, 2, T0 + MS + 1200, T0 + MS + 2800);
    m.v[0].chunk(m.v[0].ctx, k, 0, 0, 0);
  }
  give(g, 0, end - 1000, end); /* the window's last end */
  ncs_gsamples_done(g, 0);
  return g;
}

int main(void) {
  double want[8], *got = NULL;
  for (int chunk = 5; chunk <= 20; chunk += 15) {
    struct ncs_gsamples *g = run(chunk, 0);
    exact_parts(want);
    int n = ncs_gsamples_shares(g, &got), same = n == 8;
    for (int p = 0; same && p < 8; p++) same = fabs(got[p] - want[p]) < 1e-9;
    CHECK(same && g->late == 0 && g->forced == 0,
          "2 threads, %d-ms chunks (%d intervals): blocks %d, %.9f %.9f ... against %.9f %.9f ..., late %llu, forced %llu",
          chunk, niv, n, n > 1 ? got[0] : -1, n > 1 ? got[1] : -1, want[0], want[1], (unsigned long long)g->late,
          (unsigned long long)g->forced);
    free(got); got = NULL;
    ncs_gsamples_free(g);
  }
  struct ncs_gsamples *g = run(20, 1);
  exact_parts(want);
  int n = ncs_gsamples_shares(g, &got), rest = n == 8;
  for (int p = 1; rest && p < 8; p++) rest = fabs(got[p] - want[p]) < 1e-9;
  double lack = n == 8 ? (want[0] - got[0]) / 100.0 * 10.0 * MS : -1;
  CHECK(rest && g->late == 1 && lack >= -1e-6 && lack <= (double)g->late_ns + 1e-6,
        "a thread first seen after the union passed its interval: late %llu (%llu ns), block 0 lacks %.1f ns of the truth, the other blocks exact",
        (unsigned long long)g->late, (unsigned long long)g->late_ns, lack);
  free(got);
  ncs_gsamples_free(g);
  return check_done();
}
