/* hang.h — what every rank was doing at the end of its trace, and the verdicts that follow:
 * hang, dead rank, init hang, desync (docs/DOCTOR.md).
 *
 * Contract: fed one file at a time (ncs_hang_visitor fills a visitor for file i, then
 * ncs_hang_file_done with its read status), or by ncs_hang_read_all which reads the files
 * itself; then ncs_hang_finish computes the verdicts and the per-rank view. Per file it keeps
 * its communicators (each with its last 64 collectives), its last call, the calls in flight of
 * its last chunk (INFLIGHT records, docs/FORMAT.md) and its last sign of life (the last CLOCK
 * pair, written with every chunk, a heartbeat even when the process makes no call; after a
 * chunk flagged `idle` the next may be a heartbeat period, 2 s, away: a dead rank is judged
 * with that allowance, format.h NCS_IDLE_BEAT_MS). Per
 * communicator it keeps one signature per collective sequence number (the first rank read sets
 * it, the others are compared: desync; none for a one-rank communicator, which has no other
 * rank to compare with), up to seq 2^32, in model/seqsigs.h's store: its memory
 * grows with the distinct signatures and distinct blocks of 4096 of them, not with the calls.
 * Files may be read in parallel (one thread per file at a time): per-file state is the file's
 * own; signatures go to the shared table in batches under a lock.
 * Evidence names the culprits first (the ranks that never arrived or died), then the ranks that
 * arrived grouped by state as ranges (model/ranks.h): never one line per arrived rank.
 * Times are realtime ns (each trace's clock pairs). A rank is blamed for not arriving only
 * when its own trace shows it alive at least `hang_after_s` after a peer arrived, so flush lag
 * (a trace whose latest chunk is not written yet) never reads as a hang. Never prints. */
#ifndef NCS_HANG_H
#define NCS_HANG_H
#include <stdint.h>
#include "io/trace.h"

#define NCS_HANG_DEFAULT_S 2.0
#define NCS_HANG_EVIDENCE 24

enum ncs_hang_kind { NCS_HANG_DESYNC = 1, NCS_HANG_DEAD = 2, NCS_HANG_INIT = 3, NCS_HANG_STUCK = 4,
                     /* how a job ended badly (docs/DOCTOR.md "Bad endings") */
                     NCS_HANG_INIT_FAILED = 5,   /* an init returned an error */
                     NCS_HANG_INIT_ABORTED = 6,  /* a non-blocking init aborted before it completed */
                     NCS_HANG_COMM_ABORTED = 7,  /* a communicator aborted or revoked mid-collective */
                     NCS_HANG_IN_FLIGHT = 8,     /* a trace cut inside an NCCL call, not yet judged (a
                                                    job still running shows it too: watch ignores it) */
                     NCS_HANG_CALLS_LOST = 9,    /* calls lost: the trace's file system was full */
                     NCS_HANG_MISSING = 10 };    /* a collective some ranks entered and others, seen
                                                    alive after, had not when the traces end: too soon
                                                    to call a hang (a note, not judged by watch) */

struct ncs_hang_verdict {
  int kind;                   /* enum ncs_hang_kind */
  const char *id, *title;     /* "desync", "dead-rank", "init-hang", "hang" */
  /* data (docs/JSON.md, the HTML headline) */
  uint64_t comm_id, seq;      /* the communicator and the collective (init: the unique-id hash, 0) */
  uint32_t op;                /* the operation the ranks that arrived are in */
  int nranks;                 /* ranks of the communicator, 0 unknown */
  int nentered, nmissing;     /* ranks that arrived / never did (the culprits: missing, dead) */
  int *entered, *missing;     /* all of them, in the order found (owned by the ncs_hang) */
  int capentered, capmissing;
  int64_t since_rt;           /* when the first rank arrived (realtime ns), 0 unknown */
  double waited_s;            /* how long arrived ranks were seen waiting */
  /* the time lost (desync, dead-rank, init-hang, hang; else lost_n 0): for each traced process
   * seen alive after since_rt, its last sign of life - since_rt (from then on the job made no
   * progress on that communicator); docs/DOCTOR.md "Time lost" */
  int lost_n;                 /* processes counted */
  double lost_s;              /* summed over them (process-seconds) */
  double lost_max_s, lost_min_s; /* the longest (the job's wall time lost) and the shortest */
  double lost_share;          /* lost_s / their traced time (file creation to last sign of life) */
  struct ncs_hang_lost { int rank; double s; } *lost_per; /* [lost_n], by rank (owned) */
  /* text */
  char evidence[NCS_HANG_EVIDENCE][320];
  int nevidence, more;
  char next[640];
};

/* One traced process as it was last seen. */
struct ncs_hang_rank {
  const char *path;
  char host[64];
  uint32_t pid;
  int rank, nranks;           /* in its largest communicator, else the launcher's, -1 / 0 */
  int complete, cut, damaged; /* complete: FINAL chunk, or every communicator closed */
  int64_t alive_rt;           /* last sign of life (realtime ns), 0 unknown */
  uint64_t calls;             /* CALL records */
  int has_last;               /* the last collective that returned */
  uint32_t last_op;
  uint64_t last_seq, last_comm_id;
  int64_t last_exit_rt;
  int inflight;               /* 0 none, 1 inside an NCCL call (host), 2 GPU work not finished */
  uint32_t in_op;
  uint64_t in_seq, in_comm_id;
  int64_t in_since_rt;
};

struct ncs_hang;
/* paths[n] must live until ncs_hang_free. NULL when out of memory. */
struct ncs_hang *ncs_hang_new(int n, char *const *paths, double hang_after_s);
void ncs_hang_visitor(struct ncs_hang *h, int file, struct ncs_visitor *v);
void ncs_hang_file_done(struct ncs_hang *h, int file, int read_rc, const struct ncs_read_status *st);
/* Reads every file (ncs_trace_read); returns the worst read result (0, 1 damaged, 2 unreadable). */
int ncs_hang_read_all(struct ncs_hang *h);
void ncs_hang_finish(struct ncs_hang *h);
int ncs_hang_nverdicts(const struct ncs_hang *h);
const struct ncs_hang_verdict *ncs_hang_verdict_at(const struct ncs_hang *h, int i);
int ncs_hang_nranks(const struct ncs_hang *h);
const struct ncs_hang_rank *ncs_hang_rank_at(const struct ncs_hang *h, int i); /* sorted by rank */
int64_t ncs_hang_origin(const struct ncs_hang *h);  /* realtime ns of the earliest trace start */
/* "13:59:19.123 UTC (+12.345 s)" for realtime t, relative to the job origin. */
void ncs_hang_time(const struct ncs_hang *h, int64_t t, char *buf, size_t len);
void ncs_hang_free(struct ncs_hang *h);
/* Puts the verdicts (after ncs_hang_finish) first in the doctor's list (analysis/doctor.h),
 * each pointing at its data (h must outlive d's use). */
struct ncs_doctor;
void ncs_hang_to_doctor(const struct ncs_hang *h, struct ncs_doctor *d);
#endif
