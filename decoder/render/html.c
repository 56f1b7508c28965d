/* html.c — the html renderer: one self-contained page about the job (render/html.h) from what
 * `ncclscope html` (cmd/html_cmd.c) gathered in its one read.
 *
 * Contract: a single HTML file with inline CSS and inline SVG only: no script, no external
 * reference (fonts, images, links to the network). Sections (each an element with an id, so
 * tests and readers can find them; each a <details> that opens and closes, the long ones closed
 * at first, so the page at 4,096 ranks stays a few screens tall until a reader expands one):
 * summary, time-per-op, busbw, comm-share, steps (a few steps of the slowest, median and
 * fastest rank and of any rank the headline names; every rank up to 16),
 * gpu-streams (each rank's compute and NCCL kernels on their GPU streams, exposed communication
 * marked: render/gpu_lanes.h), skew, stragglers,
 * findings, callsites (the HTML_CS_ROWS most exposed call sites, the rest counted in one line),
 * doctor (`ncclscope doctor`'s verdicts, from facts gathered in the same single read
 * of each file; left out with --no-doctor), transports, topology, ranks. Every string that came from a trace (host, command
 * line, paths, errors) goes through ncs_html_escape; everything else is generated here.
 * Pictures scale with ranks: a value per rank is a heatmap in rank order (svg.h) past 16 ranks,
 * with its distribution in words and its outliers outlined and named, never a bar per rank.
 * One colour meaning across charts: red marks a problem (an outlier, the slow rank, exposed
 * communication); blue shades are amounts. One number, one source: a rank's communication
 * share in the chart, the distribution and the Ranks table all come from rank_share(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render/html.h"
#include "render/straggler_render.h"
#include "render/window_render.h"
#include "analysis/jobsum.h"
#include "base/json.h"
#include "io/nccllog.h"
#include "ncclscope/ops.h"
#include "analysis/doctor.h"
#include "analysis/headline.h"
#include "render/headline_render.h"
#include "analysis/straggler.h"
#include "render/doctor_render.h"
#include "render/svg.h"
#include "render/gpu_lanes.h"
#include "model/ivunion.h"
#include "model/topo.h"
#include "model/rules.h"

static void esc(FILE *f, const char *s) { if (s) ncs_html_escape(f, s, strlen(s)); }

/* Reads at 800 to 1600 px without a horizontal scroll of the page: charts shrink to the
 * width, preformatted text wraps, wide tables scroll inside their own box (div.scroll). */
static const char CSS[] =
  "body{font-family:sans-serif;margin:20px auto;padding:0 16px;color:#222;max-width:1100px}"
  "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}"
  "svg.chart{max-width:100%;height:auto;display:block}"
  "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;background:#f6f6f6;padding:8px}"
  ".scroll{max-width:100%;overflow-x:auto}"
  "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
  "td.l{text-align:left;overflow-wrap:anywhere}"
  "th{background:#eee}.lbl{font-size:12px}.val{font-size:11px;fill:#333}"
  ".bad{color:#b00;font-weight:bold}.ok{color:#070}.note{color:#555;font-size:13px}"
  "#headline{font-size:17px;line-height:1.4;padding:10px 16px;margin:12px 0 20px;border:3px solid #888;"
  "border-left-width:10px;border-radius:4px;background:#fcfcfc;overflow-wrap:anywhere}"
  "#headline.good{border-color:#2a8a2a;color:inherit;font-weight:normal}"
  "#headline.bad{border-color:#c0392b;color:inherit;font-weight:normal}"
  "#headline h2{border:0;margin:0 0 6px;font-size:20px}#headline .fig{font-size:30px;font-weight:bold}"
  "details>summary{cursor:pointer}details>summary h2,details>summary h3{display:inline-block}"
  ".P2P{background:#9d9}.NVLS{background:#7c7}.SHM{background:#fd8}.NET{background:#f99}.COLLNET{background:#f9c}"
  ".split{display:flex;width:100%;height:26px;border:1px solid #999;margin:6px 0}.split div{height:100%;overflow:hidden;"
  "font-size:11px;line-height:26px;text-align:center;white-space:nowrap}"
  ".c-compute{background:#6a9fd8}.c-comm{background:#f0a040}.c-wait{background:#d65}.c-idle{background:#ccc}.c-rest{background:#eee}"
  ".fix{font-size:13px;margin:4px 0}.fix .bar{background:#eee;border:1px solid #999;height:16px;width:100%}"
  ".fix .bar div{background:#7a7;height:100%}";

static double wall_s(const struct ncs_jrank *r) { return r->t_last > r->t_first ? (double)(r->t_last - r->t_first) / 1e9 : 0; }

/* A section that opens and closes: <section id><details [open]><summary><h2>title</h2></summary>. */
static void sec_open(FILE *f, const char *id, const char *title, int open) {
  fprintf(f, "<section id=\"%s\"><details%s><summary><h2>%s</h2></summary>\n", id, open ? " open" : "", title);
}
static void sec_close(FILE *f) { fprintf(f, "</details></section>\n"); }

/* File i's communication share (0..1), communication seconds and window seconds: the doctor's
 * facts when they were gathered (the one definition, shared with report and doctor:
 * analysis/headline.h; also when a file was unreadable and the doctor did not run), else
 * (--no-doctor) the union html_cmd took per file over the loader's window. Both unions are
 * exact across calling threads (model/ivunion.h). The chart, its distribution and the Ranks
 * table all read this. */
static double rank_share(const struct ncs_html_page *p, int i, double *comm_s, double *win_s) {
  const struct ncs_jobdata *J = p->J;
  const struct ncs_doctor *d = p->doc;
  double w = wall_s(&J->r[i]), share = w > 0 && p->comm_s ? p->comm_s[i] / w : 0;
  if (d && d->n == J->n) {
    double wn = 0, sh = ncs_headline_share(d->f[i], &wn);
    share = sh >= 0 ? sh : 0;
    if (wn > 0) w = wn / 1e9;
  }
  if (win_s) *win_s = w;
  if (comm_s) *comm_s = share * w;
  return share;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Outliers of v[0..n): at most 8, the farthest from the median first, each more than
 * 3 scaled MADs and more than `floor` from the median; mark[i] set for them (added to what the
 * caller marked). Returns the median. */
static double mark_outliers(const double *v, int n, int *mark, double floor) {
  if (n <= 0) return 0;
  double *t = malloc((size_t)n * sizeof *t);
  if (!t) return 0;
  memcpy(t, v, (size_t)n * sizeof *t);
  qsort(t, (size_t)n, sizeof *t, cmp_dbl);
  double med = t[n / 2];
  for (int i = 0; i < n; i++) t[i] = fabs(v[i] - med);
  qsort(t, (size_t)n, sizeof *t, cmp_dbl);
  double lim = 3 * 1.4826 * t[n / 2];
  if (lim < floor) lim = floor;
  free(t);
  for (int k = 0; k < 8; k++) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (mark[i] != 2 && fabs(v[i] - med) > lim && (best < 0 || fabs(v[i] - med) > fabs(v[best] - med))) best = i;
    if (best < 0) break;
    mark[best] = 2;
  }
  for (int i = 0; i < n; i++) if (mark[i]) mark[i] = 1;
  return med;
}

