/* test_kact.c — GPU-time figures (decoder/model/kact.c, docs/METRICS.md "GPU time") on
 * synthetic kernel activity with known answers, exactly: the run's partition (compute-only,
 * overlapped, exposed, idle), the same per step window, exposed time per operation, size and
 * position in the step, the single-start step, records that do not pair with calls, and a long
 * run (calls kept in kact's compact log across its blocks, more distinct sizes than its size
 * table holds, entry times that go back), calls further apart than a log word holds, and
 * KERNEL_STATUS off or a PROCESS of format 1.0 ending the call log; and two accumulators sharing one kernel store
 * (model/kstore.h, as gputime and whatif in report): the one that does not fill it gets the
 * same figures, and the store keeps its kernels (sorted, class and name) for its next reader. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/trace.h"
#include "model/kact.h"
#include "model/kstore.h"
#include "ncclscope/encode.h"
#include "ncclscope/nccl_abi.h"

static void kname(struct ncs_kact *k, uint32_t id, uint32_t cls, const char *name) {
  uint8_t b[512];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_name x = {.id = id, .kclass = cls};
  snprintf(x.name, sizeof x.name, "%s", name);
  ncs_enc_kernel_name_body(&w, &x);
  ncs_kact_add_raw(k, NCS_REC_KERNEL_NAME, b, w.len);
}
static void kern(struct ncs_kact *k, uint32_t cls, uint32_t name, uint64_t s, uint64_t e) {
  uint8_t b[128];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel x = {.kclass = cls, .start = s, .duration = e - s, .name = name};
  ncs_enc_kernel_body(&w, &x);
  ncs_kact_add_raw(k, NCS_REC_KERNEL, b, w.len);
}
static void status(struct ncs_kact *k, uint32_t state, const char *why) {
  uint8_t b[256];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_status x = {.t = 1, .state = state};
  snprintf(x.reason, sizeof x.reason, "%s", why);
  ncs_enc_kernel_status_body(&w, &x);
  ncs_kact_add_raw(k, NCS_REC_KERNEL_STATUS, b, w.len);
}
static void allreduce(struct ncs_kact *k, uint64_t t, uint64_t floats) {
  struct ncs_call c = {.op = NCS_OP_AllReduce, .count = floats, .datatype = ncclFloat32, .t_enter = t, .t_exit = t + 1};
  ncs_kact_add_calls(k, &c, 1);
}

/* Steps [100,200) and [200,300): compute [90,150) and [210,260); AllReduce kernels [140,170)
 * (call at 120, 4096 B), [175,185) (call at 130, 1024 B) and [250,320) (call at 230, 8192 B). */
static void feed(struct ncs_kact *k) {
  kname(k, 1, NCS_KCLASS_COMPUTE, "backward_kernel");
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  allreduce(k, 120, 1024);
  allreduce(k, 130, 256);
  allreduce(k, 230, 2048);
  kern(k, NCS_KCLASS_COMPUTE, 1, 90, 150);
  kern(k, NCS_KCLASS_NCCL, 2, 140, 170);
  kern(k, NCS_KCLASS_NCCL, 2, 175, 185);
  kern(k, NCS_KCLASS_COMPUTE, 1, 210, 260);
  kern(k, NCS_KCLASS_NCCL, 2, 250, 320);
}
static struct ncs_kact *scenario(void) {
  struct ncs_kact *k = ncs_kact_new();
  feed(k);
  return k;
}

