/* sym_job.c — collectives on symmetric memory, as a 2.27+ application runs them: buffers from
 * ncclMemAlloc registered with ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC), then an
 * AllReduce (float sum, 1 Mi elements), an AllGather (256 Ki floats per rank) and a
 * ReduceScatter (256 Ki floats per rank), each checked, then the same AllReduce on plain
 * cudaMalloc buffers (NCCL's ordinary kernel); ncclDevCommCreate/Destroy with empty
 * requirements (the device API's host side). Under the launcher (N ranks, one node).
 * Prints one line per rank 0; --truth FILE (rank 0): how many collectives ran on symmetric
 * windows and how many on plain buffers. */
#include "job_util.h"

#ifndef NCCL_WIN_COLL_SYMMETRIC
#define NCCL_WIN_COLL_SYMMETRIC 0x01 /* nccl.h 2.27+ */
#endif
struct ncclDevComm;
struct ncclDevCommRequirements;
ncclResult_t ncclDevCommCreate(ncclComm_t, const struct ncclDevCommRequirements *, struct ncclDevComm *);
ncclResult_t ncclDevCommDestroy(ncclComm_t, const struct ncclDevComm *);

int main(int argc, char **argv) {
  const char *truth = argc > 2 && !strcmp(argv[1], "--truth") ? argv[2] : NULL;
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1);
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  job_unique_id(rank, n, "sym", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  const size_t big = 1 << 20, part = 1 << 18;
  float *a, *b, *p, *q;
  NCCHK(ncclMemAlloc((void **)&a, big * sizeof *a));
  NCCHK(ncclMemAlloc((void **)&b, big * sizeof *b * (size_t)(n > 4 ? n : 4)));
  ncclWindow_t wa, wb;
  NCCHK(ncclCommWindowRegister(comm, a, big * sizeof *a, &wa, NCCL_WIN_COLL_SYMMETRIC));
  NCCHK(ncclCommWindowRegister(comm, b, big * sizeof *b * (size_t)(n > 4 ? n : 4), &wb, NCCL_WIN_COLL_SYMMETRIC));
  CUCHK(cudaMalloc((void **)&p, big * sizeof *p));
  CUCHK(cudaMalloc((void **)&q, big * sizeof *q));
  for (size_t i = 0; i < big; i++) a[i] = p[i] = (float)(rank + (int)(i % 3));
  NCCHK(ncclAllReduce(a, b, big, ncclFloat32, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < big; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += (float)(r + (int)(i % 3));
    JOBCHK(b[i] == want, "symmetric allreduce [%zu]: got %g want %g", i, b[i], want);
  }
  NCCHK(ncclAllGather(a, b, part, ncclFloat32, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < part; i++)
      JOBCHK(b[(size_t)r * part + i] == (float)(r + (int)(i % 3)), "symmetric allgather [%d][%zu]", r, i);
  NCCHK(ncclReduceScatter(b, a, part, ncclFloat32, ncclSum, comm, s)); /* b: n x part gathered values */
  CUCHK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < part; i++) {
    float want = (float)n * (float)(rank + (int)(i % 3));
    JOBCHK(a[i] == want, "symmetric reducescatter [%zu]: got %g want %g", i, a[i], want);
  }
  NCCHK(ncclAllReduce(p, q, big, ncclFloat32, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < big; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += (float)(r + (int)(i % 3));
    JOBCHK(q[i] == want, "plain allreduce [%zu]", i);
  }
  struct { char bytes[4096]; } devcomm = {{0}}, reqs = {{0}}; /* larger than 2.28's structs */
  NCCHK(ncclDevCommCreate(comm, (const struct ncclDevCommRequirements *)&reqs, (struct ncclDevComm *)&devcomm));
  int head[2];
  memcpy(head, devcomm.bytes, sizeof head); /* struct ncclDevComm starts with int rank, nRanks */
  JOBCHK(head[0] == rank && head[1] == n, "ncclDevCommCreate: rank %d nRanks %d", head[0], head[1]);
  NCCHK(ncclDevCommDestroy(comm, (const struct ncclDevComm *)&devcomm));
  NCCHK(ncclCommWindowDeregister(comm, wa));
  NCCHK(ncclCommWindowDeregister(comm, wb));
  NCCHK(ncclMemFree(a));
  NCCHK(ncclMemFree(b));
  CUCHK(cudaFree(p));
  CUCHK(cudaFree(q));
  NCCHK(ncclCommDestroy(comm));
  if (rank == 0) printf("sym_job: %d ranks, all results correct\n", n);
  if (truth && rank == 0) {
    FILE *f = fopen(truth, "w");
    JOBCHK(f, "cannot write %s", truth);
    fprintf(f, "{\"symmetric\": {\"AllReduce\": 1, \"AllGather\": 1, \"ReduceScatter\": 1}, \"plain\": {\"AllReduce\": 1}}\n");
    fclose(f);
  }
  return 0;
}
