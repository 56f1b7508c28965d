/* hang.c — the end state of every rank and the hang / dead-rank / init-hang / desync verdicts
 * (contract in hang.h; rules in docs/DOCTOR.md). */
#include "analysis/hang.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/doctor.h"
#include "io/mux.h"
#include "model/align.h"
#include "model/profcalls.h"
#include "model/ranks.h"
#include "model/seqsigs.h"
#include "ncclscope/ops.h"

#define RECENT 64             /* collectives remembered per (file, communicator) */
#define BYTCALL 128           /* recent calls of a file, for GPU in-flight lookups */
#define MM_MAX 16             /* mismatches listed */
#define SNAP_MAX 64           /* INFLIGHT records kept per chunk */

struct hcall {
  uint64_t seq, tcall, count, group;
  uint64_t t_enter, t_exit;   /* monotonic */
  uint32_t op, datatype, thread, comm;
  int32_t root, rc;
};
/* A recent call of a file, by tcall % BYTCALL: what the GPU in-flight lookup reads of it
 * (smaller than hcall: every call of a run is copied into one). */
struct hbyt {
  uint64_t tcall, seq;
  uint32_t op, thread, comm;
};
struct hcomm {
  uint32_t idx;
  uint64_t comm_id, parent_id;
  int rank, nranks, ended, end_op;
  uint64_t children;          /* COMM records made from it (split/shrink) */
  uint64_t last_seq, ncoll;
  int pending;                /* a non-blocking init not seen complete (COMM rc 7) */
  int32_t err_rc;             /* the first collective on it that returned an error, 0 none */
  uint32_t err_op;
  uint64_t err_seq, end_t;    /* end_t: when it was aborted or revoked (monotonic) */
  int abort_op;               /* CommAbort or CommRevoke when it was, else 0 (a Destroy may follow) */
  struct hcall recent[RECENT];
  uint64_t stamp, back;       /* on_run's: the run that last had a collective on it, and the
                                 recent slot index written last */
  int left;                   /* on_run's: recent calls it still takes in that run */
};
struct hfile {
  const char *path;
  char host[64];
  uint32_t pid;
  int env_rank;
  int64_t created_rt;
  struct ncs_clockmap map;
  struct hcomm *comms;
  int ncomms, capcomms;
  int hint;                   /* comms[] index of the last collective's communicator */
  struct hcall last;          /* last CALL of any operation */
  int has_last;
  uint64_t calls;
  uint64_t runs;              /* runs of calls read (on_run's stamp) */
  struct hbyt byt[BYTCALL];   /* recent calls, by tcall % BYTCALL */
  struct ncs_inflight pend[SNAP_MAX], snap[SNAP_MAX];
  int npend, nsnap;
  uint64_t clock_prev, gaps[8];
  int ngaps;
  int quiet;                  /* the last chunk has the `idle` flag (5.6): a heartbeat alone, after
                                 which the writer's next chunk may come NCS_IDLE_BEAT_MS later; 0
                                 again at a call or COMM read after it (a killed process's rings
                                 file: recovered records, no chunk end), which would have woken
                                 the writer: its next chunk was due within a flush period */
  int read_rc, complete, cut;
  int64_t alive_rt;
  struct psig *ps;            /* signatures waiting for the shared table's lock */
  int nps;
  /* how the process ended (the endings verdicts) */
  int ninit_failed, ninit_ok; /* inits that returned an error / that made a communicator */
  int32_t init_rc;            /* the first failed init's */
  uint32_t init_op;
  uint64_t init_t;
  int nb_aborted;             /* non-blocking inits aborted before they were seen complete */
  uint64_t nb_aborted_id, nb_aborted_t;
  char warn[200];             /* NCCL's first WARN line (its text after "NCCL WARN ") */
  uint64_t lost_full;         /* calls lost because the file system was full (DROP reason 7) */
  uint64_t lost_ring;         /* calls dropped with the thread's buffer full (DROP reasons 1, 2) */
};
struct psig { uint64_t comm_id, seq; int nranks; struct ncs_seqsig s; }; /* one file's, not yet applied */
#define PSIG_BATCH 1024
struct gcomm { uint64_t comm_id; int nranks; struct ncs_seqsigs sig; };
struct mismatch { uint64_t comm_id, seq; int rank_a, rank_b; struct ncs_seqsig a, b; };

struct vctx { struct ncs_hang *h; struct hfile *f; };
struct ncs_hang {
  pthread_mutex_t mu;         /* the signature table and the mismatches (files read in parallel) */
  int n;
  char *const *paths;
  int64_t hang_ns;
  struct hfile *f;
  struct gcomm *gc;
  int ngc, capgc;
  struct mismatch mm[MM_MAX];
  uint64_t nmm;
  /* the first mismatched collective (the lowest seq, then comm id, whichever file was read
   * first): the rank whose signature was kept (read first), the ranks that differed from it,
   * the communicator's size; who is odd out is decided by count */
  uint64_t m0_seq, m0_comm;
  int ref0_rank, nranks0;
  struct ncs_seqsig ref0_sig, odd0_sig;
  struct ncs_ranks odd0;
  struct ncs_hang_verdict *v;
  int nv, capv;
  struct ncs_hang_rank *ranks;
  struct vctx *vx;            /* per file: the visitor's context */
  int64_t origin;
};

/* ---- helpers ---- */

static int is_init_op(uint32_t op) {
  return op == NCS_OP_CommInitRank || op == NCS_OP_CommInitRankConfig || op == NCS_OP_CommInitRankScalable;
}
static int is_split_op(uint32_t op) { return op == NCS_OP_CommSplit || op == NCS_OP_CommShrink; }
static uint32_t norm_op(uint32_t op) { return op == NCS_OP_Bcast ? NCS_OP_Broadcast : op; }
static const char *opname(uint32_t op) {
  const char *s = ncs_op_name(op);
  return s ? s : "?";
}
static const char *dtname(uint32_t dt) {
  static const char *n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
                            "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return dt < sizeof n / sizeof *n ? n[dt] : "?";
}
static int64_t rt_of(const struct hfile *f, uint64_t mono) { return mono ? ncs_clockmap_map(&f->map, mono) : 0; }

static struct hcomm *comm_of(struct hfile *f, uint32_t idx) {
  for (int i = 0; i < f->ncomms; i++) if (f->comms[i].idx == idx) return &f->comms[i];
  return NULL;
}
static struct hcomm *comm_by_id(struct hfile *f, uint64_t id) {
  for (int i = 0; i < f->ncomms; i++) if (f->comms[i].comm_id == id) return &f->comms[i];
  return NULL;
}

static struct gcomm *gcomm_get(struct ncs_hang *h, uint64_t id, int nranks) {
  for (int i = 0; i < h->ngc; i++) if (h->gc[i].comm_id == id) return &h->gc[i];
  if (h->ngc == h->capgc) {
    int nc = h->capgc ? h->capgc * 2 : 16;
    struct gcomm *g = realloc(h->gc, (size_t)nc * sizeof *g);
    if (!g) return NULL;
    h->gc = g;
    h->capgc = nc;
  }
  struct gcomm *g = &h->gc[h->ngc++];
  memset(g, 0, sizeof *g);
  g->comm_id = id;
  g->nranks = nranks;
  return g;
}

/* The order of mismatches listed: seq, comm id, then the pair's ranks (never the read order,
 * which depends on the decoder's threads). */
static int mm_cmp(const void *x, const void *y) {
  const struct mismatch *a = x, *b = y;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  if (a->rank_a != b->rank_a) return a->rank_a < b->rank_a ? -1 : 1;
  return (a->rank_b > b->rank_b) - (a->rank_b < b->rank_b);
}
/* The first rank applied sets the signature of (communicator, seq); the others are compared.
 * The MM_MAX first mismatches in mm_cmp's order are kept, whatever order they come in.
 * Under h->mu. */
static void sig_apply(struct ncs_hang *h, struct gcomm *g, const struct psig *p) {
  const struct ncs_seqsig *me = &p->s;
  const struct ncs_seqsig *ref = ncs_seqsigs_put(&g->sig, p->seq, me);
  if (!ref) return;
  if (ref->op == me->op && ref->count == me->count && ref->dtype == me->dtype && ref->root == me->root) return;
  int at_m0 = h->nmm && p->seq == h->m0_seq && p->comm_id == h->m0_comm;
  if (!h->nmm || (!at_m0 && (p->seq < h->m0_seq || (p->seq == h->m0_seq && p->comm_id < h->m0_comm)))) {
    /* an earlier first mismatch: no rank differed at it before (that would have been one) */
    h->m0_seq = p->seq; h->m0_comm = p->comm_id;
    h->ref0_rank = ref->rank; h->ref0_sig = *ref; h->odd0_sig = *me; h->nranks0 = p->nranks;
    h->odd0.n = 0;
    at_m0 = 1;
  }
  if (at_m0) ncs_ranks_add(&h->odd0, me->rank);
  /* the lower rank first, whichever file was read first */
  const struct ncs_seqsig *a = ref->rank <= me->rank ? ref : me, *b = ref->rank <= me->rank ? me : ref;
  struct mismatch m = {.comm_id = p->comm_id, .seq = p->seq, .rank_a = a->rank, .rank_b = b->rank, .a = *a, .b = *b};
  if (h->nmm < MM_MAX) {
    h->mm[h->nmm] = m;
  } else { /* full: it takes the place of the last kept one when it comes before it */
    int last = 0;
    for (int i = 1; i < MM_MAX; i++) if (mm_cmp(&h->mm[i], &h->mm[last]) > 0) last = i;
    if (mm_cmp(&m, &h->mm[last]) < 0) h->mm[last] = m;
  }
  h->nmm++;
}
static void sig_flush(struct ncs_hang *h, struct hfile *f) {
  if (!f->nps) return;
  pthread_mutex_lock(&h->mu);
  struct gcomm *g = NULL; /* a run of one communicator's signatures looks it up once */
  for (int i = 0; i < f->nps; i++) {
    if (!g || g->comm_id != f->ps[i].comm_id) g = gcomm_get(h, f->ps[i].comm_id, f->ps[i].nranks);
    if (g) sig_apply(h, g, &f->ps[i]);
  }
  pthread_mutex_unlock(&h->mu);
  f->nps = 0;
}
/* A collective's signature to the shared table (sig_flush). Not one of a one-rank communicator:
 * a desync is between ranks, and it has no other rank to compare with. */
