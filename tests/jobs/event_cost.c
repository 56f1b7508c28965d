/* event_cost — what the CUDA events of the shim's GPU timing cost on the CUDA double, without
 * the shim: for the benchmarks that must tell the shim's share of a timed call from the
 * double's (scripts/bench-alwayson.sh; a real driver records an event in about 1-2 us).
 *
 * Usage: event_cost [-n CALLS] [-k SYNC_EVERY] [-u KERNEL_US]
 * Two loops of CALLS "calls" on one stream, a stream synchronise every SYNC_EVERY calls (a
 * step): "bare" launches one KERNEL_US kernel a call (cudaDoubleCompute, standing for NCCL's);
 * "timed" does around each kernel what gputime.c does around a timed NCCL call:
 * cudaStreamIsCapturing, cudaEventRecord before and after (a pool of event pairs, as the
 * shim's), and one cudaEventQuery per pair once the step is synchronised (the shim's writer
 * polls each pair until done). Prints one line:
 *   event_cost calls=N bare_thread_ns=A bare_process_ns=B timed_thread_ns=C timed_process_ns=D
 *   added_thread_ns=C-A added_process_ns=D-B
 * per call: the calling thread's CPU and the process's (every thread: the double's stream
 * worker included). */
#include <sys/resource.h>

#include "job_util.h"

#define PAIRS 64

static uint64_t thread_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static uint64_t process_ns(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return ((uint64_t)r.ru_utime.tv_sec + (uint64_t)r.ru_stime.tv_sec) * 1000000000ull +
         ((uint64_t)r.ru_utime.tv_usec + (uint64_t)r.ru_stime.tv_usec) * 1000ull;
}

static void run(cudaStream_t s, long calls, long every, uint64_t kernel_ns, int timed, cudaEvent_t (*ev)[2],
                uint64_t *tns, uint64_t *pns) {
  uint64_t t0 = thread_ns(), p0 = process_ns();
  for (long i = 0; i < calls; i++) {
    cudaEvent_t *e = ev[i % PAIRS];
    if (timed) {
      enum cudaStreamCaptureStatus cs;
      CUCHK(cudaStreamIsCapturing(s, &cs));
      CUCHK(cudaEventRecord(e[0], s));
    }
    CUCHK(cudaDoubleCompute(s, kernel_ns));
    if (timed) CUCHK(cudaEventRecord(e[1], s));
    if ((i + 1) % every == 0 || i + 1 == calls) {
      CUCHK(cudaStreamSynchronize(s));
      if (timed)
        for (long k = i + 1 - ((i % every) + 1); k <= i; k++) {
          cudaError_t r = cudaEventQuery(ev[k % PAIRS][1]);
          JOBCHK(r == cudaSuccess || r == cudaErrorNotReady, "cudaEventQuery: %d", (int)r);
        }
    }
  }
  *tns = thread_ns() - t0;
  *pns = process_ns() - p0;
}

int main(int argc, char **argv) {
  long calls = 20000, every = 11;
  double kernel_us = 5;
  int opt;
  while ((opt = getopt(argc, argv, "n:k:u:")) != -1) {
    if (opt == 'n') calls = atol(optarg);
    else if (opt == 'k') every = atol(optarg);
    else if (opt == 'u') kernel_us = atof(optarg);
    else { fprintf(stderr, "usage: event_cost [-n CALLS] [-k SYNC_EVERY] [-u KERNEL_US]\n"); return 2; }
  }
  if (calls < 1 || every < 1 || every > PAIRS || kernel_us < 0) { fprintf(stderr, "event_cost: bad arguments\n"); return 2; }
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  cudaEvent_t ev[PAIRS][2];
  for (int i = 0; i < PAIRS; i++) {
    CUCHK(cudaEventCreate(&ev[i][0]));
    CUCHK(cudaEventCreate(&ev[i][1]));
  }
  uint64_t kns = (uint64_t)(kernel_us * 1000), bt, bp, tt, tp, w1, w2;
  run(s, every * 10, every, kns, 1, ev, &w1, &w2); /* warm: the worker, the pools */
  run(s, calls, every, kns, 0, ev, &bt, &bp);
  run(s, calls, every, kns, 1, ev, &tt, &tp);
  printf("event_cost calls=%ld bare_thread_ns=%.0f bare_process_ns=%.0f timed_thread_ns=%.0f timed_process_ns=%.0f "
         "added_thread_ns=%.0f added_process_ns=%.0f\n",
         calls, (double)bt / calls, (double)bp / calls, (double)tt / calls, (double)tp / calls,
         ((double)tt - (double)bt) / calls, ((double)tp - (double)bp) / calls);
  return 0;
}
