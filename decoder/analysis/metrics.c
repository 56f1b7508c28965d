/* metrics.c — the `metrics` analysis of `ncclscope report` (issue 3): per rank the measured
 * window, communication time (union of the operations' GPU intervals, host intervals where a
 * call has none), the rest, compute-to-communication ratio, steps, a verdict with evidence,
 * calls captured into CUDA graphs (counted, never timed); per operation and per power-of-two
 * message size: calls, time, mean, p50, p99, algbw and busbw (nccl-tests' definitions), each
 * labelled with its timing source. Every number is defined in docs/METRICS.md.
 *
 * Contract: each file is read once (files in parallel: per-file state only). Pass 1 counts call
 * signatures, to find the step boundary, and GPU times, while the file's records are held as
 * decoded (at most HOLD_MAX: "One read" below); pass 2 times the calls. Memory per file
 * being read: the held records (96 B a call, 40 B a GPU time; at most 32 MiB with its
 * doubling buffer), a pending table of calls awaiting their GPU_TIME (bounded; a call that
 * cannot wait is timed on the host) and an interval buffer for the union (64 KiB, growing to
 * 16 MiB while one thread's batch waits for another's: flush_iv; its runs merged into a second
 * one as large, kept while up to 2 MiB: model/ivsort.h); kept per rank: per-op and
 * per-(op, size) totals with a fixed histogram, and the step totals.
 * Options (analysis.h): --skip-warmup N (steps) or Ns (seconds), --step-op OP; the trace's
 * or the environment's NCCLSCOPE_STEP_MARK=OP names the boundary op too. */
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "base/settings.h"
#include "model/hist.h"
#include "model/ivsort.h"
#include "model/ivlanes.h"
#include "model/kwatch.h"
#include "model/stepmark.h"
#include "analysis/metrics.h"
#include "analysis/headline.h"
#include "model/rules.h"
#include "model/stages.h"
#include "model/replay.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define NBUCKET 66          /* size buckets: 0 bytes, then 2^0 .. 2^64 */
#define PENDING_CAP (1u << 15)
#define PENDING_FULL (PENDING_CAP * 3 / 4) /* calls waiting at most: past it, a call is timed on the host */
#define IV_CAP 4096         /* the interval buffer: its first size, and the latest it always keeps */
#define IV_MAX (1u << 20)   /* its largest (16 MiB) */
#define MAX_MEMBERS 8
#define STEP_RING 4096      /* recent steps kept; older ones are folded into totals */
#define TCALL_SLOTS 64      /* the pending table's largest tcall, per slot of threads */

/* ---- per (op, size) and per op ---- */
struct mstat {
  uint64_t calls, time_ns, S;
  uint64_t gpu_calls;               /* of calls, timed on the GPU (the rest on the host) */
  uint64_t replays, replay_ns;      /* of calls, CUDA-graph replays (model/replay.h) and their time */
  double steps;                     /* sum of the calls' algorithm steps (ncs_rule_steps): the
                                       latency part of their expected time (model/linkref.h) */
  double busS_f;                    /* sum of S x busbw factor, for busbw (per op: added call by
                                       call; the counts above: the size rows' added when the
                                       file is done, fold_rows) */
  struct ncs_hist *h;               /* per size bucket only */
};

/* A timed operation's shape (op, ranks, S) and what it gives: its busbw factor, S as counted
 * (Su) and S x factor (busS), and its size row z (rows never move: a copy stays valid). A run
 * repeats a few shapes, so they are remembered per file (direct-mapped, SHAPES slots): the
 * factor's division, the size bucket and the row lookup are done once per shape. */
#define SHAPES 64
struct shape { double S, fac, busS, steps; uint64_t Su; uint32_t op, n; struct mstat *z, *t; }; /* op 0: empty;
                                                                                   t: the op's totals */

/* ---- pending calls (pass 2), keyed by (kind, thread, ref) ---- */
struct member { uint32_t op, n; double S; uint32_t count; };
struct pend {
  uint64_t key;          /* 0 = empty */
  uint32_t home;         /* its slot in the pending table when nothing is in the way */
  uint64_t t_enter, t_exit;
  uint32_t thread;       /* the calling thread (its interval's lane, model/ivlanes.h) */
  struct shape sh;       /* the call's op, ranks, S and what they give */
  int counted;
  int nmem;              /* group entries: members */
  uint32_t gix;          /* group entries: their members, f->groups[gix - 1] (0: none yet) */
};
struct members { struct member mem[MAX_MEMBERS]; };

struct rank_m {
  int used;
  struct mstat op[NCS_OP_LIMIT];
  struct mstat *size[NCS_OP_LIMIT]; /* [NBUCKET] each, allocated at the op's first call */
  uint64_t w0, w1;            /* window */
  int have_window;
  double comm_ns;
  uint64_t late, late_ns;     /* merged intervals that came after the union was committed past
                                 their start, and the most comm_ns can lack for them (flush_iv) */
  uint64_t forced;            /* commits forced by a full interval buffer (flush_iv) */
  uint64_t timed_gpu, timed_host, captured, failed_gpu; /* timed_*: set by fold_rows */
  struct ncs_replay_sum rp;   /* graph replays found (model/replay.h), set when the file is done */
  uint64_t rp_count[NCS_OP_LIMIT], rp_bytes[NCS_OP_LIMIT]; /* per op: replayed count and bytes */
  /* steps */
  uint32_t step_op;
  uint64_t step_key;
  int have_steps;
  const char *step_how;       /* "detected", "--step-op", "NCCLSCOPE_STEP_MARK" */
  uint64_t *step_t;           /* [STEP_RING] start of step g at g % STEP_RING, g in [base, nsteps);
                                 freed once the rank's file is read (folded into done_*) */
  double *step_comm;          /* [STEP_RING] its communication time so far */
  uint64_t nsteps, base;
  uint64_t step0_t;           /* the start of step 0 (steps [0, base) span [step0_t, the start of
                                 step base) when they start in order) */
  uint64_t unordered_at;      /* the latest step g starting before step g - 1 (0: none) */
  uint64_t hint;              /* add_comm's latest step found */
  double done_ns, done_comm;  /* complete steps folded out of the ring */
  uint64_t done_n;
  uint64_t boundary_seen;     /* occurrences of the boundary, counted or not */
  int warm_set;
  uint64_t warm_t;            /* calls entering before this are warm-up */
};

/* Records kept while the file's step boundary is not chosen yet (see "One read" below): in
 * file order, runs of one type each, a run's header followed by its records as decoded (a
 * COMM record: what metrics takes of it). */
enum { HELD_CALL, HELD_GPU, HELD_COMM, HELD_CHUNK, HELD_NONE }; /* HELD_CHUNK: chunk ends, n of them, no body */
struct held_run { uint32_t type, n; };
struct held_comm { uint32_t comm; int32_t nranks; };
#define HOLD_MAX NCS_STEPMARK_HOLD /* records held per file at most (1.5 MiB of calls, 2 MiB with
                                      its doubling buffer): past it the boundary is chosen from what
                                      was held (model/stepmark.h) */

struct pslot { uint64_t key; uint32_t ix, home; }; /* the pending table: key, pool index + 1, home slot */

/* What the second pass takes from a call's (op, count, datatype, comm, call site): whether it
 * is the step boundary (its signature), whether the op is timed, its communicator's ranks, S,
 * and its shape once an operation of it was counted. A run repeats a few, so they are
 * remembered per file (direct-mapped, CALL_SHAPES slots; emptied when a COMM record changes
 * the ranks): the signature hash, the size rule and the shape lookup are done once each. A
 * run repeats them in a cycle, so each remembers the one that came after it last time: tried
 * first, it spares the hash. */
#define CALL_SHAPE_BITS 6
#define CALL_SHAPES (1 << CALL_SHAPE_BITS)
struct call_shape {
  uint64_t count;
  uint32_t op, callsite, comm, datatype;
  int set;
  int fast;                   /* timed, have_sh, the rank's warm-up set and its window begun
                                 (the boundary: once it can no longer end the warm-up):
                                 p2_calls' common case applies (a GPU-timed file: when its gate
                                 lets the call through); 1, or 2 for the boundary (0: not) */
  struct call_shape *next;    /* the call shape that followed it last time (NULL: none yet;
                                 when set, it is set) */
  struct ncs_stepsig *sig;            /* while deciding: its signature's count (NULL: not counted, the
                                 table is full); the table is emptied when deciding ends */
  int boundary, timed, have_sh;
  uint32_t n;
  double S;
  struct shape sh;            /* have_sh: a copy of its shape, with both size row and histogram */
};

/* One file's reading state: made at its first record, given back when the file is done (kept
 * for the next file in a small cache), so only the files being read hold one. */
struct file_state {
  /* the first pass's figures, gathered while the boundary is not chosen */
  struct ncs_stepsig *sig;
  uint32_t nsig;
  uint64_t ncalls1, gpu_records;
  char mark[64];
  int deciding;               /* 1 until the boundary is chosen; records are held meanwhile */
  uint8_t *held;              /* the held runs (struct held_run, then its records) */
  size_t hlen, hcap, hlast;   /* bytes used, allocated; the latest run's offset */
  uint32_t htype;             /* the latest run's type (HELD_NONE: none) */
  uint32_t nheld;             /* records held */
  /* the second pass */
  struct pslot *pend;         /* [PENDING_CAP] */
  struct pend *pool;          /* the pending entries, free ones listed in freeix */
  uint32_t *freeix;
  uint32_t npool, cappool, nfree;
  struct members *groups;     /* the group entries' members, free ones listed in gfreeix */
  uint32_t *gfreeix;
  uint32_t ngroups, capgroups, ngfree;
  uint32_t npend;
  /* The latest call awaiting its GPU_TIME, not put in the pending table yet (nx_on): its
   * GPU_TIME mostly comes next, and then it is timed without the table; anything else that
   * uses the table puts it there first (nx_put), so the table sees what it would have seen.
   * Only a call whose key cannot be in the table already (tcall_absent) and for which the
   * table has room waits here. */
  struct pend nx;
  uint32_t nx_thread;
  uint64_t nx_tcall;
  int nx_on;
  uint64_t tcall_top[TCALL_SLOTS]; /* 1 + the largest tcall put in the pending table by the
                                      threads of each slot (tcall_slot); 0: none */
  int gpu_mode;
  int32_t *nranks;            /* comm index -> nranks */
  uint32_t ncomm;
  uint64_t (*iv)[2];          /* [ivcap] */
  uint32_t ivcap, ivlim;      /* ivlim: nraw at which it is flushed next (flush_iv) */
  uint32_t niv, nraw;         /* the interval buffer (flush_iv) */
  uint32_t iv_thread;         /* the thread of the intervals being accounted (add_iv) */
  uint32_t lane_thread;       /* ncs_lane_at(&lanes, lanes.cur)->thread (lane_to) */
  uint64_t open_foreign;      /* an open_s the current lane did not start (note_last) */
  struct ncs_lanes lanes;     /* the threads' latest starts (model/ivlanes.h) */
  struct ncs_ivruns runs;     /* where iv's runs start (model/ivsort.h) */
  uint64_t open_s, open_e;
  uint64_t frontier;          /* union committed up to here */
  uint64_t iv_base;           /* the start of the first interval committed (have_base) */
  int have_base;
  struct shape shapes[SHAPES];
  struct call_shape cshapes[CALL_SHAPES];
  struct call_shape *prev_shape; /* the previous call's (call_shape_of) */
  struct rank_m *r;
  struct metrics *m;
  /* the file's counted step starts (put in the report's stages when the file is done) */
  struct ncs_step_starts starts; /* (model/stages.h) */
  struct ncs_kwatch kw;       /* kernel activity in the file? The starts are read only for a file
                                 with kernels: without, they are dropped (model/kwatch.h) */
  int starts_dropped;
  struct ncs_replay *rp;      /* graph replays: fed the file's records, solved when it is done;
                                 NULL when the report's stages get them from verdicts (replay_on) */
  struct file_state *next_free;
};
struct mfile { struct metrics *m; int file; struct file_state *fs; };