/* A value per rank (v, rank, mark: in rank order): bars up to 16 ranks, else a heatmap; the
 * distribution in words either way, the outliers named. */
static void rank_picture(FILE *f, const double *v, const int *rank, int *mark, int n, const char *unit, double floor) {
  if (n <= 0) return;
  double med = mark_outliers(v, n, mark, floor);
  int lo = 0, hi = 0, nm = 0;
  for (int i = 0; i < n; i++) { if (v[i] < v[lo]) lo = i; if (v[i] > v[hi]) hi = i; nm += mark[i] != 0; }
  fprintf(f, "<p class=\"dist\">%d ranks: lowest %.4g %s (rank %d), median %.4g %s, highest %.4g %s (rank %d)", n, v[lo],
          unit, rank[lo], med, unit, v[hi], unit, rank[hi]);
  if (nm) {
    fprintf(f, "; <span class=\"bad\">outlined in red:");
    for (int i = 0, k = 0; i < n && k < 8; i++)
      if (mark[i]) fprintf(f, "%s rank %d (%.4g %s)", k++ ? "," : "", rank[i], v[i], unit);
    fprintf(f, "</span>");
  } else fprintf(f, "; no outlier");
  fprintf(f, ".</p>\n");
  if (n <= 16) {
    const char *lab[16];
    char buf[16][24];
    for (int i = 0; i < n; i++) { snprintf(buf[i], sizeof buf[i], "rank %d", rank[i]); lab[i] = buf[i]; }
    ncs_svg_bars(f, lab, v, mark, n, unit);
  } else {
    ncs_svg_heatmap(f, v, rank, mark, n, unit);
  }
}

/* Files in rank order (ties, unknown ranks last: file order). */
static const struct ncs_jobdata *sort_J;
static int cmp_file_rank(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  int rx = sort_J->r[x].rank < 0 ? 1 << 30 : sort_J->r[x].rank, ry = sort_J->r[y].rank < 0 ? 1 << 30 : sort_J->r[y].rank;
  return rx != ry ? (rx < ry ? -1 : 1) : (x > y) - (x < y);
}
static int *files_by_rank(const struct ncs_jobdata *J) {
  int *o = malloc((size_t)(J->n ? J->n : 1) * sizeof *o);
  if (!o) return NULL;
  for (int i = 0; i < J->n; i++) o[i] = i;
  sort_J = J;
  qsort(o, (size_t)J->n, sizeof *o, cmp_file_rank);
  return o;
}

static void sec_summary(FILE *f, const struct ncs_jobdata *J) {
  int bad = 0;
  for (int i = 0; i < J->n; i++) bad += J->r[i].read_rc != 0 || J->r[i].truncated;
  sec_open(f, "summary", "Summary", 1);
  fprintf(f, "<p>%d trace file(s) on %d host(s); timing: %s; decoded in %.2f s.",
          J->n, J->hosts, J->gpu_timing ? "GPU (CUDA events)" : "host (no GPU times in the traces)", J->decode_s);
  if (bad) fprintf(f, " <span class=\"bad\">%d file(s) damaged or cut short: see Ranks.</span>", bad);
  fprintf(f, "</p><p class=\"note\">All ranks are put on one clock through each host's realtime/monotonic clock pairs, "
             "interpolated linearly between pairs (docs/CLOCKS.md). Within a host the error is at most %.3f us (pair "
             "uncertainty); between hosts it is bounded by how well their realtime clocks agree (NTP: typically 0.1-10 ms, "
             "PTP: about 1 us).</p>\n", J->clock_err_us);
  struct ncs_strag_host_offset off[16];
  int nh = ncs_strag_clock_check(J->strag, off, 16);
  if (nh) {
    fprintf(f, "<p class=\"note\">Clock check (GPU ends of sampled collectives, which finish together on every rank): "
               "residual offset per host after alignment:");
    for (int i = 0; i < nh; i++) {
      fprintf(f, " ");
      esc(f, off[i].host);
      fprintf(f, " %+.1f us%s", off[i].offset_us, i + 1 < nh ? ";" : ".");
    }
    fprintf(f, " Arrival differences between hosts below these are clock error.</p>\n");
  }
  sec_close(f);
}

static void sec_time_per_op(FILE *f, const struct ncs_jobdata *J) {
  double t[NCS_OP_LIMIT] = {0};
  for (int i = 0; i < J->nops; i++) if (J->ops[i].op < NCS_OP_LIMIT) t[J->ops[i].op] += J->ops[i].time_s;
  const char *lab[NCS_OP_LIMIT];
  double val[NCS_OP_LIMIT];
  int n = 0;
  for (int op = 0; op < NCS_OP_LIMIT; op++)
    if (t[op] > 0) { lab[n] = ncs_op_name((unsigned)op); val[n] = t[op]; n++; }
  sec_open(f, "time-per-op", "Time per operation", 1);
  fprintf(f, "<p class=\"note\">Sum over ranks of each "
             "operation's %s time.</p>\n", J->gpu_timing ? "GPU" : "host");
  if (n) ncs_svg_bars(f, lab, val, NULL, n, "s"); else fprintf(f, "<p>No collective or point-to-point calls.</p>");
  sec_close(f);
}

