/* ivsort.c — natural merge sort of intervals by start (contract in ivsort.h). */
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
    uint32_t st[NCS_IVRUNS + 1];
    st[0] = 0;
    memcpy(st + 1, r->run, r->nrun * sizeof *st);
    st[r->nrun + 1] = n;
    m = ncs_ivmerge((const uint64_t (*)[2])v, st, r->nrun + 1, r->iv2);
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
