/* profiler_v5.h — version 5 of NCCL's profiler plugin interface (NCCL 2.28): the event
 * descriptor (a 64-bit type) and the table exported as ncclProfiler_v5, whose init takes the
 * communicator id first. See profiler.h. */
#ifndef NCCL_PROFILER_V5_H
#define NCCL_PROFILER_V5_H

struct nccl_prof_descr_v5 {
  uint64_t type;             /* NCCL_PROFILE_* */
  void *parent;
  int rank;
  union {
    struct { _Bool graph_captured; int group_depth; } group_api;
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;
             _Bool graph_captured; } coll_api;
    struct { const char *func; size_t count; const char *datatype; void *stream; _Bool graph_captured; } p2p_api;
    struct { void *stream; } kernel_launch;
    struct nccl_prof_coll coll;
    struct nccl_prof_p2p p2p;
    struct nccl_prof_proxy_op proxy_op;
    struct nccl_prof_proxy_step proxy_step;
    struct nccl_prof_kernel_ch kernel_ch;
    char pad[NCCL_PROF_DESCR_UNION_BYTES];
  } u;
};
struct nccl_profiler_v5 {
  const char *name;
  int (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes, int nranks,
              int rank, nccl_prof_logger_t log);
  int (*start)(void *ctx, void **handle, struct nccl_prof_descr_v5 *d);
  int (*stop)(void *handle);
  int (*record)(void *handle, int state, void *args); /* args: union nccl_prof_state_args */
  int (*finalize)(void *ctx);
};
#endif
