/* test_bigarr.c — base/bigarr.h: an array grown one element at a time from empty to 3 million
 * elements of 24 bytes (through the heap, the move into a mapping, and growth of the mapping)
 * keeps every element written; a mapped array's capacity is all its mapping holds and no more,
 * and the mapping is whole huge pages long (read from /proc/self/maps: the length the kernel
 * needs to back it with huge pages); ncs_big_shrink keeps the front elements, to a shorter
 * mapping and back into the heap, and what it leaves is freed by ncs_big_free. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/bigarr.h"

struct el { uint64_t a, b, c; };

static int holds(const struct el *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (x[i].a != i || x[i].b != ~i || x[i].c != i * 3) return 0;
  return 1;
}

/* The length of the mapping of /proc/self/maps that holds p; 0 when none does. */
static size_t mapping_len(const void *p) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  size_t len = 0;
  uintptr_t a = (uintptr_t)p;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) { len = hi - lo; break; }
  }
  if (f) fclose(f);
  return len;
}

int main(void) {
  struct el *x = NULL;
  size_t cap = 0, n = 3000000;
  int ok = 1, moved = 0;
  for (size_t i = 0; i < n && ok; i++) {
    if (ncs_big_grow((void **)&x, &cap, i + 1, sizeof *x) != 0) { ok = 0; break; }
    x[i] = (struct el){i, ~i, i * 3};
    if (cap * sizeof *x >= NCS_BIG_MAPPED && !moved) { moved = 1; ok &= holds(x, i + 1); }
  }
  CHECK(ok && moved && holds(x, n), "3,000,000 elements grown one at a time are all kept (heap, then mapped)");
  size_t bytes = cap * sizeof *x, len = mapping_len(x);
  CHECK(bytes % NCS_BIG_HUGE > NCS_BIG_HUGE - sizeof *x || bytes % NCS_BIG_HUGE == 0,
        "a mapped array's capacity fills its whole huge pages (%zu bytes)", bytes);
  CHECK(len && len % NCS_BIG_HUGE == 0 && len >= bytes && len - bytes < sizeof *x,
        "its mapping is whole huge pages long and holds just its capacity (%zu bytes)", len);
  x[cap - 1] = (struct el){1, 2, 3}; /* the last element of the capacity can be written */
  CHECK(x[cap - 1].c == 3, "the capacity's last element is writable");

  size_t keep = 200000; /* 4.8 MB of 24 B, packed to 16 B each: 3.2 MB, still mapped */
  uint64_t (*y)[2] = (void *)x;
  for (size_t i = 0; i < keep; i++) { uint64_t a = x[i].a, b = x[i].b; y[i][0] = a; y[i][1] = b; }
  ncs_big_shrink((void **)&x, &cap, sizeof *x, keep, sizeof *y);
  y = (void *)x;
  ok = cap == keep;
  for (size_t i = 0; i < keep && ok; i++) ok = y[i][0] == i && y[i][1] == ~i;
  len = mapping_len(x);
  CHECK(ok && len % NCS_BIG_HUGE == 0 && len >= keep * sizeof *y && len - keep * sizeof *y < NCS_BIG_HUGE,
        "shrunk to a shorter mapping: the front elements kept, whole huge pages (%zu bytes)", len);

  const char *was = (const char *)x;
  ncs_big_shrink((void **)&x, &cap, sizeof *y, 1000, sizeof *y); /* into the heap */
  y = (void *)x;
  ok = cap == 1000;
  for (size_t i = 0; i < 1000 && ok; i++) ok = y[i][0] == i && y[i][1] == ~i;
  CHECK(ok, "shrunk into the heap: the front elements kept");
  CHECK(mapping_len(was + len - 1) == 0, "and its whole mapping given back");
  ncs_big_free(x, cap, sizeof *y);

  /* a mapped array grown by mremap keeps its elements, and is freed whole */
  x = NULL, cap = 0;
  ok = ncs_big_grow((void **)&x, &cap, NCS_BIG_MAPPED / sizeof *x + 1, sizeof *x) == 0;
  size_t c1 = cap;
  for (size_t i = 0; ok && i < c1; i++) x[i] = (struct el){i, ~i, i * 3};
  ok = ok && ncs_big_grow((void **)&x, &cap, c1 + 1, sizeof *x) == 0 && cap > c1 && holds(x, c1);
  len = mapping_len(x);
  CHECK(ok && len % NCS_BIG_HUGE == 0 && len - cap * sizeof *x < sizeof *x, "a mapping grown past its capacity keeps its elements");
  void *at = x;
  ncs_big_free(x, cap, sizeof *x);
  CHECK(mapping_len(at) == 0 || mapping_len(at) != len, "freed: its mapping is gone");
  return check_done();
}
