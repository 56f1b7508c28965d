/* relayout.c — laying a job's GPU timelines out again with changed kernels (relayout.h). */
#include "model/relayout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/runsort.h"

/* Two device times this close are the same moment: the trace rounds kernel times to 32 ns
 * (docs/FORMAT.md) and converts clocks with sub-microsecond error (docs/SHIM.md). */
#define TOL_NS 1000.0
/* How far back a kernel's cause is looked for among the rank's earlier kernels. */
#define LOOKBACK 256
#define NONE ((size_t)-1)

enum dep_kind { DEP_STREAM, DEP_ABS, DEP_EVENT, DEP_GAP };
#define MAX_KERNELS (1u << 30)
/* A kernel's dependency, 2 bytes: kind (enum dep_kind) | (i - q - 1) << 2 for EVENT / GAP, q
 * the kernel on whose end it started (GAP: plus the traced gap, its start - q's end, read from
 * the kernels when laid out), at most LOOKBACK before it | the NCCL kernels before it in its
 * block of 64 << 10 (its unit below). The previous kernel on its stream (pred) is not kept:
 * ncs_rl_run's walk takes each rank's kernels in order and finds it as ncs_rl_prepare did
 * (struct swalk). */
typedef uint16_t dep_t;
_Static_assert(LOOKBACK <= 256, "i - q - 1 in 8 bits");
#define DEP_UOFF 10
/* An NCCL kernel's unit (its index among the rank's NCCL kernels), without a word per kernel:
 * ubase[b] NCCL kernels before kernel 64 b, and those before it in its block. */
static inline size_t unit_of(const struct ncs_rl_rank *x, size_t i) {
  return x->ubase[i >> 6] + (size_t)(x->dep[i] >> DEP_UOFF);
}
/* Kernel i's transfer, as ncs_rl_prepare's contract says (not kept: a loop over the ranks when
 * synced): its end - the latest start of its collective's kernels, at least 0. */
static inline double transfer_of(const struct ncs_rl *rl, const struct ncs_rl_rank *x, size_t u) {
  size_t i = x->unit[u];
  double arrive = (double)x->k[i].start;
  for (int p = 0; rl->synced && rl->nr > 1 && p < rl->nr; p++) { /* (one rank: its own start) */
    double s = (double)rl->r[p].k[rl->r[p].unit[u]].start;
    if (s > arrive) arrive = s;
  }
  double t = (double)ncs_rl_end(x, i) - arrive;
  return t > 0 ? t : 0;
}
/* The previous kernel of each stream, as a rank's kernels are taken in order (by stream index,
 * NCS_RL_STREAMS: a kernel of a later stream has none). */
struct swalk { size_t last[NCS_RL_STREAMS]; };
static void swalk_init(struct swalk *w) { for (int s = 0; s < NCS_RL_STREAMS; s++) w->last[s] = NONE; }
static inline size_t swalk_pred(struct swalk *w, unsigned s, size_t i) {
  if (s >= NCS_RL_STREAMS) return NONE;
  size_t pred = w->last[s];
  w->last[s] = i;
  return pred;
}

void ncs_rl_free(struct ncs_rl *rl) {
  for (int r = 0; rl && r < rl->nr; r++) {
    free(rl->r[r].dep);
    free(rl->r[r].unit);
    free(rl->r[r].ubase);
    rl->r[r].dep = NULL;
    rl->r[r].unit = NULL;
    rl->r[r].ubase = NULL;
    rl->r[r].nunit = 0;
  }
}

