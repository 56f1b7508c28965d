/* idle_job — a process that stops calling NCCL for a while, then makes one call: the shim's
 * idle heartbeat (tests/test_idle_beat.sh).
 *
 * Usage: idle_job TRACE_DIR [GROWTHS]
 *   10 all-reduces on a 1-rank communicator (host buffers, stream 0); then watches the size of
 *   the first *.ncs file in TRACE_DIR (every 2 ms, at most 30 s) until it has grown GROWTHS
 *   times (default 3) since the calls (chunks written with no call made: the last of them a
 *   heartbeat alone); when GROWTHS is given, "idle_job calls again" on stderr then (a mark
 *   among the shim's NCCLSCOPE_DEBUG lines: tests/test_gputime_anchors.sh); at
 *   once one more all-reduce, and "idle_job after_beat" on stdout; then three more growths (its
 *   chunk, a heartbeat a flush period later, one a heartbeat period after that),
 *   destroys its communicator and exits 0. Exits 1 (a message on stderr) when a wait runs out
 *   or a call fails. Touches nothing in TRACE_DIR. */
#include <dirent.h>
#include <sys/stat.h>

#include "job_util.h"

static float buf[8];

/* The size of the first *.ncs file in dir, or -1. */
static long long trace_size(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  long long sz = -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".ncs") != 0) continue;
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st) == 0) sz = (long long)st.st_size;
    break;
  }
  closedir(d);
  return sz;
}

/* Waits until the trace has grown `times` times (polled every 2 ms, at most 30 s). */
static void wait_growths(const char *dir, int times) {
  long long last = trace_size(dir);
  struct timespec tick = {0, 2000000};
  for (int i = 0; i < 15000 && times > 0; i++) {
    nanosleep(&tick, NULL);
    long long now = trace_size(dir);
    if (now != last) { last = now; times--; }
  }
  JOBCHK(times == 0, "the trace in %s did not grow as often as expected within 30 s", dir);
}

int main(int argc, char **argv) {
  JOBCHK(argc == 2 || argc == 3, "usage: idle_job TRACE_DIR [GROWTHS]");
  int growths = argc == 3 ? atoi(argv[2]) : 3;
  ncclUniqueId id;
  ncclComm_t comm;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  for (int i = 0; i < 10; i++) NCCHK(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, 0));
  wait_growths(argv[1], growths);
  if (argc == 3) fprintf(stderr, "idle_job calls again\n");
  NCCHK(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, comm, 0));
  printf("idle_job after_beat\n");
  fflush(stdout);
  wait_growths(argv[1], 3);
  NCCHK(ncclCommDestroy(comm));
  return 0;
}
