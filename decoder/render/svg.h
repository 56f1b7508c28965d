/* svg.h — small inline SVG charts for the HTML report: horizontal bars, an x/y line chart
 * with a log2 x axis, lanes over time and a rank heatmap. Every label is HTML-escaped (ncs_html_escape); numbers are formatted
 * here. No script, no external reference: the output stands alone inside an HTML page. */
#ifndef NCS_SVG_H
#define NCS_SVG_H
#include <stdio.h>

/* Horizontal bar chart: n bars, label[i] and value[i] (>= 0), values printed with `unit`.
 * `mark` (may be NULL) highlights bars where mark[i] != 0. */
void ncs_svg_bars(FILE *f, const char *const *label, const double *value, const int *mark, int n,
                  const char *unit);

struct ncs_svg_series {
  const char *name;
  const double *x, *y;   /* x: log2 of the message size in bytes; y: value */
  int n;
};
struct ncs_svg_ref { const char *name; double y; }; /* a dashed horizontal reference line */
/* Line chart of several series: log2 x (labelled as sizes: 1K, 1M, ...), log10 y scaled to the
 * data (points with y <= 0 are left out). A reference is drawn dashed when it lies within 3x of
 * the data's range; otherwise a note above the plot names it "off the scale": it never sets the
 * scale. The legend sits in its own column right of the plot. */
void ncs_svg_lines(FILE *f, const struct ncs_svg_series *s, int ns, const struct ncs_svg_ref *ref,
                   int nref, const char *yunit);
/* One row per lane (a rank, a GPU stream) over the time window [t0, t1] (ns): each interval a
 * bar coloured by its kind (an index into `kind`, named in the legend under the time axis, in
 * ms; kind k has the k-th colour: blue, red, green, orange, ...). The label column widens for
 * labels longer than about 9 characters. */
struct ncs_svg_lane {
  const char *label;
  const double *t0, *t1;
  const int *kind;
  int n;
};
void ncs_svg_lanes(FILE *f, const struct ncs_svg_lane *lane, int nl, double t0, double t1,
                   const char *const *kind, int nkind);
/* A rank-dimension value as a heatmap: one cell per rank in rank order (rank[i] names cell i,
 * cells laid out left to right, 64 a row up to 1,024 ranks, 128 a row beyond), shaded on one
 * sequential blue scale from the lowest to the highest value (legend under the grid, in
 * `unit`); cells with mark[i] != 0 (outliers, ranks a verdict names) are outlined in red and
 * listed under the legend with their rank and value. The height grows with ranks / 128 rows
 * (4,096 ranks: 32 rows of 5 px), never with one bar per rank. Each cell carries a <title>
 * ("rank R: V unit") for a reader hovering it. */
void ncs_svg_heatmap(FILE *f, const double *value, const int *rank, const int *mark, int n,
                     const char *unit);
#endif