struct metrics {
  const struct ncs_job *job;
  struct rank_m *rank;
  int n;
  long skip_steps;
  double skip_s;
  uint32_t step_op_opt;
  int bad_option;
  struct mfile *files;        /* [n] */
  pthread_mutex_t mu;         /* the cache of file states (files are read in parallel) */
  struct file_state *cache;
  struct ncs_metrics_result res; /* built by finish (built: 1) */
  struct ncs_metrics_rank *res_rank;
  int built;
};

/* Size bucket of S: 0 for S < 1, else 1 + floor(log2 S) (bucket b holds [2^(b-1), 2^b)). */
static int bucket_of(double S) {
  int e = ncs_rule_log2(S);
  return e + 1 < NBUCKET ? e + 1 : NBUCKET - 1;
}

/* ---- pass 1: signatures ---- */
static int p1_process(void *ctx, const struct ncs_process *p) {
  struct file_state *f = ctx;
  const char *v = ncs_process_get(p, "env.NCCLSCOPE_STEP_MARK");
  if (v) snprintf(f->mark, sizeof f->mark, "%s", v);
  return 0;
}

/* The step boundary (model/stepmark.h) from the first pass's counts; `cut`: of the file's first
 * HOLD_MAX records only. */
static void choose_boundary(struct metrics *m, struct file_state *f, struct rank_m *r, int cut) {
  uint32_t op = ncs_stepmark_named(m->step_op_opt, f->mark, &r->step_how);
  if (ncs_stepmark_choose(f->sig, op, cut, &r->step_key, &r->step_op)) r->have_steps = 1;
}

/* ---- pass 2 ---- */
/* Starts step nsteps at t, folding the oldest step out of the ring when it is full. */
#define STEP_T(r, g) ((r)->step_t[(g) % STEP_RING])
static inline __attribute__((always_inline)) void add_step(struct rank_m *r, uint64_t t) {
  if (!r->step_t) {
    r->step_t = calloc(STEP_RING, sizeof *r->step_t);
    r->step_comm = calloc(STEP_RING, sizeof *r->step_comm);
    if (!r->step_t || !r->step_comm) { free(r->step_t); free(r->step_comm); r->step_t = NULL; r->step_comm = NULL; return; }
  }
  uint64_t *st = r->step_t, n = r->nsteps, base = r->base; /* (locals: the ring's stores could be
                                                              r's fields, to the compiler) */
  double *sc = r->step_comm;
  if (!n) r->step0_t = t;
  if (n - base == STEP_RING) {
    r->done_ns += (double)(st[(base + 1) % STEP_RING] - st[base % STEP_RING]);
    r->done_comm += sc[base % STEP_RING];
    r->done_n++;
    r->base = ++base;
  }
  if (n > base && t < st[(n - 1) % STEP_RING]) r->unordered_at = n;
  st[n % STEP_RING] = t;
  sc[n % STEP_RING] = 0;
  r->nsteps = n + 1;
}

/* At the end of a file: folds the steps still in the ring into the totals and frees it.
 * Complete steps run from one boundary to the next (the last, partial one is left out);
 * with a single boundary, the partial step to the end of the window stands in. */
static void fold_steps(struct rank_m *r) {
  if (!r->step_t) return;
  uint64_t last = r->nsteps > 1 ? r->nsteps - 1 : r->nsteps;
  for (uint64_t g = r->base; g < last; g++) {
    uint64_t end = g + 1 < r->nsteps ? STEP_T(r, g + 1) : r->w1;
    r->done_n++;
    if (end <= STEP_T(r, g)) continue;
    r->done_ns += (double)(end - STEP_T(r, g));
    r->done_comm += r->step_comm[g % STEP_RING];
  }
  free(r->step_t);
  free(r->step_comm);
  r->step_t = NULL;
  r->step_comm = NULL;
  r->base = r->nsteps;
}

/* Adds [s, e) of communication, disjoint from everything added before, to the steps in the
 * ring it overlaps (parts in steps already folded out: to their sum, done_comm); the rank's
 * total is the caller's (commit_iv). */
static void add_comm_steps(struct rank_m *r, uint64_t s, uint64_t e) {
  if (e <= s) return;
  if (r->base && s < STEP_T(r, r->base) && e > r->step0_t) {
    /* a part in the steps folded out already (the union commits behind the latest
     * intervals: model/ivlanes.h): added to their sum */
    uint64_t lo = s > r->step0_t ? s : r->step0_t, hi = e < STEP_T(r, r->base) ? e : STEP_T(r, r->base);
    if (hi > lo) r->done_comm += (double)(hi - lo);
  }
  if (r->nsteps == r->base || e <= STEP_T(r, r->base)) return;
  uint64_t h = r->hint > r->base ? r->hint : r->base;
  if (r->unordered_at <= r->base && STEP_T(r, h) <= s && (h + 1 == r->nsteps || e <= STEP_T(r, h + 1))) {
    /* the interval is inside step h, the last one that starts before e (the steps in the
     * ring start in order): what the walks below give, without them */
    r->hint = h;
    r->step_comm[h % STEP_RING] += (double)(e - s);
    return;
  }
  /* the last step starting before e: intervals come in increasing order, so while the steps
   * in the ring start in order a short walk on from the previous answer finds it (the same
   * step the binary search finds, at a fraction of its cost); else the binary search */
  uint64_t lo = r->hint > r->base ? r->hint : r->base, hi = r->nsteps;
  int walked = 0;
  if (r->unordered_at <= r->base && STEP_T(r, lo) < e)
    while (lo + 1 < hi && STEP_T(r, lo + 1) < e && ++walked < 16) lo++;
  if (walked >= 16 || r->unordered_at > r->base || STEP_T(r, lo) >= e) {
    lo = r->base;
    while (hi - lo > 1) { uint64_t mid = lo + (hi - lo) / 2; if (STEP_T(r, mid) < e) lo = mid; else hi = mid; }
  }
  r->hint = lo;
  /* walking back while the interval spans boundaries */
  for (uint64_t i = lo + 1; i-- > r->base && e > s;) {
    uint64_t b = STEP_T(r, i) > s ? STEP_T(r, i) : s;
    if (e > b) r->step_comm[i % STEP_RING] += (double)(e - b);
    e = b;
    if (STEP_T(r, i) <= s) break;
  }
}

/* Commits the merged intervals iv[0 .. n) (in increasing order, disjoint; parts before the
 * frontier are not counted again) to the rank's communication time and its steps. The step
 * holding the latest interval is remembered across intervals (add_comm_steps' first case,
 * without its loads): an interval inside it is added at once, to a running sum written back
 * when the step changes (the same additions in the same order). `clip` 0: the intervals are
 * known to start after the frontier (they came in order), none is clipped.
 * `exact` 1: the sums (the rank's and its steps', doubles) are kept as integers here. Every
 * one of them is a sum of whole nanoseconds of disjoint parts of [iv_base, the frontier), so
 * while that span is under 2^53 every double addition is exact and gives the integer sum:
 * the same bits (commit_iv checks the span). */
static inline __attribute__((always_inline)) void commit_iv_(struct file_state *f, uint32_t n, int clip, int exact) {
  struct rank_m *r = f->r;
  uint64_t fr = f->frontier, lo_t = 1, hi_t = 0; /* [lo_t, hi_t]: the remembered step's span (empty: none) */
  double comm = r->comm_ns, in_step = 0, *at = NULL; /* the remembered step's sum, and where it goes */
  uint64_t comm_u = exact ? (uint64_t)comm : 0, in_u = 0; /* the same, exact */
  for (uint32_t i = 0; i < n; i++) {
    uint64_t s = f->iv[i][0], e = f->iv[i][1];
    if (clip && s < fr) { /* it came after the union was committed past its start */
      r->late++;
      r->late_ns += (e < fr ? e : fr) - s;
      s = fr;
      if (e <= s) continue;
    }
    fr = e;
    uint64_t du = e - s;
    double d = exact ? 0 : (double)du;
    if (exact) comm_u += du; else comm += d;
    if (s >= lo_t && e <= hi_t) {
      if (exact) in_u += du; else in_step += d;
      continue;
    }
    if (at) *at = exact ? (double)in_u : in_step;
    if (at && s >= hi_t && hi_t != UINT64_MAX) {
      /* inside the next step? (what add_comm_steps' walk finds) */
      uint64_t g = r->hint + 1, next = g + 1 == r->nsteps ? UINT64_MAX : STEP_T(r, g + 1);
      if (e <= next) {
        r->hint = g;
        lo_t = hi_t; hi_t = next;
        at = &r->step_comm[g % STEP_RING];
        if (exact) in_u = (uint64_t)*at + du; else in_step = *at + d;
        continue;
      }
    }
    add_comm_steps(r, s, e);
    /* the step holding it when the steps in the ring start in order (else none: every
     * interval goes to add_comm_steps) */
    if (r->nsteps > r->base && r->unordered_at <= r->base) {
      uint64_t h = r->hint > r->base ? r->hint : r->base;
      r->hint = h;
      lo_t = STEP_T(r, h);
      hi_t = h + 1 == r->nsteps ? UINT64_MAX : STEP_T(r, h + 1);
      at = &r->step_comm[h % STEP_RING];
      if (exact) in_u = (uint64_t)*at; else in_step = *at;
    } else {
      lo_t = 1; hi_t = 0; at = NULL;
    }
  }
  if (at) *at = exact ? (double)in_u : in_step;
  r->comm_ns = exact ? (double)comm_u : comm;
  f->frontier = fr;
}
static void commit_iv(struct file_state *f, uint32_t n, int clip) {
  if (!n) return;
  if (!f->have_base) { f->have_base = 1; f->iv_base = f->iv[0][0]; } /* <= every start committed */
  uint64_t end = f->iv[n - 1][1] > f->frontier ? f->iv[n - 1][1] : f->frontier; /* >= every end committed */
  if (end - f->iv_base < (1ull << 53)) { if (clip) commit_iv_(f, n, 1, 1); else commit_iv_(f, n, 0, 1); }
  else if (clip) commit_iv_(f, n, 1, 0);
  else commit_iv_(f, n, 0, 0);
}