static void sec_busbw(FILE *f, const struct ncs_jobdata *J, const struct ncs_doctor *d) {
  sec_open(f, "busbw", "Bus bandwidth against message size", 1);
  fprintf(f, "<p class=\"note\">busbw as nccl-tests "
             "defines it (docs/REFERENCE-FIGURES.md), per operation and transport, all ranks together; dashed: the busbw "
             "a healthy large message reaches over the transport's link (the α-β reference of docs/REFERENCE-FIGURES.md; "
             "smaller messages are latency-bound and reach less).</p>\n");
  static const int classes[] = {NCS_TC_P2P, NCS_TC_NVLS, NCS_TC_SHM, NCS_TC_NET};
  struct ncs_link links[4];
  struct ncs_svg_series s[16];
  double xs[16][NCS_NBUCKETS], ys[16][NCS_NBUCKETS];
  char names[16][64];
  int ns = 0;
  unsigned seen = 0;
  for (int i = 0; i < J->nops && ns < 16; i++) {
    const struct ncs_opstat *o = &J->ops[i];
    if (ncs_op_bw(o->op) == NCS_BW_NONE) continue;
    char name[64];
    snprintf(name, sizeof name, "%s %s", ncs_op_name(o->op), o->transport);
    int k = 0;
    while (k < ns && strcmp(names[k], name)) k++;
    if (k == ns) { snprintf(names[ns], sizeof names[ns], "%s", name); s[ns].n = 0; ns++; }
    (void)k;
  }
  for (int k = 0; k < ns; k++) {
    for (int b = 0; b < NCS_NBUCKETS; b++) {
      double bb = 0, tt = 0;
      for (int i = 0; i < J->nops; i++) {
        const struct ncs_opstat *o = &J->ops[i];
        char name[64];
        snprintf(name, sizeof name, "%s %s", ncs_op_name(o->op) ? ncs_op_name(o->op) : "?", o->transport);
        if (o->bucket == b && !strcmp(name, names[k])) { bb += o->busbytes; tt += o->time_s; }
      }
      if (tt > 0) { xs[k][s[k].n] = b; ys[k][s[k].n] = bb / tt / 1e9; s[k].n++; }
    }
    s[k].name = names[k]; s[k].x = xs[k]; s[k].y = ys[k];
  }
  for (int i = 0; i < J->nops; i++) {
    const char *t = J->ops[i].transport;
    for (int e = 0; e < 4; e++)
      if (strstr(t, ncs_tclass_name(classes[e]))) seen |= 1u << e;
  }
  struct ncs_svg_ref ref[8];
  int nref = 0;
  for (int e = 0; e < 4; e++) {
    if (!(seen & (1u << e))) continue;
    ncs_headline_link_of(d, classes[e], &links[e]);
    ref[nref].name = ncs_tclass_name(classes[e]);
    ref[nref].y = links[e].beta_gbps;
    nref++;
  }
  if (ns) ncs_svg_lines(f, s, ns, ref, nref, "busbw GB/s");
  else fprintf(f, "<p>No data-moving calls.</p>");
  for (int e = 0; e < 4; e++)
    if (seen & (1u << e)) { fprintf(f, "<p class=\"note\">"); esc(f, links[e].why); fprintf(f, "</p>\n"); }
  fprintf(f, "<details><summary>the figures per operation, size and transport</summary><div class=\"scroll\"><table><tr><th>operation</th><th>size &ge;</th><th>transport</th><th>calls</th><th>time s</th><th>busbw GB/s</th></tr>\n");
  for (int i = 0; i < J->nops; i++) {
    const struct ncs_opstat *o = &J->ops[i];
    fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td class=\"l\">", ncs_op_name(o->op) ? ncs_op_name(o->op) : "?",
            o->bucket ? 1ull << o->bucket : 0ull);
    esc(f, o->transport);
    fprintf(f, "</td><td>%llu</td><td>%.6f</td><td>%.3f</td></tr>\n", (unsigned long long)o->calls, o->time_s,
            o->time_s > 0 ? o->busbytes / o->time_s / 1e9 : 0.0);
  }
  fprintf(f, "</table></div></details>");
  sec_close(f);
}

static void rank_label(char *b, size_t n, const struct ncs_jrank *r, int i) {
  if (r->rank >= 0 && r->held > 1 && r->rank_hi - r->rank + 1 == r->held) snprintf(b, n, "ranks %d-%d", r->rank, r->rank_hi);
  else if (r->rank >= 0 && r->held > 1) snprintf(b, n, "ranks %d..%d (%d)", r->rank, r->rank_hi, r->held);
  else if (r->rank >= 0) snprintf(b, n, "rank %d", r->rank);
  else snprintf(b, n, "file %d", i);
}

/* Communication share per rank (rank_share: one source with the Ranks table). */
static void sec_share(FILE *f, const struct ncs_html_page *p) {
  const struct ncs_jobdata *J = p->J;
  const struct ncs_doctor *d = p->doc;
  int n = J->n, *o = files_by_rank(J), *mark = calloc((size_t)n + 1, sizeof *mark), *rk = calloc((size_t)n + 1, sizeof *rk);
  double *v = calloc((size_t)n + 1, sizeof *v);
  sec_open(f, "comm-share", "Communication share per rank", 1);
  fprintf(f, "<p class=\"note\">Union of the operations' intervals over the window from the first to the last traced "
             "call (docs/METRICS.md)%s; the same figures as the Ranks table.</p>\n",
          d ? "" : "; without the doctor's facts (--no-doctor): the page's own union over the loader's window");
  if (o && mark && rk && v) {
    for (int k = 0; k < n; k++) { v[k] = 100.0 * rank_share(p, o[k], NULL, NULL); rk[k] = J->r[o[k]].rank; }
    rank_picture(f, v, rk, mark, n, "%", 1.0); /* a share within 1 point of the median is no outlier */
  }
  for (int k = 0; o && k < n; k++) { /* the share may be low: its union counted late intervals */
    int i = o[k];
    uint64_t late = 0, late_ns = 0;
    if (d && d->n == J->n) { late = d->f[i]->comm_late; late_ns = d->f[i]->comm_late_ns; }
    else if (p->comm_u) { late = p->comm_u[i].late; late_ns = p->comm_u[i].late_ns; }
    if (!late) continue;
    double comm;
    rank_share(p, i, &comm, NULL);
    fprintf(f, "<p class=\"bad\">rank %d: comm share may be low by up to %.6f s (comm s %.9f): %llu interval%s came "
               "after the union was committed past their start (docs/METRICS.md \"Communication time\")</p>\n",
            J->r[i].rank, (double)late_ns / 1e9, comm, (unsigned long long)late, late == 1 ? "" : "s");
  }
  sec_close(f);
  free(o); free(mark); free(rk); free(v);
}

/* A few steps of chosen ranks: the communication intervals of a few ranks over a short window
 * from the middle of the run, from what analysis/steps.h kept of every file during the read;
 * the last checkpoint at or before half the run is shown. */
