/* doctor_facts.c — one pass over a trace collecting what the doctor and the report's
 * transport section need (doctor_facts.h). */
#include "analysis/doctor_facts.h"

#include <stdlib.h>
#include <string.h>

#include "model/linkref.h"
#include "model/rules.h"
#include "model/shift.h"
#include "ncclscope/ops.h"

struct ncs_dfacts *ncs_dfacts_new(const char *path) {
  struct ncs_dfacts *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  snprintf(f->path, sizeof f->path, "%s", path ? path : "");
  f->pid = -1;
  ncs_tmodel_init(&f->log);
  ncs_ivu_by_chunk(&f->host_u);
  ncs_ivu_by_chunk(&f->gpu_u);
  return f;
}

void ncs_dfacts_free(struct ncs_dfacts *f) {
  if (!f) return;
  ncs_tmodel_free(&f->log);
  free(f->pending);
  free(f->samples);
  ncs_ivu_free(&f->host_u);
  ncs_ivu_free(&f->gpu_u);
  ncs_kact_free(f->kact);
  ncs_replay_free(f->replay);
  free(f->topo);
  free(f);
}

static int on_process(void *ctx, const struct ncs_process *p) {
  struct ncs_dfacts *f = ctx;
  char nodeidx[32] = "";
  f->have_process = 1;
  f->pid = (long)p->pid;
  for (size_t i = 0; i < p->nkv; i++) {
    const char *k = p->kv[i].key, *v = p->kv[i].value;
    if (!strcmp(k, "host")) snprintf(f->host, sizeof f->host, "%s", v);
    else if (!strcmp(k, "nccl_version")) snprintf(f->version_code, sizeof f->version_code, "%s", v);
    else if (!strcmp(k, "timing")) snprintf(f->timing, sizeof f->timing, "%s", v);
    else if (!strcmp(k, "env.NCCLSCOPE_GPU_TIMING")) snprintf(f->gpu_timing_env, sizeof f->gpu_timing_env, "%s", v);
    else if (!strcmp(k, "env.GROUP_RANK") || !strcmp(k, "env.NODE_RANK") || !strcmp(k, "env.SLURM_NODEID"))
      snprintf(nodeidx, sizeof nodeidx, "%s", v);
    else if (!strncmp(k, "env.", 4) && f->nenv < NCS_DF_MAX_ENV &&
             (!strncmp(k + 4, "NCCL_", 5) || strstr(k + 4, "VISIBLE_DEVICES"))) {
      snprintf(f->env[f->nenv][0], sizeof f->env[0][0], "%s", k + 4);
      snprintf(f->env[f->nenv][1], sizeof f->env[0][1], "%s", v);
      f->nenv++;
    }
  }
  snprintf(f->node, sizeof f->node, "%s%s%s", f->host, nodeidx[0] ? "#" : "", nodeidx);
  return 0;
}

static int on_comm(void *ctx, const struct ncs_comm *c) {
  struct ncs_dfacts *f = ctx;
  if (f->replay) ncs_replay_comm(f->replay, c->comm, c->nranks, c->device);
  if (!ncs_rc_ok(c->rc)) return 0;
  struct ncs_dcomm *d = NULL;
  for (int i = 0; i < f->ncomms && !d; i++) /* a second COMM record completes a non-blocking init */
    if (f->comms[i].comm == c->comm) d = &f->comms[i];
  if (!d && f->ncomms >= NCS_DF_MAX_COMMS) return 0;
  if (!d) d = &f->comms[f->ncomms++];
  d->comm_id = c->comm_id;
  d->comm = c->comm;
  d->rank = c->rank;
  d->nranks = c->nranks;
  d->device = c->device;
  return 0;
}

static const struct ncs_dcomm *find_comm(const struct ncs_dfacts *f, uint32_t comm) {
  for (int i = 0; i < f->ncomms; i++)
    if (f->comms[i].comm == comm) return &f->comms[i];
  return NULL;
}


/* A big collective: its bus bandwidth on the host's time, and its bus bytes kept for its GPU
 * time (on_gpu). */
