/* link_check — checks asynchrony and the link model of the NCCL double; PASS:/FAIL: lines.
 *
 * Usage: NCCLDOUBLE_LAT_US=L NCCLDOUBLE_BW_GBPS=B tests/jobs/launch.sh N link_check [-c COUNT]
 * For AllReduce, AllGather, Broadcast, ReduceScatter and a grouped Send/Recv ring, times the
 * operation with CUDA events on its stream and compares with ndbl_model_ns()
 * (tests/doubles/include/nccl_double.h): every one of 3 timed runs must last at least the
 * model (a loaded CPU only adds time, so no upper bound is checked: how close the fastest run
 * comes is printed as a figure). A warm-up of each operation (not timed) touches the pages
 * first. Also checks the call returned before the operation completed: the stream is held by a
 * host function until the call has returned, so the operation cannot have run yet, at any
 * load. Rank 0 prints the verdicts, combined over ranks (all-reduce min), and, on stderr, the
 * measured busbw against the configured bandwidth. */
#include "job_util.h"
#include "include/nccl_double.h"

static void wait_gate(void *p) {
  struct timespec ts = {0, 200000};
  while (!__atomic_load_n((int *)p, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  size_t count = 1 << 20;
  int o;
  while ((o = getopt(argc, argv, "c:")) != -1) {
    if (o == 'c') count = (size_t)atol(optarg);
    else { fprintf(stderr, "usage: link_check [-c COUNT]\n"); return 2; }
  }
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1), ndev = 1, failed = 0;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  double lat, bw;
  ndbl_model_env(&lat, &bw);
  ncclUniqueId id;
  job_unique_id(rank, n, "link", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  float *a, *b;
  int32_t *flag;
  CUCHK(cudaMalloc((void **)&a, count * 4 * (size_t)n));
  CUCHK(cudaMalloc((void **)&b, count * 4 * (size_t)n));
  CUCHK(cudaMalloc((void **)&flag, 8));
  memset(a, 0, count * 4 * (size_t)n);
  flag[0] = flag[1] = 0;
  cudaEvent_t e0, e1;
  CUCHK(cudaEventCreate(&e0));
  CUCHK(cudaEventCreate(&e1));
  static const char *names[] = {"AllReduce", "AllGather", "Broadcast", "ReduceScatter", "SendRecv"};
  static const enum ndbl_rule rules[] = {NDBL_RULE_ALLREDUCE, NDBL_RULE_NTIMES, NDBL_RULE_ONE, NDBL_RULE_NTIMES, NDBL_RULE_ONE};
  for (int k = 0; k < 5; k++) {
    /* a warm-up (w = 0, untimed), then 3 timed runs, each after lining the ranks up so the
     * measured time is the operation's own; every run must last the model (the floor), the
     * fastest must be close to it (a loaded CPU only ever adds time) */
    float ms = 1e30f, slowest = 0;
    int async_ok = 1;
    for (int w = 0; w < 4; w++) {
      NCCHK(ncclAllReduce(flag, flag, 1, ncclInt32, ncclSum, comm, s));
      CUCHK(cudaStreamSynchronize(s));
      int gate = 0;
      CUCHK(cudaLaunchHostFunc(s, wait_gate, &gate));
      CUCHK(cudaEventRecord(e0, s));
      switch (k) {
      case 0: NCCHK(ncclAllReduce(a, b, count, ncclFloat32, ncclSum, comm, s)); break;
      case 1: NCCHK(ncclAllGather(a, b, count, ncclFloat32, comm, s)); break;
      case 2: NCCHK(ncclBroadcast(a, b, count, ncclFloat32, 0, comm, s)); break;
      case 3: NCCHK(ncclReduceScatter(a, b, count, ncclFloat32, ncclSum, comm, s)); break;
      default:
        NCCHK(ncclGroupStart());
        NCCHK(ncclSend(a, count, ncclFloat32, (rank + 1) % n, comm, s));
        NCCHK(ncclRecv(b, count, ncclFloat32, (rank + n - 1) % n, comm, s));
        NCCHK(ncclGroupEnd());
      }
      CUCHK(cudaEventRecord(e1, s));
      int pending = cudaEventQuery(e1) == cudaErrorNotReady;
      __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
      CUCHK(cudaEventSynchronize(e1));
      if (w == 0) continue;
      float t = 0;
      CUCHK(cudaEventElapsedTime(&t, e0, e1));
      if (t < ms) ms = t;
      if (t > slowest) slowest = t;
      async_ok &= pending;
    }
    uint64_t model = ndbl_model_ns(rules[k], count, 4, n, lat, bw);
    double meas = ms * 1e6;
    int ok = meas >= (double)model * 0.999;
    flag[0] = ok;
    flag[1] = async_ok;
    NCCHK(ncclAllReduce(flag, flag, 2, ncclInt32, ncclMin, comm, s));
    CUCHK(cudaStreamSynchronize(s));
    if (!flag[0] || !flag[1]) failed = 1;
    double S = (double)count * 4 * (rules[k] == NDBL_RULE_NTIMES ? n : 1);
    double f = rules[k] == NDBL_RULE_ALLREDUCE ? 2.0 * (n - 1) / n : rules[k] == NDBL_RULE_NTIMES ? (double)(n - 1) / n : 1;
    fprintf(stderr, "rank %d %s: measured %.3f ms (slowest of 3: %.3f), model %.3f ms, busbw %.3f GB/s (configured %.3f)\n",
            rank, names[k], ms, slowest, model / 1e6, S / (meas) * f, bw);
    if (rank == 0) {
      printf("%s: link model %s on %d ranks lasts its modelled time\n", flag[0] ? "PASS" : "FAIL", names[k], n);
      printf("%s: %s on %d ranks returns before it completes\n", flag[1] ? "PASS" : "FAIL", names[k], n);
    }
  }
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaEventDestroy(e0));
  CUCHK(cudaEventDestroy(e1));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(a));
  CUCHK(cudaFree(b));
  CUCHK(cudaFree(flag));
  return failed;
}