#define STEP_ROWS 16

/* The rows of the steps picture: every file up to STEP_ROWS files; past that the files of the
 * slowest, the median and the fastest rank by mean arrival lateness (the straggler engine), and
 * the rank the headline names (named, -1 none); each row says why it is there. */
struct step_row { int file; char why[64]; };
static int add_row(struct step_row *row, int n, int file, const char *why) {
  for (int i = 0; i < n; i++)
    if (row[i].file == file) { /* one row, several reasons */
      size_t l = strlen(row[i].why);
      snprintf(row[i].why + l, sizeof row[i].why - l, ", %s", why);
      return n;
    }
  if (n >= STEP_ROWS || file < 0) return n;
  row[n].file = file;
  snprintf(row[n].why, sizeof row[n].why, "%s", why);
  return n + 1;
}
static int pick_rows(const struct ncs_jobdata *J, int named, struct step_row *row) {
  int n = 0;
  if (J->n <= STEP_ROWS) {
    for (int i = 0; i < J->n; i++) { row[n].file = i; row[n].why[0] = 0; n++; }
    return n;
  }
  const struct ncs_strag_rank *sr;
  int m = ncs_strag_ranks(J->strag, &sr);
  if (m > 0 && ncs_strag_collectives(J->strag)) {
    int lo = 0, hi = 0;
    double *t = malloc((size_t)m * sizeof *t);
    for (int i = 0; i < m; i++) {
      if (sr[i].mean_late_us < sr[lo].mean_late_us) lo = i;
      if (sr[i].mean_late_us > sr[hi].mean_late_us) hi = i;
      if (t) t[i] = sr[i].mean_late_us;
    }
    for (int i = 0; i < m && named >= 0; i++)
      if (sr[i].rank == named) { n = add_row(row, n, sr[i].file, "named in the headline"); break; }
    n = add_row(row, n, sr[hi].file, "slowest: latest mean arrival");
    if (t) {
      qsort(t, (size_t)m, sizeof *t, cmp_dbl);
      for (int i = 0; i < m; i++)
        if (sr[i].mean_late_us == t[m / 2]) { n = add_row(row, n, sr[i].file, "median arrival"); break; }
      free(t);
    }
    n = add_row(row, n, sr[lo].file, "fastest: earliest mean arrival");
    return n;
  }
  int *o = files_by_rank(J);
  if (!o) return 0;
  n = add_row(row, n, o[0], "lowest rank");
  n = add_row(row, n, o[J->n / 2], "middle rank");
  n = add_row(row, n, o[J->n - 1], "highest rank");
  free(o);
  return n;
}

static void sec_steps(FILE *f, const struct ncs_jobdata *J, const struct ncs_steps *sc, int named) {
  sec_open(f, "steps", J->n <= STEP_ROWS ? "A few steps per rank" : "A few steps: the slowest, the median and the fastest rank", 1);
  struct step_row row[STEP_ROWS];
  int rows = pick_rows(J, named, row);
  int64_t end = INT64_MAX;
  for (int i = 0; i < rows; i++) if (J->r[row[i].file].calls && J->r[row[i].file].t_last < end) end = J->r[row[i].file].t_last;
  int k = 0;
  while (k + 1 < NCS_STEP_CKPT && end != INT64_MAX && ncs_step_ckpt(k + 1) <= end / 2) k++;
  /* window: from the earliest captured call to where every rank that filled its share still has calls */
  int64_t t0 = INT64_MAX, t1 = INT64_MAX, tmax = INT64_MIN;
  int any = 0;
  for (int i = 0; i < rows; i++) {
    const struct ncs_step_file *sf = &sc->f[row[i].file];
    int n = sf->n[k];
    const struct ncs_step_span *p = sf->sp[k];
    for (int c = 0; c < n; c++) { if (p[c].s < t0) t0 = p[c].s; if (p[c].s + p[c].dur > tmax) tmax = p[c].s + p[c].dur; }
    if (n == NCS_STEP_CALLS && p[n - 1].s < t1) t1 = p[n - 1].s;
    any |= n > 0;
  }
  if (!any) { fprintf(f, "<p>No data-moving calls to draw.</p>"); sec_close(f); return; }
  if (t1 == INT64_MAX || t1 <= t0) t1 = tmax;
  if (t1 <= t0) t1 = t0 + 1;
  struct ncs_svg_lane lane[STEP_ROWS];
  double (*a)[NCS_STEP_CALLS] = calloc(STEP_ROWS, sizeof *a), (*b)[NCS_STEP_CALLS] = calloc(STEP_ROWS, sizeof *b);
  int (*kind)[NCS_STEP_CALLS] = calloc(STEP_ROWS, sizeof *kind);
  char label[STEP_ROWS][48];
  const char *kname[NCS_STEP_CALLS];
  uint32_t kop[NCS_STEP_CALLS];
  int nk = 0;
  if (!a || !b || !kind) { free(a); free(b); free(kind); fprintf(f, "<p>Out of memory.</p>"); sec_close(f); return; }
  for (int i = 0; i < rows; i++) {
    const struct ncs_step_file *sf = &sc->f[row[i].file];
    const struct ncs_step_span *p = sf->sp[k];
    rank_label(label[i], sizeof label[i], &J->r[row[i].file], row[i].file);
    lane[i].label = label[i]; lane[i].t0 = a[i]; lane[i].t1 = b[i]; lane[i].kind = kind[i]; lane[i].n = 0;
    for (int c = 0; c < sf->n[k]; c++) {
      if (p[c].s > t1) continue;
      int q = 0;
      while (q < nk && kop[q] != p[c].op) q++;
      if (q == nk) { kop[nk] = p[c].op; kname[nk] = ncs_op_name(p[c].op) ? ncs_op_name(p[c].op) : "?"; nk++; }
      a[i][lane[i].n] = (double)p[c].s; b[i][lane[i].n] = (double)(p[c].s + p[c].dur); kind[i][lane[i].n] = q; lane[i].n++;
    }
  }
  fprintf(f, "<p class=\"note\">NCCL calls moving data, per rank, %.3f ms from %.3f ms into the job (job clock; %s "
             "intervals): bars are communication, gaps are the rank computing or idle. A bar that starts late on one "
             "rank is a straggler; the others wait for it.</p>\n",
          (double)(t1 - t0) / 1e6, (double)t0 / 1e6, J->gpu_timing ? "GPU" : "host");
  ncs_svg_lanes(f, lane, rows, (double)t0, (double)t1, kname, nk);
  if (rows < J->n) {
    fprintf(f, "<p class=\"note\">%d of %d trace files shown:", rows, J->n);
    for (int i = 0; i < rows; i++) fprintf(f, "%s %s (%s)", i ? ";" : "", label[i], row[i].why);
    fprintf(f, ".</p>\n");
  }
  sec_close(f);
  free(a); free(b); free(kind);
}

