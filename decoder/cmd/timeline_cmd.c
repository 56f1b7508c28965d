/* timeline_cmd.c — `ncclscope timeline PATH... -o FILE.json`: parses its options, reads every
 * file with the timeline renderer plugged in (render/timeline.h: its events wait in a spool),
 * picks the job (--job) and has the renderer write the picked files. Past 64 files with no
 * --ranks a first read by the loader alone chooses the ranks written, so that only theirs are
 * spooled (cmd_timeline).
 * Exit (cmd/commands.h): 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable
 * (also: the spool or the output cannot be written). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "cmd/commands.h"
#include "cmd/jobpick.h"
#include "analysis/jobsum.h"
#include "render/timeline.h"

#define MAX_KERNELS_DEFAULT 50000 /* kernels written per process unless --max-kernels says */

int cmd_timeline(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"max-kernels", required_argument, NULL, 'k'}, {"ranks", required_argument, NULL, 'r'},
                                       {"window", required_argument, NULL, 'w'}, {"max-mb", required_argument, NULL, 'm'},
                                       NCS_JOB_OPTION, {0}};
  static const struct ncs_cli cli = {
    "timeline",
    "usage: ncclscope timeline [--ranks LIST|all] [--window T0:T1] [--max-mb N] [--max-kernels N|all]\n"
    "                          [--job ID] PATH... -o FILE.json[.gz]\n"
    "A Chrome trace / Perfetto JSON file of every traced call, and of the kernels each GPU stream\n"
    "ran (compute and NCCL kernels apart, calls linked to their kernels), all hosts on one clock\n"
    "(open it in ui.perfetto.dev or chrome://tracing).\n"
    "  -o, --output FILE    where to write it (- for standard output); a name ending in .gz is\n"
    "                       written gzip-compressed (ui.perfetto.dev opens it as it is)\n"
    "  --ranks LIST|all     the ranks written, e.g. 0-7,300 (default: every rank up to 64 ranks;\n"
    "                       past 64, rank 0 and the slowest, median and fastest: said on stderr)\n"
    "  --window T0:T1       only events within T0..T1 seconds of the timeline's zero (its axis)\n"
    "  --max-mb N           stop writing events past N MB of JSON (default 256; 0: no bound);\n"
    "                       what is left out is said on stderr and in otherData\n"
    "  --max-kernels N|all  kernels written per process, the first in the trace (default 50000;\n"
    "                       0: none); those left out are counted on the timeline\n"
    NCS_JOB_HELP
    "  -h, --help           this text\n"
    "Exit: 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable input.\n",
    opts, 0};
  const char *out = NULL, *want_job = NULL;
  int64_t max_kernels = MAX_KERNELS_DEFAULT;
  const char *ranks = NULL;
  double w0 = 0, w1 = 0, max_mb = 256;
  int windowed = 0;
  int r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'o') out = optarg;
    else if (r == 'J') want_job = optarg;
    else if (r == 'k') {
      long v;
      if (!strcmp(optarg, "all")) max_kernels = -1;
      else if (ncs_cli_long(&cli, "--max-kernels", optarg, &v) != 0) return NCS_EXIT_USAGE;
      else if (v < 0) return ncs_cli_fail(&cli, "--max-kernels: a count >= 0 or 'all' (got %s)", optarg);
      else max_kernels = v;
    } else if (r == 'r') ranks = optarg;
    else if (r == 'w') {
      char *e;
      w0 = strtod(optarg, &e);
      if (*e != ':' || !(w0 >= 0)) return ncs_cli_fail(&cli, "--window wants T0:T1 in seconds, got '%s'", optarg);
      w1 = strtod(e + 1, &e);
      if (*e || !(w1 > w0)) return ncs_cli_fail(&cli, "--window wants T0:T1 with T1 > T0, got '%s'", optarg);
      windowed = 1;
    } else if (r == 'm') {
      char *e;
      max_mb = strtod(optarg, &e);
      if (*e || !(max_mb >= 0)) return ncs_cli_fail(&cli, "--max-mb wants a size in MB >= 0, got '%s'", optarg);
    } else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&cli, "no PATH given");
  if (!out) return ncs_cli_fail(&cli, "no output file: -o FILE.json");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope timeline: no trace files\n"); return NCS_EXIT_UNREADABLE; }
  struct ncs_timeline_cfg cfg = {.out = out, .max_kernels = max_kernels, .ranks = ranks,
                                 .windowed = windowed, .w0 = w0, .w1 = w1, .max_mb = max_mb};
  if (ranks && strcmp(ranks, "all") && ncs_cli_ranks(ranks, &cfg.sel, &cfg.nsel)) {
    ncs_paths_free(files, n);
    return ncs_cli_fail(&cli, "--ranks wants a list such as 0-7,300 or 'all', got '%s'", ranks);
  }
  /* Past 64 files with no --ranks, a first read by the loader alone (nothing spooled, no
   * message: the second read says what it has to) picks the job and the ranks written (rank 0
   * and the straggler culprits: render/timeline.h), so that the timeline's read spools theirs
   * only. Then the timeline's read: the events to the spool, with each file's earliest time,
   * its kernels and which calls pair with them, and which job each file is in (--job); then
   * the JSON of the picked files from the spool. */
  struct ncs_load_opts o = {.progress_label = "timeline"};
  struct ncs_jobsum_events ev;
  struct ncs_timeline *t = NULL;
  struct ncs_jobdata *J = NULL;
  int *keep = NULL, nk = n;
  int rc = ncs_timeline_new(n, &cfg, &t);
  if (rc) goto done;
  if (!ranks && n > 64) {
    struct ncs_load_opts o1 = {.progress_label = "timeline (choosing ranks)"};
    struct ncs_jobsum_events ev1 = {0};
    rc = NCS_EXIT_UNREADABLE;
    if (ncs_jobsum_load(n, files, &o1, &ev1, &J) || !J) { fprintf(stderr, "ncclscope timeline: no trace could be read\n"); goto done; }
    if (want_job && (nk = ncs_pick_loaded("timeline", want_job, J->jobs, files, &keep)) < 0) { rc = -nk; goto done; }
    if (!want_job && (r = ncs_one_job("timeline", J->jobs, files))) { rc = r; goto done; }
    if ((rc = ncs_timeline_choose(t, J, keep, nk))) goto done;
    ncs_job_free(J);
    J = NULL;
    free(keep);
    keep = NULL;
    nk = n;
  }
  ncs_timeline_plug(t, &o, &ev);
  rc = NCS_EXIT_UNREADABLE;
  if (ncs_jobsum_load(n, files, &o, &ev, &J) || !J) { fprintf(stderr, "ncclscope timeline: no trace could be read\n"); goto done; }
  if (want_job && (nk = ncs_pick_loaded("timeline", want_job, J->jobs, files, &keep)) < 0) { rc = -nk; goto done; }
  if (!want_job && (r = ncs_one_job("timeline", J->jobs, files))) { rc = r; goto done; }
  rc = ncs_timeline_write(t, J, keep, nk);
done:
  ncs_timeline_free(t);
  free(keep);
  ncs_job_free(J);
  ncs_paths_free(files, n);
  return rc;
}
