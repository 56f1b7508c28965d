/* threads_job — T threads calling NCCL at the same time in one process.
 *
 * Usage: threads_job [-t THREADS] [-n CALLS] [--all | --procs [--nonblocking]] [--split | --split-early]
 *                    [--stall RANK] [--truth FILE]
 * Default: each thread makes its own 1-rank communicator (ncclGetUniqueId + ncclCommInitRank)
 * and stream, and issues CALLS operations (all-reduce, broadcast, all-gather in turn), checking
 * each result. With --all, one ncclCommInitAll(THREADS) communicator is shared: thread i is
 * rank i, and the operations are real THREADS-rank collectives. With --procs, a rank per thread
 * across the processes of tests/jobs/launch.sh: WORLD_SIZE processes of THREADS threads make one
 * communicator of WORLD_SIZE x THREADS ranks, thread t of process RANK being rank
 * RANK x THREADS + t, each thread calling ncclCommInitRank itself (--nonblocking: with
 * ncclCommInitRankConfig, blocking = 0, polled with ncclCommGetAsyncError, as are its
 * collectives). --stall RANK: that rank's thread never enters its last collective (it sleeps
 * until killed): the others wait in it, a hang on a rank that lives on a thread. --split: after
 * its collectives each rank splits the shared communicator (ncclCommSplit, color 0 for ranks
 * below 2n/3, else 1; key its rank) and runs 6 all-reduces on its child: communicators of
 * three sizes (6 ranks: 6, 4 and 2), each with its own ring connections; --split-early splits
 * right after init, before the first collective on the parent (the parent then connects after
 * its child was made). Prints
 * (deterministically) the calls per operation over all threads; --truth writes the same counts
 * with count and bytes as JSON (names as in include/ncclscope/ops.h), plus the ranks this
 * process holds and the collectives each entered (on the shared communicator), the world size and
 * the sizes of the split children (0 when none) (--procs: FILE.RANK, one per process), and
 * "measured": the process's own timing of its communication: each collective of the main loop
 * bracketed on its stream by two CUDA events of the job's (recorded just before the call and
 * just after it, so the GPU interval the shim records lies inside the bracket), placed on one
 * time line by their elapsed time from one event recorded before the threads start; comm_ns is
 * the union of every thread's brackets (an instant counts once), wall_ns the host time from
 * before the process's first NCCL call to after its last (docs/METRICS.md: the process's
 * window; the shim's window lies inside it).
 * Exit 1 on a wrong result. */
#include <getopt.h>
#include <pthread.h>

#include "job_util.h"
#include "ncclscope/ops.h"

static int g_threads = 16, g_calls = 200, g_all, g_ndev = 1, g_procs, g_nb, g_stall = -1;
static int g_prank, g_pworld = 1, g_plocal;
static int g_split, g_size0, g_size1;     /* --split: the sizes of the two children this process saw */  /* --procs: this process's RANK, WORLD_SIZE, LOCAL_RANK */
static ncclUniqueId g_id;
static long *g_coll;                     /* [threads] collectives each thread's rank entered */
static ncclComm_t *g_comms;
static struct { long calls; unsigned long long count, bytes; } g_truth[NCS_OP_LIMIT];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_failed;
static uint64_t (*g_brackets)[2];        /* [threads * calls]: thread t's i-th collective's bracket */
static uint64_t g_first_ns, g_last_ns;   /* before the first NCCL call, after the last */
static cudaEvent_t g_base;               /* the brackets' zero */