static void sec_skew(FILE *f, const struct ncs_jobdata *J, int named) {
  const struct ncs_strag_rank *sr;
  int n = ncs_strag_ranks(J->strag, &sr);
  sec_open(f, "skew", "Arrival skew per rank", 1);
  fprintf(f, "<p class=\"note\">Mean time each rank reached "
             "collectives after the first rank did (its GPU's start of the collective where GPU-timed, else its "
             "host's entry; job clock). %llu collectives lined up; skew mean %.1f us, max %.1f us.</p>\n",
          (unsigned long long)ncs_strag_collectives(J->strag), ncs_strag_skew_mean_us(J->strag), ncs_strag_skew_max_us(J->strag));
  int *idx = malloc((size_t)n * sizeof *idx + 1), *rk = calloc((size_t)n + 1, sizeof *rk), *mark = calloc((size_t)n + 1, sizeof *mark);
  double *v = calloc((size_t)n + 1, sizeof *v);
  if (idx && rk && mark && v) {
    /* rows of the straggler engine (one per rank) in rank order; the rank the headline names marked */
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++) /* by (rank, file): already nearly sorted for most jobs */
      for (int j = i; j > 0 && (sr[idx[j]].rank < sr[idx[j - 1]].rank ||
                                (sr[idx[j]].rank == sr[idx[j - 1]].rank && sr[idx[j]].file < sr[idx[j - 1]].file)); j--) {
        int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
      }
    for (int k = 0; k < n; k++) {
      const struct ncs_strag_rank *s = &sr[idx[k]];
      rk[k] = s->rank; v[k] = s->mean_late_us; mark[k] = named >= 0 && s->rank == named;
    }
    if (n && ncs_strag_collectives(J->strag)) rank_picture(f, v, rk, mark, n, "us", 1.0); /* 1 us: below is noise */
    else fprintf(f, "<p>No collective was entered by every rank of its communicator.</p>");
  }
  sec_close(f);
  free(idx); free(rk); free(mark); free(v);
}

static void sec_stragglers(FILE *f, const struct ncs_jobdata *J) {
  const struct ncs_strag_rank *sr;
  int n = ncs_strag_ranks(J->strag, &sr);
  sec_open(f, "stragglers", "Who is slow", 1);
  fprintf(f, "<div class=\"scroll\"><table><tr><th>rank</th><th>host</th><th>pid</th>"
             "<th>last</th><th>last share</th><th>wait caused s</th><th>mean late us</th></tr>\n");
  for (int i = 0; i < n && i < 16; i++) {
    fprintf(f, "<tr><td>%d</td><td class=\"l\">", sr[i].rank);
    esc(f, sr[i].host);
    fprintf(f, "</td><td>%u</td><td>%llu</td><td>%.1f%%</td><td>%.6f</td><td>%.1f</td></tr>\n", sr[i].pid,
            (unsigned long long)sr[i].last_count, sr[i].arrivals ? 100.0 * (double)sr[i].last_count / (double)sr[i].arrivals : 0.0,
            sr[i].wait_caused_s, sr[i].mean_late_us);
  }
  fprintf(f, "</table></div>");
  if (n > 16) fprintf(f, "<p class=\"note\">The 16 slowest of %d ranks.</p>", n);
  sec_close(f);
}

static void sec_findings(FILE *f, const struct ncs_jobdata *J) {
  sec_open(f, "findings", "Findings", 1);
  /* the straggler engine's mismatches and hangs, as text (escaped through a memory stream) */
  char *txt = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&txt, &len);
  int any = 0;
  if (m) {
    ncs_strag_print_text(ncs_strag_result(J->strag), m, 0, 1, NULL, 0);
    fclose(m);
    char *line = txt;
    while (line && *line) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = 0;
      if (strstr(line, "MISMATCH") || strstr(line, "MISSING") || strstr(line, "entered by only")) {
        fprintf(f, "<p class=\"bad\">");
        esc(f, line);
        fprintf(f, "</p>\n");
        any = 1;
      }
      line = nl ? nl + 1 : NULL;
    }
    free(txt);
  }
  for (int i = 0; i < J->n; i++) {
    const struct ncs_jrank *r = &J->r[i];
    if (r->tclass_mask & (1u << NCS_TC_NET) && J->hosts == 1) {
      fprintf(f, "<p class=\"bad\">rank %d uses the network transport on a single host: look at NCCL_P2P_DISABLE / "
                 "NCCL_SHM_DISABLE / NCCL_P2P_LEVEL and the container's IPC settings.</p>\n", r->rank);
      any = 1;
      break;
    }
  }
  if (!any) fprintf(f, "<p class=\"ok\">No mismatched or missing collectives.</p>\n");
  sec_close(f);
}

/* The call sites (analysis/callsites.h): the most exposed first, at most HTML_CS_ROWS rows, the
 * rest counted in one line; the headline names the first. */
