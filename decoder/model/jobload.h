/* jobload.h — the loader: reads every trace of a job once, puts its times on one job clock and
 * hands every record to the analyses plugged into that read. It computes nothing about the
 * job itself: the job summary (per-op rows, transports, topology, stragglers) is an analysis
 * plugged in like the others (analysis/jobsum.h).
 *
 * Contract: ncs_job_load() expands nothing (give it files) and reads them with up to `threads`
 * threads (0: NCCLSCOPE_THREADS, else one per online CPU), in one of three ways:
 *  - in_order: one file after another, in file order, on the calling thread;
 *  - whole files: each thread opens one file, reads it to its end, then the next (a file not
 *    yet taken holds no reading state, no visitors and no plug-in state);
 *  - lockstep (only when a plug-in takes aligned calls): every file is open at once and files
 *    advance one chunk per round (rounds in parallel, one file per thread at a time); a round
 *    advances the files whose latest call released (job clock) is within the median chunk's
 *    time span of the slowest file, so the ranks stay about one chunk apart. Memory: per file
 *    its aligner hold (one or two chunks of calls, 120 B each: align.h) and ~1 KiB of state (34 KiB with
 *    GPU times: align.h), per thread one chunk's buffers: independent of trace length.
 *    Whole files and in_order: a thread's next file starts from the aligner ring and GPU-time index
 *    its last file left (align.h, struct ncs_aligner_spare): one ring per thread, the largest its
 *    files needed, is kept until the load ends.
 * The choice between the last two is made from the file sizes and the first chunk headers,
 * before decoding: lockstep past 2^20 collectives per file or when the files' aligner holds
 * together keep less than 64 B per collective of the longest file (what a cross-file window
 * fed whole files would keep); NCCLSCOPE_LOCKSTEP=1 or 0 forces it. Results are the same
 * either way.
 * Every file's records go through one visitor per file (io/mux.h): the loader's own (the
 * grouping into jobs, model/jobs.h; the aligner; the progress bar), then the plug-ins'. A
 * process whose NCCL no wrapper reached has its calls rebuilt from NCCL's profiler events and
 * handed to the same visitors (model/profcalls.h). Damaged or truncated files are reported in
 * their entry and everything before the damage is used. Returns 0, or 2 when no file could be
 * read. */
#ifndef NCS_JOBLOAD_H
#define NCS_JOBLOAD_H
#include <stdint.h>
#include "io/mux.h"
#include "io/trace.h"
#include "model/align.h"
#include "model/jobs.h"

/* What the read of one file tells, whoever is plugged in. */
struct ncs_fileread {
  const char *path;
  int64_t created_ns;         /* realtime of its file header's creation, 0 unknown (and when no
                                 plug-in takes aligned calls: the header is not peeked) */
  int read_rc, truncated;     /* ncs_trace_read's result; cut (ncs_read_status) */
  char error[1024];
  uint64_t dropped;
  /* the aligner's figures (zero when no plug-in takes aligned calls) */
  uint64_t gpu_unmatched, clock_pairs, clock_unc_ns;
  int64_t clock_offset_ns;    /* realtime - monotonic at the first pair */
  double clock_drift_ppm;
  int from_profiler;          /* its calls were rebuilt from NCCL's profiler events and kernel
                                 activity (no wrapper reached its NCCL: model/profcalls.h) */
  uint64_t profiler_calls, profiler_gpu_timed; /* those calls, and how many got a kernel's GPU time */
};

struct ncs_jobread {
  int n;
  struct ncs_fileread *r;     /* in file order */
  int64_t origin;             /* realtime ns of job time 0 (earliest file creation; 0 when the
                                 headers were not peeked) */
  int lockstep;               /* 1 when the files were read in lockstep (see ncs_job_load) */
  struct ncs_jobset *jobs;    /* the files grouped into jobs and attempts (model/jobs.h) */
};

/* A plug-in's hooks. Without in_order, files are read by several threads: the hooks of one
 * file come one at a time, on the thread reading it; those of different files may run at once
 * (keep per-file state apart). */
struct ncs_load_opts {
  int threads;                /* 0: NCCLSCOPE_THREADS or online CPUs */
  const char *progress_label; /* NULL: no progress bar */
  void *ctx;
  /* file_visitor appends the visitors that want file `file`'s records to m (each with its own
   * ctx) before its first record (docs/ARCHITECTURE.md, "Adding an analysis"; whole files:
   * when a thread takes the file, under the loader's lock, so one file_visitor at a time); file_done
   * follows the file's read with its status and ncs_trace_read's result (0 read, 1 damaged,
   * 2 not readable; also for a file that could not be opened). */
  void (*file_visitor)(void *ctx, int file, struct ncs_mux *m);
  void (*file_done)(void *ctx, int file, int read_rc, const struct ncs_read_status *st);
  /* Calls on the job clock (align.h), in the order the aligner releases them, in runs of 1 to
   * NCS_ALIGN_RUN (a[0..n-1]; the calls are valid during the hook only); setting it makes
   * the loader align (and peek every file's header for the job's origin). file_clock gives the
   * file's aligner before its first record, to put the file's other times on the job clock
   * (ncs_aligner_time); it lives until file_done. aligned_kernel: every kernel, copy and set
   * (KERNEL records) on the job clock, a file's in file order. */
  void (*aligned)(void *ctx, int file, const struct ncs_aligned *a, size_t n);
  void (*file_clock)(void *ctx, int file, const struct ncs_aligner *al);
  void (*aligned_kernel)(void *ctx, int file, const struct ncs_aligned_kernel *k);
  /* in_order: files read one after another, in file order, on the calling thread: for
   * plug-ins with state shared across files. */
  int in_order;
};

int ncs_job_load(int nfiles, char **files, const struct ncs_load_opts *o, struct ncs_jobread **out);
void ncs_jobread_free(struct ncs_jobread *j);
/* Realtime ns at which trace `path` was created (its file header), 0 when it has no readable
 * header: a job clock's origin, known before any file is decoded. */
int64_t ncs_file_created_ns(const char *path);
#endif
