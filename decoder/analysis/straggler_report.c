/* straggler_report.c — the "who is slow" analysis of `ncclscope report` (analysis.h): puts
 * each file's collective entries on the job clock (align.h) and lines them up across ranks
 * (straggler.h); its result is the engine's (ncs_strag_result), printed by
 * render/straggler_render.c: a short "Who is slow" section; JSON: top-level "stragglers" (worst
 * first), "collectives", "mismatches" and "missing". Files may be read in parallel: each has its
 * own aligner (made at its first record, freed when it is done) and hands its arrivals to the
 * engine in batches; the job clock's origin is the creation time of the first readable file.
 * A collective on a communicator the engine does not line up when the call is read (no COMM
 * record of it before the call: the shim writes it when the init returns, before any call on
 * it) is not aligned at all: the engine would ignore its arrival; nor is one on a communicator
 * of one rank: its time enters no figure (straggler.h). */
#include <stdlib.h>
#include <string.h>

#include "model/align.h"
#include "model/jobload.h"
#include "analysis/analysis.h"
#include "analysis/straggler.h"
#include "analysis/headline.h"
#include "ncclscope/ops.h"

struct sr_file;
#define BATCH 256
struct sr {
  struct ncs_strag *s;
  int n;
  int64_t origin;
  struct sr_file *files;      /* [n] */
};
struct sr_file {
  struct sr *sr;
  int file;
  struct ncs_aligner al;
  int started;
  struct ncs_strag_arrival *batch; /* [BATCH] while started */
  size_t nbatch;
  uint8_t *up;                /* [nup] 1: the engine lines up calls on this comm index */
  size_t nup;
  int up_short;               /* up[] could not grow: past nup, ask the engine */
};

static void flush_batch(struct sr_file *f) {
  ncs_strag_arrive_batch(f->sr->s, f->file, f->batch, f->nbatch);
  f->nbatch = 0;
}
/* A collective on a one-rank communicator (lines_up 2): to the engine as read, with no time
 * (it enters no figure, straggler.h), not through the aligner. */
static void one_rank(struct sr_file *f, const struct ncs_call *c) {
  if (!f->batch) return;
  f->batch[f->nbatch++] = (struct ncs_strag_arrival){.comm = c->comm, .op = c->op, .datatype = c->datatype,
                                                     .root = c->root, .seq = c->seq, .count = c->count};
  if (f->nbatch == BATCH) flush_batch(f);
}
static void released(void *ctx, const struct ncs_aligned *a) {
  struct sr_file *f = ctx;
  const struct ncs_call *c = a->call;
  if (!f->batch) return;
  f->batch[f->nbatch++] = (struct ncs_strag_arrival){.comm = c->comm, .op = c->op, .datatype = c->datatype,
                                                     .root = c->root, .seq = c->seq, .count = c->count,
                                                     .t = a->has_gpu ? a->gpu_start : a->enter,
                                                     .gpu_end = a->gpu_end, .has_gpu = a->has_gpu};
  if (f->nbatch == BATCH) flush_batch(f);
}

static void *sr_create(const struct ncs_job *job) {
  struct sr *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->s = ncs_strag_new(job->n);
  s->files = calloc(job->n ? (size_t)job->n : 1, sizeof *s->files);
  if (!s->s || !s->files) { ncs_strag_free(s->s); free(s->files); free(s); return NULL; }
  for (int i = 0; i < job->n && !s->origin; i++) s->origin = ncs_file_created_ns(job->rank[i].path);
  if (job->strag) *job->strag = s->s;
  return s;
}

static void ensure(struct sr_file *f) {
  if (f->started) return;
  ncs_aligner_init(&f->al, f->sr->origin, released, f);
  f->batch = malloc(BATCH * sizeof *f->batch);
  f->nbatch = 0;
  f->started = 1;
}
static int f_process(void *ctx, const struct ncs_process *p) {
  struct sr_file *f = ctx;
  struct sr *s = f->sr;
  ensure(f);
  const char *rt = ncs_process_get(p, "clock_realtime_ns"), *mo = ncs_process_get(p, "clock_monotonic_ns");
  if (rt && mo) {
    struct ncs_clock c = {strtoull(rt, NULL, 10), strtoull(mo, NULL, 10), 0};
    if (c.realtime_ns && c.monotonic_ns) ncs_aligner_clock(&f->al, &c);
  }
  ncs_strag_file_info(s->s, f->file, ncs_process_get(p, "host"), p->pid);
  return 0;
}
static int f_comm(void *ctx, const struct ncs_comm *c) {
  struct sr_file *f = ctx;
  ncs_strag_comm(f->sr->s, f->file, c);
  int up = ncs_strag_lines_up(f->sr->s, f->file, c->comm);
  if (up && c->comm >= f->nup) { /* no room: lines_up() asks the engine */
    size_t n = (size_t)c->comm + 8;
    uint8_t *u = realloc(f->up, n);
    if (u) { memset(u + f->nup, 0, n - f->nup); f->up = u; f->nup = n; }
    else f->up_short = 1;
  }
  if (c->comm < f->nup) f->up[c->comm] = (uint8_t)up;
  return 0;
}
/* The engine's ncs_strag_lines_up for this file, from the copy f_comm keeps (only a COMM
 * record of this file changes it). */
