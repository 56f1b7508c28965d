/* gate.h — the CI gate's judgement of one figure (a row's per-call bus bandwidth or time) from
 * the per-call samples of both runs: a regression, no regression, or not enough calls to judge,
 * with the change, its confidence interval and the smallest change that could have been flagged
 * (docs/COMPARE.md, "Method").
 *
 * Contract: samples are natural logarithms of the per-call figure (a ratio becomes a shift);
 * they are sorted in place. The change is the Hodges-Lehmann shift new - base (model/shift.h)
 * as a percentage, exp(shift) - 1, with its interval at `conf` (two-sided; the caller divides
 * its false-alarm budget among the figures it judges). `worse` is -1 when a drop is bad
 * (busbw), +1 when a rise is (time). With h the interval's half on the bad side (est to the
 * bound nearer to 0) and t the threshold as a shift:
 *  - REGRESSION when the interval lies wholly on the bad side of 0 (statistically clear) and
 *    the estimate is beyond t (larger than the practical threshold);
 *  - otherwise TOO_FEW when h > t or the interval is unbounded: a change of the threshold's
 *    size could not have been told from the noise;
 *  - otherwise OK.
 * detectable_pct is max(t, h) as a percentage in the bad direction (a drop for busbw, a rise
 * for time; +inf when unbounded): about the smallest change flagged half of the time. */
#ifndef NCS_GATE_H
#define NCS_GATE_H

enum ncs_gate_verdict { NCS_GATE_OK, NCS_GATE_REGRESSION, NCS_GATE_TOO_FEW };

struct ncs_gate_fig {
  int n, m;                /* base and new samples */
  double change_pct;       /* estimated change of the figure, percent (new / base - 1) */
  double lo_pct, hi_pct;   /* its interval, percent; -100 / +inf when unbounded */
  double detectable_pct;   /* the smallest change in the bad direction it could flag, percent */
  enum ncs_gate_verdict verdict;
};

void ncs_gate_judge(double *base_log, int n, double *new_log, int m, int worse, double threshold_pct,
                    double conf, struct ncs_gate_fig *f);
/* "REGRESSION", "ok", "not enough calls to judge" */
const char *ncs_gate_verdict_name(enum ncs_gate_verdict v);
#endif