/* Why kernel i of rank x started when it did. */
static dep_t read_dep(const struct ncs_rl_rank *x, size_t i, size_t pred) {
  const struct ncs_rl_k *k = &x->k[i];
  if (pred != NONE && (double)k->start <= (double)ncs_rl_end(x, pred) + TOL_NS) return DEP_STREAM;
  size_t lo = i > LOOKBACK ? i - LOOKBACK : 0, ev = NONE, gap = NONE;
  for (size_t j = i; j-- > lo;) {
    double e = (double)ncs_rl_end(x, j), s = (double)k->start;
    if (e >= s - TOL_NS && e <= s + TOL_NS && (ev == NONE || ncs_rl_end(x, j) > ncs_rl_end(x, ev))) ev = j;
    if (e <= s && (gap == NONE || ncs_rl_end(x, j) > ncs_rl_end(x, gap))) gap = j;
  }
  if (ev != NONE) return (dep_t)(DEP_EVENT | (i - ev - 1) << 2);
  if (gap != NONE) return (dep_t)(DEP_GAP | (i - gap - 1) << 2);
  return DEP_ABS;
}

int ncs_rl_prepare(struct ncs_rl *rl) {
  rl->synced = rl->nr > 0;
  for (int r = 0; r < rl->nr; r++) {
    struct ncs_rl_rank *x = &rl->r[r];
    if (x->n >= MAX_KERNELS) goto fail; /* indices of 30 bits (ncs_rl_dep) */
    size_t nb = x->n / 64 + 1, nu = 0;
    for (size_t i = 0; i < x->n; i++) nu += ncs_rl_nccl(&x->k[i]);
    x->dep = malloc((x->n ? x->n : 1) * sizeof *x->dep);
    x->unit = malloc((nu ? nu : 1) * sizeof *x->unit);
    x->ubase = malloc(nb * sizeof *x->ubase);
    if (!x->dep || !x->unit || !x->ubase) goto fail;
    x->nunit = 0;
    struct swalk sw;
    swalk_init(&sw);
    for (size_t i = 0; i < x->n; i++) {
      if (!(i & 63)) x->ubase[i >> 6] = (uint32_t)x->nunit;
      x->dep[i] = (dep_t)(read_dep(x, i, swalk_pred(&sw, ncs_rl_stream(&x->k[i]), i)) | (x->nunit - x->ubase[i >> 6]) << DEP_UOFF);
      if (ncs_rl_nccl(&x->k[i])) x->unit[x->nunit++] = (uint32_t)i;
    }
    if (!(x->n & 63)) x->ubase[x->n >> 6] = (uint32_t)x->nunit;
    if (x->nunit != rl->r[0].nunit) rl->synced = 0;
  }
  for (size_t u = 0; rl->synced && u < rl->r[0].nunit; u++)
    for (int r = 1; r < rl->nr; r++)
      if (ncs_rl_kop(&rl->r[r].k[rl->r[r].unit[u]]) != ncs_rl_kop(&rl->r[0].k[rl->r[0].unit[u]])) { rl->synced = 0; break; }
  return 0;
fail:
  ncs_rl_free(rl);
  return -1;
}

double ncs_rl_observed_step(const struct ncs_rl *rl, int r) {
  const struct ncs_rl_rank *x = &rl->r[r];
  if (x->nbound < 2) return 0;
  return ((double)ncs_rl_end(x, x->bound[x->nbound - 1]) - (double)ncs_rl_end(x, x->bound[0])) / (double)(x->nbound - 1);
}

struct run {
  const struct ncs_rl *rl;
  const struct ncs_rl_change *c;
  double **t;          /* per rank and kernel, one slot: its new end once known (sign bit
                          clear), else minus its new start (sign bit set; until laid out, its
                          observed start); a start is no longer read once the end is known */
  double **dur;        /* fix_rank's compute kernels' lengths (the others': as traced); NULL
                          for every other rank */
  struct swalk *sw;    /* per rank: its streams' kernels laid out last */
};

