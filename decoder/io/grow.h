/* grow.h — growing a malloc'd array: ncs_grow makes *p hold at least `need` elements of `elem`
 * bytes, doubling its capacity. The first allocation is about 1 KiB (at least 4 elements): many
 * tables are per file and hold a few entries (a file's communicators, its call sites), and a
 * fixed 256 elements of a 160-byte record was 40 KiB a file, kept for the run (html at 128 ranks:
 * +5 MiB). Returns 0, or -1 with *p and *cap unchanged when realloc fails. Shared by the model's
 * tables (kact.c, replay.c). */
#ifndef NCS_IO_GROW_H
#define NCS_IO_GROW_H
#include <stdlib.h>

static inline int ncs_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : (elem < 256 ? 1024 / elem : 4);
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}
#endif
