/* runsort.h — a stable sort for arrays that arrive nearly in order (kernels as CUPTI delivers
 * them, their start and end edges): the array is cut into its ascending runs and the runs are
 * merged pairwise, so an array already in order costs one pass and no copy, and one of R runs
 * costs n log2 R moves. Same order as any stable sort (glibc's qsort, a merge sort, included),
 * so the answers built on it do not change. Runs are merged in place with a scratch copy of
 * the shorter of the two; qsort when the runs are short (random order) or the scratch cannot be
 * had. */
#ifndef NCS_BASE_RUNSORT_H
#define NCS_BASE_RUNSORT_H
#include <stddef.h>

void ncs_runsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
#endif
