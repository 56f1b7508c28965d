/* html.h — the html renderer: one self-contained page (inline CSS and SVG, no script, no
 * network) from what `ncclscope html` gathered in its one read of the job's files.
 *
 * Contract: ncs_html_write() writes the whole page to f; every string from a trace is escaped.
 * Returns 0, or -1 when f reports a write error. */
#ifndef NCS_HTML_H
#define NCS_HTML_H
#include <stdio.h>
#include "analysis/jobsum.h"
#include "analysis/callsites.h"
#include "analysis/doctor.h"
#include "analysis/hang.h"
#include "analysis/headline.h"
#include "analysis/steps.h"
#include "analysis/window.h"
#include "analysis/whatif.h"
#include "render/gpu_lanes.h"

struct ncs_html_page {
  const struct ncs_jobdata *J;   /* the loader's job summary */
  struct ncs_doctor *doc;        /* the doctor's facts; NULL: --no-doctor (the page says so) */
  int doctor_ran;                /* ncs_doctor_run() ran on doc (not when a file was unreadable) */
  struct ncs_hang *hang;         /* the hang checks, NULL none */
  const struct ncs_headline *h;  /* the headline, NULL when the doctor did not run */
  const struct ncs_steps *steps; /* the steps picture's calls, NULL none */
  const struct ncs_gpulanes *lanes;
  const struct ncs_window_sum *window; /* a bounded trace's whole run and window, NULL none */
  const struct ncs_whatif *cost; /* where the step time goes, what fixing each finding would give
                                    (report's what-if figures); NULL: not computed */
  const struct ncs_callsites *sites;   /* the call sites, finished (analysis/callsites.h), NULL none */
  const double *comm_s;          /* [J->n] with doc NULL: each file's communication union, s
                                    (per calling thread, model/ivunion.h); NULL none */
  const struct ncs_ivu *comm_u;  /* [J->n] with comm_s: those unions, for their late intervals */
};

int ncs_html_write(FILE *f, const struct ncs_html_page *p);
#endif
