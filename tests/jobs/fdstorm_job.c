/* fdstorm_job — a job whose second thread takes every descriptor number over and over while the
 * first writes its own files and calls NCCL: the shim must never write into a descriptor it
 * cannot prove is its own (docs/SHIM.md "Descriptors", shim/fileio.c).
 *
 * Usage: fdstorm_job DIR MS   (one rank; DIR must exist)
 * After NCCL's init it waits (up to 60 s) until a file of $NCCLSCOPE_DIR holds more than its
 * header, opens 16 files of its own in DIR, and notes every descriptor open then below 256 (its
 * own, and those of the NCCL and CUDA libraries: the storm leaves them alone). For MS
 * milliseconds the storm thread then, round after round: dup2s one of the 16 files onto every
 * other number from 3 up to the descriptor limit (at most 4096), closes them all, and every
 * fourth round first closes every number from 256 up (as daemonising code closes everything).
 * Meanwhile the main thread writes a line to each of its 16 files and makes an all-reduce, in a
 * loop. Afterwards it reads its files back: every byte must be what it wrote.
 *
 * stdout: "fdstorm_job: N calls, 16 files, B bytes, all intact" or the first difference;
 * stderr: "# shim files in the job's table: K" (files of $NCCLSCOPE_DIR or $NCCLSCOPE_METRICS
 * open in the job's table when the storm starts) and "# storm: R rounds over T numbers".
 * Exit 0 when intact. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "job_util.h"

#define NFILES 16
#define LOW 256 /* numbers below stay the job's and its libraries' own */

static int own[NFILES];
static int target[4096], ntarget;
static _Atomic int stop;
static long rounds;

static void line_for(char *buf, size_t cap, int file, long iter) {
  snprintf(buf, cap, "file %02d line %06ld: the job's own bytes, never the shim's\n", file, iter);
}

/* 1 when an entry of the directory named by $VAR passes `match` (its stat beside `want`) */
static int dir_has(const char *var, int (*match)(const struct stat *, const struct stat *), const struct stat *want) {
  const char *dir = getenv(var);
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  int found = 0;
  while (d && !found && (e = readdir(d)) != NULL) {
    char p[4096];
    struct stat ts;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    found = stat(p, &ts) == 0 && match(&ts, want);
  }
  if (d) closedir(d);
  return found;
}
static int same_file(const struct stat *ts, const struct stat *st) { return ts->st_ino == st->st_ino && ts->st_dev == st->st_dev; }
static int past_header(const struct stat *ts, const struct stat *unused) { (void)unused; return S_ISREG(ts->st_mode) && ts->st_size > 64; }

/* 1 when st is a file of the directory named by $VAR */
static int in_dir(const char *var, const struct stat *st) { return dir_has(var, same_file, st); }
static int trace_started(void) { return dir_has("NCCLSCOPE_DIR", past_header, NULL); }

static void *storm(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    if (rounds % 4 == 0) {
#ifdef SYS_close_range
      if (syscall(SYS_close_range, (unsigned)LOW, ~0u, 0u) != 0)
#endif
        for (int i = 0; i < ntarget; i++) if (target[i] >= LOW) close(target[i]);
    }
    for (int i = 0; i < ntarget; i++) dup2(own[target[i] % NFILES], target[i]);
    for (int i = 0; i < ntarget; i++) close(target[i]);
    rounds++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: fdstorm_job DIR MS\n"); return 2; }
  const char *dir = argv[1];
  long ms = atol(argv[2]);
  ncclUniqueId id;
  ncclComm_t comm;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s;
  float *b;
  CUCHK(cudaStreamCreate(&s));
  CUCHK(cudaMalloc((void **)&b, 64 * sizeof(float)));
  long calls = 0;
  for (int i = 0; i < 10; i++, calls++) NCCHK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  for (int tries = 0; getenv("NCCLSCOPE_DIR") && tries < 60000 && !trace_started(); tries++) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }

  char path[4096];
  for (int f = 0; f < NFILES; f++) {
    snprintf(path, sizeof path, "%s/own-%02d.txt", dir, f);
    own[f] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    JOBCHK(own[f] >= 0 && own[f] < LOW, "cannot create %s below %d", path, LOW);
  }
  /* what is open now: below LOW the job's and its libraries' (left alone); at LOW and above,
   * only what a tool moved there: the storm's */
  static char keep[4096];
  int shim_files = 0;
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int dfd = d ? dirfd(d) : -1;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = atoi(e->d_name);
    struct stat st;
    if (fd == dfd || fstat(fd, &st) != 0) continue;
    if (S_ISREG(st.st_mode) && (in_dir("NCCLSCOPE_DIR", &st) || in_dir("NCCLSCOPE_METRICS", &st))) shim_files++;
    if (fd < LOW && fd < (int)sizeof keep) keep[fd] = 1;
  }
  if (d) closedir(d);
  struct rlimit rl;
  int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096 ? (int)rl.rlim_cur : 4096;
  for (int fd = 3; fd < max; fd++) if (!keep[fd]) target[ntarget++] = fd;
  fprintf(stderr, "# shim files in the job's table: %d\n", shim_files);

  pthread_t th;
  JOBCHK(pthread_create(&th, NULL, storm, NULL) == 0, "pthread_create");
  long written = 0, it = 0;
  uint64_t end = job_now_ns() + (uint64_t)ms * 1000000ull;
  while (job_now_ns() < end) {
    char line[128];
    for (int f = 0; f < NFILES; f++) {
      line_for(line, sizeof line, f, it);
      size_t n = strlen(line);
      JOBCHK(write(own[f], line, n) == (ssize_t)n, "write to file %d", f);
      written += (long)n;
    }
    for (int k = 0; k < 20; k++, calls++) NCCHK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm, s));
    CUCHK(cudaStreamSynchronize(s));
    it++;
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  fprintf(stderr, "# storm: %ld rounds over %d numbers\n", rounds, ntarget);
  NCCHK(ncclCommDestroy(comm));
  for (int f = 0; f < NFILES; f++) close(own[f]);

  for (int f = 0; f < NFILES; f++) {
    snprintf(path, sizeof path, "%s/own-%02d.txt", dir, f);
    FILE *in = fopen(path, "rb");
    JOBCHK(in != NULL, "cannot reopen %s", path);
    char got[128], want[128];
    long off = 0;
    for (long i = 0; i < it; i++) {
      line_for(want, sizeof want, f, i);
      size_t n = strlen(want);
      if (fread(got, 1, n, in) != n || memcmp(got, want, n) != 0) {
        printf("fdstorm_job: file %02d differs at or after byte %ld (line %ld)\n", f, off, i);
        fclose(in);
        return 1;
      }
      off += (long)n;
    }
    int extra = fgetc(in);
    fclose(in);
    if (extra != EOF) { printf("fdstorm_job: file %02d has bytes after its %ld\n", f, off); return 1; }
  }
  CUCHK(cudaFree(b));
  printf("fdstorm_job: %ld calls, %d files, %ld bytes written, all intact\n", calls, NFILES, written);
  return 0;
}
