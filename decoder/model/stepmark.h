/* stepmark.h — which call marks a trace file's steps (docs/METRICS.md "Steps"): the rule, written
 * once for the analyses that cut a file into steps (analysis/metrics.c, which times every call,
 * and analysis/stepstarts.c, which only finds where the steps start), so both choose the same.
 *
 * Contract: a call's signature is (op, call site, count, communicator), as one number
 * (ncs_stepmark_key, never 0). A file's timed calls (ncs_stepmark_timed) are counted per
 * signature in a table of NCS_STEPMARK_SIGS slots (ncs_stepmark_slot; past three quarters full,
 * new signatures are not counted) over at most its first NCS_STEPMARK_HOLD CALL, GPU_TIME and
 * COMM records; then ncs_stepmark_choose picks the boundary. Bounded: 128 KiB a file being read,
 * whatever its length. */
#ifndef NCS_STEPMARK_H
#define NCS_STEPMARK_H
#include <stdint.h>
#include "io/trace.h"

#define NCS_STEPMARK_HOLD (1u << 14) /* records a file's boundary is chosen from, at most */
#define NCS_STEPMARK_SIGS 4096

struct ncs_stepsig { uint64_t key; uint64_t count; uint64_t first; uint32_t op; }; /* first: the
                                  1-based index, among the file's timed calls, of its first one */

/* A collective or point-to-point call: one that can mark a step. */
int ncs_stepmark_timed(unsigned op);
/* The signature of c as one number: three independent multiplications, then a mix (a chain of
 * four was a hot spot of report). */
static inline uint64_t ncs_stepmark_key(const struct ncs_call *c) {
  uint64_t h = (c->count ^ 0x243f6a8885a308d3ull) * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)c->callsite << 32 | c->comm) * 0xc2b2ae3d27d4eb4full;
  h ^= ((uint64_t)c->op + 1) * 0x165667b19e3779f9ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return h ? h : 1;
}
/* key's slot in sig[NCS_STEPMARK_SIGS] (*nsig: slots used), made when new; NULL when full. */
struct ncs_stepsig *ncs_stepmark_slot(struct ncs_stepsig *sig, uint32_t *nsig, uint64_t key);
/* The op an NCCL name names ("AllGather" or "ncclAllGather"), 0 none. */
uint32_t ncs_stepmark_op_by_name(const char *s);
/* The op the user named for the boundary: --step-op's (opt, 0 none), else the traced process's
 * NCCLSCOPE_STEP_MARK (mark, "" none), else ncclscope's own; *how says which ("--step-op",
 * "NCCLSCOPE_STEP_MARK", or "detected" when none: 0 is returned). */
uint32_t ncs_stepmark_named(uint32_t opt, const char *mark, const char **how);
/* The boundary from the counts: with a named op, its signature seen first; otherwise the step
 * count is the occurrence count shared by the most signatures (ties: the larger count), and the
 * boundary is the earliest signature with that count. `cut`: the counts are of the file's first
 * NCS_STEPMARK_HOLD records, which may end inside a step, so the step's first signatures may
 * have been seen once more than its last ones: a count one above the step count is the step
 * count too. Needs >= 2 steps: 1 and *key, *op; else 0. */
int ncs_stepmark_choose(const struct ncs_stepsig *sig, uint32_t named_op, int cut, uint64_t *key, uint32_t *op);
#endif
