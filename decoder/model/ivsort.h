/* ivsort.h — sorting a buffer of intervals by their start, fast when it is a few runs that are
 * each in order already (the intervals of several threads' chunks, one after another), and
 * merging a few such runs straight into their union.
 *
 * Contract: ncs_ivsort(iv, n) leaves iv[0 .. n) in non-decreasing order of iv[i][0]; the order
 * of intervals with equal starts is unspecified (callers merge them by their largest end, which
 * does not depend on it). Work: a few passes when the intervals out of place (each starting
 * before one ahead of it) are at most half of them and mostly in order among themselves (they
 * are moved out, sorted so, and merged back), else O(n log r) for r runs; a scratch copy of
 * the buffer (malloc'ed, freed before it returns; without memory, or with many short runs,
 * qsort). */
#ifndef NCS_IVSORT_H
#define NCS_IVSORT_H
#include <stddef.h>
#include <stdint.h>

void ncs_ivsort(uint64_t (*iv)[2], size_t n);

/* At most this many runs for ncs_ivmerge, making at most NCS_IVCHAINS chains (below). */
#define NCS_IVRUNS 256
#define NCS_IVCHAINS 16
/* ncs_ivmerge(iv, st, k, out): the k runs iv[st[r] .. st[r + 1]) (r < k <= NCS_IVRUNS; st[k]
 * ends the last), each in non-decreasing order of starts and of ends (the intervals of one run
 * merged as they came: disjoint, not touching), merged into their union: out[0 .. m) in increasing order,
 * disjoint and not touching (one starting at or before the previous one's end extends it), as
 * sorting them all and merging would give; returns m. The runs are chained first (a run
 * starting after a chain's end goes on in it): more than NCS_IVCHAINS chains returns
 * UINT32_MAX and writes nothing (the caller sorts instead). out holds st[k] - st[0] intervals
 * and does not overlap iv. Work: one pass, c - 1 compares an interval for c chains, no memory. */
uint32_t ncs_ivmerge(const uint64_t (*iv)[2], const uint32_t *st, uint32_t k, uint64_t (*out)[2]);

/* A buffer of intervals iv[0 .. n) (capacity cap) filled as runs: ncs_ivruns_mark(r, n) when
 * iv[n] begins a new run (an interval starting before the one buffered last); within a run
 * they come in order and merged as they came (not touching). ncs_ivruns_union() leaves in
 * iv[0 .. return) their union's intervals (one run; in order, disjoint, not touching): the
 * first run's that end before every other run's first start as they are (a flush's kept
 * intervals: copied, not merged again), the rest merged into r->iv2
 * (allocated for n: a power of two from 4,096; kept while up to 2 MiB) and swapped with *iv
 * and their capacities (*cap may shrink: to at least n and 4,096; the caller grows it as it
 * needs); past NCS_IVRUNS runs or NCS_IVCHAINS chains, or without memory for iv2, sorted
 * (ncs_ivsort) and merged in place.
 * Zero-initialised is valid; ncs_ivruns_free() frees iv2. */
struct ncs_ivruns {
  uint64_t (*iv2)[2];
  uint32_t cap2;
  uint32_t nrun;              /* runs after the first */
  uint32_t run[NCS_IVRUNS];   /* where each starts (past NCS_IVRUNS: not kept) */
};
static inline void ncs_ivruns_mark(struct ncs_ivruns *r, uint32_t n) {
  if (r->nrun < NCS_IVRUNS) r->run[r->nrun++] = n;
}
uint32_t ncs_ivruns_union(struct ncs_ivruns *r, uint64_t (**iv)[2], uint32_t *cap, uint32_t n);
void ncs_ivruns_free(struct ncs_ivruns *r);
#endif
