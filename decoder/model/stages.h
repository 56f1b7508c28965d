/* stages.h — what one analysis of a `report` run computes once and others read, handed over
 * through a table the report command owns (struct ncs_job's `stages`, analysis/analysis.h),
 * never through globals or thread-local hand-offs:
 *  - each file's step starts: the metrics analysis chooses the step boundary while it reads the
 *    file (docs/METRICS.md "Steps") and puts the entry time (trace clock, ns) of every counted
 *    boundary call, in order, as a compact log (4 bytes a step while steps are under 4.29 s
 *    apart and in order, 12 otherwise; chained blocks, no copy as it grows); gputime and whatif
 *    cut their per-step figures at them, copying them out only for a file with kernels;
 *  - each file's kernel-activity figures (model/kact.h): gputime puts them; metrics reads them
 *    for its ratio and verdicts;
 *  - each file's kernels (model/kstore.h), kept once for gputime and whatif: the first to ask
 *    for a file's store fills it as the file is read, gputime reads it when the file is done,
 *    whatif takes the array then (its file_done comes after gputime's); dropped with the file's
 *    starts when nobody took it;
 *  - each file's CUDA-graph replays (model/replay.h), solved: the doctor's facts inside report
 *    (analysis/verdicts.c) put the model they fed and solved, and say so (replay_on) when the run
 *    begins; metrics then reads it instead of feeding a model of its own (else metrics puts
 *    its own); sizes reads the replayed calls for its per-size rows.
 *
 * Contract: file f's starts and replays are put by their producer in its file_done of f and
 * read by the analyses whose file_done of f comes after it (file_done runs in registry order);
 * the report core drops them once f's last file_done returned, so only the files being read
 * hold them.
 * Figures are put in file_done and read once every file is read (finish, print_*). Slots of
 * different files may be used at once from different threads, one file's slot by one thread at
 * a time (the thread reading it). */
#ifndef NCS_STAGES_H
#define NCS_STAGES_H
#include <stddef.h>
#include <stdint.h>
#include "model/kact.h"
#include "model/kstore.h"

struct ncs_replay;
#define NCS_STARTS_BLOCK (16u << 10) /* words a block of starts */
struct ncs_starts_block { struct ncs_starts_block *next; uint32_t used; uint32_t w[NCS_STARTS_BLOCK]; };
struct ncs_step_starts {
  struct ncs_starts_block *head, *tail;
  uint32_t *at, *end;     /* the last block's free words */
  size_t n;               /* starts */
  uint64_t last;          /* the latest start */
};
/* Appends start t (s starts zeroed); 0, or -1 when out of memory (t is not kept). Inline: a
 * start after the last by under UINT32_MAX ns in room there is (one word, once a step); the rest
 * in ncs_starts_add_slow. */
int ncs_starts_add_slow(struct ncs_step_starts *s, uint64_t t);
static inline int ncs_starts_add(struct ncs_step_starts *s, uint64_t t) {
  uint64_t d = t - s->last;
  if (s->n && d < UINT32_MAX && s->at < s->end) { /* (a start before the last: d wraps, over the bound) */
    *s->at++ = (uint32_t)d;
    s->tail->used++;
    s->last = t;
    s->n++;
    return 0;
  }
  return ncs_starts_add_slow(s, t);
}
/* Writes the n starts to t[0..n), in order. */
void ncs_starts_copy(const struct ncs_step_starts *s, uint64_t *t);
void ncs_starts_free(struct ncs_step_starts *s); /* and zeroes it */
/* The starts one at a time, in order, without a copy: begin, then next until it returns 0
 * (each 1 writes the next start to *t). s must not change meanwhile. */
struct ncs_starts_cur { const struct ncs_starts_block *b; uint32_t i; uint64_t x; size_t k, n; };
void ncs_starts_begin(const struct ncs_step_starts *s, struct ncs_starts_cur *c);
int ncs_starts_next_slow(struct ncs_starts_cur *c, uint64_t *t);
static inline int ncs_starts_next(struct ncs_starts_cur *c, uint64_t *t) {
  const struct ncs_starts_block *b = c->b;
  if (b && c->i < b->used && c->k < c->n && b->w[c->i] != UINT32_MAX) { /* a difference in this block (inline: once a step) */
    c->x += b->w[c->i++];
    c->k++;
    *t = c->x;
    return 1;
  }
  return ncs_starts_next_slow(c, t);
}
struct ncs_stages {
  int n;                          /* files */
  struct ncs_step_starts *starts; /* [n] */
  struct ncs_replay **replay;     /* [n] solved replays, owned here; NULL until put */
  struct ncs_kact_fig *fig;       /* [n]; state -1 and have 0 until put */
  struct ncs_kstore *kern;        /* [n] each file's kernels (model/kstore.h) */
  unsigned char *kern_asked;      /* [n] 1 once an analysis asked for file's store */
  int fig_on;                     /* 1 when an analysis of the run puts figures (gputime) */
  int replay_on;                  /* 1 when verdicts puts the replays, before metrics' file_done */
};

/* 0, or -1 when out of memory (then nothing is held). */
int ncs_stages_init(struct ncs_stages *s, int nfiles);
void ncs_stages_free(struct ncs_stages *s);
/* Takes *t as file's step starts (t is zeroed: the table owns them now). */
void ncs_stages_put_starts(struct ncs_stages *s, int file, struct ncs_step_starts *t);
/* File's step starts: their count, *t pointing at them (ncs_starts_copy); 0 and *t NULL when
 * none were put. */
size_t ncs_stages_starts(const struct ncs_stages *s, int file, const struct ncs_step_starts **t);
/* Takes r (solved, or NULL) as file's graph replays; freed at once when s is NULL. */
void ncs_stages_put_replay(struct ncs_stages *s, int file, struct ncs_replay *r);
/* File's solved graph replays, NULL when none were put. */
const struct ncs_replay *ncs_stages_replay(const struct ncs_stages *s, int file);
/* Drops file's step starts, replays and kernels (the last reader is done with them). */
void ncs_stages_drop_file(struct ncs_stages *s, int file);
/* File's kernel store, shared by the analyses that read kernels; *fill is 1 for the first to ask
 * (it appends the file's kernels), 0 for the others (they read it). NULL when s is NULL. */
struct ncs_kstore *ncs_stages_kernels(struct ncs_stages *s, int file, int *fill);
/* File's kernel-activity figures, NULL when no analysis of the run puts them (s NULL too). */
const struct ncs_kact_fig *ncs_stages_fig(const struct ncs_stages *s, int file);
#endif
