/* profiler.h — NCCL's profiler plugin interface, as far as ncclscope uses it: declared here
 * once from NCCL's published headers (NCCL keeps one header per interface version, as its
 * plugins/profiler/example does; so do we: profiler_v4.h, profiler_v5.h). The shim is a
 * plugin (shim/profiler.c); the NCCL double loads plugins (tests/doubles/nccl/nd_profiler.c).
 *
 * Contract: only the parts both sides touch are declared: the event-type bit for collectives,
 * the logger NCCL hands to init, the collective member of the event descriptor, and the
 * versioned function tables NCCL looks up by name (ncclProfiler_v5, then ncclProfiler_v4).
 * Layouts follow NCCL's ABI exactly: a new version is a new profiler_vN.h, never an edit. */
#ifndef NCCL_PROFILER_H
#define NCCL_PROFILER_H
#include <stddef.h>
#include <stdint.h>

enum { NCCL_PROFILE_COLL = 1 << 1 }; /* ncclProfileColl: host collective call events */

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
/* Room NCCL's union takes (its largest member), so a plugin may read any member. */
#define NCCL_PROF_DESCR_UNION_BYTES 96

#include "profiler_v4.h"
#include "profiler_v5.h"

#if defined(__x86_64__) || defined(__aarch64__) /* NCCL's LP64 layout */
_Static_assert(offsetof(struct nccl_prof_coll, count) == 32 && offsetof(struct nccl_prof_coll, root) == 40 &&
               offsetof(struct nccl_prof_coll, nchannels) == 56 && offsetof(struct nccl_prof_coll, algo) == 64 &&
               offsetof(struct nccl_prof_coll, parent_group) == 80, "NCCL's collective descriptor layout");
_Static_assert(offsetof(struct nccl_prof_descr_v4, u) == 24 && offsetof(struct nccl_prof_descr_v5, u) == 24 &&
               sizeof(struct nccl_prof_coll) <= NCCL_PROF_DESCR_UNION_BYTES, "NCCL's event descriptor layout");
#endif
#endif