/* The interval buffer: the intervals not committed yet, as runs. Within a run the intervals
 * come in order of their starts and are kept merged: the latest in open_s/open_e (an interval
 * overlapping or touching it extends it), the ones before it in iv[0 .. niv). One starting
 * before the open one begins a new run (run[]: where it starts; a thread's batch after
 * another's, or one of a thread's intervals out of order). open_s is OPEN_NONE only when the
 * buffer is empty. nraw counts the intervals buffered as they came (a kept one counting one):
 * the buffer is flushed when nraw reaches ivlim, whatever their merging: IV_CAP, or twice the
 * intervals a flush kept when more (each flush's work, linear in them, then stays proportional
 * to the intervals that came since).
 * A flush merges the runs into the union's intervals in one pass (model/ivsort.h ncs_ivmerge,
 * into iv2, then swapped with iv; past NCS_IVRUNS runs, or without memory for iv2, sorted and
 * merged in place), commits those that end by the cut and keeps the others. The cut is
 * the earlier of the threads' (model/ivlanes.h: the earliest of their latest starts; a
 * thread's intervals come in order, so none still to come from a known thread starts before
 * it) and the start of the latest IV_CAP / 2-th merged interval (a thread's own intervals may
 * come a little out of order: GPU intervals of several streams). One thread's batch of a
 * chunk comes before another's of the same time: the buffer keeps the first until the second
 * has come, doubling while the kept ones fill more than half of it, up to IV_MAX; full at
 * that size, the flush commits all but the latest IV_CAP / 2 (the rule before the lanes; a
 * forced commit, counted). Steps folded out of their ring meanwhile get their part of what is
 * committed later (add_comm_steps). Intervals that come after the union passed their start are
 * clipped to the frontier and counted (commit_iv_): comm_s is exact when none did
 * (docs/METRICS.md "Communication time"). */
#define OPEN_NONE UINT64_MAX
/* The current lane's latest start from the open interval (the hot loops keep it there: in
 * order, the latest start), when the current lane started it: not one that was open when the
 * lane became current or that a flush reopened (open_foreign), whose start may be another
 * thread's (an interval merged into it leaves the lane's latest start lower: the cut only
 * lower). */
static inline void note_last(struct file_state *f) {
  struct ncs_lane *ln = ncs_lane_at(&f->lanes, f->lanes.cur);
  if (f->open_s != OPEN_NONE && f->open_s != f->open_foreign && f->open_s > ln->last) ln->last = f->open_s;
}
/* The intervals that follow are thread's. */
static __attribute__((noinline)) void lane_to(struct file_state *f, uint32_t thread) {
  note_last(f);
  ncs_lanes_switch(&f->lanes, thread);
  f->lane_thread = ncs_lane_at(&f->lanes, f->lanes.cur)->thread;
  f->open_foreign = f->open_s;
}
/* More room for the buffer: ivcap at least `want`, up to IV_MAX; 0, or -1 (unchanged). */
static int iv_grow(struct file_state *f, uint32_t want) {
  uint32_t c = f->ivcap;
  while (c < IV_MAX && c < want) c *= 2;
  uint64_t (*p)[2] = c >= want ? realloc(f->iv, (size_t)c * sizeof *f->iv) : NULL;
  if (!p) return -1;
  f->iv = p;
  f->ivcap = c;
  return 0;
}
static void flush_iv(struct file_state *f, int all) {
  note_last(f);
  if (f->open_s == OPEN_NONE) { f->nraw = 0; return; } /* empty */
  if (f->nraw >= NCS_LANES_FIRST_HOLD) ncs_lanes_hold_end(&f->lanes); /* a first chunk that long: 4 MiB held */
  if (!all && f->runs.nrun && !ncs_lanes_cut(&f->lanes) && !iv_grow(f, 2 * f->nraw)) {
    f->ivlim = 2 * f->nraw; /* nothing can be committed yet (the first chunk): not merged either */
    return;
  }
  f->iv[f->niv][0] = f->open_s; f->iv[f->niv][1] = f->open_e;
  f->niv++;
  f->open_s = OPEN_NONE;
  f->nraw = 0;
  if (f->runs.nrun) f->niv = ncs_ivruns_union(&f->runs, &f->iv, &f->ivcap, f->niv);
  uint32_t n = f->niv, ncommit = n;
  int forced = 0;
  if (!all) {
    uint64_t slack = n > IV_CAP / 2 ? f->iv[n - IV_CAP / 2][0] : 0, cut = ncs_lanes_cut(&f->lanes);
    cut = cut < slack ? cut : slack;
    uint32_t lo = 0, hi = n; /* ncommit: the merged intervals (ends increasing) ending by cut */
    while (lo < hi) { uint32_t mid = lo + (hi - lo) / 2; if (f->iv[mid][1] <= cut) lo = mid + 1; else hi = mid; }
    ncommit = lo;
    if (2 * (n - ncommit) > f->ivcap && iv_grow(f, 2 * (n - ncommit))) { /* else the rule before the lanes */
      forced = 1;
      f->r->forced++;
      ncommit = n > IV_CAP / 2 ? n - IV_CAP / 2 : 0;
    }
  }
  uint32_t keep = n - ncommit;
  commit_iv(f, ncommit, f->iv[0][0] < f->frontier); /* (starts increase: only a first part can be late) */
  if (forced) ncs_lanes_forced(&f->lanes, f->frontier);
  f->niv = 0;
  f->ivlim = 2 * keep > IV_CAP ? 2 * keep : IV_CAP; /* <= ivcap (above) */
  if (!keep) return;
  memmove(f->iv, f->iv + ncommit, keep * sizeof *f->iv);
  f->nraw = keep;
  f->niv = keep - 1; /* one run (clipped when next flushed if it reaches below the frontier) */
  f->open_s = f->iv[keep - 1][0]; f->open_e = f->iv[keep - 1][1];
  f->open_foreign = f->open_s;
}
/* add_iv when [s, e) starts before the open interval (a new run) or there is none */
static __attribute__((noinline)) void add_iv_run(struct file_state *f, uint64_t s, uint64_t e) {
  note_last(f);
  struct ncs_lane *ln = ncs_lane_at(&f->lanes, f->lanes.cur);
  if (s > ln->last) ln->last = s;
  if (f->open_s != OPEN_NONE) {
    f->iv[f->niv][0] = f->open_s; f->iv[f->niv][1] = f->open_e;
    f->niv++;
    ncs_ivruns_mark(&f->runs, f->niv);
  }
  f->open_s = s; f->open_e = e;
}
static inline __attribute__((always_inline)) void add_iv(struct file_state *f, uint64_t s, uint64_t e) {
  if (e <= s) return;
  if (f->iv_thread != f->lane_thread) lane_to(f, f->iv_thread);
  if (f->nraw == f->ivlim) flush_iv(f, 0);
  f->nraw++;
  if (s >= f->open_s) { /* in order (OPEN_NONE: never) */
    if (s <= f->open_e) { if (e > f->open_e) f->open_e = e; return; }
    f->iv[f->niv][0] = f->open_s; f->iv[f->niv][1] = f->open_e;
    f->niv++;
    f->open_s = s; f->open_e = e;
    return;
  }
  add_iv_run(f, s, e);
}

/* The shape of (op, n, S), made on first use (its size row and histogram too: when memory
 * for them ran out, sh->z or sh->z->h is NULL, and the shape is made again next time). */
static struct shape *shape_of(struct file_state *f, uint32_t op, uint32_t n, double S) {
  struct rank_m *r = f->r;
  uint64_t bits;
  memcpy(&bits, &S, sizeof bits);
  struct shape *sh = &f->shapes[((bits ^ (uint64_t)op << 32 ^ n) * 0x9e3779b97f4a7c15ull) >> 58 & (SHAPES - 1)];
  if (sh->op != op || sh->n != n || sh->S != S) {
    double fac = ncs_rule_busbw_factor(op, (int)n);
    *sh = (struct shape){S, fac, S * fac, ncs_rule_steps(op, (int)n), (uint64_t)S, op, n, NULL, &r->op[op]};
    if (r->size[op] || (r->size[op] = calloc(NBUCKET, sizeof *r->size[op]))) {
      sh->z = &r->size[op][bucket_of(S)];
      if (!sh->z->h) sh->z->h = calloc(1, sizeof *sh->z->h);
    }
  }
  return sh;
}

/* One timed operation of shape sh, [s, e) on the given clock. */
static inline __attribute__((always_inline)) void account_shape(struct file_state *f, const struct shape *sh, uint64_t s, uint64_t e, int gpu) {
  struct rank_m *r = f->r;
  uint64_t d = e > s ? e - s : 0;
  if (s < r->w0) r->w0 = s; /* GPU times extend the window of the calls */
  if (e > r->w1) r->w1 = e;
  add_iv(f, s, e);
  struct mstat *t = &r->op[sh->op], *z = sh->z;
  t->busS_f += sh->busS; /* (a sum of doubles: in call order) */
  t->steps += sh->steps;
  if (!z) { t->calls++; t->time_ns += d; t->S += sh->Su; t->gpu_calls += gpu != 0; return; } /* no memory for the size rows */
  z->calls++; z->time_ns += d; z->S += sh->Su; z->busS_f += sh->busS; z->gpu_calls += gpu != 0; z->steps += sh->steps;
  if (z->h) ncs_hist_add(z->h, d);
}

/* One timed operation of S bytes on n ranks, [s, e) on the given clock. */
static void account(struct file_state *f, uint32_t op, uint32_t n, double S, uint64_t s, uint64_t e, int gpu) {
  struct shape *sh = shape_of(f, op, n, S);
  account_shape(f, sh, s, e, gpu);
  if (!sh->z || !sh->z->h) sh->op = 0; /* no memory for the size rows: tried again next time */
}

