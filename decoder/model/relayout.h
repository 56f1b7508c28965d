/* relayout.h — the GPU timelines of a job's ranks laid out again with some kernels changed: what
 * the step would take if the communication ran at another bus bandwidth, or if one rank's
 * compute were as long as the others' (docs/METRICS.md, "What fixing it would give").
 *
 * Contract: the caller fills one ncs_rl_rank per traced process: its kernels as the trace
 * recorded them (device start and end on the job clock, CUPTI stream, NCCL or not; an NCCL
 * kernel with what it moves when its call is known) sorted by start, and the indices of its
 * step-boundary kernels (NCCL kernels, increasing). ncs_rl_prepare() reads from the observed
 * timeline why each kernel started when it did: after its stream's previous kernel, at the end
 * of a kernel on another stream (an event wait), or after a gap that keeps its length (host
 * launch, input); and, when every rank ran the same NCCL kernels in the same order, how long
 * each collective took after its last rank arrived (its transfer: the rest was waiting).
 * ncs_rl_run() replays the timelines in order with the changes asked for: a collective ends at
 * the latest arrival of its ranks plus its (new) transfer time, so compute overlap and waiting
 * are recomputed, not scaled. What it cannot see: a wait on another stream that the traced run
 * hid behind its own stream's work (it never bound there; where faster communication would
 * expose it, the prediction is optimistic). Memory: 16 bytes per kernel owned by the caller
 * (k; what an NCCL kernel moves is an index into the rank's table of distinct sizes), 2.1 by
 * ncs_rl (a dependency, 2 bytes, and a count of NCCL kernels per 64 kernels; 4 more per
 * NCCL kernel: its index; freed by ncs_rl_free; a transfer is not kept but read from the
 * collective's kernels when asked, a loop over the ranks), 8 during ncs_rl_run (a new time; 16
 * for the rank whose compute it fixes); ncs_rl_split holds only the kernels running at once. At most 2^21 distinct sizes and 2^30 kernels per rank. Not thread-safe. */
#ifndef NCS_RELAYOUT_H
#define NCS_RELAYOUT_H
#include <stddef.h>
#include <stdint.h>

struct ncs_rl_k {
  uint64_t start;          /* observed, ns */
  uint32_t dur;            /* its end - start (ns), or NCS_RL_LONG: its end is in the rank's
                              `lng` list (4.29 s or longer, or an end before its start) */
  uint32_t info;           /* NCS_RL_NCCL (an NCCL kernel) | (kop + 1) << NCS_RL_KOP_SHIFT (NCCL:
                              the kernel's operation index, caller's numbering, else -1) | its
                              stream's index << NCS_RL_STREAM_SHIFT | its index in the rank's size
                              table (NCS_RL_SIZE; 0: size unknown) */
};
#define NCS_RL_NCCL 0x80000000u
#define NCS_RL_KOP_SHIFT 28
#define NCS_RL_STREAM_SHIFT 21
#define NCS_RL_STREAMS 64   /* streams told apart in a rank: the first 64 to appear in start order
                               have indices 0..63, every later one 64 (no previous kernel: a
                               kernel of its own) */
#define NCS_RL_SIZE 0x001fffffu
#define NCS_RL_LONG UINT32_MAX
struct ncs_rl_long { size_t i; uint64_t end; }; /* kernel i's end, for dur NCS_RL_LONG */
static inline int ncs_rl_nccl(const struct ncs_rl_k *k) { return (k->info & NCS_RL_NCCL) != 0; }
static inline int ncs_rl_kop(const struct ncs_rl_k *k) { return (int)(k->info >> NCS_RL_KOP_SHIFT & 7u) - 1; }
static inline unsigned ncs_rl_stream(const struct ncs_rl_k *k) { return k->info >> NCS_RL_STREAM_SHIFT & 0x7fu; }
/* What an NCCL kernel moves, when its call is known: the call's enum ncs_op, bus bytes (S x
 * busbw factor) and algorithm steps; entry 0 of a rank's table is all 0 (unknown). */
struct ncs_rl_size {
  double busbytes, steps;
  unsigned op;
};
struct ncs_rl_rank {
  struct ncs_rl_k *k;      /* [n], sorted by start */
  size_t n;
  const struct ncs_rl_long *lng; /* [nlong] by i: the ends of kernels of dur NCS_RL_LONG */
  size_t nlong;
  const struct ncs_rl_size *size; /* the sizes k's info indexes */
  uint32_t *bound;         /* [nbound] indices into k of the step-boundary NCCL kernels */
  size_t nbound;
  /* ncs_rl_prepare's: */
  uint16_t *dep;           /* [n] why each kernel started when it did (relayout.c) */
  uint32_t *unit;          /* [nunit] indices into k of its NCCL kernels, in order */
  uint32_t *ubase;         /* [n / 64 + 1] NCCL kernels before kernel 64 b */
  size_t nunit;
};
/* Kernel i's observed end: start + dur, or from the long list (start + its duration as the
 * record gave it, an unsigned sum). */
