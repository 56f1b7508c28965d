/* fd_job — a job that, after NCCL's init, closes every descriptor >= 3 (as daemonising code
 * does), opens 16 files of its own, puts one of them on every number the shim's trace file had
 * (dup2: the worst case of a number handed back), then writes its files while it keeps calling
 * NCCL for ITERS x 5 ms (several of the shim's flush periods), making a second communicator
 * half-way (NCCL logs its init again: lines for the log capture). Afterwards it reads every file
 * back: each byte must be what it wrote (issue 9 part 2: the shim must never write into a
 * descriptor it cannot prove is its own).
 *
 * Usage: fd_job DIR [ITERS [wait]]   (one rank; DIR must exist). "wait": before closing, wait
 * (up to 60 s) until a file in $NCCLSCOPE_DIR holds more than its 64-byte header (the shim has
 * created it and written a chunk), so that the number of its descriptor is among those handed
 * back. A number the 16 files do not take already gets file k by dup2. "unlink" (implies wait):
 * also removes every file of $NCCLSCOPE_DIR after closing (a clean-up script), so the shim
 * cannot reopen its trace by name.
 * stdout: "fd_job: 16 files, N bytes written, all intact" or the first difference found;
 * stderr: the numbers the shim's files had ("# shim descriptors: ..."). Exit 0 when intact. */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "job_util.h"

#define NFILES 16

static void line_for(char *buf, size_t cap, int file, int iter) {
  snprintf(buf, cap, "file %02d line %04d: the job's own bytes, never the shim's\n", file, iter);
}

/* 1 when st is a file of $NCCLSCOPE_DIR (the shim names its trace after linkat, so the
 * descriptor's /proc link does not show the name: compare device and inode) */
static int in_trace_dir(const struct stat *st) {
  const char *dir = getenv("NCCLSCOPE_DIR");
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  int found = 0;
  while (d && !found && (e = readdir(d)) != NULL) {
    char p[4096];
    struct stat ts;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    found = stat(p, &ts) == 0 && ts.st_ino == st->st_ino && ts.st_dev == st->st_dev;
  }
  if (d) closedir(d);
  return found;
}

/* 1 once a file of $NCCLSCOPE_DIR holds more than a file header */
static int trace_started(void) {
  const char *dir = getenv("NCCLSCOPE_DIR");
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  int found = 0;
  while (d && !found && (e = readdir(d)) != NULL) {
    char p[4096];
    struct stat ts;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    found = stat(p, &ts) == 0 && S_ISREG(ts.st_mode) && ts.st_size > 64;
  }
  if (d) closedir(d);
  return found;
}

static void close_from_3(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
  for (long fd = 3; fd < max; fd++) close((int)fd);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: fd_job DIR [ITERS]\n"); return 2; }
  const char *dir = argv[1];
  int iters = argc > 2 ? atoi(argv[2]) : 60;
  ncclUniqueId id;
  ncclComm_t comm;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s;
  float *b;
  CUCHK(cudaStreamCreate(&s));
  CUCHK(cudaMalloc((void **)&b, 64 * sizeof(float)));
  for (int i = 0; i < 10; i++) NCCHK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));

  /* the numbers the shim's trace files have now (the worst case is to hand exactly those back) */
  int unlink_traces = argc > 3 && strcmp(argv[3], "unlink") == 0;
  int shimfd[64], nshim = 0, wait = unlink_traces || (argc > 3 && strcmp(argv[3], "wait") == 0);
  for (int tries = 0; wait && tries < 60000 && !trace_started(); tries++) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  for (int tries = 0; tries < 1 && nshim == 0; tries++) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && nshim < 64) {
      struct stat fs;
      int fd = atoi(e->d_name);
      if (e->d_name[0] < '0' || e->d_name[0] > '9' || fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode)) continue;
      if (in_trace_dir(&fs)) shimfd[nshim++] = fd;
    }
    if (d) closedir(d);
  }
  fprintf(stderr, "# shim descriptors:");
  for (int i = 0; i < nshim; i++) fprintf(stderr, " %d", shimfd[i]);
  fprintf(stderr, "\n");

  close_from_3();
  if (unlink_traces) {
    const char *tdir = getenv("NCCLSCOPE_DIR");
    DIR *d = tdir ? opendir(tdir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", tdir, e->d_name);
      if (e->d_name[0] != '.') unlink(p);
    }
    if (d) closedir(d);
  }
  int fds[NFILES];
  char path[4096];
  for (int f = 0; f < NFILES; f++) {
    snprintf(path, sizeof path, "%s/own-%02d.txt", dir, f);
    fds[f] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    JOBCHK(fds[f] >= 0, "cannot create %s", path);
  }
  /* file k (k < nshim) also answers to the shim's old number k, unless one of the 16 has it */
  int dupped[64] = {0};
  for (int i = 0; i < nshim && i < NFILES; i++)
    if (shimfd[i] >= 3 + NFILES) {
      JOBCHK(dup2(fds[i], shimfd[i]) == shimfd[i], "dup2 onto %d", shimfd[i]);
      dupped[i] = 1;
    }

  long written = 0;
  for (int it = 0; it < iters; it++) {
    char line[128];
    for (int f = 0; f < NFILES; f++) {
      line_for(line, sizeof line, f, it);
      size_t n = strlen(line);
      JOBCHK(write(fds[f], line, n) == (ssize_t)n, "write to file %d", f);
      written += (long)n;
    }
    NCCHK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm, s));
    CUCHK(cudaStreamSynchronize(s));
    if (it == iters / 2) {
      ncclComm_t c2;
      NCCHK(ncclGetUniqueId(&id));
      NCCHK(ncclCommInitRank(&c2, 1, id, 0));
      NCCHK(ncclCommDestroy(c2));
    }
    struct timespec t = {0, 5000000};
    nanosleep(&t, NULL);
  }
  NCCHK(ncclCommDestroy(comm));
  for (int f = 0; f < NFILES; f++) close(fds[f]);
  for (int i = 0; i < nshim; i++) if (dupped[i]) close(shimfd[i]);

  /* every byte as written */
  for (int f = 0; f < NFILES; f++) {
    snprintf(path, sizeof path, "%s/own-%02d.txt", dir, f);
    FILE *in = fopen(path, "rb");
    JOBCHK(in != NULL, "cannot reopen %s", path);
    char got[128], want[128];
    long off = 0;
    for (int it = 0; it < iters; it++) {
      line_for(want, sizeof want, f, it);
      size_t n = strlen(want);
      if (fread(got, 1, n, in) != n || memcmp(got, want, n) != 0) {
        printf("fd_job: file %02d differs at or after byte %ld (line %d)\n", f, off, it);
        fclose(in);
        return 1;
      }
      off += (long)n;
    }
    int extra = fgetc(in);
    fclose(in);
    if (extra != EOF) { printf("fd_job: file %02d has bytes after its %ld\n", f, off); return 1; }
  }
  CUCHK(cudaFree(b));
  printf("fd_job: %d files, %ld bytes written, all intact\n", NFILES, written);
  return 0;
}
