/* gate.c — one figure judged against the noise both runs show (contract in gate.h). */
#include "analysis/gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/shift.h"

static double pct(double shift) { return isinf(shift) ? (shift > 0 ? INFINITY : -100.0) : 100.0 * expm1(shift); }

/* A shift within 1e-12 of 0 is 0: the two runs' per-call figures of one trace can differ in
 * their last bit (sums taken in another order), never by a change anyone could measure. */
static double snap(double v) { return fabs(v) < 1e-12 ? 0.0 : v; }

double ncs_gate_drift(const double *v, int n) {
  if (n < 8) return 0;
  double *c = malloc((size_t)n * sizeof *c);
  if (!c) return INFINITY;
  memcpy(c, v, (size_t)n * sizeof *c);
  struct ncs_shift s;
  ncs_shift_hl(c, n / 2, c + n / 2, n - n / 2, 0, &s); /* the estimate only */
  free(c);
  return fabs(snap(s.est));
}

void ncs_gate_judge(double *base, int n, double *new_, int m, int worse, int points, double threshold,
                    double drift, double conf, struct ncs_gate_fig *f) {
  struct ncs_shift s;
  ncs_shift_hl(base, n, new_, m, conf, &s);
  s.est = snap(s.est); s.lo = snap(s.lo); s.hi = snap(s.hi);
  f->n = n; f->m = m;
  f->change_pct = points ? s.est : pct(s.est);
  f->lo_pct = points ? s.lo : pct(s.lo);
  f->hi_pct = points ? s.hi : pct(s.hi);
  /* in the bad direction (larger is worse): the threshold, the estimate, the interval's bound
   * on the good side (near) and on the bad side (far) */
  double w = worse < 0 ? -1.0 : 1.0;
  double t = points ? threshold : worse < 0 ? -log1p(-fmin(threshold, 99.999) / 100.0) : log1p(threshold / 100.0);
  if (!(drift >= 0)) drift = 0;
  t += drift;
  f->drift_pct = points ? drift : 100.0 * expm1(drift);
  double est = w * s.est, near = worse < 0 ? -s.hi : s.lo, far = worse < 0 ? -s.lo : s.hi;
  double h = (n < 1 || m < 1 || isinf(near)) ? INFINITY : est - near;
  f->detectable_pct = isinf(h) ? INFINITY : points ? t + h : 100.0 * (worse < 0 ? -expm1(-(t + h)) : expm1(t + h));
  if (n >= 1 && m >= 1 && near > t) f->verdict = NCS_GATE_REGRESSION;
  else if (n >= 1 && m >= 1 && far < t) f->verdict = NCS_GATE_OK;
  else f->verdict = NCS_GATE_TOO_FEW;
}

const char *ncs_gate_verdict_name(enum ncs_gate_verdict v) {
  return v == NCS_GATE_REGRESSION ? "REGRESSION" : v == NCS_GATE_TOO_FEW ? "not enough calls to judge" : "ok";
}
