/* doctor.h — verdicts on a traced job, as data: the checks of `ncclscope doctor` over the
 * per-process facts (doctor_facts.h), each verdict with its evidence and a concrete next step
 * (docs/DOCTOR.md). render/doctor_render.h prints them as text, JSON or HTML.
 *
 * Contract: fill d->f[0..n-1] with facts (d owns them), call ncs_doctor_run() once; d->v then
 * holds the verdicts in check order (problems and notes). ncs_doctor_free() releases the
 * facts and the verdicts. Evidence lines past NCS_VERDICT_EVIDENCE are counted in `more`.
 * One verdict per cause, never one per rank: a check that finds many ranks gives one verdict
 * whose first evidence line names them as ranges (model/ranks.h), the worst first; `ranks`
 * holds every rank it blames (the culprits: ranks that did not arrive, died, came last, or
 * fell below a threshold), `per` each one's figure, worst first (`doctor --detail`, JSON). */
#ifndef NCS_DOCTOR_H
#define NCS_DOCTOR_H
#include "analysis/doctor_facts.h"
#include "analysis/hang.h"
#include "model/ranks.h"

#define NCS_VERDICT_EVIDENCE NCS_HANG_EVIDENCE

/* One blamed process's figure in a verdict (the process's first rank; -1 unknown). */
struct ncs_vrank { int rank; double value; char host[64]; char line[320]; };

struct ncs_verdict {
  const char *id, *title;
  int problem;                       /* 1 problem (exit 1), 0 note */
  const struct ncs_hang_verdict *hang; /* a hang check's data (analysis/hang.h), else NULL */
  char evidence[NCS_VERDICT_EVIDENCE][320];
  int nevidence, more;
  char next[640];
  struct ncs_ranks ranks;            /* every rank blamed, sorted (owned; empty: the job as a whole) */
  struct ncs_vrank *per;             /* [nper] per blamed process, worst first (owned) */
  int nper;
  const char *per_what;              /* what per[].value is ("busbw_pct_of_expected", ...) */
};

struct ncs_strag;
struct ncs_doctor {
  struct ncs_dfacts **f;             /* [n] one per process (trace) or text log */
  int n;
  struct ncs_verdict *v;             /* [nv] */
  int nv, cap;
  const struct ncs_strag *strag;     /* the straggler engine after ncs_strag_finish (analysis/
                                        straggler.h), set by the caller before ncs_doctor_run for
                                        the straggler check; NULL: that check finds nothing */
  char *slow;                        /* [n] during ncs_doctor_run: processes slow-ranks blamed,
                                        which low-busbw leaves to it (NULL: none marked) */
};

void ncs_doctor_run(struct ncs_doctor *d);
/* Verdicts that are problems (not notes). */
int ncs_doctor_problems(const struct ncs_doctor *d);
void ncs_doctor_free(struct ncs_doctor *d);
/* Every check, once, in the order the "no check fired" message names them and docs/DOCTOR.md
 * describes them (tests/test_doctor_list.sh holds DOCTOR.md to it): X(id, run), run being the
 * function of analysis/doctor.c that ncs_doctor_run() calls, in this order, or 0 for the checks
 * of analysis/hang.c, whose verdicts ncs_hang_to_doctor() adds (before the others). */
#define NCS_DOCTOR_CHECK_LIST(X) \
  X("desync", 0) X("dead-rank", 0) X("init-hang", 0) X("hang", 0) \
  X("init-failed", 0) X("init-aborted", 0) X("comm-aborted", 0) X("ended-in-nccl", 0) X("calls-lost", 0) \
  X("straggler", check_stragglers) \
  X("nvlink-unused", check_nvlink_unused) X("no-nvlink", check_no_nvlink) X("socket-not-ib", check_socket) \
  X("nccl-version-mismatch", check_versions) X("slow-ranks", check_slow_ranks) X("low-busbw", check_busbw) \
  X("comm-bound", check_comm_bound) X("gpu-idle", check_gpu_idle) X("device-api", check_devapi)
/* The names of every check, from the list: "desync, dead-rank, ..., device-api". */
#define NCS_DOCTOR_NAME_(id, run) ", " id
#define NCS_DOCTOR_CHECKS ((NCS_DOCTOR_CHECK_LIST(NCS_DOCTOR_NAME_)) + 2)
#endif
