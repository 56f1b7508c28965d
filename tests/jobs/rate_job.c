/* rate_job — many small all-reduces from one or more threads at a chosen rate, for the shim's
 * buffering tests and benchmarks (scripts/bench-throughput.sh, tests/test_rings.sh).
 *
 * Usage: rate_job [-n CALLS] [-t THREADS] [-r RATE] [-c COUNTERFILE] [-p] [-i IDLE_MS] [-f FILE]
 *                 [-s FRAMES] [-d PCT]
 *   -n calls per thread (default 100000); -t threads, each with its own 1-rank communicator
 *   (default 1); -r calls per second per thread, paced by the clock (0 = as fast as possible);
 *   -c a file whose u64 slot i (i = thread) holds thread i's completed calls, updated after
 *   every call through a shared mapping (it survives kill -9: a killer can read how many
 *   calls had returned); -p after the calls, print "done" and sleep until killed;
 *   -i after the calls, sleep 1 s (the shim finishes writing what the calls left), then sleep
 *   IDLE_MS more (the process idle, communicators alive) and print the process CPU time spent
 *   during that second sleep (idle_cpu_us) and, when IDLE_MS passes 5000, also the part after
 *   its first 5 s (idle_late_ms, idle_late_cpu_us: the steady state, past the shim's one-off work
 *   on going idle); -f after the calls, before destroying its communicators, write
 *   zeros to FILE until its file system is full (a disk that fills up at the end of a run:
 *   test_keep.sh), leaving FILE there; -s each thread's call loop runs FRAMES function frames
 *   below the thread's own function (default 0), so that a call site's stack is that much
 *   deeper (NCCLSCOPE_CALLSITE_DEPTH=8 then sees 8 frames of the job: scripts/bench-throughput.sh),
 *   at no cost per call; -d thread i calls at RATE x (1 + i x PCT / 100) (threads whose times
 *   drift apart: tests/test_metrics_exact_threads.sh).
 * Prints one line: rate_job threads=T calls=N rate=R ns_per_call=X cpu_ns_per_call=Y
 * caller_cpu_ns_per_call=Z caller_faults=F caller_sys_ns_per_call=S (wall and process CPU time of the
 * calling phase, per call, and the calling threads' own CPU time per call: the shim's hot path
 * without its writer; with -r it includes the pacing spin; F: the page faults the calling threads
 * took in their call loops, S: the part of Z spent in the kernel (page faults, pages made present,
 * wake-ups), both getrusage RUSAGE_THREAD), and, when a thread named
 * "ncclscope-wr" (the shim's writer) exists, writer_cpu_ns=Z: that thread's CPU time so far, plus
 * its compression helper's ("ncclscope-zip") and its pagers' ("ncclscope-pg", shim/rings.c)
 * (/proc/self/task/TID/schedstat), printed after the idle sleep when -i is given. Uses only NCCL calls with host
 * buffers and stream 0, so it also runs on a stub NCCL that returns at once. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "job_util.h"

/* -i longer than this: the CPU of the idle time after it is printed apart (idle_late_cpu_us): the
 * shim's one-off work on going idle (its rings' pages given back: shim/rings.c) falls before it */
#define IDLE_EARLY_MS 5000L
static long calls = 100000, rate = 0, drift_pct = 0;
static volatile uint64_t *counters;
static _Atomic uint64_t caller_cpu_ns; /* the calling threads' CPU time in their call loops */
static _Atomic long caller_sys_us;     /* the calling threads' system time in their call loops */
static _Atomic long caller_minflt;     /* the calling threads' page faults in their call loops */
/* Each thread's buffer. Not on its stack: an all-reduce runs on the stream after the call
 * returns (the CUDA double runs it on a thread of its own, as a GPU would), and a thread that
 * returned after its last call would leave the stream reading and writing its dead frame
 * (SIGSEGV in CI on 2026-12-02: 32 bytes written over a return address in the thread's exit).
 * This static storage outlives every thread; ncclCommDestroy waits for the stream. */
static float bufs[64][8];

static uint64_t now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU ns of the shim's writer thread plus its compression helper ("ncclscope-zip") and pagers
 * ("ncclscope-pg"), when they exist; -1 when there is no writer. */
static long long writer_cpu_ns(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  long long ns = -1, zip = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[320], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
    fclose(f);
    int helper = strncmp(comm, "ncclscope-zip", 13) == 0 || strncmp(comm, "ncclscope-pg", 12) == 0;
    if (!helper && (strncmp(comm, "ncclscope-wr", 12) != 0 || ns >= 0)) continue; /* the first: threads
                                                    * it starts (a CUDA stream's) inherit its name */
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    f = fopen(path, "r");
    long long v = -1;
    if (f) {
      if (fscanf(f, "%lld", &v) != 1) v = -1;
      fclose(f);
    }
    if (helper) zip += v > 0 ? v : 0;
    else ns = v;
  }
  closedir(d);
  return ns >= 0 ? ns + zip : -1;
}

static long nest_frames; /* -s */

