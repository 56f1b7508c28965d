/* gpu_lanes.c — per-rank GPU stream lanes for the HTML report (contract in gpu_lanes.h). */
#include "render/gpu_lanes.h"

#include <stdlib.h>
#include <string.h>

#include "render/svg.h"

#define CKPT 44         /* checkpoints: 0, then 2^(k+19) ns */
#define STREAMS 6       /* lanes per rank; further streams share one "other streams" lane */

struct kspan { int64_t s, e; uint32_t stream; uint32_t cls; };
struct ncs_gpulanes {
  int n[NCS_GPULANES_ROWS][CKPT];
  int64_t first[NCS_GPULANES_ROWS], last[NCS_GPULANES_ROWS];  /* earliest start, latest end per row */
  int have[NCS_GPULANES_ROWS];
  struct kspan *sp;                 /* [ROWS][CKPT][KEEP] */
};

static int64_t ckpt(int k) { return k ? (int64_t)1 << (k + 19) : 0; }
static struct kspan *row(const struct ncs_gpulanes *g, int file, int k) {
  return &g->sp[((size_t)file * CKPT + (size_t)k) * NCS_GPULANES_KEEP];
}

struct ncs_gpulanes *ncs_gpulanes_new(void) {
  struct ncs_gpulanes *g = calloc(1, sizeof *g);
  if (g && !(g->sp = calloc((size_t)NCS_GPULANES_ROWS * CKPT * NCS_GPULANES_KEEP, sizeof *g->sp))) { free(g); g = NULL; }
  return g;
}

void ncs_gpulanes_free(struct ncs_gpulanes *g) {
  if (g) free(g->sp);
  free(g);
}

void ncs_gpulanes_add(struct ncs_gpulanes *g, int file, const struct ncs_aligned_kernel *a) {
  if (!g || file < 0 || file >= NCS_GPULANES_ROWS || a->end < a->start) return;
  if (!g->have[file] || a->end > g->last[file]) g->last[file] = a->end;
  if (!g->have[file] || a->start < g->first[file]) g->first[file] = a->start;
  g->have[file] = 1;
  for (int k = 0; k < CKPT && ckpt(k) <= a->start; k++) {
    int *n = &g->n[file][k];
    if (*n < NCS_GPULANES_KEEP) row(g, file, k)[(*n)++] = (struct kspan){a->start, a->end, a->k->stream, a->k->kclass};
  }
}

static int cmp_start(const void *a, const void *b) {
  const struct kspan *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}

/* One rank's figures over the window: unions of compute (every kernel, copy and set not
 * NCCL's) and of NCCL kernels, their overlap, and the exposed intervals (NCCL, no compute). */
struct figs { double compute, comm, overlapped, exposed; };
static int exposed_parts(struct kspan *k, int n, int64_t t0, int64_t t1, double *ea, double *eb, int cap, struct figs *fg) {
  /* clip to the window, then sweep the start/end edges */
  struct edge { int64_t t; int d, comm; } *ev = malloc((size_t)(2 * n + 1) * sizeof *ev);
  int ne = 0, np = 0;
  memset(fg, 0, sizeof *fg);
  if (!ev) return 0;
  for (int i = 0; i < n; i++) {
    int64_t s = k[i].s < t0 ? t0 : k[i].s, e = k[i].e > t1 ? t1 : k[i].e;
    if (e <= s) continue;
    int comm = k[i].cls == NCS_KCLASS_NCCL;
    ev[ne++] = (struct edge){s, +1, comm};
    ev[ne++] = (struct edge){e, -1, comm};
  }
  for (int i = 1; i < ne; i++) /* insertion sort: a few hundred edges */
    for (int j = i; j > 0 && ev[j].t < ev[j - 1].t; j--) { struct edge x = ev[j]; ev[j] = ev[j - 1]; ev[j - 1] = x; }
  int ncomp = 0, ncomm = 0;
  int64_t t = ne ? ev[0].t : 0;
  for (int i = 0; i < ne; i++) {
    double dt = (double)(ev[i].t - t);
    if (ncomp) fg->compute += dt;
    if (ncomm) fg->comm += dt;
    if (ncomp && ncomm) fg->overlapped += dt;
    if (ncomm && !ncomp && dt > 0) {
      fg->exposed += dt;
      if (np && eb[np - 1] == (double)t) eb[np - 1] = (double)ev[i].t; /* continues the last part */
      else if (np < cap) { ea[np] = (double)t; eb[np] = (double)ev[i].t; np++; }
    }
    t = ev[i].t;
    if (ev[i].comm) ncomm += ev[i].d; else ncomp += ev[i].d;
  }
  free(ev);
  return np;
}