#define HTML_CS_ROWS 10
static void sec_callsites(FILE *f, const struct ncs_callsites *cs, const struct ncs_jobdata *J) {
  const struct ncs_csrow *r;
  size_t n = ncs_callsites_rows(cs, &r);
  sec_open(f, "callsites", "Call sites", 1);
  if (!n) {
    fprintf(f, "<p class=\"note\">No call sites in the traces: %s.</p>", strcmp(ncs_callsites_missing(cs), "not recorded")
               ? "the job ran with NCCLSCOPE_CALLSITE_DEPTH=0 (leave it unset to record them)"
               : "not recorded (static NCCL seen through the profiler plugin, or an older shim)");
    sec_close(f);
    return;
  }
  fprintf(f, "<p class=\"note\">The line of the job that issued each NCCL call, all ranks together, most exposed "
             "first: exposed ms is the part of its GPU time not hidden under compute (each call's GPU time times "
             "its rank's exposed share of that operation and size, from kernel activity: a model; - unknown).</p>\n"
             "<div class=\"scroll\"><table><tr><th>site</th><th>operation</th><th>calls</th><th>ranks</th>"
             "<th>exposed ms</th><th>GPU ms</th><th>host ms</th><th>slowest call</th></tr>\n");
  size_t shown = n < HTML_CS_ROWS ? n : HTML_CS_ROWS;
  for (size_t i = 0; i < shown; i++) {
    fprintf(f, "<tr><td class=\"l\"><code>");
    esc(f, r[i].where);
    fprintf(f, "</code></td><td>%s</td><td>%llu</td><td>%d</td><td%s>", r[i].mixed ? "(several)" : ncs_op_name(r[i].op),
            (unsigned long long)r[i].calls, r[i].ranks, i == 0 && r[i].exp_ns ? " class=\"bad\"" : "");
    if (r[i].exp_gpu_ns) fprintf(f, "%.3f", r[i].exp_ns / 1e6); else fprintf(f, "-");
    fprintf(f, "</td><td>%.3f</td><td>%.3f</td><td class=\"l\">", r[i].gpu_ns / 1e6, r[i].host_ns / 1e6);
    int sf = r[i].slow_file;
    if (sf >= 0 && sf < J->n) fprintf(f, "rank %d, ", J->r[sf].rank);
    fprintf(f, "%.3f ms %s", r[i].slow.ns / 1e6, r[i].slow.gpu ? "on the GPU" : "on the host");
    if (r[i].slow_comm[0]) { fprintf(f, " on "); esc(f, r[i].slow_comm); }
    fprintf(f, "</td></tr>\n");
  }
  fprintf(f, "</table></div>");
  if (shown < n)
    fprintf(f, "<p class=\"note\">%zu more call sites, less exposed: <code>ncclscope report --callsites --detail</code> "
               "lists every one.</p>", n - shown);
  sec_close(f);
}

/* The doctor's verdicts (analysis/doctor.h, the hang checks of analysis/hang.h first) on the
 * facts gathered in the same read of the files as everything else; none when a file could not
 * be read (as `ncclscope doctor` exits 4). */
static void sec_doctor(FILE *f, struct ncs_doctor *d, struct ncs_hang *hang) {
  sec_open(f, "doctor", "Doctor's verdicts", 1);
  int unreadable = 0;
  for (int i = 0; i < d->n; i++) unreadable |= d->f[i]->read_rc == 2;
  if (unreadable) {
    fprintf(f, "<p class=\"note\">The doctor could not run on these traces (exit 4).</p>");
  } else {
    /* one line per verdict, its evidence and next step folded under it: a verdict with an
     * evidence line per rank stays one line until opened */
    int problems = ncs_doctor_problems(d);
    fprintf(f, "<p class=\"%s\">%s %d problem%s, %d note%s (%s).</p>\n", problems ? "bad" : "ok",
            problems ? "Problems found:" : "Healthy:", problems, problems == 1 ? "" : "s", d->nv - problems,
            d->nv - problems == 1 ? "" : "s", d->nv ? "open one for its evidence and next step" : "no check fired");
    for (int i = 0; i < d->nv; i++) {
      const struct ncs_verdict *v = &d->v[i];
      fprintf(f, "<details class=\"verdict\"><summary><span class=\"%s\">%s</span> ", v->problem ? "bad" : "note",
              v->problem ? "PROBLEM" : "note");
      esc(f, v->id);
      fprintf(f, ": ");
      esc(f, v->title);
      fprintf(f, " (%d evidence line%s)</summary><pre>", v->nevidence + v->more, v->nevidence + v->more == 1 ? "" : "s");
      for (int k = 0; k < v->nevidence; k++) { esc(f, v->evidence[k]); fprintf(f, "\n"); }
      if (v->more) fprintf(f, "... and %d more\n", v->more);
      fprintf(f, "next: ");
      esc(f, v->next);
      fprintf(f, "</pre></details>\n");
    }
    fprintf(f, "<details><summary>the whole text of <code>ncclscope doctor</code></summary>");
    ncs_doctor_print_html(d, f);
    fprintf(f, "</details>");
  }
  sec_close(f);
}

/* Where the step time goes and what fixing each finding would give (analysis/whatif.h, the
 * figures of report's "What the problems cost"): one bar of the step's parts (the median rank's
 * per part), one bar per finding with the step if fixed. Never a bar per rank. */
static void split_div(FILE *f, const char *cls, const char *name, double s, double step) {
  double pct = step > 0 ? 100.0 * s / step : 0;
  if (!(pct >= 0.05)) return; /* NaN too */
  fprintf(f, "<div class=\"%s\" style=\"width:%.2f%%\" title=\"%s %.3f ms\">%s</div>", cls, pct, name, s * 1e3,
          pct >= 12 ? name : "");
}
static void sec_cost(FILE *f, const struct ncs_whatif *w) {
  sec_open(f, "cost", "Where the step time goes, and what fixing each finding would give", 1);
  if (!w || !w->have) {
    fprintf(f, "<p class=\"note\">Not computed: ");
    esc(f, w && w->why_not[0] ? w->why_not : "no steps on the GPU");
    fprintf(f, ".</p>");
    sec_close(f);
    return;
  }
  const struct ncs_whatif_split *p = &w->split;
  double comm = 0;
  for (int k = 0; k < NCS_WHATIF_KOPS; k++) comm += p->kop[k] ? p->transfer[k] : 0;
  fprintf(f, "<p>Step <b>%.3f ms</b> on the GPU (median rank, %d step boundaries): compute %.3f ms, exposed communication "
             "%.3f ms, waiting for other ranks %.3f ms, idle %.3f ms (each the median over ranks).</p>\n",
          w->step_s * 1e3, w->steps, p->compute * 1e3, comm * 1e3, p->wait * 1e3, p->idle * 1e3);
  fprintf(f, "<div class=\"split\">");
  split_div(f, "c-compute", "compute", p->compute, w->step_s);
  for (int k = 0; k < NCS_WHATIF_KOPS; k++)
    if (p->kop[k]) split_div(f, "c-comm", p->kop[k], p->transfer[k], w->step_s);
  split_div(f, "c-wait", "waiting", p->wait, w->step_s);
  split_div(f, "c-idle", "idle", p->idle, w->step_s);
  split_div(f, "c-rest", "rest", p->rest, w->step_s);
  fprintf(f, "</div>\n");
  int any = 0;
  for (int i = 0; i < w->n; i++) {
    const struct ncs_whatif_item *it = &w->it[i];
    if (!isfinite(it->step_s_if_fixed) || !(it->step_s > 0)) continue;
    double pct = 100.0 * it->step_s_if_fixed / it->step_s;
    fprintf(f, "<div class=\"fix\" data-id=\"");
    esc(f, it->id);
    fprintf(f, "\"><b>");
    esc(f, it->id);
    fprintf(f, "</b> ");
    esc(f, it->title);
    fprintf(f, ": step %.3f -> %.3f ms (%+.3f ms per step, %+.0f%%)<div class=\"bar\"><div style=\"width:%.2f%%\"></div></div></div>\n",
            it->step_s * 1e3, it->step_s_if_fixed * 1e3, -it->saved_s_per_step * 1e3, -100.0 * it->saved_s_per_step / it->step_s,
            pct > 100 ? 100 : pct);
    any = 1;
  }
  if (!any) fprintf(f, "<p class=\"note\">Nothing found that costs 1%% of the step or more.</p>");
  fprintf(f, "<p class=\"note\">Green: the step if that finding were fixed, against the step now (the full bar). The model "
             "and its assumptions: docs/METRICS.md \"What fixing it would give\"; the same figures as <code>ncclscope report</code>'s "
             "\"What the problems cost\".</p>");
  sec_close(f);
}

