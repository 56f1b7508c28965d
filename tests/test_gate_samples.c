/* test_gate_samples.c — the CI gate's communication-share blocks (analysis/gate_samples.h) of
 * one file whose calling threads' batches interleave as a trace holds them (each chunk: one
 * thread's calls of a time range, then the other's of the same range; the threads call at
 * different rates and lengths, and the times are negative at first: the job clock may start
 * after a call), against the exact union computed here (all intervals sorted at once, then
 * swept) cut at the 8 parts of the window. The window (80 ms from the first start to the last
 * end) makes the parts whole 1-ms fine blocks, so the gate's blocks are exact, not spread in
 * proportion. Batches of 6,000-7,000 calls, over the union's first buffer (4,096). Then a
 * thread that first appears after the union was committed past its interval's start: counted
 * late at the file's end (ncs_gsamples_done), and the block holding it lacks at most that.
 * Calls are handed in runs of 1 to 64 (ncs_gsamples_calls). Last, three files' calls of the
 * same 3,000 collectives, handed a file at a time in runs: one sample a collective, the call of
 * its rank chosen by the rule computed here (GPU-timed first, then least time, then the lowest
 * file), its start the earliest of its ranks'. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/gate_samples.h"
#include "base/mix.h"
#include "check.h"
#include "ncclscope/ops.h"

#define MS 1000000LL
#define T0 (-30 * MS) /* the window's start on the job clock */
#define NIV 60000

static int64_t iv[NIV][2];
static int niv;

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
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

/* Calls reach the gate in runs (ncs_gsamples_calls), as the loader hands them: of 1 to 64 calls,
 * the length cycling, each run ended early by a chunk's end. */
static struct ncs_jev held[64];
static int nheld, runlen = 1;
static void hand(struct ncs_gsamples *g) {
  if (nheld) ncs_gsamples_calls(g, 0, held, (size_t)nheld);
  nheld = 0;
  runlen = runlen % 64 + 1;
}
static void give(struct ncs_gsamples *g, uint32_t thread, int64_t s, int64_t e) {
  held[nheld++] = (struct ncs_jev){.c = &call[thread], .start = s, .end = e, .nranks = 1};
  if (nheld == runlen) hand(g);
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
    hand(g);
    m.v[0].chunk(m.v[0].ctx, k, 0, 0, 0);
  }
  give(g, 0, end - 1000, end); /* the window's last end */
  hand(g);
  ncs_gsamples_done(g, 0);
  return g;
}

#define NCOLL 3000
#define NF 3
static uint64_t lcg(uint64_t *x) { *x = *x * 6364136223846793005ull + 1442695040888963407ull; return *x >> 33; }
static void lined_up(void) {
  struct ncs_gsamples *g = ncs_gsamples_new(NF);
  struct ncs_mux m[NF];
  static int64_t st[NF][NCOLL], ns[NF][NCOLL];
  static int gpu[NF][NCOLL];
  static double bb[NF][NCOLL]; /* bus bytes */
  static struct ncs_call c[NF][NCOLL];
  uint64_t x = 42;
  for (int f = 0; f < NF; f++) {
    m[f] = (struct ncs_mux){0};
    ncs_gsamples_attach(g, f, &m[f]);
    for (int k = 0; k < NCOLL; k++) {
      st[f][k] = (int64_t)k * 1000000 + (int64_t)(lcg(&x) % 5000);
      ns[f][k] = 10000 + (int64_t)(lcg(&x) % 8) * 1000; /* ties are common */
      gpu[f][k] = lcg(&x) % 4 != 0;
      bb[f][k] = 1e4 * (1.0 + (double)(lcg(&x) % 1000));
      c[f][k] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = (uint64_t)k + 1};
    }
  }
  int runlen = 1;
  for (int f = 0; f < NF; f++) { /* one file after another, in runs */
    struct ncs_jev ev[64];
    for (int k = 0; k < NCOLL;) {
      int n = 0;
      for (; n < runlen && k < NCOLL; n++, k++)
        ev[n] = (struct ncs_jev){.c = &c[f][k], .start = st[f][k], .end = st[f][k] + ns[f][k], .has_gpu = gpu[f][k],
                                 .comm_id = 77, .busbytes = bb[f][k], .nranks = NF, .bucket = 5};
      ncs_gsamples_calls(g, f, ev, (size_t)n);
      runlen = runlen % 64 + 1;
      if (k % 500 == 0) m[f].v[0].chunk(m[f].v[0].ctx, 0, 0, 0, 0);
    }
    ncs_gsamples_done(g, f);
  }
  ncs_gsamples_finish(g);
  const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 5);
  int bad = 0;
  for (int k = 0; r && k < NCOLL && k < r->n; k++) { /* samples in time order: collective k's is the k-th */
    int b = 0;
    for (int f = 1; f < NF; f++)
      if ((gpu[f][k] && !gpu[b][k]) || (gpu[f][k] == gpu[b][k] && ns[f][k] < ns[b][k])) b = f;
    /* busbw GB/s: bus bytes over seconds, in GB (analysis/jobsum.h) */
    if (r->lt[k] != log((double)ns[b][k] / 1e3) || r->lbw[k] != log(bb[b][k] / ((double)ns[b][k] / 1e9) / 1e9)) bad++;
  }
  CHECK(r && r->n == NCOLL && r->seen == NCOLL && bad == 0,
        "3 files' calls of %d collectives in runs: one sample each, the rule's rank (%d samples, %llu offered, %d wrong)",
        NCOLL, r ? r->n : -1, r ? (unsigned long long)r->seen : 0ull, bad);
  ncs_gsamples_free(g);
}