static uint64_t pkey(uint32_t kind, uint32_t thread, uint64_t ref) {
  uint64_t k = (ref << 21) ^ ((uint64_t)thread << 1) ^ kind;
  k *= 0x9e3779b97f4a7c15ull;
  return k ? k : 1;
}
/* The home slot of (kind, thread, ref): a thread's consecutive calls (and groups) take
 * consecutive slots within a block of PBLOCK (one cache line), so the table is walked in order
 * as calls come and their GPU times follow (a hashed home made every lookup a cache miss: a
 * seventh of report on GPU-timed traces); the blocks are scattered by a hash. Consecutive
 * blocks made one cluster of every call left waiting (a GPU-timed job whose GPU times mostly
 * never come: the table fills to PENDING_FULL), which each later call walked to its end: 3/4 of
 * report's time on such a trace. Those calls still fill whole blocks, so a lookup that misses,
 * an insertion and a deletion (its backward shift) walk on through the run of full blocks
 * after the home one: with 64-slot blocks ~250 slots a walk on the doubles' trace (~1,000 Ir
 * a GPU_TIME), with 4-slot ones ~15. (Layout changes no result: entries are found by key, the
 * cap counts them and the leftovers are settled in the order they were made.) */
#define PBLOCK 4
static uint32_t phome(uint32_t kind, uint32_t thread, uint64_t ref) {
  uint64_t b = ((ref / PBLOCK) ^ ((uint64_t)thread << 40) ^ ((uint64_t)kind << 63)) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)((b >> 40) * PBLOCK + ref % PBLOCK) & (PENDING_CAP - 1);
}
static uint32_t tcall_slot(uint32_t thread) { return (uint32_t)((thread * 0x9e3779b97f4a7c15ull) >> 58); }
/* Call (thread, tcall) is not in the pending table: above every tcall that a thread of its slot
 * put there (tcall counts a thread's calls). */
static int tcall_absent(const struct file_state *f, uint32_t thread, uint64_t tcall) {
  return tcall >= f->tcall_top[tcall_slot(thread)];
}
static void nx_put(struct file_state *f);
static struct pend *pend_find(struct file_state *f, uint32_t kind, uint32_t thread, uint64_t ref, int create) {
  if (__builtin_expect(f->nx_on, 0)) nx_put(f);
  /* a call above every tcall put in the table is not in it: with the table at its 3/4 (GPU
   * times that never come) a lookup or a failed insertion walked a whole cluster of waiting
   * calls to learn that, most of report's time on the doubles' traces */
  if (kind == 0 && tcall_absent(f, thread, ref) && (!create || f->npend >= PENDING_FULL)) return NULL;
  uint64_t key = pkey(kind, thread, ref);
  uint32_t home = phome(kind, thread, ref), i = home;
  for (uint32_t k = 0; k < PENDING_CAP; k++, i = (i + 1) & (PENDING_CAP - 1)) {
    if (f->pend[i].key == key) return &f->pool[f->pend[i].ix - 1];
    if (!f->pend[i].key) {
      if (!create || f->npend >= PENDING_FULL) return NULL;
      uint32_t ix;
      if (f->nfree) ix = f->freeix[--f->nfree];
      else {
        if (!f->cappool) { /* the most it can hold, once: no growth copies (pages untouched cost nothing) */
          f->pool = malloc(PENDING_FULL * sizeof *f->pool);
          f->freeix = f->pool ? malloc(PENDING_FULL * sizeof *f->freeix) : NULL;
          if (!f->freeix) { free(f->pool); f->pool = NULL; return NULL; }
          f->cappool = PENDING_FULL;
        }
        ix = f->npool++; /* < PENDING_FULL: a slot is new only when none is free, npool = npend then */
      }
      struct pend *p = &f->pool[ix]; /* every field read before it is set (sh: once counted) */
      p->key = key; p->home = home; p->t_enter = p->t_exit = 0; p->counted = 0; p->nmem = 0; p->gix = 0;
      if (kind == 0 && tcall_absent(f, thread, ref)) f->tcall_top[tcall_slot(thread)] = ref + 1;
      f->pend[i] = (struct pslot){key, ix + 1, home};
      f->npend++;
      return &f->pool[ix];
    }
  }
  return NULL;
}
/* Removes entry p, keeping linear probing intact (backward-shift deletion). */
static void pend_del(struct file_state *f, struct pend *p) {
  uint32_t i = p->home;
  while (f->pend[i].key != p->key) i = (i + 1) & (PENDING_CAP - 1);
  f->freeix[f->nfree++] = f->pend[i].ix - 1;
  if (p->gix) f->gfreeix[f->ngfree++] = p->gix - 1;
  f->pend[i].key = 0;
  f->npend--;
  for (uint32_t j = (i + 1) & (PENDING_CAP - 1); f->pend[j].key; j = (j + 1) & (PENDING_CAP - 1)) {
    uint32_t home = f->pend[j].home;
    /* move j to i if home is not in (i, j] cyclically */
    if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
      f->pend[i] = f->pend[j];
      f->pend[j].key = 0;
      i = j;
    }
  }
}

/* The members of group entry p, made on first use; NULL when out of memory. */
static struct member *members_of(struct file_state *f, struct pend *p) {
  if (p->gix) return f->groups[p->gix - 1].mem;
  uint32_t ix;
  if (f->ngfree) ix = f->gfreeix[--f->ngfree];
  else {
    if (f->ngroups == f->capgroups) {
      uint32_t nc = f->capgroups ? f->capgroups * 2 : 16;
      struct members *g = realloc(f->groups, nc * sizeof *g);
      uint32_t *q = g ? realloc(f->gfreeix, nc * sizeof *q) : NULL;
      if (g) f->groups = g;
      if (!q) return NULL;
      f->gfreeix = q;
      f->capgroups = nc;
    }
    ix = f->ngroups++;
  }
  p->gix = ix + 1;
  return f->groups[ix].mem;
}

static void finish_group(struct file_state *f, struct pend *p, uint64_t s, uint64_t e, int gpu) {
  const struct member *mem = p->nmem ? f->groups[p->gix - 1].mem : NULL;
  for (int k = 0; k < p->nmem; k++)
    for (uint32_t c = 0; c < mem[k].count; c++) account(f, mem[k].op, mem[k].n, mem[k].S, s, e, gpu);
}

/* Empties the call shapes (and the links between them: a linked one is always set). */
static void forget_call_shapes(struct file_state *f) {
  for (int i = 0; i < CALL_SHAPES; i++) { f->cshapes[i].set = 0; f->cshapes[i].next = NULL; }
  f->prev_shape = &f->cshapes[0];
}
static int p2_comm(void *ctx, const struct ncs_comm *c) {
  struct file_state *f = ctx;
  if (c->comm >= 65536) return 0;
  if (c->comm >= f->ncomm) {
    uint32_t n = f->ncomm ? f->ncomm : 8;
    while (n <= c->comm) n *= 2;
    int32_t *p = realloc(f->nranks, n * sizeof *p);
    if (!p) return 0;
    memset(p + f->ncomm, 0, (n - f->ncomm) * sizeof *p);
    f->nranks = p;
    f->ncomm = n;
  }
  f->nranks[c->comm] = c->nranks;
  forget_call_shapes(f); /* their ranks may change */
  return 0;
}

/* The call shape of c (CALL_SHAPES above), made on a miss. comm and datatype sit side by side,
 * in that order, in both: compared as one 64-bit word (ncs_u32_pair, io/trace.h). */
_Static_assert(offsetof(struct call_shape, datatype) == offsetof(struct call_shape, comm) + 4, "comm, datatype");
static int same_call_shape(const struct call_shape *x, const struct ncs_call *c) {
  return x->count == c->count && x->op == c->op && x->callsite == c->callsite &&
         ncs_u32_pair(&x->comm) == ncs_u32_pair(&c->comm);
}
static int call_shape_is(const struct call_shape *x, const struct ncs_call *c) {
  return x->set && x->count == c->count && x->op == c->op && x->callsite == c->callsite && x->comm == c->comm &&
         x->datatype == c->datatype;
}
static __attribute__((noinline)) struct call_shape *call_shape_lookup(struct file_state *f, const struct ncs_call *c) {
  uint64_t h = (c->count + ((uint64_t)c->callsite << 24) + ((uint64_t)c->comm << 12) + c->op) * 0x9e3779b97f4a7c15ull;
  struct call_shape *x = &f->cshapes[h >> (64 - CALL_SHAPE_BITS)]; /* datatype is compared, not hashed: it rarely varies */
  if (call_shape_is(x, c)) return x;
  const struct rank_m *r = f->r;
  x->count = c->count; x->op = c->op; x->datatype = c->datatype; x->comm = c->comm; x->callsite = c->callsite;
  x->set = 1;
  x->timed = ncs_stepmark_timed(c->op);
  x->boundary = r->have_steps && c->op == r->step_op && x->timed && ncs_stepmark_key(c) == r->step_key;
  x->n = c->comm < f->ncomm ? (uint32_t)(f->nranks[c->comm] > 0 ? f->nranks[c->comm] : 1) : 1;
  x->S = x->timed ? ncs_rule_S(c->op, c->count, c->datatype, (int)x->n) : 0;
  x->have_sh = 0;
  x->fast = 0;
  x->next = NULL;
  x->sig = f->deciding && x->timed ? ncs_stepmark_slot(f->sig, &f->nsig, ncs_stepmark_key(c)) : NULL;
  return x;
}
/* The call shape of c: the one that came after the previous call's last time, else the
 * table's (made on a miss). */
static inline __attribute__((always_inline)) struct call_shape *call_shape_of(struct file_state *f, const struct ncs_call *c) {
  struct call_shape *x = f->prev_shape->next;
  if (!x || !same_call_shape(x, c)) f->prev_shape->next = x = call_shape_lookup(f, c);
  f->prev_shape = x;
  return x;
}
/* Makes call shape x's shape (for an operation being counted); without memory for its size
 * row or histogram, x keeps none and returns the table's entry, to be made again next time. */
static struct shape *shape_of_call(struct file_state *f, struct call_shape *x) {
  struct shape *sh = shape_of(f, x->op, x->n, x->S);
  if (sh->z && sh->z->h) { x->sh = *sh; x->have_sh = 1; }
  return sh;
}
/* account() of a host-timed call of call shape x */
static inline __attribute__((always_inline)) void account_call(struct file_state *f, struct call_shape *x, uint64_t s, uint64_t e) {
  if (!x->have_sh) {
    struct shape *sh = shape_of_call(f, x);
    if (!x->have_sh) { account_shape(f, sh, s, e, 0); sh->op = 0; return; }
  }
  account_shape(f, &x->sh, s, e, 0);
}

/* A counted step boundary at t: a step of the rank, and a start handed to the analyses after
 * metrics (model/stages.h). */
static inline __attribute__((always_inline)) void count_step(struct file_state *f, uint64_t t) {
  add_step(f->r, t);
  if (!f->m->job->stages || f->starts_dropped) return;
  if (ncs_kwatch_keep(&f->kw, f->starts.n)) ncs_starts_add(&f->starts, t);
  else { ncs_starts_free(&f->starts); f->starts_dropped = 1; }
}

