/* align.c — clock maps and the per-file aligner (contract in align.h, method in docs/CLOCKS.md). */
#include "model/align.h"

#include <stdlib.h>
#include <string.h>

void ncs_clockmap_init(struct ncs_clockmap *m) { memset(m, 0, sizeof *m); }

static int64_t off_of(const struct ncs_clock *c) { return (int64_t)(c->realtime_ns - c->monotonic_ns); }

void ncs_clockmap_add(struct ncs_clockmap *m, const struct ncs_clock *c) {
  if (m->n && c->monotonic_ns <= m->p[m->n - 1].monotonic_ns) return;
  if (m->n == NCS_CLOCKMAP_KEEP) {
    memmove(m->p, m->p + 1, sizeof m->p[0] * (NCS_CLOCKMAP_KEEP - 1));
    memmove(m->slope, m->slope + 1, sizeof m->slope[0] * (NCS_CLOCKMAP_KEEP - 1));
    m->n--;
  }
  m->p[m->n++] = *c;
  if (m->n >= 2) { /* offsets change by ppm: the product in map stays far inside a double's exact range */
    const struct ncs_clock *a = &m->p[m->n - 2];
    m->slope[m->n - 2] = (double)(off_of(c) - off_of(a)) / (double)(c->monotonic_ns - a->monotonic_ns);
  }
  int64_t off = (int64_t)(c->realtime_ns - c->monotonic_ns);
  if (!m->npairs) { m->off_first = off; m->mono_first = c->monotonic_ns; }
  m->off_last = off;
  m->mono_last = c->monotonic_ns;
  if (c->uncertainty_ns > m->unc_max) m->unc_max = c->uncertainty_ns;
  m->npairs++;
}

/* Segment p[i]..p[i+1] that holds mono, or the nearest one (m->n >= 2). */
static int seg_of(const struct ncs_clockmap *m, uint64_t mono) {
  int i = 0;
  while (i < m->n - 2 && mono > m->p[i + 1].monotonic_ns) i++;
  return i;
}

