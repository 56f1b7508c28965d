/* grow.h — growing a malloc'd array: ncs_grow makes *p hold at least `need` elements of `elem`
 * bytes, doubling its capacity (256 at first). Returns 0, or -1 with *p and *cap unchanged when
 * realloc fails. Shared by the model's tables (kact.c, replay.c). */
#ifndef NCS_IO_GROW_H
#define NCS_IO_GROW_H
#include <stdlib.h>

static inline int ncs_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}
#endif
