/* straggler.c — collectives lined up across ranks (contract in straggler.h).
 *
 * Per communicator (comm_id): a ring of open slots indexed by seq - base. A slot keeps the
 * earliest and latest entry, the sum of entries, how many ranks entered, who was last, and up
 * to two call signatures (op, datatype, count, root) with their counts and the lowest rank of
 * each (the second, which only a mismatch has, in a table beside the ring): enough to close the collective without remembering each rank's time, and to name its
 * odd ranks whatever order the files are read in. Per rank of the communicator: last seq
 * seen, sum of entry times, times last, wait caused. Mean lateness of rank r is computed at
 * the end as sum(t_r) - sum(first entry) over the collectives r entered. */
#include "analysis/straggler.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "io/grow.h"
#include "ncclscope/ops.h"

/* a call signature, and the lowest rank that entered the collective with it (not compared) */
struct sig { uint32_t op, dtype; uint64_t count; int32_t root, rank; };
/* A running sum of integers that has, bit for bit, the value the long double running sum of
 * them has: an integer while every partial sum fits in 63 bits (a long double's 64-bit mantissa
 * holds those exactly, so its sums are exact too), that long double from the first partial sum
 * that does not. The integer add is cheaper than an 80-bit one per arrival. */
struct lsum { int64_t i; long double l; int big; };
static void lsum_add(struct lsum *s, int64_t v) {
  int64_t r;
  if (!s->big && !__builtin_add_overflow(s->i, v, &r)) { s->i = r; return; }
  if (!s->big) { s->l = (long double)s->i; s->big = 1; }
  s->l += (long double)v;
}
static void lsum_add_u(struct lsum *s, uint64_t v) {
  if (v <= INT64_MAX) { lsum_add(s, (int64_t)v); return; }
  if (!s->big) { s->l = (long double)s->i; s->big = 1; }
  s->l += (long double)v;
}
static long double lsum_get(const struct lsum *s) { return s->big ? s->l : (long double)s->i; }
/* An open collective: one cache line (64 B). Every rank's arrival reads and writes its slot,
 * and at 1,024 ranks x 100k collectives read whole file after whole file the window holds
 * every collective of the job (8 MiB at 64 B, 12 MiB at 96): a second signature, which only a
 * mismatch has, lives apart (struct odd) so that the line holds the rest. */
struct slot {
  int64_t tmin, tmax;
  uint64_t tsum;            /* sum of entry times, modulo 2^64: n*tmax - tsum is exact */
  uint32_t n, na;
  int32_t last_rank;
  uint32_t bx;              /* 0: one signature so far; else 1 + its entry in comm.odd */
  struct sig a;
};
_Static_assert(sizeof(struct slot) == 64, "a slot is one cache line");
/* a slot's second signature (the first that differed from a) and its count (a third one adds
 * nothing: the mismatch is noted already); entries of closed slots are reused (comm.odd_free) */
struct odd { struct sig b; uint32_t nb, next_free; };

#define MAX_LIST 32
struct mismatch { uint64_t comm_id, seq; int rank; struct sig got, want; uint32_t nodd; };

#define MAX_HOSTS 256      /* hosts the clock check follows */
#define SAMPLE_EVERY 64
#define MAX_SAMPLES 1024
struct sample { int n; double sum; double hsum[MAX_HOSTS]; int hcnt[MAX_HOSTS]; };

struct comm {
  struct sample **samples;  /* [MAX_SAMPLES], allocated on first use */
  uint64_t comm_id;
  int nranks;
  pthread_mutex_t mu;
  int *file;                /* [nranks] file of each rank, -1 none */
  int *dev;                 /* [nranks] CUDA device of each rank (COMM record) */
  int nreg, nfiles_reg;     /* ranks registered, distinct files they live in */
  int max_held;             /* most of its ranks one file holds (a rank per thread: > 1) */
  uint64_t *last_seq;       /* [nranks] */
  struct lsum *sum_t;       /* [nranks] sum of entry times (ns) */
  uint64_t *arrivals;       /* [nranks] */
  uint64_t *last_count;     /* [nranks] */
  struct lsum *wait;        /* [nranks] ns */
  struct lsum sum_min;      /* sum of first entries over complete collectives */
  struct slot *ring;
  size_t cap, head, open;   /* ring capacity (a power of two), index of seq `base`, open slots */
  struct odd *odd;          /* second signatures of open slots (slot.bx) */
  size_t nodd, capodd;
  uint32_t odd_free;        /* 1 + first free entry of odd, 0 none */
  /* a communicator of one rank: its collectives close as they open, so its window is one bit
   * per seq (entered), bits[bhead] that of seq `base`; bcap bits, a power of two */
  uint64_t *bits;
  size_t bcap, bhead;
  uint64_t base;            /* seq of ring[head] */
  uint64_t complete, stray;
  uint64_t evicted;         /* open collectives pushed out of a full window */
  /* open collectives every rank had passed (pass_behind), out of the window: they count at
   * finish as the open slots left in it do */
  uint64_t gone_n, gone_first_seq;
  uint64_t pass_at;         /* seq from which the window next looks for passed collectives */
  uint64_t max_back;        /* most a trace communicator's seq went back (threads' chunks) */
  uint32_t gone_first_entered;
  struct lsum gone_min;     /* sum of their first entries */
  uint64_t arrivals_all;    /* every arrival, lined up or not */
  int partial;              /* set by finish: some rank has no trace, nothing lines up */
  int dup_rank;             /* lowest rank two files claim, -1 none: nothing lines up either */
  /* its complete collectives' skews, added into the engine's totals by finish (in comm_id
   * order) unless nothing lines up on it */
  uint64_t skew_n, skew_max_seq;
  struct lsum skew_sum;
  int64_t skew_max;
  uint64_t nmm;             /* mismatches noted on it */
  struct comm *next;
};

struct file {
  char *host;
  int host_idx;             /* index in the engine's host list, -1 none */
  uint32_t pid;
  int truncated;
  /* trace comm index -> communicator, rank, highest seq fed */
  struct lc { struct comm *c; int rank; uint64_t seq; } *local;
  size_t nlocal;
};