static inline int sig_wanted(const struct hcomm *c) { return c->comm_id && c->nranks != 1; }
static inline __attribute__((always_inline)) void sig_push(struct ncs_hang *h, struct hfile *f, struct hcomm *c, const struct ncs_call *k) {
  if (!f->ps && !(f->ps = malloc(PSIG_BATCH * sizeof *f->ps))) return;
  f->ps[f->nps++] = (struct psig){.comm_id = c->comm_id, .seq = k->seq, .nranks = c->nranks,
                                  .s = {.count = k->count, .root = k->root, .op = (uint8_t)norm_op(k->op),
                                        .dtype = (uint8_t)k->datatype, .rank = c->rank}};
  if (f->nps == PSIG_BATCH) sig_flush(h, f);
}
static inline __attribute__((always_inline)) void sig_check(struct ncs_hang *h, struct hfile *f, struct hcomm *c, const struct ncs_call *k) {
  if (k->seq && sig_wanted(c)) sig_push(h, f, c, k);
}

/* ---- visitor ---- */

static int on_process(void *ctx, const struct ncs_process *p) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  f->pid = p->pid;
  f->created_rt = (int64_t)p->created_realtime_ns;
  const char *host = ncs_process_get(p, "host");
  snprintf(f->host, sizeof f->host, "%s", host ? host : "");
  static const char *keys[] = {"env.RANK", "env.OMPI_COMM_WORLD_RANK", "env.SLURM_PROCID", "env.PMI_RANK", NULL};
  for (int i = 0; keys[i] && f->env_rank < 0; i++) {
    const char *v = ncs_process_get(p, keys[i]);
    char *e;
    if (v && *v) { long r = strtol(v, &e, 10); if (!*e && r >= 0 && r < (1L << 30)) f->env_rank = (int)r; }
  }
  return 0;
}

static int on_comm(void *ctx, const struct ncs_comm *m) {
  struct vctx *x = ctx;
  struct hfile *f = x->f;
  f->quiet = 0;
  struct hcomm *c = m->comm ? comm_of(f, m->comm) : NULL;
  if (!ncs_rc_ok(m->rc)) { /* an init that failed, at once or (a second record) asynchronously */
    if (!f->ninit_failed++) { f->init_rc = m->rc; f->init_op = m->init_op; f->init_t = m->t_enter; }
    if (c) c->pending = 0;
    return 0;
  }
  if (!m->handle || !m->comm) return 0;
  int was_pending = c && c->pending, is_new = !c;
  if (!c) {
    if (f->ncomms == f->capcomms) {
      int nc = f->capcomms ? f->capcomms * 2 : 4;
      struct hcomm *n = realloc(f->comms, (size_t)nc * sizeof *n);
      if (!n) return 0;
      f->comms = n;
      f->capcomms = nc;
    }
    c = &f->comms[f->ncomms++];
  }
  if (m->rc == 0 && (is_new || was_pending)) f->ninit_ok++;
  memset(c, 0, sizeof *c);
  c->idx = m->comm;
  c->comm_id = m->comm_id;
  c->parent_id = m->parent_id;
  c->rank = m->rank;
  c->nranks = m->nranks;
  c->pending = m->rc == 7;
  if (m->parent_id) {
    struct hcomm *p = comm_by_id(f, m->parent_id);
    if (p) p->children++;
  }
  return 0;
}

static int on_comm_end(void *ctx, const struct ncs_comm_end *e) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  f->quiet = 0;
  struct hcomm *c = comm_of(f, e->comm);
  if (!c) return 0;
  if (c->pending && e->op == NCS_OP_CommAbort && !f->nb_aborted++) { f->nb_aborted_id = c->comm_id; f->nb_aborted_t = e->t_enter; }
  c->ended = 1;
  c->end_op = (int)e->op;
  if ((e->op == NCS_OP_CommAbort || e->op == NCS_OP_CommRevoke) && !c->abort_op) { c->abort_op = (int)e->op; c->end_t = e->t_enter; }
  c->pending = 0;
  return 0;
}

static int on_drop(void *ctx, const struct ncs_drop *d) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  if (d->reason == NCS_DROP_DISK_FULL) f->lost_full += d->records;
  else if (d->reason == NCS_DROP_BUFFER_FULL || d->reason == NCS_DROP_NO_THREAD_SLOT) f->lost_ring += d->records;
  return 0;
}

/* NCCL's first WARN line: the cause NCCL gave when an init or a collective failed. */
static int on_log_line(void *ctx, const struct ncs_log_line *l) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  if (f->warn[0] || !l->line) return 0;
  const char *w = memmem(l->line, l->len, "NCCL WARN ", 10);
  if (!w) return 0;
  w += 10;
  size_t n = l->len - (size_t)(w - l->line);
  while (n && (w[n - 1] == '\n' || w[n - 1] == '\r')) n--;
  if (n >= sizeof f->warn) n = sizeof f->warn - 1;
  memcpy(f->warn, w, n);
  f->warn[n] = 0;
  return 0;
}

static struct hcall hcall_of(const struct ncs_call *k) {
  return (struct hcall){.seq = k->seq, .tcall = k->tcall, .count = k->count, .group = k->group,
                        .t_enter = k->t_enter, .t_exit = k->t_exit, .op = k->op, .datatype = k->datatype,
                        .thread = k->thread, .comm = k->comm, .root = k->root, .rc = k->rc};
}
static struct hbyt hbyt_of(const struct ncs_call *k) {
  return (struct hbyt){.tcall = k->tcall, .seq = k->seq, .op = k->op, .thread = k->thread, .comm = k->comm};
}

/* One call */
__attribute__((noinline)) static int on_call(void *ctx, const struct ncs_call *k) {
  struct vctx *x = ctx;
  struct hfile *f = x->f;
  f->calls++;
  f->last = hcall_of(k);
  f->has_last = 1;
  f->byt[k->tcall % BYTCALL] = hbyt_of(k);
  if (ncs_op_kind(k->op) != NCS_KIND_COLL || !k->comm || !k->seq) return 0;
  struct hcomm *c = f->hint < f->ncomms && f->comms[f->hint].idx == k->comm ? &f->comms[f->hint] : comm_of(f, k->comm);
  if (!c) return 0;
  f->hint = (int)(c - f->comms);
  if (!ncs_rc_ok(k->rc) && !c->err_rc) { c->err_rc = k->rc; c->err_op = k->op; c->err_seq = k->seq; }
  c->recent[c->ncoll % RECENT] = f->last;
  c->ncoll++;
  if (k->seq > c->last_seq) c->last_seq = k->seq;
  sig_check(x->h, f, c, k);
  return 0;
}

/* on_run's calls of k's op on c's communicator from k on (to end), counted on c; the next call
 * of another op or communicator returned. `sig`: sig_wanted(c) (0: one-rank communicators,
 * e.g. one process's own). */
static inline __attribute__((always_inline)) const struct ncs_call *
coll_span(struct ncs_hang *h, struct hfile *f, struct hcomm *c, const struct ncs_call *k, const struct ncs_call *end, int sig,
          int recent) {
  uint32_t op = k->op, comm = k->comm;
  uint64_t ncoll = c->ncoll, last_seq = c->last_seq; /* (locals: sig_push's stores could be c's, to the compiler) */
  for (; k < end && k->op == op && k->comm == comm; k++) {
    if (!k->seq) continue;
    if (__builtin_expect(k->rc != 0, 0) && !ncs_rc_ok(k->rc) && !c->err_rc) { c->err_rc = k->rc; c->err_op = k->op; c->err_seq = k->seq; }
    if (recent) c->recent[ncoll % RECENT] = hcall_of(k); /* (a run of up to RECENT calls: each is among the last) */
    ncoll++;
    last_seq = k->seq > last_seq ? k->seq : last_seq;
    if (sig) sig_push(h, f, c, k);
  }
  c->ncoll = ncoll;
  c->last_seq = last_seq;
  return k;
}

/* A run of calls: each collective counted on its communicator and its signature checked, in
 * order; then the communicators' recent calls, written backwards from the run's end: only the
 * last RECENT collectives of each communicator in the run, each into the slot it would have
 * had (the earlier ones' slots are overwritten by those: writing every call in order leaves the
 * same; a run of at most RECENT calls writes each collective's at once). Then the recent calls by
 * tcall, each slot left with the last call that maps to it. */
__attribute__((noinline)) static int on_run(void *ctx, const struct ncs_call *x, size_t n) {
  struct vctx *v = ctx;
  struct hfile *f = v->f;
  uint64_t run = ++f->runs;
  int ncomm = 0;                          /* communicators with a collective in the run */
  const struct ncs_call *end = f->ncomms ? x + n : x; /* no COMM yet: none kept */
  for (const struct ncs_call *k = x; k < end;) {
    /* a span of one operation's calls on one communicator */
    uint32_t op = k->op, comm = k->comm;
    if (ncs_op_kind(op) != NCS_KIND_COLL) { while (++k < end && k->op == op) {} continue; }
    if (!comm) { k++; continue; }
    struct hcomm *c = f->hint < f->ncomms && f->comms[f->hint].idx == comm ? &f->comms[f->hint] : comm_of(f, comm);
    if (!c) { while (++k < end && k->op == op && k->comm == comm) {} continue; }
    f->hint = (int)(c - f->comms);
    uint64_t ncoll0 = c->ncoll;
    if (n <= RECENT) { k = coll_span(v->h, f, c, k, end, 1, 1); continue; } /* short: its recent calls at once */
    if (sig_wanted(c)) k = coll_span(v->h, f, c, k, end, 1, 0);
    else k = coll_span(v->h, f, c, k, end, 0, 0);
    int counted = c->ncoll != ncoll0;
    if (counted && c->stamp != run) { c->stamp = run; c->left = RECENT; ncomm++; }
  }
  /* the recent calls, from the run's last collective back (c->back: the slot index written
   * last, from ncoll down; c->left: how many more it takes), until each communicator has RECENT */
  uint32_t pop = UINT32_MAX, pcomm = 0; /* the last call's op and communicator (looked up once) */
  int coll = 0;
  struct hcomm *c = NULL;
  for (const struct ncs_call *k = end; ncomm && k-- > x;) {
    if (k->op != pop) { pop = k->op; coll = ncs_op_kind(pop) == NCS_KIND_COLL; }
    if (!coll || !k->comm || !k->seq) continue;
    if (k->comm != pcomm) { pcomm = k->comm; c = comm_of(f, pcomm); }
    if (!c || !c->left) continue;
    if (c->left == RECENT) c->back = c->ncoll;
    c->recent[--c->back % RECENT] = hcall_of(k);
    if (!--c->left) ncomm--;
  }
  f->calls += n;
  f->last = hcall_of(&x[n - 1]);
  f->has_last = 1;
  const struct ncs_call *from = x;
  end = x + n;
  if (n > BYTCALL) { /* the last BYTCALL calls with consecutive tcalls fill every slot: the others are overwritten */
    const struct ncs_call *k = end - BYTCALL + 1;
    while (k < end && k->tcall == k[-1].tcall + 1) k++;
    if (k == end) from = end - BYTCALL;
  }
  for (const struct ncs_call *k = from; k < end; k++) f->byt[k->tcall % BYTCALL] = hbyt_of(k); /* in order: a later call overwrites an earlier one's slot */
  return 0;
}
/* A run of CALL records (trace.h): a run of one (GPU-timed traces: a CALL, its GPU_TIME, the
 * next CALL) as a single record, nothing set up for it. */
