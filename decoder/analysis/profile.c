/* profile.c — the "NCCL profiler" section of `ncclscope report`, plugged in through
 * decoder/analysis/analysis.h: per collective function, the algorithms, protocols and channel counts
 * NCCL chose, from PROFILE and PROFILE_ID records (ncclscope/records.h, docs/PROFILER.md).
 * Text: one line per function over all ranks. JSON: top-level "profile": [...] and per rank
 * "profile": {...} (docs/JSON.md). Memory: per file at most PF_FUNCS functions with
 * PF_COMBOS algorithm/protocol pairs each (more are counted as "other"); no growth with
 * trace length. A PROFILE body that does not decode is counted, not fatal. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "ncclscope/encode.h"

#define PF_FUNCS 16
#define PF_COMBOS 12

struct pf_combo { char algo[NCS_PROF_STR], proto[NCS_PROF_STR]; uint64_t events; };
/* The ranks a file's events came from, per communicator (NCCL's commHash): a process holding
 * several ranks (a rank per thread) counts each of them. PF_COMMS communicators, ranks below
 * PF_RANK_BITS (a rank past it counts as rank % PF_RANK_BITS). */
#define PF_COMMS 8
#define PF_RANK_BITS 256
struct pf_ranks { uint64_t hash; uint64_t bits[PF_RANK_BITS / 64]; };
struct pf_func {
  char name[NCS_PROF_STR];
  uint64_t events, other; /* other: events whose algo/proto pair did not fit */
  uint64_t count;         /* sum of the events' element counts */
  uint32_t ch_min, ch_max;
  int ncombos;
  struct pf_combo combo[PF_COMBOS];
  int ranks; /* in the job-wide merge: the ranks that had this function, summed over files */
  int ncomms;
  struct pf_ranks rk[PF_COMMS]; /* per file: which ranks of which communicator */
};
struct pf_file { uint64_t events, dropped, bad, other_funcs; int nfuncs; struct pf_func f[PF_FUNCS]; };
struct pf_state { int n; struct pf_file *file; };

static void *pf_create(const struct ncs_job *job) {
  struct pf_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->file = calloc((size_t)(job->n ? job->n : 1), sizeof *s->file);
  if (!s->file) { free(s); return NULL; }
  return s;
}

