/* test_replay.c — CUDA-graph replays (decoder/model/replay.c, docs/METRICS.md "Graph replays")
 * on synthetic records with known answers: a graph of two all-reduces of different sizes and an
 * all-gather replayed twice while an uncaptured all-reduce, entered on the host while the GPU
 * still runs the replays, has its kernel after them (its GPU interval claims its own kernel, not
 * the replay its host entry precedes); a replay beside that call's interval (the kernel it
 * overlaps most is its own); the replays' union minus the calls' intervals; the warm-up's cut;
 * a captured group (one kernel replays both members) and an uncaptured group's interval
 * claiming its kernel; a kernel nothing explains; and no kernel activity or no GPU timing:
 * nothing counted, and why. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/replay.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define US 1000ull /* times below in microseconds */

static void raw(struct ncs_replay *r, uint32_t type, const uint8_t *b, size_t len) {
  struct ncs_raw x = {type, b, len};
  ncs_replay_add_raw(r, &x);
}
static void kname(struct ncs_replay *r, uint32_t id, uint32_t cls, const char *name) {
  uint8_t b[512];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_name x = {.id = id, .kclass = cls};
  snprintf(x.name, sizeof x.name, "%s", name);
  ncs_enc_kernel_name_body(&w, &x);
  raw(r, NCS_REC_KERNEL_NAME, b, w.len);
}
static void kern_on(struct ncs_replay *r, uint32_t dev, uint32_t cls, uint32_t name, uint64_t s, uint64_t e) {
  uint8_t b[128];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel x = {.kclass = cls, .device = dev, .start = s * US, .duration = (e - s) * US, .name = name};
  ncs_enc_kernel_body(&w, &x);
  raw(r, NCS_REC_KERNEL, b, w.len);
}
static void kern(struct ncs_replay *r, uint32_t cls, uint32_t name, uint64_t s, uint64_t e) { kern_on(r, 0, cls, name, s, e); }
static void status(struct ncs_replay *r, uint32_t state) {
  uint8_t b[256];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  struct ncs_kernel_status x = {.t = 1, .state = state};
  snprintf(x.reason, sizeof x.reason, "test");
  ncs_enc_kernel_status_body(&w, &x);
  raw(r, NCS_REC_KERNEL_STATUS, b, w.len);
}
static void call_th(struct ncs_replay *r, uint32_t thread, uint32_t comm, uint32_t op, uint64_t count, uint64_t t, int captured,
                    uint32_t depth, uint64_t group) {
  struct ncs_call c = {.op = op, .thread = thread, .comm = comm, .count = count, .datatype = ncclFloat32, .t_enter = t * US,
                       .t_exit = t * US + 1, .flags = captured ? NCS_CALL_F_CAPTURED : 0, .depth = depth, .group = group};
  ncs_replay_calls(r, &c, 1);
}
static void call_on(struct ncs_replay *r, uint32_t comm, uint32_t op, uint64_t count, uint64_t t, int captured, uint32_t depth, uint64_t group) {
  call_th(r, 1, comm, op, count, t, captured, depth, group);
}
static void call(struct ncs_replay *r, uint32_t op, uint64_t count, uint64_t t, int captured, uint32_t depth, uint64_t group) {
  call_on(r, 1, op, count, t, captured, depth, group);
}
static void gpu(struct ncs_replay *r, uint32_t kind, uint64_t s, uint64_t e) {
  struct ncs_gpu_time g = {.kind = kind, .thread = 1, .gpu_start = s * US, .gpu_end = e * US};
  ncs_replay_gpu_times(r, &g, 1);
}

