/* callsites.c — which line of the job issued its NCCL calls, and what each line cost
 * (analysis/callsites.h; docs/CLI.md, "Call sites"): the engine, and the `callsites` analysis
 * of `ncclscope report --callsites` on it (html and doctor plug the engine into their read).
 *
 * One row per call site over the job: the calls whose CALL record names a call-site id
 * (collectives, Send/Recv, communicator life cycle; not GroupStart/GroupEnd), merged across
 * ranks on the site's key (model/callsites.h: the job's first frame as module + offset, so one
 * line of one build is one row however many ranks issued it). Per row: calls, ranks, bytes
 * (count x datatype size), host time (entry to return), GPU time (the calls' GPU_TIME records;
 * a call inside a group has no GPU time of its own: each of its group's GPU_TIME records, one
 * per stream, is added once to each site of the group), and its slowest call (by GPU time
 * where the site has any, else host time: rank, op, communicator, sequence number, time), and
 * its exposed GPU time: the part of its GPU time not hidden under compute on its rank. Exposed
 * time is a model, not a per-call measure (no per-call memory): each call's GPU time times the
 * exposed share its rank's kernel-activity sweep (model/kact.h, put in the report's stages by
 * `gputime`) found for the call's NCCL operation at the call's size bucket (the operation's
 * whole share where its kernels did not pair one to one with calls, e.g. inside groups);
 * unknown (null, "-") on ranks without kernel activity. Rows are sorted by exposed time, then
 * GPU time, then host time, most first: the first row is the most exposed site. The analysis
 * returns the rows as its result (struct ncs_callsites_result), with each row's stack named;
 * render/callsites_render.c prints them (text: the first 10 rows, every row and each site's
 * whole stack with --detail; JSON: top-level "callsites", docs/JSON.md).
 *
 * Contract (callsites.h): each file read once, files in parallel (per-file state: its site table, rows by
 * id, and a bounded table of calls awaiting their GPU_TIME); names are resolved in finish()
 * on one thread (io/symbolize.h reads the job's ELF files there). Memory: per file, its sites
 * (at most the shim's 2048, each with its GPU time per size bucket until the file is done) and
 * communicators; nothing per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callsites.h"

#include "analysis/analysis.h"
#include "analysis/doctor.h"
#include "analysis/headline.h"
#include "base/json.h"
#include "io/grow.h"
#include "model/callsites.h"
#include "model/commnames.h"
#include "model/kact.h"
#include "model/knames.h"
#include "model/rules.h"
#include "model/stages.h"
#include "ncclscope/format.h"
#include "ncclscope/ops.h"

#define PEND 4096   /* calls awaiting their GPU_TIME */
#define GPEND 256   /* groups awaiting theirs */
#define GMAX 8      /* sites a group's time is given to */

struct srow {
  uint32_t id, op, ops;           /* ops: distinct op count seen (1: one op) */
  uint64_t calls, bytes, host_ns, gpu_ns, gpu_calls;
  struct ncs_cs_slow host_slow, gpu_slow;
  uint64_t *gpu_b;                /* [NCS_KACT_BUCKETS] GPU time by size bucket (file_done frees) */
  uint64_t exp_ns, exp_gpu_ns;    /* exposed time, and the GPU time it was modelled from */
};
struct pend { uint64_t tcall, seq, S; uint32_t thread, row, op, comm, used; };
struct gpend { uint64_t group, start, end; uint32_t thread, used, n, row[GMAX]; };
struct cfile {
  struct ncs_sites *sites;
  struct srow *row;
  size_t nrow, caprow;
  int32_t last;
  struct pend *pend;
  struct gpend *gpend;
  struct ncs_commnames *cn;       /* the engine's: this file's COMM records are kept there */
  int file;
  int depth;                      /* PROCESS callsite_depth, -1 when not said */
  uint64_t calls_without_site;
};

