/* svg.c — inline SVG charts (contract in svg.h). */
#include "render/svg.h"

#include <math.h>
#include <string.h>

#include "base/json.h"

static const char *const PALETTE[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
#define NPAL (sizeof PALETTE / sizeof PALETTE[0])

static void esc(FILE *f, const char *s) { if (s) ncs_html_escape(f, s, strlen(s)); }

void ncs_svg_bars(FILE *f, const char *const *label, const double *value, const int *mark, int n,
                  const char *unit) {
  const int W = 760, LW = 220, BH = 18, GAP = 4;
  double max = 0;
  for (int i = 0; i < n; i++) if (isfinite(value[i]) && value[i] > max) max = value[i];
  int H = n * (BH + GAP) + 10;
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
  for (int i = 0; i < n; i++) {
    double v = isfinite(value[i]) && value[i] > 0 ? value[i] : 0;
    int y = 5 + i * (BH + GAP);
    double w = max > 0 ? v / max * (W - LW - 120) : 0;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"lbl\">", LW - 6, y + BH - 5);
    esc(f, label[i]);
    fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", LW, y, w < 1 && v > 0 ? 1 : w,
            BH, mark && mark[i] ? "#d62728" : "#1f77b4");
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"val\">%.4g ", LW + w + 4, y + BH - 5, v);
    esc(f, unit);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
}

static void size_label(char *b, size_t n, double lg) {
  static const char *u[] = {"B", "K", "M", "G", "T"};
  int e = (int)lg, k = e / 10;
  if (k > 4) k = 4;
  snprintf(b, n, "%d%s", 1 << (e - 10 * k), u[k]);
}

/* A reference line is drawn when it lies within this factor of the data's range; otherwise it
 * is named in a note above the plot ("off the scale") and never stretches the axis. */
#define REF_NEAR 3.0