/* Room for the samples (both arrays in one block); 0, or -1 when out of memory. */
static int have_samples(struct ncs_dfacts *f) {
  if (f->samples) return 0;
  if (!(f->samples = malloc(2 * NCS_DF_MAX_SAMPLES * sizeof *f->samples))) return -1;
  f->host_samples = f->samples + NCS_DF_MAX_SAMPLES;
  return 0;
}

static void big_call(struct ncs_dfacts *f, const struct ncs_call *c) {
  if (f->nhost_samples == NCS_DF_MAX_SAMPLES && f->nsamples == NCS_DF_MAX_SAMPLES) return; /* no room for a sample */
  if (have_samples(f) != 0) return;
  const struct ncs_dcomm *cm = find_comm(f, c->comm);
  if (!cm) return;
  double bb = ncs_rule_busbytes(c->op, c->count, c->datatype, cm->nranks), steps = ncs_rule_steps(c->op, cm->nranks);
  if (bb <= 0) return;
  if (c->t_exit > c->t_enter && f->nhost_samples < NCS_DF_MAX_SAMPLES) {
    f->host_samples[f->nhost_samples++] = bb / (double)(c->t_exit - c->t_enter);
    f->sample_bus[0] += bb;
    f->sample_steps[0] += steps;
  }
  if (f->nsamples == NCS_DF_MAX_SAMPLES) return; /* its GPU time would make no sample */
  if (!f->pending && !(f->pending = calloc(NCS_DF_PENDING, sizeof *f->pending))) return;
  struct ncs_dpending *p = &f->pending[NCS_DF_SLOT(c->thread, c->tcall)];
  p->thread = c->thread;
  p->tcall = c->tcall;
  p->bytes_bus = bb;
  p->steps = steps;
  p->used = 0;
}

/* One call */
static inline __attribute__((always_inline)) void call_one(struct ncs_dfacts *f, const struct ncs_call *c) {
  int kind = ncs_op_kind(c->op);
  f->ncalls++;
  if (!f->t_first || c->t_enter < f->t_first) f->t_first = c->t_enter;
  if (c->t_exit > f->t_last) f->t_last = c->t_exit;
  if (kind != NCS_KIND_COLL && kind != NCS_KIND_P2P && c->op != NCS_OP_GroupEnd) return;
  if (!f->timing_gpu) ncs_ivu_add(&f->host_u, c->thread, c->t_enter, c->t_exit); /* GPU-timed: the GPU union is the one used */
  if (kind != NCS_KIND_COLL || !ncs_rc_ok(c->rc)) return;
  if (!f->ncomms || f->busbw_unused || ncs_rule_bytes(c->count, c->datatype) < NCS_DF_BIG_BYTES) return; /* most calls */
  big_call(f, c);
}
__attribute__((noinline)) static int on_call(void *ctx, const struct ncs_call *c) {
  call_one(ctx, c);
  return 0;
}

/* What a run of calls adds up in locals: the first entry (kept as t_first - 1: "no call yet or
 * an earlier entry" is then one unsigned comparison) and the last exit. */
struct run_acc { uint64_t first1, last; };

/* The calls of c's operation from c on (to end), the next call of another returned; comm: the
 * operation communicates (its host interval joins the union, while no GPU time came), coll: a
 * collective with communicators known (bandwidth samples). */
static inline __attribute__((always_inline)) const struct ncs_call *
op_span(struct ncs_dfacts *f, struct run_acc *a, const struct ncs_call *c, const struct ncs_call *end, int comm, int coll) {
  uint32_t op = c->op;
  uint64_t first1 = a->first1, last = a->last;
  const struct ncs_call *from = c;
  for (; c < end && c->op == op; c++) {
    uint64_t s = c->t_enter, e = c->t_exit;
    first1 = s <= first1 ? s - 1 : first1;
    last = e > last ? e : last;
    if (!comm) continue;
    if (!coll || !ncs_rc_ok(c->rc) || ncs_rule_bytes(c->count, c->datatype) < NCS_DF_BIG_BYTES) continue; /* most calls */
    big_call(f, c);
  }
  if (comm && !f->timing_gpu) ncs_ivu_add_calls(&f->host_u, from, (size_t)(c - from)); /* (their order: the union's
                                                                                     alone, big_call reads none of it) */
  *a = (struct run_acc){first1, last};
  return c;
}

