/* site_job — NCCL calls from distinct, named functions, with its own truth about where they are.
 *
 * Usage (under tests/jobs/launch.sh N, N even): site_job [--steps N] [--truth FILE] [--hang R]
 *   [--step-threads]
 * The world communicator is made with ncclCommInitRankConfig and commName "trainer-world"; it
 * is split by color rank % 2 with no name (config NULL). Per step:
 *   sync_gradients()  an AllReduce of 4 Mi floats on the world (the double's model makes it
 *                     the slowest collective by far: latency + bytes / bandwidth)
 *   gather_metrics()  an AllGather of 16 floats per rank on the world
 *   share_halves()    an AllReduce of 1024 floats on the split communicator
 * each waiting for its stream. --hang R: after the last step every rank but R calls
 * sync_gradients once more and R never does (it sleeps until killed): a hang whose collective
 * was issued from sync_gradients.
 * --step-threads: each step runs on a thread of its own, started for it and joined before the
 * next (threads that come and go: every step's calls are a new thread's first).
 * --truth FILE (rank 0): one line per function, "NAME FILE:LINE", the source line of its NCCL
 * call (each call sits on one line and records __LINE__ there): what the decoder must name. */
#include <limits.h>
#include <pthread.h>

#include "job_util.h"

#define COUNT_BIG (4u << 20)
#define COUNT_SMALL 16u
#define COUNT_HALF 1024u

static int line_sync, line_gather, line_share;

static __attribute__((noinline)) void sync_gradients(ncclComm_t world, float *buf, cudaStream_t s) {
  line_sync = __LINE__; NCCHK(ncclAllReduce(buf, buf, COUNT_BIG, ncclFloat32, ncclSum, world, s));
  CUCHK(cudaStreamSynchronize(s));
}

static __attribute__((noinline)) void gather_metrics(ncclComm_t world, const float *in, float *out, cudaStream_t s) {
  line_gather = __LINE__; NCCHK(ncclAllGather(in, out, COUNT_SMALL, ncclFloat32, world, s));
  CUCHK(cudaStreamSynchronize(s));
}

static __attribute__((noinline)) void share_halves(ncclComm_t half, float *buf, cudaStream_t s) {
  line_share = __LINE__; NCCHK(ncclAllReduce(buf, buf, COUNT_HALF, ncclFloat32, ncclSum, half, s));
  CUCHK(cudaStreamSynchronize(s));
}

struct step_args { ncclComm_t wc, hc; float *big, *in, *out, *half; cudaStream_t s; };
static void one_step(const struct step_args *a) {
  sync_gradients(a->wc, a->big, a->s);
  gather_metrics(a->wc, a->in, a->out, a->s);
  share_halves(a->hc, a->half, a->s);
}
static void *step_thread(void *arg) { one_step(arg); return NULL; }

int main(int argc, char **argv) {
  int steps = 3, hang = -1, step_threads = 0;
  const char *truth = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--steps")) { steps = atoi(v); i++; }
    else if (!strcmp(a, "--truth")) { truth = v; i++; }
    else if (!strcmp(a, "--hang")) { hang = atoi(v); i++; }
    else if (!strcmp(a, "--step-threads")) step_threads = 1;
    else { fprintf(stderr, "site_job: bad argument %s\n", a); return 2; }
  }
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  job_unique_id(rank, world, "site", &id);
  ncclConfig_t cfg; /* as NCCL_CONFIG_INITIALIZER makes it: every attribute undefined but the name */
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.magic = 0xcafebeefu;
  cfg.version = 22809;
  cfg.blocking = cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = cfg.splitShare = cfg.trafficClass = INT_MIN;
  cfg.collnetEnable = cfg.CTAPolicy = cfg.shrinkShare = cfg.nvlsCTAs = cfg.nChannelsPerNetPeer = INT_MIN;
  cfg.nvlinkCentricSched = INT_MIN;
  cfg.commName = "trainer-world";
  ncclComm_t wc, hc;
  NCCHK(ncclCommInitRankConfig(&wc, world, id, rank, &cfg));
  NCCHK(ncclCommSplit(wc, rank % 2, rank, &hc, NULL));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  float *big, *in, *out, *half;
  CUCHK(cudaMalloc((void **)&big, COUNT_BIG * sizeof(float)));
  CUCHK(cudaMalloc((void **)&in, COUNT_SMALL * sizeof(float)));
  CUCHK(cudaMalloc((void **)&out, COUNT_SMALL * sizeof(float) * (size_t)world));
  CUCHK(cudaMalloc((void **)&half, COUNT_HALF * sizeof(float)));
  struct step_args sa = {wc, hc, big, in, out, half, s};
  for (int step = 0; step < steps; step++) {
    pthread_t th;
    if (!step_threads) one_step(&sa);
    else {
      JOBCHK(pthread_create(&th, NULL, step_thread, &sa) == 0, "cannot start a step's thread");
      pthread_join(th, NULL);
    }
  }
  if (truth && rank == 0) {
    FILE *f = fopen(truth, "w");
    JOBCHK(f, "cannot write %s", truth);
    fprintf(f, "sync_gradients %s:%d\ngather_metrics %s:%d\nshare_halves %s:%d\n", __FILE__, line_sync,
            __FILE__, line_gather, __FILE__, line_share);
    JOBCHK(fclose(f) == 0, "cannot write %s", truth);
  }
  if (hang >= 0) {
    if (rank == hang) for (;;) pause();
    sync_gradients(wc, big, s); /* waits for rank `hang` until killed */
  }
  NCCHK(ncclCommDestroy(hc));
  NCCHK(ncclCommDestroy(wc));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(big));
  CUCHK(cudaFree(in));
  CUCHK(cudaFree(out));
  CUCHK(cudaFree(half));
  return 0;
}
