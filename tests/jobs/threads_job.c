/* threads_job — T threads calling NCCL at the same time in one process.
 *
 * Usage: threads_job [-t THREADS] [-n CALLS] [--all] [--truth FILE]
 * Default: each thread makes its own 1-rank communicator (ncclGetUniqueId + ncclCommInitRank)
 * and stream, and issues CALLS operations (all-reduce, broadcast, all-gather in turn), checking
 * each result. With --all, one ncclCommInitAll(THREADS) communicator is shared: thread i is
 * rank i, and the operations are real THREADS-rank collectives. Prints (deterministically)
 * the calls per operation over all threads; --truth writes the same counts with count and
 * bytes as JSON (names as in include/ncclscope/ops.h). Exit 1 on a wrong result. */
#include <getopt.h>
#include <pthread.h>

#include "job_util.h"
#include "ncclscope/ops.h"

static int g_threads = 16, g_calls = 200, g_all, g_ndev = 1;
static ncclComm_t *g_comms;
static struct { long calls; unsigned long long count, bytes; } g_truth[NCS_OP_LIMIT];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_failed;

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg, n = g_all ? g_threads : 1, me = g_all ? t : 0;
  long local[NCS_OP_LIMIT] = {0};
  unsigned long long lcount[NCS_OP_LIMIT] = {0};
  CUCHK(cudaSetDevice(t % g_ndev));
  ncclComm_t comm;
  if (g_all) comm = g_comms[t];
  else {
    ncclUniqueId id;
    NCCHK(ncclGetUniqueId(&id));
    NCCHK(ncclCommInitRank(&comm, 1, id, 0));
    local[NCS_OP_GetUniqueId]++;
    local[NCS_OP_CommInitRank]++;
  }
  cudaStream_t s;
  CUCHK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t cnt = 64;
  float *a, *b;
  CUCHK(cudaMalloc((void **)&a, cnt * 4));
  CUCHK(cudaMalloc((void **)&b, cnt * 4 * (size_t)n));
  for (int i = 0; i < g_calls; i++) {
    for (size_t k = 0; k < cnt; k++) a[k] = (float)(me + i % 5);
    int kind = i % 3;
    if (kind == 0) NCCHK(ncclAllReduce(a, b, cnt, ncclFloat32, ncclSum, comm, s));
    else if (kind == 1) NCCHK(ncclBroadcast(a, b, cnt, ncclFloat32, 0, comm, s));
    else NCCHK(ncclAllGather(a, b, cnt, ncclFloat32, comm, s));
    int op = kind == 0 ? NCS_OP_AllReduce : kind == 1 ? NCS_OP_Broadcast : NCS_OP_AllGather;
    local[op]++;
    lcount[op] += cnt;
    CUCHK(cudaStreamSynchronize(s));
    float want0 = kind == 0 ? (float)(n * (n - 1) / 2 + n * (i % 5)) : (float)(i % 5);
    if (b[0] != want0 || (kind == 2 && b[cnt * (size_t)(n - 1)] != (float)(n - 1 + i % 5))) {
      fprintf(stderr, "thread %d call %d: wrong result %g (want %g)\n", t, i, b[0], want0);
      g_failed = 1;
    }
  }
  if (!g_all) { NCCHK(ncclCommDestroy(comm)); local[NCS_OP_CommDestroy]++; }
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

int main(int argc, char **argv) {
  const char *truth = NULL;
  static const struct option opts[] = {{"all", 0, 0, 'a'}, {"truth", 1, 0, 'g'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "t:n:", opts, NULL)) != -1) {
    if (o == 't') g_threads = atoi(optarg);
    else if (o == 'n') g_calls = atoi(optarg);
    else if (o == 'a') g_all = 1;
    else if (o == 'g') truth = optarg;
    else { fprintf(stderr, "usage: threads_job [-t THREADS] [-n CALLS] [--all] [--truth FILE]\n"); return 2; }
  }
  if (g_threads < 1 || g_threads > 256 || g_calls < 0) { fprintf(stderr, "threads_job: bad arguments\n"); return 2; }
  CUCHK(cudaGetDeviceCount(&g_ndev));
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
  free(g_comms);
  free(th);
  printf("threads_job: %d threads%s, %d calls each\n", g_threads, g_all ? " (ncclCommInitAll)" : "", g_calls);
  for (int op = 1; op < NCS_OP_LIMIT; op++)
    if (g_truth[op].calls) printf("  %s %ld\n", ncs_op_name((unsigned)op), g_truth[op].calls);
  if (truth) {
    FILE *f = fopen(truth, "w");
    JOBCHK(f, "cannot write %s", truth);
    fprintf(f, "{\"pid\": %d, \"threads\": %d, \"ops\": {", (int)getpid(), g_threads);
    int first = 1;
    for (int op = 1; op < NCS_OP_LIMIT; op++) {
      if (!g_truth[op].calls) continue;
      fprintf(f, "%s\n  \"%s\": {\"calls\": %ld, \"count\": %llu, \"bytes\": %llu}", first ? "" : ",",
              ncs_op_name((unsigned)op), g_truth[op].calls, g_truth[op].count, g_truth[op].bytes);
      first = 0;
    }
    fprintf(f, "\n }\n}\n");
    JOBCHK(fclose(f) == 0, "cannot write %s", truth);
  }
  return g_failed ? 1 : 0;
}