static int64_t seg_map(uint64_t mono, uint64_t base, int64_t off, double slope) {
  double d = (double)(int64_t)(mono - base) * slope;
  return (int64_t)mono + off + (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
}

int64_t ncs_clockmap_map(const struct ncs_clockmap *m, uint64_t mono) {
  if (!m->n) return (int64_t)mono;
  if (m->n == 1) return (int64_t)mono + off_of(&m->p[0]);
  int i = seg_of(m, mono);
  return seg_map(mono, m->p[i].monotonic_ns, off_of(&m->p[i]), m->slope[i]);
}

double ncs_clockmap_drift_ppm(const struct ncs_clockmap *m) {
  if (m->npairs < 2 || m->mono_last <= m->mono_first) return 0;
  return (double)(m->off_last - m->off_first) / (double)(m->mono_last - m->mono_first) * 1e6;
}

/* ---- the aligner ---- */
struct ncs_pending_call_ {
  struct ncs_call c;
  uint64_t gs, ge;
  int has_gpu;
};

void ncs_aligner_init(struct ncs_aligner *a, int64_t origin, ncs_aligned_fn release, void *ctx) {
  memset(a, 0, sizeof *a);
  ncs_clockmap_init(&a->map);
  a->seg.lo = 1;
  a->origin = origin;
  a->release = release;
  a->ctx = ctx;
}

int64_t ncs_aligner_time(const struct ncs_aligner *a, uint64_t mono) {
  return ncs_clockmap_map(&a->map, mono) - a->origin;
}

/* ncs_aligner_time through the segment of the time mapped before: held calls are released in
 * time order, so their times fall in one segment until the next pair (same value: the
 * segment's constants are those ncs_clockmap_map uses for that time). */
static inline __attribute__((always_inline)) int64_t job_time(struct ncs_aligner *a, uint64_t mono) {
  struct ncs_clockseg *g = &a->seg;
  if (mono < g->lo || mono > g->hi) {
    const struct ncs_clockmap *m = &a->map;
    if (m->n < 2) { /* no pair (the identity) or one (its offset): slope 0 rounds to 0 */
      *g = (struct ncs_clockseg){0, UINT64_MAX, 0, m->n ? off_of(&m->p[0]) : 0, 0};
    } else {
      int i = seg_of(m, mono);
      *g = (struct ncs_clockseg){i ? m->p[i].monotonic_ns + 1 : 0, i < m->n - 2 ? m->p[i + 1].monotonic_ns : UINT64_MAX,
                                 m->p[i].monotonic_ns, off_of(&m->p[i]), m->slope[i]};
    }
  }
  return seg_map(mono, g->base, g->off, g->slope) - a->origin;
}

static unsigned gslot_of(uint32_t thread, uint64_t tcall) {
  return (unsigned)(tcall + (uint64_t)thread * 0x9e3779b1u) & (NCS_ALIGN_GSLOTS - 1);
}

/* cap is a power of two (1024, doubled) */
static struct ncs_pending_call_ *at(struct ncs_aligner *a, size_t i) { return &a->q[(a->head + i) & (a->cap - 1)]; }

/* A held call with its times on the job clock. */
static inline __attribute__((always_inline)) void align_one(struct ncs_aligner *a, struct ncs_pending_call_ *p,
                                                             struct ncs_aligned *x) {
  x->call = &p->c;
  x->enter = job_time(a, p->c.t_enter);
  x->exit = job_time(a, p->c.t_exit);
  x->has_gpu = p->has_gpu;
  x->gpu_start = p->has_gpu ? job_time(a, p->gs) : 0;
  x->gpu_end = p->has_gpu ? job_time(a, p->ge) : 0;
}

/* One call released on its own (the oldest, early): a run of one when the hook takes runs. */
static void release_one(struct ncs_aligner *a, struct ncs_pending_call_ *p) {
  struct ncs_aligned x;
  align_one(a, p, &x);
  if (a->release_run) a->release_run(a->ctx, &x, 1);
  else if (a->release) a->release(a->ctx, &x);
}

/* 1 when `c` has no GPU time yet but its thread is GPU-timed and no GPU time of it or of a later
 * call of that thread has come: it may still get one. */
static int gpu_time_may_come(const struct ncs_aligner *a, const struct ncs_pending_call_ *p) {
  if (p->has_gpu) return 0;
  unsigned t = p->c.thread & 63;
  return a->gpu_seen[t].used && a->gpu_seen[t].thread == p->c.thread && p->c.tcall > a->gpu_seen[t].tcall;
}

/* A GPU time of `thread` named call `tcall` (or a group whose calls follow it). */
static inline __attribute__((always_inline)) void note_gpu_seen(struct ncs_aligner *a, uint32_t thread, uint64_t tcall) {
  unsigned t = thread & 63;
  if (!a->gpu_seen[t].used) { a->gpu_seen[t].used = 1; a->gpu_seen[t].thread = thread; a->gpu_seen[t].tcall = tcall; }
  else if (a->gpu_seen[t].thread != thread) a->gpu_seen[t].thread = ~0u; /* two threads: hold neither */
  else if (tcall > a->gpu_seen[t].tcall) a->gpu_seen[t].tcall = tcall;
}

/* A held call is settled when it has its GPU time (no other attaches to it), is in no group,
 * and its four times lie in the map's latest segment (after its older pair, up to the latest
 * pair), which stays among the kept pairs until the hold would have released the call: its job
 * times are those it would get then. The segment as (lo + 1, hi - lo): x lies in it when
 * x - (lo + 1) < hi - lo (unsigned); width 0 (fewer than two pairs): nothing settles. */
struct settle { uint64_t from, width; };
static inline struct settle settle_of(const struct ncs_aligner *a) {
  const struct ncs_clockmap *m = &a->map;
  if (m->n < 2) return (struct settle){0, 0};
  uint64_t lo = m->p[m->n - 2].monotonic_ns, hi = m->p[m->n - 1].monotonic_ns;
  return (struct settle){lo + 1, hi - lo};
}
static inline __attribute__((always_inline)) uint64_t umax(uint64_t x, uint64_t y) { return x > y ? x : y; }
static inline __attribute__((always_inline)) int settled(struct settle z, const struct ncs_pending_call_ *p) {
  uint64_t far = umax(umax(p->c.t_enter - z.from, p->c.t_exit - z.from), umax(p->gs - z.from, p->ge - z.from));
  return p->has_gpu & !p->c.group & (far < z.width);
}

/* The map's latest segment as one multiply-add for times after its older pair (the settled
 * calls' times): job_time's value there (seg_map with base lo, the segment's offset and slope,
 * less the origin) with the origin folded into the offset and the rounding's sign known from the
 * slope's (mono > base: d has the slope's sign; d + -0.5 is d - 0.5, and -0.0 + -0.5 truncates
 * to 0 as -0.0 + 0.5 does). Needs two pairs (settle_of's width > 0). */
struct lastseg { uint64_t base; int64_t off; double slope, half; };
static inline struct lastseg lastseg_of(const struct ncs_aligner *a) {
  const struct ncs_clockmap *m = &a->map;
  if (m->n < 2) return (struct lastseg){0, 0, 0, 0.5};
  double slope = m->slope[m->n - 2];
  return (struct lastseg){m->p[m->n - 2].monotonic_ns, off_of(&m->p[m->n - 2]) - a->origin, slope, slope < 0 ? -0.5 : 0.5};
}
static inline __attribute__((always_inline)) int64_t last_map(const struct lastseg *L, uint64_t mono) {
  double d = (double)(int64_t)(mono - L->base) * L->slope;
  return (int64_t)mono + L->off + (int64_t)(d + L->half);
}
/* A settled call as released: its four times mapped with the latest segment, its GPU time had. */
static inline __attribute__((always_inline)) struct ncs_aligned settled_at(const struct lastseg *L, const struct ncs_call *c,
                                                                          uint64_t gpu_start, uint64_t gpu_end) {
  return (struct ncs_aligned){c, last_map(L, c->t_enter), last_map(L, c->t_exit), last_map(L, gpu_start), last_map(L, gpu_end), 1};
}

/* The ring's place in locals: the release hooks (plug-ins) never add to the ring, so nothing is
 * read back after each call; head and n are stored before a hook runs. With release_run, the
 * released calls go in runs of up to NCS_ALIGN_RUN (their calls stay in the ring's slots, which
 * nothing overwrites before the next ncs_aligner_call). */
static void release_upto(struct ncs_aligner *a, uint64_t mono, int all) {
  struct ncs_pending_call_ *q = a->q;
  size_t head = a->head, n = a->n, mask = a->cap - 1;
  struct settle z = settle_of(a);
  struct lastseg L = lastseg_of(a);
  if (!a->release_run) { /* a call at a time: a settled one mapped as in runs */
    while (n) {
      struct ncs_pending_call_ *p = &q[head];
      int s = settled(z, p);
      if (!s && !all && (p->c.t_enter >= mono || gpu_time_may_come(a, p))) break;
      head = (head + 1) & mask;
      n--;
      a->head = head;
      a->n = n;
      if (!s) {
        release_one(a, p);
      } else if (a->release) {
        struct ncs_aligned x = settled_at(&L, &p->c, p->gs, p->ge);
        a->release(a->ctx, &x);
      }
    }
    return;
  }
  struct ncs_aligned run[NCS_ALIGN_RUN];
  size_t k = 0;
  while (n) {
    struct ncs_pending_call_ *p = &q[head];
    int s = settled(z, p); /* settled: released whatever else holds (gpu_time_may_come is 0 with a GPU time) */
    if (!s && !all && (p->c.t_enter >= mono || gpu_time_may_come(a, p))) break;
    head = (head + 1) & mask;
    n--;
    if (s) { /* its four times in the latest segment */
      run[k++] = settled_at(&L, &p->c, p->gs, p->ge);
    } else {
      align_one(a, p, &run[k++]);
    }
    if (k == NCS_ALIGN_RUN) {
      a->head = head;
      a->n = n;
      a->release_run(a->ctx, run, k);
      k = 0;
    }
  }
  a->head = head;
  a->n = n;
  if (k) a->release_run(a->ctx, run, k);
}

/* Releases one kernel with the pairs known now. */
static void release_kernel(struct ncs_aligner *a, const struct ncs_kernel *k) {
  uint64_t end = k->start + k->duration < k->start ? UINT64_MAX : k->start + k->duration;
  struct ncs_aligned_kernel x = {k, job_time(a, k->start), job_time(a, end)};
  if (x.end < x.start) x.end = x.start;
  a->release_kernel(a->ctx, &x);
}

static void release_kernels(struct ncs_aligner *a) {
  for (size_t i = 0; i < a->nk; i++) release_kernel(a, &a->kq[i]);
  a->nk = 0;
}

#define KHOLD_MAX 65536 /* kernels held between two pairs, at most */

void ncs_aligner_kernel(struct ncs_aligner *a, const struct ncs_kernel *k) {
  if (!a->release_kernel) return;
  if (a->nk == a->capk) {
    size_t nc = a->capk ? a->capk * 2 : 256;
    struct ncs_kernel *q = a->nk < KHOLD_MAX ? realloc(a->kq, nc * sizeof *q) : NULL;
    if (q) { a->kq = q; a->capk = nc; }
    else { /* too many (or no memory): release what is held with the pairs known so far */
      a->kernels_early += a->nk;
      release_kernels(a);
    }
  }
  if (a->nk < a->capk) { a->kq[a->nk++] = *k; return; }
  a->kernels_early++; /* nothing could be held (no memory) */
  release_kernel(a, k);
}

void ncs_aligner_clock(struct ncs_aligner *a, const struct ncs_clock *c) {
  ncs_clockmap_add(&a->map, c);
  a->seg.lo = 1; a->seg.hi = 0; /* the segments moved */
  if (a->nk) release_kernels(a); /* they ran before this pair was taken */
  /* calls before the previous pair are bracketed by pairs and had a whole flush interval
   * for their GPU times to arrive */
  uint64_t prev = a->hold_until;
  a->hold_until = c->monotonic_ns;
  if (prev) release_upto(a, prev, 0);
}

/* Most calls held: a trace without CLOCK records (or with flushes far apart) must not make
 * the aligner keep the whole file; past this the oldest call is released with the pairs
 * known so far (extrapolated). */
#define HOLD_MAX 65536

/* Room for one more held call: the oldest released past HOLD_MAX, the ring grown when full.
 * Returns -1 when nothing can be held (no memory for a first ring). */
__attribute__((noinline)) static int make_room(struct ncs_aligner *a) {
  if (a->n >= HOLD_MAX) {
    release_one(a, at(a, 0));
    a->head = (a->head + 1) & (a->cap - 1);
    a->n--;
    a->early++;
  }
  if (a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 1024;
    struct ncs_pending_call_ *q;
    if (!a->cap && a->spare && a->spare->q) { /* the previous file's ring, warm */
      q = a->spare->q;
      nc = a->spare->cap;
      a->spare->q = NULL;
      a->spare->cap = 0;
    } else {
      q = malloc(nc * sizeof *q);
    }
    if (!q && !a->cap) { a->oom = 1; return -1; }
    if (!q) { /* out of memory: release the oldest call early rather than lose it */
      a->oom = 1;
      release_one(a, at(a, 0));
      a->head = (a->head + 1) & (a->cap - 1);
      a->n--;
    } else {
      for (size_t i = 0; i < a->n; i++) q[i] = *at(a, i);
      free(a->q);
      a->q = q; a->cap = nc; a->head = 0;
    }
  }
  return 0;
}

/* A call of another thread than the latest: the latest thread's tcall parked in lastt, this
 * thread's checked against its own parked one; two threads on one lastt entry: disorder. */
__attribute__((noinline, cold)) static void thread_switch(struct ncs_aligner *a, const struct ncs_call *c) {
  if (a->have_prev) {
    unsigned t = a->prev_thread & 63;
    if (a->lastt[t].used && a->lastt[t].thread != a->prev_thread) { a->disorder = 1; return; }
    a->lastt[t].used = 1;
    a->lastt[t].thread = a->prev_thread;
    a->lastt[t].tcall = a->prev_tcall;
  }
  unsigned t = c->thread & 63;
  if (a->lastt[t].used && a->lastt[t].thread == c->thread && c->tcall <= a->lastt[t].tcall) a->disorder = 1;
  a->have_prev = 1;
  a->prev_thread = c->thread;
}

/* Holds a call; returns its slot, the newest held call (NULL: not held, out of memory). */
static inline __attribute__((always_inline)) struct ncs_pending_call_ *call_in(struct ncs_aligner *a, const struct ncs_call *c) {
  if (__builtin_expect(a->n >= HOLD_MAX || a->n == a->cap, 0) && make_room(a)) return NULL;
  struct ncs_pending_call_ *p = at(a, a->n);
  p->c = *c;
  p->has_gpu = 0;
  a->n++;
  if (a->disorder) return p;
  if (__builtin_expect(!a->have_prev || c->thread != a->prev_thread, 0)) thread_switch(a, c);
  else if (c->tcall <= a->prev_tcall) a->disorder = 1;
  a->prev_tcall = c->tcall;
  if (a->gslot) a->gslot[gslot_of(c->thread, c->tcall)] = (uint32_t)a->added;
  a->added++;
  return p;
}
void ncs_aligner_call(struct ncs_aligner *a, const struct ncs_call *c) { (void)call_in(a, c); }

/* The held call a CALL GPU time (thread, ref) belongs to, looked up by (thread, tcall): what
 * the scan below finds while every thread's tcalls increase, or NULL (then the scan decides). */
static struct ncs_pending_call_ *gpu_lookup(struct ncs_aligner *a, uint32_t thread, uint64_t ref, size_t lim) {
  if (!a->gslot) { /* the first GPU time: index the calls held now */
    if (a->spare && a->spare->gslot) { a->gslot = a->spare->gslot; a->spare->gslot = NULL; }
    else if (!(a->gslot = malloc(NCS_ALIGN_GSLOTS * sizeof *a->gslot))) { a->disorder = 1; return NULL; }
    memset(a->gslot, 0xff, NCS_ALIGN_GSLOTS * sizeof *a->gslot);
    for (size_t i = 0; i < a->n; i++) a->gslot[gslot_of(at(a, i)->c.thread, at(a, i)->c.tcall)] = (uint32_t)(a->added - a->n + i);
  }
  uint64_t back = (uint32_t)((uint32_t)a->added - 1 - a->gslot[gslot_of(thread, ref)]); /* 0: the newest */
  if (back >= lim) return NULL;
  struct ncs_pending_call_ *p = at(a, a->n - 1 - back);
  return p->c.thread == thread && p->c.tcall == ref ? p : NULL;
}

static void attach(struct ncs_pending_call_ *p, const struct ncs_gpu_time *g) {
  if (!p->has_gpu) { p->gs = g->gpu_start; p->ge = g->gpu_end; p->has_gpu = 1; }
}

/* A GPU time that is not the newest held call's: its call looked up, else the scan back over
 * the newest 4096 held calls (GPU times follow their call closely) decides. */
__attribute__((noinline)) static void gpu_match(struct ncs_aligner *a, const struct ncs_gpu_time *g) {
  int found = 0;
  size_t lim = a->n < 4096 ? a->n : 4096;
  if (g->kind == NCS_GPU_KIND_CALL && lim && !a->disorder) {
    struct ncs_pending_call_ *p = gpu_lookup(a, g->thread, g->ref, lim);
    if (p) { attach(p, g); return; }
  }
  for (size_t k = 0; k < lim; k++) {
    struct ncs_pending_call_ *p = at(a, a->n - 1 - k);
    if (p->c.thread != g->thread) continue;
    int match = g->kind == NCS_GPU_KIND_CALL ? p->c.tcall == g->ref : p->c.group == g->ref;
    if (match) {
      attach(p, g);
      found = 1;
      if (g->kind == NCS_GPU_KIND_CALL) break;
    } else if (g->kind == NCS_GPU_KIND_CALL && p->c.tcall < g->ref) {
      break;
    }
  }
  if (!found) a->gpu_unmatched++;
}

/* newest: the newest held call when the caller knows it (the call it held last), else NULL */
static inline __attribute__((always_inline)) void gpu_in(struct ncs_aligner *a, const struct ncs_gpu_time *g,
                                                          struct ncs_pending_call_ *newest) {
  note_gpu_seen(a, g->thread, g->ref);
  if (g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED)) return;
  if (g->kind == NCS_GPU_KIND_CALL && a->n) { /* the newest held call: the scan's first look */
    struct ncs_pending_call_ *p = newest ? newest : at(a, a->n - 1);
    if (p->c.thread == g->thread && p->c.tcall == g->ref) { attach(p, g); return; }
  }
  gpu_match(a, g);
}
void ncs_aligner_gpu(struct ncs_aligner *a, const struct ncs_gpu_time *g) { gpu_in(a, g, NULL); }