static int on_calls(void *ctx, const struct ncs_call *x, size_t n) {
  ((struct vctx *)ctx)->f->quiet = 0;
  return n == 1 ? on_call(ctx, x) : on_run(ctx, x, n);
}

static int on_clock(void *ctx, const struct ncs_clock *k) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  ncs_clockmap_add(&f->map, k);
  if (f->clock_prev && k->monotonic_ns > f->clock_prev)
    f->gaps[f->ngaps++ % 8] = k->monotonic_ns - f->clock_prev;
  f->clock_prev = k->monotonic_ns;
  return 0;
}

static int on_inflight(void *ctx, const struct ncs_inflight *r) {
  struct hfile *f = ((struct vctx *)ctx)->f;
  if (f->npend < SNAP_MAX) f->pend[f->npend++] = *r;
  return 0;
}

/* A chunk ends: its INFLIGHT records are the calls in flight when it was written. */
static int on_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  (void)index; (void)dropped; (void)off;
  struct hfile *f = ((struct vctx *)ctx)->f;
  memcpy(f->snap, f->pend, (size_t)f->npend * sizeof *f->pend);
  f->nsnap = f->npend;
  f->npend = 0;
  f->quiet = (flags & NCS_CHUNK_F_IDLE) != 0;
  return 0;
}

struct ncs_hang *ncs_hang_new(int n, char *const *paths, double hang_after_s) {
  struct ncs_hang *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  pthread_mutex_init(&h->mu, NULL);
  h->n = n;
  h->paths = paths;
  h->hang_ns = (int64_t)(hang_after_s * 1e9);
  h->f = calloc((size_t)(n ? n : 1), sizeof *h->f);
  struct vctx *x = calloc((size_t)(n ? n : 1), sizeof *x);
  if (!h->f || !x) { free(x); ncs_hang_free(h); return NULL; }
  h->vx = x;
  for (int i = 0; i < n; i++) {
    h->f[i].path = paths[i];
    h->f[i].env_rank = -1;
    ncs_clockmap_init(&h->f[i].map);
    x[i].h = h;
    x[i].f = &h->f[i];
  }
  h->vx = x;
  return h;
}

void ncs_hang_visitor(struct ncs_hang *h, int file, struct ncs_visitor *v) {
  memset(v, 0, sizeof *v);
  v->ctx = &h->vx[file];
  v->process = on_process;
  v->comm = on_comm;
  v->comm_end = on_comm_end;
  v->calls = on_calls;
  v->clock = on_clock;
  v->inflight = on_inflight;
  v->chunk = on_chunk;
  v->log_line = on_log_line;
  v->drop = on_drop;
}

void ncs_hang_file_done(struct ncs_hang *h, int file, int read_rc, const struct ncs_read_status *st) {
  struct hfile *f = &h->f[file];
  f->read_rc = read_rc;
  f->complete = read_rc == 0 && (st->final_seen || st->comms_closed) && !st->truncated;
  f->cut = !f->complete;
  f->alive_rt = st->last_realtime_ns ? (int64_t)st->last_realtime_ns : f->created_rt;
  sig_flush(h, f);
  free(f->ps);
  f->ps = NULL;
}

int ncs_hang_read_all(struct ncs_hang *h) {
  int worst = 0;
  for (int i = 0; i < h->n; i++) {
    struct ncs_visitor v;
    struct ncs_read_status st;
    ncs_hang_visitor(h, i, &v);
    /* static NCCL: the calls rebuilt from profiler events reach the same visitor (profcalls.h) */
    struct ncs_profcalls *pc = ncs_profcalls_new();
    struct ncs_mux m = {.n = 0};
    struct ncs_visitor all = v;
    if (pc) {
      m.v[m.n++] = v;
      m.v[m.n++] = ncs_profcalls_visitor(pc, &v);
      ncs_mux_build(&m, &all);
    }
    int rc = ncs_trace_read(h->paths[i], &all, &st);
    if (pc) { ncs_profcalls_finish(pc); ncs_profcalls_free(pc); }
    ncs_hang_file_done(h, i, rc, &st);
    if (rc > worst) worst = rc;
  }
  return worst;
}

/* ---- verdicts ---- */

static struct ncs_hang_verdict *add_verdict(struct ncs_hang *h, int kind) {
  if (h->nv == h->capv) {
    int nc = h->capv ? h->capv * 2 : 8;
    struct ncs_hang_verdict *v = realloc(h->v, (size_t)nc * sizeof *v);
    if (!v) return NULL;
    h->v = v;
    h->capv = nc;
  }
  struct ncs_hang_verdict *v = &h->v[h->nv++];
  memset(v, 0, sizeof *v);
  v->kind = kind;
  static const char *ids[] = {"", "desync", "dead-rank", "init-hang", "hang", "init-failed", "init-aborted",
                              "comm-aborted", "ended-in-nccl", "calls-lost", "missing-collective"};
  static const char *titles[] = {"",
                                 "Desync: ranks called different collectives at the same sequence number",
                                 "Dead rank: a rank's trace was cut while its peers waited on it",
                                 "Init hang: ranks never arrived in communicator creation",
                                 "Hang: a collective some ranks entered and others never did",
                                 "Init failed: NCCL could not create a communicator",
                                 "Init aborted: a non-blocking communicator creation was aborted before it completed",
                                 "Communicator aborted mid-collective: work on it never completed",
                                 "Ended inside NCCL: a trace ends inside an NCCL call (not yet judged)",
                                 "Calls lost: the trace file system was full",
                                 "Missing collective: ranks had not entered a collective their peers were in when the traces end"};
  v->id = ids[kind];
  v->title = titles[kind];
  return v;
}

static void ev(struct ncs_hang_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev(struct ncs_hang_verdict *v, const char *fmt, ...) {
  if (v->nevidence >= NCS_HANG_EVIDENCE) { v->more++; return; }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->evidence[v->nevidence++], sizeof v->evidence[0], fmt, ap);
  va_end(ap);
}
/* Appends r to a verdict's list (entered or missing), growing it; counted even when out of memory. */
static void add_rank(int **list, int *n, int *cap, int r) {
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    int *p = realloc(*list, (size_t)nc * sizeof *p);
    if (p) { *list = p; *cap = nc; }
  }
  if (*n < *cap) (*list)[*n] = r;
  (*n)++;
}
#define ADD_ENTERED(v, r) add_rank(&(v)->entered, &(v)->nentered, &(v)->capentered, (r))
#define ADD_MISSING(v, r) add_rank(&(v)->missing, &(v)->nmissing, &(v)->capmissing, (r))
static int listed(int n, int cap) { return n < cap ? n : cap; }

void ncs_hang_time(const struct ncs_hang *h, int64_t t, char *buf, size_t len) {
  if (!t) { snprintf(buf, len, "unknown time"); return; }
  time_t s = (time_t)(t / 1000000000);
  struct tm tm;
  gmtime_r(&s, &tm);
  double rel = (double)(t - h->origin) / 1e9;
  if (rel > -0.0005 && rel < 0.0005) rel = 0;
  snprintf(buf, len, "%02d:%02d:%02d.%03d UTC (%+.3f s)", tm.tm_hour, tm.tm_min, tm.tm_sec,
           (int)(t % 1000000000 / 1000000), rel);
}

/* The heartbeat period of a file: the median of its last chunk intervals (0 unknown). */
static int64_t beat_ns(const struct hfile *f) {
  int n = f->ngaps < 8 ? f->ngaps : 8;
  if (!n) return 0;
  uint64_t g[8];
  memcpy(g, f->gaps, sizeof g);
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && g[k - 1] > g[k]; k--) { uint64_t t = g[k]; g[k] = g[k - 1]; g[k - 1] = t; }
  return (int64_t)g[n / 2];
}

/* "host H pid P" of a file, for evidence. */
static void who(const struct hfile *f, char *b, size_t n) { snprintf(b, n, "host %s pid %u", f->host, f->pid); }

/* What file f was doing last, as seen in its trace: its call in flight, or its last call. */
static void doing(const struct ncs_hang *h, const struct hfile *f, char *b, size_t n) {
  char t[64];
  for (int i = 0; i < f->nsnap; i++) {
    const struct ncs_inflight *r = &f->snap[i];
    if (r->kind != NCS_INFLIGHT_HOST) continue;
    const struct hcomm *c = NULL;
    for (int k = 0; k < f->ncomms; k++) if (f->comms[k].idx == r->comm) c = &f->comms[k];
    ncs_hang_time(h, rt_of(f, r->t_enter), t, sizeof t);
    snprintf(b, n, "inside %s since %s (comm %016" PRIx64 " seq %" PRIu64 ")", opname(r->op), t,
             c ? c->comm_id : r->key, r->seq);
    return;
  }
  if (!f->has_last) { snprintf(b, n, "no NCCL call recorded"); return; }
  const struct hcall *l = &f->last;
  const struct hcomm *c = comm_of((struct hfile *)f, l->comm);
  ncs_hang_time(h, rt_of(f, l->t_exit), t, sizeof t);
  if (c && l->seq)
    snprintf(b, n, "outside NCCL since %s; last call %s comm %016" PRIx64 " seq %" PRIu64 " returned %d", t,
             opname(l->op), c->comm_id, l->seq, l->rc);
  else
    snprintf(b, n, "outside NCCL since %s; last call %s returned %d", t, opname(l->op), l->rc);
}