struct ncs_strag {
  int nfiles;
  struct file *files;
  pthread_mutex_t mu;       /* the communicator list, the mismatch list and the totals */
  struct comm *comms;
  struct mismatch mm[MAX_LIST];
  uint64_t nmm, incomplete, oom, evicted, untraced_arrivals;
  int npartial, ndup;
  char *hosts[MAX_HOSTS];   /* distinct host names, for the clock check */
  int nhosts;
  struct ncs_strag_host_offset offsets[MAX_HOSTS];
  int noffsets;
  int nsamples_all;
  uint64_t skew_n;
  long double skew_sum;
  int64_t skew_max;
  uint64_t skew_max_comm, skew_max_seq;
  _Atomic size_t peak_open;  /* most open at once, over every communicator (peak_raise) */
  struct ncs_strag_rank *res;
  int nres;
  /* the hang point per communicator, filled by finish */
  struct missing { uint64_t comm_id, seq; uint32_t entered; int nranks; int ranks[16]; int nmissing; } miss[MAX_LIST];
  int nmiss;
  int finished;             /* ncs_strag_finish ran: a second call does nothing */
  struct ncs_strag_result pub; /* publish(): the result, as data */
  struct ncs_strag_skipped *skipped; /* its communicators not lined up */
};

struct ncs_strag *ncs_strag_new(int nfiles) {
  struct ncs_strag *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->nfiles = nfiles;
  s->files = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *s->files);
  if (!s->files) { free(s); return NULL; }
  for (int i = 0; i < nfiles; i++) s->files[i].host_idx = -1;
  pthread_mutex_init(&s->mu, NULL);
  return s;
}

static void comm_free(struct comm *c) {
  pthread_mutex_destroy(&c->mu);
  if (c->samples) for (int i = 0; i < MAX_SAMPLES; i++) free(c->samples[i]);
  free(c->samples);
  free(c->file); free(c->dev); free(c->last_seq); free(c->sum_t); free(c->arrivals);
  free(c->last_count); free(c->wait); free(c->ring); free(c->odd); free(c->bits); free(c);
}