struct ncs_callsites {
  int n;
  struct cfile *f;
  struct ncs_csrow *row;
  size_t nrow, caprow;
  int depth_off, depth_said;      /* files that said callsite_depth 0 / said anything */
  uint64_t without;
  struct ncs_symbolizer *sym;
  struct ncs_commnames *cn;
};
/* report's analysis: the engine above when --callsites is given */
struct cstate {
  int want;
  struct ncs_callsites_result res;
  struct ncs_callsites *cs;
  struct ncs_stages *stages;      /* the run's kernel-activity figures (gputime), or NULL */
};

static struct srow *row_of(struct cfile *f, uint32_t id) {
  if (f->last >= 0 && f->row[f->last].id == id) return &f->row[f->last];
  for (size_t i = 0; i < f->nrow; i++)
    if (f->row[i].id == id) { f->last = (int32_t)i; return &f->row[i]; }
  if (ncs_grow((void **)&f->row, &f->caprow, f->nrow + 1, sizeof *f->row)) return NULL;
  struct srow *r = &f->row[f->nrow];
  memset(r, 0, sizeof *r);
  r->id = id;
  f->last = (int32_t)f->nrow++;
  return r;
}

static uint32_t slot(uint64_t a, uint32_t b, uint32_t size) {
  return (uint32_t)(((a * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)b * 0xC2B2AE3D27D4EB4Full)) >> 40) & (size - 1);
}

/* kact's size bucket of S bytes (model/kact.h: b holds [2^(b-1), 2^b), 0 for S < 1) */
static int size_bucket(uint64_t S) {
  int b = 0;
  while (S && b < NCS_KACT_BUCKETS - 1) { S >>= 1; b++; }
  return b;
}

static void add_gpu(struct srow *r, uint64_t S, uint64_t ns) {
  if (!r->gpu_b) r->gpu_b = calloc(NCS_KACT_BUCKETS, sizeof *r->gpu_b);
  if (r->gpu_b) r->gpu_b[size_bucket(S)] += ns;
}

static void keep_slow(struct ncs_cs_slow *s, uint64_t ns, uint32_t op, uint32_t comm, uint64_t seq, int gpu) {
  if (ns > s->ns) *s = (struct ncs_cs_slow){ns, op, comm, seq, gpu};
}

static int c_call(void *ctx, const struct ncs_call *c) {
  struct cfile *f = ctx;
  int kind = ncs_op_kind(c->op);
  if (kind != NCS_KIND_COLL && kind != NCS_KIND_P2P && kind != NCS_KIND_COMM) return 0;
  if (!c->callsite) { f->calls_without_site++; return 0; }
  struct srow *r = row_of(f, c->callsite);
  if (!r) return 0;
  if (!r->calls) r->op = c->op;
  else if (r->op != c->op) r->ops = 2;
  r->calls++;
  r->bytes += kind == NCS_KIND_COMM ? 0 : ncs_rule_bytes(c->count, c->datatype);
  uint64_t host = c->t_exit >= c->t_enter ? c->t_exit - c->t_enter : 0;
  r->host_ns += host;
  keep_slow(&r->host_slow, host, c->op, c->comm, c->seq, 0);
  if (c->flags & NCS_CALL_F_CAPTURED) return 0;
  uint32_t ri = (uint32_t)(r - f->row);
  if (c->depth && c->group) {
    if (!f->gpend && !(f->gpend = calloc(GPEND, sizeof *f->gpend))) return 0;
    struct gpend *g = &f->gpend[slot(c->group, c->thread, GPEND)];
    if (!g->used || g->group != c->group || g->thread != c->thread)
      *g = (struct gpend){.group = c->group, .thread = c->thread, .used = 1};
    uint32_t k = 0;
    while (k < g->n && g->row[k] != ri) k++;
    if (k == g->n && g->n < GMAX) g->row[g->n++] = ri;
    return 0;
  }
  if (kind == NCS_KIND_COMM) return 0;
  if (!f->pend && !(f->pend = calloc(PEND, sizeof *f->pend))) return 0;
  f->pend[slot(c->tcall, c->thread, PEND)] =
    (struct pend){.tcall = c->tcall, .seq = c->seq, .S = ncs_rule_bytes(c->count, c->datatype), .thread = c->thread, .row = ri, .op = c->op, .comm = c->comm, .used = 1};
  return 0;
}

