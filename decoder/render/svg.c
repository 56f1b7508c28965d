/* svg.c — inline SVG charts (contract in svg.h). */
#include "render/svg.h"

#include <math.h>
#include <string.h>

#include "render/json.h"

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

void ncs_svg_lines(FILE *f, const struct ncs_svg_series *s, int ns, const struct ncs_svg_ref *ref,
                   int nref, const char *yunit) {
  const int W = 760, H = 340, L = 60, R = 170, T = 15, B = 40;
  double xmin = 1e9, xmax = -1e9, ymax = 0;
  for (int k = 0; k < ns; k++)
    for (int i = 0; i < s[k].n; i++) {
      if (s[k].x[i] < xmin) xmin = s[k].x[i];
      if (s[k].x[i] > xmax) xmax = s[k].x[i];
      if (isfinite(s[k].y[i]) && s[k].y[i] > ymax) ymax = s[k].y[i];
    }
  for (int k = 0; k < nref; k++) if (ref[k].y > ymax) ymax = ref[k].y;
  if (xmin > xmax) { xmin = 0; xmax = 20; }
  if (xmax - xmin < 2) { xmin -= 1; xmax += 1; }
  if (ymax <= 0) ymax = 1;
  ymax *= 1.1;
  double pw = W - L - R, ph = H - T - B;
#define PX(x) (L + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (T + ph - (y) / ymax * ph)
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#999\"/>\n", L, T, pw, ph);
  for (int g = 0; g <= 4; g++) {
    double y = ymax * g / 4;
    fprintf(f, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"val\">%.3g</text>\n",
            L, L + pw, PY(y), PY(y), L - 4, PY(y) + 4, y);
  }
  for (int e = (int)ceil(xmin); e <= (int)floor(xmax); e++) {
    if ((e % 2) && xmax - xmin > 12) continue;
    char b[16];
    size_label(b, sizeof b, e);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"val\">%s</text>\n", PX(e), T + (int)ph + 16, b);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"val\">message size (bytes per rank, log scale); y: ", L, H - 6);
  esc(f, yunit);
  fprintf(f, "</text>\n");
  for (int k = 0; k < nref; k++) {
    fprintf(f, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>", L, L + pw,
            PY(ref[k].y), PY(ref[k].y));
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=\"val\">", L + pw + 4, PY(ref[k].y) + 4);
    esc(f, ref[k].name);
    fprintf(f, "</text>\n");
  }
  for (int k = 0; k < ns; k++) {
    const char *col = PALETTE[k % NPAL];
    if (s[k].n > 1) {
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
      for (int i = 0; i < s[k].n; i++) fprintf(f, "%.1f,%.1f ", PX(s[k].x[i]), PY(isfinite(s[k].y[i]) ? s[k].y[i] : 0));
      fprintf(f, "\"/>\n");
    }
    for (int i = 0; i < s[k].n; i++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", PX(s[k].x[i]), PY(isfinite(s[k].y[i]) ? s[k].y[i] : 0), col);
    fprintf(f, "<text x=\"%.0f\" y=\"%d\" class=\"lbl\" fill=\"%s\">", L + pw + 4, T + 14 + 16 * k + (nref ? 16 * nref : 0), col);
    esc(f, s[k].name);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
}
