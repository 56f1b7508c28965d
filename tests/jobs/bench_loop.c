/* bench_loop — a tight loop of small all-reduces, for measuring per-call host overhead.
 *
 * Usage: bench_loop [-n ITERS] [-k SYNC_EVERY] [-c COUNT]
 * On one process it uses a 1-rank communicator; under tests/jobs/launch.sh N it uses one
 * N-rank communicator. Syncs the stream every K calls. Prints one line:
 *   bench_loop ranks=R iters=N count=C sync_every=K ns_per_call=X
 * (rank 0 only), and exits non-zero if the final result is wrong. */
#include "job_util.h"

int main(int argc, char **argv) {
  long iters = 100000, every = 100;
  size_t count = 8;
  int opt;
  while ((opt = getopt(argc, argv, "n:k:c:")) != -1) {
    if (opt == 'n') iters = atol(optarg);
    else if (opt == 'k') every = atol(optarg);
    else if (opt == 'c') count = (size_t)atol(optarg);
    else { fprintf(stderr, "usage: bench_loop [-n ITERS] [-k SYNC_EVERY] [-c COUNT]\n"); return 2; }
  }
  if (iters < 1 || every < 1 || count < 1) { fprintf(stderr, "bench_loop: bad arguments\n"); return 2; }
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  int ndev = 1;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  ncclUniqueId id;
  job_unique_id(rank, world, "bench", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  float *buf;
  CUCHK(cudaMalloc((void **)&buf, count * sizeof *buf));
  for (size_t i = 0; i < count; i++) buf[i] = 1.0f;
  /* warm-up */
  for (int i = 0; i < 100; i++) NCCHK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclMax, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  uint64_t t0 = job_now_ns();
  for (long i = 0; i < iters; i++) {
    NCCHK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclMax, comm, s));
    if ((i + 1) % every == 0) CUCHK(cudaStreamSynchronize(s));
  }
  CUCHK(cudaStreamSynchronize(s));
  uint64_t t1 = job_now_ns();
  for (size_t i = 0; i < count; i++) JOBCHK(buf[i] == 1.0f, "wrong result at %zu: %g", i, buf[i]);
  if (rank == 0)
    printf("bench_loop ranks=%d iters=%ld count=%zu sync_every=%ld ns_per_call=%.1f\n", world, iters,
           count, every, (double)(t1 - t0) / (double)iters);
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(buf));
  return 0;
}
