/* ivlanes.h — how far a streaming union of intervals from several threads may be committed.
 *
 * Contract: a trace holds each thread's calls in order, but one thread's batch after another's
 * (a chunk holds a batch per thread, each up to a flush period long), so a union committed up
 * to the latest interval seen would clip the intervals of a thread whose batch is still to come.
 * The lanes keep, per thread (NCS_LANES at most; later threads share an untracked lane that
 * holds nothing back), the latest start of its intervals; ncs_lanes_cut() is the earliest of
 * those (a k-way merge's frontier): every interval still to come from a tracked thread starts at
 * or after it, so committing what ends by it is exact. What may still be clipped, and is counted
 * by the union (docs/METRICS.md "Communication time"): a thread's interval arriving after its
 * own later ones; the first intervals of a thread that appears after the first chunk; those of a
 * thread that made none in the last two chunks (it stops holding the cut back until its next,
 * so an idle thread does not hold the union's buffer open) or that was passed by a forced
 * commit (ncs_lanes_forced: the union's buffer was full). With `by_chunk` (the caller reports
 * chunk ends: ncs_lanes_chunk) nothing is committed before the first chunk ends, when every
 * thread of the first chunk has come, or before the caller says it holds too much to wait
 * for it (ncs_lanes_hold_end: a chunk of a busy thread is a million calls; the threads active
 * from the start all come in its first writer pass, a few thousand intervals in). Zero-initialised lanes are valid (by_chunk 0, no lane; thread 0 then uses
 * the untracked lane: a union of one stream keeps its own rule alone). The caller keeps the current lane's
 * latest start: ncs_lanes_switch() when an interval's thread is not ncs_lane_at(cur)->thread, then
 * raises that lane's last to the interval's start. The first NCS_LANES_IN lanes and the untracked
 * one live in the struct (a union per file or per rank stays small: most traces have one or two
 * calling threads); the rest are allocated when a thread needs one (none, out of memory: it
 * shares the untracked lane) and freed by ncs_lanes_free(). */
#ifndef NCS_IVLANES_H
#define NCS_IVLANES_H
#include <stdint.h>

#define NCS_LANES 64
#define NCS_LANES_IN 4 /* lanes held in the struct; the others in `more` */
/* a union that buffers this many intervals before the first chunk end stops waiting for it */
#define NCS_LANES_FIRST_HOLD (1u << 18)

struct ncs_lane {
  uint32_t thread;
  uint64_t last;   /* the latest start of its intervals */
  uint64_t seen;   /* 1 + the chunk ends seen before its latest interval known (0: retired) */
};
struct ncs_lanes {
  struct ncs_lane in[NCS_LANES_IN + 1]; /* lanes 0 .. NCS_LANES_IN - 1; [NCS_LANES_IN]: lane NCS_LANES, the untracked one */
  struct ncs_lane *more; /* lanes NCS_LANES_IN .. NCS_LANES - 1 (NULL until one is made) */
  uint32_t n;      /* lanes in use */
  uint32_t cur;    /* the latest interval's lane (0 with n == 0: the untracked lane's role) */
  uint64_t mark;   /* lane cur's last when it became current or its chunk was noted */
  uint64_t chunks; /* chunk ends reported */
  int by_chunk;
  int held_end;    /* ncs_lanes_hold_end() was called */
};

/* Lane i (0 .. n - 1, or NCS_LANES: the untracked one). */
static inline struct ncs_lane *ncs_lane_at(struct ncs_lanes *l, uint32_t i) {
  return i < NCS_LANES_IN ? &l->in[i] : i == NCS_LANES ? &l->in[NCS_LANES_IN] : &l->more[i - NCS_LANES_IN];
}
/* Frees what the lanes allocated; they stay valid: the threads past NCS_LANES_IN lose their
 * lanes (the current one, if among them, becomes the untracked one). */
void ncs_lanes_free(struct ncs_lanes *l);
/* Makes `thread`'s lane the current one (a new lane, or the untracked one when NCS_LANES are
 * in use). */
void ncs_lanes_switch(struct ncs_lanes *l, uint32_t thread);
/* The earliest latest start over the lanes that hold the cut: UINT64_MAX when none does; 0
 * before the first chunk end with by_chunk. */
uint64_t ncs_lanes_cut(const struct ncs_lanes *l);
/* The cut no longer waits for the first chunk end (the caller's buffer is full enough):
 * a thread first seen after this is clipped as one first seen after the first chunk. */
void ncs_lanes_hold_end(struct ncs_lanes *l);
/* A chunk ended. */
void ncs_lanes_chunk(struct ncs_lanes *l);
/* A forced commit reached fr: lanes whose latest start is before it stop holding the cut
 * until their next interval. */
void ncs_lanes_forced(struct ncs_lanes *l, uint64_t fr);
#endif
