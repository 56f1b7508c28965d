/* ivsort.h — sorting a buffer of intervals by their start, fast when it is a few runs that are
 * each in order already (the intervals of several threads' chunks, one after another).
 *
 * Contract: ncs_ivsort(iv, n) leaves iv[0 .. n) in non-decreasing order of iv[i][0]; the order
 * of intervals with equal starts is unspecified (callers merge them by their largest end, which
 * does not depend on it). Work: O(n log r) for r runs, and a scratch copy of the buffer
 * (malloc'ed, freed before it returns; without memory, or with many short runs, qsort). */
#ifndef NCS_IVSORT_H
#define NCS_IVSORT_H
#include <stddef.h>
#include <stdint.h>

void ncs_ivsort(uint64_t (*iv)[2], size_t n);
#endif