/* A run of calls, one operation's consecutive calls at a time. */
__attribute__((noinline)) static int on_run(void *ctx, const struct ncs_call *x, size_t n) {
  struct ncs_dfacts *f = ctx;
  struct run_acc a = {f->t_first - 1, f->t_last};
  f->ncalls += n;
  for (const struct ncs_call *c = x, *end = x + n; c < end;) {
    int kind = ncs_op_kind(c->op);
    if (kind == NCS_KIND_COLL && f->ncomms && !f->busbw_unused) c = op_span(f, &a, c, end, 1, 1); /* ncomms: COMM records come between runs */
    else if (kind == NCS_KIND_COLL || kind == NCS_KIND_P2P || c->op == NCS_OP_GroupEnd) c = op_span(f, &a, c, end, 1, 0);
    else c = op_span(f, &a, c, end, 0, 0);
  }
  f->t_first = a.first1 + 1;
  f->t_last = a.last;
  return 0;
}
/* A run of CALL records (trace.h): a run of one (GPU-timed traces: a CALL, its GPU_TIME, the
 * next CALL) as a single record, nothing set up for it. */
static int on_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct ncs_dfacts *f = ctx;
  if (f->replay && (f->replay_open || n > 1 || (x->flags & NCS_CALL_F_CAPTURED)))
    f->replay_open = ncs_replay_calls(f->replay, x, n);
  return n == 1 ? on_call(ctx, x) : on_run(ctx, x, n);
}

static inline void on_gpu(struct ncs_dfacts *f, const struct ncs_gpu_time *g) {
  if (g->flags || g->gpu_end <= g->gpu_start) return;
  if (!f->timing_gpu) ncs_ivu_free(&f->host_u); /* finish takes the GPU union from now on */
  f->timing_gpu = 1;
  if (!f->gpu_first || g->gpu_start < f->gpu_first) f->gpu_first = g->gpu_start;
  if (g->gpu_end > f->gpu_last) f->gpu_last = g->gpu_end;
  ncs_ivu_add(&f->gpu_u, g->thread, g->gpu_start, g->gpu_end);
  if (g->kind != NCS_GPU_KIND_CALL || f->nsamples == NCS_DF_MAX_SAMPLES) return;
  struct ncs_dpending *p = f->pending ? &f->pending[NCS_DF_SLOT(g->thread, g->ref)] : NULL;
  if (p && p->bytes_bus > 0 && !p->used && p->thread == g->thread && p->tcall == g->ref) {
    p->used = 1;
    if (f->nsamples < NCS_DF_MAX_SAMPLES) {
      f->samples[f->nsamples++] = p->bytes_bus / (double)(g->gpu_end - g->gpu_start);
      f->sample_bus[1] += p->bytes_bus;
      f->sample_steps[1] += p->steps;
    }
  }
  return;
}
/* (on_stretch, GPU-timed and no bandwidth samples) what the calls give: their window into *a
 * (the first entry kept as t_first - 1, as on_run does); returns their flags or-ed (a captured
 * call among them: on_stretch takes the records in order instead, and *a is dropped) */
static uint32_t calls_window(const struct ncs_call *c, size_t n, struct run_acc *a) {
  uint64_t first1 = a->first1, last = a->last;
  uint32_t flags = 0;
  for (size_t i = 0; i < n; i++) {
    first1 = c[i].t_enter <= first1 ? c[i].t_enter - 1 : first1;
    last = c[i].t_exit > last ? c[i].t_exit : last;
    flags |= c[i].flags;
  }
  *a = (struct run_acc){first1, last};
  return flags;
}
/* (on_stretch, the same) what the GPU times give: their window and union (on_gpu without the
 * switch to GPU timing, made already, nor the pending slots, never filled); the window's first
 * start kept as gpu_first - 1, as calls_window keeps the first entry */