int main(void) {
  struct ncs_kact_fig f;
  struct ncs_kact_step st[3];
  size_t nst = 99;
  const uint64_t t[3] = {100, 200, 300};
  struct ncs_kact *k = scenario();
  CHECK(ncs_kact_figures(k, &f, t, 3, st, &nst) == 0, "kact: figures computed");
  CHECK(f.have && f.kernels == 5 && f.nccl_kernels == 3, "kact: 5 kernels, 3 NCCL");
  CHECK(f.span_ns == 230 && f.compute_only_ns == 90 && f.overlapped_ns == 20 && f.exposed_ns == 90 && f.idle_ns == 30,
        "kact: run partition exact (span 230 = compute-only 90 + overlapped 20 + exposed 90 + idle 30): %llu %llu %llu %llu %llu",
        (unsigned long long)f.span_ns, (unsigned long long)f.compute_only_ns, (unsigned long long)f.overlapped_ns,
        (unsigned long long)f.exposed_ns, (unsigned long long)f.idle_ns);
  CHECK(nst == 2, "kact: 3 step starts make 2 complete steps (the last start opens none)");
  CHECK(st[0].start_ns == 100 && st[0].len_ns == 100 && st[0].compute_only_ns == 40 && st[0].overlapped_ns == 10 &&
        st[0].exposed_ns == 30 && st[0].idle_ns == 20,
        "kact: step 1 [100,200): compute-only 40, overlapped 10, exposed 30, idle 20 (work before the step left out)");
  CHECK(st[1].start_ns == 200 && st[1].len_ns == 100 && st[1].compute_only_ns == 40 && st[1].overlapped_ns == 10 &&
        st[1].exposed_ns == 40 && st[1].idle_ns == 10,
        "kact: step 2 [200,300): compute-only 40, overlapped 10, exposed 40 (cut at the window's end), idle 10");
  const struct ncs_kact_op *op = &f.op[0];
  CHECK(f.nops >= 1 && !strcmp(op->name, "AllReduce") && op->kernels == 3 && op->time_ns == 110 && op->exposed_ns == 90,
        "kact: AllReduce 3 kernels, 110 ns, exposed 90 ns (each kernel's length minus its overlap with compute)");
  CHECK(op->sized && op->size_kernels[13] == 1 && op->size_exposed_ns[13] == 20 && op->size_kernels[11] == 1 &&
        op->size_exposed_ns[11] == 10 && op->size_kernels[14] == 1 && op->size_exposed_ns[14] == 60,
        "kact: exposed per size: 4096 B 20 ns, 1024 B 10 ns, 8192 B 60 ns");
  CHECK(op->npos == 2 && op->pos_kernels[0] == 2 && op->pos_exposed_ns[0] == 80 && op->pos_time_ns[0] == 100 &&
        op->pos_bytes_min[0] == 4096 && op->pos_bytes_max[0] == 8192 && op->pos_kernels[1] == 1 &&
        op->pos_exposed_ns[1] == 10 && op->pos_bytes_min[1] == 1024,
        "kact: exposed per position in the step: #1 (4096-8192 B) 80 of 100 ns, #2 (1024 B) 10 ns");
  ncs_kact_free(k);

  /* one store, two readers: a fills it, b reads it; b's figures are the scenario's */
  {
    struct ncs_kstore ks = {0};
    struct ncs_kact *a = ncs_kact_new(), *b = ncs_kact_new();
    ncs_kact_share(a, &ks, 1);
    ncs_kact_share(b, &ks, 0);
    feed(a);
    feed(b); /* (its kernels are not appended again) */
    struct ncs_kact_fig fa, fb;
    CHECK(ks.n == 5 && ncs_kact_figures(a, &fa, t, 3, NULL, NULL) == 0 && ncs_kact_figures(b, &fb, t, 3, st, &nst) == 0,
          "kact: a shared store holds the 5 kernels once; both accumulators' figures computed");
    CHECK(fb.kernels == 5 && fb.nccl_kernels == 3 && fb.compute_only_ns == 90 && fb.overlapped_ns == 20 && fb.exposed_ns == 90 &&
          fb.idle_ns == 30 && nst == 2 && st[1].exposed_ns == 40 && fb.op[0].kernels == 3 && fb.op[0].exposed_ns == 90 &&
          fb.op[0].sized && fb.op[0].size_exposed_ns[14] == 60,
          "kact: the reader of a shared store gets the scenario's figures (partition, steps, per op and size)");
    int sorted = 1;
    for (size_t i = 1; i < ks.n; i++) sorted &= ks.k[i - 1].start <= ks.k[i].start;
    CHECK(sorted && ks.k[0].start == 90 && ks.k[0].end == 150 && ncs_ks_class(&ks.k[0]) == NCS_KCLASS_COMPUTE &&
          ncs_ks_name(&ks.k[0]) == 1 && ncs_ks_class(&ks.k[1]) == NCS_KCLASS_NCCL && ncs_ks_name(&ks.k[1]) == 2,
          "kact: the store is left sorted by start with each kernel's class and name, for its next reader");
    ncs_kact_free(a);
    ncs_kact_free(b);
    CHECK(ks.n == 5 && ks.k, "kact: freeing the accumulators leaves the shared store to its owner");
    ncs_kstore_free(&ks);
  }

  k = scenario();
  CHECK(ncs_kact_figures(k, &f, t, 1, st, &nst) == 0 && nst == 1 && st[0].start_ns == 100 && st[0].len_ns == 220 &&
        st[0].compute_only_ns == 80 && st[0].overlapped_ns == 20 && st[0].exposed_ns == 90 && st[0].idle_ns == 30,
        "kact: one step start: the step runs to the last kernel's end");
  ncs_kact_free(k);

  k = scenario();
  CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.exposed_ns == 90 && f.op[0].npos == 0,
        "kact: without steps the run's figures are the same and no positions are given");
  ncs_kact_free(k);

  /* every NCCL kernel is communication: the same run with 2.28's symmetric kernel (mangled, as
   * CUPTI names it) recorded as compute by a shim that did not know the name */
  k = ncs_kact_new();
  kname(k, 1, NCS_KCLASS_COMPUTE, "backward_kernel");
  kname(k, 2, NCS_KCLASS_COMPUTE, "_Z47ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f3220ncclSymkDevWorkArgs4K");
  allreduce(k, 120, 1024);
  allreduce(k, 130, 256);
  allreduce(k, 230, 2048);
  kern(k, NCS_KCLASS_COMPUTE, 1, 90, 150);
  kern(k, NCS_KCLASS_COMPUTE, 2, 140, 170);
  kern(k, NCS_KCLASS_COMPUTE, 2, 175, 185);
  kern(k, NCS_KCLASS_COMPUTE, 1, 210, 260);
  kern(k, NCS_KCLASS_COMPUTE, 2, 250, 320);
  CHECK(ncs_kact_figures(k, &f, t, 3, st, &nst) == 0 && f.nccl_kernels == 3 && f.compute_only_ns == 90 &&
        f.overlapped_ns == 20 && f.exposed_ns == 90 && f.nops >= 1 && !strcmp(f.op[0].name, "AllReduce") &&
        f.op[0].kernels == 3,
        "kact: symmetric kernels recorded as compute count as NCCL's AllReduce (3 kernels, exposed 90 ns as above)");
  ncs_kact_free(k);

  k = scenario();
  allreduce(k, 240, 16); /* a call with no kernel: calls and kernels no longer pair */
  CHECK(ncs_kact_figures(k, &f, t, 3, st, &nst) == 0 && !f.op[0].sized && f.op[0].npos == 0 && f.op[0].exposed_ns == 90,
        "kact: calls that do not pair one to one with kernels give no sizes and no positions");
  int empty = 1; /* (the sweep pairs them as the kernels start, then finds the counts differ) */
  for (int b = 0; b < NCS_KACT_BUCKETS; b++) empty &= !f.op[0].size_kernels[b] && !f.op[0].size_time_ns[b];
  for (int p = 0; p < NCS_KACT_POS; p++) empty &= !f.op[0].pos_kernels[p] && !f.op[0].pos_exposed_ns[p] && !f.op[0].pos_bytes_max[p];
  CHECK(empty, "kact: and nothing in their size and position tables");
  ncs_kact_free(k);

  /* kernels recorded out of start order ([50,60) before [10,20)): the store sorts them */
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  kern(k, NCS_KCLASS_NCCL, 2, 50, 60);
  kern(k, NCS_KCLASS_NCCL, 2, 10, 20);
  CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.first_ns == 10 && f.span_ns == 50 && f.exposed_ns == 20 &&
        f.idle_ns == 30, "kact: kernels out of order sorted: first 10, span 50 = exposed 20 + idle 30 (%llu %llu %llu %llu)",
        (unsigned long long)f.first_ns, (unsigned long long)f.span_ns, (unsigned long long)f.exposed_ns,
        (unsigned long long)f.idle_ns);
  ncs_kact_free(k);

  /* a kernel of no length pairs with its call too, in start order: [10,10) takes the first
   * call (4096 B, bucket 13, 0 ns), [20,30) the second (8192 B, bucket 14, 10 ns) */
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  allreduce(k, 5, 1024);
  allreduce(k, 15, 2048);
  kern(k, NCS_KCLASS_NCCL, 2, 10, 10);
  kern(k, NCS_KCLASS_NCCL, 2, 20, 30);
  CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.op[0].sized && f.op[0].kernels == 2 && f.nccl_kernels == 2 &&
        f.op[0].size_kernels[13] == 1 && f.op[0].size_time_ns[13] == 0 && f.op[0].size_kernels[14] == 1 &&
        f.op[0].size_time_ns[14] == 10 && f.op[0].size_exposed_ns[14] == 10 && f.exposed_ns == 10 && f.idle_ns == 10,
        "kact: a kernel of no length takes its call: 4096 B 0 ns, 8192 B 10 ns exposed, idle 10");
  ncs_kact_free(k);

  /* calls far apart (a gap longer than one log word holds, 24 bits of ns): the second call's
   * entry is exact, so it falls in the second step, first position */
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  allreduce(k, 100, 1024);
  allreduce(k, 100 + 30000000, 256);
  kern(k, NCS_KCLASS_NCCL, 2, 200, 260);
  kern(k, NCS_KCLASS_NCCL, 2, 30000200, 30000300);
  const uint64_t far[3] = {0, 20000000, 60000000};
  CHECK(ncs_kact_figures(k, &f, far, 3, st, &nst) == 0 && f.op[0].sized && f.op[0].npos == 1 &&
        f.op[0].pos_kernels[0] == 2 && f.op[0].pos_bytes_min[0] == 1024 && f.op[0].pos_bytes_max[0] == 4096,
        "kact: calls 30 ms apart: each the first of its step (1024 and 4096 B)");
  ncs_kact_free(k);

  /* KERNEL_STATUS off (or stood aside) before any KERNEL: calls are no longer kept; a kernel after all gets no
   * sizes. On: calls kept as without a status. */
  static const uint32_t states[] = {NCS_KSTATE_OFF, NCS_KSTATE_STOOD_ASIDE, NCS_KSTATE_ON};
  for (size_t si = 0; si < sizeof states / sizeof *states; si++) {
    uint32_t state = states[si];
    k = ncs_kact_new();
    allreduce(k, 50, 512);
    status(k, state, state == NCS_KSTATE_ON ? "CUPTI activity" : "NCCLSCOPE_KERNELS=0");
    allreduce(k, 100, 1024);
    kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    kern(k, NCS_KCLASS_NCCL, 2, 60, 90);
    kern(k, NCS_KCLASS_NCCL, 2, 200, 260);
    CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.state == (int)state && f.op[0].kernels == 2 &&
          f.op[0].sized == (state == NCS_KSTATE_ON) &&
          (state == NCS_KSTATE_ON ? f.op[0].size_kernels[12] == 1 && f.op[0].size_kernels[13] == 1 : 1),
          "kact: KERNEL_STATUS %s before any KERNEL: %s", state == NCS_KSTATE_ON ? "on" : state == NCS_KSTATE_OFF ? "off" : "stood aside",
          state == NCS_KSTATE_ON ? "calls kept, sizes given (2048 and 4096 B)" : "calls not kept, kernels after it get no sizes");
    ncs_kact_free(k);
  }

  /* PROCESS format 1.0 (no KERNEL record in such a file: `ncclscope synth`'s) before the calls:
   * none is kept, a kernel after all gets no size; 1.1 and no PROCESS value: calls kept. A
   * PROCESS of 1.0 after a KERNEL changes nothing. */
  for (int v = 0; v < 4; v++) {
    static const char *const ver[] = {"1.0", "1.1", NULL, "1.0"};
    struct ncs_kv kv[1] = {{"format_version", ver[v], ver[v] ? strlen(ver[v]) : 0}};
    struct ncs_process p = {.path = "x.ncs", .major = 1, .kv = kv, .nkv = ver[v] ? 1 : 0};
    k = ncs_kact_new();
    kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    if (v == 3) kern(k, NCS_KCLASS_NCCL, 2, 60, 90);
    ncs_kact_process(k, &p);
    allreduce(k, 50, 512);
    allreduce(k, 100, 1024);
    if (v != 3) kern(k, NCS_KCLASS_NCCL, 2, 60, 90);
    kern(k, NCS_KCLASS_NCCL, 2, 200, 260);
    int kept = v != 0;
    CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.op[0].kernels == 2 && f.op[0].sized == kept &&
          (kept ? f.op[0].size_kernels[12] == 1 && f.op[0].size_kernels[13] == 1 : f.op[0].size_kernels[12] == 0),
          "kact: PROCESS format_version %s%s: %s", ver[v] ? ver[v] : "(none)", v == 3 ? " after a KERNEL" : " before the calls",
          kept ? "calls kept, sizes given (2048 and 4096 B)" : "calls not kept, kernels after it get no sizes");
    ncs_kact_free(k);
  }
  k = ncs_kact_new();
  ncs_kact_process(k, NULL);
  allreduce(k, 50, 512);
  kern(k, NCS_KCLASS_NCCL, 2, 60, 90);
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CHECK(ncs_kact_figures(k, &f, NULL, 0, NULL, NULL) == 0 && f.op[0].sized && f.op[0].size_kernels[12] == 1,
        "kact: no PROCESS record given (NULL): calls kept");
  ncs_kact_free(k);

  /* a long run: N calls of sizes 4 x (1 + (i x 7919) % 6000) bytes, entries going back every
   * third call, each with its own NCCL kernel [100 i, 100 i + 50) and no compute; one step
   * start (0): positions #1..#31 one call each, #32+ the rest */
  enum { N = 70000, P = NCS_KACT_POS };
  static uint64_t want_k[NCS_KACT_BUCKETS];
  uint64_t pmin = UINT64_MAX, pmax = 0;
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  for (uint64_t i = 0; i < N; i++) {
    uint64_t floats = 1 + (i * 7919) % 6000, S = 4 * floats;
    allreduce(k, 1000 + i * 10 + (i % 3) * 25, floats);
    kern(k, NCS_KCLASS_NCCL, 2, 100 * i + 10, 100 * i + 60);
    int b = 64 - __builtin_clzll(S);
    want_k[b < NCS_KACT_BUCKETS ? b : NCS_KACT_BUCKETS - 1]++;
    if (i >= P - 1) { if (S < pmin) pmin = S; if (S > pmax) pmax = S; }
  }
  const uint64_t t0 = 0;
  CHECK(ncs_kact_figures(k, &f, &t0, 1, st, &nst) == 0 && f.op[0].sized && f.op[0].kernels == N,
        "kact: %d calls and kernels pair one to one", N);
  int same = 1;
  for (int b = 0; b < NCS_KACT_BUCKETS; b++)
    same &= f.op[0].size_kernels[b] == want_k[b] && f.op[0].size_exposed_ns[b] == 50 * want_k[b];
  CHECK(same, "kact: long run: kernels and exposed time per size bucket exact (%d calls, 6000 distinct sizes)", N);
  CHECK(f.op[0].npos == P && f.op[0].pos_kernels[0] == 1 && f.op[0].pos_bytes_min[0] == 4 &&
        f.op[0].pos_kernels[1] == 1 && f.op[0].pos_bytes_min[1] == 4 * (1 + 7919 % 6000) &&
        f.op[0].pos_kernels[P - 1] == N - (P - 1) && f.op[0].pos_bytes_min[P - 1] == pmin &&
        f.op[0].pos_bytes_max[P - 1] == pmax,
        "kact: long run: positions in the step and their sizes exact (#32+: %llu-%llu B)",
        (unsigned long long)pmin, (unsigned long long)pmax);
  ncs_kact_free(k);

  /* steps whose starts are calls' own entry times (as metrics' boundary calls give them): a call
   * at a start is the first of that step. Starts 1000 i (i = 0..S-1, S - 1 complete steps); step
   * i's calls at 1000 i (the boundary), then 1000 i + 300 and, in odd steps, 1000 i + 600; each
   * with its own NCCL kernel; the boundary call moves 4096 B, the others 1024 B; step 5 has no
   * call. By hand: #1 S - 2 kernels of 4096 B (the last start's call is in no step), #2 S - 2 of
   * 1024 B, #3 the odd steps below S - 1 but 5. Without step figures asked, no position at all. */
  enum { S = 9 };
  uint64_t starts[S];
  struct ncs_kact_step sst[S];
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  uint64_t want3 = 0;
  for (uint64_t i = 0; i < S; i++) {
    starts[i] = 1000 * i;
    for (uint64_t j = 0; i != 5 && j < (i % 2 ? 3u : 2u); j++) {
      allreduce(k, 1000 * i + 300 * j, j ? 256 : 1024);
      kern(k, NCS_KCLASS_NCCL, 2, 1000 * i + 300 * j + 10, 1000 * i + 300 * j + 20);
    }
    want3 += i % 2 && i < S - 1 && i != 5;
  }
  CHECK(ncs_kact_figures(k, &f, starts, S, sst, &nst) == 0 && nst == S - 1 && f.op[0].sized && f.op[0].npos == 3 &&
        f.op[0].pos_kernels[0] == S - 2 && f.op[0].pos_kernels[1] == S - 2 && f.op[0].pos_kernels[2] == want3 &&
        f.op[0].pos_bytes_min[0] == 4096 && f.op[0].pos_bytes_max[0] == 4096 && f.op[0].pos_bytes_max[1] == 1024,
        "kact: calls at the step starts open their steps: #1 %llu, #2 %llu, #3 %llu kernels (want %d, %d, %llu), #1 of 4096 B",
        (unsigned long long)f.op[0].pos_kernels[0], (unsigned long long)f.op[0].pos_kernels[1],
        (unsigned long long)f.op[0].pos_kernels[2], S - 2, S - 2, (unsigned long long)want3);
  ncs_kact_free(k);
  k = ncs_kact_new();
  kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  for (uint64_t i = 0; i < S; i++) {
    allreduce(k, 1000 * i, 256);
    kern(k, NCS_KCLASS_NCCL, 2, 1000 * i + 10, 1000 * i + 20);
  }
  CHECK(ncs_kact_figures(k, &f, starts, S, NULL, NULL) == 0 && f.op[0].sized && f.op[0].npos == 0 && !f.op[0].pos_kernels[0],
        "kact: without step figures asked, no position in the step");
  ncs_kact_free(k);

  /* chains of NCCL kernels that run alone (the sweep's run of kernels of one name after the
   * first: comm_chain), against a count by hand of each kernel and call: 3000 NCCL kernels in
   * runs of 1-5 of one name (AllReduce id 2, AllGather id 3), gaps of 0-3 ns, lengths 1-20 ns,
   * each with its call 3 ns before it (sizes of 5 values, 3 buckets); every 97th of no length,
   * every 131st followed by a compute kernel alone in its gap, every 173rd with the next, of
   * its name, starting 1 ns before its end (overlapped: no longer alone); step starts every 61 ns from 150. Truth: the
   * i-th NCCL kernel of an op takes the op's i-th call; its whole length is its exposed time
   * (no compute beside any); the run's exposed time the union of the NCCL kernels, idle what
   * no kernel covers; per window, the NCCL and compute kernels' overlaps with it (the first
   * kernels start before the first window; every 50th window has no length). */
  {
    enum { NK = 3000, NS = 1000 };
    static uint64_t ks_[NK], ke_[NK], ct_[NK], cs_[NK], st_[NS];
    static int op_[NK];
    static struct ncs_kact_step w_[NS];
    struct { uint64_t s, e; } comp[64];
    int ncomp = 0;
    static const uint64_t sizes[5] = {4096, 4096 * 3, 64, 100, 4096 * 2};
    k = ncs_kact_new();
    kname(k, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    kname(k, 3, NCS_KCLASS_NCCL, "ncclDevKernel_AllGather_RING_LL");
    kname(k, 1, NCS_KCLASS_COMPUTE, "backward_kernel");
    uint64_t cur = 100, seed = 12345;
    int name = 2, left = 0, ovl = 0; /* ovl: this kernel starts 1 ns before the last one's end, with its name */
    for (int i = 0; i < NK; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t r = seed >> 33;
      if (!left && !ovl) { name = 5 - name; left = 1 + (int)(r % 5); }
      if (left) left--;
      uint64_t len = i % 97 == 50 ? 0 : 1 + (r >> 5) % 20;
      ks_[i] = ovl ? cur : cur + (r >> 10) % 4;
      ke_[i] = ks_[i] + len;
      op_[i] = name;
      ct_[i] = ks_[i] - 3;
      cs_[i] = sizes[(r >> 14) % 5];
      struct ncs_call c = {.op = name == 2 ? NCS_OP_AllReduce : NCS_OP_AllGather, .count = cs_[i] / 4,
                           .datatype = ncclFloat32, .t_enter = ct_[i], .t_exit = ct_[i] + 1};
      ncs_kact_add_calls(k, &c, 1);
      kern(k, NCS_KCLASS_NCCL, (uint32_t)name, ks_[i], ke_[i]);
      ovl = i % 173 == 7 && len > 1; /* the next starts inside this one */
      cur = ovl ? ke_[i] - 1 : ke_[i];
      if (i % 131 == 9 && ncomp < 64) {
        comp[ncomp].s = ke_[i] + 1, comp[ncomp].e = ke_[i] + 8;
        kern(k, NCS_KCLASS_COMPUTE, 1, comp[ncomp].s, comp[ncomp].e);
        cur = comp[ncomp++].e + 1;
      }
    }
    for (int g = 0; g < NS; g++) st_[g] = g % 50 == 49 ? st_[g - 1] : 150 + 61 * (uint64_t)g; /* some windows of no length */
    uint64_t last_end = 0;
    for (int i = 0; i < NK; i++) if (ke_[i] > last_end) last_end = ke_[i];
    for (int c = 0; c < ncomp; c++) if (comp[c].e > last_end) last_end = comp[c].e;
    size_t nsg = 0;
    CHECK(ncs_kact_figures(k, &f, st_, NS, w_, &nsg) == 0 && nsg == NS - 1, "kact chains: figures computed");
    /* by hand: per op (slot by name), per size bucket and position */
    int ok = 1, oks = 1, okp = 1, okw = 1;
    for (int nm = 2; nm <= 3; nm++) {
      const char *want = nm == 2 ? "AllReduce" : "AllGather";
      const struct ncs_kact_op *op = NULL;
      for (int o = 0; o < f.nops; o++) if (!strcmp(f.op[o].name, want)) op = &f.op[o];
      uint64_t kn = 0, tm = 0, sk[NCS_KACT_BUCKETS] = {0}, stm[NCS_KACT_BUCKETS] = {0};
      uint64_t pk[NCS_KACT_POS] = {0}, ptm[NCS_KACT_POS] = {0}, pmin[NCS_KACT_POS] = {0}, pmax[NCS_KACT_POS] = {0};
      long lastg = -1, at = 0;
      int npos = 0;
      for (int i = 0; i < NK; i++) {
        if (op_[i] != nm) continue;
        uint64_t len = ke_[i] - ks_[i];
        kn++, tm += len;
        int b = 64 - __builtin_clzll(cs_[i]);
        sk[b]++, stm[b] += len;
        long g = -1;
        for (int j = 0; j < NS && st_[j] <= ct_[i]; j++) g = j;
        if (g < 0 || g >= NS - 1) continue;
        if (g != lastg) lastg = g, at = 0;
        int q = at < NCS_KACT_POS - 1 ? (int)at : NCS_KACT_POS - 1;
        at++;
        if (!pk[q] || cs_[i] < pmin[q]) pmin[q] = cs_[i];
        if (cs_[i] > pmax[q]) pmax[q] = cs_[i];
        pk[q]++, ptm[q] += len;
        if (q + 1 > npos) npos = q + 1;
      }
      ok &= op && op->sized && op->kernels == kn && op->time_ns == tm && op->exposed_ns == tm;
      for (int b = 0; op && b < NCS_KACT_BUCKETS; b++)
        oks &= op->size_kernels[b] == sk[b] && op->size_time_ns[b] == stm[b] && op->size_exposed_ns[b] == stm[b];
      okp &= op && op->npos == npos;
      for (int q = 0; op && q < NCS_KACT_POS; q++)
        okp &= op->pos_kernels[q] == pk[q] && op->pos_time_ns[q] == ptm[q] && op->pos_exposed_ns[q] == ptm[q] &&
               op->pos_bytes_min[q] == pmin[q] && op->pos_bytes_max[q] == pmax[q];
    }
    CHECK(ok, "kact chains: kernels, time and exposed time per operation exact");
    CHECK(oks, "kact chains: per size bucket exact");
    CHECK(okp, "kact chains: per position in the step exact");
    /* the partition: the union of the NCCL kernels (each overlap pair counted once), the
     * compute kernels, idle the rest of [first start, last end) */
    uint64_t uni = 0, uend = 0, comp_ns = 0;
    for (int i = 0; i < NK; i++) { /* kernels in start order; an overlap only with the one before */
      uint64_t s = ks_[i] > uend ? ks_[i] : uend;
      if (ke_[i] > s) uni += ke_[i] - s;
      if (ke_[i] > uend) uend = ke_[i];
    }
    for (int c = 0; c < ncomp; c++) comp_ns += comp[c].e - comp[c].s;
    CHECK(f.nccl_kernels == NK && f.kernels == NK + (uint64_t)ncomp && f.exposed_ns == uni && f.compute_only_ns == comp_ns &&
          f.overlapped_ns == 0 && f.idle_ns == last_end - ks_[0] - uni - comp_ns && f.span_ns == last_end - ks_[0],
          "kact chains: run partition exact (exposed %llu, want %llu; idle %llu)", (unsigned long long)f.exposed_ns,
          (unsigned long long)uni, (unsigned long long)f.idle_ns);
    for (size_t g = 0; g + 1 < NS; g++) {
      uint64_t a = st_[g], b = st_[g + 1], ex = 0, cp = 0, e2 = 0;
      for (int i = 0; i < NK; i++) { /* the union's part in [a, b) */
        uint64_t s = ks_[i] > e2 ? ks_[i] : e2, e = ke_[i];
        if (e > e2) e2 = e;
        if (s < a) s = a;
        if (e > b) e = b;
        if (e > s) ex += e - s;
      }
      for (int c = 0; c < ncomp; c++) {
        uint64_t s = comp[c].s < a ? a : comp[c].s, e = comp[c].e > b ? b : comp[c].e;
        if (e > s) cp += e - s;
      }
      okw &= w_[g].start_ns == a && w_[g].len_ns == b - a && w_[g].exposed_ns == ex && w_[g].compute_only_ns == cp &&
             w_[g].overlapped_ns == 0 && w_[g].idle_ns == b - a - ex - cp;
    }
    CHECK(okw, "kact chains: every step window's exposed, compute and idle time exact");
    ncs_kact_free(k);
  }
  return check_done();
}
