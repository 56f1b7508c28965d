/* kstore.c — one file's kernels, kept once (kstore.h). */
#include "model/kstore.h"

#include <string.h>

#include "base/bigarr.h"
#include "base/runsort.h"
#include "ncclscope/encode.h"

void ncs_kstore_add(struct ncs_kstore *s, const struct ncs_kernel *x, size_t n) {
  if (s->n + n > s->cap && ncs_big_grow((void **)&s->k, &s->cap, s->n + n, sizeof *s->k) != 0) {
    for (size_t i = 0; i < n; i++) /* one at a time, as far as memory goes */
      if (x[i].kclass >= NCS_KCLASS_COUNT || ncs_big_grow((void **)&s->k, &s->cap, s->n + 1, sizeof *s->k) != 0) s->bad++;
      else ncs_kstore_add(s, &x[i], 1);
    return;
  }
  struct ncs_kstore_k *o = s->k + s->n;
  /* in order so far (sorted, or empty) and the last kernel's key, to tell whether these keep it */
  int in_order = s->sorted || !s->n;
  uint64_t ls = s->n ? o[-1].start : 0, le = s->n ? o[-1].end : 0;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_kernel *y = &x[i];
    if (y->kclass >= NCS_KCLASS_COUNT) { s->bad++; continue; }
    uint32_t name = y->name < NCS_KS_NAME_MAX ? y->name : NCS_KS_NAME_MAX;
    uint64_t ys = y->start, ye = y->start + y->duration;
    in_order &= ys > ls || (ys == ls && ye >= le);
    ls = ys, le = ye;
    *o++ = (struct ncs_kstore_k){.start = ys, .end = ye, .stream = y->stream, .info = y->kclass << NCS_KS_CLASS_SHIFT | name};
  }
  if (o != s->k + s->n) s->sorted = in_order;
  s->n = (size_t)(o - s->k);
}

static int cmp_k(const void *a, const void *b) {
  const struct ncs_kstore_k *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

void ncs_kstore_sort(struct ncs_kstore *s) {
  if (!s->sorted && s->n > 1) ncs_runsort(s->k, s->n, sizeof *s->k, cmp_k);
  s->sorted = 1;
}

void ncs_kstore_free(struct ncs_kstore *s) {
  ncs_big_free(s->k, s->cap, sizeof *s->k);
  memset(s, 0, sizeof *s);
}
