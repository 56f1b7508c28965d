/* window.c — bounded traces (NCCLSCOPE_KEEP, docs/FORMAT.md "Bounded files") in `ncclscope
 * report`: which figures are of the whole run and which of the last window only.
 *
 * A bounded file keeps the calls of its last window and, in the SEGMENT chunk it is read from,
 * AGGREGATE records: the whole-run figures of every call before that chunk. The whole run is
 * those aggregates plus the window's calls, merged here per (communicator, op, datatype, size
 * class) per file, then per (op, bytes class) over the job. Every other section of the report
 * reads the window's calls only; this analysis returns the whole-run table as its result
 * (struct ncs_window_sum), which render/window_render.c prints as report's section and JSON
 * "window" (docs/JSON.md); doctor, html and timeline plug the same visitor into their read
 * (window.h) and say it on their page and in otherData.
 * Unbounded traces: it
 * prints nothing and writes nothing. Memory: while a file is read, at most WIN_ROWS rows (further
 * keys are added to one "other" row) and, per thread index below WIN_THREADS, WIN_PENDING calls
 * waiting for their GPU time; after it, only the rows it used; no growth with trace length.
 * Kernel activity (format 5.5): the whole run's GPU communication (the union of NCCL kernels)
 * and its exposed part are the first chunk's AGG_KERNELS sums (before its `until`) plus what
 * the file's KERNEL records ran from `until` on: |C| and |C u Q| - |Q| (C the NCCL kernels, Q
 * every other kernel, copy and set), three streaming unions (model/ivunion.h, 3 x 64 KiB while
 * a bounded file is read). Files of 5.4 and older have no AGG_KERNELS: their kernel activity
 * before the window is unknown, and only a file that never rotated gets whole-run figures; a
 * file without kernel activity (no kernel before or in the window) gets none either. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/window.h"
#include "model/ivunion.h"
#include "model/rules.h"
#include "ncclscope/encode.h"
#include "ncclscope/ops.h"

#define WIN_ROWS 8192u
#define WIN_SLOTS 16384u
#define WIN_THREADS 256u
#define WIN_PENDING 4096u
#define WIN_COMMS 4096u

struct wrow { struct ncs_aggregate a; };
struct wpend { uint64_t tcall, count; uint32_t row; };
struct wfile {
  int bounded;
  uint64_t keep_ns, keep_bytes;
  struct ncs_aggregate *rows; /* [WIN_ROWS]; rows[0]: "other" */
  uint32_t *slot;             /* [WIN_SLOTS]: row + 1 */
  unsigned nrows;
  uint64_t agg_calls, win_calls, win_t0, win_t1;
  uint64_t rt_ns, mono_ns;    /* the first CLOCK pair: monotonic -> UTC */
  int have_clock;
  int32_t nranks[WIN_COMMS];
  struct wpend *pend[WIN_THREADS];
  /* kernel activity: the first chunk's sums before `until`, and the window's kernels after */
  int have_kagg, rotated;
  uint64_t k_until, k_agg_comm, k_agg_exposed, k_agg_kernels, k_win;
  struct ncs_ivu k_comm, k_other, k_all;
  uint64_t k_comm_ns, k_exposed_ns;   /* after the read: the whole run's */
  int k_whole;                        /* 1 when those are the whole run's (else unknown) */
};
struct ncs_window { int n; struct wfile *f; struct ncs_window_sum *sum; /* report: filled by finish */ };

static void *win_create(const struct ncs_job *job) {
  struct ncs_window *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->f = calloc((size_t)(job->n ? job->n : 1), sizeof *s->f);
  if (!s->f) { free(s); return NULL; }
  return s;
}

static unsigned log2u(uint64_t v) {
  unsigned k = 0;
  while (v > 1) { v >>= 1; k++; }
  return k;
}

static int file_init(struct wfile *f) {
  if (f->rows) return 0;
  f->rows = calloc(WIN_ROWS, sizeof *f->rows);
  f->slot = calloc(WIN_SLOTS, sizeof *f->slot);
  if (!f->rows || !f->slot) { free(f->rows); free(f->slot); f->rows = NULL; f->slot = NULL; return -1; }
  f->rows[0].comm = NCS_AGG_OTHER;
  f->nrows = 1;
  return 0;
}

