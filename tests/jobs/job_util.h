/* job_util.h — what the test jobs share: launcher variables, unique-id rendezvous through a
 * file, and checking macros that exit non-zero with a message naming the failed call.
 *
 * Contract: header-only (each job is one .c file). The launcher (tests/jobs/launch.sh) sets
 * RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and NCCLDOUBLE_RDZV (a directory); rank 0
 * writes each unique id there as <tag>.id (write + rename, so readers never see half a file),
 * the other ranks poll for it. Messages go to stderr so stdout stays deterministic.
 * The start line (job_start_line_*) lines the ranks' GPUs up on one device time. */
#ifndef NCCLSCOPE_JOB_UTIL_H
#define NCCLSCOPE_JOB_UTIL_H
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclscope/nccl_abi.h"
#include "include/cuda_double.h"

#define NCCLSCOPE_DECLARE_(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(NCCLSCOPE_DECLARE_)
#undef NCCLSCOPE_DECLARE_

#define NCCHK(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { \
    fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, (int)r_, \
            ncclGetErrorString(r_)); exit(1); } } while (0)
#define CUCHK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, (int)e_, \
            cudaGetErrorString(e_)); exit(1); } } while (0)
#define JOBCHK(cond, ...) do { if (!(cond)) { fprintf(stderr, "%s:%d: check failed: ", __FILE__, \
    __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static inline int job_env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* Rank 0 makes the id and publishes it as DIR/tag.id; others wait for it (up to 60 s). */
static inline void job_unique_id(int rank, int world, const char *tag, ncclUniqueId *id) {
  if (world == 1) { NCCHK(ncclGetUniqueId(id)); return; }
  const char *dir = getenv("NCCLDOUBLE_RDZV");
  JOBCHK(dir && *dir, "NCCLDOUBLE_RDZV is not set (run through tests/jobs/launch.sh)");
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s.id", dir, tag);
  if (rank == 0) {
    NCCHK(ncclGetUniqueId(id));
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    JOBCHK(f && fwrite(id, sizeof *id, 1, f) == 1 && fclose(f) == 0, "cannot write %s", tmp);
    JOBCHK(rename(tmp, path) == 0, "cannot rename %s", tmp);
    return;
  }
  for (int i = 0; i < 60000; i++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  JOBCHK(0, "timed out waiting for %s", path);
}

static inline uint64_t job_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The start line: job_start_line_arm() puts a host function on `stream` that holds it; the job
 * then queues work behind it and calls job_start_line_go(). The held stream then waits for every
 * rank to have gone (a file DIR/<tag>.<rank> with the host time of its go, in the rendezvous
 * directory; one rank alone needs none) and resumes, on every rank, at the device time of the
 * latest go (cudaDoubleItemEndAt from a host function: a double-only extra). Everything queued
 * before go was enqueued before that time, so from there the GPUs' schedule depends on the
 * model alone, not on when each host got its work queued: GPU figures are the same whatever
 * the machine's load. Give up waiting for the others after 60 s (resume at this rank's go). */
struct job_start_line {
  _Atomic uint64_t go_ns; /* 0 until job_start_line_go */
  int rank, world;
  char tag[64];
};

static inline void job_start_line_wait(void *arg) {
  struct job_start_line *l = arg;
  uint64_t go;
  struct timespec nap = {0, 200000};
  while (!(go = atomic_load(&l->go_ns))) nanosleep(&nap, NULL);
  uint64_t latest = go;
  const char *dir = getenv("NCCLDOUBLE_RDZV");
  if (l->world > 1 && dir && *dir) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.%d", dir, l->tag, l->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) { fprintf(f, "%llu\n", (unsigned long long)go); fclose(f); rename(tmp, path); }
    uint64_t deadline = job_now_ns() + 60000000000ull;
    for (int r = 0; r < l->world && job_now_ns() < deadline; r++) {
      snprintf(path, sizeof path, "%s/%s.%d", dir, l->tag, r);
      unsigned long long t = 0;
      FILE *g = fopen(path, "r");
      int got = g && fscanf(g, "%llu", &t) == 1;
      if (g) fclose(g);
      if (!got) { nanosleep(&nap, NULL); r--; continue; }
      if (t > latest) latest = t;
    }
  }
  cudaDoubleItemEndAt(latest);
}

static inline void job_start_line_arm(struct job_start_line *l, cudaStream_t stream, int rank, int world,
                                      const char *tag) {
  atomic_init(&l->go_ns, 0);
  l->rank = rank;
  l->world = world;
  snprintf(l->tag, sizeof l->tag, "%s", tag);
  CUCHK(cudaLaunchHostFunc(stream, job_start_line_wait, l));
}

static inline void job_start_line_go(struct job_start_line *l) {
  uint64_t t = job_now_ns();
  atomic_store(&l->go_ns, t ? t : 1);
}
#endif
