/* overlap_job — a training loop whose compute and communication overlap by a known amount,
 * with its own measured truth, for the kernel-activity analysis (docs/METRICS.md, "GPU time").
 *
 * Usage (one process per rank, e.g. tests/jobs/launch.sh 2 overlap_job ...):
 *   overlap_job --mode serial|half|hidden|idle|ddp [--steps N] [--compute-us US] [--truth DIR]
 *               [--idle-us US] [--other-profiler]
 * Per step, one all-reduce of 1024 floats (its duration is the NCCL double's link model: set
 * NCCLDOUBLE_LAT_US) and COMPUTE-US of compute kernels (cudaDoubleLaunchKernel):
 *   serial  compute, then the all-reduce, on one stream: all communication exposed
 *   half    compute in two halves on a compute stream; the all-reduce starts on a
 *           communication stream after the first half, so about half of it (when it lasts
 *           about COMPUTE-US) runs beside the second half
 *   hidden  the all-reduce starts with the compute on its own stream (keep it shorter than
 *           COMPUTE-US): all of it hidden
 *   idle    serial, then the host sleeps IDLE-US (default COMPUTE-US) before the next step
 *           (GPU idle)
 *   ddp     DDP's shape: the backward pass in BUCKETS (4) chunks on the compute stream; when
 *           chunk k is done, bucket k's all-reduce (1024 floats each, all the same size, each
 *           from its own call site as DDP's buckets are told apart) starts on the
 *           communication stream: buckets 1-3 run beside the next chunk (hidden when the
 *           all-reduce is shorter than a chunk), the last one after the backward pass (exposed)
 * Truth: the job watches its own "GPU" (cudaDoubleSetTruthHook: the start and end each kernel,
 * copy and set really ran, as the stream workers time-stamped them, the same moments the CUPTI
 * double reports) and after the run writes DIR/truth-rank<R>.json with, over the whole run, the
 * span (first start to last end), NCCL kernels' union (comm_ns), the union of everything else
 * (compute_ns), their intersection (overlapped_ns), communication outside compute
 * (exposed_ns), compute outside communication (compute_only_ns), the union of both (busy_ns),
 * the span minus it (idle_ns), the kernels seen, and the host sleeps (idle_gap_ns); and every
 * interval in DIR/truth-rank<R>.iv ("start end nccl", one a line); and per position in the step
 * (the k-th all-reduce of a step; all steps but the last, whose boundary opens no complete
 * step) the NCCL kernels' time and their part outside compute (positions_time_ns,
 * positions_exposed_ns). It is what
 * happened in this run, whatever the machine's load; a tool reading kernel activity should get
 * the same figures up to its clock conversion.
 * --other-profiler: the job is itself a CUPTI client, as a framework profiler is (cuptiSubscribe,
 * its own activity buffers, CONCURRENT_KERNEL); it checks it received a record for every kernel
 * it launched and prints "other-profiler kernels: N" (stderr). Every result is checked; a wrong
 * value exits 1. */
#include <dlfcn.h>
#include <getopt.h>
#include <pthread.h>

#include "job_util.h"
#include "ncclscope/cupti_abi.h"