struct seen { int n; struct { uint32_t op, comm; uint64_t bytes, s, e; double S; } c[32]; };
static void on_call(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e) {
  struct seen *x = ctx;
  if (x->n < 32) { x->c[x->n].op = c->op; x->c[x->n].comm = c->comm; x->c[x->n].bytes = c->bytes; x->c[x->n].S = c->S; x->c[x->n].s = s / US; x->c[x->n].e = e / US; }
  x->n++;
}
struct pieces { int n; uint64_t p[8][2]; };
static void on_piece(void *ctx, uint64_t s, uint64_t e) {
  struct pieces *x = ctx;
  if (x->n < 8) { x->p[x->n][0] = s / US; x->p[x->n][1] = e / US; }
  x->n++;
}
static const struct ncs_replay_op *op_named(const struct ncs_replay_sum *s, const char *name) {
  for (int i = 0; i < s->nops; i++) if (!strcmp(s->op[i].name, name)) return &s->op[i];
  return NULL;
}

static void graph_of_three(void) {
  struct ncs_replay *r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  ncs_replay_comm(r, 1, 4, -1);
  kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  kname(r, 2, NCS_KCLASS_NCCL, "ncclDevKernel_AllGather_RING_LL");
  kname(r, 3, NCS_KCLASS_COMPUTE, "gemm");
  kname(r, 4, NCS_KCLASS_NCCL, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL");
  kern(r, NCS_KCLASS_COMPUTE, 3, 0, 50);
  call(r, NCS_OP_AllReduce, 2048, 100, 0, 0, 0);          /* uncaptured: its kernel [120, 190) */
  gpu(r, NCS_GPU_KIND_CALL, 110, 200);
  kern(r, NCS_KCLASS_NCCL, 1, 120, 190);
  call(r, NCS_OP_AllReduce, 256, 300, 1, 0, 0);           /* the graph: AR 1024 B, AR 4096 B, AG S 1024 */
  call(r, NCS_OP_AllReduce, 1024, 310, 1, 0, 0);
  call(r, NCS_OP_AllGather, 64, 320, 1, 0, 0);
  call(r, NCS_OP_AllReduce, 2048, 1050, 0, 0, 0);         /* entered while replay 1 runs; runs after both */
  gpu(r, NCS_GPU_KIND_CALL, 1740, 1900);
  uint64_t rep[6][3] = {{1, 1000, 1100}, {1, 1100, 1300}, {2, 1300, 1350}, {1, 1400, 1500}, {1, 1500, 1700}, {2, 1700, 1750}};
  for (int i = 0; i < 6; i++) kern(r, NCS_KCLASS_NCCL, (uint32_t)rep[i][0], rep[i][1], rep[i][2]);
  kern(r, NCS_KCLASS_NCCL, 1, 1770, 1890);                /* the call's own kernel */
  kern(r, NCS_KCLASS_NCCL, 4, 2000, 2010);                /* nothing explains it */
  struct ncs_replay_sum s;
  CHECK(ncs_replay_solve(r, &s) == 0 && s.counted && !s.why_not, "replay: kernel activity and GPU times: counted");
  CHECK(s.captured == 3 && s.kernels == 6 && s.calls == 6 && s.unexplained == 1,
        "replay: 3 captured calls, 6 replayed kernels and calls, the lone ReduceScatter kernel unexplained (got %llu %llu %llu %llu)",
        (unsigned long long)s.captured, (unsigned long long)s.kernels, (unsigned long long)s.calls, (unsigned long long)s.unexplained);
  const struct ncs_replay_op *ar = op_named(&s, "AllReduce"), *ag = op_named(&s, "AllGather");
  CHECK(ar && ar->captured == 2 && ar->elements == 2 && ar->kernels == 4 && ar->whole && !ar->sizes_exact,
        "replay: AllReduce: 2 captured of two sizes, 4 kernels, whole replays, sizes by capture order");
  CHECK(ag && ag->captured == 1 && ag->kernels == 2 && ag->whole && ag->sizes_exact, "replay: AllGather: 1 captured, 2 kernels, sizes exact");
  struct seen v = {0};
  ncs_replay_each(r, 0, on_call, &v);
  const uint64_t want[6][3] = {{1024, 1000, 1100}, {4096, 1100, 1300}, {256, 1300, 1350},
                               {1024, 1400, 1500}, {4096, 1500, 1700}, {256, 1700, 1750}};
  int ok = v.n == 6;
  for (int i = 0; ok && i < 6; i++)
    ok = v.c[i].bytes == want[i][0] && v.c[i].s == want[i][1] && v.c[i].e == want[i][2] &&
         v.c[i].op == (i % 3 == 2 ? NCS_OP_AllGather : NCS_OP_AllReduce);
  CHECK(ok, "replay: the replayed kernels take the graph's calls in capture order, cycling, with their kernels' times "
            "(the late call's host entry does not take a replay: its GPU interval claims its own kernel)");
  CHECK(v.n == 6 && v.c[2].S == 1024.0 && v.c[0].S == 1024.0 && v.c[1].S == 4096.0,
        "replay: S is nccl-tests' (AllGather: count x size x 4 ranks = 1024)");
  struct pieces p = {0};
  ncs_replay_extra(r, 0, on_piece, &p);
  CHECK(p.n == 2 && p.p[0][0] == 1000 && p.p[0][1] == 1350 && p.p[1][0] == 1400 && p.p[1][1] == 1740,
        "replay: the replays' union less the calls' GPU intervals: [1000,1350) and [1400,1740) (got %d pieces)", p.n);
  struct seen late = {0};
  ncs_replay_each(r, 1400 * US, on_call, &late);
  struct pieces pl = {0};
  ncs_replay_extra(r, 1400 * US, on_piece, &pl);
  CHECK(late.n == 3 && late.c[0].s == 1400 && pl.n == 1 && pl.p[0][0] == 1400 && pl.p[0][1] == 1740,
        "replay: from 1400 (the warm-up's end) only the second replay counts");
  ncs_replay_free(r);
}

static void groups(void) {
  struct ncs_replay *r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  ncs_replay_comm(r, 1, 2, -1);
  kname(r, 7, NCS_KCLASS_NCCL, "ncclDevKernel_SendRecv");
  call(r, NCS_OP_Send, 100, 10, 0, 1, 5);                 /* an uncaptured group: one kernel in its interval */
  call(r, NCS_OP_Recv, 100, 11, 0, 1, 5);
  gpu(r, NCS_GPU_KIND_GROUP, 20, 80);
  kern(r, NCS_KCLASS_NCCL, 7, 30, 70);
  call(r, NCS_OP_Send, 500, 100, 1, 1, 9);                /* a captured group of two members */
  call(r, NCS_OP_Recv, 500, 101, 1, 1, 9);
  for (int i = 0; i < 3; i++) kern(r, NCS_KCLASS_NCCL, 7, 200 + 100 * (uint64_t)i, 250 + 100 * (uint64_t)i);
  struct ncs_replay_sum s;
  ncs_replay_solve(r, &s);
  const struct ncs_replay_op *sr = op_named(&s, "SendRecv");
  CHECK(s.counted && s.kernels == 3 && s.calls == 6 && sr && sr->elements == 1 && sr->captured == 2 && sr->whole,
        "replay: a captured group is one element: 3 kernels replay 6 calls; the uncaptured group's interval claims its kernel");
  struct seen v = {0};
  ncs_replay_each(r, 0, on_call, &v);
  CHECK(v.n == 6 && v.c[0].op == NCS_OP_Send && v.c[1].op == NCS_OP_Recv && v.c[0].s == 200 && v.c[1].s == 200 &&
        v.c[0].bytes == 2000, "replay: each member of the group is replayed with the group's kernel");
  ncs_replay_free(r);
}

/* nccl-tests -G: a graph per size, replayed at once; an uncaptured call between ends a capture.
 * A captured group on two communicators (-g 2: two devices in one thread) launches a kernel on
 * each at every replay. */
static void captures_in_turn(void) {
  struct ncs_replay *r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  ncs_replay_comm(r, 1, 2, -1);
  ncs_replay_comm(r, 2, 2, -1);
  kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  call(r, NCS_OP_AllReduce, 256, 100, 1, 0, 0);           /* capture A: 1024 B */
  kern(r, NCS_KCLASS_NCCL, 1, 200, 250);
  kern(r, NCS_KCLASS_NCCL, 1, 300, 350);
  call(r, NCS_OP_AllReduce, 1024, 400, 0, 0, 0);          /* uncaptured: ends capture A */
  gpu(r, NCS_GPU_KIND_CALL, 410, 450);
  kern(r, NCS_KCLASS_NCCL, 1, 420, 440);
  call(r, NCS_OP_GroupStart, 0, 490, 0, 0, 0);            /* a captured group on comms 1 and 2: 4096 B */
  call_on(r, 1, NCS_OP_AllReduce, 1024, 500, 1, 1, 490);
  call_on(r, 2, NCS_OP_AllReduce, 1024, 501, 1, 1, 490);
  call(r, NCS_OP_GroupEnd, 0, 502, 0, 0, 490);
  for (uint64_t t = 600; t < 1000; t += 100) kern(r, NCS_KCLASS_NCCL, 1, t, t + 40);
  struct ncs_replay_sum s;
  ncs_replay_solve(r, &s);
  const struct ncs_replay_op *ar = op_named(&s, "AllReduce");
  CHECK(s.counted && s.kernels == 6 && s.calls == 6 && ar && ar->elements == 3 && ar->whole && !ar->sizes_exact,
        "replay: two captures: 3 elements (the group's one per communicator), 6 kernels, whole (got %llu kernels, %llu elements)",
        (unsigned long long)s.kernels, ar ? (unsigned long long)ar->elements : 0ull);
  struct seen v = {0};
  ncs_replay_each(r, 0, on_call, &v);
  int ok = v.n == 6 && v.c[0].bytes == 1024 && v.c[1].bytes == 1024;
  for (int i = 2; ok && i < 6; i++) ok = v.c[i].bytes == 4096;
  CHECK(ok, "replay: a kernel takes the calls of the latest capture begun before it (A's replays 1024 B, then the group's 4096 B)");
  ncs_replay_free(r);
}

/* nccl-tests -t 2 -G: two threads, each with its communicator on its own device, capture a
 * graph each (thread 2's begun after thread 1's) and launch them at once: every replayed kernel
 * belongs to the graph captured on its device, not to the latest capture of the process. */
static void threads_and_graphs(void) {
  struct ncs_replay *r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  ncs_replay_comm(r, 1, 2, 0);
  ncs_replay_comm(r, 2, 2, 1);
  kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  call_th(r, 1, 1, NCS_OP_AllReduce, 256, 50, 0, 0, 0);   /* an uncaptured call, timed on the GPU */
  gpu(r, NCS_GPU_KIND_CALL, 60, 90);
  kern_on(r, 0, NCS_KCLASS_NCCL, 1, 65, 85);
  call_th(r, 1, 1, NCS_OP_AllReduce, 256, 100, 1, 0, 0);  /* thread 1, device 0: 1024 B */
  call_th(r, 2, 2, NCS_OP_AllReduce, 1024, 150, 1, 0, 0); /* thread 2, device 1: 4096 B */
  for (uint64_t t = 200; t < 500; t += 100) {             /* 3 launches of each graph, interleaved */
    kern_on(r, 0, NCS_KCLASS_NCCL, 1, t, t + 40);
    kern_on(r, 1, NCS_KCLASS_NCCL, 1, t + 10, t + 50);
  }
  kern_on(r, 1, NCS_KCLASS_NCCL, 1, 120, 140);            /* before its device's capture began: unexplained */
  struct ncs_replay_sum s;
  ncs_replay_solve(r, &s);
  CHECK(s.counted && s.kernels == 6 && s.calls == 6 && s.unexplained == 1,
        "replay: two threads, two graphs on two devices: 6 kernels replayed, 1 unexplained (got %llu, %llu)",
        (unsigned long long)s.kernels, (unsigned long long)s.unexplained);
  struct seen v = {0};
  ncs_replay_each(r, 0, on_call, &v);
  int ok = v.n == 6;
  for (int i = 0; ok && i < 6; i++) ok = i % 2 ? v.c[i].comm == 2 && v.c[i].bytes == 4096 : v.c[i].comm == 1 && v.c[i].bytes == 1024;
  CHECK(ok, "replay: each kernel replays the capture of its device's communicator (device 0: comm 1, 1024 B; device 1: comm 2, 4096 B)");
  ncs_replay_free(r);
}

static void not_counted(void) {
  struct ncs_replay *r = ncs_replay_new();
  call(r, NCS_OP_AllReduce, 256, 300, 1, 0, 0);
  gpu(r, NCS_GPU_KIND_CALL, 110, 200);
  struct ncs_replay_sum s;
  ncs_replay_solve(r, &s);
  CHECK(!s.counted && s.captured == 1 && s.why_not && strstr(s.why_not, "kernel activity"),
        "replay: captured calls without kernel activity: not counted, and why");
  ncs_replay_free(r);
  r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  call(r, NCS_OP_AllReduce, 256, 300, 1, 0, 0);
  kern(r, NCS_KCLASS_NCCL, 1, 400, 500);
  ncs_replay_solve(r, &s);
  CHECK(!s.counted && s.why_not && strstr(s.why_not, "host"), "replay: no GPU times: not counted, and why");
  struct seen v = {0};
  ncs_replay_each(r, 0, on_call, &v);
  CHECK(v.n == 0, "replay: nothing is handed out when not counted");
  ncs_replay_free(r);
  r = ncs_replay_new();
  status(r, NCS_KSTATE_ON);
  kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  call(r, NCS_OP_AllReduce, 256, 100, 0, 0, 0);
  gpu(r, NCS_GPU_KIND_CALL, 110, 200);
  kern(r, NCS_KCLASS_NCCL, 1, 120, 190);
  ncs_replay_solve(r, &s);
  CHECK(!s.counted && !s.why_not && s.captured == 0, "replay: nothing captured: nothing to count, nothing to say");
  ncs_replay_free(r);
}

/* How many of n items a list that keeps its latest 4096 once it holds 8192 still holds (replay.h's
 * rule before the first capture, simulated by counting): the tests' truth. */
static size_t kept_before_capture(size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) { if (kept >= 8192) kept = 4096; kept++; }
  return kept;
}

