/* gate_samples.h — what the CI gate judges, gathered from one run's calls: per (operation, size
 * bucket) the per-call bus bandwidth and time, and per rank the communication share of
 * successive blocks of its window (docs/COMPARE.md, "Method").
 *
 * Contract: ncs_gsamples_attach() from the load's file_visitor (it adds a visitor for the
 * chunks' ends); ncs_gsamples_calls() takes every call the loader hands to on_file_calls
 * (analysis/jobsum.h), in runs: a file's calls in file order, on the thread reading it, files in
 * parallel.
 * The per-file figures and the shared windows take each run at once (the windows under one lock
 * a run): a thread's calls reach them in the order it read them. A sample is ln(busbw GB/s) and ln(time
 * us) of one operation that moved data and took time:
 *  - a collective of a communicator of several ranks is one sample per collective (its ranks'
 *    calls lined up by (comm_id, seq), as analysis/straggler.h does): the call of its rank
 *    that took least time (of its GPU-timed calls, where it has any: a host interval is the
 *    launch, not the work), the rank that arrived last and waited for nobody, so the sample is
 *    what the collective itself took once every rank was in, not how late the others'
 *    hosts were (load, scheduling, a straggler: those are straggler's and the share's). It is
 *    taken when all nranks calls are in; collectives some of whose ranks no file holds are
 *    taken at ncs_gsamples_finish() with the calls that were (in seq order); open collectives
 *    are kept per communicator in a window of seqs, lowest open to highest, and those windows
 *    together span at most NCS_GS_OPEN seqs (past that a call is its own sample);
 *  - a Send, a Recv, a collective of one rank: one sample per call.
 * Each sample carries its time (the call's start; a collective's: the earliest start of its
 * ranks' calls) and a 64-bit hash of its identity (a call's file index and index in its file;
 * a collective's (comm_id, seq)); a collective's quickest call is chosen by (GPU-timed, time,
 * lowest file index). Files are read in parallel, so samples arrive in an order the threads
 * choose; nothing below depends on it. At most NCS_GS_CAP samples a row: the ones of smallest
 * hash (a bottom-k sample: the same set whatever the arrival order; a row holds at most
 * 2 x NCS_GS_CAP samples of 32 bytes while it fills, and a sample whose hash is above the
 * NCS_GS_CAP-th smallest seen so far is dropped on arrival). ncs_gsamples_finish() puts each
 * row's samples in (time, hash) order: the run's order, as the drift of analysis/gate.h needs.
 * (Left to arrival: a call past the NCS_GS_OPEN window, which is its own sample.) Per file, the
 * union of its calls' intervals is taken by model/ivunion.h with each call's thread (exact when
 * several calling threads' batches interleave in the file; what it could not place is counted:
 * late, late_ns, forced, summed over the files at ncs_gsamples_done()) and its committed pieces
 * are accumulated into time blocks (at most 4096, coarsened by two when the window outgrows
 * them); ncs_gsamples_shares() cuts each file's window, the union's first start to the latest
 * end, into NCS_GS_BLOCKS equal parts and gives each part's communication share in percent.
 * Allocation failures drop samples, never crash. */
#ifndef NCS_GATE_SAMPLES_H
#define NCS_GATE_SAMPLES_H
#include <pthread.h>
#include <stdint.h>

#include "analysis/jobsum.h"
#include "io/mux.h"

#define NCS_GS_CAP 16384
#define NCS_GS_BLOCKS 8
#define NCS_GS_OPEN (1 << 20)

struct ncs_gs_samp { int64_t start; uint64_t h; double lbw, lt; };
/* lbw, lt, n: the kept samples in time order, after ncs_gsamples_finish(); smp while filling;
 * seen: every sample offered. */
struct ncs_gs_row {
  double *lbw, *lt;
  int n;
  uint64_t seen;
  struct ncs_gs_samp *smp;
  int nsmp, cap, cutting;
  uint64_t cut; /* with cutting: the NCS_GS_CAP-th smallest hash so far; larger ones are dropped */
};
struct ncs_gs_file;
struct ncs_gs_comm;
struct ncs_gsamples {
  struct ncs_gs_row *row[NCS_OP_LIMIT][NCS_NBUCKETS];
  struct ncs_gs_file **file; /* [nfile], each made at its file's first call */
  int nfile;
  pthread_mutex_t mu;        /* the windows and rows, taken by a file's run at a time */
  struct ncs_gs_comm *comm;  /* collectives waiting for their ranks: per communicator, a ring by seq */
  int ncomm, last;           /* last: the ring found last, -1 none */
  int *cidx;                 /* comm_id -> 1 + index in comm (0 empty), open addressing */
  size_t cidx_cap;
  uint64_t open_span;        /* the rings' windows together, in seqs */
  uint64_t late, late_ns, forced; /* the files' unions' (model/ivunion.h), at ncs_gsamples_done() */
};

/* For files 0 .. nfiles-1; NULL when out of memory. */
struct ncs_gsamples *ncs_gsamples_new(int nfiles);
void ncs_gsamples_free(struct ncs_gsamples *g);
/* A run of n calls of file, in file order (the load's on_file_calls). */
void ncs_gsamples_calls(struct ncs_gsamples *g, int file, const struct ncs_jev *e, size_t n);
/* Adds file's visitor to m, before its first call. */
void ncs_gsamples_attach(struct ncs_gsamples *g, int file, struct ncs_mux *m);
/* At a file's end (on the thread reading it): its union committed. */
void ncs_gsamples_done(struct ncs_gsamples *g, int file);
/* After the last call: takes the collectives still open (ranks no file held). */
void ncs_gsamples_finish(struct ncs_gsamples *g);
/* The row's samples, NULL when it has none. */
static inline const struct ncs_gs_row *ncs_gsamples_row(const struct ncs_gsamples *g, uint32_t op, int bucket) {
  return op < NCS_OP_LIMIT && bucket >= 0 && bucket < NCS_NBUCKETS ? g->row[op][bucket] : NULL;
}
/* Block shares of every file (percent), NCS_GS_BLOCKS a file with calls, into a new array
 * (*out, free() it), in time order: every file's first block, then every file's second, ...
 * (file order past memory failure); returns their number (0: none or out of memory). */
int ncs_gsamples_shares(const struct ncs_gsamples *g, double **out);
#endif
