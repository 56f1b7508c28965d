/* aggregate.c — the whole-run figures of a bounded trace (NCCLSCOPE_KEEP): per (communicator,
 * op, datatype, size class) the calls, elements, host and GPU time, a GPU-time histogram, the
 * first and last entry and the failures, kept in fixed space for the whole run and written as
 * AGGREGATE records at the start of every segment (writer.c; docs/FORMAT.md "Bounded files").
 *
 * Contract: writer thread only (the writer feeds it each batch of ring slots it encodes and
 * each GPU_TIME it writes); nothing here runs on a calling thread. Fixed space, allocated at
 * the first call it sees: AGG_ROWS rows (calls of further keys go to one row, comm
 * NCS_AGG_OTHER), and per thread index a direct-mapped table of its last AGG_PENDING calls,
 * which a GPU time is matched to (a GPU time that arrives after its call left the table is
 * not counted in gpu_*; its call is). Fork: the child forgets everything (ncs_agg_reset).
 *
 * Exposed communication (format 5.5): the KERNEL records the writer puts into its chunks are
 * lined up (exposure.c) once a stretch of time is AGG_KERNEL_LAG_NS old, at most AGG_KPEND
 * waiting; every SEGMENT chunk gets one AGG_KERNELS record (the sums before the horizon) and the
 * kernels still waiting, cut to start at the horizon, as KERNEL records: with the kernels of
 * the chunks after it, a reader has every kernel from the horizon on, each once. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define AGG_ROWS 4096u
#define AGG_SLOTS 8192u     /* open addressing over the rows, a power of two */
#define AGG_PENDING 1024u   /* per thread: calls waiting for their GPU time, a power of two */
#define AGG_KPEND 4096u     /* kernels waiting to be lined up: at most that many KERNEL records a segment */
#define AGG_KERNEL_LAG_NS 2000000000ull /* a stretch of GPU time is lined up once this old (as the live metrics) */

struct pending { uint64_t tcall, count; uint32_t row; };
static struct {
  struct ncs_aggregate *rows;     /* [AGG_ROWS]; rows[0] is the overflow row */
  uint32_t *slot;                 /* [AGG_SLOTS]: row index + 1, 0 = empty */
  unsigned nrows;
  int failed;                     /* no memory: nothing is aggregated */
  struct pending *pend[NCS_MAX_THREADS];
  struct ncs_expo expo;           /* kernel activity: NCCL kernels, exposed communication */
} A;

static int agg_init(void) {
  if (A.rows) return 0;
  if (A.failed) return -1;
  A.rows = calloc(AGG_ROWS, sizeof *A.rows);
  A.slot = calloc(AGG_SLOTS, sizeof *A.slot);
  if (!A.rows || !A.slot) {
    free(A.rows);
    free(A.slot);
    A.rows = NULL;
    A.slot = NULL;
    A.failed = 1;
    return -1;
  }
  A.rows[0].comm = NCS_AGG_OTHER;
  A.nrows = 1;
  return 0;
}

static unsigned size_log2(uint64_t count) {
  unsigned k = 0;
  while (count > 1) { count >>= 1; k++; }
  return k;
}

static uint32_t row_for(const struct ncs_call *c) {
  unsigned sl = size_log2(c->count);
  uint64_t h = ((uint64_t)c->comm << 32 | (uint64_t)c->op << 16 | (uint64_t)(c->datatype & 0xff) << 8 | sl) *
               0x9E3779B97F4A7C15ull;
  for (unsigned i = (unsigned)(h >> 51) & (AGG_SLOTS - 1);; i = (i + 1) & (AGG_SLOTS - 1)) {
    uint32_t s = A.slot[i];
    if (!s) {
      if (A.nrows >= AGG_ROWS) return 0;
      struct ncs_aggregate *a = &A.rows[A.nrows];
      a->comm = c->comm;
      a->op = c->op;
      a->datatype = c->datatype;
      a->size_log2 = sl;
      A.slot[i] = ++A.nrows;
      return A.nrows - 1;
    }
    const struct ncs_aggregate *a = &A.rows[s - 1];
    if (a->comm == c->comm && a->op == c->op && a->datatype == c->datatype && a->size_log2 == sl) return s - 1;
  }
}

