/* overlap_job — a training loop whose compute and communication overlap by a known amount,
 * with its own measured truth, for the kernel-activity analysis (docs/METRICS.md, "GPU time").
 *
 * Usage (one process per rank, e.g. tests/jobs/launch.sh 2 overlap_job ...):
 *   overlap_job --mode serial|half|hidden|idle [--steps N] [--compute-us US] [--truth DIR]
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
 * Truth: every kernel is bracketed by CUDA events on its stream; after the run the job writes
 * DIR/truth-rank<R>.json with, summed over steps, the communication kernels' time (comm_ns),
 * its part outside any compute bracket (exposed_ns), inside one (overlapped_ns), the compute
 * brackets (compute_ns) and the host sleeps (idle_gap_ns). Brackets are measured on the run
 * itself (the double time-stamps an event when its worker reaches it, next to the kernel), so
 * they are the truth of this run whatever the machine's load; they can only be wider than the
 * kernel, by the worker's step between items.
 * --other-profiler: the job is itself a CUPTI client, as a framework profiler is (cuptiSubscribe,
 * its own activity buffers, CONCURRENT_KERNEL); it checks it received a record for every kernel
 * it launched and prints "other-profiler kernels: N" (stderr). Every result is checked; a wrong
 * value exits 1. */
#include <dlfcn.h>
#include <getopt.h>
#include <pthread.h>

#include "job_util.h"
#include "ncclscope/cupti_abi.h"

#define MAXK 8
struct bracket { cudaEvent_t a, b; int comm; };

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

static uint64_t ev_ns(cudaEvent_t base, cudaEvent_t e) {
  float ms = 0;
  CUCHK(cudaEventElapsedTime(&ms, base, e));
  return ms <= 0 ? 0 : (uint64_t)((double)ms * 1e6);
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
      idle = !strcmp(mode, "idle");
  JOBCHK(serial + half + hidden + idle == 1 && steps > 0 && compute_us > 0, "bad arguments");
  if (other_prof) prof_start();
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  job_unique_id(rank, world, "overlap", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t sc, sm;
  CUCHK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
  CUCHK(cudaStreamCreateWithFlags(&sm, cudaStreamNonBlocking));
  const size_t n = 1024;
  float *buf;
  CUCHK(cudaMalloc((void **)&buf, n * sizeof *buf));
  uint64_t cns = (uint64_t)(compute_us * 1e3);
  uint64_t comm_ns = 0, exposed_ns = 0, overlapped_ns = 0, compute_ns = 0, idle_ns = 0;
  long launched = 0;
  cudaEvent_t base, half_done;
  CUCHK(cudaEventCreate(&base));
  CUCHK(cudaEventCreateWithFlags(&half_done, cudaEventDisableTiming));
  struct bracket br[MAXK];
  for (int i = 0; i < MAXK; i++) { CUCHK(cudaEventCreate(&br[i].a)); CUCHK(cudaEventCreate(&br[i].b)); }
  for (int step = 0; step < steps; step++) {
    for (size_t i = 0; i < n; i++) buf[i] = (float)(rank + 1);
    int nb = 0;
    CUCHK(cudaEventRecord(base, sc));
    CUCHK(cudaStreamWaitEvent(sm, base, 0));
    cudaStream_t cs = serial || idle ? sm : sc; /* serial: everything on one stream */
#define KERNEL(stream, is_comm, launch) do { br[nb].comm = (is_comm); \
      CUCHK(cudaEventRecord(br[nb].a, stream)); launch; CUCHK(cudaEventRecord(br[nb].b, stream)); nb++; launched++; } while (0)
    if (half) {
      KERNEL(cs, 0, CUCHK(cudaDoubleLaunchKernel(cs, "job_forward_kernel", cns / 2)));
      CUCHK(cudaEventRecord(half_done, cs));
      CUCHK(cudaStreamWaitEvent(sm, half_done, 0));
      KERNEL(cs, 0, CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns - cns / 2)));
      KERNEL(sm, 1, NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, sm)));
    } else if (hidden) {
      KERNEL(sm, 1, NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, sm)));
      KERNEL(cs, 0, CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns)));
    } else {
      KERNEL(cs, 0, CUCHK(cudaDoubleLaunchKernel(cs, "job_backward_kernel", cns)));
      KERNEL(cs, 1, NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, cs)));
    }
#undef KERNEL
    CUCHK(cudaStreamSynchronize(sc));
    CUCHK(cudaStreamSynchronize(sm));
    for (size_t i = 0; i < n; i++)
      JOBCHK(buf[i] == (float)(world * (world + 1) / 2), "step %d: all-reduce result %g", step, (double)buf[i]);
    uint64_t a[MAXK], b[MAXK];
    for (int i = 0; i < nb; i++) { a[i] = ev_ns(base, br[i].a); b[i] = ev_ns(base, br[i].b); }
    for (int i = 0; i < nb; i++) {
      if (!br[i].comm) { compute_ns += b[i] - a[i]; continue; }
      uint64_t in = 0; /* compute brackets are on one stream: disjoint */
      for (int j = 0; j < nb; j++) {
        if (br[j].comm) continue;
        uint64_t lo = a[i] > a[j] ? a[i] : a[j], hi = b[i] < b[j] ? b[i] : b[j];
        if (hi > lo) in += hi - lo;
      }
      comm_ns += b[i] - a[i];
      overlapped_ns += in;
      exposed_ns += b[i] - a[i] - in;
    }
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
    JOBCHK(g_prof_kernels == launched && g_prof_nccl == steps, "the job's own profiler lost kernel records");
  }
  if (truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    fprintf(f, "{\"mode\": \"%s\", \"steps\": %d, \"comm_ns\": %llu, \"exposed_ns\": %llu, \"overlapped_ns\": %llu, "
               "\"compute_ns\": %llu, \"idle_gap_ns\": %llu}\n", mode, steps, (unsigned long long)comm_ns,
            (unsigned long long)exposed_ns, (unsigned long long)overlapped_ns, (unsigned long long)compute_ns,
            (unsigned long long)idle_ns);
    JOBCHK(fclose(f) == 0, "cannot write %s", path);
  }
  if (rank == 0) printf("overlap_job %s: %d steps done\n", mode, steps);
  return 0;
}