/* ---- the truth: every interval the "GPU" ran ---- */
struct iv { uint64_t s, e; };
static pthread_mutex_t g_truth_mu = PTHREAD_MUTEX_INITIALIZER;
static struct iv *g_iv[2];      /* [0] compute, copies, sets; [1] NCCL kernels */
static size_t g_niv[2], g_capiv[2];
static int g_truth_oom;
static void on_truth(const struct cudaDoubleActivity *a) {
  int c = a->kind == cudaDoubleActivityKernel && a->name && ncs_is_nccl_kernel(a->name);
  pthread_mutex_lock(&g_truth_mu);
  if (g_niv[c] == g_capiv[c]) {
    size_t cap = g_capiv[c] ? 2 * g_capiv[c] : 256;
    struct iv *p = realloc(g_iv[c], cap * sizeof *p);
    if (p) { g_iv[c] = p; g_capiv[c] = cap; }
  }
  if (g_niv[c] < g_capiv[c]) g_iv[c][g_niv[c]++] = (struct iv){a->start_ns, a->end_ns};
  else g_truth_oom = 1;
  pthread_mutex_unlock(&g_truth_mu);
}
static int cmp_iv(const void *x, const void *y) {
  const struct iv *a = x, *b = y;
  return a->s < b->s ? -1 : a->s > b->s;
}
/* Sorts and merges v[0..n) in place into disjoint intervals; returns their count. */
static size_t merge(struct iv *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_iv);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && v[i].s <= v[m - 1].e) { if (v[i].e > v[m - 1].e) v[m - 1].e = v[i].e; }
    else v[m++] = v[i];
  }
  return m;
}
static uint64_t total(const struct iv *v, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; i++) t += v[i].e - v[i].s;
  return t;
}
/* Length of the intersection of two sets of disjoint sorted intervals. */
static uint64_t meet(const struct iv *a, size_t na, const struct iv *b, size_t nb) {
  uint64_t t = 0;
  for (size_t i = 0, j = 0; i < na && j < nb;) {
    uint64_t lo = a[i].s > b[j].s ? a[i].s : b[j].s, hi = a[i].e < b[j].e ? a[i].e : b[j].e;
    if (hi > lo) t += hi - lo;
    if (a[i].e < b[j].e) i++; else j++;
  }
  return t;
}
#define BUCKETS 4
static void write_truth(const char *dir, int rank, const char *mode, int steps, int per_step, uint64_t idle_gap_ns) {
  pthread_mutex_lock(&g_truth_mu);
  size_t nk = g_niv[0] + g_niv[1];
  uint64_t first = UINT64_MAX, last = 0;
  for (int c = 0; c < 2; c++)
    for (size_t i = 0; i < g_niv[c]; i++) {
      if (g_iv[c][i].s < first) first = g_iv[c][i].s;
      if (g_iv[c][i].e > last) last = g_iv[c][i].e;
    }
  size_t nk1 = g_niv[1];
  char path[4096];
  snprintf(path, sizeof path, "%s/truth-rank%d.iv", dir, rank); /* every interval: start end nccl */
  FILE *f = fopen(path, "w");
  JOBCHK(f, "cannot write %s", path);
  for (int c = 0; c < 2; c++)
    for (size_t i = 0; i < g_niv[c]; i++)
      fprintf(f, "%llu %llu %d\n", (unsigned long long)g_iv[c][i].s, (unsigned long long)g_iv[c][i].e, c);
  JOBCHK(fclose(f) == 0, "cannot write %s", path);
  /* per position: NCCL kernels run one after another on one stream, so the i-th to start is
   * the i-th called: step i / per_step, position i % per_step */
  uint64_t pos_time[BUCKETS] = {0}, pos_exposed[BUCKETS] = {0};
  qsort(g_iv[1], g_niv[1], sizeof *g_iv[1], cmp_iv);
  size_t m0 = merge(g_iv[0], g_niv[0]);
  for (size_t i = 0; i < g_niv[1] && i < (size_t)(steps - 1) * (size_t)per_step; i++) {
    uint64_t len = g_iv[1][i].e - g_iv[1][i].s;
    pos_time[i % per_step] += len;
    pos_exposed[i % per_step] += len - meet(&g_iv[1][i], 1, g_iv[0], m0);
  }
  size_t m1 = merge(g_iv[1], g_niv[1]);
  uint64_t compute = total(g_iv[0], m0), comm = total(g_iv[1], m1), both = meet(g_iv[0], m0, g_iv[1], m1);
  uint64_t span = nk ? last - first : 0, busy = compute + comm - both;
  int oom = g_truth_oom;
  pthread_mutex_unlock(&g_truth_mu);
  JOBCHK(!oom, "out of memory recording the truth");
  snprintf(path, sizeof path, "%s/truth-rank%d.json", dir, rank);
  f = fopen(path, "w");
  JOBCHK(f, "cannot write %s", path);
  fprintf(f, "{\"mode\": \"%s\", \"steps\": %d, \"kernels\": %zu, \"nccl_kernels\": %zu, \"span_ns\": %llu, "
             "\"busy_ns\": %llu, \"compute_ns\": %llu, \"comm_ns\": %llu, \"overlapped_ns\": %llu, "
             "\"exposed_ns\": %llu, \"compute_only_ns\": %llu, \"idle_ns\": %llu, \"idle_gap_ns\": %llu",
          mode, steps, nk, nk1, (unsigned long long)span, (unsigned long long)busy,
          (unsigned long long)compute, (unsigned long long)comm, (unsigned long long)both,
          (unsigned long long)(comm - both), (unsigned long long)(compute - both),
          (unsigned long long)(span - busy), (unsigned long long)idle_gap_ns);
  for (int a = 0; a < 2; a++) {
    fprintf(f, ", \"positions_%s_ns\": [", a ? "exposed" : "time");
    for (int k = 0; k < per_step; k++) fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)(a ? pos_exposed[k] : pos_time[k]));
    fprintf(f, "]");
  }
  fprintf(f, "}\n");
  JOBCHK(fclose(f) == 0, "cannot write %s", path);
}

