/* profiler_v5.h — version 5 of NCCL's profiler plugin interface (NCCL 2.28): the event
 * descriptor (a 64-bit type) and the table exported as ncclProfiler_v5, whose init takes the
 * communicator id first. See profiler.h. */
#ifndef NCCL_PROFILER_V5_H
#define NCCL_PROFILER_V5_H

struct nccl_prof_descr_v5 {
  uint64_t type;             /* NCCL_PROFILE_* */
  void *parent;
  int rank;
  union { struct nccl_prof_coll coll; char pad[NCCL_PROF_DESCR_UNION_BYTES]; } u;
};
struct nccl_profiler_v5 {
  const char *name;
  int (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes, int nranks,
              int rank, nccl_prof_logger_t log);
  int (*start)(void *ctx, void **handle, struct nccl_prof_descr_v5 *d);
  int (*stop)(void *handle);
  int (*record)(void *handle, int state, void *args);
  int (*finalize)(void *ctx);
};
#endif
