/* devcomm_job.c — a device-API job (NCCL 2.28's ncclDevCommCreate / ncclDevCommDestroy) with its
 * own truth, for tests/test_devcomm.sh. Under the launcher (N ranks, one node).
 *
 * Per rank, on one stream, each phase synchronised before the next:
 *   before: 3 kernels "compute_before" of 200 us, 4 AllReduces (1 Mi floats)
 *   ncclDevCommCreate with the requirements below
 *   during: 3 kernels "devapi_put" of 250 us, 2 kernels "compute_during" of 100 us, 4 AllReduces
 *   ncclDevCommDestroy (only when the create succeeded)
 *   after:  2 kernels "compute_after" of 400 us, 4 AllReduces
 * The kernels of "during" are the ones launched while the device communicator exists; the
 * AllReduces are NCCL's own kernels. Requirements (2.28.9's struct, nccl_device/core.h, as
 * include/ncclscope/nccl_abi.h declares it): lsaMultimem 1, barrierCount 4, lsaBarrierCount 2,
 * railGinBarrierCount 1, lsaLLA2ABlockCount 8, lsaLLA2ASlotCount 16, ginForceEnable 0,
 * ginContextCount 2, ginSignalCount 3, ginCounterCount 5; resources of 4096 and 65536 bytes; two
 * teams, one multimem.
 * stdout (rank 0): the return codes of create and destroy. Exit 0 whatever create returned
 * (NCCL_WIN_ENABLE=0 makes it fail: the error case). --truth DIR: DIR/truth-rank<R>.json with
 * the return codes, the requirements passed, and per phase the kernels launched and their
 * declared device time. */
#include "job_util.h"
#include "include/cuda_double.h"

#define US 1000ull
static const struct { const char *phase, *name; int n; uint64_t ns; } kernels[] = {
  {"before", "compute_before", 3, 200 * US},
  {"during", "devapi_put", 3, 250 * US},
  {"during", "compute_during", 2, 100 * US},
  {"after", "compute_after", 2, 400 * US},
};

#define ALLREDUCES 4 /* per phase */
static void phase(const char *which, cudaStream_t s, ncclComm_t comm, float *buf, size_t n) {
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
    if (!strcmp(kernels[k].phase, which))
      for (int i = 0; i < kernels[k].n; i++) CUCHK(cudaDoubleLaunchKernel(s, kernels[k].name, kernels[k].ns));
  for (int i = 0; i < ALLREDUCES; i++) NCCHK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, s));
  CUCHK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv) {
  const char *truth = argc > 2 && !strcmp(argv[1], "--truth") ? argv[2] : NULL;
  int rank = job_env_int("RANK", 0), world = job_env_int("WORLD_SIZE", 1);
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  job_unique_id(rank, world, "devcomm", &id);
  ncclComm_t comm;
  NCCHK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  const size_t n = 1 << 20;
  float *buf;
  CUCHK(cudaMalloc((void **)&buf, n * sizeof *buf));
  memset(buf, 0, n * sizeof *buf);

  phase("before", s, comm, buf, n);
  struct ncs_devres_v228 res[2] = {{.bufferSize = 4096, .bufferAlign = 128}, {.bufferSize = 65536, .bufferAlign = 4096}};
  res[0].next = &res[1];
  struct ncs_devteam_v228 teams[2] = {{.nRanks = world, .rank = rank, .stride = 1, .multimem = 1},
                                      {.nRanks = 1, .rank = 0, .stride = 1}};
  teams[0].next = &teams[1];
  struct ncs_devreqs_v22807 reqs = {.resourceRequirementsList = res, .teamRequirementsList = teams,
                                    .lsaMultimem = 1, .barrierCount = 4, .lsaBarrierCount = 2,
                                    .railGinBarrierCount = 1, .lsaLLA2ABlockCount = 8, .lsaLLA2ASlotCount = 16,
                                    .ginForceEnable = 0, .ginContextCount = 2, .ginSignalCount = 3, .ginCounterCount = 5};
  struct { char bytes[4096]; } devcomm = {{0}}; /* larger than 2.28.9's struct ncclDevComm */
  ncclResult_t crc = ncclDevCommCreate(comm, (const struct ncclDevCommRequirements *)&reqs, (struct ncclDevComm *)&devcomm);
  phase("during", s, comm, buf, n);
  ncclResult_t drc = crc == ncclSuccess ? ncclDevCommDestroy(comm, (const struct ncclDevComm *)&devcomm) : ncclNumResults;
  phase("after", s, comm, buf, n);

  CUCHK(cudaFree(buf));
  NCCHK(ncclCommDestroy(comm));
  if (rank == 0) printf("devcomm_job: %d ranks, create rc=%d, destroy rc=%d\n", world, (int)crc, (int)drc);
  if (truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    fprintf(f, "{\"rank\": %d, \"create_rc\": %d, \"destroy_rc\": %d, \"requirements\": {\"lsa_multimem\": 1, "
               "\"barrier_count\": 4, \"lsa_barrier_count\": 2, \"rail_gin_barrier_count\": 1, \"lsa_lla2a_block_count\": 8, "
               "\"lsa_lla2a_slot_count\": 16, \"gin_force_enable\": 0, \"gin_context_count\": 2, \"gin_signal_count\": 3, "
               "\"gin_counter_count\": 5, \"resources\": 2, \"resource_bytes\": 69632, \"teams\": 2, \"multimem_teams\": 1}, "
               "\"kernels\": {",
            rank, (int)crc, crc == ncclSuccess ? (int)drc : -1);
    const char *phases[] = {"before", "during", "after"};
    for (int p = 0; p < 3; p++) {
      int cnt = 0;
      uint64_t ns = 0;
      for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
        if (!strcmp(kernels[k].phase, phases[p])) { cnt += kernels[k].n; ns += kernels[k].n * kernels[k].ns; }
      fprintf(f, "%s\"%s\": {\"count\": %d, \"ns\": %llu}", p ? ", " : "", phases[p], cnt, (unsigned long long)ns);
    }
    fprintf(f, "}, \"nccl_kernels\": %d}\n", 3 * ALLREDUCES);
    fclose(f);
  }
  return 0;
}
