/* jobload.h — reads every trace of a job in parallel and summarises it on one clock: per rank,
 * per (operation, size bucket, transport) calls, bytes, time and bus bandwidth; communication
 * time; clock alignment figures; and the cross-rank straggler analysis (straggler.h). A row's
 * transport is the set of transports all ranks of its communicator reported.
 *
 * Contract: ncs_job_load() expands nothing (give it files), reads them with up to `threads`
 * threads (0: NCCLSCOPE_THREADS, else one per online CPU), each file streamed through an
 * aligner (align.h) into the straggler engine (straggler.h), in one of two ways:
 *  - lockstep: every file is open at once and files advance one chunk per round (rounds in
 *    parallel, one file per thread at a time); a round advances the files whose latest call
 *    released (job clock) is within the median chunk's time span of the slowest file, so the
 *    ranks stay about one chunk apart and straggler.h's window holds a chunk or two of
 *    collectives per communicator. Memory: per file its aligner hold (about two chunks of
 *    calls, 120 B each) and ~1 KiB of state (34 KiB with GPU times: align.h), per thread
 *    one chunk's buffers: bounded by ranks x communicators x chunk size, independent of trace
 *    length;
 *  - whole files: each thread opens one file, reads it to its end, then the next; per thread
 *    one aligner hold and one file's visitors and plug-in state (a file not yet taken holds
 *    none), but straggler.h's window grows with the longest trace (96 B per collective per
 *    communicator, capped at 2^20).
 * The choice is made from the file sizes and the first chunk headers, before decoding: the way
 * that keeps less (lockstep always past 2^20 collectives per file, where the window would give
 * collectives up); NCCLSCOPE_LOCKSTEP=1 or 0 forces it. Results are the same either way. With
 * plugins_only (report, doctor) files are always read whole: plug-ins make a file's reading
 * state at its first record, which lockstep would make every file hold at once.
 * Optional callbacks see every call, communicator event and kernel on the job clock,
 * serialised (one at a time, from any thread). Damaged or truncated files are reported in their rank's entry
 * and everything before the damage is used. Returns 0, or 2 when no file could be read. */
#ifndef NCS_JOBLOAD_H
#define NCS_JOBLOAD_H
#include <stdint.h>
#include "model/align.h"
#include "analysis/straggler.h"
#include "model/topo.h"
#include "io/mux.h"
#include "io/trace.h"
#include "model/jobs.h"
#include "model/rules.h"

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
  int64_t created_ns;         /* realtime of its file header's creation, 0 unknown (and with
                                 plugins_only) */
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
  char error[256];
  uint64_t dropped, calls, gpu_calls, gpu_unmatched;
  /* clock */
  uint64_t clock_pairs, clock_unc_ns;
  int64_t clock_offset_ns;    /* realtime - monotonic at the first pair */
  double clock_drift_ppm;
  /* window and communication (job clock, ns) */
  int64_t t_first, t_last;
  double comm_s;              /* union of the operations' intervals (GPU when timed) */
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
  struct ncs_strag *strag;
  int64_t origin;             /* realtime ns of job time 0 (earliest file creation) */
  struct ncs_opstat *ops;     /* summed over ranks */
  int nops;
  int gpu_timing;             /* 1 when most collectives had GPU times */
  int hosts;
  double clock_err_us;        /* stated alignment error bound (docs/CLOCKS.md) */
  double decode_s;
  int lockstep;               /* 1 when the files were read in lockstep (see ncs_job_load) */
  struct ncs_jobset *jobs;    /* the files grouped into jobs and attempts (model/jobs.h), from
                                 the same read; also with plugins_only */
};

/* Per-call event for callbacks (every call). start/end: GPU interval when has_gpu, else host;
 * calls that move no data (groups, registration, ...) have their host interval, bytes 0. */
struct ncs_jev {
  const struct ncs_call *c;
  const struct ncs_aligned *a;
  int64_t start, end;
  int has_gpu;
  uint64_t bytes, comm_id;
  double busbw_gbps;          /* 0 when the op moves no data or time is 0 */
  int rank, nranks;           /* in the call's communicator, -1/0 when none */
  const char *transport;
};
struct ncs_jcomm_ev {
  int is_end;                 /* 0 init, 1 finalize/destroy/abort/revoke */
  uint32_t op;
  uint64_t comm_id;
  int rank, nranks;
  int64_t t;                  /* job clock ns */
};

struct ncs_load_opts {
  int threads;                /* 0: NCCLSCOPE_THREADS or online CPUs */
  const char *progress_label; /* NULL: no progress bar */
  void *ctx;
  void (*on_call)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e);
  void (*on_comm)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e);
  /* Every kernel, copy and set (KERNEL records) with its times on the job clock (align.h),
   * serialised like on_call; a file's kernels come in file order, on the thread reading that
   * file (its plug-in visitors' thread: their per-file state, e.g. KERNEL_NAME, is current). */
  void (*on_kernel)(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *k);
  /* Plug-ins: analyses that read the same records in the same single read of each file
   * (docs/ARCHITECTURE.md, "Adding an analysis"). file_visitor appends the visitors that want
   * file `file`'s records to m (each with its own ctx) before its first record (whole files:
   * when a thread takes the file, under the loader's lock, so one file_visitor at a time); file_done
   * follows the file's read with its status and ncs_trace_read's result (0 read, 1 damaged,
 * 2 not readable; also for a file that could not be opened).
   * Without in_order, files are read by several threads: callbacks of one file come one at a
   * time, those of different files may run at once (keep per-file state apart). */
  void (*file_visitor)(void *ctx, int file, struct ncs_mux *m);
  void (*file_done)(void *ctx, int file, int read_rc, const struct ncs_read_status *st);
  /* in_order: files read one after another, in file order, on the calling thread: for
   * plug-ins with state shared across files. */
  int in_order;
  /* plugins_only: skip the job summary (clock alignment, rows, stragglers; ncs_jrank then
   * holds only path, read_rc, truncated, error and dropped): the plug-ins are the analysis. */
  int plugins_only;
};

int ncs_job_load(int nfiles, char **files, const struct ncs_load_opts *o, struct ncs_jobdata **out);
void ncs_job_free(struct ncs_jobdata *j);
/* Realtime ns at which trace `path` was created (its file header), 0 when it has no readable
 * header: a job clock's origin, known before any file is decoded. */
int64_t ncs_file_created_ns(const char *path);
/* Transport string of a class mask: "P2P", "NET+P2P", "?" when empty. */
void ncs_tmask_name(unsigned mask, char *buf, size_t len);
#endif
