/* ivsort.c — natural merge sort of intervals by start (contract in ivsort.h). */
#include "model/ivsort.h"

#include <stdlib.h>
#include <string.h>

static int cmp_start(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Merges the in-order runs src[a .. b) and src[b .. c) into dst[a .. c). */
static void merge(uint64_t (*dst)[2], uint64_t (*src)[2], size_t a, size_t b, size_t c) {
  size_t i = a, j = b, k = a;
  while (i < b && j < c) {
    size_t from = src[j][0] < src[i][0] ? j++ : i++;
    dst[k][0] = src[from][0]; dst[k][1] = src[from][1]; k++;
  }
  if (i < b) memcpy(dst + k, src + i, (b - i) * sizeof *src);
  else if (j < c) memcpy(dst + k, src + j, (c - j) * sizeof *src);
}

#define MANY_RUNS(n) ((n) / 16) /* past this many runs a plain sort is as quick */

void ncs_ivsort(uint64_t (*iv)[2], size_t n) {
  if (n < 2) return;
  size_t runs = 1;
  for (size_t i = 1; i < n; i++) runs += iv[i][0] < iv[i - 1][0];
  if (runs == 1) return;
  uint64_t (*tmp)[2] = NULL;
  size_t *st = NULL;
  if (runs > MANY_RUNS(n) || !(tmp = malloc(n * sizeof *tmp)) || !(st = malloc((runs + 1) * sizeof *st))) goto fail;
  /* st[0 .. nr]: where each run starts, st[nr] = n */
  size_t nr = 0;
  st[nr++] = 0;
  for (size_t i = 1; i < n; i++) if (iv[i][0] < iv[i - 1][0]) st[nr++] = i;
  st[nr] = n;
  uint64_t (*src)[2] = iv, (*dst)[2] = tmp;
  while (nr > 1) { /* merge runs pairwise: half as many each pass */
    size_t out = 0;
    for (size_t r = 0; r < nr; r += 2) {
      if (r + 1 < nr) merge(dst, src, st[r], st[r + 1], st[r + 2]);
      else memcpy(dst + st[r], src + st[r], (st[r + 1] - st[r]) * sizeof *src);
      st[out++] = st[r];
    }
    st[out] = n;
    nr = out;
    uint64_t (*t)[2] = src; src = dst; dst = t;
  }
  if (src != iv) memcpy(iv, src, n * sizeof *iv);
  free(st); free(tmp);
  return;
fail:
  free(st); free(tmp);
  qsort(iv, n, sizeof *iv, cmp_start);
}