/* The GPU windows kept before the first capture (replay.h: the latest 4096..8192): N windows,
 * 2 ms apart, then a capture, then a kernel on each window's interval. A kept window claims its
 * kernel; the kernels of the windows let go are replays. The truth: a list that, before each
 * window, keeps its latest 4096 once it holds 8192 (the rule, simulated here by counting). */
static void windows_before_capture(void) {
  static const size_t ns[] = {100, 8191, 8192, 8193, 12287, 12288, 12289, 16385, 20000};
  int ok = 1;
  char why[160] = "";
  for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
    size_t n = ns[t], kept = kept_before_capture(n);
    const uint64_t gap = 2000000, t0 = 1000; /* ns */
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .comm = 1, .count = 256, .datatype = ncclFloat32, .t_enter = 1,
                         .t_exit = 2, .flags = NCS_CALL_F_CAPTURED};
    struct ncs_replay *r = ncs_replay_new();
    status(r, NCS_KSTATE_ON);
    ncs_replay_comm(r, 1, 4, -1);
    kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    for (size_t i = 0; i < n; i++) {
      struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .gpu_start = t0 + i * gap, .gpu_end = t0 + i * gap + 500};
      ncs_replay_gpu_times(r, &g, 1);
    }
    ncs_replay_calls(r, &c, 1);
    for (size_t i = 0; i < n; i++) {
      struct ncs_kernel k = {.kclass = NCS_KCLASS_NCCL, .device = 0, .start = t0 + i * gap, .duration = 500, .name = 1};
      ncs_replay_add_kernels(r, &k, 1);
    }
    struct ncs_replay_sum s;
    int rc = ncs_replay_solve(r, &s);
    if (ok && (rc != 0 || !s.counted || s.kernels != n - kept)) {
      ok = 0;
      snprintf(why, sizeof why, "%zu windows: %llu kernels replayed, want %zu (%zu kept)", n, (unsigned long long)s.kernels,
               n - kept, kept);
    }
    ncs_replay_free(r);
  }
  CHECK(ok, "replay: the windows kept before the first capture are the latest 4096..8192 (100 to 20000 windows) %s", why);
}

