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

/* Sorts and merges the buffer; commits the merged intervals that end by the start of the
 * buffer's middle interval (sorted by start), keeps the others (at most half the buffer + 1:
 * the one holding that start, then only ones starting after it); `all`: commits every one.
 * Why the middle and not all but the latest: intervals from several threads come chunk by
 * chunk, each thread's times drifting from the others'; committing up to the latest interval
 * clipped the slower thread's intervals still to come (an under-count, though none was
 * NCS_IVU_CAP intervals late). Now the frontier is below NCS_IVU_CAP / 2 buffered intervals. */
static void flush(struct ncs_ivu *u, int all) {
  if (!u->n) return;
  if (u->unsorted) ncs_ivsort(u->iv, u->n);
  u->unsorted = 0;
  uint64_t cut = all ? UINT64_MAX : u->iv[u->n / 2][0];
  uint32_t out = 0;
  for (uint32_t i = 1; i < u->n; i++) {
    if (u->iv[i][0] <= u->iv[out][1]) { if (u->iv[i][1] > u->iv[out][1]) u->iv[out][1] = u->iv[i][1]; continue; }
    out++;
    u->iv[out][0] = u->iv[i][0];
    u->iv[out][1] = u->iv[i][1];
  }
  uint32_t i = 0, kept = 0;
  for (; i <= out && u->iv[i][1] <= cut; i++) commit(u, u->iv[i][0], u->iv[i][1]);
  for (; i <= out; i++, kept++) { u->iv[kept][0] = u->iv[i][0]; u->iv[kept][1] = u->iv[i][1]; }
  u->n = kept;
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
