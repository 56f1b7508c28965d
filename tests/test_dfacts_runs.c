/* test_dfacts_runs.c — doctor_facts (decoder/analysis/doctor_facts.c) fed a run of calls at once
 * gives the same facts as fed one call at a time (the host window, the call count, the host
 * communication time), and that time is the union of the communication calls' host intervals,
 * computed here independently (every nanosecond marked): overlapping, nested and empty calls,
 * and several threads' calls interleaved out of order in the file (a rank per thread), where an
 * instant counts once and the share never passes 100 %; also with each thread's batch per
 * chunk far longer than the union's buffer (as at 1 M calls/s: model/ivunion.h), the chunk
 * ends told, and threads calling at different rates. Stretches (io/trace.h: a column chunk's
 * CALL and GPU_TIME records in one callback) give what the records one at a time give: a graph
 * captured and replayed twice (2 captured calls, 4 replayed: the capture comes within the
 * stretch, so its calls must reach the replay model in file order), and large collectives of
 * two threads whose GPU times follow them (one busbw sample each, the known median). With
 * busbw_unused (compare's), no sample from any path (a call, a run, a GPU time, a replay) and the
 * same unions and counts; a capture once GPU-timed with busbw_unused (its one-pass path) counts
 * the same replays. */
#include <stdlib.h>
#include <string.h>

#include "analysis/doctor_facts.h"
#include "check.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
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


