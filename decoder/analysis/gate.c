/* gate.c — one figure judged against the noise both runs show (contract in gate.h). */
#include "analysis/gate.h"

#include <math.h>

#include "model/shift.h"

static double pct(double shift) { return isinf(shift) ? (shift > 0 ? INFINITY : -100.0) : 100.0 * expm1(shift); }

void ncs_gate_judge(double *base_log, int n, double *new_log, int m, int worse, double threshold_pct,
                    double conf, struct ncs_gate_fig *f) {
  struct ncs_shift s;
  ncs_shift_hl(base_log, n, new_log, m, conf, &s);
  f->n = n; f->m = m;
  f->change_pct = pct(s.est);
  f->lo_pct = pct(s.lo);
  f->hi_pct = pct(s.hi);
  /* in the bad direction (w > 0 is worse): the threshold, the estimate, the interval's bound
   * nearer to 0 */
  double w = worse < 0 ? -1.0 : 1.0;
  double t = worse < 0 ? -log1p(-fmin(threshold_pct, 99.999) / 100.0) : log1p(threshold_pct / 100.0);
  double est = w * s.est, near = worse < 0 ? -s.hi : s.lo;
  double h = (n < 1 || m < 1 || isinf(near)) ? INFINITY : est - near;
  double det = fmax(t, h);
  f->detectable_pct = isinf(det) ? INFINITY : 100.0 * (worse < 0 ? -expm1(-det) : expm1(det));
  if (!isinf(near) && near > 0 && est > t) f->verdict = NCS_GATE_REGRESSION;
  else if (h > t) f->verdict = NCS_GATE_TOO_FEW;
  else f->verdict = NCS_GATE_OK;
}

const char *ncs_gate_verdict_name(enum ncs_gate_verdict v) {
  return v == NCS_GATE_REGRESSION ? "REGRESSION" : v == NCS_GATE_TOO_FEW ? "not enough calls to judge" : "ok";
}
