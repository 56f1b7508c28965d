/* straggler.h — lining up collectives across ranks: arrival skew, who arrived last, the wait
 * each rank caused, and collectives that do not line up (mismatched or missing: a hang).
 *
 * Contract: feed each file's COMM records and its collective calls with their arrival time
 * already on the job clock (align.h): the device start of the call's work where the call has GPU
 * time (when the rank's GPU really reached the collective: a job that queues launches ahead
 * enters NCCL on the host long before, and every rank's host does so early), the host entry
 * where it has none; files may be fed from several threads at once, but each
 * file from one thread at a time. A collective is identified by (comm_id, seq). Memory: per
 * communicator, a few counters per rank plus a sliding window of open collectives (64 bytes
 * each, a cache line, whatever the number of ranks) that closes each collective as soon as all its ranks
 * have entered it. The window spans how far apart in sequence the ranks being read are: with
 * files read in lockstep (jobload.h) about a chunk or two of collectives; with files read one
 * after another the longest trace's collectives on that communicator (about 6.4 MB per 100k
 * collectives), never ranks x calls, and at most 2^20 open collectives per communicator
 * (older ones are given up and counted). An open collective every rank has gone 65,536 past
 * (or twice the most a file's calls on a communicator went back, threads' chunks out of order)
 * will not complete (a rank's record of it was dropped): it leaves the window and counts at
 * finish as incomplete, as if kept. A one-rank communicator's window is a bit per collective. Results do not depend on the order of arrivals
 * (equal entry times: the higher rank counts as last). Ranks belong to communicators, not
 * files: a file may hold several ranks of one communicator (a rank per thread, ncclCommInitAll)
 * and each is lined up and attributed on its own. A communicator some of whose ranks are in
 * none of the files given is not lined up (said in the output, its arrivals counted as
 * untraced); until its ranks show up (a rank's COMM record), a communicator that cannot be
 * complete even if every file not yet seen held as many of its ranks as the most one file
 * holds keeps a window of at most 4096 open collectives. Never exits; failures are counted and reported. */
#ifndef NCS_STRAGGLER_H
#define NCS_STRAGGLER_H
#include <stdint.h>
#include <stdio.h>
#include "base/json.h"
#include "io/trace.h"

struct ncs_strag;

/* Per rank, after ncs_strag_finish, worst first: one row per rank a file holds in its
 * primary communicator (the largest it belongs to; ties: the lowest comm_id). A process with a
 * rank per thread has one row per rank; a file in no communicator has none. A rank's
 * collectives on its other communicators count in its row (matched by CUDA device when its
 * file holds several ranks; not counted when that cannot be told). */
struct ncs_strag_rank {
  int file;
  int rank;                 /* rank in its file's primary communicator */
  const char *host;
  uint32_t pid;
  uint64_t arrivals;        /* collectives it entered that all ranks entered */
  uint64_t last_count;      /* times it was the last to enter */
  double wait_caused_s;     /* sum over those collectives of (last entry - each other rank's entry) */
  double mean_late_us;      /* mean of (its entry - first entry) over its collectives */
};

struct ncs_strag *ncs_strag_new(int nfiles);
void ncs_strag_free(struct ncs_strag *s);
void ncs_strag_file_info(struct ncs_strag *s, int file, const char *host, uint32_t pid);
void ncs_strag_comm(struct ncs_strag *s, int file, const struct ncs_comm *c);
/* A collective call of `file` entered at job time `t_enter` (ns). Non-collectives ignored. */
void ncs_strag_arrive(struct ncs_strag *s, int file, const struct ncs_call *c, int64_t t_enter);
/* The same for n arrivals of one file at once (one lock per run on the same communicator). */
struct ncs_strag_arrival {
  uint32_t comm, op, datatype; int32_t root; uint64_t seq, count;
  int64_t t;                /* arrival, job clock: GPU start when has_gpu, else host entry */
  int64_t gpu_end;          /* GPU end, job clock, when has_gpu (feeds the clock check) */
  int has_gpu;
};
void ncs_strag_arrive_batch(struct ncs_strag *s, int file, const struct ncs_strag_arrival *a, size_t n);
/* The same for n collective calls (seq > 0) of `file` on its communicator index `comm` when
 * ncs_strag_lines_up says 2 (one rank), with t = 0 and no GPU time: as arrive_batch of their
 * arrivals, without making them. */
void ncs_strag_arrive_one_calls(struct ncs_strag *s, int file, uint32_t comm, const struct ncs_call *c, size_t n);
/* 1 when the arrivals of `file`'s calls on its communicator index `comm` would be lined up: a
 * COMM record of it was fed and accepted; 0 when they would be ignored (no such record yet).
 * Lets a caller skip the work of preparing arrivals that would be thrown away. 2: lined up, and
 * the communicator has one rank: each collective is complete as it opens, and its arrival's time
 * and GPU time enter no figure (skew, wait and lateness are 0 whatever they are), so a caller may
 * pass t = 0 and no GPU time instead of putting the call on the job clock. */
