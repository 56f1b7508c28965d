/* rules.h — the definitions every analysis shares, written once: the size of a datatype, the
 * bytes a call moves (nccl-tests' S), the bus-bandwidth factor, and the power-of-two size
 * bucket. docs/METRICS.md defines them (docs/REFERENCE-FIGURES.md, nccl-tests' definitions).
 *
 * Contract: pure functions, no state. An unknown communicator size (nranks < 1) counts as 1.
 * An unknown datatype has size 0 (its calls move 0 bytes). */
#ifndef NCS_RULES_H
#define NCS_RULES_H
#include <stddef.h>
#include <stdint.h>

#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

/* Bytes of one element of an NCCL datatype; 0 when unknown. */
static inline size_t ncs_rule_dtype_size(uint32_t datatype) { return ncclscope_datatype_size((int)datatype); }
/* NCCL's name of a datatype ("float32") or reduction ("sum"); "?" when unknown, "-" for
 * NO_VALUE (255: the call has none). */
const char *ncs_rule_dtype_name(uint32_t datatype);
const char *ncs_rule_redop_name(uint32_t redop);
/* Bytes the caller passed: count x size(datatype). (Inline: analyses ask once per call.) */
static inline uint64_t ncs_rule_bytes(uint64_t count, uint32_t datatype) { return count * ncs_rule_dtype_size(datatype); }
/* nccl-tests' S for one call (bytes): count x size(datatype), times nranks for AllGather,
 * ReduceScatter, AlltoAll, Gather, Scatter. */
static inline double ncs_rule_S(unsigned op, uint64_t count, uint32_t datatype, int nranks) {
  double b = (double)ncs_rule_bytes(count, datatype);
  return ncs_op_bw(op) == NCS_BW_NTIMES ? b * (nranks > 0 ? nranks : 1) : b;
}
/* busbw = algbw x this factor: 2(n-1)/n AllReduce, (n-1)/n the S x n ops, 1 Broadcast,
 * Reduce, Send, Recv; 0 for ops that move no data. */
double ncs_rule_busbw_factor(unsigned op, int nranks);
/* Bus bytes of one call: S x factor (busbw = bus bytes / time). */
double ncs_rule_busbytes(unsigned op, uint64_t count, uint32_t datatype, int nranks);
/* Why a process's NCCL calls were timed on the host (call entry to return) rather than on the
 * GPU, in words, from its PROCESS record's `timing` value and env.NCCLSCOPE_GPU_TIMING (either
 * NULL when absent). The one wording for report, doctor and html. */
const char *ncs_rule_why_host_timed(const char *timing, const char *gpu_timing_env);
/* floor(log2 bytes): the power-of-two size class of a message; -1 for bytes < 1. */
int ncs_rule_log2(double bytes);
/* NCCL's version code (ncclGetVersion: 22809, or 2304 before 2.9) as NCCL prints it, "2.28.9",
 * into buf; "" for 0 or a negative code. Returns buf. */
const char *ncs_rule_nccl_version(int code, char *buf, size_t n);
/* Algorithm steps of one call on nranks, the latency part of its expected time
 * (model/linkref.h): 2(n-1) for an all-reduce (a ring's reduce-scatter then all-gather), n-1 for
 * the all-gather, reduce-scatter, all-to-all, gather, scatter, broadcast and reduce rings, 1 for
 * a send or a receive; at least 1. 0 for ops that move no data. */
double ncs_rule_steps(unsigned op, int nranks);
/* Both of an operation on nranks, for a reader that prices many calls of one communicator: made
 * once per communicator (ncs_rule_ops fills t[op] for every op below NCS_OP_LIMIT), then a
 * call's bus bytes are S x fac when fac > 0, else 0: ncs_rule_busbytes' doubles exactly. */
struct ncs_rule_op { double fac, steps; };
void ncs_rule_ops(struct ncs_rule_op *t, int nranks);
#endif