static __attribute__((noinline)) void call_loop(long idx, ncclComm_t comm, float *buf) {
  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t t0 = now_ns(CLOCK_MONOTONIC), r = (uint64_t)rate * (100 + (uint64_t)idx * (uint64_t)drift_pct) / 100;
  uint64_t period = r > 0 ? 1000000000ull / r : 0;
  for (long i = 0; i < calls; i++) {
    if (period) /* paced: call i is due at t0 + i * period */
      while (now_ns(CLOCK_MONOTONIC) < t0 + (uint64_t)i * period) {}
    NCCHK(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclMax, comm, 0));
    if (counters) counters[idx] = (uint64_t)i + 1;
  }
  atomic_fetch_add(&caller_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
  getrusage(RUSAGE_THREAD, &ru1);
  atomic_fetch_add(&caller_sys_us, (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000000L + (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec));
  atomic_fetch_add(&caller_minflt, (ru1.ru_minflt - ru0.ru_minflt) + (ru1.ru_majflt - ru0.ru_majflt));
}

/* call_loop, `frames` function frames further down the stack (not tail calls: the barrier
 * after each call keeps the frame) */
static __attribute__((noinline)) void nest(long frames, long idx, ncclComm_t comm, float *buf) {
  if (frames > 0) nest(frames - 1, idx, comm, buf);
  else call_loop(idx, comm, buf);
  __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg) {
  long idx = (long)arg;
  ncclUniqueId id;
  ncclComm_t comm;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  float *buf = bufs[idx];
  for (int k = 0; k < 8; k++) buf[k] = 1;
  nest(nest_frames, idx, comm, buf);
  return comm;
}

int main(int argc, char **argv) {
  long threads = 1, idle_ms = 0;
  const char *counter_file = NULL, *fill_file = NULL;
  int pause_at_end = 0, opt;
  while ((opt = getopt(argc, argv, "n:t:r:c:pi:f:s:d:")) != -1) {
    if (opt == 'n') calls = atol(optarg);
    else if (opt == 't') threads = atol(optarg);
    else if (opt == 'r') rate = atol(optarg);
    else if (opt == 'd') drift_pct = atol(optarg);
    else if (opt == 'c') counter_file = optarg;
    else if (opt == 'p') pause_at_end = 1;
    else if (opt == 'i') idle_ms = atol(optarg);
    else if (opt == 'f') fill_file = optarg;
    else if (opt == 's') nest_frames = atol(optarg);
    else { fprintf(stderr, "usage: rate_job [-n CALLS] [-t THREADS] [-r RATE] [-c FILE] [-p] [-i IDLE_MS] [-f FILE] [-s FRAMES]\n"); return 2; }
  }
  JOBCHK(calls >= 0 && threads >= 1 && threads <= 64 && rate >= 0 && drift_pct >= 0 && nest_frames >= 0 && nest_frames <= 1000, "bad arguments");
  if (counter_file) {
    int fd = open(counter_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    JOBCHK(fd >= 0 && ftruncate(fd, 64 * 8) == 0, "cannot create %s", counter_file);
    void *p = mmap(NULL, 64 * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    JOBCHK(p != MAP_FAILED, "cannot map %s", counter_file);
    counters = p;
    close(fd);
  }
  pthread_t th[64];
  ncclComm_t comms[64];
  uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < threads; i++) JOBCHK(pthread_create(&th[i], NULL, worker, (void *)i) == 0, "pthread_create");
  for (long i = 0; i < threads; i++) {
    void *r;
    pthread_join(th[i], &r);
    comms[i] = r;
  }
  uint64_t w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  double n = (double)calls * (double)threads;
  printf("rate_job threads=%ld calls=%ld rate=%ld ns_per_call=%.1f cpu_ns_per_call=%.1f caller_cpu_ns_per_call=%.1f caller_faults=%ld caller_sys_ns_per_call=%.1f\n", threads,
         calls, rate, n > 0 ? (double)(w1 - w0) / n : 0.0, n > 0 ? (double)(c1 - c0) / n : 0.0,
         n > 0 ? (double)atomic_load(&caller_cpu_ns) / n : 0.0, atomic_load(&caller_minflt),
         n > 0 ? 1000.0 * (double)atomic_load(&caller_sys_us) / n : 0.0);
  if (idle_ms <= 0 && writer_cpu_ns() >= 0) printf("rate_job writer_cpu_ns=%lld\n", writer_cpu_ns());
  fflush(stdout);
  if (idle_ms > 0) {
    struct timespec settle = {1, 0};
    while (nanosleep(&settle, &settle) != 0) {}
    uint64_t i0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), im = 0;
    long first_ms = idle_ms > IDLE_EARLY_MS ? IDLE_EARLY_MS : idle_ms;
    struct timespec ts = {first_ms / 1000, (first_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
    if (idle_ms > IDLE_EARLY_MS) {
      im = now_ns(CLOCK_PROCESS_CPUTIME_ID);
      long late_ms = idle_ms - IDLE_EARLY_MS;
      struct timespec tl = {late_ms / 1000, (late_ms % 1000) * 1000000L};
      while (nanosleep(&tl, &tl) != 0) {}
    }
    uint64_t i1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    printf("rate_job idle_ms=%ld idle_cpu_us=%.1f", idle_ms, (double)(i1 - i0) / 1000.0);
    if (im) printf(" idle_late_ms=%ld idle_late_cpu_us=%.1f", idle_ms - IDLE_EARLY_MS, (double)(i1 - im) / 1000.0);
    printf("\n");
    if (writer_cpu_ns() >= 0) printf("rate_job writer_cpu_ns=%lld\n", writer_cpu_ns());
    fflush(stdout);
  }
  if (pause_at_end) {
    printf("done\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (fill_file) {
    int fd = open(fill_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    JOBCHK(fd >= 0, "cannot create %s", fill_file);
    static const char zeros[4096];
    while (write(fd, zeros, sizeof zeros) > 0) {}
    while (write(fd, zeros, 1) > 0) {} /* the last partial block */
    close(fd);
  }
  for (long i = 0; i < threads; i++) NCCHK(ncclCommDestroy(comms[i]));
  return 0;
}
