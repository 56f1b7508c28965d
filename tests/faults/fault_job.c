/* fault_job.c — a small single-rank NCCL job for the reliability tests (tests/test_fault_*.sh,
 * test_signal*.sh, test_spawn*.sh, test_stress*.sh, test_security*.sh).
 *
 * Contract: links libnccl.so.2 by soname (the CPU double in the tests, any NCCL otherwise),
 * makes a one-rank communicator and runs ITERS steps of AllReduce + Broadcast + AllGather +
 * a grouped ReduceScatter on host buffers, then prints one line per step with a checksum of the
 * results and a final "calls N" line, so a test can compare stdout with and without the shim.
 * The return codes of NCCL calls are printed, never hidden. Exit status: 0 when every call
 * returned ncclSuccess, 3 otherwise. Options (after ITERS), any order:
 *   sleep=US       sleep US microseconds after each step
 *   handler        install SIGTERM and SIGINT handlers that print "handler SIG" and exit(0)
 *   selfkill=SIG   raise SIG after the last step (before destroy)
 *   fork           fork after step 1: the child runs the remaining steps on its own
 *                  communicator and _exit()s; the parent waits and continues
 *   forkexit       the same, but the child ends with exit() (atexit handlers run)
 *   threads=T,K    T threads each call ncclGetVersion K times; prints "thread_calls T*K"
 *   quiet          print only the final lines */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_decl.h"

/* from the CUDA runtime (the CPU double in the tests): results are complete after it */
int cudaDeviceSynchronize(void);

#define NELEM 1024
static long calls, failures;
static int quiet;

#define NCALL(expr) do { ncclResult_t r_ = (expr); calls++; \
    if (r_ != ncclSuccess) { failures++; printf("nccl error %d at %s\n", (int)r_, #expr); } } while (0)

static void on_signal(int sig) {
  char msg[32];
  int n = snprintf(msg, sizeof msg, "handler %d\n", sig);
  if (write(1, msg, (size_t)n) < 0) _exit(5);
  exit(0);
}

static double checksum(const float *v, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += v[i] * (double)((i % 7) + 1);
  return s;
}

static void run_steps(ncclComm_t comm, int from, int to, useconds_t sleep_us, const char *who) {
  static float send[NELEM], recv[NELEM], gath[NELEM];
  for (int it = from; it < to; it++) {
    for (int i = 0; i < NELEM; i++) send[i] = (float)((i + it) % 13);
    NCALL(ncclAllReduce(send, recv, NELEM, ncclFloat32, ncclSum, comm, NULL));
    NCALL(ncclBroadcast(recv, recv, NELEM, ncclFloat32, 0, comm, NULL));
    NCALL(ncclAllGather(send, gath, NELEM, ncclFloat32, comm, NULL));
    NCALL(ncclGroupStart());
    NCALL(ncclReduceScatter(gath, recv, NELEM, ncclFloat32, ncclSum, comm, NULL));
    NCALL(ncclGroupEnd());
    cudaDeviceSynchronize();
    if (!quiet) printf("%sstep %d sum %.1f %.1f\n", who, it, checksum(recv, NELEM), checksum(gath, NELEM));
    if (sleep_us) usleep(sleep_us);
  }
}

static long per_thread;
static void *thread_main(void *arg) {
  long *ok = arg;
  for (long i = 0; i < per_thread; i++) {
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess && v > 0) (*ok)++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  useconds_t sleep_us = 0;
  int selfkill = 0, do_fork = 0, nthreads = 0;
  for (int i = 2; i < argc; i++) {
    if (!strncmp(argv[i], "sleep=", 6)) sleep_us = (useconds_t)atoi(argv[i] + 6);
    else if (!strcmp(argv[i], "handler")) { signal(SIGTERM, on_signal); signal(SIGINT, on_signal); }
    else if (!strncmp(argv[i], "selfkill=", 9)) selfkill = atoi(argv[i] + 9);
    else if (!strcmp(argv[i], "fork")) do_fork = 1;
    else if (!strcmp(argv[i], "forkexit")) do_fork = 2;
    else if (!strncmp(argv[i], "threads=", 8)) {
      nthreads = atoi(argv[i] + 8);
      const char *c = strchr(argv[i], ',');
      per_thread = c ? atol(c + 1) : 1000;
    } else if (!strcmp(argv[i], "quiet")) quiet = 1;
    else { fprintf(stderr, "fault_job: unknown option %s\n", argv[i]); return 2; }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  ncclUniqueId id;
  ncclComm_t comm = NULL;
  int version = 0;
  NCALL(ncclGetVersion(&version));
  NCALL(ncclGetUniqueId(&id));
  NCALL(ncclCommInitRank(&comm, 1, id, 0));
  if (!comm) { printf("no communicator\n"); return 3; }

  int first = 0;
  if (do_fork && iters > 1) {
    run_steps(comm, 0, 1, sleep_us, "");
    first = 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      ncclComm_t c2 = NULL;
      ncclUniqueId id2;
      NCALL(ncclGetUniqueId(&id2));
      NCALL(ncclCommInitRank(&c2, 1, id2, 0));
      if (c2) { run_steps(c2, 1, iters, sleep_us, "child "); NCALL(ncclCommDestroy(c2)); }
      printf("child calls %ld failures %ld\n", calls, failures);
      fflush(stdout);
      if (do_fork == 2) exit(failures ? 3 : 0);
      _exit(failures ? 3 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) { printf("fork failed\n"); return 4; }
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  run_steps(comm, first, iters, sleep_us, "");

  if (nthreads > 0) {
    pthread_t th[256];
    long ok[256] = {0};
    if (nthreads > 256) nthreads = 256;
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, thread_main, &ok[t]);
    long total = 0;
    for (int t = 0; t < nthreads; t++) { pthread_join(th[t], NULL); total += ok[t]; }
    calls += total;
    printf("thread_calls %ld\n", total);
  }
  if (selfkill) raise(selfkill);
  NCALL(ncclCommDestroy(comm));
  printf("calls %ld failures %ld\n", calls, failures);
  return failures ? 3 : 0;
}
