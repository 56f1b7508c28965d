/* jobsum.h — the job summary, an analysis plugged into the loader's read (model/jobload.h):
 * per rank, per (operation, size bucket, communicator) calls, bytes, time and bus bandwidth;
 * its window (t_first, t_last; no communication time: the union of a process's intervals is
 * exact only with its calling threads' batches told apart, model/ivunion.h, which the doctor's
 * facts, metrics and a caller's on_file_call take); the primary communicator and its transports to each peer; the host's
 * topology (kept by one file per host); and the cross-rank straggler analysis (straggler.h;
 * not run when the caller's events say no_stragglers), all on the job clock. A row's
 * transport is the set of transports all ranks of its communicator reported.
 *
 * Contract: ncs_jobsum_load() reads the files through ncs_job_load() with the summary plugged
 * in before the caller's own plug-ins (`o`: its file_visitor and file_done are called after
 * the summary's, for each file), and returns the summary with the loader's per-file figures
 * (path, read result, clock) copied into each rank's entry. The optional events `ev` see every
 * call, communicator event and kernel on the job clock, serialised (one at a time, from any
 * thread). The straggler engine is fed a batch at a time, each batch handed over at the end of
 * the chunk that released it, so in lockstep (model/jobload.h) its window holds a chunk or two
 * of collectives per communicator; read whole, it grows with the longest trace (64 B per
 * collective per communicator, capped at 2^20). Returns 0, or 2 when no file could be read
 * (*out is then set when the summary could be made). */
#ifndef NCS_JOBSUM_H
#define NCS_JOBSUM_H
#include <stddef.h>
#include <stdint.h>
#include "analysis/straggler.h"
#include "model/jobload.h"
#include "model/rules.h"
#include "model/topo.h"

#define NCS_NBUCKETS 48
/* Rows are per size bucket: floor(log2(bytes as passed)), 0 for 0 or 1 byte, at most 47. The
 * bucket of a call that moves S bytes (nccl-tests' S, model/rules.h): */
static inline int ncs_job_bucket(double S) {
  int b = ncs_rule_log2(S);
  return b < 0 ? 0 : b < NCS_NBUCKETS - 1 ? b : NCS_NBUCKETS - 1;
}

struct ncs_opstat {
  uint32_t op;
  int bucket;
  uint64_t comm_id;           /* the communicator (0 none) */
  char transport[24];         /* its transports, all ranks together: "P2P", "NET+P2P", "?" */
  uint64_t calls, bytes;      /* bytes: count x datatype size, as passed */
  double time_s, busbytes;    /* busbw = busbytes / time_s */
  double steps;               /* the calls' algorithm steps (ncs_rule_steps): their expected time's latency part */
  double max_s;
};

struct ncs_jrank {
  const char *path;
  int64_t created_ns;         /* realtime of its file header's creation, 0 unknown */
  char host[128];
  char cmdline[256];          /* NULs turned to spaces; escape on output */
  char nccl_version[16];
  uint32_t pid;
  int rank, nranks;           /* in its primary communicator (the largest; ties: the lowest
                                 comm_id); -1 / 0 unknown. Holding several of its ranks (a
                                 rank per thread): the lowest, rank_hi the highest, held how many */
  int rank_hi, held;
  uint64_t comm_id;           /* that communicator, 0 none */
  int read_rc, truncated;
  char error[1024];
  uint64_t dropped, calls, gpu_calls, gpu_unmatched;
  /* clock */
  uint64_t clock_pairs, clock_unc_ns;
  int64_t clock_offset_ns;    /* realtime - monotonic at the first pair */
  double clock_drift_ppm;
  /* window and communication (job clock, ns) */
  int64_t t_first, t_last;
  struct ncs_opstat *ops;
  int nops, capops;
  unsigned tclass_mask;       /* 1 << NCS_TC_* seen in its transport lines */
  int tmat_n;                 /* transport row of its largest communicator (NCS_TC_* per peer) */
  unsigned char *tmat;        /* [tmat_n] its row: class to each peer, 0 unknown; nranks <= 64 */
  int from_profiler;          /* its calls were rebuilt from NCCL's profiler events and kernel
                                 activity (no wrapper reached its NCCL: model/profcalls.h) */
  uint64_t profiler_calls, profiler_gpu_timed; /* those calls, and how many got a kernel's GPU time */
  struct ncs_topo *topo;      /* its host's GPUs and links (TOPO records); kept by one file
                                 per host, NULL in the others and when there is none */
};