static void gpus_union(struct ncs_dfacts *f, const struct ncs_gpu_time *g, size_t n) {
  uint64_t first1 = f->gpu_first - 1, last = f->gpu_last;
  for (size_t i = 0; i < n; i++) {
    uint64_t s = g[i].gpu_start, e = g[i].gpu_end;
    if (g[i].flags || e <= s) continue;
    first1 = s <= first1 ? s - 1 : first1;
    last = e > last ? e : last;
  }
  f->gpu_first = first1 + 1;
  f->gpu_last = last;
  ncs_ivu_add_gpus(&f->gpu_u, g, n);
}

static int on_gpus(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  struct ncs_dfacts *f = ctx;
  if (f->replay) ncs_replay_gpu_times(f->replay, g, n);
  for (size_t i = 0; i < n; i++) on_gpu(f, &g[i]);
  return 0;
}

/* A stretch (io/trace.h) in file order: pending slots, the switch to GPU timing and the
 * replays follow the file's interleaving. Replay takes none of the stretch's calls when none is
 * captured and no capture is open (ncs_replay_calls), and its windows then do not depend on
 * where the calls fall: it gets them as one run, and the records go in file order here without
 * a call each. Otherwise a run at a time through on_calls / on_gpus. Once GPU-timed, with no
 * bandwidth samples (busbw_unused: no pending slots), a call gives only its count and window
 * and a GPU time its union: neither depends on the other's order, so the calls go in one pass
 * (which looks for a captured call too) and the GPU times (in their order) in another, the union
 * taking them in one ncs_ivu_add_gpus. */
static int on_stretch(void *ctx, const struct ncs_stretch *s) {
  struct ncs_dfacts *f = ctx;
  if (f->timing_gpu && f->busbw_unused && !f->replay_open) {
    struct run_acc a = {f->t_first - 1, f->t_last};
    uint32_t flags = calls_window(s->c, s->nc, &a);
    if (f->replay && (flags & NCS_CALL_F_CAPTURED)) return ncs_stretch_in_order(s, ctx, on_calls, on_gpus); /* nothing taken yet */
    if (f->replay && s->ng) ncs_replay_gpu_times(f->replay, s->g, s->ng);
    f->ncalls += s->nc;
    f->t_first = a.first1 + 1;
    f->t_last = a.last;
    gpus_union(f, s->g, s->ng);
    return 0;
  }
  if (f->replay) {
    size_t i = 0;
    while (!f->replay_open && i < s->nc && !(s->c[i].flags & NCS_CALL_F_CAPTURED)) i++;
    if (f->replay_open || i < s->nc) return ncs_stretch_in_order(s, ctx, on_calls, on_gpus);
    if (s->ng) ncs_replay_gpu_times(f->replay, s->g, s->ng);
  }
  const uint8_t *o = s->order, *e = o + s->nc + s->ng;
  const struct ncs_call *c = s->c;
  const struct ncs_gpu_time *g = s->g;
  while (o < e) {
    if (*o) { on_gpu(f, g++); o++; continue; }
    const uint8_t *q = o + 1;
    while (q < e && !*q) q++;
    size_t n = (size_t)(q - o);
    if (n == 1) call_one(f, c);
    else on_run(f, c, n);
    c += n;
    o = q;
  }
  return 0;
}

static int on_log(void *ctx, const struct ncs_log_line *l) {
  struct ncs_dfacts *f = ctx;
  ncs_tmodel_line(&f->log, l->line, l->len);
  return 0;
}

static int on_raw(void *ctx, const struct ncs_raw *r) {
  struct ncs_dfacts *f = ctx;
  if (f->replay) ncs_replay_add_raw(f->replay, r);
  if (f->kact && ncs_kact_add_raw(f->kact, r->type, r->body, r->len)) return 0;
  if (r->type != NCS_REC_TOPO_GPU && r->type != NCS_REC_TOPO_LINK) return 0;
  if (!f->topo) {
    f->topo = malloc(sizeof *f->topo);
    if (!f->topo) return 0;
    ncs_topo_init(f->topo, f->host);
  }
  if (ncs_topo_add_raw(f->topo, r->type, r->body, r->len) < 0) f->topo_damaged = 1;
  return 0;
}

