/* gpu_lanes.h — the HTML report's picture of overlap (`ncclscope html`, section "gpu-streams"):
 * per rank, one lane per GPU stream (the six lowest stream ids in order, the rest on one "other
 * streams" lane) with its compute kernels, NCCL kernels and copies over a short window of the run, and under them a lane of exposed communication (NCCL kernel time
 * with no compute beside it), with the window's figures in a table.
 *
 * Contract: ncs_gpulanes_add takes every kernel (the loader's on_kernel, times on the job
 * clock) in any order across files, in file order within one; ncs_gpulanes_html writes the
 * section once all files are read. Bounded memory whatever the trace length: for the first
 * NCS_GPULANES_ROWS files, at each job-clock checkpoint (0, then 0.5 ms, 1 ms, 2 ms, ... doubling)
 * the first NCS_GPULANES_KEEP kernels starting at or after it (24 B each, ~2 MB in all). The
 * window shown starts at the last checkpoint at or before the middle of the ranks' kernel
 * activity (from the earliest kernel to the end of the shortest rank's): a stretch from the
 * middle of the run, where steps have settled; when every rank ran fewer kernels than its share,
 * all of them. It ends where the first rank that filled its share runs out. Not thread-safe (the
 * loader serialises on_kernel). */
#ifndef NCS_GPU_LANES_H
#define NCS_GPU_LANES_H
#include <stdio.h>
#include "analysis/jobsum.h"

#define NCS_GPULANES_ROWS 8
#define NCS_GPULANES_KEEP 256
struct ncs_gpulanes;
struct ncs_gpulanes *ncs_gpulanes_new(void); /* NULL when out of memory */
void ncs_gpulanes_free(struct ncs_gpulanes *g);
void ncs_gpulanes_add(struct ncs_gpulanes *g, int file, const struct ncs_aligned_kernel *k);
/* Writes <section id="gpu-streams">; says so when no trace had kernel activity. */
void ncs_gpulanes_html(FILE *f, const struct ncs_gpulanes *g, const struct ncs_jobdata *J);
#endif