/* The NCCL kernels kept before the first capture (replay.h: the latest 4096..8192, in a ring): N
 * NCCL kernels 2 ms apart, each after a compute kernel (never kept), handed over in runs of
 * mixed lengths (a reader's runs, and some one at a time through add_raw), then a capture, then
 * 3 kernels more. No GPU interval claims any: every kept kernel is a replay. The truth: the list
 * that keeps its latest 4096 once it holds 8192 (counted here), and which ones: the first
 * replayed kernel is the oldest kept. */
static void kernels_before_capture(void) {
  static const size_t ns[] = {100, 8191, 8192, 8193, 12287, 12288, 12289, 16385, 20000};
  int ok = 1;
  char why[200] = "";
  for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
    size_t n = ns[t], kept = kept_before_capture(n);
    const uint64_t gap = 2000, t0 = 5000; /* us: past the GPU interval's tolerance (1 ms) */
    struct ncs_replay *r = ncs_replay_new();
    status(r, NCS_KSTATE_ON);
    ncs_replay_comm(r, 1, 4, -1);
    kname(r, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    kname(r, 2, NCS_KCLASS_COMPUTE, "gemm");
    gpu(r, NCS_GPU_KIND_CALL, 1, 2); /* GPU timing seen; it claims no kernel */
    struct ncs_kernel run[2 * 300];
    size_t i = 0, len = 1;
    while (i < n) {
      if (len % 5 == 0) { /* one at a time, as add_raw decodes it */
        kern(r, NCS_KCLASS_COMPUTE, 2, t0 + i * gap - 5, t0 + i * gap - 4);
        kern(r, NCS_KCLASS_NCCL, 1, t0 + i * gap, t0 + i * gap + 1);
        i++;
      } else {
        size_t m = 0;
        for (; m < len && i < n; m++, i++) {
          run[2 * m] = (struct ncs_kernel){.kclass = NCS_KCLASS_COMPUTE, .start = (t0 + i * gap - 5) * US, .duration = US, .name = 2};
          run[2 * m + 1] = (struct ncs_kernel){.kclass = NCS_KCLASS_NCCL, .start = (t0 + i * gap) * US, .duration = US, .name = 1};
        }
        ncs_replay_add_kernels(r, run, 2 * m);
      }
      len = len * 7 % 300 + 1;
    }
    call(r, NCS_OP_AllReduce, 256, 1, 1, 0, 0); /* the capture, begun before every kernel */
    for (size_t j = 0; j < 3; j++) kern(r, NCS_KCLASS_NCCL, 1, t0 + (n + j) * gap, t0 + (n + j) * gap + 1);
    struct ncs_replay_sum s;
    int rc = ncs_replay_solve(r, &s);
    struct seen v = {0};
    ncs_replay_each(r, 0, on_call, &v);
    if (ok && (rc != 0 || !s.counted || s.kernels != kept + 3 || v.n != (int)(kept + 3) || v.c[0].s != t0 + (n - kept) * gap)) {
      ok = 0;
      snprintf(why, sizeof why, ": %zu kernels: %llu replayed (%d walked, the first at %llu us), want %zu from %llu us", n,
               (unsigned long long)s.kernels, v.n, (unsigned long long)v.c[0].s, kept + 3, (unsigned long long)(t0 + (n - kept) * gap));
    }
    ncs_replay_free(r);
  }
  CHECK(ok, "replay: the NCCL kernels kept before the first capture are the latest 4096..8192 (100 to 20000 kernels, in runs and one at a time)%s", why);
}

int main(void) {
  graph_of_three();
  groups();
  captures_in_turn();
  threads_and_graphs();
  not_counted();
  windows_before_capture();
  kernels_before_capture();
  return check_done();
}
