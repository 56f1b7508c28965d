/* nb_job — non-blocking communicators used as NCCL 2.28 asks, on N ranks (processes).
 *
 * Usage: tests/jobs/launch.sh N nb_job [-n CALLS] [-x] [--truth DIR]
 * -x: only the non-blocking init, never polled, then ncclCommDestroy (which waits for it).
 * -a: the ranks but the last call the non-blocking init, never polled, then ncclCommAbort; the
 *     last rank never calls it, so the init cannot complete: an init aborted in progress.
 * Every rank, checking each return code against what NCCL 2.28 returns:
 *  1. ncclCommInitRankConfig with blocking = 0: ncclInProgress; on rank 0, ncclCommUserRank
 *     before the init can complete (the last rank calls init only after that check):
 *     ncclInvalidArgument; ncclCommGetAsyncError polled until ncclSuccess;
 *  2. CALLS all-reduces on it, each returning ncclInProgress and polled, results checked;
 *  3. ncclCommSplit by parity without a config (the child inherits non-blocking): ncclSuccess
 *     with the child published later; the parent polled until ncclSuccess, then the child is
 *     there; CALLS all-reduces on the child (ncclInProgress, polled);
 *  4. one group of an all-reduce and a broadcast on the world: ncclGroupEnd ncclInProgress;
 *  5. ncclCommDestroy of both.
 * Ground truth: DIR/truth-rank<R>.json {"rank", "nranks", "ops": {...}, "comms": [{"rank",
 * "nranks"}, ...] (world, then child), "lined_up": collectives of the whole job that every
 * rank of their communicator made (the same on every rank)}. */
#include <getopt.h>

#include "job_util.h"
#include "ncclscope/ops.h"

static long g_calls[NCS_OP_LIMIT];
static unsigned long long g_count[NCS_OP_LIMIT];
#define CALL(op, cnt, call) (g_calls[NCS_OP_##op]++, g_count[NCS_OP_##op] += (cnt), (call))

