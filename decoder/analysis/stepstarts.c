/* stepstarts.c — where each file's steps start, without the metrics analysis (stepstarts.h).
 * It follows metrics' one read (analysis/metrics.c "One read") record for record where that
 * decides the boundary: the file's CALL, GPU_TIME and COMM records are counted, its timed calls
 * counted per signature, until NCS_STEPMARK_HOLD are held (then the one that finds no room: a
 * call is counted first) or the file ends; the held calls then give their starts and the rest
 * stream. Every boundary call counts, as in metrics without --skip-warmup (also one entering
 * before the file's first call record). */
#include "analysis/stepstarts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kwatch.h"
#include "model/stepmark.h"

struct held { uint64_t key, t; uint32_t op; };
struct ss_file {
  struct ncs_stepstarts *owner;
  int file;
  struct ncs_stepsig *sig;    /* [NCS_STEPMARK_SIGS] while deciding */
  uint32_t nsig;
  uint64_t ncalls1;           /* timed calls counted */
  uint32_t nrec;              /* CALL, GPU_TIME and COMM records counted while deciding */
  struct held *held;          /* the timed calls counted, in file order */
  size_t nheld, caph;
  int deciding, have_steps, dropped, lost;
  uint64_t key;
  uint32_t op;
  char mark[64];
  struct ncs_kwatch kw;
  struct ncs_step_starts starts;
};
struct ncs_stepstarts { int n; struct ncs_stages *stages; struct ss_file *f; };

struct ncs_stepstarts *ncs_stepstarts_new(int nfiles, struct ncs_stages *stages) {
  struct ncs_stepstarts *s = calloc(1, sizeof *s);
  if (!s || !(s->f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *s->f))) { free(s); return NULL; }
  s->n = nfiles;
  s->stages = stages;
  for (int i = 0; i < nfiles; i++) s->f[i] = (struct ss_file){.owner = s, .file = i, .deciding = 1};
  return s;
}

/* A counted boundary at t (model/kwatch.h: dropped for a file without kernel activity). */
static void add_start(struct ss_file *f, uint64_t t) {
  if (f->dropped) return;
  if (!ncs_kwatch_keep(&f->kw, f->starts.n)) { ncs_starts_free(&f->starts); f->dropped = 1; return; }
  if (ncs_starts_add(&f->starts, t) != 0) f->lost = 1;
}
/* A timed call once the boundary is chosen. */
static void stream(struct ss_file *f, uint64_t key, uint32_t op, uint64_t t) {
  if (f->have_steps && op == f->op && key == f->key) add_start(f, t);
}
static void decide(struct ss_file *f, int cut) {
  const char *how;
  uint32_t named = ncs_stepmark_named(0, f->mark, &how);
  f->have_steps = f->sig && ncs_stepmark_choose(f->sig, named, cut, &f->key, &f->op);
  f->deciding = 0;
  for (size_t i = 0; i < f->nheld; i++) stream(f, f->held[i].key, f->held[i].op, f->held[i].t);
  free(f->held);
  free(f->sig);
  f->held = NULL;
  f->sig = NULL;
  f->nheld = f->caph = 0;
}
/* Counts one record while deciding; 0 when it had no room (the boundary is chosen then). */
static int room(struct ss_file *f) {
  if (f->nrec < NCS_STEPMARK_HOLD) { f->nrec++; return 1; }
  return 0;
}
static void count_call(struct ss_file *f, const struct ncs_call *c, int hold) {
  if (!ncs_stepmark_timed(c->op)) return;
  f->ncalls1++;
  uint64_t key = ncs_stepmark_key(c);
  if (!f->sig && !(f->sig = calloc(NCS_STEPMARK_SIGS, sizeof *f->sig))) return;
  struct ncs_stepsig *g = ncs_stepmark_slot(f->sig, &f->nsig, key);
  if (g) {
    if (!g->count) { g->first = f->ncalls1; g->op = c->op; }
    g->count++;
  }
  if (!hold) return;
  if (f->nheld == f->caph) {
    size_t nc = f->caph ? f->caph * 2 : 1024;
    struct held *p = realloc(f->held, nc * sizeof *p);
    if (!p) { f->lost = 1; return; }
    f->held = p;
    f->caph = nc;
  }
  f->held[f->nheld++] = (struct held){key, c->t_enter, c->op};
}

