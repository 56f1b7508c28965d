/* lifecycle_job — the communicator life cycle on N >= 2 ranks (processes).
 *
 * Usage: tests/jobs/launch.sh N lifecycle_job [--truth DIR]
 * In order, on every rank (checking each result):
 *  1. non-blocking ncclCommInitRankConfig (blocking = 0): ncclInProgress, polled with
 *     ncclCommGetAsyncError until ncclSuccess; an all-reduce on it (ncclInProgress, as NCCL
 *     2.28 returns for a non-blocking communicator, then polled);
 *  2. ncclCommSplit by parity (key = rank) with a blocking config (without one, the children
 *     would inherit the world's non-blocking mode); an all-reduce in the half; CommFinalize +
 *     Destroy;
 *  3. ncclCommShrink excluding the last rank (which does not call it); an all-reduce on the
 *     shrunk communicator; Destroy;
 *  4. ncclCommSplit of everyone (colour 0, blocking), then an all-reduce that the last rank never joins,
 *     so it is in flight on the others; every rank calls ncclCommRevoke, then CommDestroy;
 *  5. on the world communicator, again an all-reduce the last rank never joins; every rank
 *     calls ncclCommAbort (with that operation in flight on all but the last rank).
 * Ground truth per rank: DIR/truth-rank<R>.json with calls per operation (names as in
 * include/ncclscope/ops.h; CommGetAsyncError is a query and is not counted) and
 * "never_completed": how many of this rank's operations were revoked or aborted in flight. */
#include <getopt.h>

#include "job_util.h"
#include "ncclscope/ops.h"

static long g_calls[NCS_OP_LIMIT];
static unsigned long long g_count[NCS_OP_LIMIT];
#define CALL(op, cnt, call) (g_calls[NCS_OP_##op]++, g_count[NCS_OP_##op] += (cnt), (call))

/* Out-of-band step sync through the rendezvous dir: ranks other than the last say their
 * operation is in flight (checked); every rank waits for all of them before revoking/aborting.
 * A revoke or abort by any one rank ends the operation on every rank (the NCCL double's waits
 * give up once any rank aborted or revoked the communicator), so a rank revoking after only its
 * own check could end a slower rank's all-reduce before that rank checked it in flight. */
static void mark(const char *tag, int rank) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s.%d", getenv("NCCLDOUBLE_RDZV"), tag, rank);
  FILE *f = fopen(p, "w");
  JOBCHK(f && fclose(f) == 0, "cannot create %s", p);
}
static void wait_marks(const char *tag, int count) {
  for (int tries = 0; tries < 60000; tries++) {
    int have = 0;
    for (int r = 0; r < count; r++) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s.%d", getenv("NCCLDOUBLE_RDZV"), tag, r);
      have += access(p, F_OK) == 0;
    }
    if (have == count) return;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  JOBCHK(0, "timed out waiting for %s marks", tag);
}

