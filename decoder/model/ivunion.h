/* ivunion.h — the total length of a union of intervals that arrive in any order, streaming.
 *
 * Contract: ncs_ivu_add() each interval [s, e) (ns), ncs_ivu_total() once after the last.
 * Intervals are buffered (NCS_IVU_CAP), sorted and merged when the buffer is full; the merged
 * part that ends by the start of the buffer's middle interval (in time order) is committed,
 * and a later interval's part before the committed frontier is not counted again: exact unless
 * an interval arrives after more than NCS_IVU_CAP / 2 intervals that start after it (several
 * threads' chunks interleaved, their times drifting apart, stay exact while a chunk and the
 * drift are shorter than that), and then it can only under-count (the rule of docs/METRICS.md,
 * "Communication time", which metrics follows). Several ranks of one process (a rank per
 * thread) interleave their intervals: the union counts an instant once, so the total never
 * exceeds the span it covers. The buffer is allocated at the first interval and freed by
 * ncs_ivu_total() / ncs_ivu_free(); without memory, intervals are swept in arrival order
 * (exact while they come sorted). */
#ifndef NCS_IVUNION_H
#define NCS_IVUNION_H
#include <stdint.h>

#define NCS_IVU_CAP 4096

struct ncs_ivu {
  uint64_t (*iv)[2];    /* [NCS_IVU_CAP] buffered intervals */
  uint32_t n;
  int unsorted;         /* an interval came before the one buffered last */
  uint64_t frontier;    /* committed up to here */
  double total;         /* committed length */
  int nomem;
};

void ncs_ivu_add_slow(struct ncs_ivu *u, uint64_t s, uint64_t e);
/* Adds [s, e) (nothing when e <= s). Inline: the common case, an interval starting within or
 * after the latest one buffered, extends it (while they come in order) or follows it (also
 * when an earlier one came out of order: what ncs_ivu_add_slow does with room left). */
static inline void ncs_ivu_add(struct ncs_ivu *u, uint64_t s, uint64_t e) {
  if (e <= s) return;
  if (u->n && s >= u->iv[u->n - 1][0]) {
    if (s <= u->iv[u->n - 1][1] && !u->unsorted) {
      if (e > u->iv[u->n - 1][1]) u->iv[u->n - 1][1] = e;
      return;
    }
    if (u->n < NCS_IVU_CAP) { u->iv[u->n][0] = s; u->iv[u->n][1] = e; u->n++; return; }
  }
  ncs_ivu_add_slow(u, s, e);
}
/* The union's length; commits what is buffered and frees the buffer (adding after it starts
 * a new buffer and counts on from the frontier). */
double ncs_ivu_total(struct ncs_ivu *u);
void ncs_ivu_free(struct ncs_ivu *u);
#endif