static void rank_label(char *b, size_t n, const struct ncs_jrank *r, int i) {
  if (r->rank >= 0) snprintf(b, n, "rank %d", r->rank); else snprintf(b, n, "file %d", i);
}

void ncs_gpulanes_html(FILE *f, const struct ncs_gpulanes *g, const struct ncs_jobdata *J) {
  fprintf(f, "<section id=\"gpu-streams\"><h2>GPU streams: compute and communication</h2>\n");
  int rows = J->n < NCS_GPULANES_ROWS ? J->n : NCS_GPULANES_ROWS, any = 0;
  int64_t end = INT64_MAX, start = INT64_MAX;
  int all_kept = 1; /* every rank's kernels fit in its share from checkpoint 0: all are shown */
  for (int i = 0; g && i < rows; i++)
    if (g->have[i]) {
      any = 1;
      if (g->last[i] < end) end = g->last[i];
      if (g->first[i] < start) start = g->first[i];
      all_kept &= g->n[i][0] < NCS_GPULANES_KEEP;
    }
  if (!any) {
    fprintf(f, "<p>No kernel activity in the traces: it needs traces of format 1.1 from a job whose CUDA runtime "
               "has CUPTI beside it, with no other CUPTI client (docs/SHIM.md, \"Kernel activity\"); "
               "<code>ncclscope report</code> says why per rank.</p></section>\n");
    return;
  }
  int k = 0;
  int64_t mid = start + (end > start ? (end - start) / 2 : 0);
  while (!all_kept && k + 1 < CKPT && ckpt(k + 1) <= mid) k++;
  /* window: from the earliest kept kernel to where every rank that filled its share still has kernels */
  int64_t t0 = INT64_MAX, t1 = INT64_MAX, tmax = INT64_MIN;
  for (int i = 0; i < rows; i++) {
    const struct kspan *p = row(g, i, k);
    int64_t lasts = INT64_MIN;
    for (int c = 0; c < g->n[i][k]; c++) {
      if (p[c].s < t0) t0 = p[c].s;
      if (p[c].e > tmax) tmax = p[c].e;
      if (p[c].s > lasts) lasts = p[c].s;
    }
    if (g->n[i][k] == NCS_GPULANES_KEEP && lasts < t1) t1 = lasts;
  }
  if (t1 == INT64_MAX || t1 <= t0) t1 = tmax;
  if (t1 <= t0) t1 = t0 + 1;
  fprintf(f, "<p class=\"note\">What each rank's GPU ran, %.3f ms from %.3f ms into the job (job clock, kernel times "
             "aligned like the calls': docs/CLOCKS.md): one lane per GPU stream (CUPTI's stream id), then the rank's "
             "<b>exposed communication</b>: NCCL kernel time with no compute kernel, copy or set running beside it, the "
             "part of communication that costs step time. NCCL kernels under a compute lane's bars are hidden. First %d "
             "kernels of each rank from the last checkpoint (0, 0.5 ms, 1 ms, 2 ms, ...) at or before the middle of the "
             "ranks' kernel activity (the whole run when every rank ran fewer); the whole run's figures are in <code>ncclscope report</code> (\"GPU time\").</p>\n",
          (double)(t1 - t0) / 1e6, (double)t0 / 1e6, NCS_GPULANES_KEEP);
  int maxl = rows * (STREAMS + 2);
  struct ncs_svg_lane *lane = calloc((size_t)maxl, sizeof *lane);
  double *a = calloc((size_t)maxl * NCS_GPULANES_KEEP, sizeof *a), *b = calloc((size_t)maxl * NCS_GPULANES_KEEP, sizeof *b);
  int *kind = calloc((size_t)maxl * NCS_GPULANES_KEEP, sizeof *kind);
  char (*label)[64] = calloc((size_t)maxl, sizeof *label);
  struct kspan *tmp = malloc(NCS_GPULANES_KEEP * sizeof *tmp);
  struct figs *fg = calloc((size_t)rows, sizeof *fg);
  if (!lane || !a || !b || !kind || !label || !tmp || !fg) {
    fprintf(f, "<p>Out of memory.</p></section>\n");
    goto done;
  }
  static const char *const kname[] = {"compute kernel", "exposed communication", "copy or set", "NCCL kernel"};
  int nl = 0;
  for (int i = 0; i < rows; i++) {
    int n = g->n[i][k];
    if (!n) continue;
    memcpy(tmp, row(g, i, k), (size_t)n * sizeof *tmp);
    if (n > 1) qsort(tmp, (size_t)n, sizeof *tmp, cmp_start);
    char who[32];
    rank_label(who, sizeof who, &J->r[i], i);
    /* the rank's lanes: its STREAMS lowest stream ids in order, then one for the others */
    uint32_t st[STREAMS];
    int ns = 0, more = 0;
    for (int c = 0; c < n; c++) {
      if (tmp[c].s > t1) continue;
      int q = 0;
      while (q < ns && st[q] != tmp[c].stream) q++;
      if (q < ns) continue;
      if (ns == STREAMS && tmp[c].stream > st[ns - 1]) { more = 1; continue; }
      if (ns == STREAMS) { ns--; more = 1; } /* the highest gives way */
      int at = ns++;
      while (at > 0 && st[at - 1] > tmp[c].stream) { st[at] = st[at - 1]; at--; }
      st[at] = tmp[c].stream;
    }
    int first = nl, other = more ? nl + ns : -1;
    for (int q = 0; q < ns; q++) snprintf(label[nl + q], sizeof label[nl + q], "%s stream %u", who, st[q]);
    if (more) snprintf(label[other], sizeof label[other], "%s other streams", who);
    nl += ns + more;
    for (int c = 0; c < n; c++) {
      if (tmp[c].s > t1) continue;
      int q = 0;
      while (q < ns && st[q] != tmp[c].stream) q++;
      int l = q < ns ? first + q : other;
      struct ncs_svg_lane *L = &lane[l];
      if (!L->label) { L->label = label[l]; L->t0 = a + (size_t)l * NCS_GPULANES_KEEP; L->t1 = b + (size_t)l * NCS_GPULANES_KEEP;
                       L->kind = kind + (size_t)l * NCS_GPULANES_KEEP; }
      size_t at = (size_t)l * NCS_GPULANES_KEEP + (size_t)L->n;
      a[at] = (double)tmp[c].s; b[at] = (double)tmp[c].e;
      kind[at] = tmp[c].cls == NCS_KCLASS_NCCL ? 3 : tmp[c].cls == NCS_KCLASS_COMPUTE ? 0 : 2;
      L->n++;
    }
    int l = nl++;
    snprintf(label[l], sizeof label[l], "%s exposed", who);
    lane[l].label = label[l];
    lane[l].t0 = a + (size_t)l * NCS_GPULANES_KEEP; lane[l].t1 = b + (size_t)l * NCS_GPULANES_KEEP;
    lane[l].kind = kind + (size_t)l * NCS_GPULANES_KEEP;
    lane[l].n = exposed_parts(tmp, n, t0, t1, a + (size_t)l * NCS_GPULANES_KEEP, b + (size_t)l * NCS_GPULANES_KEEP,
                              NCS_GPULANES_KEEP, &fg[i]);
    for (int c = 0; c < lane[l].n; c++) kind[(size_t)l * NCS_GPULANES_KEEP + (size_t)c] = 1;
  }
  ncs_svg_lanes(f, lane, nl, (double)t0, (double)t1, kname, 4);
  fprintf(f, "<div class=\"scroll\"><table><tr><th>rank</th><th>compute ms</th><th>NCCL ms</th><th>overlapped ms</th>"
             "<th>exposed ms</th><th>exposed %% of NCCL</th></tr>\n");
  for (int i = 0; i < rows; i++) {
    if (!g->n[i][k]) continue;
    char who[32];
    rank_label(who, sizeof who, &J->r[i], i);
    fprintf(f, "<tr><td class=\"l\">%s</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td%s>%.3f</td><td>%.1f%%</td></tr>\n", who,
            fg[i].compute / 1e6, fg[i].comm / 1e6, fg[i].overlapped / 1e6, fg[i].exposed > 0 ? " class=\"bad\"" : "",
            fg[i].exposed / 1e6, fg[i].comm > 0 ? 100.0 * fg[i].exposed / fg[i].comm : 0.0);
  }
  fprintf(f, "</table></div>");
  int quiet = 0; /* ranks shown without kernel activity */
  for (int i = 0; i < rows; i++) {
    if (g->have[i]) continue;
    char who[32];
    rank_label(who, sizeof who, &J->r[i], i);
    fprintf(f, "%s%s", quiet++ ? ", " : "<p class=\"note\">No kernel activity from ", who);
  }
  if (quiet) fprintf(f, " (<code>ncclscope report</code> says why).</p>");
  if (rows < J->n) fprintf(f, "<p class=\"note\">First %d of %d trace files shown.</p>", rows, J->n);
  fprintf(f, "</section>\n");
done:
  free(lane); free(a); free(b); free(kind); free(label); free(tmp); free(fg);
}
