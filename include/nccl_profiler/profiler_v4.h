/* profiler_v4.h — version 4 of NCCL's profiler plugin interface (NCCL 2.26, 2.27): the event
 * descriptor (an 8-bit type) and the table exported as ncclProfiler_v4. See profiler.h. */
#ifndef NCCL_PROFILER_V4_H
#define NCCL_PROFILER_V4_H

struct nccl_prof_descr_v4 {
  uint8_t type;              /* NCCL_PROFILE_* */
  void *parent;
  int rank;
  union {
    struct nccl_prof_coll coll;
    struct nccl_prof_p2p p2p; /* without parent_group in v4 */
    struct nccl_prof_proxy_op proxy_op;
    struct nccl_prof_proxy_step proxy_step;
    struct nccl_prof_kernel_ch kernel_ch;
    char pad[NCCL_PROF_DESCR_UNION_BYTES];
  } u;
};
struct nccl_profiler_v4 {
  const char *name;
  int (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash, int nnodes, int nranks,
              int rank, nccl_prof_logger_t log);
  int (*start)(void *ctx, void **handle, struct nccl_prof_descr_v4 *d);
  int (*stop)(void *handle);
  int (*record)(void *handle, int state, void *args); /* args: union nccl_prof_state_args */
  int (*finalize)(void *ctx);
};
#endif
