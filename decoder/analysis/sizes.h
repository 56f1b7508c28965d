/* sizes.h — what report's `sizes` analysis (sizes.c) found, as data: the per-size table, one row
 * per (communicator size, op, datatype, reduction, count, placement) over the job, in print order
 * (op, communicator size, datatype, reduction, count, out-of-place first), and the calls no row
 * times. docs/METRICS.md ("Per-size table") defines every figure. Filled in finish();
 * render/sizes_render.c prints it. Valid until the analysis' destroy(). */
#ifndef NCS_SIZES_H
#define NCS_SIZES_H
#include <stddef.h>
#include <stdint.h>
#include "ncclscope/ops.h"

#define NCS_SIZES_SENDRECV NCS_OP_LIMIT /* a row's op: one Send and one Recv of a group */
enum ncs_sizes_place { NCS_PLACE_UNKNOWN, NCS_PLACE_OUT, NCS_PLACE_IN };

struct ncs_sizes_row {
  uint32_t op;                /* NCS_OP_*, or NCS_SIZES_SENDRECV */
  const char *op_name;        /* "AllReduce", ..., "SendRecv" */
  int nranks;                 /* its communicators' size */
  uint32_t dtype, redop;      /* NCS_RULE datatype and reduction codes (model/rules.h); redop
                                 means nothing for SendRecv */
  enum ncs_sizes_place place;
  uint64_t count;             /* elements a call */
  double bytes, busbw_factor; /* nccl-tests' S and busbw factor */
  uint64_t timed;             /* calls timed (the figures below come from them) */
  uint64_t replayed;          /* of those, CUDA-graph replays */
  uint64_t warmup, first;     /* left out: before the steady run; their communicator's first */
  uint64_t host_only;         /* host-timed calls left out of a GPU-timed row */
  uint64_t over_cap;          /* calls past the sample cap, not timed */
  int gpu;                    /* 1: GPU-timed, 0: host-timed (when timed) */
  double mean_ns, median_ns, p99_ns; /* per call; 0 when not timed */
  double algbw_gbps, busbw_gbps;     /* from the median (1e9 bytes/s); 0 when not timed */
};
struct ncs_sizes_result {
  const char *want;           /* report's --sizes: NULL (the text says how many rows), "all" or an op */
  size_t nrows;
  const struct ncs_sizes_row *rows;
  uint64_t grouped;           /* calls inside groups of different calls or without a GPU time */
  uint64_t captured, replays; /* calls captured into CUDA graphs; the replays put in rows */
};
#endif
