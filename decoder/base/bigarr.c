/* bigarr.c — growing arrays in malloc's heap, then in mappings of their own (bigarr.h). */
#include "base/bigarr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int mapped(size_t bytes) { return bytes >= NCS_BIG_MAPPED; }
/* The length of the mapping that holds `bytes`: whole huge pages (the kernel places a mapping
 * of such a length on a huge-page boundary, and only then can it back it with huge pages). */
static size_t map_len(size_t bytes) { return (bytes + NCS_BIG_HUGE - 1) & ~(NCS_BIG_HUGE - 1); }

int ncs_big_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : (elem < 256 ? 1024 / elem : 4);
  while (c < need) c *= 2;
  size_t old = *cap * elem, now = c * elem;
  if (now / elem != c || now > SIZE_MAX - NCS_BIG_HUGE) return -1;
  void *q;
  if (!mapped(now)) {
    if (!(q = realloc(*p, now))) return -1;
  } else if (mapped(old)) {
    if ((q = mremap(*p, map_len(old), map_len(now), MREMAP_MAYMOVE)) == MAP_FAILED) return -1;
  } else { /* leaves the heap: a mapping, the elements copied once */
    if ((q = mmap(NULL, map_len(now), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) return -1;
#ifdef MADV_HUGEPAGE
    madvise(q, map_len(now), MADV_HUGEPAGE); /* advice: without it, small pages */
#endif
    if (old) memcpy(q, *p, old);
    free(*p);
  }
  if (mapped(now)) c = map_len(now) / elem; /* the whole mapping: c x elem stays within it */
  *p = q;
  *cap = c;
  return 0;
}

void ncs_big_free(void *p, size_t cap, size_t elem) {
  if (!p) return;
  if (mapped(cap * elem)) munmap(p, map_len(cap * elem));
  else free(p);
}

void ncs_big_shrink(void **p, size_t *cap, size_t elem, size_t n, size_t elem_new) {
  size_t old = *cap * elem, now = n * elem_new;
  void *q;
  if (!*p) { *cap = 0; return; }
  *cap = n;
  if (!mapped(old)) { /* in the heap: realloc keeps the block when it cannot shrink it */
    if ((q = realloc(*p, now ? now : 1)) != NULL) *p = q;
  } else if (mapped(now)) { /* a shorter mapping (a shrink in place does not fail but by a bad call) */
    if ((q = mremap(*p, map_len(old), map_len(now), 0)) != MAP_FAILED) *p = q;
  } else if ((q = malloc(now ? now : 1)) != NULL) { /* small now: into the heap */
    memcpy(q, *p, now);
    munmap(*p, map_len(old));
    *p = q;
  } else { /* out of memory: the mapping stays, freed whole (as many elements as fill it) */
    *cap = map_len(old) / elem_new;
  }
}