/* Two communicators' collectives alternating call by call in every run of 3 files (a run's
 * calls switch rings at each call): each communicator's row (its own bucket) gets one sample a
 * collective, the quickest rank's time (ties: the lowest file), by hand. */
static void two_comms(void) {
  enum { NC = 1000 };
  struct ncs_gsamples *g = ncs_gsamples_new(NF);
  struct ncs_mux m[NF];
  static int64_t ns[NF][2][NC];
  static struct ncs_call c[NF][2][NC];
  uint64_t x = 9;
  for (int f = 0; f < NF; f++) {
    m[f] = (struct ncs_mux){0};
    ncs_gsamples_attach(g, f, &m[f]);
    for (int q = 0; q < 2; q++)
      for (int k = 0; k < NC; k++) {
        ns[f][q][k] = 10000 + (int64_t)(lcg(&x) % 50) * 100;
        c[f][q][k] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = (uint64_t)k + 1};
      }
  }
  int runlen = 1;
  for (int f = 0; f < NF; f++) {
    struct ncs_jev ev[64];
    for (int i = 0; i < 2 * NC;) {
      int n = 0;
      for (; n < runlen && i < 2 * NC; n++, i++) {
        int q = i % 2, k = i / 2;
        int64_t st = (int64_t)k * 1000000 + q * 500000;
        ev[n] = (struct ncs_jev){.c = &c[f][q][k], .start = st, .end = st + ns[f][q][k], .has_gpu = 1,
                                 .comm_id = q ? 88 : 77, .busbytes = 1e6, .nranks = NF, .bucket = 5 + q};
      }
      ncs_gsamples_calls(g, f, ev, (size_t)n);
      runlen = runlen % 64 + 1;
    }
    ncs_gsamples_done(g, f);
  }
  ncs_gsamples_finish(g);
  int bad = 0, nrow[2];
  for (int q = 0; q < 2; q++) {
    const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 5 + q);
    nrow[q] = r ? r->n : -1;
    for (int k = 0; r && k < NC && k < r->n; k++) {
      int64_t best = ns[0][q][k];
      for (int f = 1; f < NF; f++) best = ns[f][q][k] < best ? ns[f][q][k] : best;
      bad += r->lt[k] != log((double)best / 1e3);
    }
  }
  CHECK(nrow[0] == NC && nrow[1] == NC && bad == 0,
        "2 communicators' collectives alternating in every run: one sample each in its row (%d, %d samples of %d), the quickest rank's (%d wrong)",
        nrow[0], nrow[1], NC, bad);
  ncs_gsamples_free(g);
}

/* Calls that are their own samples (one-rank collectives), handed latest first: the row's
 * samples come out in time order all the same (ncs_gsamples_finish sorts a row that did not
 * arrive in order); the i-th is the call with the i-th earliest start, by hand. */