/* rank 0 says its in-progress check is done (a file in the rendezvous directory) */
static void mark_checked(void) {
  char p[4096];
  snprintf(p, sizeof p, "%s/nb-checked", getenv("NCCLDOUBLE_RDZV"));
  FILE *f = fopen(p, "w");
  JOBCHK(f && fclose(f) == 0, "cannot create %s", p);
}
static void wait_checked(void) {
  char p[4096];
  snprintf(p, sizeof p, "%s/nb-checked", getenv("NCCLDOUBLE_RDZV"));
  for (int i = 0; i < 60000 && access(p, F_OK) != 0; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
  JOBCHK(access(p, F_OK) == 0, "timed out waiting for %s", p);
}

static void poll_done(ncclComm_t c, const char *what) {
  ncclResult_t ae = ncclInProgress;
  for (int i = 0; i < 60000 && ae == ncclInProgress; i++) {
    NCCHK(ncclCommGetAsyncError(c, &ae));
    if (ae == ncclInProgress) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  JOBCHK(ae == ncclSuccess, "%s ended with %d", what, (int)ae);
}

static void in_progress(ncclResult_t r, ncclComm_t c, const char *what) {
  JOBCHK(r == ncclInProgress, "%s returned %d, not ncclInProgress", what, (int)r);
  poll_done(c, what);
}

int main(int argc, char **argv) {
  const char *truth = NULL;
  int calls = 6, o, nopoll = 0, abort_init = 0;
  static const struct option opts[] = {{"truth", 1, 0, 'g'}, {0, 0, 0, 0}};
  while ((o = getopt_long(argc, argv, "n:xa", opts, NULL)) != -1) {
    if (o == 'g') truth = optarg;
    else if (o == 'x') nopoll = 1;
    else if (o == 'a') nopoll = abort_init = 1;
    else if (o == 'n') calls = atoi(optarg);
    else { fprintf(stderr, "usage: nb_job [-n CALLS] [-x|-a] [--truth DIR]\n"); return 2; }
  }
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1), ndev = 1;
  JOBCHK(calls >= 0 && n >= 1, "bad arguments");
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  float *x;
  CUCHK(cudaMalloc((void **)&x, 64 * sizeof(float)));

  /* 1 */
  ncclUniqueId id;
  if (rank == 0) g_calls[NCS_OP_GetUniqueId]++;
  job_unique_id(rank, n, "nb", &id);
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.magic = 0xcafebeefu;
  cfg.version = 22809;
  cfg.blocking = 0;
  ncclComm_t world = NULL;
  if (abort_init && rank == n - 1) { calls = 0; goto done; } /* never arrives */
  if (n > 1 && !nopoll && rank == n - 1) wait_checked();
  ncclResult_t r = CALL(CommInitRankConfig, 0, ncclCommInitRankConfig(&world, n, id, rank, &cfg));
  JOBCHK(r == ncclInProgress && world, "non-blocking init returned %d", (int)r);
  int hrank = -1, hsize = 0;
  if (abort_init) {
    NCCHK(CALL(CommAbort, 0, ncclCommAbort(world)));
    calls = 0;
    goto done;
  }
  if (nopoll) {
    NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(world)));
    calls = 0;
    goto done;
  }
  if (n > 1 && rank == 0) { /* the last rank has not called init yet: it cannot be complete */
    int me = -1;
    JOBCHK(ncclCommUserRank(world, &me) == ncclInvalidArgument, "CommUserRank during init did not fail");
    mark_checked();
  }
  poll_done(world, "non-blocking init");
  int me = -1, size = 0;
  NCCHK(ncclCommUserRank(world, &me));
  NCCHK(ncclCommCount(world, &size));
  JOBCHK(me == rank && size == n, "rank %d of %d, expected %d of %d", me, size, rank, n);

  /* 2 */
  for (int i = 0; i < calls; i++) {
    for (int k = 0; k < 64; k++) x[k] = (float)rank;
    in_progress(CALL(AllReduce, 64, ncclAllReduce(x, x, 64, ncclFloat32, ncclSum, world, s)), world, "all-reduce");
    CUCHK(cudaStreamSynchronize(s));
    JOBCHK(x[63] == (float)(n * (n - 1) / 2), "world all-reduce %d: %g", i, x[63]);
  }

  /* 3 */
  ncclComm_t half = NULL;
  NCCHK(CALL(CommSplit, 0, ncclCommSplit(world, rank % 2, rank, &half, NULL)));
  poll_done(world, "non-blocking split");
  JOBCHK(__atomic_load_n(&half, __ATOMIC_ACQUIRE) != NULL, "split complete but no child");
  NCCHK(ncclCommUserRank(half, &hrank));
  NCCHK(ncclCommCount(half, &hsize));
  float want = 0;
  for (int q = rank % 2; q < n; q += 2) want += (float)q;
  for (int i = 0; i < calls; i++) {
    for (int k = 0; k < 64; k++) x[k] = (float)rank;
    in_progress(CALL(AllReduce, 64, ncclAllReduce(x, x, 64, ncclFloat32, ncclSum, half, s)), half, "half all-reduce");
    CUCHK(cudaStreamSynchronize(s));
    JOBCHK(x[0] == want, "half all-reduce %d: %g, expected %g", i, x[0], want);
  }

  /* 4 */
  NCCHK(CALL(GroupStart, 0, ncclGroupStart()));
  NCCHK(CALL(AllReduce, 32, ncclAllReduce(x, x, 32, ncclFloat32, ncclSum, world, s)));
  NCCHK(CALL(Broadcast, 32, ncclBroadcast(x + 32, x + 32, 32, ncclFloat32, 0, world, s)));
  in_progress(CALL(GroupEnd, 0, ncclGroupEnd()), world, "group");
  CUCHK(cudaStreamSynchronize(s));

  /* 5 */
  NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(half)));
  NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(world)));
done:
  if (rank == 0) printf("nb_job: %d ranks, non-blocking init, %d all-reduces, split, %d all-reduces, group: all ok\n", n, calls, calls);

  if (truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    int colors = nopoll ? 0 : n > 1 ? 2 : 1, group = nopoll ? 0 : 2;
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"lined_up\": %d, \"comms\": [{\"rank\": %d, \"nranks\": %d}, "
               "{\"rank\": %d, \"nranks\": %d}], \"ops\": {",
            rank, n, calls + group + colors * calls, rank, n, hrank, hsize);
    int first = 1;
    for (int op = 1; op < NCS_OP_LIMIT; op++) {
      if (!g_calls[op]) continue;
      fprintf(f, "%s\n  \"%s\": {\"calls\": %ld, \"count\": %llu, \"bytes\": %llu}", first ? "" : ",",
              ncs_op_name((unsigned)op), g_calls[op], g_count[op], g_count[op] * 4);
      first = 0;
    }
    fprintf(f, "\n }\n}\n");
    JOBCHK(fclose(f) == 0, "cannot write %s", path);
  }
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(x));
  return 0;
}