/* The ring's tail and the call tracking of call_in, in locals for a stretch with room for all
 * its calls (stores to the held calls' slots would otherwise make every field be read again
 * after each): loaded from the aligner, and stored back before anything else reads it. */
struct hold {
  struct ncs_pending_call_ *q;
  size_t mask, pos, n;        /* pos: the next slot (head + n, unmasked) */
  uint64_t added, prev_tcall;
  uint32_t *gslot;
  uint32_t prev_thread;
  int have_prev, disorder;
};
static inline __attribute__((always_inline)) void hold_load(const struct ncs_aligner *a, struct hold *h) {
  *h = (struct hold){a->q, a->cap - 1, a->head + a->n, a->n, a->added, a->prev_tcall, a->gslot, a->prev_thread,
                     a->have_prev, a->disorder};
}
static inline __attribute__((always_inline)) void hold_store(struct ncs_aligner *a, const struct hold *h) {
  a->n = h->n; a->added = h->added; a->prev_tcall = h->prev_tcall; a->prev_thread = h->prev_thread;
  a->have_prev = h->have_prev; a->disorder = h->disorder;
}
/* call_in with room, on h */
static inline __attribute__((always_inline)) struct ncs_pending_call_ *call_held(struct ncs_aligner *a, struct hold *h,
                                                                                 const struct ncs_call *c) {
  struct ncs_pending_call_ *p = &h->q[h->pos++ & h->mask];
  p->c = *c;
  p->has_gpu = 0;
  h->n++;
  if (h->disorder) return p;
  if (__builtin_expect(!h->have_prev || c->thread != h->prev_thread, 0)) {
    hold_store(a, h);
    thread_switch(a, c);
    hold_load(a, h);
  } else if (c->tcall <= h->prev_tcall) {
    h->disorder = 1;
  }
  h->prev_tcall = c->tcall;
  if (h->gslot) h->gslot[gslot_of(c->thread, c->tcall)] = (uint32_t)h->added;
  h->added++;
  return p;
}

