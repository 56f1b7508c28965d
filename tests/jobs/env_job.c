/* env_job — the environment a job and its children see must be exactly the one they would see
 * without the shim, at every moment (issue 9 part 3).
 *
 * Usage: env_job [-n RUNS] DIR
 * The driver (this process) never calls NCCL. Each run forks a worker, which copies its environ,
 * starts a thread that compares environ with that copy in a loop (entry by entry, as a
 * program's getenv-reading thread would), and meanwhile makes NCCL calls (the first activates a
 * traced process: right after it, and after init, it starts a child with system() that writes
 * its NCCL-related variables, `env | grep NCCL | sort`, into DIR), an all-reduce and a destroy.
 * A difference is any moment the thread saw environ differ from the copy, or a child whose
 * NCCL variables differ from the worker's. Prints "env_job runs=N differences=D children=C
 * worker_failures=F"; exit 0 only when D = F = 0. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "job_util.h"

extern char **environ;
static char **snap;
static int nsnap;
static atomic_int stop_reader;
static atomic_long seen_diff, reads;

static int same_as_snapshot(void) {
  int i = 0;
  for (char **e = environ; e && *e; e++, i++)
    if (i >= nsnap || strcmp(*e, snap[i]) != 0) return 0;
  return i == nsnap;
}

static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_reader)) {
    if (!same_as_snapshot()) atomic_fetch_add(&seen_diff, 1);
    atomic_fetch_add(&reads, 1);
  }
  return NULL;
}

/* the worker's own NCCL-related variables, sorted, one a line, as `env | grep NCCL | sort` */
static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void expected(const char *path) {
  char *v[512];
  int n = 0;
  for (int i = 0; i < nsnap && n < 512; i++) if (strstr(snap[i], "NCCL")) v[n++] = snap[i];
  qsort(v, (size_t)n, sizeof *v, cmp);
  FILE *f = fopen(path, "w");
  for (int i = 0; f && i < n; i++) fprintf(f, "%s\n", v[i]);
  if (f) fclose(f);
}

static int child_differs(const char *dir, int k) {
  char cmd[9000], got[4200], want[4200];
  snprintf(got, sizeof got, "%s/child-%d-%d", dir, (int)getpid(), k);
  snprintf(want, sizeof want, "%s/want-%d", dir, (int)getpid());
  snprintf(cmd, sizeof cmd, "env | grep NCCL | LC_ALL=C sort > '%s'", got);
  if (system(cmd) != 0) return 1;
  expected(want);
  snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", got, want);
  int d = system(cmd) != 0;
  if (d) fprintf(stderr, "env_job: child %d of %d saw other NCCL variables (%s vs %s)\n", k, (int)getpid(), got, want);
  else { unlink(got); }
  return d;
}

static int worker(const char *dir) {
  for (char **e = environ; e && *e; e++) nsnap++;
  snap = calloc((size_t)nsnap + 1, sizeof *snap);
  for (int i = 0; i < nsnap; i++) snap[i] = strdup(environ[i]);
  pthread_t th;
  pthread_create(&th, NULL, reader, NULL);
  int diffs = 0;
  ncclUniqueId id;
  ncclComm_t c[2];
  if (ncclGetUniqueId(&id) != ncclSuccess) return 100;
  diffs += child_differs(dir, 0); /* right after the first NCCL call */
  /* two ranks on devices 0 and 1 (NCCL emits no profiler events for a 1-rank communicator) */
  if (ncclCommInitAll(c, 2, NULL) != ncclSuccess) return 100;
  diffs += child_differs(dir, 1);
  cudaStream_t s[2];
  float *b[2];
  for (int d = 0; d < 2; d++) {
    if (cudaSetDevice(d) != cudaSuccess || cudaStreamCreate(&s[d]) != cudaSuccess ||
        cudaMalloc((void **)&b[d], 64) != cudaSuccess) return 100;
  }
  cudaSetDevice(0);
  for (int i = 0; i < 3; i++) {
    if (ncclGroupStart() != ncclSuccess) return 100;
    for (int d = 0; d < 2; d++)
      if (ncclAllReduce(b[d], b[d], 16, ncclFloat32, ncclSum, c[d], s[d]) != ncclSuccess) return 100;
    if (ncclGroupEnd() != ncclSuccess) return 100;
  }
  for (int d = 0; d < 2; d++) cudaStreamSynchronize(s[d]);
  for (int d = 0; d < 2; d++)
    if (ncclCommDestroy(c[d]) != ncclSuccess) return 100;
  /* the reader must compare at least once more, entirely after the last call: a change made
   * during the run (NCCL's own setenv from nccl.conf) is then seen whatever the scheduling, so
   * the count is the same from run to run (under load the reader could otherwise be stopped
   * before its first comparison) */
  long r0 = atomic_load(&reads);
  while (atomic_load(&reads) < r0 + 2) sched_yield();
  atomic_store(&stop_reader, 1);
  pthread_join(th, NULL);
  if (atomic_load(&seen_diff)) fprintf(stderr, "env_job: %d: environ differed in %ld of %ld reads\n", (int)getpid(),
                                       atomic_load(&seen_diff), atomic_load(&reads));
  diffs += atomic_load(&seen_diff) > 0;
  if (!same_as_snapshot()) diffs++;
  return diffs;
}

int main(int argc, char **argv) {
  int runs = 20, o;
  while ((o = getopt(argc, argv, "n:")) != -1) {
    if (o == 'n') runs = atoi(optarg);
    else { fprintf(stderr, "usage: env_job [-n RUNS] DIR\n"); return 2; }
  }
  if (optind >= argc) { fprintf(stderr, "usage: env_job [-n RUNS] DIR\n"); return 2; }
  const char *dir = argv[optind];
  long diffs = 0, failed = 0;
  for (int i = 0; i < runs; i++) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) _exit(worker(dir));
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) >= 100) { failed++; continue; }
    diffs += WEXITSTATUS(st);
  }
  printf("env_job runs=%d differences=%ld children=%d worker_failures=%ld\n", runs, diffs, runs * 2, failed);
  return diffs || failed ? 1 : 0;
}
