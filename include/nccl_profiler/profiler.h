/* profiler.h — NCCL's profiler plugin interface, as far as ncclscope uses it: declared here
 * once from NCCL's published headers (src/include/plugin/nccl_profiler.h and
 * src/include/plugin/profiler/profiler_v4.h, _v5.h at v2.28.9-1; NCCL keeps one header per
 * interface version, as its plugins/profiler/example does; so do we: profiler_v4.h,
 * profiler_v5.h). The shim is a plugin (shim/profiler.c); the NCCL double loads plugins and
 * emits every event NCCL 2.28 emits (tests/doubles/nccl/nd_profiler.c).
 *
 * Contract: declared are the event-type bits and event states, the logger NCCL hands to init,
 * the members of the event descriptor union that versions 4 and 5 share (coll, p2p, proxyOp,
 * proxyStep, kernelCh: same layout in both), the state arguments, and the versioned function
 * tables NCCL looks up by name (ncclProfiler_v5, then ncclProfiler_v4). Layouts follow NCCL's
 * ABI exactly: a new version is a new profiler_vN.h, never an edit of an existing member. */
#ifndef NCCL_PROFILER_H
#define NCCL_PROFILER_H
#include <stddef.h>
#include <stdint.h>

/* event types (ncclProfileGroup ...): the bits of the activation mask a plugin's init sets */
enum {
  NCCL_PROFILE_GROUP = 1 << 0,         /* a plan's group of tasks */
  NCCL_PROFILE_COLL = 1 << 1,          /* host collective call events */
  NCCL_PROFILE_P2P = 1 << 2,           /* point-to-point task */
  NCCL_PROFILE_PROXY_OP = 1 << 3,      /* proxy operation (network transport) */
  NCCL_PROFILE_PROXY_STEP = 1 << 4,    /* one network step of a proxy operation */
  NCCL_PROFILE_PROXY_CTRL = 1 << 5,    /* proxy thread's own activity */
  NCCL_PROFILE_KERNEL_CH = 1 << 6,     /* one channel of a kernel running one task */
  NCCL_PROFILE_NET_PLUGIN = 1 << 7,    /* network-plugin-defined */
  NCCL_PROFILE_GROUP_API = 1 << 8,     /* v5: the user's group (explicit or implicit) */
  NCCL_PROFILE_COLL_API = 1 << 9,      /* v5: a collective API call */
  NCCL_PROFILE_P2P_API = 1 << 10,      /* v5: a Send/Recv API call (one per task it appends) */
  NCCL_PROFILE_KERNEL_LAUNCH = 1 << 11 /* v5: a plan's kernel launch */
};
/* event states passed to recordEventState (ncclProfilerEventState_t) */
enum {
  NCCL_PROFILER_PROXY_OP_IN_PROGRESS_V4 = 19,
  NCCL_PROFILER_PROXY_STEP_SEND_GPU_WAIT = 8,
  NCCL_PROFILER_PROXY_STEP_SEND_PEER_WAIT_V4 = 20,
  NCCL_PROFILER_PROXY_STEP_SEND_WAIT = 9,
  NCCL_PROFILER_PROXY_STEP_RECV_WAIT = 10,
  NCCL_PROFILER_PROXY_STEP_RECV_FLUSH_WAIT = 11,
  NCCL_PROFILER_PROXY_STEP_RECV_GPU_WAIT = 12,
  NCCL_PROFILER_KERNEL_CH_STOP = 22,
  NCCL_PROFILER_GROUP_START_API_STOP = 23,
  NCCL_PROFILER_GROUP_END_API_START = 24
};

typedef void (*nccl_prof_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

/* The collective member of the descriptor union (ncclProfileColl); versions 4 and 5 lay it
 * out identically. */
struct nccl_prof_coll {
  uint64_t seq;              /* per-communicator, per-function sequence number */
  const char *func;          /* "AllReduce", ... */
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  int root;
  const char *datatype;      /* "ncclFloat32", ... */
  uint8_t nchannels, nwarps;
  const char *algo, *proto;
  void *parent_group;
};
/* The other members both versions lay out alike (v4 has no trailing parent_group in p2p:
 * NCCL's v4 adapter hands parent_group as the descriptor's parent instead). */
struct nccl_prof_p2p {
  const char *func;          /* "Send", "Recv" */
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nchannels;
  void *parent_group;
};
struct nccl_prof_proxy_op { int pid; uint8_t channel; int peer, nsteps, chunk_size, is_send; };
struct nccl_prof_proxy_step { int step; };
struct nccl_prof_kernel_ch { uint8_t channel; uint64_t ptimer; /* GPU globaltimer, ns */ };
/* recordEventState's arguments (ncclProfilerEventStateArgs_v4_t and _v5_t are the same union) */
union nccl_prof_state_args {
  size_t trans_size;         /* proxyStep */
  int appended_proxy_ops;    /* proxyCtrl */
  void *data;                /* netPlugin */
  uint64_t ptimer;           /* kernelCh: the channel's stop time, GPU globaltimer ns */
};
/* Room NCCL's union takes (its largest member), so a plugin may read any member. */
#define NCCL_PROF_DESCR_UNION_BYTES 96

#include "profiler_v4.h"
#include "profiler_v5.h"

#if defined(__x86_64__) || defined(__aarch64__) /* NCCL's LP64 layout */
_Static_assert(offsetof(struct nccl_prof_coll, count) == 32 && offsetof(struct nccl_prof_coll, root) == 40 &&
               offsetof(struct nccl_prof_coll, nchannels) == 56 && offsetof(struct nccl_prof_coll, algo) == 64 &&
               offsetof(struct nccl_prof_coll, parent_group) == 80, "NCCL's collective descriptor layout");
_Static_assert(offsetof(struct nccl_prof_p2p, peer) == 32 && offsetof(struct nccl_prof_p2p, nchannels) == 36 &&
               offsetof(struct nccl_prof_p2p, parent_group) == 40 && offsetof(struct nccl_prof_proxy_op, nsteps) == 12 &&
               offsetof(struct nccl_prof_kernel_ch, ptimer) == 8 && sizeof(union nccl_prof_state_args) == 8,
               "NCCL's p2p, proxyOp, kernelCh and state-argument layouts");
_Static_assert(offsetof(struct nccl_prof_descr_v4, u) == 24 && offsetof(struct nccl_prof_descr_v5, u) == 24 &&
               sizeof(struct nccl_prof_coll) <= NCCL_PROF_DESCR_UNION_BYTES, "NCCL's event descriptor layout");
#endif
#endif