/* A call whose own GPU time follows it in the stretch (the same thread and tcall, kind CALL,
 * neither failed nor captured): what gpu_in would attach to the newest held call. */
static inline __attribute__((always_inline)) int own_gpu_time(const struct ncs_call *c, const struct ncs_gpu_time *g) {
  return g->thread == c->thread && g->ref == c->tcall && g->kind == NCS_GPU_KIND_CALL &&
         !(g->flags & (NCS_GPU_F_FAILED | NCS_GPU_F_CAPTURED));
}

/* A stretch told its chunk's closing pair (io/trace.h): what release_upto would release at
 * that pair from the ring's head and from the stretch's start, released now, in order, in runs:
 * the held calls and the stretch's calls that the pair will find settled (align.h; a held one
 * settled now stays so: its times are set), each of the stretch's with its own GPU time right
 * after it, mapped as release_upto will map them (the segment from the latest pair to the
 * closing one, its slope computed as ncs_clockmap_add will). GPU times before the first of
 * them go as gpu_in takes them, and those among them too (nothing is held then: counted
 * unmatched). The calls released from the stretch are tracked as call_in tracks a call (thread,
 * tcall order), their GPU times noted as gpu_in notes them (a thread's run of them at once: the
 * highest tcall is what stays), in locals while the run lasts. From the first call that is not
 * settled (or not yet: its GPU time comes later) on, the records go the held way: *rest is what
 * is left of the stretch (nc + ng 0: all taken). Nothing is released ahead when the pair would
 * not be added to the map, or when the calls held until it could reach HOLD_MAX (then the
 * oldest would go early). */