/* Polls a non-blocking communicator until its last operation is launched (or failed). */
static void nb_wait(ncclComm_t c, const char *what) {
  ncclResult_t ae = ncclInProgress;
  for (int i = 0; i < 60000 && ae == ncclInProgress; i++) {
    NCCHK(ncclCommGetAsyncError(c, &ae));
    if (ae == ncclInProgress) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  JOBCHK(ae == ncclSuccess, "%s ended with %d", what, (int)ae);
}

/* An operation's result: ncclSuccess, or ncclInProgress on a non-blocking communicator. */
static void op_ok(ncclResult_t r, ncclComm_t c, const char *what) {
  JOBCHK(r == ncclSuccess || r == ncclInProgress, "%s returned %d", what, (int)r);
  if (r == ncclInProgress) nb_wait(c, what);
}

static void allreduce_check(ncclComm_t c, cudaStream_t s, int32_t *x, int value, int want, const char *what) {
  for (int i = 0; i < 16; i++) x[i] = value;
  op_ok(CALL(AllReduce, 16, ncclAllReduce(x, x, 16, ncclInt32, ncclSum, c, s)), c, what);
  CUCHK(cudaStreamSynchronize(s));
  for (int i = 0; i < 16; i++) JOBCHK(x[i] == want, "%s: got %d want %d", what, x[i], want);
}

int main(int argc, char **argv) {
  const char *truth = NULL;
  static const struct option opts[] = {{"truth", 1, 0, 'g'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (o == 'g') truth = optarg;
    else { fprintf(stderr, "usage: lifecycle_job [--truth DIR]\n"); return 2; }
  }
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1), ndev = 1, last = n - 1;
  JOBCHK(n >= 2, "lifecycle_job needs at least 2 ranks");
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  int32_t *x;
  CUCHK(cudaMalloc((void **)&x, 64));

  /* 1 */
  ncclUniqueId id;
  if (rank == 0) g_calls[NCS_OP_GetUniqueId]++;
  job_unique_id(rank, n, "life", &id);
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.magic = 0xcafebeefu;
  cfg.version = 22809;
  cfg.blocking = 0;
  ncclComm_t world = NULL;
  ncclResult_t r = CALL(CommInitRankConfig, 0, ncclCommInitRankConfig(&world, n, id, rank, &cfg));
  JOBCHK(r == ncclInProgress || r == ncclSuccess, "non-blocking init returned %d", (int)r);
  nb_wait(world, "non-blocking init");
  allreduce_check(world, s, x, rank, n * (n - 1) / 2, "world all-reduce");
  ncclResult_t ae;
  ncclConfig_t bcfg = cfg;
  bcfg.blocking = 1;

  /* 2 */
  ncclComm_t half;
  NCCHK(CALL(CommSplit, 0, ncclCommSplit(world, rank % 2, rank, &half, &bcfg)));
  int want = 0;
  for (int q = rank % 2; q < n; q += 2) want += q;
  allreduce_check(half, s, x, rank, want, "split all-reduce");
  NCCHK(CALL(CommFinalize, 0, ncclCommFinalize(half)));
  NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(half)));

  /* 3 */
  if (rank != last) {
    ncclComm_t shrunk;
    int excl[1] = {last};
    NCCHK(CALL(CommShrink, 0, ncclCommShrink(world, excl, 1, &shrunk, &bcfg, 0 /* NCCL_SHRINK_DEFAULT */)));
    allreduce_check(shrunk, s, x, 1, n - 1, "shrunk all-reduce");
    NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(shrunk)));
  }

  /* 4: revoke with an operation in flight */
  ncclComm_t all;
  NCCHK(CALL(CommSplit, 0, ncclCommSplit(world, 0, rank, &all, &bcfg)));
  int in_flight = 0;
  if (rank != last) {
    NCCHK(CALL(AllReduce, 16, ncclAllReduce(x, x, 16, ncclInt32, ncclSum, all, s)));
    in_flight++;
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    JOBCHK(cudaStreamQuery(s) == cudaErrorNotReady, "the all-reduce without its last rank should be in flight");
    mark("revoke", rank);
  }
  wait_marks("revoke", last);
  NCCHK(CALL(CommRevoke, 0, ncclCommRevoke(all, 0)));
  CUCHK(cudaStreamSynchronize(s));
  NCCHK(ncclCommGetAsyncError(all, &ae));
  JOBCHK(ae == ncclSuccess, "revoked communicator not quiescent: %d", (int)ae);
  NCCHK(CALL(CommDestroy, 0, ncclCommDestroy(all)));

  /* 5: abort with an operation in flight */
  if (rank != last) {
    ncclResult_t r5 = CALL(AllReduce, 16, ncclAllReduce(x, x, 16, ncclInt32, ncclSum, world, s));
    JOBCHK(r5 == ncclInProgress, "an all-reduce on the non-blocking world returned %d", (int)r5);
    in_flight++;
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    JOBCHK(cudaStreamQuery(s) == cudaErrorNotReady, "the all-reduce without its last rank should be in flight");
    mark("abort", rank);
  }
  wait_marks("abort", last);
  NCCHK(CALL(CommAbort, 0, ncclCommAbort(world)));
  CUCHK(cudaStreamSynchronize(s));
  if (rank == 0) printf("lifecycle_job: %d ranks: non-blocking init, split, shrink, revoke and abort in flight: all ok\n", n);

  if (truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"never_completed\": %d, \"ops\": {", rank, n, in_flight);
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
