/* profile.c — the "NCCL profiler" section of `ncclscope report`, plugged in through
 * decoder/analysis/analysis.h: per collective function, the algorithms, protocols and channel counts
 * NCCL chose, from PROFILE and PROFILE_ID records (ncclscope/records.h, docs/PROFILER.md).
 * Its result is data (analysis/profile.h), printed by render/profile_render.c. Memory: per
 * file at most NCS_PF_FUNCS functions with NCS_PF_COMBOS algorithm/protocol pairs each (more are counted as "other"); no growth with
 * trace length. A PROFILE body that does not decode is counted, not fatal. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/profile.h"
#include "ncclscope/encode.h"

struct pf_state { int n; struct ncs_profile_file *file; struct ncs_profile_result res; };

static void *pf_create(const struct ncs_job *job) {
  struct pf_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->file = calloc((size_t)(job->n ? job->n : 1), sizeof *s->file);
  if (!s->file) { free(s); return NULL; }
  return s;
}

static struct ncs_profile_func *func_slot(struct ncs_profile_func *f, int *nf, const char *name) {
  for (int i = 0; i < *nf; i++)
    if (!strcmp(f[i].name, name)) return &f[i];
  if (*nf >= NCS_PF_FUNCS) return NULL;
  struct ncs_profile_func *x = &f[(*nf)++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  x->ch_min = UINT32_MAX;
  return x;
}
static void add_combo(struct ncs_profile_func *x, const char *algo, const char *proto, uint64_t events) {
  for (int i = 0; i < x->ncombos; i++)
    if (!strcmp(x->combo[i].algo, algo) && !strcmp(x->combo[i].proto, proto)) { x->combo[i].events += events; return; }
  if (x->ncombos >= NCS_PF_COMBOS) { x->other += events; return; }
  struct ncs_profile_combo *c = &x->combo[x->ncombos++];
  snprintf(c->algo, sizeof c->algo, "%s", algo);
  snprintf(c->proto, sizeof c->proto, "%s", proto);
  c->events = events;
}

static int pf_raw(void *ctx, const struct ncs_raw *r) {
  struct ncs_profile_file *pf = ctx;
  if (r->type != NCS_REC_PROFILE && r->type != NCS_REC_PROFILE_ID) return 0;
  struct ncs_profile p;
  struct ncs_profile_id pid;
  struct ncs_rbuf rb;
  if (r->type == NCS_REC_PROFILE ? ncs_dec_profile(ncs_rbuf_on(&rb, r->body, r->len), &p) != 0
                                 : ncs_dec_profile_id(ncs_rbuf_on(&rb, r->body, r->len), &pid) != 0 ||
                                       ncs_profile_from_id(&pid, &p) != 0) {
    pf->bad++;
    return 0;
  }
  if (p.dropped > pf->dropped) pf->dropped = p.dropped;
  if (!p.func[0]) return 0; /* only tells events lost at the end (docs/FORMAT-TOPO.md) */
  pf->events++;
  struct ncs_profile_func *x = func_slot(pf->f, &pf->nfuncs, p.func);
  if (!x) { pf->other_funcs++; return 0; }
  x->events++;
  x->count += p.count;
  if (p.nchannels < x->ch_min) x->ch_min = p.nchannels;
  if (p.nchannels > x->ch_max) x->ch_max = p.nchannels;
  add_combo(x, p.algo[0] ? p.algo : "?", p.proto[0] ? p.proto : "?", 1);
  int c = 0;
  while (c < x->ncomms && x->rk[c].hash != p.comm_hash) c++;
  if (c == x->ncomms && c < NCS_PF_COMMS) { x->rk[c].hash = p.comm_hash; x->ncomms++; }
  if (c < x->ncomms && p.rank >= 0) x->rk[c].bits[(p.rank % NCS_PF_RANK_BITS) / 64] |= 1ull << (p.rank % 64);
  return 0;
}

/* The ranks of one file that ran function x: the most of any one communicator (a rank in a
 * child communicator too is the same rank); at least 1. */
static int file_ranks(const struct ncs_profile_func *x) {
  int best = 1;
  for (int c = 0; c < x->ncomms; c++) {
    int n = 0;
    for (int w = 0; w < NCS_PF_RANK_BITS / 64; w++) n += __builtin_popcountll(x->rk[c].bits[w]);
    if (n > best) best = n;
  }
  return best;
}

static int pf_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  (void)ctx, (void)k, (void)raw, (void)n; /* KERNEL records are none of its business: taken as runs, not one by one through pf_raw */
  return 0;
}
static void pf_visitor(void *state, int file, struct ncs_visitor *v) {
  struct pf_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->file[file];
  v->raw = pf_raw;
  v->kernels = pf_kernels;
}

/* All files merged into one list of functions (ranks: each file's ranks that had the function). */
static int merged(const struct pf_state *s, struct ncs_profile_func *out, uint64_t *events, uint64_t *dropped) {
  int n = 0;
  *events = *dropped = 0;
  for (int i = 0; i < s->n; i++) {
    const struct ncs_profile_file *pf = &s->file[i];
    *events += pf->events;
    *dropped += pf->dropped;
    for (int k = 0; k < pf->nfuncs; k++) {
      const struct ncs_profile_func *x = &pf->f[k];
      struct ncs_profile_func *m = func_slot(out, &n, x->name);
      if (!m) continue;
      m->events += x->events;
      m->count += x->count;
      m->other += x->other;
      m->ranks += file_ranks(x);
      if (x->ch_min < m->ch_min) m->ch_min = x->ch_min;
      if (x->ch_max > m->ch_max) m->ch_max = x->ch_max;
      for (int c = 0; c < x->ncombos; c++) add_combo(m, x->combo[c].algo, x->combo[c].proto, x->combo[c].events);
    }
  }
  return n;
}

static void pf_finish(void *state, const struct ncs_job *job) {
  struct pf_state *s = state;
  if (!s) return;
  s->res.nfuncs = merged(s, s->res.funcs, &s->res.events, &s->res.dropped);
  s->res.nfiles = s->n;
  s->res.file = s->file;
  (void)job;
}

static const void *pf_result(void *state) {
  struct pf_state *s = state;
  return s ? &s->res : NULL;
}

static void pf_destroy(void *state) {
  struct pf_state *s = state;
  if (!s) return;
  free(s->file);
  free(s);
}

const struct ncs_analysis ncs_analysis_profile = {
  .name = "profile",
  .create = pf_create,
  .visitor = pf_visitor,
  .finish = pf_finish,
  .result = pf_result,
  .destroy = pf_destroy,
};