/* ---- stretches ---- */
struct feedx { struct ncs_mux m; struct ncs_dfacts *f; };
static void fx_open(struct feedx *x) {
  memset(x, 0, sizeof *x);
  x->f = ncs_dfacts_new("t");
  ncs_dfacts_attach(x->f, &x->m);
}
static void fx_raw(struct feedx *x, uint32_t type, const uint8_t *b, size_t len) {
  struct ncs_raw r = {type, b, len};
  x->m.v[0].raw(x->m.v[0].ctx, &r);
}
static void fx_kact(struct feedx *x) {
  uint8_t b[512];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_status st = {.t = 1, .state = NCS_KSTATE_ON};
  snprintf(st.reason, sizeof st.reason, "test");
  ncs_enc_kernel_status_body(&w, &st);
  fx_raw(x, NCS_REC_KERNEL_STATUS, b, w.len);
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_name kn = {.id = 1, .kclass = NCS_KCLASS_NCCL};
  snprintf(kn.name, sizeof kn.name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  ncs_enc_kernel_name_body(&w, &kn);
  fx_raw(x, NCS_REC_KERNEL_NAME, b, w.len);
  struct ncs_comm c = {.comm = 1, .comm_id = 77, .rank = 0, .nranks = 4, .device = 0, .color = -1};
  x->m.v[0].comm(x->m.v[0].ctx, &c);
}
static void fx_kernel(struct feedx *x, uint64_t s, uint64_t e) {
  uint8_t b[128];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel k = {.kclass = NCS_KCLASS_NCCL, .device = 0, .start = s, .duration = e - s, .name = 1};
  ncs_enc_kernel_body(&w, &k);
  fx_raw(x, NCS_REC_KERNEL, b, w.len);
}
/* The stretch (c, g, order) to the visitor: whole (`stretch`), or record by record. */
static void fx_stretch(struct feedx *x, const struct ncs_call *c, size_t nc, const struct ncs_gpu_time *g, size_t ng,
                       const uint8_t *order, int whole) {
  if (whole) {
    struct ncs_stretch st = {c, g, nc, ng, order, NULL, 0};
    x->m.v[0].stretch(x->m.v[0].ctx, &st);
    return;
  }
  for (size_t i = 0; i < nc + ng; i++)
    if (order[i]) x->m.v[0].gpu_times(x->m.v[0].ctx, g++, 1);
    else x->m.v[0].calls(x->m.v[0].ctx, c++, 1);
}
#define US 1000ull
/* The captured graph's kernels, launched twice (two calls each): 1000-1300 and 1400-1700 us. */
static void fx_graph_twice(struct feedx *x) {
  fx_kernel(x, 1000 * US, 1100 * US);
  fx_kernel(x, 1100 * US, 1300 * US);
  fx_kernel(x, 1400 * US, 1500 * US);
  fx_kernel(x, 1500 * US, 1700 * US);
}
static struct ncs_call ccall(uint32_t thread, uint64_t tcall, uint64_t count, uint64_t t, int captured) {
  return (struct ncs_call){.op = NCS_OP_AllReduce, .thread = thread, .tcall = tcall, .comm = 1, .count = count,
                           .datatype = ncclFloat32, .root = -1, .t_enter = t * US, .t_exit = t * US + 1,
                           .flags = captured ? NCS_CALL_F_CAPTURED : 0};
}
static struct ncs_gpu_time cgpu(uint32_t thread, uint64_t ref, uint64_t s, uint64_t e) {
  return (struct ncs_gpu_time){.kind = NCS_GPU_KIND_CALL, .thread = thread, .ref = ref, .gpu_start = s * US, .gpu_end = e * US};
}

static void stretches(void) {
  /* a graph: an uncaptured all-reduce and its GPU time, then two captured all-reduces, then an
   * uncaptured one (ending the capture) and its GPU time, all one stretch; the graph's two
   * kernels run twice after it */
  struct ncs_call c[4] = {ccall(1, 1, 2048, 100, 0), ccall(1, 2, 256, 300, 1), ccall(1, 3, 1024, 310, 1), ccall(1, 4, 2048, 400, 0)};
  struct ncs_gpu_time g[2] = {cgpu(1, 1, 110, 200), cgpu(1, 4, 410, 500)};
  const uint8_t order[6] = {0, 1, 0, 0, 0, 1};
  struct ncs_replay_sum r[2];
  uint64_t ncalls[2];
  for (int whole = 0; whole < 2; whole++) {
    struct feedx x;
    fx_open(&x);
    fx_kact(&x);
    fx_stretch(&x, c, 4, g, 2, order, whole);
    fx_kernel(&x, 120 * US, 190 * US); /* the first call's own */
    fx_kernel(&x, 420 * US, 490 * US); /* the last call's own */
    fx_graph_twice(&x);
    ncs_dfacts_finish(x.f, 0, NULL);
    r[whole] = x.f->replays;
    ncalls[whole] = x.f->ncalls;
    ncs_dfacts_free(x.f);
  }
  CHECK(r[1].captured == 2 && r[1].counted && r[1].kernels == 4 && r[1].calls == 4 && ncalls[1] == 8,
        "dfacts: a stretch holding a capture: 2 captured calls, 4 replayed (%llu, %llu), 8 calls in all (%llu)",
        (unsigned long long)r[1].captured, (unsigned long long)r[1].calls, (unsigned long long)ncalls[1]);
  CHECK(r[0].captured == r[1].captured && r[0].calls == r[1].calls && r[0].kernels == r[1].kernels && ncalls[0] == ncalls[1],
        "dfacts: the same stretch record by record gives the same replays and count");

  /* large all-reduces (64 MiB) of two threads, each call's GPU time after the other thread's
   * next call, busbw known: thread t's call k takes (10 + k + 5 t) us on the GPU */
  enum { NB = 40 };
  struct ncs_call bc[NB];
  struct ncs_gpu_time bg[NB];
  uint8_t bo[2 * NB];
  size_t no = 0;
  for (int k = 0; k < NB; k++) {
    uint32_t t = 1 + (uint32_t)(k % 2);
    uint64_t t0 = 1000 + 100 * (uint64_t)k;
    bc[k] = ccall(t, 1 + (uint64_t)k / 2, 16ull << 20, t0, 0); /* 16 Mi floats: 64 MiB */
    bg[k] = cgpu(t, 1 + (uint64_t)k / 2, t0 + 2, t0 + 2 + 10 + (uint64_t)k / 2 + 5 * (t - 1));
  }
  for (int k = 0; k < NB; k++) { /* call 0, call 1, gpu 0, call 2, gpu 1, ... gpu NB-1 */
    bo[no++] = 0;
    if (k) bo[no++] = 1;
  }
  bo[no++] = 1;
  double med[2];
  int ns[2];
  for (int whole = 0; whole < 2; whole++) {
    struct feedx x;
    fx_open(&x);
    fx_kact(&x);
    fx_stretch(&x, bc, NB, bg, NB, bo, whole);
    ncs_dfacts_finish(x.f, 0, NULL);
    int gpu = 0;
    med[whole] = ncs_dfacts_busbw(x.f, &ns[whole], &gpu);
    if (!gpu) ns[whole] = -ns[whole];
    ncs_dfacts_free(x.f);
  }
  /* truth: busbw = 2 (n-1)/n x 64 MiB / time; the median (k/2-th smallest of NB) by sorting here */
  double bw[NB];
  for (int k = 0; k < NB; k++) bw[k] = 2.0 * 3 / 4 * (double)(64ull << 20) / (double)((bg[k].gpu_end - bg[k].gpu_start));
  for (int a = 1; a < NB; a++) for (int b = a; b > 0 && bw[b] < bw[b - 1]; b--) { double t = bw[b]; bw[b] = bw[b - 1]; bw[b - 1] = t; }
  CHECK(ns[1] == NB && med[1] == bw[NB / 2], "dfacts: a stretch of %d large collectives of two threads: %d GPU samples, median %.6g GB/s (truth %.6g)",
        NB, ns[1], med[1], bw[NB / 2]);
  CHECK(ns[0] == ns[1] && med[0] == med[1], "dfacts: the same stretch record by record gives the same samples");
}

/* busbw_unused (compare's): no bandwidth sample from any path (a call at a time, a run, a GPU
 * time, a graph's replays) while the other facts stay: checked against the samples taken
 * without it (counted here: every large call gives one) and the union computed here. */
static void unused_busbw(void) {
  enum { NB = 24 };
  struct ncs_call bc[NB];
  struct ncs_gpu_time bg[NB];
  uint8_t bo[2 * NB];
  double gpu_truth = 0;
  for (int k = 0; k < NB; k++) { /* 64 MiB all-reduces, each GPU time after its call, none overlapping */
    uint64_t t0 = 1000 + 100 * (uint64_t)k;
    bc[k] = ccall(1, 1 + (uint64_t)k, 16ull << 20, t0, 0);
    bg[k] = cgpu(1, 1 + (uint64_t)k, t0 + 2, t0 + 12 + (uint64_t)k);
    bo[2 * k] = 0;
    bo[2 * k + 1] = 1;
    gpu_truth += (double)(bg[k].gpu_end - bg[k].gpu_start);
  }
  double host_truth = marked_union(bc, NB, (1000 + 100 * NB + 1) * US);
  for (int unused = 0; unused < 2; unused++) {
    int host_ns[2], gpu_ns = 0, rep_ns = 0;
    double host_comm[2], gpu_comm = 0;
    uint64_t calls[2];
    for (int by_run = 0; by_run < 2; by_run++) { /* host-timed: a call at a time, then one run */
      struct feedx x;
      fx_open(&x);
      x.f->busbw_unused = unused;
      fx_kact(&x);
      if (by_run) x.m.v[0].calls(x.m.v[0].ctx, bc, NB);
      else for (int k = 0; k < NB; k++) x.m.v[0].calls(x.m.v[0].ctx, &bc[k], 1);
      ncs_dfacts_finish(x.f, 0, NULL);
      ncs_dfacts_busbw(x.f, &host_ns[by_run], NULL);
      host_comm[by_run] = x.f->comm_ns;
      calls[by_run] = x.f->ncalls;
      ncs_dfacts_free(x.f);
    }
    { /* GPU-timed: the stretch whole */
      struct feedx x;
      fx_open(&x);
      x.f->busbw_unused = unused;
      fx_kact(&x);
      fx_stretch(&x, bc, NB, bg, NB, bo, 1);
      ncs_dfacts_finish(x.f, 0, NULL);
      ncs_dfacts_busbw(x.f, &gpu_ns, NULL);
      gpu_comm = x.f->comm_ns;
      ncs_dfacts_free(x.f);
    }
    { /* a graph of two large captured all-reduces replayed twice, between two uncaptured ones */
      struct ncs_call c[4] = {ccall(1, 1, 16ull << 20, 100, 0), ccall(1, 2, 16ull << 20, 300, 1),
                              ccall(1, 3, 16ull << 20, 310, 1), ccall(1, 4, 16ull << 20, 400, 0)};
      struct ncs_gpu_time g[2] = {cgpu(1, 1, 110, 200), cgpu(1, 4, 410, 500)};
      const uint8_t order[6] = {0, 1, 0, 0, 0, 1};
      struct feedx x;
      fx_open(&x);
      x.f->busbw_unused = unused;
      fx_kact(&x);
      fx_stretch(&x, c, 4, g, 2, order, 1);
      fx_kernel(&x, 120 * US, 190 * US);
      fx_kernel(&x, 420 * US, 490 * US);
      fx_graph_twice(&x);
      ncs_dfacts_finish(x.f, 0, NULL);
      ncs_dfacts_busbw(x.f, &rep_ns, NULL);
      if (x.f->replays.calls != 4) rep_ns = -1;
      ncs_dfacts_free(x.f);
    }
    int want = unused ? 0 : NB;
    CHECK(host_ns[0] == want && host_ns[1] == want && gpu_ns == want && rep_ns == (unused ? 0 : 6),
          "dfacts: busbw_unused %d: %d samples host-timed a call at a time, %d in a run, %d GPU-timed, %d with 4 replayed "
          "calls (want %d, %d, %d, %d)", unused, host_ns[0], host_ns[1], gpu_ns, rep_ns, want, want, want, unused ? 0 : 6);
    CHECK(host_comm[0] == host_truth && host_comm[1] == host_truth && gpu_comm == gpu_truth && calls[0] == NB && calls[1] == NB,
          "dfacts: busbw_unused %d: the unions and counts stay (host %.0f / %.0f, truth %.0f; GPU %.0f, truth %.0f ns)", unused,
          host_comm[0], host_comm[1], host_truth, gpu_comm, gpu_truth);
  }
}

/* A capture in a stretch that comes once the file is GPU-timed, with busbw_unused (compare's
 * one-pass path, which must then take the stretch in file order): the graph's 4 replayed calls,
 * 9 calls in all, as record by record. */
static void capture_once_gpu_timed(void) {
  struct ncs_call c0[1] = {ccall(1, 1, 1024, 50, 0)};
  struct ncs_gpu_time g0[1] = {cgpu(1, 1, 55, 60)};
  const uint8_t o0[2] = {0, 1};
  struct ncs_call c[4] = {ccall(1, 2, 1024, 100, 0), ccall(1, 3, 1024, 300, 1), ccall(1, 4, 1024, 310, 1),
                          ccall(1, 5, 1024, 400, 0)};
  struct ncs_gpu_time g[2] = {cgpu(1, 2, 110, 200), cgpu(1, 5, 410, 500)};
  const uint8_t order[6] = {0, 1, 0, 0, 0, 1};
  uint64_t rep[2] = {0, 0}, calls[2] = {0, 0};
  for (int whole = 0; whole < 2; whole++) {
    struct feedx x;
    fx_open(&x);
    x.f->busbw_unused = 1;
    fx_kact(&x);
    fx_stretch(&x, c0, 1, g0, 1, o0, whole);
    fx_stretch(&x, c, 4, g, 2, order, whole);
    fx_kernel(&x, 56 * US, 59 * US);
    fx_kernel(&x, 120 * US, 190 * US);
    fx_kernel(&x, 420 * US, 490 * US);
    fx_graph_twice(&x);
    ncs_dfacts_finish(x.f, 0, NULL);
    rep[whole] = x.f->replays.calls;
    calls[whole] = x.f->ncalls;
    ncs_dfacts_free(x.f);
  }
  CHECK(rep[0] == 4 && rep[1] == 4 && calls[0] == 9 && calls[1] == 9,
        "dfacts: a capture once GPU-timed, busbw_unused: %llu / %llu replayed calls record by record / whole (want 4), "
        "%llu / %llu calls (want 9)", (unsigned long long)rep[0], (unsigned long long)rep[1], (unsigned long long)calls[0],
        (unsigned long long)calls[1]);
}

static struct ncs_call x[NCALLS];

/* GPU-timed stretches with busbw_unused (compare's: once GPU-timed, the calls go in one pass
 * and the GPU times in another) and without (record by record, in file order): 40 stretches of
 * two threads' calls (communication or not, entries out of order) and GPU times (overlapping,
 * one flagged spanning them all, one empty, some calls without) interleaved; the count, both windows and the GPU
 * union against the truth taken here (minima, maxima, every nanosecond of a valid GPU interval
 * marked). */
static void gpu_timed_stretches(void) {
  enum { NS = 40, PER = 12, SPAN = 400000 };
  static const uint32_t ops[4] = {NCS_OP_AllReduce, NCS_OP_Send, NCS_OP_CommInitRank, NCS_OP_GroupEnd};
  static struct ncs_call c[NS][PER];
  static struct ncs_gpu_time g[NS][PER];
  static uint8_t order[NS][2 * PER];
  size_t ng[NS];
  unsigned char *mark = calloc(SPAN, 1);
  if (!mark) { CHECK(0, "dfacts: memory"); return; }
  uint64_t x = 7, t_first = UINT64_MAX, t_last = 0, g_first = UINT64_MAX, g_last = 0;
  for (int k = 0; k < NS; k++) {
    size_t no = 0;
    ng[k] = 0;
    for (int i = 0; i < PER; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t base = 1000 + (uint64_t)k * 9000 + (uint64_t)i * 700, r = x >> 33;
      uint64_t s = base + r % 900, e = s + 200 + r % 1300; /* neighbours overlap now and then */
      int early = k == NS - 2 && i == 0; /* a late stretch holds the earliest entry and GPU start */
      if (early) { s = 900; e = 1500; }
      c[k][i] = (struct ncs_call){.op = ops[r % 4], .thread = 1 + (uint32_t)(r >> 8) % 2, .tcall = (uint64_t)i,
                                  .datatype = 7, .root = -1, .t_enter = early ? 500 : base + 5000 - r % 6000, .t_exit = base + 5100};
      order[k][no++] = 0;
      t_first = c[k][i].t_enter < t_first ? c[k][i].t_enter : t_first;
      t_last = c[k][i].t_exit > t_last ? c[k][i].t_exit : t_last;
      if ((r >> 12) % 5 == 0 && !(k == 3 && i == 2) && !(k == 5 && i == 4) && !early) continue; /* no GPU time */
      uint32_t flags = k == 3 && i == 2;
      if (flags) { s = 100; e = SPAN + 100; } /* flagged: outside every window */
      if (k == 5 && i == 4) e = s; /* empty */
      g[k][ng[k]++] = (struct ncs_gpu_time){.kind = NCS_GPU_KIND_CALL, .thread = c[k][i].thread, .ref = (uint64_t)i,
                                            .gpu_start = s, .gpu_end = e, .flags = flags};
      order[k][no++] = 1;
      if (flags || e <= s) continue;
      g_first = s < g_first ? s : g_first;
      g_last = e > g_last ? e : g_last;
      for (uint64_t t = s; t < e && t < SPAN; t++) mark[t] = 1;
    }
  }
  double truth = 0;
  for (int t = 0; t < SPAN; t++) truth += mark[t];
  free(mark);
  for (int unused = 0; unused < 2; unused++) {
    struct feedx fx;
    fx_open(&fx);
    fx.f->busbw_unused = unused;
    for (int k = 0; k < NS; k++) {
      fx_stretch(&fx, c[k], PER, g[k], ng[k], order[k], unused);
      fx.m.v[0].chunk(fx.m.v[0].ctx, (uint64_t)k, 0, 0, 0);
    }
    ncs_dfacts_finish(fx.f, 0, NULL);
    const struct ncs_dfacts *f = fx.f;
    CHECK(f->timing_gpu && f->ncalls == NS * PER && f->t_first == t_first && f->t_last == t_last && f->gpu_first == g_first &&
          f->gpu_last == g_last && f->comm_ns == truth,
          "dfacts: %d GPU-timed stretches %s: %llu calls (truth %d), windows %llu-%llu / %llu-%llu (truth %llu-%llu / "
          "%llu-%llu), GPU union %.0f ns (truth %.0f)", NS, unused ? "with busbw_unused, whole" : "record by record",
          (unsigned long long)f->ncalls, NS * PER, (unsigned long long)f->t_first, (unsigned long long)f->t_last,
          (unsigned long long)f->gpu_first, (unsigned long long)f->gpu_last, (unsigned long long)t_first,
          (unsigned long long)t_last, (unsigned long long)g_first, (unsigned long long)g_last, f->comm_ns, truth);
    ncs_dfacts_free(fx.f);
  }
}

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
  stretches();
  unused_busbw();
  gpu_timed_stretches();
  capture_once_gpu_timed();
  return check_done();
}