/* A chunk ended: the unions' threads (model/ivlanes.h). */
static int on_chunk(void *ctx, uint64_t index, uint64_t dropped_total, uint32_t flags, uint64_t offset) {
  struct ncs_dfacts *f = ctx;
  ncs_ivu_chunk(&f->host_u);
  ncs_ivu_chunk(&f->gpu_u);
  return 0;
}

static int on_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct ncs_dfacts *f = ctx;
  (void)raw;
  if (f->replay) ncs_replay_add_kernels(f->replay, k, n);
  if (f->kact) ncs_kact_add_kernels(f->kact, k, n);
  return 0;
}

void ncs_dfacts_attach(struct ncs_dfacts *f, struct ncs_mux *m) {
  if (m->n >= NCS_MUX_MAX) return;
  struct ncs_visitor *v = &m->v[m->n++];
  memset(v, 0, sizeof *v);
  v->ctx = f;
  if (!f->kact && !f->kact_elsewhere) f->kact = ncs_kact_new(); /* NULL: no GPU-time figures, the rest still works */
  if (!f->replay) f->replay = ncs_replay_new(); /* NULL: replays not counted */
  v->process = on_process;
  v->comm = on_comm;
  v->calls = on_calls;
  v->gpu_times = on_gpus;
  v->stretch = on_stretch;
  v->log_line = on_log;
  v->raw = on_raw;
  v->chunk = on_chunk;
  v->kernels = on_kernels;
}

static double median_busbw(struct ncs_dfacts *f);

/* One replayed call: a call of the window, a GPU interval (its share of its kernel's, which may
 * run several calls of a captured group), a bandwidth sample when large. */
static void on_replayed(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e) {
  struct ncs_dfacts *f = ctx;
  double d = (double)(e - s) / (c->members > 1 ? c->members : 1);
  f->ncalls++;
  f->replay_ns += d;
  if (!f->gpu_first || s < f->gpu_first) f->gpu_first = s;
  if (e > f->gpu_last) f->gpu_last = e;
  if (f->busbw_unused || ncs_op_kind(c->op) != NCS_KIND_COLL || (double)c->bytes < (double)NCS_DF_BIG_BYTES || e <= s) return;
  double bb = ncs_rule_busbytes(c->op, c->count, c->datatype, (int)c->n);
  if (bb > 0 && f->nsamples < NCS_DF_MAX_SAMPLES && have_samples(f) == 0) f->samples[f->nsamples++] = bb / d;
}
static void on_replay_extra(void *ctx, uint64_t s, uint64_t e) { ((struct ncs_dfacts *)ctx)->replay_extra_ns += (double)(e - s); }
/* The file's graph replays (docs/METRICS.md "Graph replays"): counted with GPU timing only. */
static void add_replays(struct ncs_dfacts *f) {
  if (!f->replay) return;
  if (ncs_replay_solve(f->replay, &f->replays) == 0 && f->replays.counted && f->timing_gpu) {
    ncs_replay_each(f->replay, 0, on_replayed, f);
    ncs_replay_extra(f->replay, 0, on_replay_extra, f);
  }
  if (f->keep_replay) return;
  ncs_replay_free(f->replay);
  f->replay = NULL;
}

