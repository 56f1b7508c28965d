/* nd_internal.h — shared internals of the NCCL double's core (nd_*.c): the shared-memory
 * segment that the ranks of one communicator meet in, the process-local communicator, the
 * operation descriptors executed on the CUDA double's stream workers, and reductions.
 *
 * Contract: one segment per communicator, named by the unique id (or derived from the parent
 * for split/shrink); layout: header, per-rank info, two staging slots per rank (collectives
 * alternate between them chunk by chunk, so one barrier per chunk suffices: a slot is
 * rewritten only after everyone passed the next chunk's barrier, i.e. finished reading it),
 * then one single-producer/single-consumer byte ring per ordered pair of ranks (Send/Recv).
 * Every rank executes the same sequence of collectives per communicator, so the device
 * barrier (dev_bar) stays in step; host-side exchanges (split) use their own barrier. */
#ifndef NCCL_DOUBLE_INTERNAL_H
#define NCCL_DOUBLE_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ncclscope/nccl_abi.h"
#include "double_log.h"

#define ND_HIDDEN __attribute__((visibility("hidden")))
#define ND_ID_MAGIC "NCCLDBL1"
#define ND_SEG_MAGIC 0x4e43434c44424c31ull
#define ND_COMM_MAGIC 0x636f6d6du
#define ND_MAX_RANKS 1024
#define ND_MAX_USER_OPS 64
#define ND_NAME_LEN 64

struct nd_barrier { _Atomic uint32_t count, gen; };

struct nd_rank_info {
  _Atomic int32_t claimed;
  int32_t pid, dev, node; /* dev: the NVML (physical) index */
  _Atomic uint32_t doorbell; /* bumped (and futex-woken) when a peer moved bytes for us */
  int32_t xchg[4];           /* host exchange area (split colour/key) */
  _Atomic uint64_t dev_arrive[2]; /* device start of this rank's kernel for its collectives,
                                     by their parity (nd_exec.c: all-arrived = max over ranks) */
};

struct nd_chan { _Atomic uint64_t head, tail; char pad[48]; };

struct nd_seg {
  uint64_t magic;
  _Atomic uint32_t state; /* 0 fresh, 1 being initialised, 2 ready */
  uint32_t nranks;
  _Atomic uint32_t joined;
  _Atomic uint32_t aborted; /* a rank aborted or revoked: in-flight waits give up */
  uint64_t slot_bytes, chan_bytes, slots_off, chans_off, size;
  struct nd_barrier dev_bar, host_bar;
  struct nd_rank_info ranks[]; /* nranks entries */
};

struct nd_user_op { int used, base, dt, residence; const void *ptr; unsigned char value[8]; };

/* A communicator's link model (nd_model.c): busbw, latency base and per ring step; link: the
 * enum ndbl_link it was priced on, -1 when NCCLDOUBLE_LAT_US/BW_GBPS set it. */
struct nd_model { double bw_gbps, lat_base_us, lat_step_us; int link; };

struct ncclComm {
  uint32_t magic;
  int rank, nranks, dev, node, blocking;
  int nvml_dev; /* physical index of dev (through CUDA_VISIBLE_DEVICES), as NCCL's nvmlDev */
  pid_t pid;
  char name[ND_NAME_LEN];
  struct nd_seg *seg;
  size_t map_len;
  uint64_t hash;
  _Atomic int async_err;
  _Atomic int aborted, revoked, finalized;
  _Atomic uint64_t enq, done; /* tasks enqueued / retired, for finalize and destroy */
  _Atomic int connected;      /* the connection log was printed */
  _Atomic uint64_t opcount; /* NCCL's opCount in the COLL lines; relaxed: a job may (wrongly, as
                               a Python daemon thread does) call on one comm from two threads */
  uint64_t chunk_seq; /* collective chunks run so far (worker side, under exec_mu) */
  uint64_t coll_seq;  /* collectives run so far (worker side, under exec_mu): dev_arrive slot */
  struct nd_model model;
  int parity;         /* which of the two staging slot sets the current chunk uses */
  int split_seq, shrink_seq;
  pthread_mutex_t exec_mu; /* one task at a time uses this rank's slots and barrier */
  pthread_mutex_t host_mu;
  _Atomic int launch_pending; /* non-blocking: an operation returned ncclInProgress; its launch
                                 counts as done at the next readiness check (NCCL's launch thread
                                 finishing right after the call returned) */
  struct ncclComm *split_parent; /* non-blocking split: parent whose async error is ncclInProgress
                                    until this child's init ends; NULL otherwise */
  struct ncclComm **publish;  /* non-blocking split: where the child is stored once ready */
  pthread_t init_thread;      /* non-blocking init runs here; joined by destroy/abort */
  int has_init_thread;
  int group_pending;          /* created inside a group: its init runs at the outermost
                                 ncclGroupEnd (NCCL 2.28 group.cc); until then NCCL's zeroed fields */
  struct ncclD_peer *peers;   /* for the log side, filled at the end of init */
  /* how it was made, for its init lines: the API name NCCL prints ("ncclCommInitRank",
   * "ncclCommSplit", ...) and, for a split or shrink, the parent and NCCL's splitCount, color, key */
  const char *api;
  uint64_t parent_ptr;
  int split_count, color, key;
  struct nd_user_op user_ops[ND_MAX_USER_OPS];
};

enum nd_kind {
  ND_ALLREDUCE, ND_BROADCAST, ND_REDUCE, ND_ALLGATHER, ND_REDUCESCATTER, ND_ALLTOALL,
  ND_GATHER, ND_SCATTER, ND_SEND, ND_RECV
};

/* A reduction as the executor applies it: base op plus the PreMulSum scalar. */
struct nd_redop {
  int base; /* ncclSum..ncclAvg, or ND_PREMULSUM */
  double fscale;
  int64_t iscale;
};
#define ND_PREMULSUM 100

