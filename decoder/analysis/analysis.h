/* analysis.h — the extension point of `ncclscope report`: analyses that read the same traces
 * and add their own sections to the text and JSON output.
 *
 * Contract: report.c reads every file once through the loader (model/jobload.h), several files at
 * once on several threads, and hands each record to its own summary and to every registered
 * analysis (in NCS_ANALYSES order, but for a stretch: io/mux.h). Records of one file come in
 * file order, but for a column chunk's CALL and GPU_TIME records, which come a stretch at a time
 * (io/mux.h: its CALL records, then its GPU_TIME records, unless the visitor sets `stretch`);
 * those of different files may come at the same time: keep per-file state apart (state shared
 * across files takes a lock), and make a file's large state at its first record and free it in
 * file_done (visitor() is called for every file before the first is read, so only the files
 * being read hold it). For one report run an analysis sees:
 *   create(job)                       once, before any file (job->n files, ranks not known yet)
 *   visitor(state, file, &v)          once per file, before its first record: fill the callbacks
 *                                     it wants (v is zeroed; set v->ctx yourself); records follow
 *   file_done(state, file, status)    after that file's read (status may say damaged/truncated)
 *   finish(state, job)                once, after all files; job->rank[] now complete
 *   result(state)                     after finish(): its result struct (declared in its own
 *                                     header), valid until destroy(); a renderer in
 *                                     decoder/render/, listed in render/report_render.c, prints
 *                                     its text (short unless job->detail: outliers, not every
 *                                     rank; trace strings escaped: ncs_text_escape), its members
 *                                     of the top-level JSON object, of each rank's, of each
 *                                     rank's operation
 *   destroy(state)
 * Text sections follow the per-rank sections, in registry order; start yours with a blank
 * line and a title line. Define the analysis with designated initializers (fields get added).
 * Every callback but name may be NULL. Options: an analysis lists the ones it takes in
 * `options` (report accepts exactly the union, and lists them in its --help), reads
 * them in create() with ncs_job_option(), and reports invalid values through bad_options. An analysis never exits and never prints:
 * renderers do. Memory should not grow with trace length (ranks x communicators is fine).
 * Adding one: write decoder/<name>.c defining `const struct ncs_analysis ncs_analysis_<name>`
 * and add X(<name>) to NCS_ANALYSES below. */
#ifndef NCS_ANALYSIS_H
#define NCS_ANALYSIS_H
#include <stdint.h>
#include <stdio.h>
#include "base/json.h"
#include "io/trace.h"

struct ncs_headline;
struct ncs_stages;
struct ncs_commnames;

/* What the report core knows about one traced process (one file). */
struct ncs_rank_info {
  const char *path;
  const char *host;      /* PROCESS host, "" when none */
  uint32_t pid;
  int rank;              /* rank in its largest communicator, else env RANK-like, else -1 */
  int nranks;            /* ranks of that communicator (or WORLD_SIZE), 0 when unknown */
  int held;              /* ranks of that communicator this process holds: 1, more with a rank
                            per thread (ncclCommInitAll); `rank` is then the lowest of them */
  char label[40];        /* how to name it: "3", "0-3" (held ranks), "?" unknown */
  int no_comm;           /* it made no communicator and no call on one (a launcher or a version
                            probe calling ncclGetVersion only): not a rank, listed apart */
  int read_rc;           /* ncs_trace_read's return: 0, 1 damaged, 2 unreadable */
  int truncated;
  const struct ncs_process *process; /* NULL after the file's read; use the fields above */
  int attempt;           /* of a job restarted (model/jobs.h): its attempt, 1, 2, ...; else 0 */
};
struct ncs_job {
  int n;                           /* files */
  const struct ncs_rank_info *rank;/* [n], in file order: path set from create on (an analysis
                                      may read a file itself); the rest filled by finish time */
  const int *order;                /* [n] file indices sorted by (attempt, rank, host, pid) */
  const char *const *options;      /* report's NULL-terminated "--name=value" analysis options */
  int detail;                      /* --detail: every rank's sections, not only outliers */
  struct ncs_headline *headline;   /* the job's answer: built by `verdicts` in finish(), analyses
                                      after it in the registry may add to it; report prints it
                                      first (text) and as "headline" (JSON) once built */
  int *ended_badly;                /* set to 1 by `verdicts` when the job ended badly (an init
                                      failed or aborted, a communicator aborted mid-collective,
                                      calls lost): report exits 1 then; NULL when nobody asks */
  struct ncs_stages *stages;       /* what one analysis computes once and others read: step
                                      starts, kernel-activity figures (model/stages.h); NULL
                                      when the caller keeps none */
  struct ncs_strag **strag;        /* the straggler engine (analysis/straggler.h), set by
                                      `stragglers` in create(); an analysis whose finish() needs
                                      its results calls ncs_strag_finish first (it runs once):
                                      `verdicts` does, for the doctor's straggler check */
  const struct ncs_commnames *names; /* every communicator named as the job knows it
                                      (model/commnames.h): set by finish time, NULL before */
  int text_only;                   /* 1: only the text renderers print the results (report
                                      without --json): an analysis may skip figures its text
                                      never shows (sizes without --sizes: the rows' count alone);
                                      0 (any other caller): every figure of its result */
};
/* Value of analysis option `name` (e.g. "skip-warmup"), or NULL. */
const char *ncs_job_option(const struct ncs_job *job, const char *name);

/* An option an analysis takes on report's command line: --name ARG (or --name=ARG), with
 * its line of help; arg NULL: a flag, --name alone (ncs_job_option then gives "1"). */
struct ncs_analysis_option { const char *name, *arg, *help; };

struct ncs_analysis {
  const char *name;
  const struct ncs_analysis_option *options; /* {NULL}-terminated; NULL when none */
  /* Non-zero when the options given (ncs_job_option) are invalid; it has said why on stderr. */
  int (*bad_options)(void *state);
  void *(*create)(const struct ncs_job *job);
  void (*visitor)(void *state, int file, struct ncs_visitor *v);
  void (*file_done)(void *state, int file, const struct ncs_read_status *status);
  void (*finish)(void *state, const struct ncs_job *job);
  void (*destroy)(void *state);
  /* Its result as data, after finish(), valid until destroy(): render/report_render.c hands it
   * to its renderer. */
  const void *(*result)(void *state);
};

/* The registry: one line per analysis. */
#define NCS_ANALYSES(X) \
  X(verdicts) \
  X(metrics) \
  X(stragglers) \
  X(transport) \
  X(profile) \
  X(gputime) \
  X(sizes) \
  X(whatif) \
  X(callsites) \
  X(window)

#define NCS_DECLARE_ANALYSIS_(name) extern const struct ncs_analysis ncs_analysis_##name;
NCS_ANALYSES(NCS_DECLARE_ANALYSIS_)
#undef NCS_DECLARE_ANALYSIS_
#endif