void ncs_strag_free(struct ncs_strag *s) {
  if (!s) return;
  for (struct comm *c = s->comms, *n; c; c = n) { n = c->next; comm_free(c); }
  for (int i = 0; i < s->nfiles; i++) { free(s->files[i].host); free(s->files[i].local); }
  free(s->files);
  free(s->res);
  free(s->skipped);
  for (int i = 0; i < s->nhosts; i++) free(s->hosts[i]);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void ncs_strag_file_info(struct ncs_strag *s, int file, const char *host, uint32_t pid) {
  if (!s || file < 0 || file >= s->nfiles) return;
  free(s->files[file].host);
  s->files[file].host = strdup(host ? host : "");
  s->files[file].pid = pid;
  pthread_mutex_lock(&s->mu);
  int h = 0;
  while (h < s->nhosts && strcmp(s->hosts[h], host ? host : "")) h++;
  if (h == s->nhosts && h < MAX_HOSTS && (s->hosts[h] = strdup(host ? host : ""))) s->nhosts++;
  s->files[file].host_idx = h < s->nhosts ? h : -1;
  pthread_mutex_unlock(&s->mu);
}

static struct comm *comm_get(struct ncs_strag *s, uint64_t id, int nranks) {
  pthread_mutex_lock(&s->mu);
  struct comm *c = s->comms;
  while (c && c->comm_id != id) c = c->next;
  if (!c && nranks > 0 && nranks <= (1 << 24)) {
    c = calloc(1, sizeof *c);
    size_t n = (size_t)nranks;
    if (c) {
      c->file = malloc(n * sizeof *c->file);
      c->dev = malloc(n * sizeof *c->dev);
      c->last_seq = calloc(n, sizeof *c->last_seq);
      c->sum_t = calloc(n, sizeof *c->sum_t);
      c->arrivals = calloc(n, sizeof *c->arrivals);
      c->last_count = calloc(n, sizeof *c->last_count);
      c->wait = calloc(n, sizeof *c->wait);
    }
    if (!c || !c->file || !c->dev || !c->last_seq || !c->sum_t || !c->arrivals || !c->last_count || !c->wait) {
      if (c) { free(c->file); free(c->dev); free(c->last_seq); free(c->sum_t); free(c->arrivals); free(c->last_count); free(c->wait); free(c); }
      c = NULL;
      s->oom++;
    } else {
      for (size_t i = 0; i < n; i++) { c->file[i] = -1; c->dev[i] = -1; }
      c->dup_rank = -1;
      c->comm_id = id;
      c->nranks = nranks;
      c->base = 1;
      pthread_mutex_init(&c->mu, NULL);
      c->next = s->comms;
      s->comms = c;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return c;
}

void ncs_strag_comm(struct ncs_strag *s, int file, const struct ncs_comm *cm) {
  if (!s || file < 0 || file >= s->nfiles || !ncs_rc_ok(cm->rc) || cm->nranks < 1) return;
  if (cm->rank < 0 || cm->rank >= cm->nranks) return;
  struct comm *c = comm_get(s, cm->comm_id, cm->nranks);
  if (!c || c->nranks != cm->nranks) return;
  struct file *f = &s->files[file];
  int held = 1; /* ranks of c this file holds with this one (a file may hold several: threads) */
  for (size_t i = 0; i < f->nlocal; i++) held += f->local[i].c == c && i != cm->comm;
  int again = cm->comm < f->nlocal && f->local[cm->comm].c == c; /* a second record of it */
  int file_new = held == 1 && !again;
  if (cm->comm >= f->nlocal) {
    size_t n = cm->comm + 8;
    struct lc *l = realloc(f->local, n * sizeof *l);
    if (!l) { s->oom++; return; }
    for (size_t i = f->nlocal; i < n; i++) { l[i].c = NULL; l[i].seq = 0; }
    f->local = l; f->nlocal = n;
  }
  f->local[cm->comm].c = c;
  f->local[cm->comm].rank = cm->rank;
  pthread_mutex_lock(&c->mu);
  if (c->file[cm->rank] < 0) c->nreg++;
  else if (c->file[cm->rank] != file && (c->dup_rank < 0 || cm->rank < c->dup_rank))
    c->dup_rank = cm->rank; /* a second file claims the rank (every claimant sees one before it) */
  c->nfiles_reg += file_new;
  if (held > c->max_held) c->max_held = held;
  c->file[cm->rank] = file;
  c->dev[cm->rank] = cm->device;
  pthread_mutex_unlock(&c->mu);
}

/* A communicator that may not be fully traced: even if every file not yet seen on it held as
 * many of its ranks as the most one file holds so far, some would be missing (one file of a
 * multi-process job given alone). Its window is kept small until its ranks show up. Caller
 * holds c->mu. */
static int suspect(const struct ncs_strag *s, const struct comm *c) {
  return c->nreg + (int64_t)(s->nfiles - c->nfiles_reg) * (c->max_held > 0 ? c->max_held : 1) < c->nranks;
}

static int sig_eq(const struct sig *a, const struct sig *b) {
  return a->op == b->op && a->dtype == b->dtype && a->count == b->count && a->root == b->root;
}

/* Slot sl's second signature leaves with it (closed, given up, evicted): its entry is free. */
static void odd_release(struct comm *c, struct slot *sl) {
  if (!sl->bx) return;
  c->odd[sl->bx - 1].next_free = c->odd_free;
  c->odd_free = sl->bx;
  sl->bx = 0;
}

/* A mismatch at slot sl (it has a second signature: sl->bx). */
static void note_mismatch(struct ncs_strag *s, struct comm *c, uint64_t seq, const struct slot *sl) {
  const struct odd *o = &c->odd[sl->bx - 1];
  /* the odd ones are the minority signature; of two as many, the one whose lowest rank is
   * higher: whichever entered first (the files are read in any order) */
  int odd_is_b = o->nb < sl->na || (o->nb == sl->na && o->b.rank > sl->a.rank);
  struct mismatch m = {.comm_id = c->comm_id, .seq = seq, .rank = odd_is_b ? o->b.rank : sl->a.rank,
                       .got = odd_is_b ? o->b : sl->a, .want = odd_is_b ? sl->a : o->b,
                       .nodd = odd_is_b ? o->nb : sl->na};
  c->nmm++;
  /* the list keeps the MAX_LIST first by (seq, comm_id), whatever order they close in */
  pthread_mutex_lock(&s->mu);
  uint64_t n = s->nmm < MAX_LIST ? s->nmm : MAX_LIST, i = n;
  while (i > 0 && (s->mm[i - 1].seq > m.seq || (s->mm[i - 1].seq == m.seq && s->mm[i - 1].comm_id > m.comm_id))) i--;
  if (i < MAX_LIST) {
    memmove(&s->mm[i + 1], &s->mm[i], (size_t)(n - i - (n == MAX_LIST)) * sizeof m);
    s->mm[i] = m;
  }
  s->nmm++;
  pthread_mutex_unlock(&s->mu);
}

/* Closes the slot of `seq`, complete (all ranks entered). Caller holds c->mu. */
static void close_slot(struct ncs_strag *s, struct comm *c, uint64_t seq, struct slot *sl) {
  int n = c->nranks;
  int64_t skew = sl->tmax - sl->tmin;
  if (sl->last_rank >= 0) {
    c->last_count[sl->last_rank]++;
    /* the wait the last rank caused, sum of (tmax - t_i): exact in modular arithmetic, no
     * signed overflow whatever times a (hostile) trace holds */
    lsum_add_u(&c->wait[sl->last_rank], (uint64_t)n * (uint64_t)sl->tmax - sl->tsum);
  }
  lsum_add(&c->sum_min, sl->tmin);
  c->complete++;
  if (sl->bx) { note_mismatch(s, c, seq, sl); odd_release(c, sl); }
  c->skew_n++;
  lsum_add(&c->skew_sum, skew);
  if (c->skew_n == 1 || skew > c->skew_max || (skew == c->skew_max && seq < c->skew_max_seq)) {
    /* equal skews: the lowest seq, whatever order the collectives close in */
    c->skew_max = skew; c->skew_max_seq = seq;
  }
}

/* Most open collectives kept per communicator (64 MiB): beyond it the oldest are given up.
 * While a communicator is suspect (some of its ranks may have no trace) at most SUSPECT_MAX
 * (400 KB): a communicator most of whose ranks were not given fills it and gives up the oldest,
 * counted as untraced, not as lost. */
#define WINDOW_MAX (1u << 20)
#define SUSPECT_MAX 4096u

/* How far (in sequence numbers) every rank of a communicator must be past an open collective
 * before it leaves the window, at least: a rank's calls on a communicator arrive in sequence
 * order but for chunks of different threads of one process (a communicator used from several
 * threads), which a file may hold out of order; twice the most any went back, when more. */
#define PASSED_LAG (1u << 16)

/* The open collective `seq` (slot sl) leaves the window for good: counted as finish counts the
 * open slots it finds (every rank has passed it: all of them count its first entry). Caller
 * holds c->mu. */
static void give_up_passed(struct ncs_strag *s, struct comm *c, uint64_t seq, struct slot *sl) {
  if (!c->gone_n) { c->gone_first_seq = seq; c->gone_first_entered = sl->n; }
  c->gone_n++;
  lsum_add(&c->gone_min, sl->tmin);
  if (sl->bx) { note_mismatch(s, c, seq, sl); odd_release(c, sl); }
  c->open--;
}

/* Moves the window past the collectives every rank has passed by more than PASSED_LAG: one a
 * rank's record of which was dropped (the shim's DROP records) is never completed, and would
 * otherwise hold the window open until WINDOW_MAX. Results are those of keeping them to the
 * end unless a rank's arrival at one comes later still (then it is not lined up). Caller holds c->mu; O(nranks), called only when the window is full. */
static void pass_behind(struct ncs_strag *s, struct comm *c) {
  uint64_t lo = UINT64_MAX;
  for (int r = 0; r < c->nranks && lo; r++) if (c->last_seq[r] < lo) lo = c->last_seq[r];
  uint64_t lag = c->max_back > PASSED_LAG / 2 ? 2 * c->max_back : PASSED_LAG;
  if (lo <= lag || !c->cap) return;
  uint64_t upto = lo - lag; /* collectives below it are passed */
  if (upto <= c->base) return;
  uint64_t k = 0, n = upto - c->base;
  for (; k < n && k < c->cap; k++) {
    struct slot *sl = &c->ring[c->head];
    if (sl->n && sl->n != (uint32_t)-1) give_up_passed(s, c, c->base + k, sl);
    sl->n = 0; /* the rest is cleared when it opens again */
    c->head = (c->head + 1) & (c->cap - 1);
  }
  c->base = upto; /* past the ring's slots nothing was open */
}

static int ring_fit(struct ncs_strag *s, struct comm *c, uint64_t seq) {
  uint64_t need = seq - c->base + 1;
  if (need <= c->cap) return 0;
  if (need > (1u << 26)) return -1; /* a bogus sequence number; do not allocate for it */
  /* room from collectives every rank has passed, looked for at most once per cap/4 sequence
   * numbers (it costs O(nranks)); in between the ring grows */
  if (seq >= c->pass_at) {
    pass_behind(s, c);
    c->pass_at = seq + c->cap / 4;
    if (seq < c->base) return -1; /* behind the passed ones (a rank claimed twice in a file) */
    need = seq - c->base + 1;
    if (need <= c->cap) return 0;
  }
  uint64_t limit = suspect(s, c) ? SUSPECT_MAX : WINDOW_MAX;
  /* give up the oldest `drop` collectives: memory stays bounded (past the ring's slots, and
   * with no ring yet, only base moves) */
  uint64_t drop = need > limit ? need - limit : 0, k = 0;
  for (; k < drop && k < c->cap; k++) {
    struct slot *sl = &c->ring[c->head];
    if (sl->n && sl->n != (uint32_t)-1) { c->evicted++; c->open--; }
    odd_release(c, sl);
    memset(sl, 0, sizeof *sl);
    c->head = (c->head + 1) & (c->cap - 1);
  }
  if (c->cap) c->head = (c->head + (drop - k)) & (c->cap - 1);
  c->base += drop;
  need -= drop;
  if (need <= c->cap) return 0;
  size_t nc = c->cap ? c->cap : 64;
  while (nc < need) nc *= 2;
  struct slot *r = aligned_alloc(64, nc * sizeof *r); /* a slot per cache line */
  if (r) memset(r, 0, nc * sizeof *r);
  if (!r) { pthread_mutex_lock(&s->mu); s->oom++; pthread_mutex_unlock(&s->mu); return -1; }
  for (size_t i = 0; i < c->cap; i++) r[i] = c->ring[(c->head + i) & (c->cap - 1)];
  free(c->ring);
  c->ring = r; c->cap = nc; c->head = 0;
  return 0;
}

/* One arrival into communicator c (caller holds c->mu). */
/* Samples kept in all (3 KiB each): bounds the clock check's memory whatever the communicators. */
#define MAX_SAMPLES_ALL 4096

static void sample_gpu_end(struct ncs_strag *s, struct comm *c, int hidx, const struct ncs_strag_arrival *x) {
  if (!x->has_gpu || hidx < 0 || x->seq % SAMPLE_EVERY || x->seq / SAMPLE_EVERY >= MAX_SAMPLES) return;
  if (!c->samples && !(c->samples = calloc(MAX_SAMPLES, sizeof *c->samples))) return;
  struct sample **sp = &c->samples[x->seq / SAMPLE_EVERY];
  if (!*sp) {
    if (__atomic_fetch_add(&s->nsamples_all, 1, __ATOMIC_RELAXED) >= MAX_SAMPLES_ALL) return;
    if (!(*sp = calloc(1, sizeof **sp))) return;
  }
  double t = (double)x->gpu_end;
  (*sp)->n++;
  (*sp)->sum += t;
  (*sp)->hsum[hidx] += t;
  (*sp)->hcnt[hidx]++;
}

/* peak_open raised to v: a max over every communicator, kept by threads that hold different
 * communicators' locks (a plain compare-and-store was a data race TSan reported, and could lose
 * the larger of two values written at once). Relaxed: a statistic, no order with anything. */
static inline void peak_raise(struct ncs_strag *s, size_t v) {
  size_t p = atomic_load_explicit(&s->peak_open, memory_order_relaxed);
  while (v > p && !atomic_compare_exchange_weak_explicit(&s->peak_open, &p, v, memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* An arrival whose signature differs from slot sl's first: its second signature (counted, and
 * the lowest rank kept); a third changes nothing. Caller holds c->mu. */
static void second_sig(struct ncs_strag *s, struct comm *c, struct slot *sl, const struct sig *g) {
  if (sl->bx) {
    struct odd *o = &c->odd[sl->bx - 1];
    if (sig_eq(g, &o->b)) { o->nb++; if (g->rank < o->b.rank) o->b.rank = g->rank; }
    return;
  }
  uint32_t i = c->odd_free;
  if (i) c->odd_free = c->odd[i - 1].next_free;
  else if (c->nodd < UINT32_MAX - 1 && ncs_grow((void **)&c->odd, &c->capodd, c->nodd + 1, sizeof *c->odd) == 0) i = (uint32_t)++c->nodd;
  else { pthread_mutex_lock(&s->mu); s->oom++; pthread_mutex_unlock(&s->mu); return; } /* no room: not noted, said as a failed allocation */
  c->odd[i - 1] = (struct odd){.b = *g, .nb = 1};
  sl->bx = i;
}

static void arrive_locked(struct ncs_strag *s, struct comm *c, int r, int hidx, const struct ncs_strag_arrival *x) {
  sample_gpu_end(s, c, hidx, x);
  c->arrivals_all++;
  struct slot *sl;
  if (x->seq < c->base || ring_fit(s, c, x->seq) ||
      (sl = &c->ring[(c->head + (x->seq - c->base)) & (c->cap - 1)])->n == (uint32_t)-1) {
    c->stray++;
    return;
  }
  struct sig g = {x->op, x->datatype, x->count, x->root, r};
  int64_t t = x->t;
  if (!sl->n) {
    memset(sl, 0, sizeof *sl);
    sl->tmin = sl->tmax = t; sl->last_rank = r; sl->a = g; sl->na = 1;
    peak_raise(s, ++c->open);
  } else {
    if (t < sl->tmin) sl->tmin = t;
    /* equal entries: the higher rank counts as last, whatever order the files are read in */
    if (t > sl->tmax || (t == sl->tmax && r > sl->last_rank)) { sl->tmax = t; sl->last_rank = r; }
    if (sig_eq(&g, &sl->a)) { sl->na++; if (r < sl->a.rank) sl->a.rank = r; }
    else second_sig(s, c, sl, &g);
  }
  sl->n++;
  sl->tsum += (uint64_t)t;
  lsum_add(&c->sum_t[r], t);
  c->arrivals[r]++;
  if (x->seq > c->last_seq[r]) c->last_seq[r] = x->seq;
  if ((int)sl->n == c->nranks) {
    close_slot(s, c, x->seq, sl);
    sl->n = (uint32_t)-1; /* closed */
    c->open--;
    while (c->cap && c->ring[c->head].n == (uint32_t)-1) {
      c->ring[c->head].n = 0; /* empty: the rest is cleared when it opens again */
      c->head = (c->head + 1) & (c->cap - 1);
      c->base++;
    }
  }
}

/* The window of a one-rank communicator (bits): as ring_fit, one bit a collective. Its open
 * collectives close at once, so none is ever given up open. */
#define BIT(c, i) ((c)->bits[(i) / 64] >> ((i) % 64) & 1)
static int bits_fit(struct ncs_strag *s, struct comm *c, uint64_t seq) {
  uint64_t need = seq - c->base + 1;
  if (need <= c->bcap) return 0;
  if (need > (1u << 26)) return -1;
  uint64_t limit = suspect(s, c) ? SUSPECT_MAX : WINDOW_MAX;
  uint64_t drop = need > limit ? need - limit : 0, k = 0;
  for (; k < drop && k < c->bcap; k++) {
    c->bits[c->bhead / 64] &= ~(1ull << (c->bhead % 64));
    c->bhead = (c->bhead + 1) & (c->bcap - 1);
  }
  if (c->bcap) c->bhead = (c->bhead + (drop - k)) & (c->bcap - 1);
  c->base += drop;
  need -= drop;
  if (need <= c->bcap) return 0;
  size_t nc = c->bcap ? c->bcap : 4096;
  while (nc < need) nc *= 2;
  uint64_t *b = calloc(nc / 64, sizeof *b);
  if (!b) { pthread_mutex_lock(&s->mu); s->oom++; pthread_mutex_unlock(&s->mu); return -1; }
  for (size_t i = 0; i < c->bcap; i++) {
    size_t j = (c->bhead + i) & (c->bcap - 1);
    b[i / 64] |= (uint64_t)BIT(c, j) << (i % 64);
  }
  free(c->bits);
  c->bits = b; c->bcap = nc; c->bhead = 0;
  return 0;
}

/* One arrival into a one-rank communicator (caller holds c->mu): arrive_locked's and close_slot's
 * figures for a collective complete as it opens, with what one rank makes of them written out:
 * its skew and the wait it caused are 0 (adding 0 to a sum changes nothing), no mismatch (one
 * signature), its entry is the first entry (sum_min). No GPU-end sample: the clock check reads
 * only samples of several hosts, and one would take a place of the budget (MAX_SAMPLES_ALL)
 * from those. */
static void arrive_one(struct ncs_strag *s, struct comm *c, int r, const struct ncs_strag_arrival *x) {
  c->arrivals_all++;
  if (x->seq < c->base || bits_fit(s, c, x->seq)) { c->stray++; return; }
  size_t i = (c->bhead + (x->seq - c->base)) & (c->bcap - 1);
  if (BIT(c, i)) { c->stray++; return; } /* closed already */
  c->bits[i / 64] |= 1ull << (i % 64);
  peak_raise(s, c->open + 1); /* open for an instant */
  lsum_add(&c->sum_t[r], x->t);
  c->arrivals[r]++;
  if (x->seq > c->last_seq[r]) c->last_seq[r] = x->seq;
  c->last_count[r]++;
  lsum_add(&c->sum_min, x->t);
  c->complete++;
  if (++c->skew_n == 1 || x->seq < c->skew_max_seq) { c->skew_max = 0; c->skew_max_seq = x->seq; } /* equal skews: the lowest seq */
  while (BIT(c, c->bhead)) {
    c->bits[c->bhead / 64] &= ~(1ull << (c->bhead % 64));
    c->bhead = (c->bhead + 1) & (c->bcap - 1);
    c->base++;
  }
}

/* What arrive_one does with k arrivals on one-rank communicator c that continue its window from
 * its start (seq = base .. base + k - 1, their bits clear: each would open at the window's head
 * and close at once), folded: no bit set and cleared. Their entry times x[j].t (x NULL: all 0,
 * adding nothing) are summed apart and added once where that is the running sum's own value
 * (tsum exact: no time negative, no overflow; lsum kept as an integer, none negative, no
 * overflow); else one at a time. Caller holds c->mu. */
static void one_run_fold(struct ncs_strag *s, struct comm *c, int r, size_t k, int64_t tsum, int exact,
                         const struct ncs_strag_arrival *x) {
  uint64_t base = c->base;
  c->arrivals_all += k;
  peak_raise(s, c->open + 1); /* open for an instant */
  int64_t v;
  if (!x) {
  } else if (exact && !c->sum_t[r].big && c->sum_t[r].i >= 0 && !c->sum_min.big && c->sum_min.i >= 0 &&
             !__builtin_add_overflow(c->sum_t[r].i, tsum, &v) && !__builtin_add_overflow(c->sum_min.i, tsum, &v)) {
    c->sum_t[r].i += tsum; /* every partial sum lies between the two ends: none overflowed */
    c->sum_min.i += tsum;
  } else {
    for (size_t j = 0; j < k; j++) { lsum_add(&c->sum_t[r], x[j].t); lsum_add(&c->sum_min, x[j].t); }
  }
  c->arrivals[r] += k;
  if (base + k - 1 > c->last_seq[r]) c->last_seq[r] = base + k - 1;
  c->last_count[r] += k;
  c->complete += k;
  /* the skew's seq: only the first can set it (the others' seqs are higher) */
  if (c->skew_n == 0 || base < c->skew_max_seq) { c->skew_max = 0; c->skew_max_seq = base; }
  c->skew_n += k;
  c->base = base + k;
  c->bhead = (c->bhead + k) & (c->bcap - 1);
  while (BIT(c, c->bhead)) { /* later collectives closed already (arrive_one's walk) */
    c->bits[c->bhead / 64] &= ~(1ull << (c->bhead % 64));
    c->bhead = (c->bhead + 1) & (c->bcap - 1);
    c->base++;
  }
}
/* arrive_one for a run of arrivals x[0 .. n) on one-rank communicator c (local index comm):
 * those that continue its window from its start, folded (one_run_fold). Returns how many it
 * took (0: the first is not such an arrival). Caller holds c->mu. */
static size_t arrive_one_run(struct ncs_strag *s, struct comm *c, int r, const struct ncs_strag_arrival *x, size_t n,
                             uint32_t comm) {
  uint64_t base = c->base;
  size_t k = 0, bh = c->bhead, cap = c->bcap;
  int64_t tsum = 0;
  int exact = 1; /* tsum is every partial sum's value (no time negative, no overflow) */
  for (; k < n && k < cap; k++) {
    const struct ncs_strag_arrival *a = &x[k];
    if (a->comm != comm || a->seq != base + k || !a->seq || ncs_op_kind(a->op) != NCS_KIND_COLL) break;
    if (BIT(c, (bh + k) & (cap - 1))) break;
    if (a->t < 0 || __builtin_add_overflow(tsum, a->t, &tsum)) exact = 0;
  }
  if (k) one_run_fold(s, c, r, k, tsum, exact, x);
  return k;
}

#define PREFETCH 16
void ncs_strag_arrive_batch(struct ncs_strag *s, int file, const struct ncs_strag_arrival *x, size_t n) {
  if (!s || file < 0 || file >= s->nfiles) return;
  struct file *f = &s->files[file];
  struct comm *held = NULL;
  for (size_t i = 0; i < n; i++) {
    if (ncs_op_kind(x[i].op) != NCS_KIND_COLL || !x[i].seq) continue;
    if (x[i].comm >= f->nlocal || !f->local[x[i].comm].c) continue;
    struct comm *c = f->local[x[i].comm].c;
    if (c != held) { /* one lock per run of arrivals on the same communicator */
      if (held) pthread_mutex_unlock(&held->mu);
      pthread_mutex_lock(&c->mu);
      held = c;
    }
    struct lc *l = &f->local[x[i].comm];
    if (c->nranks == 1) {
      size_t k = arrive_one_run(s, c, l->rank, &x[i], n - i, x[i].comm);
      if (k) i += k - 1;
      else arrive_one(s, c, l->rank, &x[i]);
      continue;
    }
    /* the slot of an arrival PREFETCH ahead, on its way while this one is handled: a file's
     * collectives come in seq order, and the window outgrows the cache (a miss per slot was
     * half of this function's time at 1,024 ranks) */
    if (i + PREFETCH < n && x[i + PREFETCH].comm == x[i].comm && c->cap)
      __builtin_prefetch(&c->ring[(c->head + (x[i + PREFETCH].seq - c->base)) & (c->cap - 1)], 1);
    if (x[i].seq >= l->seq) l->seq = x[i].seq;
    else if (l->seq - x[i].seq > c->max_back) c->max_back = l->seq - x[i].seq;
    arrive_locked(s, c, l->rank, f->host_idx, &x[i]);
  }
  if (held) pthread_mutex_unlock(&held->mu);
}

void ncs_strag_arrive(struct ncs_strag *s, int file, const struct ncs_call *call, int64_t t) {
  struct ncs_strag_arrival x = {.comm = call->comm, .op = call->op, .datatype = call->datatype,
                                .root = call->root, .seq = call->seq, .count = call->count, .t = t};
  ncs_strag_arrive_batch(s, file, &x, 1);
}

void ncs_strag_arrive_one_calls(struct ncs_strag *s, int file, uint32_t comm, const struct ncs_call *x, size_t n) {
  if (!s || file < 0 || file >= s->nfiles || !n) return;
  struct file *f = &s->files[file];
  if (comm >= f->nlocal || !f->local[comm].c) return;
  struct comm *c = f->local[comm].c;
  int r = f->local[comm].rank;
  if (c->nranks != 1) return; /* (lines_up said 2: never) */
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < n;) {
    /* those that continue the window from its start, folded; else one as arrive_one */
    uint64_t base = c->base;
    size_t k = 0, cap = c->bcap;
    while (i + k < n && k < cap && x[i + k].seq == base + k && !BIT(c, (c->bhead + k) & (cap - 1))) k++;
    if (k) { one_run_fold(s, c, r, k, 0, 1, NULL); i += k; continue; }
    struct ncs_strag_arrival a = {.comm = comm, .op = x[i].op, .datatype = x[i].datatype, .root = x[i].root,
                                  .seq = x[i].seq, .count = x[i].count};
    arrive_one(s, c, r, &a);
    i++;
  }
  pthread_mutex_unlock(&c->mu);
}

int ncs_strag_lines_up(const struct ncs_strag *s, int file, uint32_t comm) {
  if (!s || file < 0 || file >= s->nfiles) return 0;
  const struct file *f = &s->files[file];
  if (comm >= f->nlocal || !f->local[comm].c) return 0;
  return f->local[comm].c->nranks == 1 ? 2 : 1;
}

void ncs_strag_file_done(struct ncs_strag *s, int file, int truncated) {
  if (s && file >= 0 && file < s->nfiles) s->files[file].truncated = truncated;
}

static int cmp_offset_host(const void *a, const void *b) {
  return strcmp(((const struct ncs_strag_host_offset *)a)->host, ((const struct ncs_strag_host_offset *)b)->host);
}
static int cmp_rank(const void *a, const void *b) {
  const struct ncs_strag_rank *x = a, *y = b;
  if (x->wait_caused_s != y->wait_caused_s) return x->wait_caused_s < y->wait_caused_s ? 1 : -1;
  if (x->last_count != y->last_count) return x->last_count < y->last_count ? 1 : -1;
  if (x->file != y->file) return x->file - y->file;
  return x->rank - y->rank;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The result rows: one per rank a file holds in its primary communicator (the largest it
 * belongs to; ties: the lowest comm_id), so a process running a rank per thread has a row
 * per rank; a file in no communicator has none. row0[i] is file i's first row, nrow[i] its
 * count; rows of a file are in rank order. */
struct rows { struct comm **prim; int *row0, *nrow; int n; };

static int rows_build(struct ncs_strag *s, struct rows *w, struct ncs_strag_rank **out) {
  size_t nf = (size_t)s->nfiles + 1;
  w->prim = calloc(nf, sizeof *w->prim);
  w->row0 = calloc(nf, sizeof *w->row0);
  w->nrow = calloc(nf, sizeof *w->nrow);
  w->n = 0;
  *out = NULL;
  if (!w->prim || !w->row0 || !w->nrow) return -1;
  for (int i = 0; i < s->nfiles; i++) {
    const struct file *f = &s->files[i];
    for (size_t k = 0; k < f->nlocal; k++) {
      struct comm *c = f->local[k].c, *p = w->prim[i];
      if (c && (!p || c->nranks > p->nranks || (c->nranks == p->nranks && c->comm_id < p->comm_id))) w->prim[i] = c;
    }
    for (size_t k = 0; k < f->nlocal; k++) w->nrow[i] += f->local[k].c && f->local[k].c == w->prim[i];
    w->row0[i] = w->n;
    w->n += w->nrow[i];
  }
  struct ncs_strag_rank *res = calloc((size_t)w->n + 1, sizeof *res);
  if (!res) return -1;
  for (int i = 0; i < s->nfiles; i++) {
    const struct file *f = &s->files[i];
    int *rk = calloc((size_t)w->nrow[i] + 1, sizeof *rk), k = 0;
    if (!rk) { free(res); return -1; }
    for (size_t j = 0; j < f->nlocal; j++)
      if (f->local[j].c && f->local[j].c == w->prim[i]) rk[k++] = f->local[j].rank;
    if (k > 1) qsort(rk, (size_t)k, sizeof *rk, cmp_int);
    for (int j = 0; j < k; j++) {
      struct ncs_strag_rank *r = &res[w->row0[i] + j];
      r->file = i; r->rank = rk[j];
      r->host = f->host ? f->host : "";
      r->pid = f->pid;
    }
    free(rk);
  }
  *out = res;
  return 0;
}

/* The row that rank r of communicator c counts in: the row of its file for that rank when c is
 * the file's primary communicator; the file's only row; else the row whose primary rank sits on
 * the same device, when exactly one does; -1 when none can be told. */
static int row_of(const struct rows *w, const struct ncs_strag_rank *res, const struct comm *c, int r) {
  int fi = c->file[r];
  if (fi < 0 || !w->nrow[fi]) return -1;
  const struct comm *p = w->prim[fi];
  int found = -1, n = 0;
  for (int k = w->row0[fi]; k < w->row0[fi] + w->nrow[fi]; k++) {
    if (p == c) { if (res[k].rank == r) return k; continue; }
    if (w->nrow[fi] == 1) return k;
    if (c->dev[r] >= 0 && p->dev[res[k].rank] == c->dev[r]) { found = k; n++; }
  }
  return n == 1 ? found : -1;
}

/* The mismatches noted on c, taken out of the list (those past its MAX_LIST entries only
 * from the count). */
static void drop_mismatches(struct ncs_strag *s, const struct comm *c) {
  if (!c->nmm) return;
  uint64_t kept = 0, listed = s->nmm < MAX_LIST ? s->nmm : MAX_LIST;
  for (uint64_t i = 0; i < listed; i++)
    if (s->mm[i].comm_id != c->comm_id) s->mm[kept++] = s->mm[i];
  s->nmm -= c->nmm;
}

static void publish(struct ncs_strag *s);
void ncs_strag_finish(struct ncs_strag *s) {
  if (!s || s->finished) return;
  s->finished = 1;
  struct rows w;
  struct ncs_strag_rank *res = NULL;
  long double *late = NULL;
  if (rows_build(s, &w, &res) != 0 || !(late = calloc((size_t)w.n + 1, sizeof *late))) {
    free(w.prim); free(w.row0); free(w.nrow); free(res); free(late); s->oom++; publish(s); return;
  }
  for (struct comm *c = s->comms; c; c = c->next) {
    c->partial = c->nreg < c->nranks; /* some rank has no trace among the files given */
    if (c->partial) { s->npartial++; s->untraced_arrivals += c->arrivals_all; }
    /* two files claim one of its ranks: which one is that rank is unknowable, and what lined
     * up depended on which file was read first; nothing of it counts (METRICS.md) */
    if (c->dup_rank >= 0) s->ndup++;
    if (c->partial || c->dup_rank >= 0) { drop_mismatches(s, c); continue; }
    /* its skews: equal maxima go to the lowest (comm, seq), whatever order comms are listed in */
    s->skew_sum += lsum_get(&c->skew_sum);
    if (c->skew_n && (!s->skew_n || c->skew_max > s->skew_max ||
                      (c->skew_max == s->skew_max && c->comm_id < s->skew_max_comm))) {
      s->skew_max = c->skew_max; s->skew_max_comm = c->comm_id; s->skew_max_seq = c->skew_max_seq;
    }
    s->skew_n += c->skew_n;
    s->evicted += c->evicted;
    /* open slots: collectives some ranks never entered */
    long double *extra_min = calloc((size_t)c->nranks, sizeof *extra_min);
    uint64_t *extra_sum_n = calloc((size_t)c->nranks, sizeof *extra_sum_n);
    int first = 1;
    if (c->gone_n) { /* open ones every rank had passed, out of the window: before the rest */
      s->incomplete += c->gone_n;
      for (int r = 0; r < c->nranks && extra_min; r++) { extra_min[r] += lsum_get(&c->gone_min); extra_sum_n[r] += c->gone_n; }
      if (s->nmiss < MAX_LIST) {
        struct missing *m = &s->miss[s->nmiss++];
        memset(m, 0, sizeof *m); /* no rank is missing: each went past it */
        m->comm_id = c->comm_id; m->seq = c->gone_first_seq; m->entered = c->gone_first_entered; m->nranks = c->nranks;
      }
      first = 0;
    }
    for (size_t i = 0; i < c->cap; i++) {
      struct slot *sl = &c->ring[(c->head + i) & (c->cap - 1)];
      if (!sl->n || sl->n == (uint32_t)-1) continue;
      uint64_t seq = c->base + i;
      s->incomplete++;
      if (sl->bx) note_mismatch(s, c, seq, sl);
      /* ranks that entered it are those that got this far (sequence numbers are consecutive) */
      for (int r = 0; r < c->nranks && extra_min; r++)
        if (c->last_seq[r] >= seq) { extra_min[r] += (long double)sl->tmin; extra_sum_n[r]++; }
      if (first && s->nmiss < MAX_LIST) {
        struct missing *m = &s->miss[s->nmiss++];
        memset(m, 0, sizeof *m);
        m->comm_id = c->comm_id; m->seq = seq; m->entered = sl->n; m->nranks = c->nranks;
        for (int r = 0; r < c->nranks; r++)
          if (c->last_seq[r] < seq) { if (m->nmissing < 16) m->ranks[m->nmissing] = r; m->nmissing++; }
      }
      first = 0;
    }
    for (int r = 0; r < c->nranks; r++) {
      int k = row_of(&w, res, c, r);
      if (k < 0) continue;
      long double mins = lsum_get(&c->sum_min) + (extra_min ? extra_min[r] : 0);
      late[k] += lsum_get(&c->sum_t[r]) - mins;
      res[k].arrivals += c->arrivals[r];
      res[k].last_count += c->last_count[r];
      res[k].wait_caused_s += (double)(lsum_get(&c->wait[r]) / 1e9L);
    }
    free(extra_min); free(extra_sum_n);
  }
  /* clock check: per host, the median over complete samples of (its mean GPU end - all ranks' mean) */
  {
    int cap = 0;
    for (struct comm *c = s->comms; c; c = c->next) cap += c->samples ? MAX_SAMPLES : 0;
    double *d = cap ? malloc(sizeof *d * (size_t)cap) : NULL;
    s->noffsets = 0;
    for (int h = 0; d && h < s->nhosts; h++) {
      int nd = 0;
      for (struct comm *c = s->comms; c; c = c->next)
        for (int k = 0; c->samples && k < MAX_SAMPLES; k++) {
          const struct sample *sm = c->samples[k];
          if (!sm || sm->n != c->nranks || !sm->hcnt[h] || sm->hcnt[h] == sm->n) continue; /* complete, multi-host */
          d[nd++] = sm->hsum[h] / sm->hcnt[h] - sm->sum / sm->n;
        }
      if (!nd) continue;
      /* median */
      for (int a = 1; a < nd; a++) { double v = d[a]; int b = a - 1; while (b >= 0 && d[b] > v) { d[b + 1] = d[b]; b--; } d[b + 1] = v; }
      double med = nd % 2 ? d[nd / 2] : (d[nd / 2 - 1] + d[nd / 2]) / 2;
      s->offsets[s->noffsets++] = (struct ncs_strag_host_offset){s->hosts[h], med / 1e3, nd};
    }
    if (s->noffsets < 2) s->noffsets = 0;
    /* by host name: host indices follow the order in which reader threads met the hosts */
    if (s->noffsets > 1) qsort(s->offsets, (size_t)s->noffsets, sizeof s->offsets[0], cmp_offset_host);
    free(d);
  }
  for (int i = 0; i < w.n; i++)
    res[i].mean_late_us = res[i].arrivals ? (double)(late[i] / (long double)res[i].arrivals / 1e3L) : 0;
  free(late);
  free(w.prim); free(w.row0); free(w.nrow);
  if (w.n > 1) qsort(res, (size_t)w.n, sizeof *res, cmp_rank);
  free(s->res);
  s->res = res;
  s->nres = w.n;
  publish(s);
}

int ncs_strag_ranks(const struct ncs_strag *s, const struct ncs_strag_rank **out) {
  *out = s ? s->res : NULL;
  return s ? s->nres : 0;
}
uint64_t ncs_strag_collectives(const struct ncs_strag *s) { return s->skew_n; }
uint64_t ncs_strag_incomplete(const struct ncs_strag *s) { return s->incomplete; }
uint64_t ncs_strag_mismatches(const struct ncs_strag *s) { return s->nmm; }
double ncs_strag_skew_mean_us(const struct ncs_strag *s) {
  return s->skew_n ? (double)(s->skew_sum / (long double)s->skew_n / 1e3L) : 0;
}
double ncs_strag_skew_max_us(const struct ncs_strag *s) { return s->skew_n ? (double)s->skew_max / 1e3 : 0; }
size_t ncs_strag_peak_window(const struct ncs_strag *s) { return atomic_load_explicit(&s->peak_open, memory_order_relaxed); }
int ncs_strag_partial(const struct ncs_strag *s) { return s->npartial; }
int ncs_strag_claimed_twice(const struct ncs_strag *s) { return s->ndup; }

int ncs_strag_clock_check(const struct ncs_strag *s, struct ncs_strag_host_offset *out, int max) {
  int n = 0;
  for (; s && n < s->noffsets && n < max; n++) out[n] = s->offsets[n];
  return n;
}

/* The result (straggler.h), from the engine's figures: at the end of finish, also a failed one. */
static void publish(struct ncs_strag *s) {
  struct ncs_strag_result *r = &s->pub;
  free(s->skipped);
  s->skipped = NULL;
  *r = (struct ncs_strag_result){.nfiles = s->nfiles, .nranks = s->nres, .rank = s->res, .complete = s->skew_n,
                                 .incomplete = s->incomplete, .skew_mean_us = ncs_strag_skew_mean_us(s),
                                 .skew_max_us = ncs_strag_skew_max_us(s), .skew_max_comm = s->skew_max_comm,
                                 .skew_max_seq = s->skew_max_seq, .peak_open = atomic_load_explicit(&s->peak_open, memory_order_relaxed), .given_up = s->evicted,
                                 .window_max = WINDOW_MAX, .oom = s->oom, .partial = s->npartial,
                                 .claimed_twice = s->ndup, .mismatches = s->nmm, .noffsets = s->noffsets,
                                 .offset = s->offsets};
  int nskip = 0;
  for (const struct comm *c = s->comms; c; c = c->next) { r->ncomms++; nskip += c->partial || c->dup_rank >= 0; }
  struct ncs_strag_skipped *k = nskip ? calloc((size_t)nskip, sizeof *k) : NULL;
  if (nskip && !k) s->oom++, r->oom = s->oom; /* the list is left out, said as a failed allocation */
  for (const struct comm *c = s->comms; c && k; c = c->next)
    if (c->partial || c->dup_rank >= 0)
      k[r->nskipped++] = (struct ncs_strag_skipped){c->comm_id, c->nranks, c->nreg, c->partial ? -1 : c->dup_rank};
  r->skipped = s->skipped = k;
  for (uint64_t i = 0; i < s->nmm && i < MAX_LIST; i++) {
    const struct mismatch *m = &s->mm[i];
    r->mismatch[r->nmismatch++] = (struct ncs_strag_mismatch){
        m->comm_id, m->seq, m->rank, m->nodd, {m->got.op, m->got.dtype, m->got.count, m->got.root},
        {m->want.op, m->want.dtype, m->want.count, m->want.root}};
  }
  for (int i = 0; i < s->nmiss; i++) {
    const struct missing *m = &s->miss[i];
    struct ncs_strag_missing *o = &r->missing[r->nmissing++];
    *o = (struct ncs_strag_missing){m->comm_id, m->seq, m->entered, m->nranks, m->nmissing, {0}};
    memcpy(o->rank, m->ranks, sizeof o->rank);
  }
}
const struct ncs_strag_result *ncs_strag_result(const struct ncs_strag *s) { return s ? &s->pub : NULL; }