static int c_gpu(void *ctx, const struct ncs_gpu_time *g) {
  struct cfile *f = ctx;
  if ((g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) || g->gpu_end < g->gpu_start) return 0;
  uint64_t ns = g->gpu_end - g->gpu_start;
  if (g->kind == NCS_GPU_KIND_GROUP) {
    struct gpend *p = f->gpend ? &f->gpend[slot(g->ref, g->thread, GPEND)] : NULL;
    if (!p || !p->used || p->group != g->ref || p->thread != g->thread) return 0;
    /* one GPU_TIME per stream of the group: each goes once to each site of the group */
    for (uint32_t k = 0; k < p->n; k++) {
      struct srow *r = &f->row[p->row[k]];
      r->gpu_ns += ns;
      r->gpu_calls++;
      add_gpu(r, 0, ns); /* a group's kernels pair with no one call: the op's whole share */
      keep_slow(&r->gpu_slow, ns, r->op, 0, 0, 1);
    }
    return 0;
  }
  struct pend *p = f->pend ? &f->pend[slot(g->ref, g->thread, PEND)] : NULL;
  if (!p || !p->used || p->tcall != g->ref || p->thread != g->thread) return 0;
  p->used = 0;
  struct srow *r = &f->row[p->row];
  r->gpu_ns += ns;
  r->gpu_calls++;
  add_gpu(r, p->S, ns);
  keep_slow(&r->gpu_slow, ns, p->op, p->comm, p->seq, 1);
  return 0;
}

static int c_calls(void *ctx, const struct ncs_call *c, size_t n) {
  for (size_t i = 0; i < n; i++) c_call(ctx, &c[i]);
  return 0;
}
static int c_gpus(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  for (size_t i = 0; i < n; i++) c_gpu(ctx, &g[i]);
  return 0;
}
/* A stretch (io/trace.h) in file order: a later call may take a call's pending slot before its
 * GPU time comes. */
static int c_stretch(void *ctx, const struct ncs_stretch *s) { return ncs_stretch_in_order(s, ctx, c_calls, c_gpus); }

static int c_callsite(void *ctx, const struct ncs_callsite *s) { ncs_sites_callsite(((struct cfile *)ctx)->sites, s); return 0; }
static int c_module(void *ctx, const struct ncs_module *m) { ncs_sites_module(((struct cfile *)ctx)->sites, m); return 0; }

static int c_comm(void *ctx, const struct ncs_comm *c) {
  struct cfile *f = ctx;
  ncs_commnames_comm(f->cn, f->file, c);
  return 0;
}

static int c_process(void *ctx, const struct ncs_process *p) {
  const char *d = ncs_process_get(p, "callsite_depth");
  ((struct cfile *)ctx)->depth = d ? atoi(d) : -1;
  return 0;
}

struct ncs_callsites *ncs_callsites_new(int nfiles) {
  struct ncs_callsites *cs = calloc(1, sizeof *cs);
  if (!cs) return NULL;
  cs->n = nfiles;
  cs->f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *cs->f);
  cs->cn = ncs_commnames_new(nfiles);
  if (!cs->f || !cs->cn) { free(cs->f); ncs_commnames_free(cs->cn); free(cs); return NULL; }
  for (int i = 0; i < nfiles; i++) { cs->f[i].last = -1; cs->f[i].depth = -1; cs->f[i].cn = cs->cn; cs->f[i].file = i; }
  return cs;
}

void ncs_callsites_visitor(struct ncs_callsites *cs, int file, struct ncs_visitor *v) {
  if (!cs || file < 0 || file >= cs->n) return;
  struct cfile *f = &cs->f[file];
  if (!f->sites && !(f->sites = ncs_sites_new())) return;
  v->ctx = f;
  v->process = c_process;
  v->call = c_call;
  v->gpu_time = c_gpu;
  v->stretch = c_stretch;
  v->callsite = c_callsite;
  v->module = c_module;
  v->comm = c_comm;
}