/* p2_calls for every case: the common one too. */
static int p2_call_any(struct file_state *f, const struct ncs_call *c, struct call_shape *x) {
  struct rank_m *r = f->r;
  f->iv_thread = c->thread;
  struct metrics *m = f->m;
  int boundary = x->boundary;
  if (boundary && m->skip_steps > 0 && r->boundary_seen == (uint64_t)m->skip_steps) {
    r->warm_t = c->t_enter; /* the first step after the warm-up starts here */
    r->warm_set = 1;
  }
  r->boundary_seen += boundary;
  if (!r->warm_set && !(m->skip_steps > 0 && r->have_steps)) {
    /* warm-up in seconds from the file's first call record; none by default, and then every
     * call counts, also one entering before that record (a rank per thread: the file holds
     * each thread's calls in chunks, not in entry order) */
    r->warm_t = m->skip_s > 0 ? c->t_enter + (uint64_t)(m->skip_s * 1e9) : 0;
    r->warm_set = 1;
  }
  int counted = r->warm_set && c->t_enter >= r->warm_t;
  if (boundary && counted) count_step(f, c->t_enter);
  if (counted) {
    if (!r->have_window || c->t_enter < r->w0) r->w0 = c->t_enter;
    if (!r->have_window || c->t_exit > r->w1) r->w1 = c->t_exit;
    r->have_window = 1;
  }
  uint32_t n = x->n;
  if (c->op == NCS_OP_GroupEnd && c->depth == 0 && c->group) {
    /* host mode: the group's members run at its outermost GroupEnd */
    struct pend *p = pend_find(f, 1, c->thread, c->group, 0);
    if (p && !f->gpu_mode) { finish_group(f, p, c->t_enter, c->t_exit, 0); pend_del(f, p); }
    else if (p) { p->t_enter = c->t_enter; p->t_exit = c->t_exit; }
    return 0;
  }
  if (!x->timed || (c->rc != 0 && c->rc != ncclInProgress) || !counted) return 0;
  if (c->flags & NCS_CALL_F_CAPTURED) { r->captured++; return 0; }
  double S = x->S;
  if (c->group && c->depth > 0) {
    struct pend *p = pend_find(f, 1, c->thread, c->group, 1);
    if (p) p->thread = c->thread;
    struct member *mem = p ? members_of(f, p) : NULL;
    if (!mem) { account_call(f, x, c->t_enter, c->t_exit); return 0; }
    int k = 0;
    while (k < p->nmem && !(mem[k].op == c->op && mem[k].n == n && mem[k].S == S)) k++;
    if (k == p->nmem && k < MAX_MEMBERS) { mem[k] = (struct member){c->op, n, S, 0}; p->nmem++; }
    if (k < MAX_MEMBERS) mem[k].count++;
    else account_call(f, x, c->t_enter, c->t_exit);
    return 0;
  }
  if (!f->gpu_mode) { account_call(f, x, c->t_enter, c->t_exit); return 0; }
  if (f->nx_on) nx_put(f);
  struct pend *p = &f->nx;
  if (tcall_absent(f, c->thread, c->tcall) && f->npend < PENDING_FULL) { /* waits in nx */
    f->nx_thread = c->thread; f->nx_tcall = c->tcall; f->nx_on = 1;
  } else if (!(p = pend_find(f, 0, c->thread, c->tcall, 1))) {
    account_call(f, x, c->t_enter, c->t_exit);
    return 0;
  }
  if (!x->have_sh) shape_of_call(f, x)->op = x->have_sh ? x->op : 0; /* the size row now, for when it is timed */
  p->sh = x->have_sh ? x->sh : (struct shape){.S = S, .op = c->op, .n = n}; /* none (no memory): made when timed */
  p->t_enter = c->t_enter; p->t_exit = c->t_exit; p->counted = 1; p->thread = c->thread;
  return 0;
}

/* The second pass of a run of calls. The common case first: a call of a shape with x->fast
 * (timed, its size row made, the warm-up set and the window begun; the boundary too once it
 * can no longer end the warm-up), counted (after the warm-up), succeeded (rc 0), not captured,
 * at group depth 0, and timed on the host at once: the file is timed on the host, or (GPU
 * mode, `gate`) the pending table is full, no call waits in nx and the call's tcall is above
 * every tcall its thread's slot put in the table (tcall_absent: not in it, so p2_call_any's
 * pend_find turns it away and it is timed on the host). That is what p2_call_any does with
 * it, without its tests: on a GPU-timed trace whose GPU times mostly never come (the table
 * full of calls that wait for ever) nearly every call. Any other call goes to p2_call_any (which does the same with the
 * common one). Over the run, the state the common case changes (the previous call shape,
 * the window, the open interval and the buffer's counts) is kept in locals: written back
 * before anything else reads it (lane_to, flush_iv, add_iv_run, p2_call_any) and at the
 * end. A call of another thread than the current lane's switches lanes first (lane_to; the
 * lane's latest start is the open interval's, note_last).
 * Two forms (o): a run of n calls, `next` (or NULL) the GPU_TIME that follows the last one; or
 * (o not NULL) a stretch, nrec records in the order o gives (1: a GPU_TIME, from g), its GPU
 * times read in their places (p2_gpu, the locals written back around it) and each call
 * offered the GPU_TIME that follows it: the locals kept over the whole stretch. Returns 1 when
 * the run's last call took `next`. */
static int p2_gpu(void *ctx, const struct ncs_gpu_time *g);
static inline __attribute__((always_inline)) int p2_calls_(struct file_state *f, const struct ncs_call *c, size_t n,
                                                           const struct ncs_gpu_time *next, const uint8_t *o,
                                                           const struct ncs_gpu_time *g, size_t nrec) {
  struct rank_m *r = f->r;
  struct call_shape *prev = f->prev_shape;
  uint64_t w0 = r->w0, w1 = r->w1, warm_t = r->warm_t;
  uint64_t open_s = f->open_s, open_e = f->open_e;
  uint64_t (*iv)[2] = f->iv + f->niv; /* where the next merged interval goes */
  uint32_t room = f->ivlim - f->nraw; /* intervals before the next flush */
  /* 0: timed on the host; 1: GPU mode, the table turns away absent calls; 2: GPU mode, it takes
   * them (none is common). Only p2_call_any changes the table or nx here. */
#define P2_GATE_() (!f->gpu_mode ? 0 : f->npend >= PENDING_FULL && !f->nx_on ? 1 : 2)
  int gate = P2_GATE_();
  const struct ncs_call *cend = c + n;
  const uint8_t *oe = o ? o + nrec : NULL;
  int took = 0;
#define P2_SAVE_() (f->prev_shape = prev, r->w0 = w0, r->w1 = w1, f->open_s = open_s, f->open_e = open_e, \
                    f->niv = (uint32_t)(iv - f->iv), f->nraw = f->ivlim - room)
#define P2_LOAD_() (prev = f->prev_shape, w0 = r->w0, w1 = r->w1, warm_t = r->warm_t, open_s = f->open_s, \
                    open_e = f->open_e, iv = f->iv + f->niv, room = f->ivlim - f->nraw, gate = P2_GATE_())
  for (;;) {
    const struct ncs_gpu_time *gn; /* the GPU_TIME right after this call (NULL: none) */
    if (o) {
      if (o == oe) break;
      if (*o) { P2_SAVE_(); p2_gpu(f, g++); P2_LOAD_(); o++; continue; }
      gn = o + 1 < oe && o[1] ? g : NULL;
      o++;
    } else {
      if (c == cend) break;
      gn = c + 1 == cend ? next : NULL;
    }
    struct call_shape *x = prev->next;
    if (__builtin_expect(!x || !same_call_shape(x, c), 0)) prev->next = x = call_shape_lookup(f, c);
    prev = x;
    uint64_t s = c->t_enter, e = c->t_exit;
    int fast = x->fast, common = s >= warm_t && !(c->rc | c->depth | (c->flags & NCS_CALL_F_CAPTURED));
    uint64_t is = s, ie = e; /* the interval timed: the host's, or the GPU time's (paired) */
    int gpu = 0;
    if (__builtin_expect(gate != 0, 0)) {
      /* a call followed at once by its own GPU_TIME, while it would wait for it in nx (no call
       * waits there, the table has room, the call is not in it): timed on it here, as
       * p2_call_any then p2_gpu would (the same interval, at the same place in the stream) */
      if (gate == 2 && gn && common && fast && !f->nx_on && gn->kind == NCS_GPU_KIND_CALL && gn->thread == c->thread &&
          gn->ref == c->tcall && tcall_absent(f, c->thread, c->tcall)) {
        if (o) { g++; o++; } /* taken: not read again */
        else took = 1;
        gpu = !(gn->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) && gn->gpu_end >= gn->gpu_start;
        if (gpu) { is = gn->gpu_start; ie = gn->gpu_end; }
        else r->failed_gpu++;
      } else {
        common &= gate == 1 && tcall_absent(f, c->thread, c->tcall);
      }
    }
    if (__builtin_expect(fast != 1 || !common, 0)) {
      if (fast == 2 && common) { /* the boundary */
        r->boundary_seen++;
        count_step(f, s); /* (reads none of the locals) */
      } else {
        P2_SAVE_();
        p2_call_any(f, c, x);
        const struct metrics *m = f->m;
        x->fast = x->have_sh && x->timed && r->warm_set && r->have_window &&
                  (!x->boundary || m->skip_steps <= 0 || r->boundary_seen > (uint64_t)m->skip_steps);
        x->fast += x->fast && x->boundary;
        P2_LOAD_();
        c++;
        continue;
      }
    }
    w0 = s < w0 ? s : w0; /* the window: the call's, and its interval's (GPU times extend it) */
    w1 = e > w1 ? e : w1;
    w0 = is < w0 ? is : w0;
    w1 = ie > w1 ? ie : w1;
    s = is; e = ie;
    uint64_t d = 0;
    if (e > s) { /* add_iv */
      d = e - s;
      if (__builtin_expect(c->thread != f->lane_thread, 0)) { P2_SAVE_(); lane_to(f, c->thread); P2_LOAD_(); }
      if (__builtin_expect(!room, 0)) { P2_SAVE_(); flush_iv(f, 0); P2_LOAD_(); }
      room--;
      if (s < open_s) { P2_SAVE_(); add_iv_run(f, s, e); P2_LOAD_(); } /* (OPEN_NONE too) */
      else if (__builtin_expect(s > open_e, 1)) { (*iv)[0] = open_s; (*iv)[1] = open_e; iv++; open_s = s; open_e = e; }
      else open_e = e > open_e ? e : open_e;
    }
    const struct shape *sh = &x->sh;
    struct mstat *z = sh->z;
    sh->t->busS_f += sh->busS;
    sh->t->steps += sh->steps;
    z->calls++; z->time_ns += d; z->S += sh->Su; z->busS_f += sh->busS; z->steps += sh->steps; z->gpu_calls += gpu;
    ncs_hist_add(z->h, d);
    c++;
  }
  P2_SAVE_();