static void time_order(void) {
  enum { NC = 500 };
  struct ncs_gsamples *g = ncs_gsamples_new(1);
  struct ncs_mux m = {0};
  static struct ncs_call c[NC];
  ncs_gsamples_attach(g, 0, &m);
  for (int k = 0; k < NC;) {
    struct ncs_jev ev[7];
    int n = 0;
    for (; n < 7 && k < NC; n++, k++) { /* call k starts at (NC - k) ms and takes 1000 + k ns */
      c[k] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = (uint64_t)k + 1};
      ev[n] = (struct ncs_jev){.c = &c[k], .start = (int64_t)(NC - k) * MS, .end = (int64_t)(NC - k) * MS + 1000 + k,
                               .comm_id = 5, .busbytes = 2000.0, .nranks = 1, .bucket = 3};
    }
    ncs_gsamples_calls(g, 0, ev, (size_t)n);
  }
  ncs_gsamples_done(g, 0);
  ncs_gsamples_finish(g);
  const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 3);
  int bad = 0;
  for (int i = 0; r && i < r->n; i++) bad += r->lt[i] != log((double)(1000 + (NC - 1 - i)) / 1e3);
  CHECK(r && r->n == NC && bad == 0, "%d one-rank calls handed latest first: the row's samples in time order (%d samples, %d out of place)",
        NC, r ? r->n : -1, bad);
  ncs_gsamples_free(g);
}

/* Collectives whose ranks do not all line up, 3 files of one 3-rank communicator: where the
 * last file's call has another bucket (k % 10 == 3) or op (k % 10 == 5) it is a sample of its
 * own in its row, and the other two ranks' collective stays open to ncs_gsamples_finish; where
 * the last file has no call (k % 10 == 7), the same. Every collective is one sample of its
 * present, matching ranks' quickest call (GPU-timed first, then least time, then the lowest
 * file), at the earliest of their starts: the starts are spread over 3 ms a collective 1 ms
 * apart, so the samples' time order (the rows' order) is not the seqs'. By hand. */
static int64_t mm_st[NF][NCOLL], mm_ns[NF][NCOLL];
static int mm_gpu[NF][NCOLL];
static int64_t mm_key[NCOLL];
static int cmp_mm(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return mm_key[x] < mm_key[y] ? -1 : mm_key[x] > mm_key[y];
}
static void mismatched(void) {
  enum { NC = 600 };
  struct ncs_gsamples *g = ncs_gsamples_new(NF);
  struct ncs_mux m[NF];
  static struct ncs_call c[NF][NC];
  uint64_t x = 7;
  for (int f = 0; f < NF; f++) {
    m[f] = (struct ncs_mux){0};
    ncs_gsamples_attach(g, f, &m[f]);
    for (int k = 0; k < NC; k++) {
      mm_st[f][k] = (int64_t)k * MS + (int64_t)(lcg(&x) % (3 * MS)) + f; /* distinct: + f */
      mm_ns[f][k] = 20000 + (int64_t)(lcg(&x) % 6) * 1000;
      mm_gpu[f][k] = lcg(&x) % 3 != 0;
      c[f][k] = (struct ncs_call){.op = f == 2 && k % 10 == 5 ? NCS_OP_Broadcast : NCS_OP_AllReduce, .thread = 1,
                                  .seq = (uint64_t)k + 1};
    }
  }
  int runlen = 3;
  for (int f = 0; f < NF; f++) {
    struct ncs_jev ev[64];
    for (int k = 0; k < NC;) {
      int n = 0;
      for (; n < runlen && k < NC; k++) {
        if (f == 2 && k % 10 == 7) continue;
        ev[n++] = (struct ncs_jev){.c = &c[f][k], .start = mm_st[f][k], .end = mm_st[f][k] + mm_ns[f][k],
                                   .has_gpu = mm_gpu[f][k], .comm_id = 99, .busbytes = 1e6 * (1 + f), .nranks = NF,
                                   .bucket = f == 2 && k % 10 == 3 ? 6 : 5};
      }
      ncs_gsamples_calls(g, f, ev, (size_t)n);
      runlen = runlen % 64 + 1;
    }
    ncs_gsamples_done(g, f);
  }
  ncs_gsamples_finish(g);
  /* by hand: row (AllReduce, 5) one sample a collective; the others the odd calls */
  static int ord[NC];
  static double want_lt[NC], want_lbw[NC];
  for (int k = 0; k < NC; k++) {
    int odd = k % 10 == 3 || k % 10 == 5 || k % 10 == 7, nf = odd ? 2 : 3, b = 0;
    int64_t st = mm_st[0][k];
    for (int f = 1; f < nf; f++) {
      if ((mm_gpu[f][k] && !mm_gpu[b][k]) || (mm_gpu[f][k] == mm_gpu[b][k] && mm_ns[f][k] < mm_ns[b][k])) b = f;
      if (mm_st[f][k] < st) st = mm_st[f][k];
    }
    mm_key[k] = st; ord[k] = k;
    want_lt[k] = log((double)mm_ns[b][k] / 1e3);
    want_lbw[k] = log(1e6 * (1 + b) / ((double)mm_ns[b][k] / 1e9) / 1e9);
  }
  qsort(ord, NC, sizeof *ord, cmp_mm);
  const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 5);
  int bad = 0, moved = 0;
  for (int i = 0; r && i < NC && i < r->n; i++) {
    bad += r->lt[i] != want_lt[ord[i]] || r->lbw[i] != want_lbw[ord[i]];
    moved += ord[i] != i;
  }
  CHECK(r && r->n == NC && r->seen == NC && bad == 0 && moved > 0,
        "%d collectives, some with a rank of another bucket or op or none: one sample each of the matching ranks' quickest call at their earliest start (%d samples, %d wrong; %d not in seq order)",
        NC, r ? r->n : -1, bad, moved);
  const struct ncs_gs_row *rb = ncs_gsamples_row(g, NCS_OP_AllReduce, 6), *ro = ncs_gsamples_row(g, NCS_OP_Broadcast, 5);
  int badb = 0, bado = 0;
  for (int i = 0; rb && i < rb->n; i++) badb += rb->lt[i] != log((double)mm_ns[2][10 * i + 3] / 1e3);
  for (int i = 0; ro && i < ro->n; i++) bado += ro->lt[i] != log((double)mm_ns[2][10 * i + 5] / 1e3);
  CHECK(rb && rb->n == NC / 10 && ro && ro->n == NC / 10 && badb == 0 && bado == 0,
        "the calls of another bucket or op: a sample each in their own rows (%d and %d of %d, %d and %d wrong)",
        rb ? rb->n : -1, ro ? ro->n : -1, NC / 10, badb, bado);
  ncs_gsamples_free(g);
}

