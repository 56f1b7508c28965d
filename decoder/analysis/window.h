/* window.h — bounded traces (NCCLSCOPE_KEEP): the whole run from the AGGREGATE records plus the
 * last window's calls, and the window's start and end, for any command that says which of its
 * figures are whole-run and which the window's (report's section is window.c's own analysis;
 * doctor, html and timeline plug these calls into their one read).
 *
 * Contract: ncs_window_new(nfiles) before the read; ncs_window_visitor() fills a zeroed visitor
 * for file `file` (its own ctx; per-file state, so files may be read in parallel);
 * ncs_window_file_done() after that file's read (frees its per-call tables); after the read,
 * ncs_window_sum() fills *s (rows sorted by op, then bytes class) and returns how many files
 * were bounded: 0 for unbounded traces (then nothing is to be said). Memory: window.c's
 * per-file bound, only for bounded files. ncs_window_free() takes NULL. Report's `window`
 * analysis returns the sum as its result (NULL when it could not be made); render/window_render.h
 * words it. */
#ifndef NCS_WINDOW_H
#define NCS_WINDOW_H
#include <stddef.h>
#include <stdint.h>
#include "io/trace.h"

/* A job-wide row: one op and bytes class (log2 of a call's bytes) over every bounded file. */
struct ncs_window_row { unsigned op, bclass; uint64_t calls, bytes, gpu_calls, gpu_ns, failed; double busbytes; };
struct ncs_window_sum {
  int files, nfiles;                  /* bounded files, files read */
  uint64_t keep_ns, keep_bytes;       /* the bound the job ran with (NCCLSCOPE_KEEP); 0: not that kind */
  uint64_t agg_calls, win_calls;      /* calls before the window (aggregates), calls in it */
  uint64_t t0_utc, t1_utc;            /* the window over the bounded files, ns since the epoch (0: none) */
  int n;
  struct ncs_window_row r[512];
  uint64_t other_calls;               /* calls of no bandwidth (group, communicator, ...) and past the rows */
  /* kernel activity over the whole run (AGG_KERNELS + the window's kernels), summed over the
   * files that have it (kact_files; 0: unknown): NCCL kernels' union, its exposed part, and the
   * part of the union before the window (from the aggregates) */
  int kact_files;
  uint64_t gpu_comm_ns, gpu_exposed_ns, gpu_comm_before_ns;
};
struct ncs_window;

struct ncs_window *ncs_window_new(int nfiles);
void ncs_window_visitor(struct ncs_window *w, int file, struct ncs_visitor *v);
void ncs_window_file_done(struct ncs_window *w, int file);
int ncs_window_sum(const struct ncs_window *w, struct ncs_window_sum *s);
void ncs_window_free(struct ncs_window *w);
#endif