int ncs_strag_lines_up(const struct ncs_strag *s, int file, uint32_t comm);
void ncs_strag_file_done(struct ncs_strag *s, int file, int truncated);
void ncs_strag_finish(struct ncs_strag *s); /* once: a second call does nothing */

/* Results (after finish). */
int ncs_strag_ranks(const struct ncs_strag *s, const struct ncs_strag_rank **out);
uint64_t ncs_strag_collectives(const struct ncs_strag *s);  /* complete collectives */
uint64_t ncs_strag_incomplete(const struct ncs_strag *s);   /* entered by some ranks only */
uint64_t ncs_strag_mismatches(const struct ncs_strag *s);
double ncs_strag_skew_mean_us(const struct ncs_strag *s);
double ncs_strag_skew_max_us(const struct ncs_strag *s);
size_t ncs_strag_peak_window(const struct ncs_strag *s);   /* most open collectives at once */
int ncs_strag_partial(const struct ncs_strag *s);  /* communicators some ranks of which have no trace */
int ncs_strag_claimed_twice(const struct ncs_strag *s); /* communicators a rank of which two files claim */
/* Clock check: a collective's GPU work ends at nearly the same moment on every rank, so on
 * sampled collectives (every 64th seq, the first 1024 per communicator) each host's mean GPU
 * end minus the mean of all ranks measures that host's residual clock offset after alignment.
 * Fills up to `max` hosts (name, median offset in us over the samples), by host name; returns the number of
 * hosts, 0 when fewer than two hosts shared sampled collectives. */
struct ncs_strag_host_offset { const char *host; double offset_us; int samples; };
int ncs_strag_clock_check(const struct ncs_strag *s, struct ncs_strag_host_offset *out, int max);
/* Everything the engine found, as data (after ncs_strag_finish; valid until ncs_strag_free):
 * render/straggler_render.h prints it as report's "Who is slow" section and JSON. */
#define NCS_STRAG_LIST 32  /* mismatches and hang points listed (more are counted) */
struct ncs_strag_sig { uint32_t op, dtype; uint64_t count; int32_t root; };
/* A collective whose ranks did not all call the same thing: `rank` (-1: `odd` ranks) called
 * `got`, the others `want`. */
/* A collective whose ranks called different signatures: the fewer ranks' (of two groups as many,
 * the one without the lowest rank), `odd` of them, the lowest `rank`; listed by (seq, comm_id). */
struct ncs_strag_mismatch { uint64_t comm_id, seq; int rank; uint32_t odd; struct ncs_strag_sig got, want; };
/* Per communicator, the first collective some ranks never entered (a hang looks like this):
 * `entered` of `nranks` did; `never` ranks did not, the first 16 of them in `rank`. */
struct ncs_strag_missing { uint64_t comm_id, seq; uint32_t entered; int nranks, never; int rank[16]; };
/* A communicator not lined up: some of its ranks have no trace among the files given
 * (traced < nranks), or two files claim its rank `claimed_twice` (else -1). */
struct ncs_strag_skipped { uint64_t comm_id; int nranks, traced, claimed_twice; };
struct ncs_strag_result {
  int nfiles, ncomms;                 /* files fed; communicators seen */
  int nranks; const struct ncs_strag_rank *rank; /* ncs_strag_ranks: worst first */
  uint64_t complete, incomplete;      /* collectives every rank / some ranks entered */
  double skew_mean_us, skew_max_us;   /* arrival skew over the complete ones */
  uint64_t skew_max_comm, skew_max_seq; /* where the largest was (when complete) */
  size_t peak_open;                   /* most open collectives at once */
  uint64_t given_up;                  /* open collectives pushed out of a full window */
  uint32_t window_max;                /* that window, in collectives */
  uint64_t oom;                       /* allocations that failed: figures incomplete */
  int partial, claimed_twice;         /* communicators not lined up, by reason */
  uint64_t mismatches;                /* in all; the first NCS_STRAG_LIST listed */
  int nmismatch; struct ncs_strag_mismatch mismatch[NCS_STRAG_LIST];
  int nmissing; struct ncs_strag_missing missing[NCS_STRAG_LIST];
  int noffsets; const struct ncs_strag_host_offset *offset; /* ncs_strag_clock_check */
  int nskipped; const struct ncs_strag_skipped *skipped; /* communicators not lined up, in the
                                                            engine's order */
};
const struct ncs_strag_result *ncs_strag_result(const struct ncs_strag *s);
#endif