static int s_process(void *ctx, const struct ncs_process *p) {
  struct ss_file *f = ctx;
  const char *v = f->deciding ? ncs_process_get(p, "env.NCCLSCOPE_STEP_MARK") : NULL;
  if (v) snprintf(f->mark, sizeof f->mark, "%s", v);
  ncs_kwatch_process(&f->kw, p);
  if (ncs_kwatch_off(&f->kw)) f->dropped = 1; /* no kernel activity: no start is wanted, no call counted */
  return 0;
}
static int s_comm(void *ctx, const struct ncs_comm *c) {
  (void)c;
  struct ss_file *f = ctx;
  if (f->deciding && !f->dropped && !room(f)) decide(f, 1);
  return 0;
}
static int s_gpu_times(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  (void)g;
  struct ss_file *f = ctx;
  for (size_t i = 0; i < n && f->deciding && !f->dropped; i++)
    if (!room(f)) decide(f, 1);
  return 0;
}
static int s_calls(void *ctx, const struct ncs_call *c, size_t n) {
  struct ss_file *f = ctx;
  if (f->dropped) return 0; /* no kernel activity (add_start): no start is wanted any more */
  size_t i = 0;
  for (; i < n && f->deciding; i++) {
    int held = room(f);
    count_call(f, &c[i], held);
    if (held) continue;
    decide(f, 1);
    if (ncs_stepmark_timed(c[i].op)) stream(f, ncs_stepmark_key(&c[i]), c[i].op, c[i].t_enter);
  }
  if (!f->have_steps) return 0; /* decided: no boundary, no start */
  /* once decided, a start is a call of the boundary's op and signature: the op compared before
   * the signature is made (stream's test, cheapest part first); the boundary's op is a timed one
   * (its signature was counted: count_call), so a call of it is timed */
  for (; i < n && !f->dropped; i++)
    if (c[i].op == f->op && ncs_stepmark_key(&c[i]) == f->key) add_start(f, c[i].t_enter);
  return 0;
}
/* A stretch (io/trace.h) in file order while deciding: the record that finds no room, and so the
 * boundary's moment, follows the file's interleaving. Once decided, GPU_TIME records count for
 * nothing and the starts depend on the calls alone: the stretch's calls go as one run. */
static int s_stretch(void *ctx, const struct ncs_stretch *s) {
  if (((struct ss_file *)ctx)->dropped) return 0;
  if (((struct ss_file *)ctx)->deciding) return ncs_stretch_in_order(s, ctx, s_calls, s_gpu_times);
  return s->nc ? s_calls(ctx, s->c, s->nc) : 0;
}
static int s_raw(void *ctx, const struct ncs_raw *r) {
  struct ss_file *f = ctx;
  ncs_kwatch_raw(&f->kw, r);
  if (ncs_kwatch_off(&f->kw) && !f->dropped) { ncs_starts_free(&f->starts); f->dropped = 1; }
  return 0;
}

void ncs_stepstarts_visitor(struct ncs_stepstarts *s, int file, struct ncs_visitor *v) {
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  v->process = s_process;
  v->comm = s_comm;
  v->calls = s_calls;
  v->gpu_times = s_gpu_times;
  v->stretch = s_stretch;
  v->raw = s_raw;
}

void ncs_stepstarts_file_done(struct ncs_stepstarts *s, int file) {
  if (!s || file < 0 || file >= s->n) return;
  struct ss_file *f = &s->f[file];
  if (f->deciding) decide(f, 0);
  if (f->lost) ncs_starts_free(&f->starts); /* a start could not be kept: none rather than some */
  ncs_stages_put_starts(s->stages, file, &f->starts);
  ncs_starts_free(&f->starts);
}

void ncs_stepstarts_free(struct ncs_stepstarts *s) {
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    free(s->f[i].held);
    free(s->f[i].sig);
    ncs_starts_free(&s->f[i].starts);
  }
  free(s->f);
  free(s);
}