/* Transports: the classes every rank's connection lines named (the headline's source), how many
 * ranks used each, then the rank x peer matrix of the largest communicator when the loader kept
 * its rows (communicators of up to 64 ranks: jobload.h). */
static void sec_transports(FILE *f, const struct ncs_jobdata *J) {
  static const int classes[] = {NCS_TC_P2P, NCS_TC_NVLS, NCS_TC_SHM, NCS_TC_NET, NCS_TC_COLLNET};
  sec_open(f, "transports", "Transports", 1);
  unsigned all = 0;
  for (int i = 0; i < J->n; i++) all |= J->r[i].tclass_mask;
  if (!all) {
    fprintf(f, "<p>No transport lines in the traces (NCCL prints them with NCCL_DEBUG=INFO; the shim captures them).</p>");
    sec_close(f);
    return;
  }
  fprintf(f, "<p>NCCL's connection lines name:");
  for (int e = 0, k = 0; e < 5; e++) {
    if (!(all & (1u << classes[e]))) continue;
    int used = 0;
    for (int i = 0; i < J->n; i++) used += (J->r[i].tclass_mask >> classes[e]) & 1;
    fprintf(f, "%s <span class=\"%s\">%s</span> (from %d of %d trace files)", k++ ? ";" : "", ncs_tclass_name(classes[e]),
            ncs_tclass_name(classes[e]), used, J->n);
  }
  fprintf(f, ".</p>\n");
  int n = 0;
  for (int i = 0; i < J->n; i++) if (J->r[i].tmat_n > n) n = J->r[i].tmat_n;
  int have = 0;
  for (int i = 0; i < J->n; i++) for (int k = 0; J->r[i].tmat && k < J->r[i].tmat_n; k++) have |= J->r[i].tmat[k] != 0;
  if (!n || !have) {
    fprintf(f, "<p class=\"note\">No rank x peer matrix: it is kept for communicators of up to 64 ranks.</p>");
    sec_close(f);
    return;
  }
  fprintf(f, "<details%s><summary>Largest communicator: the transport NCCL chose from each rank (row) to each peer "
             "(column)</summary><div class=\"scroll\"><table><tr><th></th>", n <= 16 ? " open" : "");
  for (int c = 0; c < n; c++) fprintf(f, "<th>%d</th>", c);
  fprintf(f, "</tr>\n");
  for (int row = 0; row < n; row++) {
    const struct ncs_jrank *r = NULL;
    for (int i = 0; i < J->n && !r; i++) if (J->r[i].tmat_n == n && J->r[i].rank == row) r = &J->r[i];
    fprintf(f, "<tr><th>%d</th>", row);
    for (int c = 0; c < n; c++) {
      int tc = r && r->tmat ? r->tmat[c] : 0;
      if (row == c) fprintf(f, "<td>X</td>");
      else if (tc) fprintf(f, "<td class=\"%s\">%s</td>", ncs_tclass_name(tc), ncs_tclass_name(tc));
      else fprintf(f, "<td></td>");
    }
    fprintf(f, "</tr>\n");
  }
  fprintf(f, "</table></div></details>");
  sec_close(f);
}