/* ---- ddp: one call site per bucket (not inlined, not a tail call), as DDP's reducer calls
 * differ by bucket; the same size for all ---- */
#define BUCKET_FN(k) \
  __attribute__((noinline)) static ncclResult_t bucket##k(float *b, size_t n, ncclComm_t c, cudaStream_t s) { \
    ncclResult_t r = ncclAllReduce(b, b, n, ncclFloat32, ncclSum, c, s); \
    __asm__ volatile("" ::: "memory"); \
    return r; \
  }
BUCKET_FN(0) BUCKET_FN(1) BUCKET_FN(2) BUCKET_FN(3)
static ncclResult_t (*const bucket_allreduce[BUCKETS])(float *, size_t, ncclComm_t, cudaStream_t) = {bucket0, bucket1, bucket2, bucket3};

/* ---- --other-profiler: a CUPTI client of the job's own ---- */
static _Atomic long g_prof_kernels, g_prof_nccl;
static void prof_requested(uint8_t **buf, size_t *size, size_t *maxr) {
  *size = 1 << 16;
  *buf = aligned_alloc(8, *size);
  *maxr = 0;
}
static ncs_cupti_result (*prof_next)(uint8_t *, size_t, ncs_cupti_activity_t **);
static void prof_completed(ncs_cupti_context c, uint32_t s, uint8_t *buf, size_t size, size_t valid) {
  ncs_cupti_activity_t *r = NULL;
  while (prof_next && prof_next(buf, valid, &r) == NCS_CUPTI_SUCCESS)
    if (r->kind == NCS_CUPTI_KIND_CONCURRENT_KERNEL) {
      g_prof_kernels++;
      if (ncs_is_nccl_kernel(((struct ncs_cupti_kernel *)r)->name)) g_prof_nccl++;
    }
  free(buf);
}
static ncs_cupti_result (*prof_flush)(uint32_t);
static void prof_start(void) {
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  JOBCHK(h, "libcupti.so.13: %s", dlerror());
  ncs_cupti_result (*sub)(ncs_cupti_subscriber *, ncs_cupti_callback_fn, void *) = (ncs_cupti_result (*)(ncs_cupti_subscriber *, ncs_cupti_callback_fn, void *))dlsym(h, "cuptiSubscribe");
  ncs_cupti_result (*reg)(ncs_cupti_buffer_requested_fn, ncs_cupti_buffer_completed_fn) = (ncs_cupti_result (*)(ncs_cupti_buffer_requested_fn, ncs_cupti_buffer_completed_fn))dlsym(h, "cuptiActivityRegisterCallbacks");
  ncs_cupti_result (*en)(ncs_cupti_kind) = (ncs_cupti_result (*)(ncs_cupti_kind))dlsym(h, "cuptiActivityEnable");
  prof_next = (ncs_cupti_result (*)(uint8_t *, size_t, ncs_cupti_activity_t **))dlsym(h, "cuptiActivityGetNextRecord");
  prof_flush = (ncs_cupti_result (*)(uint32_t))dlsym(h, "cuptiActivityFlushAll");
  JOBCHK(sub && reg && en && prof_next && prof_flush, "CUPTI entry points missing");
  ncs_cupti_subscriber s;
  JOBCHK(sub(&s, NULL, NULL) == NCS_CUPTI_SUCCESS, "the job's profiler could not subscribe to CUPTI");
  JOBCHK(reg(prof_requested, prof_completed) == NCS_CUPTI_SUCCESS, "cuptiActivityRegisterCallbacks");
  JOBCHK(en(NCS_CUPTI_KIND_CONCURRENT_KERNEL) == NCS_CUPTI_SUCCESS, "cuptiActivityEnable");
}