static uint32_t row_of(struct wfile *f, uint32_t comm, uint32_t op, uint32_t dt, uint32_t sl) {
  if (comm == NCS_AGG_OTHER) return 0;
  uint64_t h = ((uint64_t)comm << 32 | (uint64_t)op << 16 | (uint64_t)(dt & 0xff) << 8 | (sl & 0xff)) * 0x9E3779B97F4A7C15ull;
  for (unsigned i = (unsigned)(h >> 50) & (WIN_SLOTS - 1);; i = (i + 1) & (WIN_SLOTS - 1)) {
    uint32_t s = f->slot[i];
    if (!s) {
      if (f->nrows >= WIN_ROWS) return 0;
      struct ncs_aggregate *a = &f->rows[f->nrows];
      a->comm = comm; a->op = op; a->datatype = dt; a->size_log2 = sl;
      f->slot[i] = ++f->nrows;
      return f->nrows - 1;
    }
    const struct ncs_aggregate *a = &f->rows[s - 1];
    if (a->comm == comm && a->op == op && a->datatype == dt && a->size_log2 == sl) return s - 1;
  }
}

static int on_process(void *ctx, const struct ncs_process *p) {
  struct wfile *f = ctx;
  const char *kn = ncs_process_get(p, "keep_ns"), *kb = ncs_process_get(p, "keep_bytes");
  if (kn || kb) f->bounded = 1;
  if (kn) f->keep_ns = strtoull(kn, NULL, 10);
  if (kb) f->keep_bytes = strtoull(kb, NULL, 10);
  return 0;
}

static int on_comm(void *ctx, const struct ncs_comm *c) {
  struct wfile *f = ctx;
  if (c->comm < WIN_COMMS && c->nranks > 0) f->nranks[c->comm] = c->nranks;
  return 0;
}

static int on_clock(void *ctx, const struct ncs_clock *c) {
  struct wfile *f = ctx;
  if (!f->have_clock) { f->rt_ns = c->realtime_ns; f->mono_ns = c->monotonic_ns; f->have_clock = 1; }
  return 0;
}

static void on_kernel(struct wfile *f, const struct ncs_kernel *k) {
  uint64_t s = k->start > f->k_until ? k->start : f->k_until, e = k->start + k->duration;
  f->k_win++;
  if (e <= s) return;
  ncs_ivu_add(k->kclass == NCS_KCLASS_NCCL ? &f->k_comm : &f->k_other, 0, s, e);
  ncs_ivu_add(&f->k_all, 0, s, e);
}
static void on_kernel_rec(struct wfile *f, const struct ncs_raw *r) {
  struct ncs_rbuf b;
  ncs_rbuf_init(&b, r->body, r->len, NULL, 0);
  if (r->type == NCS_REC_AGG_KERNELS) {
    struct ncs_agg_kernels a;
    if (f->have_kagg || ncs_dec_agg_kernels(&b, &a) != 0) return;
    f->have_kagg = 1;
    f->k_until = a.until;
    f->k_agg_comm = a.comm_ns;
    f->k_agg_exposed = a.exposed_ns;
    f->k_agg_kernels = a.kernels;
    return;
  }
  struct ncs_kernel k;
  if (ncs_dec_kernel(&b, &k) != 0) return;
  on_kernel(f, &k);
}
/* The reader's KERNEL runs (decoded once for every analysis): kept only in a bounded file. */
static int on_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct wfile *f = ctx;
  (void)raw;
  for (size_t i = 0; f->bounded && i < n; i++) on_kernel(f, &k[i]);
  return 0;
}

static int on_raw(void *ctx, const struct ncs_raw *r) {
  struct wfile *f = ctx;
  if (r->type == NCS_REC_AGGREGATE) f->rotated = 1; /* the read began at a segment: later ones are skipped */
  if ((r->type == NCS_REC_AGG_KERNELS || r->type == NCS_REC_KERNEL) && f->bounded) on_kernel_rec(f, r);
  if (r->type != NCS_REC_AGGREGATE || file_init(f)) return 0;
  struct ncs_rbuf b;
  ncs_rbuf_init(&b, r->body, r->len, NULL, 0);
  struct ncs_aggregate a;
  if (ncs_dec_aggregate(&b, &a) != 0) return 0;
  f->bounded = 1;
  struct ncs_aggregate *x = &f->rows[row_of(f, a.comm, a.op, a.datatype, a.size_log2)];
  x->calls += a.calls; x->count += a.count; x->host_ns += a.host_ns; x->failed += a.failed;
  x->gpu_calls += a.gpu_calls; x->gpu_count += a.gpu_count; x->gpu_ns += a.gpu_ns;
  uint64_t *h = &x->hist0;
  const uint64_t *ah = &a.hist0;
  for (int k = 0; k < NCS_AGG_BUCKETS; k++) h[k] += ah[k];
  f->agg_calls += a.calls;
  return 0;
}

