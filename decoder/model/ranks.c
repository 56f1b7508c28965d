/* ranks.c — sets of ranks written as ranges (contract in ranks.h). */
#include "model/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncs_ranks_add(struct ncs_ranks *s, int rank) {
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 16;
    int *p = realloc(s->r, (size_t)nc * sizeof *p);
    if (!p) return -1;
    s->r = p;
    s->cap = nc;
  }
  s->r[s->n++] = rank;
  return 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

void ncs_ranks_sort(struct ncs_ranks *s) {
  if (s->n < 2) return;
  qsort(s->r, (size_t)s->n, sizeof *s->r, cmp_int);
  int w = 1;
  for (int i = 1; i < s->n; i++) if (s->r[i] != s->r[w - 1]) s->r[w++] = s->r[i];
  s->n = w;
}

int ncs_ranks_has(const struct ncs_ranks *s, int rank) {
  int lo = 0, hi = s->n - 1;
  while (lo <= hi) {
    int m = lo + (hi - lo) / 2;
    if (s->r[m] == rank) return 1;
    if (s->r[m] < rank) lo = m + 1; else hi = m - 1;
  }
  return 0;
}

int ncs_ranks_format_array(const int *r, int n, char *buf, size_t cap) {
  if (!cap) return n;
  buf[0] = 0;
  size_t len = 0;
  int i = 0;
  while (i < n) {
    int j = i;
    while (j + 1 < n && r[j] >= 0 && r[j + 1] == r[j] + 1) j++;
    char one[32];
    if (r[i] < 0) snprintf(one, sizeof one, "%s?", i ? "," : "");
    else if (j > i) snprintf(one, sizeof one, "%s%d-%d", i ? "," : "", r[i], r[j]);
    else snprintf(one, sizeof one, "%s%d", i ? "," : "", r[i]);
    size_t l = strlen(one);
    /* keep room for the " ... +K more" tail unless this range is the last */
    size_t tail = j + 1 < n ? 24 : 0;
    if (len + l + tail >= cap) {
      snprintf(buf + len, cap - len, " ... +%d more", n - i);
      return n - i;
    }
    memcpy(buf + len, one, l + 1);
    len += l;
    i = j + 1;
  }
  return 0;
}

int ncs_ranks_format(const struct ncs_ranks *s, char *buf, size_t cap) {
  return ncs_ranks_format_array(s->r, s->n, buf, cap);
}

void ncs_ranks_free(struct ncs_ranks *s) {
  free(s->r);
  memset(s, 0, sizeof *s);
}