void ncs_svg_lines(FILE *f, const struct ncs_svg_series *s, int ns, const struct ncs_svg_ref *ref,
                   int nref, const char *yunit) {
  const int W = 760, L = 60, R = 190, B = 40;
  double xmin = 1e9, xmax = -1e9, ymin = INFINITY, ymax = 0;
  for (int k = 0; k < ns; k++)
    for (int i = 0; i < s[k].n; i++) {
      if (s[k].x[i] < xmin) xmin = s[k].x[i];
      if (s[k].x[i] > xmax) xmax = s[k].x[i];
      if (isfinite(s[k].y[i]) && s[k].y[i] > 0) {
        if (s[k].y[i] > ymax) ymax = s[k].y[i];
        if (s[k].y[i] < ymin) ymin = s[k].y[i];
      }
    }
  if (ymax <= 0) { ymin = 0.1; ymax = 1; }
  /* which references are near the data: those are drawn and widen the range a little */
  int near[16], noff = 0;
  double dlo = ymin, dhi = ymax;
  for (int k = 0; k < nref && k < 16; k++) {
    near[k] = ref[k].y > 0 && ref[k].y <= dhi * REF_NEAR && ref[k].y >= dlo / REF_NEAR;
    if (near[k]) { if (ref[k].y > ymax) ymax = ref[k].y; if (ref[k].y < ymin) ymin = ref[k].y; }
    else noff++;
  }
  if (xmin > xmax) { xmin = 0; xmax = 20; }
  if (xmax - xmin < 2) { xmin -= 1; xmax += 1; }
  xmin -= 0.5; xmax += 0.5;
  /* log10 y range: at least a factor of 4, padded by 10% of the span on each side */
  double lo = log10(ymin), hi = log10(ymax);
  if (hi - lo < log10(4.0)) { double c = (hi + lo) / 2; lo = c - log10(2.0); hi = c + log10(2.0); }
  double pad = (hi - lo) * 0.1;
  lo -= pad; hi += pad;
  const int T = 15 + 14 * noff, H = 300 + T + B;
  double pw = W - L - R, ph = H - T - B;
#define PX(x) (L + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (T + ph - (log10(y) - lo) / (hi - lo) * ph)
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
  fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#999\"/>\n", L, T, pw, ph);
  /* y grid: 1-2-5 per decade when the range is short, decades only when it is long */
  static const double STEP[] = {1, 2, 5};
  int dense = hi - lo < 2.5;
  for (int e = (int)floor(lo); e <= (int)ceil(hi); e++)
    for (int m = 0; m < 3; m++) {
      if (m && !dense) continue;
      double y = STEP[m] * pow(10, e), ly = log10(y);
      if (ly < lo || ly > hi) continue;
      fprintf(f, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"val\">%g</text>\n",
              L, L + pw, PY(y), PY(y), L - 4, PY(y) + 4, y);
    }
  for (int e = (int)ceil(xmin); e <= (int)floor(xmax); e++) {
    if ((e % 2) && xmax - xmin > 12) continue;
    char b[16];
    size_label(b, sizeof b, e);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"val\">%s</text>\n", PX(e), T + (int)ph + 16, b);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"val\">x: message size S (bytes, log2 scale); y: ", L, H - 6);
  esc(f, yunit);
  fprintf(f, " (log scale)</text>\n");
  int row = 0;
  for (int k = 0; k < nref && k < 16; k++) {
    if (!near[k]) { /* named above the plot, pointing up: it would flatten the data */
      fprintf(f, "<text class=\"val offscale\" x=\"%d\" y=\"%d\">&#8593; expected ", L + 4, 12 + 14 * row++);
      esc(f, ref[k].name);
      fprintf(f, " ~%.3g ", ref[k].y);
      esc(f, yunit);
      fprintf(f, ", off the scale</text>\n");
      continue;
    }
    fprintf(f, "<line class=\"ref\" x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>", L, L + pw,
            PY(ref[k].y), PY(ref[k].y));
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" class=\"val\">expected ", L + pw - 4, PY(ref[k].y) - 3);
    esc(f, ref[k].name);
    fprintf(f, " %.3g</text>\n", ref[k].y);
  }
  /* the legend: its own column right of the plot, one row per series */
  for (int k = 0; k < ns; k++) {
    const char *col = PALETTE[k % NPAL];
    if (s[k].n > 1) {
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
      for (int i = 0; i < s[k].n; i++)
        if (isfinite(s[k].y[i]) && s[k].y[i] > 0) fprintf(f, "%.1f,%.1f ", PX(s[k].x[i]), PY(s[k].y[i]));
      fprintf(f, "\"/>\n");
    }
    for (int i = 0; i < s[k].n; i++)
      if (isfinite(s[k].y[i]) && s[k].y[i] > 0)
        fprintf(f, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", PX(s[k].x[i]), PY(s[k].y[i]), col);
    int ly = T + 12 + 16 * k;
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>", L + pw + 8, L + pw + 22,
            ly - 4, ly - 4, col);
    fprintf(f, "<text class=\"legend lbl\" x=\"%.0f\" y=\"%d\" fill=\"%s\">", L + pw + 26, ly, col);
    esc(f, s[k].name);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
}

void ncs_svg_lanes(FILE *f, const struct ncs_svg_lane *lane, int nl, double t0, double t1,
                   const char *const *kind, int nkind) {
  const int W = 760, RH = 14, GAP = 4, T = 6, B = 44;
  int LW = 70; /* the label column: wider for long labels, at most 200 px */
  for (int i = 0; i < nl; i++) {
    int w = 10 + (int)(6.5 * (double)(lane[i].label ? strlen(lane[i].label) : 0));
    if (w > LW) LW = w < 200 ? w : 200;
  }
  int H = T + nl * (RH + GAP) + B;
  double pw = W - LW - 10, span = t1 > t0 ? t1 - t0 : 1;
#define TX(t) (LW + ((t) - t0) / span * pw)
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
  for (int i = 0; i < nl; i++) {
    int y = T + i * (RH + GAP);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"lbl\">", LW - 6, y + RH - 3);
    esc(f, lane[i].label);
    fprintf(f, "</text><rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"#f3f3f3\"/>", LW, y, pw, RH);
    for (int k = 0; k < lane[i].n; k++) {
      double a = lane[i].t0[k] < t0 ? t0 : lane[i].t0[k], b = lane[i].t1[k] > t1 ? t1 : lane[i].t1[k];
      if (b < a || a > t1 || b < t0) continue;
      double w = TX(b) - TX(a);
      fprintf(f, "<rect class=\"call\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", TX(a), y,
              w < 0.5 ? 0.5 : w, RH, PALETTE[(unsigned)lane[i].kind[k] % NPAL]);
    }
    fprintf(f, "\n");
  }
  int ya = T + nl * (RH + GAP);
  for (int g = 0; g <= 4; g++) {
    double t = t0 + span * g / 4;
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" class=\"val\">%.3f ms</text>\n",
            TX(t), TX(t), ya, ya + 4, TX(t), ya + 15, g == 0 ? "start" : g == 4 ? "end" : "middle", t / 1e6);
  }
  double x = LW;
  for (int k = 0; k < nkind; k++) {
    fprintf(f, "<rect x=\"%.0f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text class=\"lbl\" x=\"%.0f\" y=\"%d\">", x, ya + 24,
            PALETTE[(unsigned)k % NPAL], x + 14, ya + 33);
    esc(f, kind[k]);
    fprintf(f, "</text>");
    x += 24 + 7.0 * (double)strlen(kind[k]);
  }
  fprintf(f, "\n</svg>\n");