static inline uint64_t ncs_rl_end(const struct ncs_rl_rank *x, size_t i) {
  if (x->k[i].dur != NCS_RL_LONG) return x->k[i].start + x->k[i].dur;
  size_t lo = 0, hi = x->nlong;
  while (hi - lo > 1) { size_t m = (lo + hi) / 2; if (x->lng[m].i <= i) lo = m; else hi = m; }
  return x->nlong && x->lng[lo].i == i ? x->lng[lo].end : x->k[i].start;
}
struct ncs_rl {
  int nr;
  struct ncs_rl_rank *r;   /* [nr] */
  int synced;              /* every rank ran the same NCCL kernels in the same order */
};

/* What to change. nccl_ns (may be NULL: unchanged) gives a kernel's new transfer time from its
 * observed one; fix_rank >= 0 gives that rank's compute kernels the median length of the
 * other ranks' kernels at the same place (the j-th compute kernel of each rank). */
struct ncs_rl_change {
  double (*nccl_ns)(void *ctx, const struct ncs_rl_size *size, double transfer_ns);
  void *ctx;
  int fix_rank;
};

/* Reads the dependencies (ncs_rl_run needs them; so does ncs_rl_split of a job of several
 * ranks: one rank's needs only `synced`, which is 1 then, set by the caller when it leaves
 * this for later). 0, or -1 when out of memory. */
int ncs_rl_prepare(struct ncs_rl *rl);
void ncs_rl_free(struct ncs_rl *rl);
/* Observed step time of rank r: (end of its last boundary kernel - end of its first) / (nbound
 * - 1); 0 with fewer than two boundaries. */
double ncs_rl_observed_step(const struct ncs_rl *rl, int r);
/* Exposed NCCL time per step of rank r on the observed timeline: NCCL kernel time with no
 * compute beside it, between its first and last boundary kernel's ends, / (nbound - 1). */
double ncs_rl_observed_exposed(const struct ncs_rl *rl, int r);
/* Where rank r's observed step goes, per step, between its first and last boundary kernel's
 * ends (the window of ncs_rl_observed_step; the five parts add up to that step): compute (a
 * compute kernel running), wait (an NCCL kernel running before its last rank arrived, no
 * compute beside it: waiting for the others), transfer[kop] (an NCCL kernel of operation kop
 * moving data, no compute beside it; kernels of several operations at once: the earliest
 * begun), idle (no kernel: host gaps, launch latency, input). transfer_all[kop] is every
 * transfer of that operation, hidden or not (the sum of its kernels' transfers: under compute
 * or under another NCCL kernel counts too). Without `synced` nothing is waiting: an NCCL
 * kernel is all transfer. A kop outside [0, NCS_RL_KOPS - 1) counts as NCS_RL_KOPS - 1 (other
 * or unknown). 0, or -1 out of memory, fewer than two boundaries or, for several ranks, no
 * dependencies read (ncs_rl_prepare). */
#define NCS_RL_KOPS 8
struct ncs_rl_split {
  double compute, wait, idle, transfer[NCS_RL_KOPS], transfer_all[NCS_RL_KOPS];
  double busbytes[NCS_RL_KOPS]; /* bus bytes of the NCCL kernels ending in the window, of known size */
  double exposed;               /* ncs_rl_observed_exposed's figure, from the same sweep (valid
                                   when not heaped) */
  int heaped;                   /* 1: a kernel ended before it started in the window (a wrapped
                                   duration): its events were all held at once, not streamed */
};
int ncs_rl_split(const struct ncs_rl *rl, int r, struct ncs_rl_split *o);
/* Lays the timelines out again with c applied and writes each rank's step time (as
 * ncs_rl_observed_step) to step[0..nr). 0, -1 out of memory, -2 the change cannot be applied
 * (fix_rank: the ranks' compute kernels do not line up). */
int ncs_rl_run(const struct ncs_rl *rl, const struct ncs_rl_change *c, double *step);
/* Waiting caused per rank: for each collective, what each other rank spent between its own
 * arrival and the last one's, charged to the last to arrive; summed into wait[0..nr) (ns).
 * Only when synced; returns the number of collectives, 0 otherwise. */
size_t ncs_rl_wait_caused(const struct ncs_rl *rl, double *wait);
#endif