/* The exposed share model (top of file): the row's GPU time per size bucket times its rank's
 * exposed share of its operation at that size, else of the operation as a whole. */
static void exposed_of(const struct ncs_kact_fig *g, struct srow *r) {
  const char *kop = r->ops > 1 ? NULL : ncs_kernel_op_of_call(r->op);
  const struct ncs_kact_op *o = NULL;
  for (int k = 0; kop && k < g->nops && k < NCS_KACT_MAX_OPS; k++)
    if (!strcmp(g->op[k].name, kop)) o = &g->op[k];
  if (!o || !o->time_ns) return; /* no kernel of its operation: unknown */
  for (int b = 0; b < NCS_KACT_BUCKETS; b++) {
    if (!r->gpu_b[b]) continue;
    double share = o->sized && b && o->size_time_ns[b] ? (double)o->size_exposed_ns[b] / (double)o->size_time_ns[b]
                                                        : (double)o->exposed_ns / (double)o->time_ns;
    if (share > 1) share = 1;
    r->exp_ns += (uint64_t)(share * (double)r->gpu_b[b] + 0.5);
    r->exp_gpu_ns += r->gpu_b[b];
  }
}

void ncs_callsites_file_done(struct ncs_callsites *cs, int file, const struct ncs_kact_fig *g) {
  if (!cs || file < 0 || file >= cs->n) return;
  struct cfile *f = &cs->f[file];
  free(f->pend); f->pend = NULL;
  free(f->gpend); f->gpend = NULL;
  for (size_t i = 0; i < f->nrow; i++) {
    struct srow *r = &f->row[i];
    if (g && g->have && r->gpu_b) exposed_of(g, r);
    free(r->gpu_b);
    r->gpu_b = NULL;
  }
}

static int cmp_row(const void *a, const void *b) {
  const struct ncs_csrow *x = a, *y = b;
  if (x->exp_ns != y->exp_ns) return x->exp_ns > y->exp_ns ? -1 : 1;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns > y->gpu_ns ? -1 : 1;
  if (x->host_ns != y->host_ns) return x->host_ns > y->host_ns ? -1 : 1;
  return strcmp(x->key, y->key);
}

/* Row r's stack, innermost frame first, each frame named (a frame that cannot be kept for want
 * of memory ends it). */
static void name_stack(const struct ncs_callsites *s, struct ncs_csrow *r) {
  char fr[520];
  int n = 0;
  while (ncs_sites_frame(s->f[r->fidx].sites, r->id, n, s->sym, fr, sizeof fr) == 0) n++;
  if (!n || !(r->stack = calloc((size_t)n, sizeof *r->stack))) return;
  for (int k = 0; k < n && ncs_sites_frame(s->f[r->fidx].sites, r->id, k, s->sym, fr, sizeof fr) == 0; k++) {
    if (!(r->stack[k] = strdup(fr))) break;
    r->nstack = k + 1;
  }
}