/* Collective `seq` of communicator c in file f, if still remembered. */
static const struct hcall *recent_seq(const struct hcomm *c, uint64_t seq) {
  uint64_t n = c->ncoll < RECENT ? c->ncoll : RECENT;
  for (uint64_t i = 0; i < n; i++) {
    const struct hcall *k = &c->recent[(c->ncoll - 1 - i) % RECENT];
    if (k->seq == seq) return k;
  }
  return NULL;
}

/* GPU in-flight state of a call (thread, tcall) or of its group: since when (realtime), or 0. */
static int gpu_inflight(const struct hfile *f, const struct hcall *k, int64_t *since) {
  for (int i = 0; i < f->nsnap; i++) {
    const struct ncs_inflight *r = &f->snap[i];
    if (r->kind != NCS_INFLIGHT_GPU || r->thread != k->thread) continue;
    if ((r->key == 0 && r->tcall == k->tcall) || (r->key == 1 && k->group && r->tcall == k->group)) {
      *since = r->gpu_since ? rt_of(f, r->gpu_since) : 0;
      return 1;
    }
  }
  return 0;
}

/* The host in-flight collective of file f on communicator c (NULL none). */
static const struct ncs_inflight *host_inflight_on(const struct hfile *f, const struct hcomm *c) {
  for (int i = 0; i < f->nsnap; i++)
    if (f->snap[i].kind == NCS_INFLIGHT_HOST && f->snap[i].comm == c->idx && f->snap[i].seq &&
        ncs_op_kind(f->snap[i].op) == NCS_KIND_COLL)
      return &f->snap[i];
  return NULL;
}

static void desync_verdicts(struct ncs_hang *h) {
  if (!h->nmm) return;
  struct ncs_hang_verdict *v = add_verdict(h, NCS_HANG_DESYNC);
  if (!v) return;
  qsort(h->mm, h->nmm < MM_MAX ? (size_t)h->nmm : MM_MAX, sizeof *h->mm, mm_cmp);
  const struct mismatch *m0 = &h->mm[0]; /* the first mismatch: (h->m0_seq, h->m0_comm) */
  v->comm_id = m0->comm_id;
  v->seq = m0->seq;
  v->op = m0->a.op;
  /* who is odd out at the first mismatch: the ranks that differed from the signature kept,
   * unless they are most of the communicator (then the rank read first is); of two ranks
   * neither is: both are named, the lower one first */
  struct ncs_ranks *odd = &h->odd0;
  ncs_ranks_sort(odd);
  int nr = h->nranks0 > 0 ? h->nranks0 : odd->n + 1;
  if (nr == 2 && odd->n == 1) {
    ADD_MISSING(v, m0->rank_a);
    ADD_MISSING(v, m0->rank_b);
    ev(v, "comm %016" PRIx64 " seq %" PRIu64 ": its 2 ranks differ (no majority tells which one is odd): rank %d called %s count %" PRIu64
       " %s root %d, rank %d called %s count %" PRIu64 " %s root %d",
       m0->comm_id, m0->seq, m0->rank_a, opname(m0->a.op), m0->a.count, dtname(m0->a.dtype), m0->a.root, m0->rank_b,
       opname(m0->b.op), m0->b.count, dtname(m0->b.dtype), m0->b.root);
  } else {
    const struct ncs_seqsig *os = &h->odd0_sig, *ms = &h->ref0_sig;
    struct ncs_ranks one = {0};
    if (2 * odd->n > nr - 1 && odd->n > 1) {
      ncs_ranks_add(&one, h->ref0_rank);
      odd = &one;
      os = &h->ref0_sig;
      ms = &h->odd0_sig;
    }
    for (int k = 0; k < odd->n; k++) ADD_MISSING(v, odd->r[k]);
    char otxt[160];
    ncs_ranks_format(odd, otxt, sizeof otxt);
    ev(v, "comm %016" PRIx64 " seq %" PRIu64 ": rank%s %s (%d of %d) called %s count %" PRIu64 " %s root %d; the others called %s count %" PRIu64 " %s root %d",
       m0->comm_id, m0->seq, odd->n == 1 ? "" : "s", otxt, odd->n, nr, opname(os->op), os->count, dtname(os->dtype), os->root,
       opname(ms->op), ms->count, dtname(ms->dtype), ms->root);
    ncs_ranks_free(&one);
  }
  /* each mismatch (the first already said whole when the communicator has 2 ranks) */
  for (uint64_t i = nr == 2 && h->odd0.n == 1; i < h->nmm && i < MM_MAX; i++) {
    const struct mismatch *m = &h->mm[i];
    ev(v, "comm %016" PRIx64 " seq %" PRIu64 ": rank %d called %s count %" PRIu64 " %s root %d; rank %d called %s count %" PRIu64 " %s root %d",
       m->comm_id, m->seq, m->rank_a, opname(m->a.op), m->a.count, dtname(m->a.dtype), m->a.root, m->rank_b,
       opname(m->b.op), m->b.count, dtname(m->b.dtype), m->b.root);
  }
  if (h->nmm > MM_MAX) ev(v, "%" PRIu64 " mismatches in all", h->nmm);
  snprintf(v->next, sizeof v->next,
           "The ranks' programs diverged at the first mismatch: compare the code paths that issue collectives on "
           "that communicator (a rank-dependent branch, a different model or bucket layout, a skipped step); "
           "`ncclscope report` shows each call's call site, and PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL checks "
           "collective shapes across ranks.");
}

/* Init hangs: ranks in flight in CommInitRank* with the same unique id, waiting for the rest. */
static void init_verdicts(struct ncs_hang *h) {
  for (int i = 0; i < h->n; i++) {
    for (int s = 0; s < h->f[i].nsnap; s++) {
      const struct ncs_inflight *r0 = &h->f[i].snap[s];
      if (r0->kind != NCS_INFLIGHT_HOST || !(is_init_op(r0->op) || is_split_op(r0->op))) continue;
      /* handled by an earlier file with the same init */
      int seen = 0;
      for (int j = 0; j < i && !seen; j++)
        for (int t = 0; t < h->f[j].nsnap; t++)
          if (h->f[j].snap[t].kind == NCS_INFLIGHT_HOST && h->f[j].snap[t].key == r0->key &&
              h->f[j].snap[t].op == r0->op && h->f[j].snap[t].seq == r0->seq) seen = 1;
      if (seen) continue;
      int split = is_split_op(r0->op);
      /* who arrived, since when, seen waiting until when */
      int64_t first = 0, last_seen = 0;
      int nranks = split ? 0 : r0->nranks;
      unsigned char *in = calloc((size_t)h->n, 1);
      if (!in) return;
      int narr = 0;
      struct ncs_ranks arr = {0};
      for (int j = 0; j < h->n; j++) {
        const struct hfile *f = &h->f[j];
        for (int t = 0; t < f->nsnap; t++) {
          const struct ncs_inflight *r = &f->snap[t];
          if (r->kind != NCS_INFLIGHT_HOST || r->key != r0->key || r->op != r0->op || r->seq != r0->seq) continue;
          int64_t te = rt_of(f, r->t_enter), ts = rt_of(f, r->t_seen);
          if (!first || te < first) first = te;
          if (ts > last_seen) last_seen = ts;
          int rk = r->root;
          if (split) { const struct hcomm *pc = comm_of((struct hfile *)f, r->comm); rk = pc ? pc->rank : -1;
                       if (pc && pc->nranks > nranks) nranks = pc->nranks; }
          ncs_ranks_add(&arr, rk);
          in[j] = 1;
          narr++;
        }
      }
      if (last_seen - first < h->hang_ns) { free(in); ncs_ranks_free(&arr); continue; }
      struct ncs_hang_verdict *v = add_verdict(h, NCS_HANG_INIT);
      if (!v) { free(in); ncs_ranks_free(&arr); return; }
      ncs_ranks_sort(&arr);
      for (int k = 0; k < arr.n; k++) ADD_ENTERED(v, arr.r[k]);
      v->comm_id = r0->key;
      v->seq = r0->seq;
      v->op = r0->op;
      v->nranks = nranks;
      v->since_rt = first;
      v->waited_s = (double)(last_seen - first) / 1e9;
      /* who never arrived: the culprits, first */
      struct ncs_ranks miss = {0};
      for (int rk = 0; rk < nranks && rk < 1 << 20; rk++)
        if (!ncs_ranks_has(&arr, rk)) { ADD_MISSING(v, rk); ncs_ranks_add(&miss, rk); }
      char t[64], mtxt[200], atxt[120];
      ncs_hang_time(h, first, t, sizeof t);
      ncs_ranks_format(&miss, mtxt, sizeof mtxt);
      ncs_ranks_format(&arr, atxt, sizeof atxt);
      if (split)
        ev(v, "never arrived in %s of communicator %016" PRIx64 " (its split #%" PRIu64 "): %d of %d ranks: %s; %d arrived (ranks %s), the first at %s, seen waiting %.3f s",
           opname(r0->op), r0->key, r0->seq, miss.n, nranks, miss.n ? mtxt : "none", narr, atxt, t, v->waited_s);
      else
        ev(v, "never arrived in %s with unique id %016" PRIx64 ": %d of %d ranks: %s; %d arrived (ranks %s), the first at %s, seen waiting %.3f s",
           opname(r0->op), r0->key, miss.n, nranks, miss.n ? mtxt : "none", narr, atxt, t, v->waited_s);
      /* what each missing rank was doing (the first ones; all are in the list above and the data) */
      for (int m = 0; m < miss.n; m++) {
        int rk = miss.r[m];
        if (m >= 8) { ev(v, "... %d more ranks never arrived (listed above; all in --json's data.missing)", miss.n - m); break; }
        /* its trace: by rank in the parent (split), else by the launcher's rank */
        const struct hfile *g = NULL;
        for (int j = 0; j < h->n && !g; j++) {
          if (in[j]) continue;
          const struct hfile *f = &h->f[j];
          if (split) { const struct hcomm *pc = comm_by_id((struct hfile *)f, r0->key);
                       if (pc && pc->rank == rk && pc->children < r0->seq) g = f; }
          else if (f->env_rank == rk) g = f;
        }
        char b[400], w[96];
        if (g) {
          doing(h, g, b, sizeof b);
          who(g, w, sizeof w);
          ev(v, "rank %d never arrived (%s): %s", rk, w, b);
        } else {
          ev(v, "rank %d never arrived: no trace of it among the inputs (its process never called NCCL, or its trace is elsewhere)", rk);
        }
      }
      ncs_ranks_free(&miss);
      ncs_ranks_free(&arr);
      free(in);
      snprintf(v->next, sizeof v->next,
               "Find the missing ranks: were they started at all (launcher log, scheduler), are they stuck before "
               "NCCL (data loading, an earlier barrier) — `py-spy dump --pid` on them; check that every rank got the "
               "same unique id / MASTER_ADDR:MASTER_PORT and can reach rank 0 (firewall, NCCL_SOCKET_IFNAME), then "
               "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP.");
    }
  }
}