#undef P2_SAVE_
#undef P2_LOAD_
#undef P2_GATE_
  return took;
}
static __attribute__((noinline)) int p2_calls(struct file_state *f, const struct ncs_call *c, size_t n, const struct ncs_gpu_time *next) {
  return p2_calls_(f, c, n, next, NULL, NULL, 0);
}
static __attribute__((noinline)) void p2_stretch(struct file_state *f, const struct ncs_stretch *s) {
  p2_calls_(f, s->c, 0, NULL, s->order, s->g, s->nc + s->ng);
}

/* account() of pending call p */
static inline __attribute__((always_inline)) void account_pend(struct file_state *f, const struct pend *p, uint64_t s, uint64_t e, int gpu) {
  if (p->sh.z && p->sh.z->h) account_shape(f, &p->sh, s, e, gpu);
  else account(f, p->sh.op, p->sh.n, p->sh.S, s, e, gpu);
}

/* The waiting call (nx) put in the pending table as p2_call_any would have put it. The table
 * had room when it began to wait and nothing used the table since: only out of memory fails,
 * and then the call is timed on the host. */
static void nx_put(struct file_state *f) {
  f->nx_on = 0;
  f->iv_thread = f->nx.thread;
  struct pend *p = pend_find(f, 0, f->nx_thread, f->nx_tcall, 1);
  if (!p) { account_pend(f, &f->nx, f->nx.t_enter, f->nx.t_exit, 0); return; }
  p->sh = f->nx.sh; p->t_enter = f->nx.t_enter; p->t_exit = f->nx.t_exit; p->counted = 1; p->thread = f->nx.thread;
}
static int p2_gpu(void *ctx, const struct ncs_gpu_time *g) {
  struct file_state *f = ctx;
  f->iv_thread = g->thread;
  int nx = f->nx_on && g->kind == NCS_GPU_KIND_CALL && g->thread == f->nx_thread && g->ref == f->nx_tcall;
  struct pend *p = nx ? &f->nx : pend_find(f, g->kind == NCS_GPU_KIND_GROUP, g->thread, g->ref, 0);
  if (!p) return 0; /* a call not counted (warm-up, failed) or unknown */
  if (nx) f->nx_on = 0; /* (not in the table: nothing to delete) */
  int ok = !(g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) && g->gpu_end >= g->gpu_start;
  if (!ok) f->r->failed_gpu++;
  if (g->kind == NCS_GPU_KIND_GROUP)
    finish_group(f, p, ok ? g->gpu_start : p->t_enter, ok ? g->gpu_end : p->t_exit, ok);
  else
    account_pend(f, p, ok ? g->gpu_start : p->t_enter, ok ? g->gpu_end : p->t_exit, ok);
  if (!nx) pend_del(f, p);
  return 0;
}

/* ---- analysis hooks ---- */
/* Puts file `file`'s step starts in the report's stages (model/stages.h), for the analyses
 * whose file_done of it follows; the next file starts a buffer of its own. */
static void hand_over_starts(struct metrics *m, int file, struct file_state *f) {
  if (m->job->stages) ncs_stages_put_starts(m->job->stages, file, &f->starts);
  ncs_starts_free(&f->starts);
}

static void *m_create(const struct ncs_job *job) {
  struct metrics *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->job = job;
  m->n = job->n;
  m->rank = calloc(job->n ? (size_t)job->n : 1, sizeof *m->rank);
  m->files = calloc(job->n ? (size_t)job->n : 1, sizeof *m->files);
  if (!m->rank || !m->files) { free(m->rank); free(m->files); free(m); return NULL; }
  for (int i = 0; i < job->n; i++) m->files[i] = (struct mfile){m, i, NULL};
  pthread_mutex_init(&m->mu, NULL);
  const char *w = ncs_job_option(job, "skip-warmup");
  if (w) {
    char *e;
    double v = strtod(w, &e);
    if (e != w && *e == 's' && !e[1] && v >= 0) m->skip_s = v;
    else if (e != w && !*e && v >= 0 && v == floor(v)) m->skip_steps = (long)v;
    else { fprintf(stderr, "ncclscope report: --skip-warmup wants N (steps) or Ns (seconds): %s\n", w); m->bad_option = 1; }
  }
  const char *so = ncs_job_option(job, "step-op");
  if (so && !(m->step_op_opt = ncs_stepmark_op_by_name(so))) {
    fprintf(stderr, "ncclscope report: --step-op: unknown operation %s\n", so);
    m->bad_option = 1;
  }
  return m;
}

/* ---- One read ----
 * Each file is read once. Until its step boundary can be chosen (at the end of the file, or
 * once HOLD_MAX records are held), its CALL, GPU_TIME and COMM records are counted as the
 * first pass (signatures, GPU times) and held as decoded; then the boundary is chosen,
 * the held records go through the second pass in file order, and the rest of the file streams
 * through it. A file of up to HOLD_MAX such records gives exactly what two reads gave; past
 * it, the boundary is the one its first HOLD_MAX records show (docs/METRICS.md, "Steps"). */
static struct file_state *fs_new(struct metrics *m, int file) {
  pthread_mutex_lock(&m->mu);
  struct file_state *f = m->cache;
  if (f) m->cache = f->next_free;
  pthread_mutex_unlock(&m->mu);
  if (!f) {
    if (!(f = calloc(1, sizeof *f))) return NULL;
    f->sig = calloc(NCS_STEPMARK_SIGS, sizeof *f->sig);
    f->pend = calloc(PENDING_CAP, sizeof *f->pend);
    f->iv = malloc(IV_CAP * sizeof *f->iv);
    f->ivcap = f->ivlim = IV_CAP;
    if (!f->sig || !f->pend || !f->iv) { free(f->sig); free(f->pend); free(f->iv); free(f); return NULL; }
  } else {
    memset(f->sig, 0, NCS_STEPMARK_SIGS * sizeof *f->sig); /* the pending table was emptied by the last file_done */
    if (f->nranks) memset(f->nranks, 0, f->ncomm * sizeof *f->nranks);
  }
  f->nsig = 0; f->ncalls1 = 0; f->gpu_records = 0; f->mark[0] = 0;
  f->deciding = 1;
  f->nheld = 0; f->hlen = 0; f->htype = HELD_NONE;
  f->npend = 0; f->npool = 0; f->nfree = 0; f->ngroups = 0; f->ngfree = 0;
  f->nx_on = 0; memset(f->tcall_top, 0, sizeof f->tcall_top);
  ncs_starts_free(&f->starts);
  f->kw = (struct ncs_kwatch){0};
  f->starts_dropped = 0;
  f->gpu_mode = 0;
  f->niv = 0; f->nraw = 0; f->runs.nrun = 0; f->open_s = OPEN_NONE; f->frontier = 0; f->have_base = 0;
  ncs_lanes_free(&f->lanes);
  f->lanes = (struct ncs_lanes){.by_chunk = 1};
  f->lane_thread = 0; /* lane[0]'s: lane_to makes a lane at the first interval of any thread but 0 */
  f->open_foreign = OPEN_NONE;
  for (int i = 0; i < SHAPES; i++) f->shapes[i].op = 0;
  forget_call_shapes(f);
  f->r = &m->rank[file];
  f->m = m;
  f->next_free = NULL;
  const struct ncs_stages *st = m->job->stages;
  f->rp = st && st->replay_on ? NULL : ncs_replay_new(); /* NULL: read from the stages, or not looked for (out of memory) */
  return f;
}
static void fs_free(struct file_state *f) {
  free(f->sig); free(f->pend); free(f->pool); free(f->freeix); free(f->groups); free(f->gfreeix);
  free(f->held); free(f->nranks); free(f->iv); ncs_ivruns_free(&f->runs); ncs_starts_free(&f->starts);
  ncs_lanes_free(&f->lanes);
  ncs_replay_free(f->rp);
  free(f);
}
static struct file_state *fs_of(struct mfile *mf) {
  if (!mf->fs) mf->fs = fs_new(mf->m, mf->file);
  return mf->fs;
}

/* A chunk of the file ended (the lanes' count, model/ivlanes.h). */
static void chunk_end(struct file_state *f) {
  note_last(f);
  ncs_lanes_chunk(&f->lanes);
}

/* Chooses the boundary and the timing mode from what the first pass counted, and sends the
 * held records through the second pass. */
static void decide(struct file_state *f, int cut) {
  choose_boundary(f->m, f, f->r, cut);
  f->gpu_mode = f->gpu_records > 0;
  f->deciding = 0;
  forget_call_shapes(f); /* made without the ranks and the boundary */
  for (size_t o = 0; o < f->hlen;) {
    const struct held_run *h = (const void *)(f->held + o);
    o += sizeof *h;
    if (h->type == HELD_CALL) {
      const struct ncs_call *c = (const void *)(f->held + o);
      p2_calls(f, c, h->n, NULL);
      o += h->n * sizeof *c;
    } else if (h->type == HELD_GPU) {
      const struct ncs_gpu_time *g = (const void *)(f->held + o);
      for (uint32_t i = 0; i < h->n; i++) p2_gpu(f, &g[i]);
      o += h->n * sizeof *g;
    } else if (h->type == HELD_CHUNK) {
      for (uint32_t i = 0; i < h->n; i++) chunk_end(f);
    } else {
      const struct held_comm *hc = (const void *)(f->held + o);
      for (uint32_t i = 0; i < h->n; i++) p2_comm(f, &(struct ncs_comm){.comm = hc[i].comm, .nranks = hc[i].nranks});
      o += h->n * sizeof *hc;
    }
  }
  f->hlen = 0; f->nheld = 0; f->htype = HELD_NONE; /* the buffer stays with the state, for the next file */
}

/* More room for the held runs: at least `need` bytes in all; 0, or -1 when there is no memory.
 * The first size holds HOLD_MAX calls and a header each: no growth copies in the common case
 * (the pages a file of few records leaves untouched cost nothing). */
#define HOLD_FIRST (HOLD_MAX * (sizeof(struct ncs_call) + sizeof(struct held_run)))
static __attribute__((noinline)) int hold_grow(struct file_state *f, size_t need) {
  size_t nc = f->hcap ? f->hcap : HOLD_FIRST;
  while (nc < need) nc *= 2;
  uint8_t *p = realloc(f->held, nc);
  if (!p) return -1;
  f->held = p;
  f->hcap = nc;
  return 0;
}
/* Room for n more held records of `type` (each `size` bytes, a multiple of 8) at the end of
 * the held runs (a run of that type goes on; else a new one starts); NULL when there is no
 * memory. */
