/* runsort.h — a stable sort for arrays that arrive nearly in order (kernels as CUPTI delivers
 * them, their start and end edges): the array is cut into its ascending runs and the runs are
 * merged pairwise, so an array already in order costs one pass and no copy, and one of R runs
 * costs n log2 R moves. Same order as any stable sort (glibc's qsort, a merge sort, included),
 * so the answers built on it do not change. Its scratch buffer is the array's size, as glibc's
 * merge sort takes for elements up to 32 bytes. Falls back to qsort when the runs are short
 * (random order), the elements are over 32 bytes (unless already in order) or the scratch
 * buffer cannot be had. */
#ifndef NCS_BASE_RUNSORT_H
#define NCS_BASE_RUNSORT_H
#include <stddef.h>

void ncs_runsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
#endif