/* The entered sequence of file f on communicator c: its last collective, or the one in flight. */
static uint64_t entered_seq(const struct hfile *f, const struct hcomm *c) {
  uint64_t s = c->last_seq;
  const struct ncs_inflight *r = host_inflight_on(f, c);
  if (r && r->seq > s) s = r->seq;
  return s;
}

/* What the thread of rank c in file f is doing, for a file holding several ranks of c's
 * communicator (a rank per thread): the host call in flight on c, else its last collective on
 * c; the whole process's state (doing()) would be another thread's. */
static void doing_rank(const struct ncs_hang *h, const struct hfile *f, const struct hcomm *c, char *b, size_t n) {
  char t[64];
  const struct ncs_inflight *r = host_inflight_on(f, c);
  if (r) {
    ncs_hang_time(h, rt_of(f, r->t_enter), t, sizeof t);
    snprintf(b, n, "its thread is inside %s since %s (seq %" PRIu64 ")", opname(r->op), t, r->seq);
    return;
  }
  if (!c->ncoll) { snprintf(b, n, "its thread made no collective on this communicator"); return; }
  const struct hcall *l = &c->recent[(c->ncoll - 1) % RECENT];
  ncs_hang_time(h, rt_of(f, l->t_exit), t, sizeof t);
  snprintf(b, n, "its thread's last collective on this communicator, %s seq %" PRIu64 ", returned at %s", opname(l->op), l->seq, t);
}

/* A rank of a communicator: the file it lives in and its communicator there. A file may hold
 * several ranks of one communicator (a rank per thread, ncclCommInitAll): one member each. */
struct member { int fi; const struct hcomm *c; int shared; /* its file holds other ranks of it */ };

/* Hangs and dead ranks, communicator by communicator. */
static void comm_verdicts(struct ncs_hang *h) {
  for (int i = 0; i < h->n; i++) {
    for (int ci = 0; ci < h->f[i].ncomms; ci++) {
      const struct hcomm *c0 = &h->f[i].comms[ci];
      uint64_t id = c0->comm_id;
      int dup = 0;
      for (int j = 0; j < i && !dup; j++) if (comm_by_id(&h->f[j], id)) dup = 1;
      for (int k = 0; k < ci && !dup; k++) dup = h->f[i].comms[k].comm_id == id;
      if (dup || !id) continue;
      /* members */
      int nm = 0, cap = 0;
      for (int j = 0; j < h->n; j++)
        for (int k = 0; k < h->f[j].ncomms; k++) cap += h->f[j].comms[k].comm_id == id;
      struct member *mf = malloc((size_t)(cap ? cap : 1) * sizeof *mf);
      if (!mf) return;
      for (int j = 0; j < h->n; j++) {
        int first = nm;
        for (int k = 0; k < h->f[j].ncomms; k++)
          if (h->f[j].comms[k].comm_id == id) mf[nm++] = (struct member){j, &h->f[j].comms[k], 0};
        for (int k = first; k < nm; k++) mf[k].shared = nm - first > 1;
      }
      uint64_t smin = UINT64_MAX, smax = 0;
      for (int k = 0; k < nm; k++) {
        uint64_t s = entered_seq(&h->f[mf[k].fi], mf[k].c);
        if (s < smin) smin = s;
        if (s > smax) smax = s;
      }
      int nranks = c0->nranks;
      if (smax == 0 || (nm < 2 && nranks < 2)) { free(mf); continue; }
      uint64_t seq = smin + 1;
      int all_in = smin == smax;
      if (all_in) seq = smax;
      /* the stuck collective as the arrived ranks see it */
      int64_t first = 0, seen_until = 0, gpu_since = 0;
      const struct hcall *k0 = NULL;
      int any_unfinished = 0;
      for (int k = 0; k < nm; k++) {
        const struct hfile *f = &h->f[mf[k].fi];
        const struct hcomm *c = mf[k].c;
        if (entered_seq(f, c) < seq) continue;
        const struct ncs_inflight *r = host_inflight_on(f, c);
        int64_t te = 0;
        if (r && r->seq == seq) { te = rt_of(f, r->t_enter); any_unfinished = 1; }
        else {
          const struct hcall *k1 = recent_seq(c, seq);
          if (k1) {
            te = rt_of(f, k1->t_enter);
            if (!k0) k0 = k1;
            int64_t gs;
            if (gpu_inflight(f, k1, &gs)) { any_unfinished = 1; if (gs && (!gpu_since || gs < gpu_since)) gpu_since = gs; }
          }
        }
        if (te && (!first || te < first)) first = te;
        if (f->alive_rt > seen_until) seen_until = f->alive_rt;
      }
      if (!first) { free(mf); continue; }
      /* classify the ranks that never entered `seq`: dead (trace cut long before its peers'
       * last sign of life), late (alive at least hang_after after the first arrival), or not
       * proven (alive after the first arrival, but not long enough: a missing collective) */
      struct ncs_hang_verdict *v = NULL;
      int ndead = 0, nlate = 0, nsoon = 0, nlag = 0;
      int *cls = calloc((size_t)(nm ? nm : 1), sizeof *cls); /* 1 dead, 2 late, 3 soon, 4 lag (flush) */
      if (!cls) { free(mf); return; }
      for (int k = 0; k < nm; k++) {
        const struct hfile *f = &h->f[mf[k].fi];
        const struct hcomm *c = mf[k].c;
        int lag = entered_seq(f, c) < seq;
        /* a trace of one chunk so far has no period yet: take the longest the shim allows
         * (NCCLSCOPE_FLUSH_MS <= 1000), or a healthy rank's second chunk still to come would
         * read as death (watch on a job 0.5 s old, at the default 500 ms); after a heartbeat
         * alone the writer's next one comes a heartbeat period later (an idle rank: a slow
         * one not calling NCCL yet, never taken for a dead one) */
        int64_t beat = beat_ns(f);
        if (!beat) beat = 1000000000;
        if (f->quiet && beat < (int64_t)NCS_IDLE_BEAT_MS * 1000000) beat = (int64_t)NCS_IDLE_BEAT_MS * 1000000;
        int64_t grace = 2 * beat + 100000000;
        if (f->cut && seen_until - f->alive_rt > grace && (lag || all_in)) { cls[k] = 1; ndead++; }
        else if (lag && f->alive_rt - first >= h->hang_ns) { cls[k] = 2; nlate++; }
        else if (lag && f->alive_rt > first) { cls[k] = 3; nsoon++; }
        else if (lag) { cls[k] = 4; nlag++; }
      }
      int kind = ndead ? NCS_HANG_DEAD : NCS_HANG_STUCK;
      if (all_in && !ndead) {
        /* everyone entered: stuck only if the arrived ranks were seen waiting inside it long */
        if (!any_unfinished || seen_until - first < h->hang_ns) { free(mf); free(cls); continue; }
      } else if (!ndead && !nlate) {
        if (!nsoon) { free(mf); free(cls); continue; } /* flush lag: every lagging trace ends before the first arrival */
        kind = NCS_HANG_MISSING;
      }
      v = add_verdict(h, kind);
      if (!v) { free(mf); free(cls); return; }
      v->comm_id = id;
      v->seq = seq;
      v->nranks = nranks;
      v->since_rt = first;
      v->waited_s = (double)(seen_until - first) / 1e9;
      v->op = k0 ? k0->op : 0;
      char t[64], t2[64], w[96], b[400];
      ncs_hang_time(h, first, t, sizeof t);
      /* the culprits as one set: dead, then late (or not proven, for a missing collective) */
      int blame = kind == NCS_HANG_MISSING ? 3 : 2;
      struct ncs_ranks culprits = {0}, notrace = {0};
      for (int k = 0; k < nm; k++) if (cls[k] == 1 || cls[k] == blame) { ncs_ranks_add(&culprits, mf[k].c->rank); }
      for (int k = 0; k < nm; k++) if (cls[k] == 1) ADD_MISSING(v, mf[k].c->rank);
      for (int k = 0; k < nm; k++) if (cls[k] == blame) ADD_MISSING(v, mf[k].c->rank);
      if (nranks > nm) {
        /* ranks of the communicator with no trace: they never showed up at all */
        unsigned char *here = calloc((size_t)nranks, 1);
        for (int k = 0; here && k < nm; k++) {
          const struct hcomm *c = mf[k].c;
          if (c->rank >= 0 && c->rank < nranks) here[c->rank] = 1;
        }
        for (int r = 0; here && r < nranks; r++)
          if (!here[r]) { ADD_MISSING(v, r); ncs_ranks_add(&notrace, r); ncs_ranks_add(&culprits, r); }
        free(here);
      }
      ncs_ranks_sort(&culprits);
      char ctxt[200];
      ncs_ranks_format(&culprits, ctxt, sizeof ctxt);
      if (culprits.n)
        ev(v, "communicator %016" PRIx64 " (%d ranks), collective seq %" PRIu64 "%s%s: %s %d rank%s: %s; first entered at %s, ranks seen waiting %.3f s",
           id, nranks, seq, k0 ? " " : "", k0 ? opname(k0->op) : "",
           ndead && !nlate && !notrace.n ? "died before it:" : kind == NCS_HANG_MISSING ? "not entered (when the traces end) by" : "never entered by",
           culprits.n, culprits.n == 1 ? "" : "s", ctxt, t, v->waited_s);
      else
        ev(v, "communicator %016" PRIx64 " (%d ranks), collective seq %" PRIu64 "%s%s: every rank entered it and none finished; first entered at %s, ranks seen waiting %.3f s",
           id, nranks, seq, k0 ? " " : "", k0 ? opname(k0->op) : "", t, v->waited_s);
      /* each culprit, the first ones in full (dead first) */
      int shown = 0;
      for (int pass = 1; pass <= 2; pass++)
        for (int k = 0; k < nm; k++) {
          if (cls[k] != (pass == 1 ? 1 : blame)) continue;
          if (shown++ >= 8) continue;
          const struct hfile *f = &h->f[mf[k].fi];
          const struct hcomm *c = mf[k].c;
          who(f, w, sizeof w);
          if (mf[k].shared) doing_rank(h, f, c, b, sizeof b); else doing(h, f, b, sizeof b);
          ncs_hang_time(h, f->alive_rt, t2, sizeof t2);
          if (pass == 1)
            ev(v, "rank %d (%s): trace cut at %s (its last sign of life), %.3f s before its peers' last; it had %s seq %" PRIu64 "; last seen %s",
               c->rank, w, t2, (double)(seen_until - f->alive_rt) / 1e9, entered_seq(f, c) >= seq ? "entered" : "not entered",
               seq, b);
          else
            ev(v, "rank %d (%s) never entered seq %" PRIu64 " (its last: seq %" PRIu64 "), alive until %s (%.3f s after the first arrival): %s",
               c->rank, w, seq, entered_seq(f, c), t2, (double)(f->alive_rt - first) / 1e9, b);
        }
      if (shown > 8) ev(v, "... and %d more of the ranks above (all in --json's data.missing)", shown - 8);
      if (notrace.n) {
        char ntxt[160];
        ncs_ranks_format(&notrace, ntxt, sizeof ntxt);
        ev(v, "%d of the communicator's %d ranks have no trace among the inputs (ranks %s): they never entered as far as the traces show",
           notrace.n, nranks, ntxt);
      }
      ncs_ranks_free(&notrace);
      ncs_ranks_free(&culprits);
      /* lagging ranks not blamed: their traces end too soon to tell */
      struct ncs_ranks other = {0};
      for (int k = 0; k < nm; k++) if (cls[k] >= 3 && cls[k] != blame) ncs_ranks_add(&other, mf[k].c->rank);
      if (other.n) {
        char otxt[160];
        ncs_ranks_sort(&other);
        ncs_ranks_format(&other, otxt, sizeof otxt);
        ev(v, "ranks %s (%d) had not entered it either when their traces end, too soon after the first arrival to tell (--hang-after %.1f s)",
           otxt, other.n, (double)h->hang_ns / 1e9);
      }
      ncs_ranks_free(&other);
      /* the ranks that arrived, grouped by what they were doing: one line per state */
      struct ncs_ranks grp[4] = {{0}};
      int64_t g_lo[4] = {0}, g_hi[4] = {0};
      for (int k = 0; k < nm; k++) {
        const struct hfile *f = &h->f[mf[k].fi];
        const struct hcomm *c = mf[k].c;
        if (entered_seq(f, c) < seq || cls[k] == 1) continue;
        ADD_ENTERED(v, c->rank);
        const struct ncs_inflight *r = host_inflight_on(f, c);
        const struct hcall *k1 = recent_seq(c, seq);
        int64_t gs = 0, te = 0;
        int g;
        if (r && r->seq == seq) { g = 0; te = rt_of(f, r->t_enter); }
        else if (k1 && gpu_inflight(f, k1, &gs)) { g = 1; te = rt_of(f, k1->t_enter); }
        else if (k1) { g = 2; te = rt_of(f, k1->t_enter); }
        else g = 3;
        ncs_ranks_add(&grp[g], c->rank);
        if (te && (!g_lo[g] || te < g_lo[g])) g_lo[g] = te;
        if (te > g_hi[g]) g_hi[g] = te;
      }
      static const char *const gwhat[4] = {"are still inside it on the host", "have it in flight on the GPU",
                                            "returned from it on the host (no GPU completion recorded, or the trace is cut)",
                                            "entered it (older than the collectives kept)"};
      for (int g = 0; g < 4; g++) {
        if (!grp[g].n) continue;
        ncs_ranks_sort(&grp[g]);
        if (grp[g].n <= 4) { /* a few: each on its own line, with its host and times */
          for (int k = 0; k < nm; k++) {
            const struct hfile *f = &h->f[mf[k].fi];
            const struct hcomm *c = mf[k].c;
            if (entered_seq(f, c) < seq || cls[k] == 1 || !ncs_ranks_has(&grp[g], c->rank)) continue;
            const struct ncs_inflight *r = host_inflight_on(f, c);
            const struct hcall *k1 = recent_seq(c, seq);
            int64_t gs = 0;
            who(f, w, sizeof w);
            if (g == 0) {
              ncs_hang_time(h, rt_of(f, r->t_enter), t2, sizeof t2);
              ev(v, "rank %d (%s) entered at %s and is still inside %s on the host", c->rank, w, t2, opname(r->op));
            } else if (g == 1) {
              char t3[64];
              gpu_inflight(f, k1, &gs);
              ncs_hang_time(h, rt_of(f, k1->t_enter), t2, sizeof t2);
              ncs_hang_time(h, gs, t3, sizeof t3);
              ev(v, "rank %d (%s) entered %s at %s; in flight on the GPU %s%s", c->rank, w, opname(k1->op), t2,
                 gs ? "since " : "(not started)", gs ? t3 : "");
            } else if (g == 2) {
              ncs_hang_time(h, rt_of(f, k1->t_enter), t2, sizeof t2);
              ev(v, "rank %d (%s) entered %s at %s (returned on the host; %s)", c->rank, w, opname(k1->op), t2,
                 f->cut ? "trace cut" : "no GPU completion recorded");
            } else {
              ev(v, "rank %d (%s) entered it (seq %" PRIu64 " is older than the last %d collectives kept)", c->rank, w, seq, RECENT);
            }
          }
          ncs_ranks_free(&grp[g]);
          continue;
        }
        char gtxt[160], t3[64];
        ncs_ranks_format(&grp[g], gtxt, sizeof gtxt);
        ncs_hang_time(h, g_lo[g], t2, sizeof t2);
        ncs_hang_time(h, g_hi[g], t3, sizeof t3);
        if (g_lo[g])
          ev(v, "%d rank%s entered it and %s: ranks %s; entered from %s to %s", grp[g].n, grp[g].n == 1 ? "" : "s",
             gwhat[g], gtxt, t2, t3);
        else
          ev(v, "%d rank%s %s: ranks %s", grp[g].n, grp[g].n == 1 ? "" : "s", gwhat[g], gtxt);
        ncs_ranks_free(&grp[g]);
      }
      free(cls);
      if (ndead)
        snprintf(v->next, sizeof v->next,
                 "Find why the rank died at its last sign of life: its exit status in the launcher's log, the kernel log "
                 "(`dmesg`: OOM killer, segfault, Xid), the node's health; its peers wait until NCCL's or the framework's "
                 "timeout (TORCH_NCCL_ASYNC_ERROR_HANDLING, NCCL_TIMEOUT) unless the job is restarted.");
      else if (kind == NCS_HANG_MISSING)
        snprintf(v->next, sizeof v->next,
                 "The traces end %.3f s after the first rank entered: too soon to call it a hang (--hang-after %.1f s). "
                 "If the job was killed there, look at the ranks that had not entered first (`py-spy dump --pid`, the "
                 "launcher's log); if it still runs, read again later (`ncclscope watch`).",
                 v->waited_s, (double)h->hang_ns / 1e9);
      else if (nlate)
        snprintf(v->next, sizeof v->next,
                 "Look at the ranks that never entered: `py-spy dump --pid` (or gdb) on them shows where the program "
                 "is — a rank-dependent branch, an exception swallowed, a data loader or checkpoint stall, a different "
                 "communicator it waits in (a cross-communicator deadlock). The ranks that entered wait until the "
                 "framework's timeout.");
      else
        snprintf(v->next, sizeof v->next,
                 "Every rank entered the collective and none finished: check for a desync at or before this sequence "
                 "number, then the network (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET, IB counters, `dmesg` Xid errors).");
      free(mf);
    }
  }
}

