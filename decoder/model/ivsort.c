/* ivsort.c — sorting intervals by start that are mostly in order, and merging runs of them
 * into their union (contract in ivsort.h). */
#include "model/ivsort.h"

#include <stdio.h>
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

/* Sorts iv[0 .. n) by merging its in-order runs pairwise, half as many each pass, with tmp
 * (room for n) as scratch; with many runs (or no memory for their starts), qsort. */
static void sort_by_runs(uint64_t (*iv)[2], size_t n, uint64_t (*tmp)[2]) {
  size_t runs = 1;
  for (size_t i = 1; i < n; i++) runs += iv[i][0] < iv[i - 1][0];
  if (runs == 1) return;
  size_t *st = NULL;
  if (runs > MANY_RUNS(n) || !(st = malloc((runs + 1) * sizeof *st))) { qsort(iv, n, sizeof *iv, cmp_start); return; }
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
  free(st);
}

/* The strays of iv[0 .. n): the intervals starting before the latest start of those kept before
 * them (the first is kept). Keeping the others leaves one run in order. */
static size_t count_strays(const uint64_t (*iv)[2], size_t n) {
  size_t s = 0;
  uint64_t top = n ? iv[0][0] : 0;
  for (size_t i = 1; i < n; i++) {
    if (iv[i][0] < top) s++;
    else top = iv[i][0];
  }
  return s;
}

/* Sorts iv[0 .. n), which has s > 0 strays (count_strays), with tmp (room for n) as scratch.
 * An interval out of place among ones in order (a call timed on the host among GPU times that
 * run behind, the runs' first intervals) makes a run of its own for sort_by_runs, a pass over
 * everything each time the runs halve; here the strays alone are moved out (to tmp), sorted the
 * same way (they are mostly in order among themselves: few strays of their own) and merged back
 * from the end: a few passes whatever the runs. When they are more than half, sort_by_runs
 * (so each level has at most half of the one before: tmp holds them all, and the work stays
 * O(n log n)). */
static void sort_strays(uint64_t (*iv)[2], size_t n, size_t s, uint64_t (*tmp)[2]) {
  if (2 * s > n) { sort_by_runs(iv, n, tmp); return; }
  size_t m = 1, k = 0; /* kept, in place at iv[0 .. m); strays to tmp[0 .. k) */
  for (size_t i = 1; i < n; i++) {
    if (iv[i][0] < iv[m - 1][0]) { tmp[k][0] = iv[i][0]; tmp[k][1] = iv[i][1]; k++; }
    else { iv[m][0] = iv[i][0]; iv[m][1] = iv[i][1]; m++; }
  }
  size_t s2 = count_strays((const uint64_t (*)[2])tmp, k);
  if (s2) sort_strays(tmp, k, s2, tmp + k);
  /* merged from the end: iv[m + j] is free while j strays are left */
  size_t i = m, j = k, o = n;
  while (j) {
    if (i && iv[i - 1][0] > tmp[j - 1][0]) { o--; i--; iv[o][0] = iv[i][0]; iv[o][1] = iv[i][1]; }
    else { o--; j--; iv[o][0] = tmp[j][0]; iv[o][1] = tmp[j][1]; }
  }
}

void ncs_ivsort(uint64_t (*iv)[2], size_t n) {
  size_t s = count_strays((const uint64_t (*)[2])iv, n);
  if (!s) return;
  uint64_t (*tmp)[2] = malloc(n * sizeof *tmp);
  if (!tmp) { qsort(iv, n, sizeof *iv, cmp_start); return; }
  sort_strays(iv, n, s, tmp);
  free(tmp);
}

/* Appends [s, e) to the union being merged: the open interval os, oe extends, or goes to out */
#define IVM_ADD_(s, e) do { \
    if ((s) <= oe) { if ((e) > oe) oe = (e); } \
    else { out[m][0] = os; out[m][1] = oe; m++; os = (s); oe = (e); } \
  } while (0)