void ncs_callsites_finish(struct ncs_callsites *s) {
  if (!s || s->sym) return;
  s->sym = ncs_symbolizer_new();
  ncs_commnames_finish(s->cn); /* communicators: every file's, each with its rank in its parent */
  for (int i = 0; i < s->n; i++) {
    struct cfile *f = &s->f[i];
    s->depth_said += f->depth >= 0;
    s->depth_off += f->depth == 0;
    s->without += f->calls_without_site;
    for (size_t k = 0; k < f->nrow; k++) {
      const struct srow *r = &f->row[k];
      struct ncs_site_name nm;
      ncs_sites_name(f->sites, r->id, s->sym, &nm);
      struct ncs_csrow *j = NULL;
      for (size_t q = 0; q < s->nrow && !j; q++)
        if (!strcmp(s->row[q].key, nm.key) && s->row[q].op == r->op) j = &s->row[q];
      if (!j) {
        if (ncs_grow((void **)&s->row, &s->caprow, s->nrow + 1, sizeof *s->row)) continue;
        j = &s->row[s->nrow++];
        memset(j, 0, sizeof *j);
        snprintf(j->key, sizeof j->key, "%s", nm.key);
        snprintf(j->where, sizeof j->where, "%s", nm.where);
        snprintf(j->func, sizeof j->func, "%s", nm.func);
        snprintf(j->file, sizeof j->file, "%s", nm.file);
        j->line = nm.line;
        j->state = nm.state;
        j->fidx = i;
        j->id = r->id;
        j->op = r->op;
        j->slow_file = -1;
      }
      j->mixed |= r->ops > 1;
      j->calls += r->calls;
      j->bytes += r->bytes;
      j->host_ns += r->host_ns;
      j->gpu_ns += r->gpu_ns;
      j->gpu_calls += r->gpu_calls;
      j->exp_ns += r->exp_ns;
      j->exp_gpu_ns += r->exp_gpu_ns;
      j->ranks++;
      const struct ncs_cs_slow *sl = r->gpu_calls ? &r->gpu_slow : &r->host_slow;
      if (j->slow_file < 0 || (sl->gpu > j->slow.gpu) || (sl->gpu == j->slow.gpu && sl->ns > j->slow.ns)) {
        j->slow = *sl;
        j->slow_file = i;
        const struct ncs_comm *c = sl->comm ? ncs_commnames_of(s->cn, i, sl->comm) : NULL;
        if (c) ncs_commnames_label(s->cn, c->comm_id, j->slow_comm, sizeof j->slow_comm);
        else j->slow_comm[0] = 0;
        j->slow_comm_id = c ? c->comm_id : 0;
      }
    }
  }
  if (s->nrow > 1) qsort(s->row, s->nrow, sizeof *s->row, cmp_row); /* no rows: s->row may be NULL */
  for (size_t q = 0; q < s->nrow; q++) name_stack(s, &s->row[q]);
}

size_t ncs_callsites_rows(const struct ncs_callsites *cs, const struct ncs_csrow **rows) {
  *rows = cs ? cs->row : NULL;
  return cs ? cs->nrow : 0;
}

const char *ncs_callsites_missing(const struct ncs_callsites *cs) {
  return cs && cs->depth_said && cs->depth_off == cs->depth_said ? "NCCLSCOPE_CALLSITE_DEPTH=0" : "not recorded";
}

int ncs_callsites_have_lines(const struct ncs_callsites *cs) { return cs && cs->sym && ncs_symbolizer_has_lines(cs->sym); }

uint64_t ncs_callsites_without(const struct ncs_callsites *cs) { return cs ? cs->without : 0; }

const struct ncs_csrow *ncs_callsites_most_exposed(const struct ncs_callsites *cs) {
  return cs && cs->nrow && cs->row[0].exp_ns ? &cs->row[0] : NULL;
}

void ncs_callsites_to_doctor(const struct ncs_callsites *cs, struct ncs_doctor *d) {
  const struct ncs_csrow *top = ncs_callsites_most_exposed(cs);
  if (!top || !d) return;
  for (int i = 0; i < d->nv; i++) {
    struct ncs_verdict *v = &d->v[i];
    if (strcmp(v->id, "comm-bound") || v->nevidence < 1) continue;
    /* the figures and the hint first; the call site's name (at most 160 bytes) gets the room
     * that is left, so a long name is what is cut, never the figures or the hint */
    static const char head[] = "most exposed call site: ";
    char line[sizeof v->evidence[0]], tail[sizeof line];
    int nt = snprintf(tail, sizeof tail, ", %s on %d rank%s: %.3f ms of its %.3f ms on the GPU not hidden "
                      "under compute (every site: ncclscope report --callsites)",
                      top->mixed ? "several operations" : ncs_op_name(top->op) ? ncs_op_name(top->op) : "?",
                      top->ranks, top->ranks == 1 ? "" : "s", top->exp_ns / 1e6, top->exp_gpu_ns / 1e6);
    size_t hl = sizeof head - 1, tl = nt < 0 ? 0 : strlen(tail); /* tail: at most sizeof line - 1 */
    size_t room = sizeof line - 1 - hl > tl ? sizeof line - 1 - hl - tl : 0;
    size_t wl = strnlen(top->where, room < 160 ? room : 160);
    if (tl > sizeof line - 1 - hl - wl) tl = sizeof line - 1 - hl - wl; /* absurd figures: the hint is cut */
    memcpy(line, head, hl);
    memcpy(line + hl, top->where, wl);
    memcpy(line + hl + wl, tail, tl);
    line[hl + wl + tl] = 0;
    if (v->nevidence == NCS_VERDICT_EVIDENCE) { v->nevidence--; v->more++; }
    memmove(v->evidence[2], v->evidence[1], (size_t)(v->nevidence - 1) * sizeof v->evidence[0]);
    snprintf(v->evidence[1], sizeof v->evidence[1], "%s", line);
    v->nevidence++;
  }
}