struct ahead {                /* the tracking of call_in and the GPU times noted, in locals */
  uint32_t prev_thread, seen_thread;
  int have_prev, disorder, have_seen;
  uint64_t prev_tcall, seen_tcall;
};
static inline __attribute__((always_inline)) void ahead_store(struct ncs_aligner *a, struct ahead *h) {
  a->prev_thread = h->prev_thread; a->prev_tcall = h->prev_tcall; a->have_prev = h->have_prev; a->disorder = h->disorder;
  if (h->have_seen) note_gpu_seen(a, h->seen_thread, h->seen_tcall);
  h->have_seen = 0;
}
static inline __attribute__((always_inline)) void ahead_load(const struct ncs_aligner *a, struct ahead *h) {
  *h = (struct ahead){a->prev_thread, 0, a->have_prev, a->disorder, 0, a->prev_tcall, 0};
}
/* How many of the stretch's calls from c (o: their interleaving, lim calls at most) are each of
 * `thread`, its tcall above *tcall, in no group, with its own GPU time right after it and its
 * four times in z; *tcall becomes the last one's. A frame of its own: few values live, none
 * spilled. */
__attribute__((noinline)) static size_t settled_count(const struct ncs_call *c, const struct ncs_gpu_time *g,
                                                      const uint8_t *o, size_t lim, struct settle z, uint32_t thread,
                                                      uint64_t *tcall) {
  const uint8_t pair[2] = {0, 1}; /* a CALL, then a GPU_TIME (order's bytes are 0 or 1) */
  uint16_t call_gpu, at;
  memcpy(&call_gpu, pair, 2);
  uint64_t t = *tcall;
  size_t m = 0;
  for (; m < lim; m++, c++, g++) {
    memcpy(&at, o + 2 * m, 2);
    if (at != call_gpu || c->thread != thread || c->tcall <= t || c->group || !own_gpu_time(c, g)) break;
    uint64_t far = umax(umax(c->t_enter - z.from, c->t_exit - z.from), umax(g->gpu_start - z.from, g->gpu_end - z.from));
    if (far >= z.width) break;
    t = c->tcall;
  }
  *tcall = t;
  return m;
}