static double end_of(struct run *w, int r, size_t i) {
  if (!signbit(w->t[r][i])) return w->t[r][i];
  const struct ncs_rl_rank *x = &w->rl->r[r];
  size_t u = unit_of(x, i);
  double arrive = -w->t[r][i];
  for (int p = 0; w->rl->synced && p < w->rl->nr; p++) {
    double s = -w->t[p][w->rl->r[p].unit[u]]; /* (one collective: every rank's end unknown) */
    if (s > arrive) arrive = s;
  }
  double t = transfer_of(w->rl, x, u);
  if (w->c && w->c->nccl_ns) t = w->c->nccl_ns(w->c->ctx, &x->size[x->k[i].info & NCS_RL_SIZE], t);
  double e = arrive + (t > 0 ? t : 0);
  if (w->rl->synced) /* one collective, one end on every rank */
    for (int p = 0; p < w->rl->nr; p++) w->t[p][w->rl->r[p].unit[u]] = e;
  else
    w->t[r][i] = e;
  return e;
}

/* The job's kernels in observed start order, ties by rank: each rank's are sorted by start, so
 * a merge of the ranks (a min-heap of their next kernels, keyed by start then rank) gives that
 * order holding one entry per rank. */
struct rhead { uint64_t start; int r; size_t i; };
static int rhead_before(const struct rhead *x, const struct rhead *y) {
  return x->start != y->start ? x->start < y->start : x->r < y->r;
}
static void rhead_down(struct rhead *h, size_t n, size_t j) {
  struct rhead v = h[j];
  for (;;) {
    size_t c = 2 * j + 1;
    if (c >= n) break;
    if (c + 1 < n && rhead_before(&h[c + 1], &h[c])) c++;
    if (!rhead_before(&h[c], &v)) break;
    h[j] = h[c];
    j = c;
  }
  h[j] = v;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* fix_rank's compute kernels take the median length of the others' j-th compute kernel. */
static int fix_durations(struct run *w, int fr) {
  const struct ncs_rl *rl = w->rl;
  size_t nc = 0;
  for (size_t i = 0; i < rl->r[fr].n; i++) nc += !ncs_rl_nccl(&rl->r[fr].k[i]);
  size_t **ci = calloc((size_t)rl->nr, sizeof *ci); /* per rank: index of its j-th compute kernel */
  double *v = malloc((size_t)rl->nr * sizeof *v);
  int rc = -1;
  if (!ci || !v) goto out;
  for (int r = 0; r < rl->nr; r++) {
    size_t m = 0;
    if (!(ci[r] = malloc((rl->r[r].n + 1) * sizeof **ci))) goto out;
    for (size_t i = 0; i < rl->r[r].n; i++)
      if (!ncs_rl_nccl(&rl->r[r].k[i])) ci[r][m++] = i;
    if (m != nc) { rc = -2; goto out; }
  }
  for (size_t j = 0; j < nc && rl->nr > 1; j++) {
    int m = 0;
    for (int r = 0; r < rl->nr; r++)
      if (r != fr) v[m++] = (double)(ncs_rl_end(&rl->r[r], ci[r][j]) - rl->r[r].k[ci[r][j]].start);
    qsort(v, (size_t)m, sizeof *v, cmp_d);
    w->dur[fr][ci[fr][j]] = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
  }
  rc = 0;
out:
  for (int r = 0; ci && r < rl->nr; r++) free(ci[r]);
  free(ci);
  free(v);
  return rc;
}

int ncs_rl_run(const struct ncs_rl *rl, const struct ncs_rl_change *c, double *step) {
  struct run w = {rl, c, NULL, NULL, NULL};
  struct rhead *g = NULL;
  int rc = -1;
  if (!(w.t = calloc((size_t)rl->nr, sizeof *w.t)) || !(w.dur = calloc((size_t)rl->nr, sizeof *w.dur)) ||
      !(w.sw = malloc((size_t)(rl->nr > 0 ? rl->nr : 1) * sizeof *w.sw)))
    goto out;
  for (int r = 0; r < rl->nr; r++) swalk_init(&w.sw[r]);
  for (int r = 0; r < rl->nr; r++) {
    size_t n = rl->r[r].n ? rl->r[r].n : 1;
    int fixed = c && c->fix_rank == r;
    if (!(w.t[r] = malloc(n * sizeof **w.t)) || (fixed && !(w.dur[r] = malloc(n * sizeof **w.dur))))
      goto out;
    for (size_t i = 0; i < rl->r[r].n; i++) {
      w.t[r][i] = -(double)rl->r[r].k[i].start; /* until laid out */
      if (fixed) w.dur[r][i] = (double)(ncs_rl_end(&rl->r[r], i) - rl->r[r].k[i].start);
    }
  }
  if (c && c->fix_rank >= 0 && c->fix_rank < rl->nr && (rc = fix_durations(&w, c->fix_rank)) != 0) goto out;
  rc = -1;
  if (!(g = malloc((size_t)(rl->nr > 0 ? rl->nr : 1) * sizeof *g))) goto out;
  size_t m = 0;
  for (int r = 0; r < rl->nr; r++)
    if (rl->r[r].n) g[m++] = (struct rhead){rl->r[r].k[0].start, r, 0};
  for (size_t j = m / 2; j-- > 0;) rhead_down(g, m, j);
  while (m) { /* observed start order: every cause is laid out before */
    int r = g[0].r;
    size_t i = g[0].i;
    dep_t d = rl->r[r].dep[i];
    unsigned kind = d & 3u;
    size_t q = i - 1 - (size_t)(d >> 2 & 0xffu), pred = swalk_pred(&w.sw[r], ncs_rl_stream(&rl->r[r].k[i]), i);
    double t = pred != NONE ? end_of(&w, r, pred) : 0;
    double u = kind == DEP_ABS ? (double)rl->r[r].k[i].start
             : kind == DEP_EVENT ? end_of(&w, r, q)
             : kind == DEP_GAP ? end_of(&w, r, q) + ((double)rl->r[r].k[i].start - (double)ncs_rl_end(&rl->r[r], q)) : 0;
    double ns = t > u ? t : u; /* >= 0 */
    if (!ncs_rl_nccl(&rl->r[r].k[i]))
      w.t[r][i] = ns + (w.dur[r] ? w.dur[r][i] : (double)(ncs_rl_end(&rl->r[r], i) - rl->r[r].k[i].start));
    else if (signbit(w.t[r][i])) /* (an end found already, for another rank's kernel, stays) */
      w.t[r][i] = -ns;
    if (i + 1 < rl->r[r].n) g[0] = (struct rhead){rl->r[r].k[i + 1].start, r, i + 1};
    else g[0] = g[--m];
    if (m > 1) rhead_down(g, m, 0); /* (one rank: nothing to order) */
  }
  for (int r = 0; r < rl->nr; r++) {
    const struct ncs_rl_rank *x = &rl->r[r];
    step[r] = x->nbound < 2 ? 0
            : (end_of(&w, r, x->bound[x->nbound - 1]) - end_of(&w, r, x->bound[0])) / (double)(x->nbound - 1);
  }
  rc = 0;
out:
  for (int r = 0; r < rl->nr; r++) {
    if (w.t) free(w.t[r]);
    if (w.dur) free(w.dur[r]);
  }
  free(w.t);
  free(w.dur);
  free(w.sw);
  free(g);
  return rc;
}

size_t ncs_rl_wait_caused(const struct ncs_rl *rl, double *wait) {
  for (int r = 0; r < rl->nr; r++) wait[r] = 0;
  if (!rl->synced || rl->nr < 2) return 0;
  size_t nu = rl->r[0].nunit;
  for (size_t u = 0; u < nu; u++) {
    int last = 0;
    for (int p = 1; p < rl->nr; p++)
      if (rl->r[p].k[rl->r[p].unit[u]].start > rl->r[last].k[rl->r[last].unit[u]].start) last = p;
    double s = (double)rl->r[last].k[rl->r[last].unit[u]].start;
    for (int p = 0; p < rl->nr; p++) wait[last] += s - (double)rl->r[p].k[rl->r[p].unit[u]].start;
  }
  return nu;
}

/* ---- where the observed step goes (ncs_rl_split) ---- */
/* The window's events are each kernel's start and end (an NCCL kernel's arrival too when it
 * falls inside), taken in time order, ties in the order the kernels come (by start) and, for
 * one kernel, start, end, arrival. The kernels are sorted by start, so the starts arrive in that
 * order already; the ends and arrivals of the kernels begun wait in a min-heap (as many as
 * kernels run at once), so nothing is held per kernel. */
struct sev { double t; size_t i; int sub, what; }; /* sub: 0 start, 1 end, 2 arrival; what: +1/-1 compute, +2/-2 NCCL, 0 arrival */
static int sev_before(const struct sev *x, const struct sev *y) {
  if (x->t != y->t) return x->t < y->t;
  if (x->i != y->i) return x->i < y->i;
  return x->sub < y->sub;
}
struct sheap { struct sev *h; size_t n, cap; };
static inline __attribute__((always_inline)) int sheap_push(struct sheap *q, struct sev e) {
  if (!q->n && q->cap) { q->h[0] = e; q->n = 1; return 0; } /* mostly: kernels one after another */
  if (q->n == q->cap) {
    size_t c = q->cap ? q->cap * 2 : 64;
    struct sev *h = realloc(q->h, c * sizeof *h);
    if (!h) return -1;
    q->h = h;
    q->cap = c;
  }
  size_t j = q->n++;
  while (j && sev_before(&e, &q->h[(j - 1) / 2])) { q->h[j] = q->h[(j - 1) / 2]; j = (j - 1) / 2; }
  q->h[j] = e;
  return 0;
}
static inline __attribute__((always_inline)) struct sev sheap_pop(struct sheap *q) {
  if (q->n == 1) { q->n = 0; return q->h[0]; }
  struct sev top = q->h[0], last = q->h[--q->n];
  size_t j = 0;
  for (;;) {
    size_t c = 2 * j + 1;
    if (c >= q->n) break;
    if (c + 1 < q->n && sev_before(&q->h[c + 1], &q->h[c])) c++;
    if (!sev_before(&q->h[c], &last)) break;
    q->h[j] = q->h[c];
    j = c;
  }
  if (q->n) q->h[j] = last;
  return top;
}
static int kop_slot(int kop) { return kop >= 0 && kop < NCS_RL_KOPS - 1 ? kop : NCS_RL_KOPS - 1; }
/* When NCCL kernel i arrived: its end less its transfer (synced), else its start. */
static inline __attribute__((always_inline)) double arrival(const struct ncs_rl *rl, const struct ncs_rl_rank *x, size_t i) {
  if (rl->synced && rl->nr == 1) { /* transfer_of's sums without the lookups: kernel i is its own unit's */
    double e = (double)ncs_rl_end(x, i), t = e - (double)x->k[i].start;
    return e - (t > 0 ? t : 0);
  }
  return rl->synced ? (double)ncs_rl_end(x, i) - transfer_of(rl, x, unit_of(x, i)) : (double)x->k[i].start;
}

/* The segment [t, u) of the window to its part (act_a: the arrivals of act). */
static inline __attribute__((always_inline)) void split_segment(const struct ncs_rl_rank *x, struct ncs_rl_split *o, double t, double u,
                          int ncomp, int nact, const size_t *act, const double *act_a) {
  double len = u - t, mid = t + len / 2;
  if (ncomp > 0) o->compute += len;
  else if (nact > 0) {
    if (mid < act_a[0]) o->wait += len;
    else o->transfer[kop_slot(ncs_rl_kop(&x->k[act[0]]))] += len;
  } else o->idle += len;
}

/* A kernel [s, e) of the window that runs alone, from *t (the last event): the gap before it
 * idle, then its own segments (cut at its arrival a when it falls inside: arr_in), as
 * split_segment and the exposed sum would take them from the events, the same sums. */
static inline __attribute__((always_inline)) void split_alone(struct ncs_rl_split *o, double *t, double s, double e, int nccl,
                                                              int kop, double a, int arr_in) {
  if (s > *t) { o->idle += s - *t; *t = s; }
  for (int part = arr_in ? 0 : 1; part < 2; part++) {
    double u = part ? e : a;
    if (u <= *t) continue;
    double len = u - *t, mid = *t + len / 2;
    if (!nccl) o->compute += len;
    else {
      if (mid < a) o->wait += len;
      else o->transfer[kop] += len;
      o->exposed += len;
    }
    *t = u;
  }
}

/* The alone loop of ncs_rl_split for one rank (an NCCL kernel's arrival is its start: no wait,
 * its whole length transfer) in a window [A, B) under 2^53 ns: every time there is a whole
 * number of ns that a double holds exactly, so each part's sum is exact in any order, and the
 * sums are kept as integers and added to o once. From kernel i at *t; returns the first kernel
 * it did not take (as the general loop's tests say), *t moved past the ones it took. */
static size_t split_alone_one(const struct ncs_rl_rank *x, struct ncs_rl_split *o, size_t i, uint64_t A, uint64_t B, double *t) {
  uint64_t tu = (uint64_t)*t, idle = 0, comp = 0, expo = 0, tr[NCS_RL_KOPS] = {0}, tra[NCS_RL_KOPS] = {0};
  for (; i < x->n; i++) {
    const struct ncs_rl_k *y = &x->k[i];
    uint64_t s = y->start, e = s + y->dur;
    if (y->dur == NCS_RL_LONG || e <= A || s >= B || s < A || e > B || (i + 1 < x->n && x->k[i + 1].start < e)) break;
    if (s > tu) idle += s - tu, tu = s;
    uint64_t len = e > tu ? e - tu : 0;
    if (ncs_rl_nccl(y)) {
      int kop = kop_slot(ncs_rl_kop(y));
      tra[kop] += e - s;
      tr[kop] += len;
      expo += len;
      o->busbytes[kop] += x->size[y->info & NCS_RL_SIZE].busbytes; /* (not whole: in order, as before) */
    } else comp += len;
    if (e > tu) tu = e;
  }
  o->idle += (double)idle;
  o->compute += (double)comp;
  o->exposed += (double)expo;
  for (int k = 0; k < NCS_RL_KOPS; k++) o->transfer[k] += (double)tr[k], o->transfer_all[k] += (double)tra[k];
  *t = (double)tu;
  return i;
}

int ncs_rl_split(const struct ncs_rl *rl, int r, struct ncs_rl_split *o) {
  const struct ncs_rl_rank *x = &rl->r[r];
  memset(o, 0, sizeof *o);
  if (x->nbound < 2 || (!x->dep && rl->nr > 1)) return -1;
  double A = (double)ncs_rl_end(x, x->bound[0]), B = (double)ncs_rl_end(x, x->bound[x->nbound - 1]);
  /* a kernel whose clipped end comes before its clipped start (a wrapped duration, a last
   * boundary ending before the first) breaks the starts' order: then every event goes through
   * the heap (memory per kernel; o->heaped says so). With A <= B only an end before its start
   * can: such a kernel's duration is NCS_RL_LONG (in the long list) unless its start is within
   * 2^32 ns of 2^64 (the last kernel's start says), so the long list alone is looked at then. */
  int stream = 1, all = B < A || x->k[x->n - 1].start > UINT64_MAX - NCS_RL_LONG;
  for (size_t l = 0, n = all ? x->n : x->nlong; l < n && stream; l++) {
    size_t i = all ? l : x->lng[l].i;
    double s = (double)x->k[i].start, e = (double)ncs_rl_end(x, i);
    if (e <= A || s >= B) continue;
    if ((e > B ? B : e) < (s < A ? A : s)) stream = 0;
  }
  o->heaped = !stream;
  enum { MAXA = 64 };
  size_t act[MAXA];
  double act_a[MAXA], next_a = 0, next_e0 = 0; /* their arrivals; the next start's (an NCCL kernel's); its end, not clipped */
  struct sev end = {0}, arr = {0}; /* (streamed) the next start's end and arrival, pushed when it is taken */
  int have_arr = 0;
  int nact = 0, ncomp = 0, rc = -1, have_next = 0;
  long ncomm = 0; /* NCCL kernels running (act holds the first MAXA) */
  struct sheap q = {0};
  struct sev next = {0};
  size_t i = 0; /* the next kernel to visit */
  double t = A;
  const int one = rl->synced && rl->nr == 1; /* arrival(): a kernel is its own unit's */
  for (;;) {
    while (!have_next && i < x->n) { /* the next kernel in the window: its start next, its end and arrival after */
      double s = (double)x->k[i].start, e = (double)ncs_rl_end(x, i), e0 = e;
      size_t j = i++;
      next_e0 = e0;
      if (e <= A || s >= B) continue;
      if (s < A) s = A;
      if (e > B) e = B;
      int nccl = ncs_rl_nccl(&x->k[j]);
      if (nccl) {
        int kop = kop_slot(ncs_rl_kop(&x->k[j]));
        double a = arrival(rl, x, j), ts = a > s ? a : s;
        if (e > ts) o->transfer_all[kop] += e - ts;
        if (e0 <= B) o->busbytes[kop] += x->size[x->k[j].info & NCS_RL_SIZE].busbytes;
        have_arr = a > s && a < e;
        arr = (struct sev){a, j, 2, 0};
        next_a = a;
      } else have_arr = 0;
      end = (struct sev){e, j, 1, nccl ? -2 : -1};
      next = (struct sev){s, j, 0, nccl ? 2 : 1};
      if (stream) have_next = 1;
      else if ((have_arr && sheap_push(&q, arr) != 0) || sheap_push(&q, end) != 0 || sheap_push(&q, next) != 0) goto out;
    }
    if (have_next && !q.n && (i == x->n || (double)x->k[i].start >= next_e0)) {
      /* the next kernel runs alone: nothing running as it starts (the heap holds the ends of the
       * kernels begun), the kernel after it starting at or after its end (a tie: its end first, as
       * events of one moment come by kernel): its segments straight (split_alone) */
      split_alone(o, &t, next.t, end.t, next.what == 2, kop_slot(ncs_rl_kop(&x->k[next.i])), next_a, have_arr);
      have_next = 0;
      /* and the kernels after it that run alone too, read straight from the array (one in the
       * long list, or reaching past the window's edges, goes the general way) */
      if (one && A <= B && B < 0x1p53) i = split_alone_one(x, o, i, (uint64_t)A, (uint64_t)B, &t);
      for (; i < x->n; i++) {
        const struct ncs_rl_k *y = &x->k[i];
        if (y->dur == NCS_RL_LONG) break;
        double s = (double)y->start, e0 = (double)(y->start + y->dur), e = e0;
        if (e0 <= A || s >= B || s < A || e0 > B || (i + 1 < x->n && (double)x->k[i + 1].start < e0)) break;
        int nccl = ncs_rl_nccl(y), kop = 0, arr_in = 0;
        double a = 0;
        if (nccl) { /* as the loader above */
          kop = kop_slot(ncs_rl_kop(y));
          if (one) { double d = e0 - s; a = e0 - (d > 0 ? d : 0); } /* arrival()'s, its end and start at hand */
          else a = arrival(rl, x, i);
          double ts = a > s ? a : s;
          if (e > ts) o->transfer_all[kop] += e - ts;
          o->busbytes[kop] += x->size[y->info & NCS_RL_SIZE].busbytes;
          arr_in = a > s && a < e;
        }
        split_alone(o, &t, s, e, nccl, kop, a, arr_in);
      }
      continue;
    }
    struct sev ev;
    double ev_a; /* an NCCL start's arrival */
    if (q.n && (!have_next || sev_before(&q.h[0], &next))) { ev = sheap_pop(&q); ev_a = ev.what == 2 ? arrival(rl, x, ev.i) : 0; }
    else if (have_next) { /* its end and arrival to the heap now: they come after it */
      ev = next; ev_a = next_a; have_next = 0;
      if ((have_arr && sheap_push(&q, arr) != 0) || sheap_push(&q, end) != 0) goto out;
    } else break;
    if (ev.t > t) {
      split_segment(x, o, t, ev.t, ncomp, nact, act, act_a);
      if (ncomm > 0 && !ncomp) o->exposed += ev.t - t;
      t = ev.t;
    }
    if (ev.what == 1) ncomp++;
    else if (ev.what == -1) ncomp--;
    else if (ev.what == 2) { ncomm++; if (nact < MAXA) { act_a[nact] = ev_a; act[nact++] = ev.i; } }
    else if (ev.what == -2) {
      ncomm--;
      for (int a = 0; a < nact; a++)
        if (act[a] == ev.i) {
          if (a + 1 < nact) {
            memmove(act + a, act + a + 1, (size_t)(nact - a - 1) * sizeof *act);
            memmove(act_a + a, act_a + a + 1, (size_t)(nact - a - 1) * sizeof *act_a);
          }
          nact--;
          break;
        }
    }
  }
  if (B > t) split_segment(x, o, t, B, ncomp, nact, act, act_a);
  double steps = (double)(x->nbound - 1);
  o->compute /= steps; o->wait /= steps; o->idle /= steps; o->exposed /= steps;
  for (int k = 0; k < NCS_RL_KOPS; k++) { o->transfer[k] /= steps; o->transfer_all[k] /= steps; o->busbytes[k] /= steps; }
  rc = 0;
out:
  free(q.h);
  return rc;
}

/* The sweep of ncs_rl_split with two counts: the time in [a, b) with an NCCL kernel running and
 * no compute kernel (kernel times are whole ns: the sums are exact in any order). */
double ncs_rl_observed_exposed(const struct ncs_rl *rl, int r) {
  const struct ncs_rl_rank *x = &rl->r[r];
  if (x->nbound < 2) return 0;
  double a = (double)ncs_rl_end(x, x->bound[0]), b = (double)ncs_rl_end(x, x->bound[x->nbound - 1]);
  double exposed = 0, t = a;
  long ncomp = 0, ncomm = 0;
  struct sheap q = {0};
  size_t i = 0;
  for (;;) {
    double s = 0, e = 0;
    while (i < x->n) { /* the next kernel with a length in the window */
      s = (double)x->k[i].start, e = (double)ncs_rl_end(x, i);
      if (s < a) s = a;
      if (e > b) e = b;
      if (e > s) break;
      i++;
    }
    struct sev ev;
    if (q.n && (i == x->n || q.h[0].t < s)) ev = sheap_pop(&q);
    else if (i < x->n) {
      ev = (struct sev){s, i, 0, ncs_rl_nccl(&x->k[i]) ? 2 : 1};
      if (sheap_push(&q, (struct sev){e, i, 1, -ev.what}) != 0) { exposed = 0; goto out; }
      i++;
    } else break;
    if (ncomm > 0 && !ncomp) exposed += ev.t - t;
    t = ev.t;
    if (ev.what == 1 || ev.what == -1) ncomp += ev.what;
    else ncomm += ev.what / 2;
  }
  exposed /= (double)(x->nbound - 1);
out:
  free(q.h);
  return exposed;
}
