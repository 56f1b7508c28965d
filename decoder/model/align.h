/* align.h — putting every host's monotonic timestamps on one job clock (docs/CLOCKS.md).
 *
 * Contract: a clock map holds the latest CLOCK pairs (realtime, monotonic) of one trace and
 * maps that trace's monotonic times to realtime by linear interpolation between the two pairs
 * that bracket the time (extrapolating with the nearest segment's slope outside them). An
 * aligner sits in front of a trace's CALL and GPU_TIME records: it holds each call until a
 * CLOCK pair later than the call has arrived, plus one more flush interval so that GPU times
 * written after the call can be attached, then releases it with every time already mapped to
 * job time (ns relative to the job's origin). A settled call goes at the first pair after it
 * (in file order: after the calls held before it): one that has its GPU time, is in no group
 * (another stream's GPU time of the group may follow) and whose four times lie after the pair
 * before that one and not after it; its times map as they would a flush interval later (their
 * segment stays kept), and a GPU time still written for it counts as unmatched (the shim writes
 * one a call). A stretch told its chunk's closing pair (io/trace.h: only CALL, GPU_TIME and
 * INFLIGHT records come before it) releases at once, straight from the stretch, what that pair
 * will release of it and of the held calls before it (when no kernel is held): the calls it
 * settles, from the oldest held on, with the times they get then (told or not, the same calls
 * go in the same order with the same times; a GPU time naming one of them later in the chunk,
 * a second one of a call, counts as unmatched, as after the pair). A call of a thread that has GPU times (a GPU-timed thread) is held past that
 * until a GPU time of it or of a later call of its thread has come: a job that queues its
 * launches far ahead of its GPU (or a loaded machine) has its GPU times written long after the
 * call, and released without one it would count on the host clock. A
 * thread is GPU-timed from its first GPU time, or from an INFLIGHT record of kind GPU (every
 * chunk lists the calls whose GPU work is pending) for the calls from that one on. The
 * end of the file releases everything; with release_run set, released calls go to it in runs of up
 * to NCS_ALIGN_RUN, in the same order (one hook call a run, not a call). Memory: calls of about
 * one flush interval when they settle, else two (or of the GPU's lag behind the host), at
 * most 65536 calls (then the oldest is released with the pairs known so far), and 32 KiB from
 * the first GPU time on (with a spare, those stay in it after ncs_aligner_free for the next
 * aligner). A GPU_TIME record of a call goes to the newest of the last 4096 held
 * calls of its thread with its tcall (a call of that thread with a lower tcall ends the search);
 * one of a group to every such call of the group. While each thread's tcalls increase, a call
 * is found through a (thread, tcall) index: a GPU time written long after its call (the shim
 * writes them as the writer polls) costs what one right after it does.
 * KERNEL records (kernel activity, already on this trace's monotonic clock: the shim converts
 * CUPTI's GPU clock) go through the same map: each is held until the next CLOCK pair (a
 * kernel's record is written after the kernel ended, and every chunk ends with a pair later than
 * its records), then released to the kernel callback with its start and end on the job clock.
 * Memory: the kernels of one chunk, at most 65536 (then they are released with the pairs known
 * so far, counted in kernels_early).
 * Not thread-safe; one aligner per file. */
#ifndef NCS_ALIGN_H
#define NCS_ALIGN_H
#include <stddef.h>
#include <stdint.h>
#include "io/trace.h"

#define NCS_CLOCKMAP_KEEP 4
struct ncs_clockmap {
  struct ncs_clock p[NCS_CLOCKMAP_KEEP]; /* the latest pairs, oldest first */
  double slope[NCS_CLOCKMAP_KEEP];        /* slope[i]: of the segment p[i]..p[i+1] (offset change
                                             per monotonic ns), computed when a pair is added */
  int n;
  uint64_t npairs;            /* pairs seen in total */
  uint64_t unc_max;           /* largest uncertainty of a pair, ns */
  int64_t off_first, off_last;/* realtime - monotonic at the first and the latest pair */
  uint64_t mono_first, mono_last;
};
void ncs_clockmap_init(struct ncs_clockmap *m);
/* Adds a pair; pairs whose monotonic time does not increase are ignored. */
void ncs_clockmap_add(struct ncs_clockmap *m, const struct ncs_clock *c);
/* realtime ns for monotonic `mono`; `mono` itself when the map has no pair. */
int64_t ncs_clockmap_map(const struct ncs_clockmap *m, uint64_t mono);
/* Drift of realtime against this host's monotonic clock over the pairs seen, in ppm. */
double ncs_clockmap_drift_ppm(const struct ncs_clockmap *m);

/* A call with its times on the job clock (ns relative to the job origin). */
struct ncs_aligned {
  const struct ncs_call *call;
  int64_t enter, exit;        /* host times */
  int64_t gpu_start, gpu_end; /* valid when has_gpu */
  int has_gpu;
};
typedef void (*ncs_aligned_fn)(void *ctx, const struct ncs_aligned *a);
/* Released calls as a run: n (1..NCS_ALIGN_RUN) calls in release order. */
typedef void (*ncs_aligned_run_fn)(void *ctx, const struct ncs_aligned *a, size_t n);
#define NCS_ALIGN_RUN 64

