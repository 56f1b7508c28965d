/* ivunion.c — streaming union of intervals (ivunion.h). */
#include "model/ivunion.h"

#include <stdlib.h>

#include "model/ivsort.h"

/* Adds [s, e) clipped to the frontier to the committed length. */
static void commit(struct ncs_ivu *u, uint64_t s, uint64_t e) {
  if (s < u->frontier) s = u->frontier;
  if (e <= s) return;
  u->total += (double)(e - s);
  u->frontier = e;
}

/* Sorts and merges the buffer; commits all merged intervals but the latest (all: every one). */
static void flush(struct ncs_ivu *u, int all) {
  if (!u->n) return;
  if (u->unsorted) ncs_ivsort(u->iv, u->n);
  u->unsorted = 0;
  uint32_t out = 0;
  for (uint32_t i = 1; i < u->n; i++) {
    if (u->iv[i][0] <= u->iv[out][1]) { if (u->iv[i][1] > u->iv[out][1]) u->iv[out][1] = u->iv[i][1]; continue; }
    out++;
    u->iv[out][0] = u->iv[i][0];
    u->iv[out][1] = u->iv[i][1];
  }
  uint32_t keep = all ? 0 : 1, ncommit = out + 1 - keep;
  for (uint32_t i = 0; i < ncommit; i++) commit(u, u->iv[i][0], u->iv[i][1]);
  if (keep) { u->iv[0][0] = u->iv[out][0]; u->iv[0][1] = u->iv[out][1]; }
  u->n = keep;
}

void ncs_ivu_add_slow(struct ncs_ivu *u, uint64_t s, uint64_t e) {
  if (!u->iv && !u->nomem && !(u->iv = malloc(NCS_IVU_CAP * sizeof *u->iv))) u->nomem = 1;
  if (!u->iv) { commit(u, s, e); return; }
  if (u->n == NCS_IVU_CAP) flush(u, 0);
  if (u->n && s < u->iv[u->n - 1][0]) u->unsorted = 1;
  u->iv[u->n][0] = s;
  u->iv[u->n][1] = e;
  u->n++;
}

double ncs_ivu_total(struct ncs_ivu *u) {
  if (u->iv) flush(u, 1);
  ncs_ivu_free(u);
  return u->total;
}

void ncs_ivu_free(struct ncs_ivu *u) {
  free(u->iv);
  u->iv = NULL;
  u->n = 0;
}