static int on_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct wfile *f = ctx;
  if (!f->bounded || file_init(f)) return 0;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = &x[i];
    uint32_t r = row_of(f, c->comm, c->op, c->datatype, log2u(c->count));
    struct ncs_aggregate *a = &f->rows[r];
    a->calls++;
    a->count += c->count;
    a->host_ns += c->t_exit > c->t_enter ? c->t_exit - c->t_enter : 0;
    if (c->rc != 0 && !(c->flags & NCS_CALL_F_INPROGRESS)) a->failed++;
    if (!f->win_calls || c->t_enter < f->win_t0) f->win_t0 = c->t_enter;
    if (c->t_exit > f->win_t1) f->win_t1 = c->t_exit;
    f->win_calls++;
    if (c->thread < WIN_THREADS) {
      struct wpend *p = f->pend[c->thread];
      if (!p) p = f->pend[c->thread] = calloc(WIN_PENDING, sizeof *p);
      if (p) p[c->tcall & (WIN_PENDING - 1)] = (struct wpend){c->tcall, c->count, r};
    }
  }
  return 0;
}

static int on_gpu_times(void *ctx, const struct ncs_gpu_time *x, size_t n) {
  struct wfile *f = ctx;
  if (!f->rows) return 0;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_gpu_time *g = &x[i];
    if (g->kind != NCS_GPU_KIND_CALL || g->flags || g->thread >= WIN_THREADS || !f->pend[g->thread]) continue;
    struct wpend *p = &f->pend[g->thread][g->ref & (WIN_PENDING - 1)];
    if (!p->tcall || p->tcall != g->ref) continue;
    struct ncs_aggregate *a = &f->rows[p->row];
    uint64_t ns = g->gpu_end > g->gpu_start ? g->gpu_end - g->gpu_start : 0;
    a->gpu_calls++; a->gpu_count += p->count; a->gpu_ns += ns;
    uint64_t us = ns / 1000, lim = 1;
    unsigned k = 0;
    while (k < NCS_AGG_BUCKETS - 1 && us >= lim) { k++; lim *= 4; }
    (&a->hist0)[k]++;
    p->tcall = 0;
  }
  return 0;
}

/* A stretch (io/trace.h) in file order (a call's pending slot is its tcall's, which a later
 * call of its thread may take); nothing to do in an unbounded file. */
static int on_stretch(void *ctx, const struct ncs_stretch *s) {
  return ((struct wfile *)ctx)->bounded ? ncs_stretch_in_order(s, ctx, on_calls, on_gpu_times) : 0;
}

static void win_visitor(void *state, int file, struct ncs_visitor *v) {
  struct ncs_window *s = state;
  v->ctx = &s->f[file];
  v->process = on_process;
  v->comm = on_comm;
  v->clock = on_clock;
  v->raw = on_raw;
  v->kernels = on_kernels;
  v->calls = on_calls;
  v->gpu_times = on_gpu_times;
  v->stretch = on_stretch;
}

static void win_file_done(void *state, int file, const struct ncs_read_status *st) {
  (void)st;
  struct wfile *f = &((struct ncs_window *)state)->f[file];
  for (unsigned i = 0; i < WIN_THREADS; i++) { free(f->pend[i]); f->pend[i] = NULL; }
  free(f->slot);
  f->slot = NULL;
  double c = ncs_ivu_total(&f->k_comm), q = ncs_ivu_total(&f->k_other), a = ncs_ivu_total(&f->k_all);
  /* whole-run figures: a file that never rotated (every kernel is in it) or one that says what
   * ran before its window (5.5); a rotated file of 5.4 or older: unknown */
  if (f->bounded && (f->have_kagg || !f->rotated) && f->k_win + (f->have_kagg ? f->k_agg_kernels : 0) > 0) {
    f->k_whole = 1;
    f->k_comm_ns = f->k_agg_comm + (uint64_t)(c + 0.5);
    f->k_exposed_ns = f->k_agg_exposed + (a > q ? (uint64_t)(a - q + 0.5) : 0);
  }
  /* keep only the rows used (a few dozen, not WIN_ROWS): many files stay cheap until the sum */
  struct ncs_aggregate *r = f->rows && f->nrows ? realloc(f->rows, f->nrows * sizeof *f->rows) : NULL;
  if (r) f->rows = r;
}