/* release_ahead's common case: the calls settled_count counts from c (`left` records of the
 * stretch left), mapped into run[0 .. room) in a loop of their own. Returns how many. */
static size_t ahead_run(const struct ncs_call *c, const struct ncs_gpu_time *g, const uint8_t *o, size_t left,
                        struct ncs_aligned *run, size_t room, struct settle z, const struct lastseg *Lp, uint32_t thread,
                        uint64_t *tcall) {
  size_t m = settled_count(c, g, o, left / 2 < room ? left / 2 : room, z, thread, tcall);
  const struct lastseg L = *Lp;
  for (size_t j = 0; j < m; j++) run[j] = settled_at(&L, &c[j], g[j].gpu_start, g[j].gpu_end);
  return m;
}

static void release_ahead(struct ncs_aligner *a, const struct ncs_stretch *s, struct ncs_stretch *rest) {
  const struct ncs_clockmap *m = &a->map;
  const struct ncs_clock *P = s->closing;
  const struct ncs_call *c = s->c;
  const struct ncs_gpu_time *g = s->g;
  const uint8_t *o = s->order;
  size_t n = s->nc + s->ng, i = 0, k = 0;
  if (!m->n || P->monotonic_ns <= m->p[m->n - 1].monotonic_ns || a->n + s->nc + s->after > HOLD_MAX) goto done;
  const struct ncs_clock *Lp = &m->p[m->n - 1];
  const struct settle z = {Lp->monotonic_ns + 1, P->monotonic_ns - Lp->monotonic_ns};
  const double slope = (double)(off_of(P) - off_of(Lp)) / (double)(P->monotonic_ns - Lp->monotonic_ns);
  const struct lastseg L = {Lp->monotonic_ns, off_of(Lp) - a->origin, slope, slope < 0 ? -0.5 : 0.5};
  struct ncs_aligned run[NCS_ALIGN_RUN];
  for (; i < n && o[i]; i++) gpu_in(a, g++, NULL); /* to the held calls */
  while (a->n) { /* the held calls go first */
    struct ncs_pending_call_ *p = at(a, 0);
    if (!settled(z, p)) goto out;
    run[k++] = settled_at(&L, &p->c, p->gs, p->ge);
    a->head = (a->head + 1) & (a->cap - 1);
    a->n--;
    if (k == NCS_ALIGN_RUN) {
      a->release_run(a->ctx, run, k);
      k = 0;
    }
  }
  struct ahead h;
  ahead_load(a, &h);
  while (i < n) {
    if (!h.disorder && h.have_prev && h.have_seen && h.seen_thread == h.prev_thread) { /* calls of the latest thread */
      uint64_t t = h.prev_tcall;
      size_t m = ahead_run(c, g, o + i, n - i, run + k, NCS_ALIGN_RUN - k, z, &L, h.prev_thread, &t);
      if (m) { /* what the steps below leave for them: the latest tcall, the highest noted */
        h.prev_tcall = t;
        if (t > h.seen_tcall) h.seen_tcall = t;
        c += m;
        g += m;
        i += 2 * m;
        k += m;
        if (k == NCS_ALIGN_RUN) {
          ahead_store(a, &h);
          a->release_run(a->ctx, run, k);
          k = 0;
        }
        continue;
      }
    }
    if (o[i]) { /* a GPU time not right after its call */
      ahead_store(a, &h);
      gpu_in(a, g++, NULL);
      ahead_load(a, &h);
      i++;
      continue;
    }
    if (i + 1 == n || !o[i + 1] || !own_gpu_time(c, g) || c->group) break;
    uint64_t far = umax(umax(c->t_enter - z.from, c->t_exit - z.from), umax(g->gpu_start - z.from, g->gpu_end - z.from));
    if (far >= z.width) break;
    if (!h.disorder) { /* call_in's tracking */
      if (__builtin_expect(!h.have_prev || c->thread != h.prev_thread, 0)) {
        ahead_store(a, &h);
        thread_switch(a, c);
        ahead_load(a, &h);
      } else if (c->tcall <= h.prev_tcall) {
        h.disorder = 1;
      }
      h.prev_tcall = c->tcall;
    }
    if (!h.have_seen || g->thread != h.seen_thread) { /* gpu_in's note */
      if (h.have_seen) note_gpu_seen(a, h.seen_thread, h.seen_tcall);
      h.have_seen = 1;
      h.seen_thread = g->thread;
      h.seen_tcall = g->ref;
    } else if (g->ref > h.seen_tcall) {
      h.seen_tcall = g->ref;
    }
    run[k++] = settled_at(&L, c, g->gpu_start, g->gpu_end);
    c++;
    g++;
    i += 2;
    if (k == NCS_ALIGN_RUN) {
      ahead_store(a, &h);
      a->release_run(a->ctx, run, k);
      k = 0;
    }
  }
  ahead_store(a, &h);
out:
  if (k) a->release_run(a->ctx, run, k);
done:
  *rest = (struct ncs_stretch){c, g, s->nc - (size_t)(c - s->c), s->ng - (size_t)(g - s->g), o + i, NULL, 0};
}

