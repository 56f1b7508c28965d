/* fork_storm — a launcher that forks its ranks right after its first NCCL call, as Python
 * multiprocessing with the fork start method does; run many times, it counts children that die
 * or hang (issue 9 part 1: a forked child inheriting the dynamic loader, or a lock, in the
 * middle of an operation of another thread of its parent).
 *
 * Usage: fork_storm [-n RUNS] [-k RANKS] [-m nccl|plain] [-l LIB]
 * The driver (this process) never calls NCCL. Each run forks a launcher, which calls
 * ncclGetUniqueId (the first NCCL call of the process: a traced process activates here), waits
 * 0 ms (even runs) or 1..5 ms (odd runs), then forks RANKS children back to back. Each child
 * dlopens LIB (default libresolv.so.2, a library the process has not loaded) and, in mode nccl,
 * makes a one-rank communicator, one all-reduce (its result checked) and destroys it; in mode
 * plain it never calls NCCL. A child leaves with _exit(0) (what multiprocessing does).
 * A child that dies of a signal or exits non-zero counts as a death; one that has not exited
 * 60 s after its launcher forked it (no healthy child comes near that) is killed and counted as
 * a hang. Prints "fork_storm runs=N children=C deaths=D hangs=H" and exits 0 only when D = H = 0. */
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>

#include "job_util.h"

static int child(const char *mode, const char *lib) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "fork_storm: dlopen %s: %s\n", lib, dlerror()); return 3; }
  if (strcmp(mode, "nccl") != 0) return 0;
  ncclUniqueId id;
  ncclComm_t c;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&c, 1, id, 0) != ncclSuccess) return 4;
  cudaStream_t s;
  float *b;
  if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc((void **)&b, 64) != cudaSuccess) return 5;
  for (int i = 0; i < 16; i++) b[i] = (float)i;
  if (ncclAllReduce(b, b, 16, ncclFloat32, ncclSum, c, s) != ncclSuccess) return 6;
  if (cudaStreamSynchronize(s) != cudaSuccess || b[3] != 3.0f) return 7;
  if (ncclCommDestroy(c) != ncclSuccess) return 8;
  return 0;
}

/* One launcher: returns deaths * 1000 + hangs of its children (exit status), 255 on its own failure. */
static int launcher(int run, int ranks, const char *mode, const char *lib) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 255;
  if (run % 2) { struct timespec d = {0, (long)(1 + run / 2 % 5) * 1000000L}; nanosleep(&d, NULL); }
  pid_t kids[16];
  for (int r = 0; r < ranks; r++) {
    kids[r] = fork();
    if (kids[r] == 0) _exit(child(mode, lib));
    if (kids[r] < 0) return 255;
  }
  int deaths = 0, hangs = 0, left = ranks;
  uint64_t deadline = job_now_ns() + 60000000000ull;
  while (left > 0) {
    for (int r = 0; r < ranks; r++) {
      if (kids[r] <= 0) continue;
      int st;
      pid_t p = waitpid(kids[r], &st, WNOHANG);
      if (p == 0 && job_now_ns() < deadline) continue;
      if (p == 0) { kill(kids[r], SIGKILL); waitpid(kids[r], &st, 0); hangs++; fprintf(stderr, "fork_storm: run %d child %d hung\n", run, r); }
      else if (WIFSIGNALED(st)) { deaths++; fprintf(stderr, "fork_storm: run %d child %d died of signal %d\n", run, r, WTERMSIG(st)); }
      else if (WEXITSTATUS(st) != 0) { deaths++; fprintf(stderr, "fork_storm: run %d child %d exit %d\n", run, r, WEXITSTATUS(st)); }
      kids[r] = 0;
      left--;
    }
    if (left) { struct timespec t = {0, 200000}; nanosleep(&t, NULL); }
  }
  return deaths * 16 + hangs < 255 ? deaths * 16 + hangs : 254;
}

int main(int argc, char **argv) {
  int runs = 100, ranks = 4, o;
  const char *mode = "nccl", *lib = "libresolv.so.2";
  while ((o = getopt(argc, argv, "n:k:m:l:")) != -1) {
    if (o == 'n') runs = atoi(optarg);
    else if (o == 'k') ranks = atoi(optarg);
    else if (o == 'm') mode = optarg;
    else if (o == 'l') lib = optarg;
    else { fprintf(stderr, "usage: fork_storm [-n RUNS] [-k RANKS] [-m nccl|plain] [-l LIB]\n"); return 2; }
  }
  if (ranks < 1 || ranks > 15) ranks = 4;
  long deaths = 0, hangs = 0, failed = 0;
  for (int i = 0; i < runs; i++) {
    pid_t p = fork();
    if (p == 0) _exit(launcher(i, ranks, mode, lib));
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) == 255) {
      failed++;
      fprintf(stderr, "fork_storm: run %d: launcher failed (%s %d)\n", i, p > 0 && WIFSIGNALED(st) ? "signal" : "status",
              p > 0 ? (WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st)) : -1);
      continue;
    }
    deaths += WEXITSTATUS(st) / 16;
    hangs += WEXITSTATUS(st) % 16;
  }
  printf("fork_storm runs=%d children=%ld deaths=%ld hangs=%ld launcher_failures=%ld\n", runs, (long)runs * ranks,
         deaths, hangs, failed);
  return deaths || hangs || failed ? 1 : 0;
}