struct nd_op {
  enum nd_kind kind;
  const void *sbuf;
  void *rbuf;
  size_t count;
  int dt;
  int root; /* root or peer */
  int redop_id;
  struct ncclComm *comm;
  cudaStream_t stream;
  struct nd_prof_op *prof; /* nd_profiler.c: the op's profiler events, NULL without a plugin */
};

struct nd_task {
  int nops;
  int counted; /* 1: counted in each op's comm->enq, retired at the end of the first run */
  int captured; /* enqueued on a capturing stream: runs at each graph replay */
  _Atomic int prof_posted; /* nd_profiler.c: the host emitted the plan's task events */
  struct nd_op ops[];
};

/* nd_shm.c */
ND_HIDDEN int nd_seg_join(struct ncclComm *c, const char *name, int nranks, int rank);
ND_HIDDEN void nd_seg_leave(struct ncclComm *c);
ND_HIDDEN int nd_barrier_wait(struct ncclComm *c, struct nd_barrier *b);
ND_HIDDEN unsigned char *nd_slot(struct ncclComm *c, int rank);
ND_HIDDEN struct nd_chan *nd_chan_at(struct ncclComm *c, int src, int dst);
ND_HIDDEN unsigned char *nd_chan_buf(struct ncclComm *c, struct nd_chan *ch);
ND_HIDDEN void nd_doorbell_ring(struct ncclComm *c, int rank);
ND_HIDDEN int nd_doorbell_wait(struct ncclComm *c, uint32_t seen);
ND_HIDDEN int nd_is_aborted(struct ncclComm *c);
ND_HIDDEN uint64_t nd_hash(const void *p, size_t n, uint64_t h);
/* The first field of every segment name, /ncclD.<tag>.*: FNV-1a 64 of $TMPDIR as 16 hex digits
 * (0 without one). tests/run.sh gives each test a TMPDIR of its own, so a segment a dead rank
 * left names the test whose job made it (tests/shm_leftovers.sh shm_segments), whatever else
 * runs on the host. */
ND_HIDDEN uint64_t nd_name_tag(void);

/* nd_reduce.c: dst = pre(src); dst = dst (op) pre(src); final scaling for Avg. */
ND_HIDDEN void nd_reduce_first(void *dst, const void *src, size_t n, int dt, const struct nd_redop *op);
ND_HIDDEN void nd_reduce_acc(void *dst, const void *src, size_t n, int dt, const struct nd_redop *op);
ND_HIDDEN void nd_reduce_fini(void *dst, size_t n, int dt, const struct nd_redop *op, int nranks);
ND_HIDDEN float nd_half_to_float(uint16_t h);
ND_HIDDEN uint16_t nd_float_to_half(float f);

/* nd_profiler.c: NCCL 2.28's profiler events, at the points NCCL emits them (contract there) */
ND_HIDDEN void nd_prof_comm_init(struct ncclComm *c);
ND_HIDDEN void nd_prof_comm_fini(struct ncclComm *c);
ND_HIDDEN void nd_prof_call(struct nd_op *op, int group_depth, int captured);
ND_HIDDEN void nd_prof_group_end_begin(void);
ND_HIDDEN void nd_prof_group_end_done(void);
ND_HIDDEN void nd_prof_launch_begin(struct nd_task *t, cudaStream_t stream);
ND_HIDDEN void nd_prof_launch_end(struct nd_task *t);
ND_HIDDEN void nd_prof_task_begin(struct nd_task *t);
ND_HIDDEN void nd_prof_kernel_begin(const struct nd_op *op);
ND_HIDDEN void nd_prof_kernel_end(const struct nd_op *op);
ND_HIDDEN void nd_prof_p2p_steps(struct nd_task *t, uint64_t end);
ND_HIDDEN void nd_prof_task_free(struct nd_task *t);
ND_HIDDEN void nd_prof_choice(int kind, size_t bytes, const char **algo, const char **proto);

/* nd_proxy.c: the NET proxy operations of one task, with NCCL's step arithmetic (contract there) */
struct nd_proxy_in {
  enum nd_kind kind;    /* the task: a collective, or ND_SEND / ND_RECV */
  size_t count, elem_size;
  int root;             /* root, or the peer of a Send/Recv */
  int rank, nranks, nnodes, nch;
  const char *algo, *proto; /* as reported in the Coll event ("RING", "LL128", ...) */
  const unsigned char *net; /* nranks entries: 1 where this rank reaches that peer over NET */
};
struct nd_proxy_op {
  int channel, peer, is_send;
  int nsteps, chunk;    /* as ncclProfilerStartProxyOpEvent reports them */
  size_t trans;         /* payload bytes of a step (transSize) */
};
ND_HIDDEN int nd_proxy_ops(const struct nd_proxy_in *in, struct nd_proxy_op *out, int cap);

/* nd_symmetric.c: registered windows, symmetric kernels' names (contract there) */
ND_HIDDEN void *nd_win_add(struct ncclComm *c, void *buff, size_t size, int flags);
ND_HIDDEN int nd_win_remove(struct ncclComm *c, void *win);
ND_HIDDEN const char *nd_sym_kernel(const struct nd_op *op);

/* nd_exec.c */
ND_HIDDEN void nd_task_run(void *task);
ND_HIDDEN void nd_task_free(void *task);

/* nd_model.c */
ND_HIDDEN void nd_model_comm(struct ncclComm *c, const struct ncclD_comm_view *v);
ND_HIDDEN uint64_t nd_op_model_ns(const struct nd_op *op);
ND_HIDDEN uint64_t nd_p2p_model_ns(const struct ncclComm *c, size_t bytes);
#endif