static inline __attribute__((always_inline)) void *hold(struct file_state *f, uint32_t type, uint32_t n, size_t size) {
  size_t head = type == f->htype ? 0 : sizeof(struct held_run), need = f->hlen + head + n * size;
  if (need > f->hcap && hold_grow(f, need)) return NULL;
  if (head) {
    f->hlast = f->hlen;
    f->htype = type;
    *(struct held_run *)(f->held + f->hlen) = (struct held_run){type, n};
  } else {
    ((struct held_run *)(f->held + f->hlast))->n += n;
  }
  void *at = f->held + f->hlen + head;
  f->hlen = need;
  f->nheld += n;
  return at;
}
/* How many of the n records to hold now (HOLD_MAX), and room for them: *at, NULL when there
 * is no memory (none is held then). */
static inline __attribute__((always_inline)) uint32_t hold_some(struct file_state *f, size_t n, uint32_t type, size_t size, void **at) {
  uint32_t k = HOLD_MAX - f->nheld < n ? HOLD_MAX - f->nheld : (uint32_t)n;
  *at = k ? hold(f, type, k, size) : NULL;
  return *at ? k : 0;
}

static int h_process(void *ctx, const struct ncs_process *p) {
  struct file_state *f = fs_of(ctx);
  if (f) ncs_kwatch_process(&f->kw, p); /* a 1.0 file says it has no kernel: no start kept */
  return f && f->deciding ? p1_process(f, p) : 0;
}
static int h_comm(void *ctx, const struct ncs_comm *c) {
  struct file_state *f = fs_of(ctx);
  if (!f) return 0;
  if (f->rp) ncs_replay_comm(f->rp, c->comm, c->nranks, c->device);
  void *at = NULL;
  if (f->deciding && hold_some(f, 1, HELD_COMM, sizeof(struct held_comm), &at)) {
    *(struct held_comm *)at = (struct held_comm){c->comm, c->nranks};
    return 0;
  }
  if (f->deciding) decide(f, 1); /* no room: the boundary is chosen now */
  return p2_comm(f, c);
}

/* The first pass's count of call c (its signature's, by way of its call shape). */
static inline __attribute__((always_inline)) void p1_call(struct file_state *f, const struct ncs_call *c) {
  struct call_shape *x = call_shape_of(f, c);
  if (!x->timed) return;
  f->ncalls1++;
  struct ncs_stepsig *s = x->sig;
  if (s) {
    if (!s->count) { s->first = f->ncalls1; s->op = c->op; }
    s->count++;
  }
}

/* A run of calls. While deciding, those there is room for are counted (first pass) and held;
 * the first without room is counted too, and the boundary is chosen (decide); the rest go
 * through the second pass one after the other. */
static __attribute__((noinline)) size_t hold_calls(struct file_state *f, const struct ncs_call *c, size_t n) {
  void *at;
  size_t i = hold_some(f, n, HELD_CALL, sizeof *c, &at);
  struct ncs_call *to = at;
  struct call_shape *prev = f->prev_shape; /* p1_call's, kept in locals over the run */
  uint64_t ncalls1 = f->ncalls1;
  for (size_t k = 0; k < i; k++) {
    struct call_shape *x = prev->next;
    if (__builtin_expect(!x || !same_call_shape(x, &c[k]), 0)) prev->next = x = call_shape_lookup(f, &c[k]);
    prev = x;
    struct ncs_stepsig *s = x->sig; /* (NULL when not timed) */
    ncalls1 += x->timed != 0;
    if (s) {
      if (!s->count) { s->first = ncalls1; s->op = c[k].op; }
      s->count++;
    }
    to[k] = c[k]; /* (memcpy's rep movsb: a count per byte) */
  }
  f->prev_shape = prev;
  f->ncalls1 = ncalls1;
  if (i < n) { p1_call(f, &c[i]); decide(f, 1); }
  return i;
}
static int h_calls(void *ctx, const struct ncs_call *c, size_t n) {
  struct file_state *f = fs_of(ctx);
  if (!f) return 0;
  if (f->rp) ncs_replay_calls(f->rp, c, n);
  size_t i = f->deciding ? hold_calls(f, c, n) : 0;
  if (i < n) p2_calls(f, c + i, n - i, NULL);
  return 0;
}
static int h_gpu_times(void *ctx, const struct ncs_gpu_time *g, size_t n) {
  struct file_state *f = fs_of(ctx);
  if (!f) return 0;
  if (f->rp) ncs_replay_gpu_times(f->rp, g, n);
  size_t i = 0;
  if (f->deciding) {
    void *at;
    i = hold_some(f, n, HELD_GPU, sizeof *g, &at);
    f->gpu_records += i; /* the first pass's count */
    struct ncs_gpu_time *to = at;
    for (size_t k = 0; k < i; k++) { to[k] = g[k]; __asm__("" ::: "memory"); } /* a loop, not memcpy (above) */
    if (i < n) { f->gpu_records++; decide(f, 1); }
  }
  for (; i < n; i++) p2_gpu(f, &g[i]);
  return 0;
}

/* A stretch (io/trace.h) in file order: the records held while deciding, the boundary's
 * moment and the pending table's room all follow the file's interleaving. Once the file is
 * read in GPU mode (and no replay is fed here), its records in that order as h_calls and
 * h_gpu_times would take them, in one p2_stretch, except that a call followed by a GPU_TIME is
 * offered it (a call followed at once by its GPU time is timed on it without waiting in nx),
 * and one taken is not read again. */
static int h_stretch(void *ctx, const struct ncs_stretch *s) {
  struct file_state *f = fs_of(ctx);
  if (!f || f->rp || f->deciding || !f->gpu_mode) return ncs_stretch_in_order(s, ctx, h_calls, h_gpu_times);
  p2_stretch(f, s);
  return 0;
}

/* A chunk end: held while deciding, in its place among the held records (not counted as one
 * of them: it is no record). */
static int h_chunk(void *ctx, uint64_t index, uint64_t dropped_total, uint32_t flags, uint64_t offset) {
  struct file_state *f = ((struct mfile *)ctx)->fs; /* none yet: no interval either */
  if (!f) return 0;
  if (f->deciding && hold(f, HELD_CHUNK, 1, 0)) { f->nheld--; return 0; }
  if (f->deciding) decide(f, 1); /* no memory: the boundary is chosen now */
  chunk_end(f);
  return 0;
}
static int h_raw(void *ctx, const struct ncs_raw *x) {
  if (x->type < NCS_REC_KERNEL || x->type > NCS_REC_KERNEL_STATUS) return 0;
  struct file_state *f = fs_of(ctx);
  if (f) ncs_kwatch_raw(&f->kw, x);
  if (f && f->rp) ncs_replay_add_raw(f->rp, x);
  return 0;
}

static int h_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  (void)raw;
  struct file_state *f = fs_of(ctx);
  if (f) ncs_kwatch_kernel(&f->kw);
  if (f && f->rp) ncs_replay_add_kernels(f->rp, k, n);
  return 0;
}

static void m_visitor(void *state, int file, struct ncs_visitor *v) {
  struct metrics *m = state;
  if (!m || m->bad_option) return;
  m->rank[file].used = 1;
  v->ctx = &m->files[file];
  v->process = h_process;
  v->comm = h_comm;
  v->calls = h_calls;
  v->gpu_times = h_gpu_times;
  v->stretch = h_stretch;
  v->raw = h_raw;
  v->chunk = h_chunk;
  v->kernels = h_kernels;
}

/* A call (or group) whose GPU time never came: timed on the host. */
static void settle_unanswered(struct file_state *f, const struct pend *p) {
  f->iv_thread = p->thread;
  if (p->nmem && p->t_exit) finish_group(f, (struct pend *)p, p->t_enter, p->t_exit, 0); /* no GroupEnd: untimed */
  else if (p->counted) account_pend(f, p, p->t_enter, p->t_exit, 0);
}
/* One replayed call (model/replay.h): timed on its kernel's device interval (its share of it
 * when the kernel runs several calls of a captured group, nccl-tests -m), counted in its op's
 * and size row's calls and in their replays. */
static void on_replayed(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e) {
  struct file_state *f = ctx;
  struct rank_m *r = f->r;
  if (c->op >= NCS_OP_LIMIT) return;
  struct shape *sh = shape_of(f, c->op, c->n, c->S);
  uint64_t d = e > s ? (e - s) / (c->members > 1 ? c->members : 1) : 0;
  if (s < r->w0) r->w0 = s;
  if (e > r->w1) r->w1 = e;
  struct mstat *t = &r->op[c->op], *z = sh->z ? sh->z : t; /* no memory for the size rows: the op's */
  t->busS_f += sh->busS;
  z->calls++; z->time_ns += d; z->S += sh->Su; z->gpu_calls++; z->replays++; z->replay_ns += d;
  if (z != t) { z->busS_f += sh->busS; if (z->h) ncs_hist_add(z->h, d); }
  if (!sh->z || !sh->z->h) sh->op = 0;
  r->rp_count[c->op] += c->count;
  r->rp_bytes[c->op] += c->bytes;
}
/* A part of the replays' union that no call's interval covered: communication time. */
static void on_replay_extra(void *ctx, uint64_t s, uint64_t e) {
  struct file_state *f = ctx;
  f->r->comm_ns += (double)(e - s);
  add_comm_steps(f->r, s, e);
}
/* After the calls are committed: the file's graph replays, counted and timed (docs/METRICS.md
 * "Graph replays"); replays starting before the warm-up's end are left out as calls are. */
static void add_replays(struct file_state *f, int file) {
  struct rank_m *r = f->r;
  const struct ncs_replay *rp = f->rp ? f->rp : ncs_stages_replay(f->m->job->stages, file); /* solved there */
  if (!rp || (f->rp ? ncs_replay_solve(f->rp, &r->rp) != 0 : (ncs_replay_sum_of(rp, &r->rp), 0)) || !r->rp.counted ||
      !r->have_window)
    return;
  uint64_t from = r->warm_set ? r->warm_t : 0;
  ncs_replay_each(rp, from, on_replayed, f);
  ncs_replay_extra(rp, from, on_replay_extra, f);
}