static int lines_up(const struct sr_file *f, uint32_t comm) {
  if (comm < f->nup) return f->up[comm];
  return f->up_short ? ncs_strag_lines_up(f->sr->s, f->file, comm) : 0;
}
/* One call */
__attribute__((noinline)) static int f_call(void *ctx, const struct ncs_call *c) {
  struct sr_file *f = ctx;
  if (ncs_op_kind(c->op) != NCS_KIND_COLL || !c->seq) return 0; /* only collectives line up */
  int up = lines_up(f, c->comm);
  if (!up) return 0; /* no COMM record of it (yet) */
  ensure(f);
  if (up == 2) one_rank(f, c);
  else ncs_aligner_call(&f->al, c);
  return 0;
}
__attribute__((noinline)) static int f_run(void *ctx, const struct ncs_call *x, size_t n) {
  struct sr_file *f = ctx;
  uint32_t pop = UINT32_MAX, pcomm = UINT32_MAX; /* the last call's op and communicator */
  int coll = 0, up = 0;                           /* asked once per run and communicator */
  if (!f->nup && !f->up_short) return 0;          /* no communicator lines up (yet) */
  for (const struct ncs_call *c = x, *end = x + n; c < end; c++) {
    if (c->op != pop) { pop = c->op; coll = ncs_op_kind(pop) == NCS_KIND_COLL; }
    if (!coll || !c->seq) continue; /* only collectives line up */
    if (c->comm != pcomm) { pcomm = c->comm; up = lines_up(f, pcomm); }
    if (!up) continue; /* no COMM record of it (yet) */
    ensure(f);
    if (up != 2) { ncs_aligner_call(&f->al, c); continue; }
    /* one rank: the collectives that follow on its communicator go to the engine as they are,
     * after the arrivals batched before them (the same order as one_rank's) */
    const struct ncs_call *e = c + 1;
    while (e < end && e->comm == pcomm && e->seq && (e->op == pop || ncs_op_kind(e->op) == NCS_KIND_COLL)) e++;
    if (!f->batch) { c = e - 1; continue; } /* (one_rank's: no batch, no arrival) */
    if (f->nbatch) flush_batch(f);
    ncs_strag_arrive_one_calls(f->sr->s, f->file, pcomm, c, (size_t)(e - c));
    c = e - 1;
  }
  return 0;
}
/* A run of CALL records (trace.h): a run of one (GPU-timed traces: a CALL, its GPU_TIME, the
 * next CALL) as a single record, nothing set up for it. */
static int f_calls(void *ctx, const struct ncs_call *x, size_t n) { return n == 1 ? f_call(ctx, x) : f_run(ctx, x, n); }
static int f_clock(void *ctx, const struct ncs_clock *c) { struct sr_file *f = ctx; ensure(f); ncs_aligner_clock(&f->al, c); return 0; }
static int f_inflight(void *ctx, const struct ncs_inflight *x) { struct sr_file *f = ctx; ensure(f); ncs_aligner_inflight(&f->al, x); return 0; }
static int f_gpus(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  struct sr_file *f = ctx;
  ensure(f);
  for (size_t i = 0; i < n; i++) ncs_aligner_gpu(&f->al, &g[i]);
  return 0;
}

/* A stretch (io/trace.h) in file order: the aligner's matching depends on it. */
static int f_stretch(void *ctx, const struct ncs_stretch *s) { return ncs_stretch_in_order(s, ctx, f_calls, f_gpus); }

static void sr_visitor(void *state, int file, struct ncs_visitor *v) {
  struct sr *s = state;
  if (!s) return;
  struct sr_file *f = &s->files[file];
  memset(f, 0, sizeof *f);
  f->sr = s;
  f->file = file;
  v->ctx = f;
  v->process = f_process;
  v->comm = f_comm;
  v->calls = f_calls;
  v->clock = f_clock;
  v->gpu_times = f_gpus;
  v->stretch = f_stretch;
  v->inflight = f_inflight;
}

static void sr_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct sr *s = state;
  if (!s) return;
  struct sr_file *f = &s->files[file];
  if (f->started) {
    ncs_aligner_flush(&f->al);
    if (f->batch) flush_batch(f);
    ncs_aligner_free(&f->al);
    free(f->batch);
    f->batch = NULL;
    f->started = 0;
  }
  free(f->up);
  f->up = NULL;
  f->nup = 0;
  f->up_short = 0;
  ncs_strag_file_done(s->s, file, st ? st->truncated : 0);
}

static void sr_finish(void *state, const struct ncs_job *job) {
  if (!state) return;
  struct ncs_strag *s = ((struct sr *)state)->s;
  ncs_strag_finish(s);
  if (job->headline) ncs_headline_add_stragglers(job->headline, s);
}

static const void *sr_result(void *state) {
  const struct sr *s = state;
  return s ? ncs_strag_result(s->s) : NULL;
}
static void sr_destroy(void *state) {
  struct sr *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++)
  {
    if (s->files[i].started) { ncs_aligner_free(&s->files[i].al); free(s->files[i].batch); }
    free(s->files[i].up);
  }
  ncs_strag_free(s->s);
  free(s->files);
  free(s);
}

const struct ncs_analysis ncs_analysis_stragglers = {
  .name = "stragglers",
  .create = sr_create,
  .visitor = sr_visitor,
  .file_done = sr_file_done,
  .finish = sr_finish,
  .result = sr_result,
  .destroy = sr_destroy,
};