/* ---- bad endings: what the hang checks do not judge (docs/DOCTOR.md "Bad endings") ---- */

static const char *rc_name(int rc) {
  static const char *n[] = {"success", "unhandled cuda error", "unhandled system error", "internal error",
                            "invalid argument", "invalid usage", "remote error", "in progress"};
  return rc >= 0 && rc < 8 ? n[rc] : "unknown error";
}
/* "rank R (host H pid P)" by the launcher's rank when the process has no communicator. */
static void who_rank(const struct hfile *f, char *b, size_t n) {
  int r = f->env_rank;
  for (int k = 0; k < f->ncomms; k++) if (f->comms[k].nranks > 0) { r = f->comms[k].rank; break; }
  if (r >= 0) snprintf(b, n, "rank %d (host %s pid %u)", r, f->host, f->pid);
  else snprintf(b, n, "host %s pid %u", f->host, f->pid);
}

static void init_failed_verdict(struct ncs_hang *h) {
  struct ncs_hang_verdict *v = NULL;
  int nfail = 0, none = 0;
  char t[64], w[128];
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    if (!f->ninit_failed) continue;
    if (!v && !(v = add_verdict(h, NCS_HANG_INIT_FAILED))) return;
    nfail++;
    none += !f->ninit_ok;
    if (!v->since_rt || rt_of(f, f->init_t) < v->since_rt) v->since_rt = rt_of(f, f->init_t);
    if (!v->op) v->op = f->init_op ? f->init_op : NCS_OP_CommInitRank;
    ADD_MISSING(v, f->env_rank);
    ncs_hang_time(h, rt_of(f, f->init_t), t, sizeof t);
    who_rank(f, w, sizeof w);
    ev(v, "%s: %s returned %d (%s) at %s%s%s%s; %s", w, opname(f->init_op ? f->init_op : NCS_OP_CommInitRank),
       f->init_rc, rc_name(f->init_rc), t, f->warn[0] ? "; NCCL said: \"" : "", f->warn, f->warn[0] ? "\"" : "",
       f->ninit_ok ? "a later init made a communicator" : "no communicator was made");
  }
  if (!v) return;
  ev(v, "%d of %d processes had an init fail; %d of them made no communicator at all", nfail, h->n, none);
  snprintf(v->next, sizeof v->next,
           "Read NCCL's own error above (and all of it with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT): \"CUDA driver "
           "version is insufficient\" means the driver is older than the CUDA runtime NCCL was built with (or there is "
           "no GPU driver: `nvidia-smi`); \"unhandled system error\" is usually the network or shared memory (/dev/shm "
           "size in containers); \"invalid usage\" a rank/nranks/unique id mismatch between ranks.");
}

