/* hang_job — the failures `ncclscope doctor` and `ncclscope watch` must recognise, on demand.
 *
 * Usage (under tests/jobs/launch.sh N): hang_job [--steps N] [--step-ms MS] [--sync-every K]
 *        [--stop R:S] [--die R:S] [--no-init R] [--mismatch R:S:op|size] [--term-exit] [--times]
 * Each step is one AllReduce of 1024 floats on one communicator, then a stream synchronisation
 * every K steps (K = 1, the default: "blocking", the host waits for every collective; larger K:
 * asynchronous, collectives queue up), then --step-ms of "compute" (host sleep).
 *   --stop R:S      rank R stops calling NCCL before step S (sleeps until killed): a hang
 *   --die R:S       rank R enqueues step S's collective, then kills itself with SIGKILL
 *   --no-init R     rank R never calls ncclCommInitRank (sleeps until killed): an init hang
 *   --split-stop R  after init every rank calls ncclCommSplit but rank R (sleeps until killed)
 *   --mismatch R:S:op|size  at step S rank R calls AllGather instead of AllReduce (op) or
 *                   AllReduce with half the count (size): a desync
 *   --term-exit     install a SIGTERM handler that calls exit(143) (as a job's own cleanup
 *                   handler would), instead of the default disposition
 *   --times         each step line ends with " at NS", the realtime clock as the step starts,
 *                   and "rank R start at NS" comes first (the truth of a hang's time lost and
 *                   its share of the run: tests/test_hang_cost.sh)
 * Prints "rank R step S" on stderr as steps start; results are not checked (the failures
 * corrupt them on purpose). Exit 0 after --steps steps, the communicator destroyed. */
#include <signal.h>
#include "job_util.h"

static void on_term(int sig) { (void)sig; exit(143); }

static int parse_rs(const char *a, int *r, int *s) { return sscanf(a, "%d:%d", r, s) == 2 ? 0 : -1; }

int main(int argc, char **argv) {
  int steps = 20, step_ms = 0, every = 1, stop_r = -1, stop_s = -1, die_r = -1, die_s = -1;
  int noinit_r = -1, split_r = -1, mm_r = -1, mm_s = -1, mm_size = 0, term_exit = 0, times = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--steps")) { steps = atoi(v); i++; }
    else if (!strcmp(a, "--step-ms")) { step_ms = atoi(v); i++; }
    else if (!strcmp(a, "--sync-every")) { every = atoi(v); i++; }
    else if (!strcmp(a, "--stop") && !parse_rs(v, &stop_r, &stop_s)) i++;
    else if (!strcmp(a, "--die") && !parse_rs(v, &die_r, &die_s)) i++;
    else if (!strcmp(a, "--no-init")) { noinit_r = atoi(v); i++; }
    else if (!strcmp(a, "--split-stop")) { split_r = atoi(v); i++; }
    else if (!strcmp(a, "--mismatch") && !parse_rs(v, &mm_r, &mm_s)) { mm_size = strstr(v, ":size") != NULL; i++; }
    else if (!strcmp(a, "--term-exit")) term_exit = 1;
    else if (!strcmp(a, "--times")) times = 1;
    else { fprintf(stderr, "hang_job: bad argument %s\n", a); return 2; }
  }
  if (steps < 1 || every < 1) { fprintf(stderr, "hang_job: bad arguments\n"); return 2; }
  if (term_exit) signal(SIGTERM, on_term);
  if (times) {
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    fprintf(stderr, "rank %d start at %lld\n", job_env_int("RANK", 0), (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec);
  }
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  int ndev = 1;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  ncclUniqueId id;
  job_unique_id(rank, world, "hang", &id);
  if (rank == noinit_r) for (;;) pause();
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, world, id, rank));
  if (split_r >= 0) {
    if (rank == split_r) for (;;) pause();
    ncclComm_t sub;
    NCCHK(ncclCommSplit(comm, 0, rank, &sub, NULL));
  }
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  size_t count = 1024;
  float *buf, *big;
  CUCHK(cudaMalloc((void **)&buf, count * sizeof *buf));
  CUCHK(cudaMalloc((void **)&big, count * (size_t)world * sizeof *big));
  for (size_t i = 0; i < count; i++) buf[i] = 1.0f;
  for (int st = 1; st <= steps; st++) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (times) fprintf(stderr, "rank %d step %d at %lld\n", rank, st, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    else fprintf(stderr, "rank %d step %d\n", rank, st);
    if (rank == stop_r && st == stop_s) for (;;) pause();
    if (rank == mm_r && st == mm_s && !mm_size)
      NCCHK(ncclAllGather(buf, big, count, ncclFloat32, comm, s));
    else
      NCCHK(ncclAllReduce(buf, buf, rank == mm_r && st == mm_s ? count / 2 : count, ncclFloat32, ncclMax, comm, s));
    if (rank == die_r && st == die_s) raise(SIGKILL);
    if (st % every == 0) CUCHK(cudaStreamSynchronize(s));
    if (step_ms > 0) { struct timespec ts = {step_ms / 1000, (long)(step_ms % 1000) * 1000000L}; nanosleep(&ts, NULL); }
  }
  CUCHK(cudaStreamSynchronize(s));
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(buf));
  CUCHK(cudaFree(big));
  return 0;
}