int main(int argc, char **argv) {
  int steps = 10, other_prof = 0;
  double compute_us = 4000, idle_us = -1;
  const char *mode = "serial", *truth = NULL;
  static const struct option opts[] = {{"mode", 1, 0, 'm'}, {"steps", 1, 0, 's'}, {"compute-us", 1, 0, 'c'},
                                        {"truth", 1, 0, 't'}, {"other-profiler", 0, 0, 'p'},
                                        {"idle-us", 1, 0, 'i'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'm': mode = optarg; break;
    case 's': steps = atoi(optarg); break;
    case 'c': compute_us = atof(optarg); break;
    case 't': truth = optarg; break;
    case 'p': other_prof = 1; break;
    case 'i': idle_us = atof(optarg); break;
    default: return 2;
    }
  }
  int serial = !strcmp(mode, "serial"), half = !strcmp(mode, "half"), hidden = !strcmp(mode, "hidden"),
      idle = !strcmp(mode, "idle"), ddp = !strcmp(mode, "ddp");
  JOBCHK(serial + half + hidden + idle + ddp == 1 && steps > 0 && compute_us > 0, "bad arguments");
  if (other_prof) prof_start();
  if (truth) cudaDoubleSetTruthHook(on_truth);
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  job_unique_id(rank, world, "overlap", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t sc, sm;
  CUCHK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
  CUCHK(cudaStreamCreateWithFlags(&sm, cudaStreamNonBlocking));
  const size_t n = 1024, nbuf = ddp ? BUCKETS * n : n;
  float *buf;
  CUCHK(cudaMalloc((void **)&buf, nbuf * sizeof *buf));
  cudaEvent_t chunk_done[BUCKETS];
  for (int k = 0; k < BUCKETS; k++) CUCHK(cudaEventCreateWithFlags(&chunk_done[k], cudaEventDisableTiming));
  uint64_t cns = (uint64_t)(compute_us * 1e3);
  uint64_t idle_ns = 0;
  long launched = 0;
  cudaEvent_t base, half_done;
  CUCHK(cudaEventCreateWithFlags(&base, cudaEventDisableTiming));
  CUCHK(cudaEventCreateWithFlags(&half_done, cudaEventDisableTiming));
  for (int step = 0; step < steps; step++) {
    for (size_t i = 0; i < nbuf; i++) buf[i] = (float)(rank + 1);
    CUCHK(cudaEventRecord(base, sc));
    CUCHK(cudaStreamWaitEvent(sm, base, 0));
    cudaStream_t cs = serial || idle ? sm : sc; /* serial: everything on one stream */
    if (ddp) {
      for (int k = 0; k < BUCKETS; k++) {
        CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns / BUCKETS));
        CUCHK(cudaEventRecord(chunk_done[k], cs));
        CUCHK(cudaStreamWaitEvent(sm, chunk_done[k], 0));
        NCCHK(bucket_allreduce[k](buf + (size_t)k * n, n, comm, sm));
      }
      launched += 2 * BUCKETS;
    } else if (half) {
      CUCHK(cudaDoubleLaunchKernel(cs, "job_forward_kernel", cns / 2));
      CUCHK(cudaEventRecord(half_done, cs));
      CUCHK(cudaStreamWaitEvent(sm, half_done, 0));
      CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns - cns / 2));
      NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, sm));
      launched += 3;
    } else if (hidden) {
      NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, sm));
      CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns));
      launched += 2;
    } else {
      CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns));
      NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, cs));
      launched += 2;
    }
    CUCHK(cudaStreamSynchronize(sc));
    CUCHK(cudaStreamSynchronize(sm));
    for (size_t i = 0; i < nbuf; i++)
      JOBCHK(buf[i] == (float)(world * (world + 1) / 2), "step %d: all-reduce result %g", step, (double)buf[i]);
    if (idle) {
      uint64_t t0 = job_now_ns();
      cudaDoubleSleepUntil(t0 + (uint64_t)((idle_us >= 0 ? idle_us : compute_us) * 1e3));
      idle_ns += job_now_ns() - t0;
    }
  }
  NCCHK(ncclCommDestroy(comm));
  if (other_prof) {
    JOBCHK(prof_flush(NCS_CUPTI_FLUSH_FORCED) == NCS_CUPTI_SUCCESS, "cuptiActivityFlushAll");
    fprintf(stderr, "other-profiler kernels: %ld (nccl %ld) of %ld launched\n", (long)g_prof_kernels,
            (long)g_prof_nccl, launched);
    JOBCHK(g_prof_kernels == launched && g_prof_nccl == steps * (ddp ? BUCKETS : 1), "the job's own profiler lost kernel records");
  }
  if (truth) write_truth(truth, rank, mode, steps, ddp ? BUCKETS : 1, idle_ns);
  for (int k = 0; k < BUCKETS; k++) CUCHK(cudaEventDestroy(chunk_done[k]));
  CUCHK(cudaEventDestroy(base));
  CUCHK(cudaEventDestroy(half_done));
  CUCHK(cudaFree(buf));
  CUCHK(cudaStreamDestroy(sc));
  CUCHK(cudaStreamDestroy(sm));
  if (rank == 0) printf("overlap_job %s: %d steps done\n", mode, steps);
  return 0;
}