static void init_aborted_verdict(struct ncs_hang *h) {
  struct ncs_hang_verdict *v = NULL;
  char t[64], w[128];
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    if (!f->nb_aborted) continue;
    if (!v && !(v = add_verdict(h, NCS_HANG_INIT_ABORTED))) return;
    if (!v->comm_id) v->comm_id = f->nb_aborted_id;
    ADD_MISSING(v, f->env_rank);
    ncs_hang_time(h, rt_of(f, f->nb_aborted_t), t, sizeof t);
    who_rank(f, w, sizeof w);
    ev(v, "%s: communicator %016" PRIx64 " aborted at %s while its non-blocking init was still in progress (%d such "
          "init%s in this process)", w, f->nb_aborted_id, t, f->nb_aborted, f->nb_aborted == 1 ? "" : "s");
  }
  if (!v) return;
  snprintf(v->next, sizeof v->next,
           "The application gave up on a non-blocking init (ncclCommAbort while ncclCommGetAsyncError still said "
           "ncclInProgress): usually its own timeout. Look at why the init did not complete: ranks that never "
           "arrived (`ncclscope doctor` on every rank's trace), NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP.");
}

/* A communicator some rank aborted or revoked while a collective on it was not done: its
 * ranks entered different numbers of collectives, or one returned an error. */
static void comm_aborted_verdict(struct ncs_hang *h) {
  struct ncs_hang_verdict *v = NULL;
  char t[64], w[128];
  for (int i = 0; i < h->n; i++) {
    for (int ci = 0; ci < h->f[i].ncomms; ci++) {
      const struct hcomm *c0 = &h->f[i].comms[ci];
      if (!c0->abort_op || !c0->comm_id) continue;
      int dup = 0; /* judged at the first file that ended it so */
      for (int j = 0; j <= i && !dup; j++)
        for (int k = 0; k < h->f[j].ncomms && !dup; k++) {
          const struct hcomm *c = &h->f[j].comms[k];
          if (c == c0) break;
          dup = c->comm_id == c0->comm_id && c->abort_op;
        }
      if (dup) continue;
      uint64_t smin = UINT64_MAX, smax = 0;
      const struct hfile *errf = NULL;
      const struct hcomm *errc = NULL;
      int nm = 0;
      for (int j = 0; j < h->n; j++)
        for (int k = 0; k < h->f[j].ncomms; k++) {
          const struct hcomm *c = &h->f[j].comms[k];
          if (c->comm_id != c0->comm_id) continue;
          nm++;
          uint64_t s = entered_seq(&h->f[j], c);
          if (s < smin) smin = s;
          if (s > smax) smax = s;
          if (c->err_rc && !errc) { errc = c; errf = &h->f[j]; }
        }
      int partial = smax > smin || (c0->nranks > nm && smax > 0);
      if (!partial && !errc) continue;
      if (!v && !(v = add_verdict(h, NCS_HANG_COMM_ABORTED))) return;
      if (!v->comm_id) { v->comm_id = c0->comm_id; v->seq = smax; v->nranks = c0->nranks; }
      ncs_hang_time(h, rt_of(&h->f[i], c0->end_t), t, sizeof t);
      who_rank(&h->f[i], w, sizeof w);
      struct ncs_ranks rin = {0}, rout = {0};
      for (int j = 0; j < h->n; j++)
        for (int k = 0; k < h->f[j].ncomms; k++) {
          const struct hcomm *c = &h->f[j].comms[k];
          if (c->comm_id != c0->comm_id) continue;
          ncs_ranks_add(entered_seq(&h->f[j], c) >= smax ? &rin : &rout, c->rank);
        }
      ncs_ranks_sort(&rin);
      ncs_ranks_sort(&rout);
      char in[120], out[160];
      ncs_ranks_format(&rin, in, sizeof in);
      ncs_ranks_format(&rout, out, sizeof out);
      int nout = rout.n;
      if (partial && v->nmissing == 0) for (int k = 0; k < rout.n; k++) ADD_MISSING(v, rout.r[k]);
      if (partial)
        ev(v, "communicator %016" PRIx64 " (%d ranks) %s by %s at %s: collective seq %" PRIu64 " never entered by %s%s; "
              "entered by ranks %s",
           c0->comm_id, c0->nranks, c0->abort_op == NCS_OP_CommAbort ? "aborted" : "revoked", w, t, smax,
           nout ? (nout == 1 ? "rank " : "ranks ") : "", nout ? out : "the ranks with no trace among the inputs", in);
      else
        ev(v, "communicator %016" PRIx64 " (%d ranks) %s by %s at %s", c0->comm_id, c0->nranks,
           c0->abort_op == NCS_OP_CommAbort ? "aborted" : "revoked", w, t);
      ncs_ranks_free(&rin);
      ncs_ranks_free(&rout);
      if (errc) {
        who_rank(errf, w, sizeof w);
        ev(v, "  %s: %s seq %" PRIu64 " on it returned %d (%s)%s%s%s", w, opname(errc->err_op), errc->err_seq, errc->err_rc,
           rc_name(errc->err_rc), errf->warn[0] ? "; NCCL said: \"" : "", errf->warn, errf->warn[0] ? "\"" : "");
      }
    }
  }
  if (!v) return;
  snprintf(v->next, sizeof v->next,
           "The collective in flight when the communicator was aborted never completed on every rank: its results "
           "are not valid. Find why the application aborted (a timeout of its own, TORCH_NCCL_ASYNC_ERROR_HANDLING, an "
           "error on another rank) and why the ranks that never entered it did not: `py-spy dump --pid`, the launcher's log.");
}

/* Traces cut while inside an NCCL call, when no hang check judged the job: killed there, or
 * still running; either way not healthy yet. */
static void in_flight_verdict(struct ncs_hang *h) {
  for (int i = 0; i < h->nv; i++) if (h->v[i].kind <= NCS_HANG_STUCK) return; /* the hang checks said what happened */
  struct ncs_hang_verdict *v = NULL;
  char t[64], t2[64], w[128];
  int n = 0;
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    if (!f->cut || f->read_rc == 2) continue;
    const struct ncs_inflight *r = NULL;
    for (int k = 0; k < f->nsnap && !r; k++) if (f->snap[k].kind == NCS_INFLIGHT_HOST) r = &f->snap[k];
    if (!r) continue;
    if (!v && !(v = add_verdict(h, NCS_HANG_IN_FLIGHT))) return;
    n++;
    int64_t since = rt_of(f, r->t_enter);
    if (!v->since_rt || since < v->since_rt) { v->since_rt = since; v->op = r->op; }
    ADD_ENTERED(v, f->env_rank);
    ncs_hang_time(h, since, t, sizeof t);
    ncs_hang_time(h, f->alive_rt, t2, sizeof t2);
    who_rank(f, w, sizeof w);
    double in_s = r->t_seen > r->t_enter ? (double)(r->t_seen - r->t_enter) / 1e9 : 0.0;
    if (r->seq && ncs_op_kind(r->op) == NCS_KIND_COLL)
      ev(v, "%s: its trace ends inside %s seq %" PRIu64 ", in flight since %s (%.3f s when last seen); last sign of life %s",
         w, opname(r->op), r->seq, t, in_s, t2);
    else
      ev(v, "%s: its trace ends inside %s, in flight since %s (%.3f s when last seen); last sign of life %s", w,
         opname(r->op), t, in_s, t2);
  }
  if (!v) return;
  v->waited_s = 0;
  ev(v, "%d process(es) ended inside NCCL; not judged a hang: seen waiting less than --hang-after (%.1f s), or no peer's "
        "trace shows it waiting", n, (double)h->hang_ns / 1e9);
  snprintf(v->next, sizeof v->next,
           "If the job is still running, read again later (`ncclscope watch`); if it was killed, the call it was in "
           "had not returned: see the launcher's log for why it was killed (its own timeout?), and rerun with a "
           "longer timeout or NCCL_DEBUG=INFO to see where NCCL waits.");
}

/* Calls the shim could not write because the trace's file system was full (DROP reason 7:
 * the shim keeps room for its final accounting, docs/SHIM.md "Files and write errors"). */
static void calls_lost_verdict(struct ncs_hang *h) {
  uint64_t total = 0, in_trace = 0;
  int nf = 0;
  for (int i = 0; i < h->n; i++) if (h->f[i].lost_full) { total += h->f[i].lost_full; nf++; }
  if (!total) return;
  struct ncs_hang_verdict *v = add_verdict(h, NCS_HANG_CALLS_LOST);
  if (!v) return;
  for (int i = 0; i < h->n; i++) in_trace += h->f[i].lost_full ? h->f[i].calls : 0;
  ev(v, "%" PRIu64 " calls lost: trace filesystem full (%d process%s; %" PRIu64 " of their calls are in the traces)", total,
     nf, nf == 1 ? "" : "es", in_trace);
  char w[128];
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    if (!f->lost_full) continue;
    who_rank(f, w, sizeof w);
    ADD_MISSING(v, f->env_rank);
    ev(v, "%s: %" PRIu64 " calls in its trace, %" PRIu64 " lost: file system full%s; %s", w, f->calls, f->lost_full,
       f->lost_ring ? " (and more dropped with its buffer full)" : "",
       f->complete ? "the process ended normally (its final chunk is there)" : "its trace is cut");
  }
  snprintf(v->next, sizeof v->next,
           "Give the traces room: NCCLSCOPE_DIR on a file system with free space (a few MB per process per "
           "million calls, plus 6 MiB + 12 MiB per calling thread while it runs: docs/SHIM.md), then run again; "
           "every figure of this run misses the lost calls.");
}

/* Puts the verdict's ranks (missing, else entered) as ranges before its per-process lines, so
 * the culprits are named first whatever the count; the line pushed past the cap is counted. */
static void lead_with_ranks(struct ncs_hang_verdict *v, const char *what) {
  int n = v->nmissing ? v->nmissing : v->nentered;
  const int *src = v->nmissing ? v->missing : v->entered;
  int cap = v->nmissing ? v->capmissing : v->capentered;
  if (n < 2 || !src) return;
  struct ncs_ranks s = {0};
  for (int k = 0; k < listed(n, cap); k++) ncs_ranks_add(&s, src[k]);
  ncs_ranks_sort(&s);
  char txt[240];
  ncs_ranks_format(&s, txt, sizeof txt);
  if (v->nevidence == NCS_HANG_EVIDENCE) { v->nevidence--; v->more++; }
  memmove(v->evidence[1], v->evidence[0], (size_t)v->nevidence * sizeof v->evidence[0]);
  snprintf(v->evidence[0], sizeof v->evidence[0], "%d %s: ranks %s", n, what, txt);
  v->nevidence++;
  ncs_ranks_free(&s);
}