void ncs_agg_calls(const struct ncs_call *rec, uint64_t mask, uint64_t from, uint64_t to) {
  if (agg_init() != 0) return;
  uint32_t last_row = UINT32_MAX;
  const struct ncs_call *last = NULL;
  for (uint64_t t = from; t != to; t++) {
    const struct ncs_call *c = &rec[t & mask];
    uint32_t r = last && last->comm == c->comm && last->op == c->op && last->datatype == c->datatype &&
                         size_log2(last->count) == size_log2(c->count)
                     ? last_row
                     : row_for(c);
    last = c;
    last_row = r;
    struct ncs_aggregate *a = &A.rows[r];
    if (!a->calls) a->t_first = c->t_enter;
    a->calls++;
    a->count += c->count;
    a->host_ns += c->t_exit > c->t_enter ? c->t_exit - c->t_enter : 0;
    a->t_last = c->t_enter;
    if (c->rc != 0 && !(c->flags & NCS_CALL_F_INPROGRESS)) a->failed++;
    if (c->thread < NCS_MAX_THREADS) {
      struct pending *p = A.pend[c->thread];
      if (!p) p = A.pend[c->thread] = calloc(AGG_PENDING, sizeof *p);
      if (p) p[c->tcall & (AGG_PENDING - 1)] = (struct pending){c->tcall, c->count, r};
    }
  }
}

void ncs_agg_gpu(const struct ncs_gpu_time *g) {
  if (!A.rows || g->kind != NCS_GPU_KIND_CALL || g->flags || g->thread >= NCS_MAX_THREADS || !A.pend[g->thread]) return;
  struct pending *p = &A.pend[g->thread][g->ref & (AGG_PENDING - 1)];
  if (p->tcall != g->ref || !p->tcall) return;
  struct ncs_aggregate *a = &A.rows[p->row];
  uint64_t ns = g->gpu_end > g->gpu_start ? g->gpu_end - g->gpu_start : 0;
  a->gpu_calls++;
  a->gpu_count += p->count;
  a->gpu_ns += ns;
  uint64_t us = ns / 1000, lim = 1;
  unsigned k = 0;
  while (k < NCS_AGG_BUCKETS - 1 && us >= lim) { k++; lim *= 4; }
  uint64_t *h = &a->hist0;
  h[k]++;
  p->tcall = 0; /* counted once */
}

void ncs_agg_queue(const uint8_t *q, size_t len) {
  const uint8_t *p = q, *e = q + len;
  int took = 0;
  while (p < e) {
    uint64_t type, blen;
    if (ncs_get_varint(&p, e, &type) || ncs_get_varint(&p, e, &blen) || blen > (uint64_t)(e - p)) return;
    if (type == NCS_REC_KERNEL) {
      struct ncs_rbuf rb;
      struct ncs_kernel k;
      ncs_rbuf_init(&rb, p, (size_t)blen, NULL, 0);
      if (ncs_dec_kernel(&rb, &k) == 0) {
        ncs_expo_kernel(&A.expo, &k, AGG_KPEND);
        took = 1;
      }
    }
    p += blen;
  }
  if (took) {
    uint64_t now = ncs_now_ns();
    ncs_expo_line_up(&A.expo, now > AGG_KERNEL_LAG_NS ? now - AGG_KERNEL_LAG_NS : 0);
  }
}

size_t ncs_agg_encode(struct ncs_wbuf *w, uint32_t *records) {
  size_t before = w->len;
  { /* always (5.5): a reader tells "no kernel before the window" from an older file */
    uint64_t now = ncs_now_ns();
    ncs_expo_line_up(&A.expo, now > AGG_KERNEL_LAG_NS ? now - AGG_KERNEL_LAG_NS : 0);
    struct ncs_agg_kernels ak = {.until = A.expo.until, .comm_ns = A.expo.comm_ns, .exposed_ns = A.expo.exposed_ns,
                                 .kernels = A.expo.kernels};
    ncs_enc_agg_kernels(w, &ak);
    (*records)++;
    for (unsigned i = 0; i < A.expo.n; i++) {
      ncs_enc_kernel(w, &A.expo.pend[i]);
      (*records)++;
    }
  }
  for (unsigned i = 0; A.rows && i < A.nrows; i++) {
    if (!A.rows[i].calls) continue;
    size_t at = w->len;
    ncs_enc_aggregate(w, &A.rows[i]);
    if (w->len != at) (*records)++;
  }
  return w->len - before;
}

void ncs_agg_reset(void) {
  free(A.rows);
  free(A.slot);
  for (int i = 0; i < NCS_MAX_THREADS; i++) free(A.pend[i]);
  ncs_expo_free(&A.expo);
  memset(&A, 0, sizeof A);
}
