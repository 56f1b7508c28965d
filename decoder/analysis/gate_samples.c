/* gate_samples.c — per-call samples and block shares for the CI gate (contract in
 * gate_samples.h). */
#include "analysis/gate_samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/rules.h"

#define FINE_MAX 4096
#define FINE_NS0 1000000 /* 1 ms blocks to start with */

struct ncs_gs_file {
  int64_t t0, t_end;        /* first call's start, latest end */
  int64_t cur_s, cur_e;     /* the union interval being grown */
  int have;
  int64_t block_ns;         /* width of a fine block */
  double comm_ns[FINE_MAX]; /* communication time in each fine block from t0 */
};

/* A collective whose ranks are still coming in: the quickest call so far (its samples). */
struct ncs_gs_open {
  uint64_t comm_id, seq;
  uint32_t op;
  int bucket, nranks, seen, used, gpu;
  double lbw, lt;
};

struct ncs_gsamples *ncs_gsamples_new(void) { return calloc(1, sizeof(struct ncs_gsamples)); }

void ncs_gsamples_free(struct ncs_gsamples *g) {
  if (!g) return;
  for (int o = 0; o < NCS_OP_LIMIT; o++)
    for (int b = 0; b < NCS_NBUCKETS; b++)
      if (g->row[o][b]) { free(g->row[o][b]->lbw); free(g->row[o][b]->lt); free(g->row[o][b]); }
  for (int i = 0; i < g->nfile; i++) free(g->file[i]);
  free(g->file);
  free(g->open);
  free(g);
}

static void row_add(struct ncs_gsamples *g, uint32_t op, int bucket, double lbw, double lt) {
  struct ncs_gs_row **pp = &g->row[op][bucket], *s = *pp;
  if (!s) {
    if (!(s = calloc(1, sizeof *s))) return;
    s->stride = 1;
    if (!(s->lbw = malloc(NCS_GS_CAP * sizeof *s->lbw)) || !(s->lt = malloc(NCS_GS_CAP * sizeof *s->lt))) {
      free(s->lbw); free(s); return;
    }
    *pp = s;
  }
  if (s->seen++ % s->stride) return;
  if (s->n == NCS_GS_CAP) {
    for (int i = 0; i < s->n / 2; i++) { s->lbw[i] = s->lbw[2 * i]; s->lt[i] = s->lt[2 * i]; }
    s->n /= 2; s->stride *= 2;
    if ((s->seen - 1) % s->stride) return;
  }
  s->lbw[s->n] = lbw; s->lt[s->n] = lt; s->n++;
}

static struct ncs_gs_file *file_get(struct ncs_gsamples *g, int file) {
  if (file < 0) return NULL;
  if (file >= g->nfile) {
    struct ncs_gs_file **p = realloc(g->file, (size_t)(file + 1) * sizeof *p);
    if (!p) return NULL;
    memset(p + g->nfile, 0, (size_t)(file + 1 - g->nfile) * sizeof *p);
    g->file = p; g->nfile = file + 1;
  }
  if (!g->file[file] && (g->file[file] = calloc(1, sizeof *g->file[file]))) g->file[file]->block_ns = FINE_NS0;
  return g->file[file];
}

/* Adds the closed union interval [s, e) to the fine blocks, coarsening them while e is past
 * the last one. */
static void file_close(struct ncs_gs_file *f, int64_t s, int64_t e) {
  while ((e - f->t0) / f->block_ns >= FINE_MAX) {
    for (int i = 0; i < FINE_MAX / 2; i++) f->comm_ns[i] = f->comm_ns[2 * i] + f->comm_ns[2 * i + 1];
    memset(f->comm_ns + FINE_MAX / 2, 0, FINE_MAX / 2 * sizeof *f->comm_ns);
    f->block_ns *= 2;
  }
  for (int64_t t = s; t < e;) {
    int64_t b = (t - f->t0) / f->block_ns, bend = f->t0 + (b + 1) * f->block_ns;
    int64_t u = e < bend ? e : bend;
    f->comm_ns[b] += (double)(u - t);
    t = u;
  }
}