static int cmp_rank(const void *a, const void *b) {
  const struct ncs_hang_rank *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  int c = strcmp(x->host, y->host);
  if (c) return c;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}
static int cmp_verdict(const void *a, const void *b) {
  const struct ncs_hang_verdict *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->since_rt < y->since_rt ? -1 : x->since_rt > y->since_rt;
}

static void build_ranks(struct ncs_hang *h) {
  h->ranks = calloc((size_t)(h->n ? h->n : 1), sizeof *h->ranks);
  if (!h->ranks) return;
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    struct ncs_hang_rank *r = &h->ranks[i];
    r->path = f->path;
    snprintf(r->host, sizeof r->host, "%s", f->host);
    r->pid = f->pid;
    r->rank = f->env_rank;
    /* the primary communicator: the largest, ties the lowest comm_id; a process holding several
     * of its ranks (a rank per thread) is listed under the lowest */
    const struct hcomm *best = NULL;
    for (int k = 0; k < f->ncomms; k++) {
      const struct hcomm *c = &f->comms[k];
      if (!best || c->nranks > best->nranks || (c->nranks == best->nranks && c->comm_id < best->comm_id) ||
          (c->comm_id == best->comm_id && c->rank < best->rank)) best = c;
    }
    if (best && best->nranks > 0) { r->rank = best->rank; r->nranks = best->nranks; }
    r->complete = f->complete;
    r->cut = f->cut && f->read_rc != 1;
    r->damaged = f->read_rc == 1;
    r->alive_rt = f->alive_rt;
    r->calls = f->calls;
    /* last collective that returned */
    int64_t lt = 0;
    for (int k = 0; k < f->ncomms; k++) {
      const struct hcomm *c = &f->comms[k];
      if (!c->ncoll) continue;
      const struct hcall *l = &c->recent[(c->ncoll - 1) % RECENT];
      int64_t t = rt_of(f, l->t_exit);
      if (t >= lt) { lt = t; r->has_last = 1; r->last_op = l->op; r->last_seq = l->seq; r->last_comm_id = c->comm_id; r->last_exit_rt = t; }
    }
    /* in flight: the host call first, else the oldest unfinished GPU work */
    for (int k = 0; k < f->nsnap; k++) {
      const struct ncs_inflight *q = &f->snap[k];
      if (q->kind == NCS_INFLIGHT_HOST) {
        const struct hcomm *c = comm_of((struct hfile *)f, q->comm);
        r->inflight = 1; r->in_op = q->op; r->in_seq = q->seq; r->in_comm_id = c ? c->comm_id : q->key;
        r->in_since_rt = rt_of(f, q->t_enter);
        break;
      }
      if (q->kind == NCS_INFLIGHT_GPU && (!r->inflight || rt_of(f, q->t_enter) < r->in_since_rt)) {
        const struct hbyt *k1 = &f->byt[q->tcall % BYTCALL];
        r->inflight = 2;
        r->in_since_rt = q->gpu_since ? rt_of(f, q->gpu_since) : rt_of(f, q->t_enter);
        if (q->key == 0 && k1->tcall == q->tcall && k1->thread == q->thread) {
          const struct hcomm *c = comm_of((struct hfile *)f, k1->comm);
          r->in_op = k1->op; r->in_seq = k1->seq; r->in_comm_id = c ? c->comm_id : 0;
        } else { r->in_op = NCS_OP_GroupEnd; r->in_seq = 0; r->in_comm_id = 0; }
      }
    }
  }
  if (h->n > 1) qsort(h->ranks, (size_t)h->n, sizeof *h->ranks, cmp_rank);
}

static void free_verdicts(struct ncs_hang *h) {
  for (int i = 0; i < h->nv; i++) { free(h->v[i].entered); free(h->v[i].missing); free(h->v[i].lost_per); }
  h->nv = 0;
}

static int cmp_lost(const void *a, const void *b) {
  const struct ncs_hang_lost *x = a, *y = b;
  return x->rank != y->rank ? (x->rank < y->rank ? -1 : 1) : (x->s < y->s ? -1 : x->s > y->s);
}

/* The time a stuck job lost: each process seen alive after the stuck collective began, from
 * then to its last sign of life; a line of evidence says it. */
static void time_lost(struct ncs_hang *h, struct ncs_hang_verdict *v) {
  if (!v->since_rt || !(v->kind == NCS_HANG_DESYNC || v->kind == NCS_HANG_DEAD || v->kind == NCS_HANG_INIT ||
                        v->kind == NCS_HANG_STUCK))
    return;
  if (!(v->lost_per = malloc((size_t)(h->n > 0 ? h->n : 1) * sizeof *v->lost_per))) return;
  double run = 0;
  for (int i = 0; i < h->n; i++) {
    const struct hfile *f = &h->f[i];
    if (f->alive_rt <= v->since_rt) continue;
    double s = (double)(f->alive_rt - v->since_rt) / 1e9;
    v->lost_per[v->lost_n++] = (struct ncs_hang_lost){f->env_rank, s};
    v->lost_s += s;
    if (s > v->lost_max_s) v->lost_max_s = s;
    if (v->lost_n == 1 || s < v->lost_min_s) v->lost_min_s = s;
    if (f->created_rt && f->created_rt < f->alive_rt) run += (double)(f->alive_rt - f->created_rt) / 1e9;
  }
  if (!v->lost_n) return;
  qsort(v->lost_per, (size_t)v->lost_n, sizeof *v->lost_per, cmp_lost);
  v->lost_share = run > 0 ? v->lost_s / run : 0;
  ev(v, "time lost: %.3f s per process from the stuck collective's start to the end of its trace (%.3f to %.3f s over %d "
        "process%s), %.3f process-s in total, %.0f%% of their traced time",
     v->lost_max_s, v->lost_min_s, v->lost_max_s, v->lost_n, v->lost_n == 1 ? "" : "es", v->lost_s, 100.0 * v->lost_share);
}

void ncs_hang_finish(struct ncs_hang *h) {
  free(h->ranks);
  h->ranks = NULL;
  free_verdicts(h);
  h->origin = 0;
  for (int i = 0; i < h->n; i++)
    if (h->f[i].created_rt && (!h->origin || h->f[i].created_rt < h->origin)) h->origin = h->f[i].created_rt;
  desync_verdicts(h);
  init_verdicts(h);
  comm_verdicts(h);
  init_failed_verdict(h);
  init_aborted_verdict(h);
  comm_aborted_verdict(h);
  in_flight_verdict(h);
  calls_lost_verdict(h);
  for (int i = 0; i < h->nv; i++) {
    struct ncs_hang_verdict *v = &h->v[i];
    if (v->kind == NCS_HANG_INIT_FAILED) lead_with_ranks(v, "processes had an init fail");
    else if (v->kind == NCS_HANG_INIT_ABORTED) lead_with_ranks(v, "processes aborted a non-blocking init");
    else if (v->kind == NCS_HANG_IN_FLIGHT) lead_with_ranks(v, "processes ended inside NCCL");
    else if (v->kind == NCS_HANG_CALLS_LOST) lead_with_ranks(v, "processes lost calls (file system full)");
    time_lost(h, v);
  }
  if (h->nv > 1) qsort(h->v, (size_t)h->nv, sizeof *h->v, cmp_verdict);
  build_ranks(h);
}

int ncs_hang_nverdicts(const struct ncs_hang *h) { return h->nv; }
const struct ncs_hang_verdict *ncs_hang_verdict_at(const struct ncs_hang *h, int i) { return &h->v[i]; }
int ncs_hang_nranks(const struct ncs_hang *h) { return h->ranks ? h->n : 0; }
const struct ncs_hang_rank *ncs_hang_rank_at(const struct ncs_hang *h, int i) { return &h->ranks[i]; }
int64_t ncs_hang_origin(const struct ncs_hang *h) { return h->origin; }

void ncs_hang_free(struct ncs_hang *h) {
  if (!h) return;
  if (h->f) for (int i = 0; i < h->n; i++) { free(h->f[i].comms); free(h->f[i].ps); }
  pthread_mutex_destroy(&h->mu);
  free(h->f);
  for (int i = 0; i < h->ngc; i++) ncs_seqsigs_free(&h->gc[i].sig);
  free(h->gc);
  ncs_ranks_free(&h->odd0);
  free_verdicts(h);
  free(h->v);
  free(h->ranks);
  free(h->vx);
  free(h);
}

/* The hang checks' verdicts, first (what stops a job is what to read first). */
void ncs_hang_to_doctor(const struct ncs_hang *h, struct ncs_doctor *d) {
  int k = ncs_hang_nverdicts(h);
  if (!k) return;
  struct ncs_verdict *v = realloc(d->v, (size_t)(d->nv + k) * sizeof *v);
  if (!v) return;
  memmove(v + k, v, (size_t)d->nv * sizeof *v);
  for (int i = 0; i < k; i++) {
    const struct ncs_hang_verdict *hv = ncs_hang_verdict_at(h, i);
    memset(&v[i], 0, sizeof v[i]);
    v[i].id = hv->id;
    v[i].title = hv->title;
    v[i].problem = hv->kind != NCS_HANG_MISSING; /* too soon to call a hang: a note */
    v[i].hang = hv;
    for (int r = 0; r < listed(hv->nmissing, hv->capmissing); r++) ncs_ranks_add(&v[i].ranks, hv->missing[r]);
    ncs_ranks_sort(&v[i].ranks);
    v[i].nevidence = hv->nevidence < NCS_VERDICT_EVIDENCE ? hv->nevidence : NCS_VERDICT_EVIDENCE;
    for (int e = 0; e < v[i].nevidence; e++) snprintf(v[i].evidence[e], sizeof v[i].evidence[e], "%s", hv->evidence[e]);
    v[i].more = hv->more + hv->nevidence - v[i].nevidence;
    snprintf(v[i].next, sizeof v[i].next, "%s", hv->next);
  }
  d->v = v;
  d->nv += k;
  d->cap = d->nv;
}