static struct pf_func *func_slot(struct pf_func *f, int *nf, const char *name) {
  for (int i = 0; i < *nf; i++)
    if (!strcmp(f[i].name, name)) return &f[i];
  if (*nf >= PF_FUNCS) return NULL;
  struct pf_func *x = &f[(*nf)++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  x->ch_min = UINT32_MAX;
  return x;
}
static void add_combo(struct pf_func *x, const char *algo, const char *proto, uint64_t events) {
  for (int i = 0; i < x->ncombos; i++)
    if (!strcmp(x->combo[i].algo, algo) && !strcmp(x->combo[i].proto, proto)) { x->combo[i].events += events; return; }
  if (x->ncombos >= PF_COMBOS) { x->other += events; return; }
  struct pf_combo *c = &x->combo[x->ncombos++];
  snprintf(c->algo, sizeof c->algo, "%s", algo);
  snprintf(c->proto, sizeof c->proto, "%s", proto);
  c->events = events;
}

static int pf_raw(void *ctx, const struct ncs_raw *r) {
  struct pf_file *pf = ctx;
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
  struct pf_func *x = func_slot(pf->f, &pf->nfuncs, p.func);
  if (!x) { pf->other_funcs++; return 0; }
  x->events++;
  x->count += p.count;
  if (p.nchannels < x->ch_min) x->ch_min = p.nchannels;
  if (p.nchannels > x->ch_max) x->ch_max = p.nchannels;
  add_combo(x, p.algo[0] ? p.algo : "?", p.proto[0] ? p.proto : "?", 1);
  int c = 0;
  while (c < x->ncomms && x->rk[c].hash != p.comm_hash) c++;
  if (c == x->ncomms && c < PF_COMMS) { x->rk[c].hash = p.comm_hash; x->ncomms++; }
  if (c < x->ncomms && p.rank >= 0) x->rk[c].bits[(p.rank % PF_RANK_BITS) / 64] |= 1ull << (p.rank % 64);
  return 0;
}

/* The ranks of one file that ran function x: the most of any one communicator (a rank in a
 * child communicator too is the same rank); at least 1. */
static int file_ranks(const struct pf_func *x) {
  int best = 1;
  for (int c = 0; c < x->ncomms; c++) {
    int n = 0;
    for (int w = 0; w < PF_RANK_BITS / 64; w++) n += __builtin_popcountll(x->rk[c].bits[w]);
    if (n > best) best = n;
  }
  return best;
}

static void pf_visitor(void *state, int file, struct ncs_visitor *v) {
  struct pf_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->file[file];
  v->raw = pf_raw;
}

/* All files merged into one list of functions (ranks: each file's ranks that had the function). */
static int merged(const struct pf_state *s, struct pf_func *out, uint64_t *events, uint64_t *dropped) {
  int n = 0;
  *events = *dropped = 0;
  for (int i = 0; i < s->n; i++) {
    const struct pf_file *pf = &s->file[i];
    *events += pf->events;
    *dropped += pf->dropped;
    for (int k = 0; k < pf->nfuncs; k++) {
      const struct pf_func *x = &pf->f[k];
      struct pf_func *m = func_slot(out, &n, x->name);
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

static void pf_text(void *state, FILE *out, const struct ncs_job *job) {
  struct pf_state *s = state;
  if (!s) return;
  struct pf_func m[PF_FUNCS];
  uint64_t events, dropped;
  int n = merged(s, m, &events, &dropped);
  if (!events) return;
  fprintf(out, "\nNCCL profiler plugin: algorithm/protocol and channels per collective (%llu events)\n",
          (unsigned long long)events);
  for (int i = 0; i < n; i++) {
    fprintf(out, "  ");
    ncs_text_escape(out, m[i].name, strlen(m[i].name));
    fprintf(out, ": %llu on %d rank%s;", (unsigned long long)m[i].events, m[i].ranks, m[i].ranks == 1 ? "" : "s");
    for (int c = 0; c < m[i].ncombos; c++) {
      fprintf(out, "%s", c ? ", " : " ");
      ncs_text_escape(out, m[i].combo[c].algo, strlen(m[i].combo[c].algo));
      fputc('/', out);
      ncs_text_escape(out, m[i].combo[c].proto, strlen(m[i].combo[c].proto));
      fprintf(out, " %llu", (unsigned long long)m[i].combo[c].events);
    }
    if (m[i].other) fprintf(out, ", other %llu", (unsigned long long)m[i].other);
    if (m[i].ch_min == m[i].ch_max) fprintf(out, "; channels %u\n", m[i].ch_min);
    else fprintf(out, "; channels %u-%u\n", m[i].ch_min, m[i].ch_max);
  }
  if (dropped) fprintf(out, "  events lost in the shim (ring full): %llu\n", (unsigned long long)dropped);
  (void)job;
}

static void funcs_json(struct ncs_json *j, const struct pf_func *f, int n, int with_ranks) {
  ncs_json_arr_begin(j, "ops");
  for (int i = 0; i < n; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "func", f[i].name);
    ncs_json_uint(j, "events", f[i].events);
    ncs_json_uint(j, "count", f[i].count);
    if (with_ranks) ncs_json_int(j, "ranks", f[i].ranks);
    ncs_json_uint(j, "channels_min", f[i].ch_min);
    ncs_json_uint(j, "channels_max", f[i].ch_max);
    ncs_json_arr_begin(j, "algorithms");
    for (int c = 0; c < f[i].ncombos; c++) {
      ncs_json_obj_begin(j, NULL);
      ncs_json_str(j, "algo", f[i].combo[c].algo);
      ncs_json_str(j, "proto", f[i].combo[c].proto);
      ncs_json_uint(j, "events", f[i].combo[c].events);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_uint(j, "other", f[i].other);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

static void pf_json(void *state, struct ncs_json *j, const struct ncs_job *job) {
  struct pf_state *s = state;
  if (!s) return;
  struct pf_func m[PF_FUNCS];
  uint64_t events, dropped;
  int n = merged(s, m, &events, &dropped);
  ncs_json_obj_begin(j, "profile");
  ncs_json_uint(j, "events", events);
  ncs_json_uint(j, "dropped", dropped);
  funcs_json(j, m, n, 1);
  ncs_json_obj_end(j);
  (void)job;
}

static void pf_rank_json(void *state, struct ncs_json *j, int file) {
  struct pf_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  const struct pf_file *pf = &s->file[file];
  ncs_json_obj_begin(j, "profile");
  ncs_json_uint(j, "events", pf->events);
  ncs_json_uint(j, "dropped", pf->dropped);
  ncs_json_uint(j, "undecodable", pf->bad);
  funcs_json(j, pf->f, pf->nfuncs, 0);
  ncs_json_obj_end(j);
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
  .print_text = pf_text,
  .print_json = pf_json,
  .print_rank_json = pf_rank_json,
  .destroy = pf_destroy,
};