static void job_sum(const struct ncs_window *s, struct ncs_window_sum *j) {
  memset(j, 0, sizeof *j);
  j->nfiles = s->n;
  for (int i = 0; i < s->n; i++) {
    const struct wfile *f = &s->f[i];
    if (!f->bounded) continue;
    j->files++;
    if (f->keep_ns) j->keep_ns = f->keep_ns;
    if (f->keep_bytes) j->keep_bytes = f->keep_bytes;
    j->agg_calls += f->agg_calls;
    j->win_calls += f->win_calls;
    if (f->k_whole) {
      j->kact_files++;
      j->gpu_comm_ns += f->k_comm_ns;
      j->gpu_exposed_ns += f->k_exposed_ns;
      j->gpu_comm_before_ns += f->k_agg_comm;
    }
    if (f->win_calls && f->have_clock) {
      uint64_t t0 = f->rt_ns + (f->win_t0 - f->mono_ns), t1 = f->rt_ns + (f->win_t1 - f->mono_ns);
      if (!j->t0_utc || t0 < j->t0_utc) j->t0_utc = t0;
      if (t1 > j->t1_utc) j->t1_utc = t1;
    }
    for (unsigned k = 0; f->rows && k < f->nrows; k++) {
      const struct ncs_aggregate *a = &f->rows[k];
      if (!a->calls) continue;
      if (a->comm == NCS_AGG_OTHER || ncs_op_bw(a->op) == NCS_BW_NONE) { j->other_calls += a->calls; continue; }
      size_t dts = ncs_rule_dtype_size(a->datatype);
      unsigned bc = a->size_log2 + log2u(dts ? dts : 1);
      struct ncs_window_row *r = NULL;
      for (int m = 0; m < j->n; m++)
        if (j->r[m].op == a->op && j->r[m].bclass == bc) { r = &j->r[m]; break; }
      if (!r && j->n < (int)(sizeof j->r / sizeof j->r[0])) {
        r = &j->r[j->n++];
        memset(r, 0, sizeof *r);
        r->op = a->op;
        r->bclass = bc;
      }
      if (!r) { j->other_calls += a->calls; continue; }
      int nr = a->comm < WIN_COMMS ? f->nranks[a->comm] : 0;
      r->calls += a->calls;
      r->bytes += ncs_rule_bytes(a->count, a->datatype);
      r->failed += a->failed;
      if (nr > 0 && a->gpu_calls) {
        r->gpu_calls += a->gpu_calls;
        r->gpu_ns += a->gpu_ns;
        r->busbytes += ncs_rule_busbytes(a->op, a->gpu_count, a->datatype, nr);
      }
    }
  }
}

static int cmp_jrow(const void *a, const void *b) {
  const struct ncs_window_row *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  return x->bclass < y->bclass ? -1 : x->bclass > y->bclass;
}

static void win_finish(void *state, const struct ncs_job *job) {
  struct ncs_window *s = state;
  if (!s || !(s->sum = malloc(sizeof *s->sum))) return;
  ncs_window_sum(s, s->sum);
}
static const void *win_result(void *state) {
  const struct ncs_window *s = state;
  return s ? s->sum : NULL;
}

static void win_destroy(void *state) {
  struct ncs_window *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    free(s->f[i].rows);
    free(s->f[i].slot);
    for (unsigned k = 0; k < WIN_THREADS; k++) free(s->f[i].pend[k]);
    ncs_ivu_free(&s->f[i].k_comm);
    ncs_ivu_free(&s->f[i].k_other);
    ncs_ivu_free(&s->f[i].k_all);
  }
  free(s->f);
  free(s->sum);
  free(s);
}

/* The same, for html and timeline (window.h). */
struct ncs_window *ncs_window_new(int nfiles) {
  struct ncs_job job = {.n = nfiles};
  return win_create(&job);
}
void ncs_window_visitor(struct ncs_window *w, int file, struct ncs_visitor *v) { win_visitor(w, file, v); }
void ncs_window_file_done(struct ncs_window *w, int file) { win_file_done(w, file, NULL); }
void ncs_window_free(struct ncs_window *w) { win_destroy(w); }
int ncs_window_sum(const struct ncs_window *w, struct ncs_window_sum *j) {
  if (!w) return 0;
  job_sum(w, j);
  qsort(j->r, (size_t)j->n, sizeof j->r[0], cmp_jrow);
  return j->files;
}

const struct ncs_analysis ncs_analysis_window = {
  .name = "window",
  .create = win_create,
  .visitor = win_visitor,
  .file_done = win_file_done,
  .finish = win_finish,
  .result = win_result,
  .destroy = win_destroy,
};