void ncs_aligner_stretch(struct ncs_aligner *a, const struct ncs_stretch *s) {
  struct ncs_stretch rest;
  if (s->closing && !a->nk && a->release_run) {
    release_ahead(a, s, &rest);
    if (!rest.nc && !rest.ng) return;
    s = &rest;
  }
  const struct ncs_call *c = s->c;
  const struct ncs_gpu_time *g = s->g;
  const uint8_t *o = s->order;
  size_t n = s->nc + s->ng;
  struct ncs_pending_call_ *newest = NULL; /* the call held last in this stretch (gpu_in's first look) */
  if (!(a->cap - a->n >= s->nc && a->n + s->nc <= HOLD_MAX)) { /* no room for all its calls: one at a time */
    for (size_t i = 0; i < n; i++) {
      if (o[i]) gpu_in(a, g++, newest);
      else newest = call_in(a, c++);
    }
    return;
  }
  struct hold h;
  hold_load(a, &h);
  for (size_t i = 0; i < n;) {
    if (o[i]) { /* a GPU time not right after its call */
      hold_store(a, &h);
      gpu_in(a, g++, newest);
      hold_load(a, &h);
      i++;
      continue;
    }
    struct ncs_pending_call_ *p = newest = call_held(a, &h, c);
    if (i + 1 < n && o[i + 1] && own_gpu_time(c, g)) {
      note_gpu_seen(a, g->thread, g->ref);
      p->gs = g->gpu_start; p->ge = g->gpu_end; p->has_gpu = 1;
      g++;
      i++;
    }
    c++;
    i++;
  }
  hold_store(a, &h);
}

