/* test_runsort.c — decoder/base/runsort.c against a plain stable insertion sort written here:
 * arrays in order, reversed, nearly in order with many equal keys (the tie order must be the
 * input's: a stable sort), a few long runs, random order (the qsort fallback, checked for
 * order only), one and no element, and an element size that is not a word. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/runsort.h"

struct el { uint32_t key, seq; char pad[5]; }; /* 16 bytes: the merge path (over 32: qsort) */

static int cmp_key(const void *a, const void *b) {
  const struct el *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

static void insertion(struct el *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    struct el x = v[i];
    size_t j = i;
    while (j > 0 && v[j - 1].key > x.key) { v[j] = v[j - 1]; j--; }
    v[j] = x;
  }
}

static uint32_t rnd(uint32_t *s) { *s = *s * 1103515245u + 12345u; return *s >> 8; }

/* fills v per kind, numbers each element in input order */
static void fill(struct el *v, size_t n, int kind, uint32_t *s) {
  for (size_t i = 0; i < n; i++) {
    memset(&v[i], 0, sizeof v[i]);
    switch (kind) {
    case 0: v[i].key = (uint32_t)i; break;                                   /* in order */
    case 1: v[i].key = (uint32_t)(n - i); break;                             /* reversed */
    case 2: v[i].key = (uint32_t)(i / 4) + (rnd(s) % 50 == 0 ? 3 : 0); break; /* near, ties */
    case 3: v[i].key = (uint32_t)((i % (n / 5 + 1)) * 2 + i / (n / 5 + 1)); break; /* 5 runs */
    default: v[i].key = rnd(s) % 300; break;                                 /* random */
    }
    v[i].seq = (uint32_t)i;
  }
}

int main(void) {
  static const char *const names[] = {"in order", "reversed", "near order with ties", "five runs", "random"};
  uint32_t seed = 7;
  size_t sizes[] = {0, 1, 2, 17, 2000};
  for (int kind = 0; kind < 5; kind++)
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
      size_t n = sizes[z];
      struct el *a = calloc(n + 1, sizeof *a), *b = calloc(n + 1, sizeof *b);
      fill(a, n, kind, &seed);
      memcpy(b, a, n * sizeof *a);
      ncs_runsort(a, n, sizeof *a, cmp_key);
      insertion(b, n);
      if (kind == 4) { /* the qsort fallback: order only (qsort need not be stable) */
        int ok = 1;
        for (size_t i = 0; i < n; i++) ok &= a[i].key == b[i].key;
        CHECK(ok, "%s, %zu elements: keys in order", names[kind], n);
      } else {
        int ok = 1;
        for (size_t i = 0; i < n; i++) ok &= a[i].key == b[i].key && a[i].seq == b[i].seq;
        CHECK(ok, "%s, %zu elements: same as a stable insertion sort, ties in input order", names[kind], n);
      }
      free(a);
      free(b);
    }
  return check_done();
}
