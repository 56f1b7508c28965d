/* kernel_loop — a tight loop of empty compute kernels on one stream, for measuring what kernel
 * activity costs per kernel (scripts/bench_overlap.sh).
 *
 * Usage: kernel_loop [-n KERNELS] [-k SYNC_EVERY]
 * One 1-rank communicator and one all-reduce first (so a preloaded shim activates), then
 * KERNELS zero-length kernels (cudaDoubleLaunchKernel) on one stream, synced every K. Prints
 *   kernel_loop kernels=N sync_every=K ns_per_kernel=X cpu_ns_per_kernel=Y
 * X: host wall time per kernel over the loop; Y: the whole process's CPU time (every thread:
 * the stream worker, CUPTI's and the shim's) per kernel over the loop and until exit's flush is
 * not included. Exits non-zero on a CUDA or NCCL error. */
#include <sys/resource.h>

#include "job_util.h"

static uint64_t cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

int main(int argc, char **argv) {
  long n = 100000, every = 100;
  int opt;
  while ((opt = getopt(argc, argv, "n:k:")) != -1) {
    if (opt == 'n') n = atol(optarg);
    else if (opt == 'k') every = atol(optarg);
    else { fprintf(stderr, "usage: kernel_loop [-n KERNELS] [-k SYNC_EVERY]\n"); return 2; }
  }
  if (n < 1 || every < 1) { fprintf(stderr, "kernel_loop: bad arguments\n"); return 2; }
  CUCHK(cudaSetDevice(0));
  ncclUniqueId id;
  NCCHK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  float *buf;
  CUCHK(cudaMalloc((void **)&buf, sizeof *buf));
  *buf = 1.0f;
  NCCHK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s));
  for (int i = 0; i < 100; i++) CUCHK(cudaDoubleLaunchKernel(s, "bench_kernel", 0)); /* warm-up */
  CUCHK(cudaStreamSynchronize(s));
  uint64_t t0 = job_now_ns(), c0 = cpu_ns();
  for (long i = 0; i < n; i++) {
    CUCHK(cudaDoubleLaunchKernel(s, "bench_kernel", 0));
    if ((i + 1) % every == 0) CUCHK(cudaStreamSynchronize(s));
  }
  CUCHK(cudaStreamSynchronize(s));
  uint64_t t1 = job_now_ns(), c1 = cpu_ns();
  printf("kernel_loop kernels=%ld sync_every=%ld ns_per_kernel=%.1f cpu_ns_per_kernel=%.1f\n", n, every,
         (double)(t1 - t0) / (double)n, (double)(c1 - c0) / (double)n);
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaFree(buf));
  return 0;
}