struct ncs_jobdata {
  int n;
  struct ncs_jrank *r;        /* in file order */
  struct ncs_strag *strag;    /* NULL when the caller's events asked for none (no_stragglers) */
  int64_t origin;             /* realtime ns of job time 0 (earliest file creation) */
  struct ncs_opstat *ops;     /* summed over ranks */
  int nops;
  int gpu_timing;             /* 1 when most collectives had GPU times */
  int hosts;
  double clock_err_us;        /* stated alignment error bound (docs/CLOCKS.md) */
  double decode_s;
  int lockstep;               /* 1 when the files were read in lockstep (see ncs_job_load) */
  struct ncs_jobset *jobs;    /* the files grouped into jobs and attempts (model/jobs.h), from
                                 the same read */
};

/* Per-call event for callbacks (every call). start/end: GPU interval when has_gpu, else host;
 * calls that move no data (groups, registration, ...) have their host interval, bytes 0. */
struct ncs_jev {
  const struct ncs_call *c;
  const struct ncs_aligned *a;
  int64_t start, end;
  int has_gpu;
  uint64_t bytes, comm_id;
  double busbytes;            /* bus bytes (nccl-tests' S x the op's busbw factor, model/rules.h),
                                 0 when the op moves no data: its busbw is ncs_jev_busbw(), made
                                 by the reader that uses it (most calls' is never read) */
  int rank, nranks;           /* in the call's communicator, -1/0 when none */
  int bucket;                 /* its row's size bucket (ncs_job_bucket of nccl-tests' S on
                                 nranks) for a collective or point-to-point call; 0 otherwise */
  const char *transport;
};
/* Bus bandwidth GB/s of `busbytes` moved in `ns` ns: 0 when ns is 0 (one expression, so every
 * reader gets the same double) */
static inline double ncs_busbw_gbps(double busbytes, int64_t ns) {
  double dt = (double)ns / 1e9;
  return dt > 0 ? busbytes / dt / 1e9 : 0;
}
/* A call's bus bandwidth GB/s, 0 when it moves no data or took no time. */
static inline double ncs_jev_busbw(const struct ncs_jev *e) { return ncs_busbw_gbps(e->busbytes, e->end - e->start); }
struct ncs_jcomm_ev {
  int is_end;                 /* 0 init, 1 finalize/destroy/abort/revoke */
  uint32_t op;
  uint64_t comm_id;
  int rank, nranks;
  int64_t t;                  /* job clock ns */
};

struct ncs_jobsum_events {
  void *ctx;
  /* 1: the straggler analysis is not run (J->strag is NULL), for a command that prints no
   * straggler figure (compare) */
  int no_stragglers;
  void (*on_call)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e);
  /* Every call as on_call, on the thread reading its file and not serialised: for per-file
   * state (files are read in parallel), without a lock taken per call. */
  void (*on_file_call)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e);
  /* Every call as on_file_call, in runs of 1..NCS_ALIGN_RUN calls of one file (e[0..n-1], in
   * file order; valid during the hook only), after jobsum took them: one hook call a run. */
  void (*on_file_calls)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e, size_t n);
  void (*on_comm)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e);
  /* Every kernel, copy and set (KERNEL records) with its times on the job clock (align.h),
   * serialised like on_call; a file's kernels come in file order, on the thread reading that
   * file (its plug-in visitors' thread: their per-file state, e.g. KERNEL_NAME, is current). */
  void (*on_kernel)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *k);
};

int ncs_jobsum_load(int nfiles, char **files, const struct ncs_load_opts *o, const struct ncs_jobsum_events *ev,
                    struct ncs_jobdata **out);
void ncs_job_free(struct ncs_jobdata *j);
/* Transport string of a class mask: "P2P", "NET+P2P", "?" when empty. */
void ncs_tmask_name(unsigned mask, char *buf, size_t len);
#endif