static int cmp_pend_made(const void *a, const void *b) {
  const struct pend *x = *(const struct pend *const *)a, *y = *(const struct pend *const *)b;
  if (x->t_enter != y->t_enter) return x->t_enter < y->t_enter ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* At the end of a file: the per-op counts from the size rows (a timed operation is counted
 * in its size row, or, without memory for it, in its op's), and the calls timed on the GPU
 * and on the host. */
static void fold_rows(struct rank_m *r) {
  r->timed_gpu = r->timed_host = 0;
  for (unsigned op = 0; op < NCS_OP_LIMIT; op++) {
    struct mstat *t = &r->op[op];
    for (int b = 0; b < NBUCKET && r->size[op]; b++) {
      const struct mstat *z = &r->size[op][b];
      t->calls += z->calls; t->time_ns += z->time_ns; t->S += z->S; t->gpu_calls += z->gpu_calls;
      t->replays += z->replays; t->replay_ns += z->replay_ns;
    }
    r->timed_gpu += t->gpu_calls;
    r->timed_host += t->calls - t->gpu_calls;
  }
}

static void m_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct metrics *m = state;
  if (!m || m->bad_option) return;
  struct file_state *f = m->files[file].fs;
  if (!f) return; /* no record */
  if (f->deciding) decide(f, 0);
  if (f->nx_on) nx_put(f);
  /* calls still waiting for a GPU time: timed on the host, in the order they were made */
  const struct pend **left = f->npend ? malloc(f->npend * sizeof *left) : NULL;
  uint32_t nleft = 0;
  for (uint32_t i = 0; i < PENDING_CAP; i++) {
    if (!f->pend[i].key) continue;
    const struct pend *p = &f->pool[f->pend[i].ix - 1];
    if (left) left[nleft++] = p;
    else settle_unanswered(f, p);
    f->pend[i].key = 0;
  }
  if (left) qsort(left, nleft, sizeof *left, cmp_pend_made);
  for (uint32_t i = 0; i < nleft; i++) settle_unanswered(f, left[i]);
  free(left);
  f->npend = 0;
  flush_iv(f, 1);
  if (f->ivcap > IV_CAP) { /* the cached state keeps the first size */
    uint64_t (*p)[2] = realloc(f->iv, IV_CAP * sizeof *f->iv);
    if (p) { f->iv = p; f->ivcap = f->ivlim = IV_CAP; }
  }
  ncs_ivruns_free(&f->runs); /* and no merge buffer */
  add_replays(f, file);
  fold_steps(f->r);
  fold_rows(f->r);
  hand_over_starts(m, file, f);
  if (f->rp) ncs_stages_put_replay(m->job->stages, file, f->rp); /* sizes reads the replayed calls */
  f->rp = NULL;
  m->files[file].fs = NULL;
  pthread_mutex_lock(&m->mu);
  f->next_free = m->cache;
  m->cache = f;
  pthread_mutex_unlock(&m->mu);
}

/* ---- results ---- */
/* The rank's headline figures (all 0 for a file without records). */
static void rank_figures(const struct metrics *m, int file, struct ncs_metrics_rank *out) {
  const struct rank_m *r = &m->rank[file];
  if (!r->used) return;
  out->used = 1;
  out->valid = r->have_window;
  out->wall_s = r->have_window ? (double)(r->w1 - r->w0) / 1e9 : 0;
  out->comm_s = r->comm_ns / 1e9;
  out->comm_late = r->late;
  out->comm_late_s = (double)r->late_ns / 1e9;
  out->comm_forced = r->forced;
  out->compute_to_comm = ncs_kact_compute_to_comm(ncs_stages_fig(m->job->stages, file), out->wall_s * 1e9, out->comm_s * 1e9, &out->ratio_estimate);
  out->timing = r->timed_gpu && r->timed_host ? "mixed" : r->timed_gpu ? "gpu" : r->timed_host ? "host" : "none";
  out->steps = (uint32_t)(r->nsteps > UINT32_MAX ? UINT32_MAX : r->nsteps);
  if (r->done_n) {
    out->step_s = r->done_ns / (double)r->done_n / 1e9;
    out->step_comm_share = r->done_ns > 0 ? r->done_comm / r->done_ns : 0;
  }
}

/* The op taking most time on a rank. */
static unsigned top_op(const struct rank_m *r) {
  unsigned best = 0;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++)
    if (r->op[op].calls && (!best || r->op[op].time_ns > r->op[best].time_ns)) best = op;
  return best;
}

/* With kernel activity the verdict is on exposed communication (GPU time: a job whose
 * communication is hidden under compute is not communication-bound); without it, on the share
 * of the window spent in NCCL calls, an estimate (docs/METRICS.md). */
static void rank_verdict(struct ncs_metrics_rank *x) {
  if (!x->valid || x->wall_s <= 0) { x->verdict = "no timed communication"; return; }
  if (x->gpu) { x->verdict = ncs_kact_verdict(x->gpu); x->verdict_basis = "exposed_gpu_time"; return; }
  double share = x->comm_s / x->wall_s;
  x->verdict = share >= 0.5 ? "communication-bound" : share >= 0.25 ? "communication-heavy" : "not communication-bound";
  x->verdict_basis = "comm_share_estimate";
}

static void row_of(const struct mstat *z, int bucket, struct ncs_metrics_row *out) {
  *out = (struct ncs_metrics_row){bucket, z->calls, z->gpu_calls, z->replays, z->time_ns, z->replay_ns, z->S, z->busS_f, z->steps,
                                  z->h != NULL, 0, 0};
  if (z->h) { out->p50_ns = ncs_hist_quantile(z->h, 0.5); out->p99_ns = ncs_hist_quantile(z->h, 0.99); }
}

/* The rank's operations with timed calls and their size classes; -1 when out of memory. */
static int rank_ops(const struct rank_m *r, struct ncs_metrics_rank *out) {
  int nops = 0;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) nops += r->op[op].calls || r->rp_count[op] || r->rp_bytes[op];
  if (!nops) return 0;
  if (!(out->ops = calloc((size_t)nops, sizeof *out->ops))) return -1;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    if (!(r->op[op].calls || r->rp_count[op] || r->rp_bytes[op])) continue;
    struct ncs_metrics_op *o = &out->ops[out->nops++];
    o->op = op;
    row_of(&r->op[op], -1, &o->total);
    o->replayed_count = r->rp_count[op];
    o->replayed_bytes = r->rp_bytes[op];
    int nz = 0;
    for (int b = 0; b < NBUCKET && r->size[op]; b++) nz += r->size[op][b].calls != 0;
    if (!nz) continue;
    if (!(o->sizes = calloc((size_t)nz, sizeof *o->sizes))) return -1;
    for (int b = 0; b < NBUCKET; b++)
      if (r->size[op][b].calls) row_of(&r->size[op][b], b, &o->sizes[o->nsizes++]);
  }
  return 0;
}

const struct ncs_metrics_op *ncs_metrics_op_of(const struct ncs_metrics_rank *r, unsigned op) {
  for (int i = 0; r && i < r->nops; i++)
    if (r->ops[i].op == op) return &r->ops[i];
  return NULL;
}

static void free_result(struct metrics *m) {
  for (int i = 0; m->res_rank && i < m->n; i++) {
    for (int o = 0; o < m->res_rank[i].nops; o++) free(m->res_rank[i].ops[o].sizes);
    free(m->res_rank[i].ops);
  }
  free(m->res_rank);
  m->res_rank = NULL;
}

/* The result (after every file): -1 when out of memory (no result). */
static int build_result(struct metrics *m) {
  if (!(m->res_rank = calloc(m->n ? (size_t)m->n : 1, sizeof *m->res_rank))) return -1;
  for (int i = 0; i < m->n; i++) {
    const struct rank_m *r = &m->rank[i];
    struct ncs_metrics_rank *x = &m->res_rank[i];
    rank_figures(m, i, x);
    const struct ncs_kact_fig *g = ncs_stages_fig(m->job->stages, i);
    x->gpu = g && g->have && g->span_ns ? g : NULL;
    x->timed_gpu = r->timed_gpu;
    x->timed_host = r->timed_host;
    x->captured = r->captured;
    x->replays = &r->rp;
    rank_verdict(x);
    x->top_op = top_op(r);
    x->boundary_op = r->have_steps ? ncs_op_name(r->step_op) : NULL;
    x->found_by = r->have_steps ? r->step_how : NULL;
    if (rank_ops(r, x) != 0) { free_result(m); return -1; }
  }
  /* the dominant operation: the most communication time, all ranks together */
  double total = 0, best = 0, bus = 0, steps = 0;
  unsigned top = 0;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    double t = 0, b = 0, k = 0;
    for (int i = 0; i < m->n; i++) { t += (double)m->rank[i].op[op].time_ns; b += m->rank[i].op[op].busS_f; k += m->rank[i].op[op].steps; }
    total += t;
    if (t > best) { best = t; top = op; bus = b; steps = k; }
  }
  m->res = (struct ncs_metrics_result){m->n, m->res_rank, {0, 0, 0, 0, 0}};
  if (top && total > 0) m->res.top = (struct ncs_metrics_top){top, best / total, best, bus, steps};
  return 0;
}

static double gbps(double bytes, uint64_t ns) { return ns ? bytes / (double)ns : NAN; } /* bytes/ns = GB/s */

/* The result, and the headline's dominant operation. */
static void m_finish(void *state, const struct ncs_job *job) {
  struct metrics *m = state;
  if (!m || m->bad_option || build_result(m) != 0) return;
  m->built = 1;
  struct ncs_headline *h = job->headline;
  const struct ncs_metrics_top *t = &m->res.top;
  if (!h || !t->op) return;
  snprintf(h->top_op, sizeof h->top_op, "%s", ncs_op_name(t->op) ? ncs_op_name(t->op) : "?");
  h->top_op_share = t->share;
  h->top_busbw = ncs_op_bw(t->op) != NCS_BW_NONE ? gbps(t->busS, (uint64_t)t->time_ns) : 0;
  h->top_busbytes = t->busS;
  h->top_steps = t->steps;
}

static const void *m_result(void *state) {
  const struct metrics *m = state;
  return m && m->built ? &m->res : NULL;
}

static void m_destroy(void *state) {
  struct metrics *m = state;
  if (!m) return;
  for (int i = 0; i < m->n; i++) {
    struct rank_m *r = &m->rank[i];
    for (unsigned op = 0; op < NCS_OP_LIMIT; op++) {
      for (int b = 0; b < NBUCKET && r->size[op]; b++) free(r->size[op][b].h);
      free(r->size[op]);
    }
    free(r->step_t);
    free(r->step_comm);
  }
  free_result(m);
  free(m->rank);
  for (int i = 0; i < m->n; i++) if (m->files[i].fs) fs_free(m->files[i].fs);
  while (m->cache) { struct file_state *f = m->cache; m->cache = f->next_free; fs_free(f); }
  free(m->files);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

static int m_bad_options(void *state) { return state && ((const struct metrics *)state)->bad_option; }

static const struct ncs_analysis_option m_options[] = {
  {"skip-warmup", "N|Xs", "leave out the first N steps (or X seconds) of each rank"},
  {"step-op", "OP", "the operation that ends a training step (docs/METRICS.md)"},
  {NULL, NULL, NULL}};

const struct ncs_analysis ncs_analysis_metrics = {
  .name = "metrics",
  .options = m_options,
  .bad_options = m_bad_options,
  .create = m_create,
  .visitor = m_visitor,
  .file_done = m_file_done,
  .finish = m_finish,
  .destroy = m_destroy,
  .result = m_result,
};