/* A row of more one-rank collectives than it keeps (NCS_GS_CAP), among calls that take an index
 * in their file but no sample (a collective of no bus bytes, a Send of no time) and calls that
 * take neither (GroupEnd, GroupSimulateEnd, CommRegister), in runs of 1 to 64: the row keeps the NCS_GS_CAP calls of smallest
 * hash of (file, index among the file's collective and point-to-point calls), in time order,
 * by hand. Then two files' Sends of the same seqs on a 2-rank communicator: each its own sample
 * (point-to-point calls are not lined up). */
#define OWN_N 20000
static uint64_t own_h[OWN_N];
static int cmp_own(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return own_h[x] < own_h[y] ? -1 : own_h[x] > own_h[y];
}
static void own_samples(void) {
  struct ncs_gsamples *g = ncs_gsamples_new(2);
  struct ncs_mux m[2] = {0};
  ncs_gsamples_attach(g, 0, &m[0]);
  ncs_gsamples_attach(g, 1, &m[1]);
  static struct ncs_call c[4 * OWN_N];
  static struct ncs_jev ev[4 * OWN_N];
  int nev = 0;
  uint64_t idx = 0;
  for (int i = 0; i < OWN_N; i++) {
    int64_t st = (int64_t)i * MS;
    if (i % 7 == 0) { /* no index */
      c[nev] = (struct ncs_call){.op = i % 3 ? 21 + i % 3 : 13, .thread = 1}; /* GroupEnd, GroupSimulateEnd, CommRegister */
      ev[nev] = (struct ncs_jev){.c = &c[nev], .start = st - 500, .end = st - 400};
      nev++;
    }
    if (i % 5 == 0) { /* an index, no sample: no bus bytes */
      c[nev] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = 1};
      ev[nev] = (struct ncs_jev){.c = &c[nev], .start = st - 300, .end = st - 200, .nranks = 1, .bucket = 4};
      nev++; idx++;
    }
    if (i % 11 == 0) { /* an index, no sample: no time */
      c[nev] = (struct ncs_call){.op = NCS_OP_Send, .thread = 1, .seq = 1};
      ev[nev] = (struct ncs_jev){.c = &c[nev], .start = st - 100, .end = st - 100, .busbytes = 8.0, .nranks = 2, .bucket = 4};
      nev++; idx++;
    }
    c[nev] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = 1};
    ev[nev] = (struct ncs_jev){.c = &c[nev], .start = st, .end = st + 1000 + i, .busbytes = 4096.0, .nranks = 1, .bucket = 4};
    nev++;
    own_h[i] = ncs_mix64(idx++); /* file 0: (0 << 40) ^ index */
  }
  for (int at = 0, runlen = 1; at < nev; at += runlen, runlen = runlen % 64 + 1)
    ncs_gsamples_calls(g, 0, ev + at, (size_t)(nev - at < runlen ? nev - at : runlen));
  static struct ncs_call sc[2][100];
  for (int f = 0; f < 2; f++) {
    struct ncs_jev se[100];
    for (int k = 0; k < 100; k++) {
      sc[f][k] = (struct ncs_call){.op = NCS_OP_Send, .thread = 1, .seq = (uint64_t)k + 1};
      se[k] = (struct ncs_jev){.c = &sc[f][k], .start = (int64_t)k * MS, .end = (int64_t)k * MS + 5000, .comm_id = 5,
                               .busbytes = 1000.0, .nranks = 2, .bucket = 2};
    }
    ncs_gsamples_calls(g, f, se, 100);
  }
  ncs_gsamples_done(g, 0);
  ncs_gsamples_done(g, 1);
  ncs_gsamples_finish(g);
  static int ord[OWN_N];
  for (int i = 0; i < OWN_N; i++) ord[i] = i;
  qsort(ord, OWN_N, sizeof *ord, cmp_own);
  qsort(ord, NCS_GS_CAP, sizeof *ord, cmp_int); /* the kept ones in time order (call i starts at i ms) */
  const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 4);
  int bad = 0;
  for (int i = 0; r && i < NCS_GS_CAP && i < r->n; i++) bad += r->lt[i] != log((double)(1000 + ord[i]) / 1e3);
  CHECK(r && r->n == NCS_GS_CAP && r->seen == OWN_N && bad == 0,
        "%d one-rank calls among calls of no sample: the %d of smallest hash of (file, index), in time order (%d kept, %llu offered, %d wrong)",
        OWN_N, NCS_GS_CAP, r ? r->n : -1, r ? (unsigned long long)r->seen : 0ull, bad);
  const struct ncs_gs_row *rs = ncs_gsamples_row(g, NCS_OP_Send, 2);
  CHECK(rs && rs->n == 200, "2 files' Sends of the same 100 seqs: each its own sample (%d of 200)", rs ? rs->n : -1);
  ncs_gsamples_free(g);
}

