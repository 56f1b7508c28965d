/* bigarr.h — growing arrays that may hold an element per kernel or call of a trace (millions):
 * up to NCS_BIG_MAPPED bytes they live in malloc's heap (a file of a few kernels costs a few
 * hundred bytes); past it in a mapping of their own, whole huge pages long (NCS_BIG_HUGE: the
 * kernel aligns such a mapping, so it can be backed by huge pages; a mapping of any other length
 * was not, and each of its 4 KiB pages faulted), that asks for transparent huge pages, and
 * growth moves its pages (mremap) rather than copying them. realloc's copies and the page
 * faults of the fresh copies were a third of `report`'s CPU on a shim-written trace of a
 * million kernels (a fault costs 16-20 us on a VM; a huge page takes one for 2 MiB).
 *
 * Contract: ncs_big_grow(&p, &cap, need, elem) makes p hold at least `need` elements of `elem`
 * bytes (capacity doubling, like io/grow.h's ncs_grow; a mapped array's capacity is all its
 * mapping holds); 0, or -1 with p and cap unchanged.
 * Such an array is freed by ncs_big_free(p, cap, elem) only (never free(): which of the two
 * it lives in follows from cap * elem). Thread-safe (no state). */
#ifndef NCS_BASE_BIGARR_H
#define NCS_BASE_BIGARR_H
#include <stddef.h>

#define NCS_BIG_MAPPED ((size_t)2 << 20) /* bytes from which an array has its own mapping */
#define NCS_BIG_HUGE ((size_t)2 << 20)   /* a huge page (x86-64's and arm64's with 4 KiB pages) */

int ncs_big_grow(void **p, size_t *cap, size_t need, size_t elem);
void ncs_big_free(void *p, size_t cap, size_t elem);
/* An array of cap elements of `elem` bytes made to hold exactly n of `elem_new` bytes (n x
 * elem_new <= cap x elem; the caller has moved them to the front): the rest is given back
 * (mremap, realloc, or a copy into the heap once it is small). *cap becomes n: free it as n
 * elements of elem_new. Never fails (out of memory, what it cannot give back stays mapped). */
void ncs_big_shrink(void **p, size_t *cap, size_t elem, size_t n, size_t elem_new);
#endif
