/* jobpick.h — every reading command's answer to a directory holding several jobs (docs/CLI.md,
 * "Several jobs in one directory"): `--job ID` keeps one job's (or attempt's) files, and a
 * command given several jobs without it refuses, listing them.
 *
 * Contract: ncs_pick_job() replaces the file list by the files of job `want` (model/jobs.h
 * names: N, N.K or a TORCHELASTIC_RUN_ID), after one grouping read of every file; a name that
 * matches nothing is refused with the listing (NCS_EXIT_USAGE). ncs_one_job() checks the grouping of a
 * loaded job (its grouping came with the load: no read of its own): 0 when its files are one job,
 * whatever its attempts; else the listing and NCS_EXIT_USAGE. ncs_pick_loaded() picks from such
 * a loaded job. Messages go to stderr. */
#ifndef NCS_JOBPICK_H
#define NCS_JOBPICK_H
#include "model/jobload.h"

/* `{"job", required_argument, NULL, 'J'}` and its help line, for every reading command. */
#define NCS_JOB_OPTION {"job", required_argument, NULL, 'J'}
#define NCS_JOB_HELP "  --job ID            one job of a directory holding several (`ncclscope jobs` lists them)\n"

int ncs_pick_job(const char *cmd, const char *want, int *nfiles, char ***files);
/* The same as indexes: how many files are kept (*keep: their indexes, malloc'ed), or minus the
 * exit code after the message. */
int ncs_pick_job_index(const char *cmd, const char *want, int nfiles, char **files, int **keep);
int ncs_one_job(const char *cmd, const struct ncs_jobset *jobs, char **files);
/* The same pick from a job already loaded with every file (its grouping came with that read:
 * no read of its own), for a command that can leave the other jobs' files out after the read
 * (timeline). */
int ncs_pick_loaded(const char *cmd, const char *want, const struct ncs_jobset *jobs, char **files, int **keep);
#endif