/* One 2-rank communicator's 1.2 M collectives, its two files' calls handed 65,536 at a time in
 * turn: the window (at most NCS_GS_OPEN seqs open) holds only the seqs one file is ahead, as a
 * collective leaves it when its last rank's call comes: every collective is one sample (a
 * window that kept them all would pass NCS_GS_OPEN and make calls samples of their own). */
static void window_bound(void) {
  enum { N = NCS_GS_OPEN + NCS_GS_OPEN / 8, STEP = 65536 };
  struct ncs_gsamples *g = ncs_gsamples_new(2);
  struct ncs_mux m[2] = {0};
  ncs_gsamples_attach(g, 0, &m[0]);
  ncs_gsamples_attach(g, 1, &m[1]);
  struct ncs_call *c = malloc((size_t)STEP * sizeof *c);
  struct ncs_jev *ev = malloc((size_t)STEP * sizeof *ev);
  for (int at = 0; c && ev && at < N; at += STEP)
    for (int f = 0; f < 2; f++) {
      int n = N - at < STEP ? N - at : STEP;
      for (int k = 0; k < n; k++) {
        int64_t st = (int64_t)(at + k) * 10000 + f;
        c[k] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .seq = (uint64_t)(at + k)};
        ev[k] = (struct ncs_jev){.c = &c[k], .start = st, .end = st + 3000 + f, .has_gpu = 1, .comm_id = 3,
                                 .busbytes = 1e5, .nranks = 2, .bucket = 7};
      }
      for (int k = 0; k < n; k += 64) ncs_gsamples_calls(g, f, ev + k, (size_t)(n - k < 64 ? n - k : 64));
    }
  ncs_gsamples_done(g, 0);
  ncs_gsamples_done(g, 1);
  ncs_gsamples_finish(g);
  const struct ncs_gs_row *r = ncs_gsamples_row(g, NCS_OP_AllReduce, 7);
  CHECK(r && r->seen == (uint64_t)N && r->n == NCS_GS_CAP,
        "%d collectives of 2 files handed %d at a time in turn: one sample each (%llu offered, %d kept)", N, STEP,
        r ? (unsigned long long)r->seen : 0ull, r ? r->n : -1);
  free(c); free(ev);
  ncs_gsamples_free(g);
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
  lined_up();
  two_comms();
  time_order();
  mismatched();
  own_samples();
  window_bound();
  return check_done();
}
