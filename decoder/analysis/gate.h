/* gate.h — the CI gate's judgement of one figure (a row's per-call bus bandwidth or time) from
 * the per-call samples of both runs: a regression, no regression, or not enough calls to judge,
 * with the change, its confidence interval and the smallest change that could have been flagged
 * (docs/COMPARE.md, "Method").
 *
 * Contract: with `points` 0, samples are natural logarithms of the per-call figure (a ratio
 * becomes a shift) and the change is the Hodges-Lehmann shift new - base (model/shift.h) as a
 * percentage, exp(shift) - 1; with `points` 1 (shares in percent) the shift itself, in points,
 * and the threshold is in points too. Samples are sorted in place. The interval is at `conf`
 * (two-sided; the caller divides its false-alarm budget among the figures it judges). `worse` is -1 when a drop is bad
 * (busbw), +1 when a rise is (time). The interval treats samples as independent; samples
 * close in time are not (they share the machine's state), so a run can sit apart from another
 * of the same configuration by more than its interval says. `drift` (a shift, >= 0: what the
 * runs show against themselves, ncs_gate_drift) is added to the threshold t (as a shift), and
 * the decision is a test against T = t + drift, not against 0, so a change is flagged only
 * when it is statistically clear, larger than t and larger than the runs' own drift:
 *  - REGRESSION when the whole interval lies beyond T in the bad direction;
 *  - OK when the whole interval lies short of T (a change as large as T is ruled out);
 *  - TOO_FEW ("not enough calls to judge") when the interval holds T, or is unbounded.
 * detectable_pct is T + h as a percentage in the bad direction (a drop for busbw, a rise for
 * time; +inf when unbounded), h the interval's half between the estimate and its bound on the
 * good side: the smallest true change this spread, drift and these counts would flag half of
 * the time. drift_pct is the drift as a change (percent, or points). */
#ifndef NCS_GATE_H
#define NCS_GATE_H

enum ncs_gate_verdict { NCS_GATE_OK, NCS_GATE_REGRESSION, NCS_GATE_TOO_FEW };

struct ncs_gate_fig {
  int n, m;                /* base and new samples */
  double change_pct;       /* estimated change of the figure, percent (new / base - 1) */
  double lo_pct, hi_pct;   /* its interval, percent; -100 / +inf when unbounded */
  double detectable_pct;   /* the smallest change in the bad direction it could flag, percent */
  double drift_pct;        /* the runs' own drift added to the threshold, percent (points) */
  enum ncs_gate_verdict verdict;
};

void ncs_gate_judge(double *base, int n, double *new_, int m, int worse, int points, double threshold,
                    double drift, double conf, struct ncs_gate_fig *f);
/* One run's drift: the absolute Hodges-Lehmann shift between the second half of its n samples
 * (in the run's order) and the first, in the samples' unit; 0 with fewer than 8 samples (the
 * interval is too wide to matter then); +inf when out of memory. v is not changed. */
double ncs_gate_drift(const double *v, int n);
/* "REGRESSION", "ok", "not enough calls to judge" */
const char *ncs_gate_verdict_name(enum ncs_gate_verdict v);
#endif