void ncs_callsites_free(struct ncs_callsites *s) {
  if (!s) return;
  for (int i = 0; s->f && i < s->n; i++) {
    ncs_sites_free(s->f[i].sites);
    for (size_t k = 0; k < s->f[i].nrow; k++) free(s->f[i].row[k].gpu_b);
    free(s->f[i].row);
    free(s->f[i].pend);
    free(s->f[i].gpend);
  }
  free(s->f);
  for (size_t k = 0; k < s->nrow; k++) {
    for (int q = 0; q < s->row[k].nstack; q++) free(s->row[k].stack[q]);
    free(s->row[k].stack);
  }
  free(s->row);
  ncs_symbolizer_free(s->sym);
  ncs_commnames_free(s->cn);
  free(s);
}

/* report's analysis (analysis/analysis.h): the engine, fed the run's kernel-activity figures */
static void *c_create(const struct ncs_job *job) {
  struct cstate *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->want = ncs_job_option(job, "callsites") != NULL;
  if (!s->want) return s; /* reads nothing */
  s->stages = job->stages && job->stages->n == job->n && job->stages->fig_on ? job->stages : NULL;
  if (!(s->cs = ncs_callsites_new(job->n))) { free(s); return NULL; }
  return s;
}

static void c_visitor(void *state, int file, struct ncs_visitor *v) {
  struct cstate *s = state;
  if (s && s->want) ncs_callsites_visitor(s->cs, file, v);
}

static void c_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct cstate *s = state;
  (void)st;
  /* gputime's file_done, before this one (registry order), put the file's figures */
  if (s && s->want) ncs_callsites_file_done(s->cs, file, s->stages ? &s->stages->fig[file] : NULL);
}

static void c_finish(void *state, const struct ncs_job *job) {
  struct cstate *s = state;
  if (!s || !s->want) return;
  ncs_callsites_finish(s->cs);
  s->res = (struct ncs_callsites_result){.nrow = s->cs->nrow, .row = s->cs->row, .missing = ncs_callsites_missing(s->cs),
                                         .have_lines = ncs_callsites_have_lines(s->cs)};
  if (job->headline && job->headline->built) ncs_headline_add_callsite(job->headline, s->cs); /* built by `verdicts` */
}

static const void *c_result(void *state) {
  const struct cstate *s = state;
  return s && s->want ? &s->res : NULL;
}

static void c_destroy(void *state) {
  struct cstate *s = state;
  if (!s) return;
  ncs_callsites_free(s->cs);
  free(s);
}

static const struct ncs_analysis_option c_options[] = {
  {"callsites", NULL, "the call sites table: which line of the job issued its calls, and their cost"},
  {NULL, NULL, NULL}};

const struct ncs_analysis ncs_analysis_callsites = {
  .name = "callsites",
  .options = c_options,
  .create = c_create,
  .visitor = c_visitor,
  .file_done = c_file_done,
  .finish = c_finish,
  .result = c_result,
  .destroy = c_destroy,
};