static size_t open_slot(uint64_t comm_id, uint64_t seq, size_t cap) {
  /* every bit of both mixed into the low ones (a multiply alone leaves the low bits of the
   * slot to the low bits of seq: consecutive seqs then fill runs that probing walks) */
  uint64_t h = comm_id * 0x9e3779b97f4a7c15ull + seq;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

/* The open collective (comm_id, seq), a new one (seen 0) when absent; NULL when the table is
 * full (NCS_GS_OPEN) or out of memory. Linear probing, at most half full. */
static struct ncs_gs_open *open_get(struct ncs_gsamples *g, uint64_t comm_id, uint64_t seq) {
  if (2 * (g->open_n + 1) > g->open_cap) {
    size_t nc = g->open_cap ? 2 * g->open_cap : 1024;
    if (nc > 2 * (size_t)NCS_GS_OPEN) return NULL;
    struct ncs_gs_open *t = calloc(nc, sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < g->open_cap; i++) {
      if (!g->open[i].used) continue;
      size_t j = open_slot(g->open[i].comm_id, g->open[i].seq, nc);
      while (t[j].used) j = (j + 1) & (nc - 1);
      t[j] = g->open[i];
    }
    free(g->open);
    g->open = t; g->open_cap = nc;
  }
  size_t j = open_slot(comm_id, seq, g->open_cap);
  for (; g->open[j].used; j = (j + 1) & (g->open_cap - 1))
    if (g->open[j].comm_id == comm_id && g->open[j].seq == seq) return &g->open[j];
  struct ncs_gs_open *o = &g->open[j];
  memset(o, 0, sizeof *o);
  o->used = 1; o->comm_id = comm_id; o->seq = seq;
  g->open_n++;
  return o;
}

/* Removes an entry, shifting back the ones after it that probed past it. */
static void open_del(struct ncs_gsamples *g, struct ncs_gs_open *o) {
  size_t mask = g->open_cap - 1, i = (size_t)(o - g->open), j = i;
  g->open[i].used = 0;
  g->open_n--;
  for (;;) {
    j = (j + 1) & mask;
    if (!g->open[j].used) return;
    size_t k = open_slot(g->open[j].comm_id, g->open[j].seq, g->open_cap);
    /* j's entry stays when its home k lies cyclically in (i, j] */
    if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
    g->open[i] = g->open[j];
    g->open[j].used = 0;
    i = j;
  }
}

static int cmp_open(const void *a, const void *b) {
  const struct ncs_gs_open *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ncs_gsamples_finish(struct ncs_gsamples *g) {
  if (!g || !g->open) return;
  size_t n = 0;
  for (size_t i = 0; i < g->open_cap; i++) if (g->open[i].used) g->open[n++] = g->open[i];
  qsort(g->open, n, sizeof *g->open, cmp_open);
  for (size_t i = 0; i < n; i++) row_add(g, g->open[i].op, g->open[i].bucket, g->open[i].lbw, g->open[i].lt);
  free(g->open);
  g->open = NULL; g->open_cap = g->open_n = 0;
}

void ncs_gsamples_call(struct ncs_gsamples *g, int file, const struct ncs_jev *e) {
  const struct ncs_call *c = e->c;
  int kind = ncs_op_kind(c->op);
  if (kind != NCS_KIND_COLL && kind != NCS_KIND_P2P) return;
  struct ncs_gs_file *f = file_get(g, file);
  if (f && e->end > e->start) { /* the union of its intervals, as the loader's comm time */
    if (!f->have) { f->t0 = f->t_end = f->cur_s = e->start; f->cur_e = e->end; f->have = 1; }
    else if (e->start > f->cur_e) { file_close(f, f->cur_s, f->cur_e); f->cur_s = e->start; f->cur_e = e->end; }
    else if (e->end > f->cur_e) f->cur_e = e->end;
    if (e->end > f->t_end) f->t_end = e->end;
  }
  if (ncs_op_bw(c->op) == NCS_BW_NONE || c->op >= NCS_OP_LIMIT || e->end <= e->start || !(e->busbw_gbps > 0)) return;
  int b = ncs_job_bucket(ncs_rule_S(c->op, c->count, c->datatype, e->nranks));
  double lbw = log(e->busbw_gbps), lt = log((double)(e->end - e->start) / 1e3);
  struct ncs_gs_open *o = kind == NCS_KIND_COLL && e->nranks > 1 ? open_get(g, e->comm_id, c->seq) : NULL;
  if (!o || (o->seen && (o->op != c->op || o->bucket != b))) { /* its own sample (or not lined up) */
    row_add(g, c->op, b, lbw, lt);
    return;
  }
  if (!o->seen) { o->op = c->op; o->bucket = b; o->nranks = e->nranks; o->lbw = lbw; o->lt = lt; o->gpu = e->has_gpu; }
  else if ((e->has_gpu && !o->gpu) || (e->has_gpu == o->gpu && lt < o->lt)) { /* the rank that waited least */
    o->lbw = lbw; o->lt = lt; o->gpu = e->has_gpu;
  }
  if (++o->seen >= o->nranks) { row_add(g, o->op, o->bucket, o->lbw, o->lt); open_del(g, o); }
}

int ncs_gsamples_shares(const struct ncs_gsamples *g, double **out) {
  *out = NULL;
  if (!g->nfile || !(*out = malloc((size_t)g->nfile * NCS_GS_BLOCKS * sizeof **out))) return 0;
  int n = 0;
  for (int i = 0; i < g->nfile; i++) {
    struct ncs_gs_file *f = g->file[i];
    if (!f || !f->have) continue;
    if (f->cur_e > f->cur_s) { file_close(f, f->cur_s, f->cur_e); f->cur_s = f->cur_e; } /* the last interval */
    double span = (double)(f->t_end - f->t0);
    if (span <= 0) continue;
    /* each part [p0, p1) of the window takes the fine blocks' time in proportion to overlap */
    for (int p = 0; p < NCS_GS_BLOCKS; p++) {
      double p0 = span * p / NCS_GS_BLOCKS, p1 = span * (p + 1) / NCS_GS_BLOCKS, comm = 0;
      for (int64_t b = (int64_t)(p0 / f->block_ns); b < FINE_MAX && (double)b * f->block_ns < p1; b++) {
        double b0 = (double)b * f->block_ns, b1 = b0 + f->block_ns;
        double lo = b0 > p0 ? b0 : p0, hi = b1 < p1 ? b1 : p1;
        if (hi > lo) comm += f->comm_ns[b] * (hi - lo) / f->block_ns;
      }
      (*out)[n++] = 100.0 * comm / (p1 - p0);
    }
  }
  /* in time order: every file's first block, then every file's second, ... (the drift's
   * halves are then the first and the second half of every rank's window) */
  int nf = n / NCS_GS_BLOCKS;
  double *t = nf > 1 ? malloc((size_t)n * sizeof *t) : NULL;
  if (t) {
    for (int i = 0; i < nf; i++)
      for (int p = 0; p < NCS_GS_BLOCKS; p++) t[p * nf + i] = (*out)[i * NCS_GS_BLOCKS + p];
    memcpy(*out, t, (size_t)n * sizeof *t);
    free(t);
  }
  return n;
}
