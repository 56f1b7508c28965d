/* capture_job — NCCL operations captured into a CUDA graph and replayed.
 *
 * Usage: [tests/jobs/launch.sh N] capture_job [-r REPLAYS] [--count2 N] [--truth DIR]
 * Each rank: one ordinary fp64 all-reduce of 1000 elements; then, under cudaStreamBeginCapture,
 * two in-place fp64 all-reduces of --count2 elements (default 1000) and a host function are
 * captured (the host calls return but nothing runs); the graph is instantiated and launched
 * REPLAYS times, each replay running both all-reduces (data grows by n² per replay) and the
 * host function; every value is checked. The NCCL calls made by the host are 3 all-reduces (2
 * of them captured); replays make no NCCL call, so an interposer cannot see them. Ground truth:
 * DIR/truth-rank<R>.json with "ops" (the calls made), "captured": {"AllReduce": 2},
 * "replays": REPLAYS, "captured_count" (--count2), and what the job's "GPU" ran during the
 * replays, watched through cudaDoubleSetTruthHook (the moments CUPTI reports):
 * "replay_kernels" (NCCL kernels) and "replay_kernel_ns" (their summed durations).
 * Deterministic stdout from rank 0. */
#include <getopt.h>
#include <pthread.h>

#include "job_util.h"

static void bump(void *p) { (*(int *)p)++; }

/* the NCCL kernels the "GPU" ran while g_replaying is set */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_replaying;
static uint64_t g_replay_kernels, g_replay_ns;
static void on_truth(const struct cudaDoubleActivity *a) {
  if (a->kind != cudaDoubleActivityKernel || !a->name || strncmp(a->name, "ncclDevKernel_", 14)) return;
  pthread_mutex_lock(&g_mu);
  if (g_replaying) { g_replay_kernels++; g_replay_ns += a->end_ns - a->start_ns; }
  pthread_mutex_unlock(&g_mu);
}

int main(int argc, char **argv) {
  int replays = 3;
  const char *truth = NULL;
  size_t cnt2 = 1000;
  static const struct option opts[] = {{"truth", 1, 0, 'g'}, {"count2", 1, 0, 'c'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "r:", opts, NULL)) != -1) {
    if (o == 'r') replays = atoi(optarg);
    else if (o == 'g') truth = optarg;
    else if (o == 'c') cnt2 = (size_t)atol(optarg);
    else { fprintf(stderr, "usage: capture_job [-r REPLAYS] [--count2 N] [--truth DIR]\n"); return 2; }
  }
  if (truth) cudaDoubleSetTruthHook(on_truth);
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1), ndev = 1;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  ncclUniqueId id;
  job_unique_id(rank, n, "capture", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CUCHK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t cnt = 1000;
  double *x, *y;
  CUCHK(cudaMalloc((void **)&x, cnt * 8));
  CUCHK(cudaMalloc((void **)&y, cnt2 * 8));
  for (size_t i = 0; i < cnt; i++) x[i] = 1.0 + (double)(i % 3);
  for (size_t i = 0; i < cnt2; i++) y[i] = 1.0 + (double)(i % 3);
  NCCHK(ncclAllReduce(x, x, cnt, ncclFloat64, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < cnt; i++) JOBCHK(x[i] == n * (1.0 + (double)(i % 3)), "plain all-reduce [%zu]", i);

  int hits = 0;
  CUCHK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  NCCHK(ncclAllReduce(y, y, cnt2, ncclFloat64, ncclSum, comm, s));
  NCCHK(ncclAllReduce(y, y, cnt2, ncclFloat64, ncclSum, comm, s));
  CUCHK(cudaLaunchHostFunc(s, bump, &hits));
  cudaGraph_t g;
  CUCHK(cudaStreamEndCapture(s, &g));
  for (size_t i = 0; i < cnt2; i++) JOBCHK(y[i] == 1.0 + (double)(i % 3), "captured work must not run [%zu]", i);
  JOBCHK(hits == 0, "captured host function ran");
  cudaGraphExec_t ge;
  CUCHK(cudaGraphInstantiate(&ge, g, 0));
  double mul = 1;
  pthread_mutex_lock(&g_mu);
  g_replaying = 1;
  pthread_mutex_unlock(&g_mu);
  for (int r = 0; r < replays; r++) {
    CUCHK(cudaGraphLaunch(ge, s));
    CUCHK(cudaStreamSynchronize(s));
    mul *= (double)n * n;
    for (size_t i = 0; i < cnt2; i++) JOBCHK(y[i] == mul * (1.0 + (double)(i % 3)), "replay %d [%zu]", r, i);
  }
  pthread_mutex_lock(&g_mu);
  g_replaying = 0;
  pthread_mutex_unlock(&g_mu);
  JOBCHK(hits == replays, "host function ran %d times, want %d", hits, replays);
  CUCHK(cudaGraphExecDestroy(ge));
  CUCHK(cudaGraphDestroy(g));
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(x));
  CUCHK(cudaFree(y));
  if (rank == 0) printf("capture_job: %d ranks, 1 plain + 2 captured all-reduces, %d replays: all ok\n", n, replays);
  if (truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"ops\": {\n", rank, n);
    if (rank == 0) fprintf(f, "  \"GetUniqueId\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n");
    fprintf(f, "  \"CommInitRank\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n"
               "  \"CommDestroy\": {\"calls\": 1, \"count\": 0, \"bytes\": 0},\n"
               "  \"AllReduce\": {\"calls\": 3, \"count\": %zu, \"bytes\": %zu}\n },\n"
               " \"captured\": {\"AllReduce\": 2}, \"replays\": %d,\n"
               " \"captured_count\": %zu, \"replay_kernels\": %llu, \"replay_kernel_ns\": %llu}\n",
            cnt + 2 * cnt2, (cnt + 2 * cnt2) * 8, replays, cnt2, (unsigned long long)g_replay_kernels,
            (unsigned long long)g_replay_ns);
    JOBCHK(fclose(f) == 0, "cannot write %s", path);
  }
  return 0;
}