void ncs_aligner_inflight(struct ncs_aligner *a, const struct ncs_inflight *x) {
  if (x->kind != NCS_INFLIGHT_GPU || !x->tcall) return;
  unsigned t = x->thread & 63;
  if (!a->gpu_seen[t].used) note_gpu_seen(a, x->thread, x->tcall - 1); /* from this call on: pending */
}

void ncs_aligner_flush(struct ncs_aligner *a) {
  release_upto(a, 0, 1);
  if (a->nk) release_kernels(a);
}

void ncs_aligner_free(struct ncs_aligner *a) {
  struct ncs_aligner_spare *sp = a->spare;
  if (sp && a->q && a->cap > sp->cap) {
    free(sp->q);
    sp->q = a->q;
    sp->cap = a->cap;
    a->q = NULL;
  }
  if (sp && a->gslot && !sp->gslot) {
    sp->gslot = a->gslot;
    a->gslot = NULL;
  }
  free(a->q);
  a->q = NULL;
  a->n = a->cap = a->head = 0;
  free(a->kq);
  a->kq = NULL;
  a->nk = a->capk = 0;
  free(a->gslot);
  a->gslot = NULL;
}

void ncs_aligner_spare_free(struct ncs_aligner_spare *s) {
  free(s->q);
  free(s->gslot);
  *s = (struct ncs_aligner_spare){NULL, 0, NULL};
}