#undef TX
}

/* sequential scale: t in [0,1] from a light to a dark blue (one meaning: more of the value) */
static void shade(char *b, size_t n, double t) {
  if (!(t >= 0)) t = 0;
  if (t > 1) t = 1;
  int r = (int)(222 - t * (222 - 8)), g = (int)(235 - t * (235 - 69)), bl = (int)(247 - t * (247 - 148));
  snprintf(b, n, "#%02x%02x%02x", r, g, bl);
}

void ncs_svg_heatmap(FILE *f, const double *value, const int *rank, const int *mark, int n,
                     const char *unit) {
  const int W = 760, L = 10;
  int cols = n <= 64 ? (n > 0 ? n : 1) : n <= 1024 ? 64 : 128;
  double cell = n <= 64 ? 11.0 : n <= 1024 ? 11.0 : 5.5;
  if (n <= 64 && n * cell > W - 2 * L) cell = (double)(W - 2 * L) / n;
  int rows = (n + cols - 1) / cols;
  double lo = INFINITY, hi = -INFINITY;
  int nmark = 0;
  for (int i = 0; i < n; i++) {
    if (isfinite(value[i])) { if (value[i] < lo) lo = value[i]; if (value[i] > hi) hi = value[i]; }
    nmark += mark && mark[i];
  }
  if (!isfinite(lo)) lo = hi = 0;
  double gh = rows * cell;
  int lines = nmark < 8 ? nmark : 8;
  int H = (int)(gh + 0.999) + 44 + 16 * ((lines + 3) / 4);
  fprintf(f, "<svg class=\"chart heatmap\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
  char col[16];
  for (int i = 0; i < n; i++) {
    double t = hi > lo ? (value[i] - lo) / (hi - lo) : 0.5;
    shade(col, sizeof col, t);
    double x = L + (i % cols) * cell, y = (i / cols) * cell;
    fprintf(f, "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>rank %d: %.4g ",
            x, y, cell, cell, col, rank[i], isfinite(value[i]) ? value[i] : 0.0);
    esc(f, unit);
    fprintf(f, "</title></rect>");
    if (i % cols == cols - 1) fprintf(f, "\n");
  }
  for (int i = 0; i < n; i++) /* outlines on top of every cell */
    if (mark && mark[i])
      fprintf(f, "<rect class=\"outlier\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>",
              L + (i % cols) * cell, (i / cols) * cell, cell, cell);
  /* legend: the scale's ends, then the marked ranks */
  double ly = gh + 14;
  for (int k = 0; k <= 10; k++) {
    shade(col, sizeof col, k / 10.0);
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"16\" height=\"10\" fill=\"%s\"/>", L + 60 + 16 * k, ly, col);
  }
  fprintf(f, "<text class=\"val\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g ", L + 56, ly + 9, lo);
  esc(f, unit);
  fprintf(f, "</text><text class=\"val\" x=\"%d\" y=\"%.1f\">%.4g ", L + 60 + 16 * 11 + 4, ly + 9, hi);
  esc(f, unit);
  fprintf(f, "</text><text class=\"val\" x=\"%d\" y=\"%.1f\">rank 0 top left, rank order by rows of %d</text>\n",
          L + 60 + 16 * 11 + 90, ly + 9, cols);
  for (int i = 0, k = 0; i < n && k < lines; i++) {
    if (!mark || !mark[i]) continue;
    fprintf(f, "<text class=\"lbl outlier-label\" x=\"%d\" y=\"%.1f\" fill=\"#d62728\">rank %d: %.4g ", L + 180 * (k % 4),
            ly + 30 + 16 * (k / 4), rank[i], value[i]);
    esc(f, unit);
    fprintf(f, "</text>");
    k++;
  }
  fprintf(f, "\n</svg>\n");
}
