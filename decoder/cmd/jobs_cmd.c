/* jobs_cmd.c — `ncclscope jobs`: the jobs and attempts of a set of traces (docs/CLI.md), and
 * the --job picking every reading command shares (contract in jobpick.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "cmd/jobpick.h"
#include "base/json.h"

static void refuse(const char *cmd, const struct ncs_jobset *s, char **files, const char *what) {
  fprintf(stderr, "ncclscope %s: %s; pick one with --job ID (N, N.K for attempt K, or a TORCHELASTIC_RUN_ID):\n", cmd, what);
  ncs_jobset_print(s, stderr, files);
}

int ncs_pick_loaded(const char *cmd, const char *want, const struct ncs_jobset *jobs, char **files, int **keep) {
  *keep = NULL;
  int n = ncs_jobset_pick(jobs, want, keep);
  if (n <= 0) {
    char what[160];
    snprintf(what, sizeof what, "no job '%.100s' in these traces", want);
    refuse(cmd, jobs, files, what);
    free(*keep);
    *keep = NULL;
    n = -NCS_EXIT_USAGE;
  }
  return n;
}

int ncs_pick_job_index(const char *cmd, const char *want, int nfiles, char **files, int **keep) {
  struct ncs_jobread *J = NULL;
  *keep = NULL;
  if (ncs_job_load(nfiles, files, NULL, &J) || !J) {
    ncs_jobread_free(J);
    fprintf(stderr, "ncclscope %s: no trace could be read\n", cmd);
    return -NCS_EXIT_UNREADABLE;
  }
  int n = ncs_pick_loaded(cmd, want, J->jobs, files, keep);
  ncs_jobread_free(J);
  return n;
}

int ncs_pick_job(const char *cmd, const char *want, int *nfiles, char ***files) {
  int *pick, n = ncs_pick_job_index(cmd, want, *nfiles, *files, &pick);
  if (n < 0) return -n;
  char **sub = calloc((size_t)n, sizeof *sub);
  int ok = sub != NULL;
  for (int k = 0; ok && k < n; k++) ok = (sub[k] = strdup((*files)[pick[k]])) != NULL;
  free(pick);
  if (!ok) { if (sub) ncs_paths_free(sub, n); fprintf(stderr, "ncclscope %s: out of memory\n", cmd); return NCS_EXIT_UNREADABLE; }
  ncs_paths_free(*files, *nfiles);
  *files = sub;
  *nfiles = n;
  return NCS_EXIT_OK;
}

int ncs_one_job(const char *cmd, const struct ncs_jobset *set, char **files) {
  const struct ncs_job_info *jobs;
  int n = set ? ncs_jobset_jobs(set, &jobs) : 0;
  if (n <= 1) return NCS_EXIT_OK;
  char what[96];
  snprintf(what, sizeof what, "these traces hold %d jobs (lined up and summed apart they would mislead)", n);
  refuse(cmd, set, files, what);
  return NCS_EXIT_USAGE;
}

int cmd_jobs(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
  static const struct ncs_cli cli = {
    "jobs",
    "usage: ncclscope jobs [--json] PATH...\n"
    "The jobs in a set of traces and the attempts of each (torchrun restarts), in the order they\n"
    "started: the IDs that --job of report, doctor, html, timeline and compare takes.\n"
    "  -j, --json          {\"version\", \"jobs\": [...], \"apart\": [...]} (docs/JSON.md)\n"
    "  -h, --help          this text\n"
    "Exit: 0 (cut traces too), 2 bad usage, 3 damaged input, 4 unreadable input.\n",
    opts, 0};
  int json = 0, r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'j') json = 1;
    else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&cli, "no PATH given");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope jobs: no trace files (*.ncs) found\n"); return NCS_EXIT_UNREADABLE; }
  struct ncs_jobread *J = NULL;
  int rc = ncs_job_load(n, files, NULL, &J);
  int ret = rc ? NCS_EXIT_UNREADABLE : NCS_EXIT_OK;
  for (int i = 0; J && i < J->n; i++) {
    ret = ncs_exit_worse(ret, ncs_exit_of_read(J->r[i].read_rc));
    if (J->r[i].error[0]) { ncs_text_escape(stderr, J->r[i].error, strlen(J->r[i].error)); fputc('\n', stderr); }
  }
  if (J && json) {
    struct ncs_json j;
    ncs_json_init(&j, stdout, 1);
    ncs_json_obj_begin(&j, NULL);
    ncs_json_int(&j, "version", 1);
    ncs_json_int(&j, "files", n);
    ncs_jobset_json(J->jobs, &j, files);
    ncs_json_obj_end(&j);
    ncs_json_done(&j);
  } else if (J) {
    ncs_jobset_print(J->jobs, stdout, files);
  }
  ncs_jobread_free(J);
  ncs_paths_free(files, n);
  return ret;
}
