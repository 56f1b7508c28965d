/* jobs.h — which trace files belong to which job, and to which attempt of it (docs/CLI.md,
 * "Several jobs in one directory").
 *
 * Contract: fed each file's PROCESS and COMM records and its read status (by the loader,
 * model/jobload.c, during its one read of each file: no read of its own), ncs_jobset_finish
 * groups the files:
 *  - files that share a communicator (COMM comm_id with nranks > 0, whatever its rc) are one
 *    attempt (a connected component);
 *  - components with the same launcher run (TORCHELASTIC_RUN_ID, not "none") and the same
 *    restart count (TORCHELASTIC_RESTART_COUNT) and master address and port whose time spans
 *    overlap are one attempt too (ranks with no communicator in common);
 *  - attempts with the same TORCHELASTIC_RUN_ID and different restart counts are attempts of
 *    one job (torchrun --max-restarts), in restart order; everything else is its own job;
 *  - a file in no communicator (a process that only asked ncclGetVersion, one still starting)
 *    makes no job: it joins the attempt whose launcher ids it shares and whose time span it
 *    overlaps, else it stays apart (ncs_jobset_job_of -1);
 *  - an image that ended with exec (chunk flag EXEC) and the next image of its process (same
 *    host and pid, the first file created after it) are one process's story: in the same
 *    attempt when both made communicators; one that made none joins the other's attempt.
 * Jobs are numbered 1, 2, ... in the order they started (earliest file creation, then file
 * order), attempts 1, 2, ... within their job: the same files give the same numbers. Pure
 * model: no I/O; file callbacks of different files may run at once (each file's own slot). */
#ifndef NCS_JOBS_H
#define NCS_JOBS_H
#include <stdint.h>
#include <stdio.h>
#include "io/trace.h"
#include "base/json.h"

struct ncs_jobset;

/* NCS_END_EXEC: a file whose image ended with exec (its process goes on in the next image's
 * file): complete, as far as its attempt's end is concerned. */
enum ncs_end { NCS_END_COMPLETE = 0, NCS_END_CUT = 1, NCS_END_DAMAGED = 2, NCS_END_UNREADABLE = 3, NCS_END_EXEC = 4 };
const char *ncs_end_name(int end); /* "complete", "cut", "damaged", "unreadable", "exec'd" */

struct ncs_attempt {
  int n, *files;              /* its files, in file order */
  int restart_count;          /* TORCHELASTIC_RESTART_COUNT, -1 when not set */
  int nranks;                 /* ranks of its largest communicator */
  uint64_t start_ns, end_ns;  /* realtime: earliest file creation, latest last sign of life */
  int end;                    /* enum ncs_end: the worst of its files */
};
struct ncs_job_info {
  int id;                     /* 1, 2, ... */
  char launcher[160];         /* "TORCHELASTIC_RUN_ID=abc SLURM_JOB_ID=12", "" when none */
  char run_id[96];            /* TORCHELASTIC_RUN_ID (not "none"), "" when none */
  int nattempts;
  struct ncs_attempt *att;    /* in order: restart count, then start */
};

struct ncs_jobset *ncs_jobset_new(int nfiles);
void ncs_jobset_free(struct ncs_jobset *s);
/* The visitor (PROCESS, COMM) for file `file`'s records; or the same records handed one by one. */
struct ncs_visitor ncs_jobset_visitor(struct ncs_jobset *s, int file);
void ncs_jobset_process(struct ncs_jobset *s, int file, const struct ncs_process *p);
void ncs_jobset_comm(struct ncs_jobset *s, int file, const struct ncs_comm *c);
/* File `file` was read: read_rc as ncs_trace_read's (0, 1 damaged, 2 unreadable). */
void ncs_jobset_file_done(struct ncs_jobset *s, int file, int read_rc, const struct ncs_read_status *st);
void ncs_jobset_finish(struct ncs_jobset *s);

/* Results (after finish). */
int ncs_jobset_jobs(const struct ncs_jobset *s, const struct ncs_job_info **out);
int ncs_jobset_job_of(const struct ncs_jobset *s, int file);     /* index into jobs, -1 apart */
int ncs_jobset_attempt_of(const struct ncs_jobset *s, int file); /* 1, 2, ...; 0 apart */
/* The files of the job (or attempt) named by `want`: "N" (job N, every attempt), "N.K" (its
 * attempt K), or a TORCHELASTIC_RUN_ID. Returns how many (*out malloc'ed, file indexes in
 * order), or -1 when nothing has that name. */
int ncs_jobset_pick(const struct ncs_jobset *s, const char *want, int **out);
/* The listing of `ncclscope jobs` and of a refusal: one line per job and per attempt, then the
 * files that are in no job. */
void ncs_jobset_print(const struct ncs_jobset *s, FILE *f, char **paths);
/* "jobs": [...] as in docs/JSON.md; "apart": the files in no job. */
void ncs_jobset_json(const struct ncs_jobset *s, struct ncs_json *j, char **paths);
/* The attempts of the job the files are in, as "attempts": [...] (docs/JSON.md), when they are
 * one job: for report --json. */
void ncs_jobset_json_attempts(const struct ncs_jobset *s, struct ncs_json *j, int job);
#endif