void ncs_dfacts_finish(struct ncs_dfacts *f, int read_rc, const struct ncs_read_status *st) {
  f->read_rc = read_rc;
  snprintf(f->error, sizeof f->error, "%s", st ? st->error : "");
  double host = ncs_ivu_total(&f->host_u), gpu = ncs_ivu_total(&f->gpu_u);
  const struct ncs_ivu *u = f->timing_gpu ? &f->gpu_u : &f->host_u;
  f->comm_late = u->late;
  f->comm_late_ns = u->late_ns;
  add_replays(f);
  f->comm_ns = f->timing_gpu ? gpu + f->replay_extra_ns : host;
  free(f->pending);
  f->pending = NULL;
  if (f->kact && ncs_kact_figures(f->kact, &f->gpu, NULL, 0, NULL, NULL) != 0) f->gpu.have = 0;
  ncs_kact_free(f->kact);
  f->kact = NULL;
  if (f->topo && !f->topo->host[0]) snprintf(f->topo->host, sizeof f->topo->host, "%s", f->host);
  f->busbw_median = median_busbw(f); /* once: doctor and the headline both ask */
  free(f->samples);
  f->samples = f->host_samples = NULL;
}

const char *ncs_dfacts_env(const struct ncs_dfacts *f, const char *name) {
  for (int i = 0; i < f->nenv; i++)
    if (!strcmp(f->env[i][0], name)) return f->env[i][1];
  return NULL;
}

int ncs_dfacts_rank(const struct ncs_dfacts *f, int *nranks, uint64_t *comm_id) {
  int best = -1;
  for (int i = 0; i < f->ncomms; i++) {
    const struct ncs_dcomm *c = &f->comms[i], *b = best >= 0 ? &f->comms[best] : NULL;
    if (!b || c->nranks > b->nranks || (c->nranks == b->nranks && c->comm_id < b->comm_id) ||
        (c->comm_id == b->comm_id && c->rank < b->rank)) best = i;
  }
  if (best < 0) { if (nranks) *nranks = 0; if (comm_id) *comm_id = 0; return -1; }
  if (nranks) *nranks = f->comms[best].nranks;
  if (comm_id) *comm_id = f->comms[best].comm_id;
  return f->comms[best].rank;
}

int ncs_dfacts_label(const struct ncs_dfacts *f, char *buf, size_t n) {
  int nr, held = 0, lo = -1, hi = -1;
  uint64_t id;
  int r = ncs_dfacts_rank(f, &nr, &id);
  if (r < 0) { snprintf(buf, n, "?"); return 0; }
  for (int i = 0; i < f->ncomms; i++) {
    const struct ncs_dcomm *c = &f->comms[i];
    if (c->comm_id != id || c->nranks != nr) continue;
    held++;
    if (lo < 0 || c->rank < lo) lo = c->rank;
    if (c->rank > hi) hi = c->rank;
  }
  if (held > 1 && hi - lo + 1 == held) snprintf(buf, n, "%d-%d", lo, hi);
  else if (held > 1) snprintf(buf, n, "%d..%d (%d ranks)", lo, hi, held);
  else snprintf(buf, n, "%d", r);
  return held;
}

int ncs_dfacts_holds(const struct ncs_dfacts *f, int rank, int *device) {
  int nr;
  uint64_t id;
  if (ncs_dfacts_rank(f, &nr, &id) < 0) return 0;
  for (int i = 0; i < f->ncomms; i++)
    if (f->comms[i].comm_id == id && f->comms[i].rank == rank) { if (device) *device = f->comms[i].device; return 1; }
  return 0;
}

/* Their median; the samples are reordered (finish frees them next). */
static double median_busbw(struct ncs_dfacts *f) {
  int k = f->nsamples ? f->nsamples : f->nhost_samples;
  if (!k) return 0;
  return ncs_kth_smallest(f->nsamples ? f->samples : f->host_samples, k, k / 2); /* bytes per ns == GB/s */
}

double ncs_dfacts_busbw(const struct ncs_dfacts *f, int *n, int *gpu) {
  if (gpu) *gpu = f->nsamples > 0;
  if (n) *n = f->nsamples ? f->nsamples : f->nhost_samples;
  return f->busbw_median;
}

double ncs_dfacts_busbw_expected(const struct ncs_dfacts *f, const struct ncs_link *l) {
  int k = f->nsamples ? 1 : 0;
  return ncs_linkref_busbw(l, f->sample_bus[k], f->sample_steps[k]);
}