/* A kernel, copy or set (KERNEL record) with its times on the job clock. */
struct ncs_aligned_kernel {
  const struct ncs_kernel *k;
  int64_t start, end;
};
typedef void (*ncs_aligned_kernel_fn)(void *ctx, const struct ncs_aligned_kernel *k);

struct ncs_pending_call_;
/* Memory one aligner leaves to the next of the same thread (a loader's worker reads files one
 * after another): its ring and its GPU-time index, taken again warm rather than allocated, grown
 * and touched afresh for every file. */
struct ncs_aligner_spare {
  struct ncs_pending_call_ *q;
  size_t cap;
  uint32_t *gslot;
};
#define NCS_ALIGN_GSLOTS 8192 /* (thread, tcall) -> held call: a GPU time finds its call at once */
/* The segment of the map that the latest time mapped fell in: monotonic times in [lo, hi] map
 * to mono + off + round((mono - base) * slope), as ncs_clockmap_map would (lo > hi: none). */
struct ncs_clockseg { uint64_t lo, hi, base; int64_t off; double slope; };
struct ncs_aligner {
  struct ncs_clockmap map;
  struct ncs_clockseg seg;    /* reset by every pair */
  int64_t origin;             /* job origin, realtime ns */
  ncs_aligned_fn release;
  ncs_aligned_run_fn release_run; /* set after init: calls released in runs (release unused) */
  void *ctx;
  struct ncs_pending_call_ *q;
  size_t head, n, cap;        /* ring of pending calls */
  uint64_t hold_until;        /* calls entering before this monotonic time may be released */
  uint64_t gpu_unmatched;     /* GPU_TIME records whose call was already released or unknown */
  uint64_t early;             /* calls released before a later pair arrived (too many held) */
  int oom;
  uint64_t added;             /* calls held in all: the position of the next (the oldest held
                                 is added - n) */
  uint32_t *gslot;            /* [NCS_ALIGN_GSLOTS] low 32 bits of the position of the latest held
                                 call per (thread, tcall) hash; made at the first GPU time */
  uint32_t prev_thread;       /* the latest call's thread and tcall (have_prev) */
  int have_prev;
  uint64_t prev_tcall;
  struct { uint32_t used, thread; uint64_t tcall; } lastt[64]; /* other threads' latest tcall (at thread & 63) */
  struct { uint32_t used, thread; uint64_t tcall; } gpu_seen[64]; /* per GPU-timed thread (at thread & 63):
                                 the highest call a GPU time named; thread ~0u: two threads met there */
  int disorder;               /* a thread's tcall did not increase (or two threads share a lastt
                                 entry): GPU times look their call up by the scan alone */
  ncs_aligned_kernel_fn release_kernel; /* NULL: ncs_aligner_kernel ignores kernels */
  struct ncs_kernel *kq;      /* kernels waiting for the next pair */
  size_t nk, capk;
  uint64_t kernels_early;     /* kernels released before a later pair arrived */
  struct ncs_aligner_spare *spare; /* set after init (NULL: none): its ring and index taken
                                 instead of new ones, and this aligner's left there by
                                 ncs_aligner_free (the larger ring kept); one thread's at a time */
};
void ncs_aligner_init(struct ncs_aligner *a, int64_t origin, ncs_aligned_fn release, void *ctx);
void ncs_aligner_clock(struct ncs_aligner *a, const struct ncs_clock *c);
void ncs_aligner_call(struct ncs_aligner *a, const struct ncs_call *c);
void ncs_aligner_gpu(struct ncs_aligner *a, const struct ncs_gpu_time *g);
/* A stretch's CALL and GPU_TIME records (io/trace.h), in file order: ncs_aligner_call or
 * ncs_aligner_gpu on each, with no function call a record. */
void ncs_aligner_stretch(struct ncs_aligner *a, const struct ncs_stretch *s);
/* (A stretch's `closing`, when set, must be the next CLOCK pair the aligner gets, with only the
 * stretch's `after` CALL, GPU_TIME and INFLIGHT records before it, as the reader tells it.) */
/* An INFLIGHT record: one of kind GPU makes its thread GPU-timed from its ref on (before the
 * first GPU time of a job whose GPU runs far behind its host). */
void ncs_aligner_inflight(struct ncs_aligner *a, const struct ncs_inflight *x);
/* Kernels: set a->release_kernel (ctx is the aligner's ctx) before the first one. */
void ncs_aligner_kernel(struct ncs_aligner *a, const struct ncs_kernel *k);
/* Releases everything still held (end of file). */
void ncs_aligner_flush(struct ncs_aligner *a);
void ncs_aligner_free(struct ncs_aligner *a);
void ncs_aligner_spare_free(struct ncs_aligner_spare *s);
/* Job time of a monotonic time of this trace. */
int64_t ncs_aligner_time(const struct ncs_aligner *a, uint64_t mono);
#endif