/* A non-blocking communicator's call: ncclInProgress or done; polled until it is done. */
static void nb_wait(ncclResult_t r, ncclComm_t c, const char *what) {
  JOBCHK(r == ncclSuccess || r == ncclInProgress, "%s returned %d", what, (int)r);
  ncclResult_t ae = ncclInProgress;
  for (int i = 0; i < 60000 && ae == ncclInProgress; i++) {
    NCCHK(ncclCommGetAsyncError(c, &ae));
    if (ae == ncclInProgress) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  JOBCHK(ae == ncclSuccess, "%s ended with %d", what, (int)ae);
}
#define COLL(call, what) do { if (g_nb) nb_wait((call), comm, what); else NCCHK(call); } while (0)

/* Ranks below 2n/3 in one child (*half), the rest in another: communicators of three sizes.
 * *half is the caller's variable: a non-blocking split publishes the child there, and the shim
 * adopts it by reading that variable when the child is first used (docs/SHIM.md). */
static void split_of(ncclComm_t comm, int n, int me, long *local, ncclComm_t *half) {
  *half = NULL;
  if (n < 2) return;
  ncclResult_t r = ncclCommSplit(comm, me < (2 * n + 2) / 3 ? 0 : 1, me, half, NULL);
  if (g_nb) nb_wait(r, comm, "split"); /* the child inherits non-blocking: published when done */
  else NCCHK(r);
  local[NCS_OP_CommSplit]++;
  JOBCHK(__atomic_load_n(half, __ATOMIC_ACQUIRE) != NULL, "split: no child");
}

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  int n = g_all ? g_threads : g_procs ? g_pworld * g_threads : 1;
  int me = g_all ? t : g_procs ? g_prank * g_threads + t : 0;
  long local[NCS_OP_LIMIT] = {0};
  unsigned long long lcount[NCS_OP_LIMIT] = {0};
  CUCHK(cudaSetDevice((g_procs ? g_plocal * g_threads + t : t) % g_ndev));
  ncclComm_t comm;
  if (g_all) comm = g_comms[t];
  else if (g_procs && g_nb) {
    ncclConfig_t cfg; /* as NCCL_CONFIG_INITIALIZER sets it, then blocking = 0 */
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.magic = 0xcafebeefu;
    cfg.version = 22809;
    cfg.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm, n, g_id, me, &cfg);
    nb_wait(r, comm, "non-blocking init");
    local[NCS_OP_CommInitRankConfig]++;
  } else if (g_procs) {
    NCCHK(ncclCommInitRank(&comm, n, g_id, me));
    local[NCS_OP_CommInitRank]++;
  } else {
    ncclUniqueId id;
    NCCHK(ncclGetUniqueId(&id));
    NCCHK(ncclCommInitRank(&comm, 1, id, 0));
    local[NCS_OP_GetUniqueId]++;
    local[NCS_OP_CommInitRank]++;
  }
  cudaStream_t s;
  CUCHK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ncclComm_t half = NULL;
  if (g_split == 2) split_of(comm, n, me, local, &half); /* --split-early */
  const size_t cnt = 64;
  cudaEvent_t eb, ee;
  CUCHK(cudaEventCreate(&eb));
  CUCHK(cudaEventCreate(&ee));
  float *a, *b;
  CUCHK(cudaMalloc((void **)&a, cnt * 4));
  CUCHK(cudaMalloc((void **)&b, cnt * 4 * (size_t)n));
  for (int i = 0; i < g_calls; i++) {
    if (me == g_stall && i == g_calls - 1 && n > 1) /* never enters its last collective */
      for (;;) nanosleep(&(struct timespec){1, 0}, NULL);
    for (size_t k = 0; k < cnt; k++) a[k] = (float)(me + i % 5);
    int kind = i % 3;
    CUCHK(cudaEventRecord(eb, s));
    if (kind == 0) COLL(ncclAllReduce(a, b, cnt, ncclFloat32, ncclSum, comm, s), "all-reduce");
    else if (kind == 1) COLL(ncclBroadcast(a, b, cnt, ncclFloat32, 0, comm, s), "broadcast");
    else COLL(ncclAllGather(a, b, cnt, ncclFloat32, comm, s), "all-gather");
    g_coll[t]++;
    int op = kind == 0 ? NCS_OP_AllReduce : kind == 1 ? NCS_OP_Broadcast : NCS_OP_AllGather;
    local[op]++;
    lcount[op] += cnt;
    CUCHK(cudaEventRecord(ee, s));
    CUCHK(cudaStreamSynchronize(s));
    float ms0, ms1;
    CUCHK(cudaEventElapsedTime(&ms0, g_base, eb));
    CUCHK(cudaEventElapsedTime(&ms1, g_base, ee));
    g_brackets[(size_t)t * (size_t)g_calls + (size_t)i][0] = (uint64_t)((double)ms0 * 1e6);
    g_brackets[(size_t)t * (size_t)g_calls + (size_t)i][1] = (uint64_t)((double)ms1 * 1e6);
    float want0 = kind == 0 ? (float)(n * (n - 1) / 2 + n * (i % 5)) : (float)(i % 5);
    if (b[0] != want0 || (kind == 2 && b[cnt * (size_t)(n - 1)] != (float)(n - 1 + i % 5))) {
      fprintf(stderr, "thread %d call %d: wrong result %g (want %g)\n", t, i, b[0], want0);
      g_failed = 1;
    }
  }
  if (g_split && !half) split_of(comm, n, me, local, &half);
  if (half) {
    int color = me < (2 * n + 2) / 3 ? 0 : 1, hn = 0, hr = -1;
    NCCHK(ncclCommCount(half, &hn));
    NCCHK(ncclCommUserRank(half, &hr));
    for (int i = 0; i < 6; i++) {
      for (size_t k = 0; k < cnt; k++) a[k] = (float)hr;
      if (g_nb) nb_wait(ncclAllReduce(a, b, cnt, ncclFloat32, ncclSum, half, s), half, "split all-reduce");
      else NCCHK(ncclAllReduce(a, b, cnt, ncclFloat32, ncclSum, half, s));
      CUCHK(cudaStreamSynchronize(s));
      if (b[0] != (float)(hn * (hn - 1) / 2)) { fprintf(stderr, "rank %d split all-reduce %d: %g\n", me, i, b[0]); g_failed = 1; }
      local[NCS_OP_AllReduce]++;
      lcount[NCS_OP_AllReduce] += cnt;
    }
    pthread_mutex_lock(&g_mu);
    if (color == 0) g_size0 = hn; else g_size1 = hn;
    pthread_mutex_unlock(&g_mu);
    NCCHK(ncclCommDestroy(half));
    local[NCS_OP_CommDestroy]++;
  }
  if (!g_all) { NCCHK(ncclCommDestroy(comm)); local[NCS_OP_CommDestroy]++; }
  (void)me;
  CUCHK(cudaEventDestroy(eb));
  CUCHK(cudaEventDestroy(ee));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(a));
  CUCHK(cudaFree(b));
  pthread_mutex_lock(&g_mu);
  for (int op = 0; op < NCS_OP_LIMIT; op++) {
    g_truth[op].calls += local[op];
    g_truth[op].count += lcount[op];
    g_truth[op].bytes += lcount[op] * 4;
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static int cmp_bracket(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}
/* The union of every thread's brackets (those of collectives entered), in ns. */
static uint64_t bracket_union(void) {
  size_t n = (size_t)g_threads * (size_t)g_calls;
  uint64_t total = 0, cs = 0, ce = 0;
  qsort(g_brackets, n, sizeof *g_brackets, cmp_bracket);
  for (size_t i = 0; i < n; i++) {
    uint64_t s = g_brackets[i][0], e = g_brackets[i][1];
    if (e <= s) continue;
    if (s > ce) { total += ce - cs; cs = s; ce = e; }
    else if (e > ce) ce = e;
  }
  return total + (ce - cs);
}

int main(int argc, char **argv) {
  const char *truth = NULL;
  static const struct option opts[] = {{"all", 0, 0, 'a'}, {"truth", 1, 0, 'g'}, {"procs", 0, 0, 'p'},
                                       {"nonblocking", 0, 0, 'b'}, {"stall", 1, 0, 's'}, {"split", 0, 0, 'x'}, {"split-early", 0, 0, 'y'},
                                       {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "t:n:", opts, NULL)) != -1) {
    if (o == 't') g_threads = atoi(optarg);
    else if (o == 'n') g_calls = atoi(optarg);
    else if (o == 'a') g_all = 1;
    else if (o == 'p') g_procs = 1;
    else if (o == 'b') g_nb = 1;
    else if (o == 's') g_stall = atoi(optarg);
    else if (o == 'x') g_split = 1;
    else if (o == 'y') g_split = 2;
    else if (o == 'g') truth = optarg;
    else {
      fprintf(stderr, "usage: threads_job [-t THREADS] [-n CALLS] [--all | --procs [--nonblocking]] [--split | --split-early] [--stall RANK] [--truth FILE]\n");
      return 2;
    }
  }
  if (g_threads < 1 || g_threads > 256 || g_calls < 0 || (g_all && g_procs) || (g_nb && !g_procs)) {
    fprintf(stderr, "threads_job: bad arguments\n");
    return 2;
  }
  CUCHK(cudaGetDeviceCount(&g_ndev));
  g_coll = calloc((size_t)g_threads, sizeof *g_coll);
  g_brackets = calloc((size_t)g_threads * (size_t)(g_calls ? g_calls : 1), sizeof *g_brackets);
  JOBCHK(g_coll && g_brackets, "out of memory");
  g_first_ns = job_now_ns();
  CUCHK(cudaEventCreate(&g_base));
  CUCHK(cudaEventRecord(g_base, 0));
  CUCHK(cudaEventSynchronize(g_base));
  if (g_procs) {
    g_prank = job_env_int("RANK", 0);
    g_pworld = job_env_int("WORLD_SIZE", 1);
    g_plocal = job_env_int("LOCAL_RANK", 0);
    job_unique_id(g_prank, g_pworld, "threads", &g_id);
    if (g_prank == 0) g_truth[NCS_OP_GetUniqueId].calls = 1;
  }
  if (g_all) {
    g_comms = calloc((size_t)g_threads, sizeof *g_comms);
    int *devs = calloc((size_t)g_threads, sizeof *devs);
    for (int i = 0; i < g_threads; i++) devs[i] = i % g_ndev;
    NCCHK(ncclCommInitAll(g_comms, g_threads, devs));
    g_truth[NCS_OP_CommInitAll].calls = 1;
    free(devs);
  }
  pthread_t *th = calloc((size_t)g_threads, sizeof *th);
  for (int i = 0; i < g_threads; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < g_threads; i++) pthread_join(th[i], NULL);
  if (g_all) {
    for (int i = 0; i < g_threads; i++) NCCHK(ncclCommDestroy(g_comms[i]));
    g_truth[NCS_OP_CommDestroy].calls += g_threads;
  }
  g_last_ns = job_now_ns();
  free(g_comms);
  free(th);
  if (!g_procs || g_prank == 0)
    printf("threads_job: %d threads%s, %d calls each\n", g_threads,
           g_all ? " (ncclCommInitAll)" : g_procs ? (g_nb ? " per process (a non-blocking rank per thread)" : " per process (a rank per thread)") : "",
           g_calls);
  for (int op = 1; op < NCS_OP_LIMIT && (!g_procs || g_prank == 0); op++)
    if (g_truth[op].calls) printf("  %s %ld\n", ncs_op_name((unsigned)op), g_truth[op].calls);
  char tpath[4096];
  if (truth && g_procs) { /* one file per process: FILE.RANK */
    snprintf(tpath, sizeof tpath, "%s.%d", truth, g_prank);
    truth = tpath;
  }
  if (truth) {
    FILE *f = fopen(truth, "w");
    JOBCHK(f, "cannot write %s", truth);
    fprintf(f, "{\"pid\": %d, \"threads\": %d, \"ranks\": {", (int)getpid(), g_threads);
    for (int t = 0; t < g_threads && (g_all || g_procs); t++)
      fprintf(f, "%s\"%d\": %ld", t ? ", " : "", g_all ? t : g_prank * g_threads + t, g_coll[t]);
    int world = g_all ? g_threads : g_procs ? g_pworld * g_threads : 1;
    fprintf(f, "}, \"world\": %d, \"split_sizes\": [%d, %d], \"ops\": {", world, g_size0, g_size1);
    int first = 1;
    for (int op = 1; op < NCS_OP_LIMIT; op++) {
      if (!g_truth[op].calls) continue;
      fprintf(f, "%s\n  \"%s\": {\"calls\": %ld, \"count\": %llu, \"bytes\": %llu}", first ? "" : ",",
              ncs_op_name((unsigned)op), g_truth[op].calls, g_truth[op].count, g_truth[op].bytes);
      first = 0;
    }
    uint64_t union_ns = bracket_union();
    fprintf(f, "\n },\n \"measured\": {\"comm_ns\": %llu, \"wall_ns\": %llu, \"calls\": %lld}\n}\n",
            (unsigned long long)union_ns, (unsigned long long)(g_last_ns - g_first_ns), (long long)g_threads * g_calls);
    JOBCHK(fclose(f) == 0, "cannot write %s", truth);
  }
  free(g_coll);
  free(g_brackets);
  return g_failed ? 1 : 0;
}