static void sec_topology(FILE *f, const struct ncs_jobdata *J) {
  sec_open(f, "topology", "Topology", J->hosts <= 2);
  int shown = 0;
  for (int i = 0; i < J->n && shown < 16; i++) {
    const struct ncs_topo *t = J->r[i].topo;
    if (!t || !t->ngpus) continue;
    int dup = 0;
    for (int k = 0; k < i && !dup; k++) dup = J->r[k].topo && !strcmp(J->r[k].host, J->r[i].host);
    if (dup) continue;
    fprintf(f, "<h3>");
    esc(f, J->r[i].host);
    fprintf(f, "</h3><div class=\"scroll\"><table><tr><th></th>");
    for (int c = 0; c < t->ngpus; c++) fprintf(f, "<th>GPU%d</th>", c);
    fprintf(f, "</tr>\n");
    for (int a = 0; a < t->ngpus; a++) {
      fprintf(f, "<tr><th>GPU%d</th>", a);
      for (int b = 0; b < t->ngpus; b++) {
        char cell[32];
        fprintf(f, "<td>");
        esc(f, ncs_topo_cell(t, a, b, cell, sizeof cell));
        fprintf(f, "</td>");
      }
      fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table></div>\n");
    shown++;
  }
  if (!shown) fprintf(f, "<p>No GPU topology in the traces (recorded by the shim through NVML when present).</p>\n");
  sec_close(f);
}

/* One row per trace file, in rank order; the share and its seconds from rank_share (the chart's
 * source). Closed past 16 files. */
static void sec_ranks(FILE *f, const struct ncs_html_page *p) {
  const struct ncs_jobdata *J = p->J;
  sec_open(f, "ranks", "Ranks", J->n <= 16);
  fprintf(f, "<div class=\"scroll\"><table><tr><th>rank</th><th>host</th><th>pid</th><th>NCCL</th>"
             "<th>calls</th><th>window s</th><th>comm s</th><th>comm share</th><th>clock drift ppm</th><th>clock pairs</th><th>state</th>"
             "<th>command</th></tr>\n");
  int *o = files_by_rank(J);
  for (int k = 0; o && k < J->n; k++) {
    int i = o[k];
    const struct ncs_jrank *r = &J->r[i];
    double comm, win, share = rank_share(p, i, &comm, &win);
    fprintf(f, "<tr><td>%d</td><td class=\"l\">", r->rank);
    esc(f, r->host);
    fprintf(f, "</td><td>%u</td><td>", r->pid);
    char vs[24];
    esc(f, r->nccl_version[0] ? ncs_rule_nccl_version(atoi(r->nccl_version), vs, sizeof vs) : "");
    fprintf(f, "</td><td>%llu</td><td>%.3f</td><td>%.3f</td><td>%.4g%%</td><td>%.2f</td><td>%llu</td><td class=\"l\">",
            (unsigned long long)r->calls, win, comm, 100 * share, r->clock_drift_ppm, (unsigned long long)r->clock_pairs);
    if (r->read_rc == 2) { fprintf(f, "<span class=\"bad\">unreadable: "); esc(f, r->error); fprintf(f, "</span>"); }
    else if (r->read_rc == 1) { fprintf(f, "<span class=\"bad\">damaged: "); esc(f, r->error); fprintf(f, "</span>"); }
    else if (r->truncated) fprintf(f, "<span class=\"bad\">cut short (no final chunk)</span>");
    else fprintf(f, "ok");
    if (r->dropped) fprintf(f, " (%llu records dropped)", (unsigned long long)r->dropped);
    fprintf(f, "</td><td class=\"l\">");
    esc(f, r->cmdline);
    fprintf(f, "</td></tr>\n");
  }
  free(o);
  fprintf(f, "</table></div>");
  sec_close(f);
}

/* A bounded trace (NCCLSCOPE_KEEP): which figures of the page are the whole run's (this
 * section's table, from the aggregates) and which the last window's (every other section). */
static void sec_window(FILE *f, const struct ncs_window_sum *w) {
  char a[48], b[48], k[64];
  ncs_window_utc(w->t0_utc, a, sizeof a);
  ncs_window_utc(w->t1_utc, b, sizeof b);
  ncs_window_keep_text(w, k, sizeof k);
  sec_open(f, "window", "Bounded trace: whole run and last window", 1);
  fprintf(f, "<p class=\"bad\">Bounded trace (NCCLSCOPE_KEEP: %s; %d of %d files). <b>Last window only</b>: every "
             "figure on this page outside this section, from the headline to the ranks, is of the last window, "
             "<b>%s to %s</b>, %llu calls. <b>Whole run</b>: the table below, from the aggregates the trace keeps for "
             "every call, %llu calls (%llu before the window, %llu in it).</p>\n",
          k, w->files, w->nfiles, a, b, (unsigned long long)w->win_calls, (unsigned long long)(w->agg_calls + w->win_calls),
          (unsigned long long)w->agg_calls, (unsigned long long)w->win_calls);
  fprintf(f, "<div class=\"scroll\"><table id=\"whole-run\"><tr><th>operation</th><th>size</th><th>calls</th><th>bytes</th>"
             "<th>GPU time s</th><th>busbw GB/s</th></tr>\n");
  for (int i = 0; i < w->n; i++) {
    const struct ncs_window_row *r = &w->r[i];
    char sz[24];
    ncs_window_size_text(r->bclass, sz, sizeof sz);
    fprintf(f, "<tr><td>%s</td><td>%s</td><td>%llu</td><td>%llu</td><td>%.6f</td>", ncs_op_name(r->op), sz,
            (unsigned long long)r->calls, (unsigned long long)r->bytes, r->gpu_ns / 1e9);
    if (r->gpu_ns) fprintf(f, "<td>%.2f</td></tr>\n", r->busbytes / (r->gpu_ns / 1e9) / 1e9);
    else fprintf(f, "<td>-</td></tr>\n");
  }
  fprintf(f, "</table></div>\n");
  if (w->other_calls)
    fprintf(f, "<p class=\"note\">Other calls (no bandwidth: group, communicator, registration): %llu.</p>\n",
            (unsigned long long)w->other_calls);
  if (w->kact_files)
    fprintf(f, "<p id=\"whole-run-gpu\">Whole run, from kernel activity (%d of %d bounded files): GPU communication "
               "<b>%.6f s</b> (%.6f s of it before the window), exposed <b>%.6f s</b>.</p>\n",
            w->kact_files, w->files, w->gpu_comm_ns / 1e9, w->gpu_comm_before_ns / 1e9, w->gpu_exposed_ns / 1e9);
  else
    fprintf(f, "<p id=\"whole-run-gpu\" class=\"note\">Whole run: GPU communication and exposed time unknown (no file "
               "recorded kernel activity for the whole run).</p>\n");
  sec_close(f);
}

int ncs_html_write(FILE *f, const struct ncs_html_page *p) {
  const struct ncs_jobdata *J = p->J;
  struct ncs_doctor *ran = p->doctor_ran ? p->doc : NULL;
  int named = p->h ? p->h->slowest_rank : -1; /* the rank the headline names as slowest */
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
             "<title>ncclscope report</title><style>%s</style></head><body>\n<h1>ncclscope: the whole job</h1>\n", CSS);
  if (p->window && p->window->files) sec_window(f, p->window);
  if (p->h) ncs_headline_print_html(p->h, f);
  sec_cost(f, p->cost);
  sec_summary(f, J);
  sec_time_per_op(f, J);
  sec_busbw(f, J, ran);
  sec_share(f, p);
  if (p->steps && p->steps->f) sec_steps(f, J, p->steps, named);
  fprintf(f, "<details class=\"gpu\"%s><summary>GPU streams of the first %d trace files</summary>\n", J->n <= 16 ? " open" : "",
          J->n < NCS_GPULANES_ROWS ? J->n : NCS_GPULANES_ROWS);
  ncs_gpulanes_html(f, p->lanes, J);
  fprintf(f, "</details>\n");
  sec_skew(f, J, named);
  sec_stragglers(f, J);
  sec_findings(f, J);
  if (p->sites) sec_callsites(f, p->sites, J);
  if (p->doc) sec_doctor(f, p->doc, p->hang);
  else { sec_open(f, "doctor", "Doctor's verdicts", 1); fprintf(f, "<p class=\"note\">Not run (--no-doctor).</p>"); sec_close(f); }
  sec_transports(f, J);
  sec_topology(f, J);
  sec_ranks(f, p);
  fprintf(f, "<footer class=\"note\">Generated by ncclscope html.</footer></body></html>\n");
  return ferror(f) ? -1 : 0;
}