/* The runs are chained first: a run starting after the end of a chain's last one goes on in it
 * (the one ending latest), so a chain is in order, disjoint and not touching throughout: the
 * batches of one thread, one after another, make one chain whatever came between them. The
 * chains are merged: k - 1 compares an interval for k chains (a chain per thread, and the
 * intervals a flush kept). */
uint32_t ncs_ivmerge(const uint64_t (*iv)[2], const uint32_t *st, uint32_t k, uint64_t (*out)[2]) {
  uint32_t at[NCS_IVCHAINS], end[NCS_IVCHAINS], cur[NCS_IVCHAINS], last[NCS_IVCHAINS], next[NCS_IVRUNS];
  uint32_t live = 0, m = 0;
  for (uint32_t r = 0; r < k; r++) {
    if (st[r] >= st[r + 1]) continue;
    next[r] = UINT32_MAX;
    uint32_t c = UINT32_MAX;
    for (uint32_t x = 0; x < live; x++)
      if (iv[end[x] - 1][1] < iv[st[r]][0] && (c == UINT32_MAX || iv[end[x] - 1][1] > iv[end[c] - 1][1])) c = x;
    if (c == UINT32_MAX) {
      if (live == NCS_IVCHAINS) return UINT32_MAX; /* (nothing written yet) */
      c = live++; at[c] = st[r]; cur[c] = r;
    }
    else next[last[c]] = r;
    last[c] = r;
    end[c] = st[r + 1]; /* (the chain's last run's end, for the chaining; reset below) */
  }
  if (!live) return 0;
  for (uint32_t c = 0; c < live; c++) end[c] = st[cur[c] + 1];
  /* chain c's next interval iv[at[c]], its run cur[c] ending at end[c]: on to the chain's next
   * run at its end, the chain dropped after its last (c then holds the last chain's state) */
#define IVM_NEXT_(c) do { \
    if (++at[c] == end[c]) { \
      if ((cur[c] = next[cur[c]]) != UINT32_MAX) { at[c] = st[cur[c]]; end[c] = st[cur[c] + 1]; } \
      else { live--; at[c] = at[live]; end[c] = end[live]; cur[c] = cur[live]; } \
    } \
  } while (0)
  /* the open interval: the earliest start's */
  uint32_t b = 0;
  for (uint32_t c = 1; c < live; c++) if (iv[at[c]][0] < iv[at[b]][0]) b = c;
  uint64_t os = iv[at[b]][0], oe = iv[at[b]][1];
  IVM_NEXT_(b);
  while (live > 2) {
    b = 0;
    uint64_t bs = iv[at[0]][0];
    for (uint32_t c = 1; c < live; c++) if (iv[at[c]][0] < bs) { b = c; bs = iv[at[c]][0]; }
    uint64_t be = iv[at[b]][1];
    IVM_ADD_(bs, be);
    IVM_NEXT_(b);
  }
  while (live == 2) { /* the common case: two threads */
    /* (pointers, not indices: no widening and scaling per access; both chains live: i < ie, j < je) */
    const uint64_t (*i)[2] = iv + at[0], (*ie)[2] = iv + end[0], (*j)[2] = iv + at[1], (*je)[2] = iv + end[1];
    uint64_t (*o)[2] = out + m;
    uint64_t si = (*i)[0], sj = (*j)[0]; /* the heads' starts, each loaded once */
#define IVM_ADDO_(s, e) do { \
    if ((s) <= oe) { if ((e) > oe) oe = (e); } \
    else { (*o)[0] = os; (*o)[1] = oe; o++; os = (s); oe = (e); } \
  } while (0)
    for (;;) { /* the earlier start first (i's on a tie) */
      if (sj < si) {
        uint64_t e = (*j)[1];
        IVM_ADDO_(sj, e);
        if (++j == je) break;
        sj = (*j)[0];
      } else {
        uint64_t e = (*i)[1];
        IVM_ADDO_(si, e);
        if (++i == ie) break;
        si = (*i)[0];
      }
    }
#undef IVM_ADDO_
    m = (uint32_t)(o - out);
    at[0] = (uint32_t)(i - iv); at[1] = (uint32_t)(j - iv);
    uint32_t c = i == ie ? 0 : 1; /* the run that ended */
    at[c]--; /* (IVM_NEXT_ steps on) */
    IVM_NEXT_(c);
  }
  if (live) { /* one chain left: only its first ones can touch the open one */
    for (; iv[at[0]][0] <= oe;) {
      if (iv[at[0]][1] > oe) oe = iv[at[0]][1];
      IVM_NEXT_(0);
      if (!live) break;
    }
  }
  out[m][0] = os; out[m][1] = oe; m++;
  for (uint32_t r = live ? cur[0] : UINT32_MAX, i = live ? at[0] : 0; r != UINT32_MAX; r = next[r], i = r != UINT32_MAX ? st[r] : 0) {
    memcpy(out + m, iv + i, (st[r + 1] - i) * sizeof *iv);
    m += st[r + 1] - i;
  }
  return m;
#undef IVM_NEXT_
}
#undef IVM_ADD_

#define KEEP2 (1u << 17) /* iv2 kept between calls up to this many intervals (2 MiB) */

uint32_t ncs_ivruns_union(struct ncs_ivruns *r, uint64_t (**iv)[2], uint32_t *cap, uint32_t n) {
  uint64_t (*v)[2] = *iv;
  if (r->nrun < NCS_IVRUNS && r->cap2 < n) {
    uint32_t c = r->cap2 ? r->cap2 : 4096;
    while (c < n) c *= 2;
    free(r->iv2);
    r->cap2 = (r->iv2 = malloc((size_t)c * sizeof *r->iv2)) ? c : 0;
  }
  uint32_t m = UINT32_MAX;
  if (r->nrun < NCS_IVRUNS && r->iv2) {
    /* the first run's intervals that end before every other run starts are the union's already
     * (a flush's kept ones, mostly): copied, not merged */
    uint64_t first = UINT64_MAX;
    for (uint32_t i = 0; i < r->nrun; i++) if (v[r->run[i]][0] < first) first = v[r->run[i]][0];
    uint32_t lo = 0, hi = r->nrun ? r->run[0] : n; /* the first of run 0 ending at or after first */
    while (lo < hi) { uint32_t mid = lo + (hi - lo) / 2; if (v[mid][1] < first) lo = mid + 1; else hi = mid; }
    uint32_t st[NCS_IVRUNS + 1];
    st[0] = lo;
    memcpy(st + 1, r->run, r->nrun * sizeof *st);
    st[r->nrun + 1] = n;
    m = ncs_ivmerge((const uint64_t (*)[2])v, st, r->nrun + 1, r->iv2 + lo);
    if (m != UINT32_MAX) {
      memcpy(r->iv2, v, (size_t)lo * sizeof *v);
      m += lo;
    }
  }
  if (m != UINT32_MAX) {
    n = m;
    *iv = r->iv2; r->iv2 = v; /* swapped */
    uint32_t c = *cap; *cap = r->cap2; r->cap2 = c;
    if (r->cap2 > KEEP2) ncs_ivruns_free(r); /* a large one is made when needed (as a sort's copy) */
  } else if (n) {
    ncs_ivsort(v, n);
    uint32_t out = 0;
    for (uint32_t i = 1; i < n; i++) {
      if (v[i][0] <= v[out][1]) { if (v[i][1] > v[out][1]) v[out][1] = v[i][1]; continue; }
      out++;
      v[out][0] = v[i][0]; v[out][1] = v[i][1];
    }
    n = out + 1;
  }
  r->nrun = 0;
  return n;
}

void ncs_ivruns_free(struct ncs_ivruns *r) {
  free(r->iv2);
  r->iv2 = NULL;
  r->cap2 = 0;
}
