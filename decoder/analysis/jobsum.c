/* jobsum.c — the job summary, plugged into the loader's read (contract in jobsum.h). */
#include "analysis/jobsum.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"
#include "io/nccllog.h"
#include "model/connowner.h"

void ncs_tmask_name(unsigned mask, char *buf, size_t len) {
  if (!len) return;
  buf[0] = 0;
  if (!mask) { snprintf(buf, len, "?"); return; }
  static const int order[] = {NCS_TC_NET, NCS_TC_COLLNET, NCS_TC_NVLS, NCS_TC_P2P, NCS_TC_SHM, NCS_TC_UNKNOWN};
  size_t used = 0;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    if (!(mask & (1u << order[i]))) continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", ncs_tclass_name(order[i]));
    if (n < 0 || (size_t)n >= len - used) break;
    used += (size_t)n;
  }
}

struct lcomm { uint64_t comm_id; int rank, nranks; unsigned mask, tmask_stream; char tname[24]; struct ncs_rule_op rule[NCS_OP_LIMIT]; };
/* mask: transports of its connection lines (settled at the file's end); tmask_stream and tname:
 * those seen so far in the stream, for the calls' events; rule: ncs_rule_ops of nranks, made
 * once per communicator instead of a division and two switches a call */

#define MEMO 32
#define MEMO_FULL 24
struct sum;
struct sfile {                /* one file's summary state */
  struct sum *S;
  int file;
  struct ncs_jrank *r;
  const struct ncs_aligner *al; /* the loader's, for the times of COMM records */
  struct lcomm *comms;
  size_t ncomms;
  uint32_t last_comm;
  struct ncs_cown *own;       /* whose each connection line is, settled when the file ends */
  int have_first;
  int topo_state;             /* 0 undecided, 1 keeps its host's topology, -1 another file does */
  struct ncs_strag *strag;    /* the job's straggler engine, NULL when not run */
  struct ncs_strag_arrival *batch; /* arrivals for the straggler engine, handed over at the end
                                      of each chunk (then freed: only files being read hold one) */
  size_t nbatch;
  struct sizememo {                /* what the calls of one (communicator index, op, datatype,
                                      count) come to, made at the first: a job calls few sizes */
    uint64_t count, bytes;
    uint32_t comm, datatype, op;   /* comm and datatype adjacent: compared as one word */
    int bucket, idx;               /* idx in r->ops, -1 empty (no row: out of memory) */
    double bb, steps;
    struct ncs_opstat *st;         /* &r->ops[idx] (set again when r->ops moves) */
    const struct lcomm *lc;        /* lc_get of comm, &lc_none for NULL (f->comms moves and
                                      changes only with a COMM record) */
  } memo[MEMO];                    /* open addressing by (op, count), at most MEMO_FULL used (then
                                      emptied); emptied by every COMM record */
  int nmemo;
};
_Static_assert(offsetof(struct sizememo, datatype) == offsetof(struct sizememo, comm) + 4, "comm, datatype");
#define BATCH 512

struct sum {
  struct ncs_jobdata *job;
  struct sfile *f;            /* [n] */
  const struct ncs_load_opts *o; /* the caller's plug-ins */
  const struct ncs_jobsum_events *ev;
  struct ncs_rule_op rule0[NCS_OP_LIMIT]; /* ncs_rule_ops of a call without a communicator (0 ranks) */
  pthread_mutex_t mu;         /* serialises the events; the comm masks; the topology keepers */
  struct cmask { uint64_t comm_id; unsigned mask; } *cm; /* transports seen per communicator */
  int ncm, capcm;
  struct tkeep { char *host; int file; } *topo_hosts; /* per host, the file that keeps its topology */
  int ntopo, captopo;
};

/* 1 when file should keep its host's topology: no file before it in file order keeps it so
 * far. In the end the first file of the host (in file order) that has one keeps it, whichever
 * thread asked first; a file it displaced drops its copy when the load ends (topo_settle). */
static int topo_claim(struct sum *S, const char *host, int file) {
  int mine = 1, i = 0;
  pthread_mutex_lock(&S->mu);
  while (i < S->ntopo && strcmp(S->topo_hosts[i].host, host)) i++;
  if (i < S->ntopo) {
    mine = file < S->topo_hosts[i].file;
    if (mine) S->topo_hosts[i].file = file;
  } else {
    if (S->ntopo == S->captopo) {
      int nc = S->captopo ? S->captopo * 2 : 16;
      struct tkeep *p = realloc(S->topo_hosts, (size_t)nc * sizeof *p);
      if (p) { S->topo_hosts = p; S->captopo = nc; }
    }
    char *h = S->ntopo < S->captopo ? strdup(host) : NULL;
    if (h) S->topo_hosts[S->ntopo++] = (struct tkeep){h, file}; else mine = 0;
  }
  pthread_mutex_unlock(&S->mu);
  return mine;
}

/* After the load: the topology copies of files their host's keeper displaced are dropped. */
static void topo_settle(struct sum *S) {
  for (int f = 0; f < S->job->n; f++) {
    struct ncs_jrank *r = &S->job->r[f];
    if (!r->topo) continue;
    int i = 0;
    while (i < S->ntopo && strcmp(S->topo_hosts[i].host, r->host)) i++;
    if (i < S->ntopo && S->topo_hosts[i].file == f) continue;
    free(r->topo);
    r->topo = NULL;
  }
}

/* Adds a file's transport classes of communicator comm_id (caller holds S->mu). */
static void cmask_add(struct sum *S, uint64_t id, unsigned mask) {
  for (int i = 0; i < S->ncm; i++) if (S->cm[i].comm_id == id) { S->cm[i].mask |= mask; return; }
  if (S->ncm == S->capcm) {
    int nc = S->capcm ? S->capcm * 2 : 16;
    struct cmask *p = realloc(S->cm, (size_t)nc * sizeof *p);
    if (!p) return;
    S->cm = p; S->capcm = nc;
  }
  S->cm[S->ncm].comm_id = id;
  S->cm[S->ncm++].mask = mask;
}
static unsigned cmask_of(const struct sum *S, uint64_t id) {
  for (int i = 0; i < S->ncm; i++) if (S->cm[i].comm_id == id) return S->cm[i].mask;
  return 0;
}

/* What a call without a communicator (or of one without ranks) reports: rank -1, transport "?". */
static const struct lcomm lc_none = {.rank = -1, .tname = "?"};
static struct lcomm *lc_get(struct sfile *f, uint32_t comm) {
  return comm && comm < f->ncomms && f->comms[comm].nranks ? &f->comms[comm] : NULL;
}

static struct ncs_opstat *opstat(struct ncs_jrank *r, uint32_t op, int bucket, uint64_t comm_id) {
  for (int i = r->nops - 1; i >= 0; i--)
    if (r->ops[i].op == op && r->ops[i].bucket == bucket && r->ops[i].comm_id == comm_id) return &r->ops[i];
  if (r->nops == r->capops) {
    int nc = r->capops ? r->capops * 2 : 16;
    struct ncs_opstat *p = realloc(r->ops, (size_t)nc * sizeof *p);
    if (!p) return NULL;
    r->ops = p; r->capops = nc;
  }
  struct ncs_opstat *s = &r->ops[r->nops++];
  memset(s, 0, sizeof *s);
  s->op = op; s->bucket = bucket; s->comm_id = comm_id;
  snprintf(s->transport, sizeof s->transport, "?"); /* set when every file is read */
  return s;
}

/* Hands a call to the caller's events (every call: collectives, point-to-point, groups,
 * registration, ...): on_file_call as it comes, on_call serialised; the event is left in *ev
 * for on_file_calls (s_aligned, at the run's end). runs_only (a constant): the caller knows
 * that on_file_calls is the only event (no test a call). */
static inline __attribute__((always_inline)) void emit_call(struct sfile *f, const struct ncs_aligned *a, const struct lcomm *lc, int64_t s, int64_t e,
                      uint64_t bytes, double busbytes, int bucket, struct ncs_jev *ev, int runs_only) {
  const struct ncs_jobsum_events *x = f->S->ev;
  if (!runs_only && (!x || (!x->on_call && !x->on_file_call && !x->on_file_calls))) return;
  *ev = (struct ncs_jev){.c = a->call, .a = a, .start = s, .end = e, .has_gpu = a->has_gpu, .bytes = bytes,
                         .comm_id = lc->comm_id, .busbytes = busbytes, .rank = lc->rank, .nranks = lc->nranks,
                         .bucket = bucket, .transport = lc->tname};
  if (runs_only) return;
  if (x->on_file_call) x->on_file_call(x->ctx, f->file, f->r, ev);
  if (!x->on_call) return;
  pthread_mutex_lock(&f->S->mu);
  x->on_call(x->ctx, f->file, f->r, ev);
  pthread_mutex_unlock(&f->S->mu);
}

static void batch_flush(struct sfile *f) {
  if (f->nbatch) ncs_strag_arrive_batch(f->S->job->strag, f->file, f->batch, f->nbatch);
  f->nbatch = 0;
  free(f->batch);
  f->batch = NULL;
}

static void memo_clear(struct sfile *f) {
  for (int i = 0; i < MEMO; i++) f->memo[i].idx = -1;
  f->nmemo = 0;
}

/* What a call of c's (communicator index, op, datatype, count) comes to, into a new entry of the
 * memo: its bytes, bus bytes (ncs_rule_busbytes), steps, size bucket and row (idx -1: none, out
 * of memory, and the entry stays empty). Returns the entry. */
__attribute__((noinline)) static struct sizememo *size_row(struct sfile *f, uint32_t h, const struct ncs_call *c) {
  struct ncs_jrank *r = f->r;
  const struct lcomm *lc = lc_get(f, c->comm);
  int nranks = lc ? lc->nranks : 0;
  if (f->nmemo >= MEMO_FULL) memo_clear(f);
  struct sizememo *m = &f->memo[h];
  while (m->idx >= 0) m = &f->memo[h = (h + 1) & (MEMO - 1)];
  const struct ncs_rule_op *ru = &(lc ? lc->rule : f->S->rule0)[c->op]; /* op < NCS_OP_LIMIT: its kind is known */
  double S = ncs_rule_S(c->op, c->count, c->datatype, nranks);
  int bucket = ncs_job_bucket(S);
  uint64_t comm_id = lc ? lc->comm_id : 0;
  struct ncs_opstat *was = r->ops, *st = opstat(r, c->op, bucket, comm_id);
  if (r->ops != was) /* moved: the other entries' rows with it */
    for (int i = 0; i < MEMO; i++) if (f->memo[i].idx >= 0) f->memo[i].st = &r->ops[f->memo[i].idx];
  *m = (struct sizememo){.st = st, .count = c->count, .bytes = ncs_rule_bytes(c->count, c->datatype), .comm = c->comm, .op = c->op,
                         .datatype = c->datatype, .bucket = bucket, .idx = st ? (int)(st - r->ops) : -1,
                         .bb = ru->fac > 0 ? S * ru->fac : 0, .steps = ru->steps, .lc = lc ? lc : &lc_none};
  f->nmemo += st != NULL;
  return m;
}

/* What a run's calls add to their rank's figures (its count, its GPU-timed calls, its window),
 * in locals while the run lasts: the events read none of them (only the rank's rank). */
struct runsum { int64_t t_first, t_last; uint64_t gpu_calls; int have; };

/* The op ids of collectives, and of collectives and point-to-point calls, as bits (ops.h): a
 * call's kind in a shift and a test rather than ncs_op_kind's table. */
#define JS_COLL_(id, Name, kind, bw) | ((kind) == NCS_KIND_COLL ? 1ull << (id) : 0)
#define JS_MOVE_(id, Name, kind, bw) | ((kind) == NCS_KIND_COLL || (kind) == NCS_KIND_P2P ? 1ull << (id) : 0)
static const uint64_t js_coll = 0 NCCLSCOPE_OPS(JS_COLL_), js_move = 0 NCCLSCOPE_OPS(JS_MOVE_);
_Static_assert(NCS_OP_LIMIT <= 64, "op ids fit the masks' 64 bits");

/* A call on the job clock. */
static inline __attribute__((always_inline)) void s_one(struct sfile *f, const struct ncs_aligned *a, struct ncs_jev *ev,
                                                        int runs_only, struct runsum *u) {
  const struct ncs_call *c = a->call;
  if (c->op >= 64 || !(js_move >> c->op & 1)) { /* not a collective or point-to-point: host interval only, no statistics */
    const struct lcomm *lc = lc_get(f, c->comm);
    emit_call(f, a, lc ? lc : &lc_none, a->enter, a->exit > a->enter ? a->exit : a->enter, 0, 0, 0, ev, runs_only);
    return;
  }
  int64_t s = a->has_gpu ? a->gpu_start : a->enter, e = a->has_gpu ? a->gpu_end : a->exit;
  if (e < s) e = s;
  u->gpu_calls += a->has_gpu != 0;
  double dt = (double)(e - s) / 1e9;
  uint32_t h = (uint32_t)((c->count ^ (uint64_t)c->op << 56) * 0x9e3779b97f4a7c15ull >> 59);
  struct sizememo *m = &f->memo[h];
  uint64_t cd = ncs_u32_pair(&c->comm); /* (comm, datatype) */
  while (m->idx >= 0 && (m->count != c->count || m->op != c->op || ncs_u32_pair(&m->comm) != cd))
    m = &f->memo[h = (h + 1) & (MEMO - 1)];
  if (m->idx < 0) m = size_row(f, h, c);
  const struct lcomm *lc = m->lc;
  struct ncs_opstat *st = m->st; /* NULL: no row */
  uint64_t bytes = m->bytes;
  double bb = m->bb;
  int bucket = m->bucket;
  if (st) {
    st->calls++; st->bytes += bytes; st->time_s += dt; st->busbytes += bb; st->steps += m->steps;
    if (dt > st->max_s) st->max_s = dt;
  }
  if (a->enter < u->t_first) u->t_first = a->enter;
  if (e > u->t_last) u->t_last = e;
  u->have = 1;
  if (f->strag && (js_coll >> c->op & 1)) {
    struct ncs_strag_arrival one, *x = &one;
    if (f->batch || (f->batch = malloc(BATCH * sizeof *f->batch))) x = &f->batch[f->nbatch++];
    x->comm = c->comm; x->op = c->op; x->datatype = c->datatype; x->root = c->root;
    x->seq = c->seq; x->count = c->count; x->t = a->has_gpu ? a->gpu_start : a->enter;
    x->has_gpu = a->has_gpu; x->gpu_end = a->gpu_end;
    if (x == &one) ncs_strag_arrive_batch(f->S->job->strag, f->file, x, 1); /* no memory for a batch */
    else if (f->nbatch == BATCH) {
      ncs_strag_arrive_batch(f->S->job->strag, f->file, f->batch, f->nbatch);
      f->nbatch = 0;
    }
  }
  emit_call(f, a, lc, s, e, bytes, bb, bucket, ev, runs_only);
}

/* A run of calls on the job clock (the loader's aligned hook). */
static void s_aligned(void *ctx, int file, const struct ncs_aligned *a, size_t n) {
  struct sfile *f = &((struct sum *)ctx)->f[file];
  struct ncs_jev ev[NCS_ALIGN_RUN];
  struct runsum u = {INT64_MAX, INT64_MIN, 0, 0};
  const struct ncs_jobsum_events *x = f->S->ev;
  if (x && x->on_file_calls && !x->on_file_call && !x->on_call) { /* compare's case: one copy without the tests */
    for (size_t i = 0; i < n; i++) s_one(f, &a[i], &ev[i], 1, &u);
  } else {
    for (size_t i = 0; i < n; i++) s_one(f, &a[i], &ev[i], 0, &u);
  }
  struct ncs_jrank *r = f->r;
  r->calls += n;
  r->gpu_calls += u.gpu_calls;
  if (u.have) { /* the window: min and max are the same taken a run at a time */
    if (!f->have_first || u.t_first < r->t_first) r->t_first = u.t_first;
    if (!f->have_first || u.t_last > r->t_last) r->t_last = u.t_last;
    f->have_first = 1;
  }
  if (x && x->on_file_calls) x->on_file_calls(x->ctx, file, f->r, ev, n);
}

static int v_process(void *ctx, const struct ncs_process *p) {
  struct sfile *f = ctx;
  const char *v;
  snprintf(f->r->host, sizeof f->r->host, "%s", (v = ncs_process_get(p, "host")) ? v : "");
  snprintf(f->r->nccl_version, sizeof f->r->nccl_version, "%s", (v = ncs_process_get(p, "nccl_version")) ? v : "");
  for (size_t i = 0; i < p->nkv; i++)
    if (!strcmp(p->kv[i].key, "cmdline")) {
      size_t n = p->kv[i].value_len < sizeof f->r->cmdline - 1 ? p->kv[i].value_len : sizeof f->r->cmdline - 1;
      for (size_t k = 0; k < n; k++) f->r->cmdline[k] = p->kv[i].value[k] ? p->kv[i].value[k] : ' ';
      f->r->cmdline[n] = 0;
    }
  f->r->pid = p->pid;
  if (f->r->rank < 0 && (v = ncs_process_get(p, "env.RANK"))) f->r->rank = atoi(v);
  ncs_strag_file_info(f->S->job->strag, f->file, f->r->host, p->pid);
  return 0;
}

static void comm_event(struct sfile *f, int is_end, uint32_t op, const struct lcomm *lc, uint64_t t) {
  if (!f->S->ev || !f->S->ev->on_comm || !lc) return;
  struct ncs_jcomm_ev e = {.is_end = is_end, .op = op, .comm_id = lc->comm_id, .rank = lc->rank,
                           .nranks = lc->nranks, .t = f->al ? ncs_aligner_time(f->al, t) : 0};
  pthread_mutex_lock(&f->S->mu);
  f->S->ev->on_comm(f->S->ev->ctx, f->file, f->r, &e);
  pthread_mutex_unlock(&f->S->mu);
}

static int v_comm(void *ctx, const struct ncs_comm *c) {
  struct sfile *f = ctx;
  if (c->comm >= 1u << 20) return 0;
  if (c->comm >= f->ncomms) {
    size_t n = c->comm + 8;
    struct lcomm *p = realloc(f->comms, n * sizeof *p);
    if (!p) return 0;
    memset(p + f->ncomms, 0, (n - f->ncomms) * sizeof *p);
    f->comms = p; f->ncomms = n;
  }
  struct lcomm *lc = &f->comms[c->comm];
  memo_clear(f); /* a communicator's ranks (its calls' bus bytes and bucket) may change */
  if (c->nranks < 1) return 0;
  /* a second COMM record for the index completes a non-blocking init (FORMAT.md) */
  int update = lc->nranks > 0 && lc->comm_id == c->comm_id;
  if (lc->nranks != c->nranks) ncs_rule_ops(lc->rule, c->nranks);
  lc->comm_id = c->comm_id; lc->rank = c->rank; lc->nranks = c->nranks;
  if (!update) snprintf(lc->tname, sizeof lc->tname, "?");
  f->last_comm = c->comm;
  /* the file's primary communicator: the largest, ties the lowest comm_id (not the order
   * threads recorded them in); a file holding several of its ranks is named by the lowest */
  struct ncs_jrank *r = f->r;
  int same = r->nranks == c->nranks && r->comm_id == c->comm_id;
  if (ncs_rc_ok(c->rc) && !update && same) {
    r->held++;
    if (c->rank > r->rank_hi) r->rank_hi = c->rank;
  }
  if (ncs_rc_ok(c->rc) && (c->nranks > r->nranks || (c->nranks == r->nranks && c->comm_id < r->comm_id) ||
                           (same && c->rank < r->rank))) {
    if (!same) { r->held = 1; r->rank_hi = c->rank; }
    r->rank = c->rank; r->nranks = c->nranks; r->comm_id = c->comm_id;
    free(r->tmat);
    r->tmat = NULL; r->tmat_n = 0;
    if (c->nranks <= 64 && (r->tmat = calloc((size_t)c->nranks, 1))) r->tmat_n = c->nranks;
  }
  ncs_strag_comm(f->S->job->strag, f->file, c);
  ncs_cown_comm(f->own, c);
  if (!update) comm_event(f, 0, c->init_op, lc, c->t_enter);
  return 0;
}

static int v_comm_end(void *ctx, const struct ncs_comm_end *e) {
  struct sfile *f = ctx;
  comm_event(f, 1, e->op, lc_get(f, e->comm), e->t_enter);
  return 0;
}
/* A run of calls (a stretch's, io/trace.h: no log line falls inside one): the calls in flight at
 * the kept connection lines. */
static int v_calls(void *ctx, const struct ncs_call *c, size_t n) {
  ncs_cown_calls(((struct sfile *)ctx)->own, c, n);
  return 0;
}

/* A connection line: its communicator is settled when the file ends (model/connowner.h);
 * until then the calls' transport names (on_call) take the latest communicator made. */
static int v_log(void *ctx, const struct ncs_log_line *l) {
  struct sfile *f = ctx;
  struct ncs_nl_rec rec;
  int kind = ncs_nl_parse(l->line, l->len, &rec);
  if (kind != NCS_NL_NONE) ncs_cown_line(f->own, &rec, l->t);
  if (kind != NCS_NL_TRANSPORT) return 0;
  int tc = rec.u.t.tclass;
  if (tc < 0 || tc > 7) return 0;
  f->r->tclass_mask |= 1u << tc;
  struct lcomm *lc = lc_get(f, f->last_comm);
  if (lc) {
    lc->tmask_stream |= 1u << tc;
    ncs_tmask_name(lc->tmask_stream, lc->tname, sizeof lc->tname);
  }
  return 0;
}

/* A connection line given to communicator `comm` of the file (ncs_cown_settle). */
static void conn_given(void *ctx, uint32_t comm, const struct ncs_tconn *c) {
  struct sfile *f = ctx;
  struct lcomm *lc = lc_get(f, comm);
  if (!lc || c->tclass < 0 || c->tclass > 7) return;
  lc->mask |= 1u << c->tclass;
  struct ncs_jrank *r = f->r;
  if (lc->comm_id == r->comm_id && lc->nranks == r->nranks && lc->rank == r->rank && r->tmat && c->to >= 0 &&
      c->to < r->tmat_n && c->dir != NCS_DIR_RECV)
    r->tmat[c->to] = (unsigned char)c->tclass;
}

/* A kernel on the job clock (the loader's aligned_kernel hook), to the caller's event. */
static void s_aligned_kernel(void *ctx, int file, const struct ncs_aligned_kernel *k) {
  struct sum *S = ctx;
  pthread_mutex_lock(&S->mu);
  S->ev->on_kernel(S->ev->ctx, file, S->f[file].r, k);
  pthread_mutex_unlock(&S->mu);
}

/* TOPO records: one file per host keeps its host's topology. */
static int v_raw(void *ctx, const struct ncs_raw *raw) {
  struct sfile *f = ctx;
  if (raw->type != NCS_REC_TOPO_GPU && raw->type != NCS_REC_TOPO_LINK) return 0;
  if (!f->topo_state) f->topo_state = topo_claim(f->S, f->r->host, f->file) ? 1 : -1;
  if (f->topo_state < 0) return 0;
  if (!f->r->topo) {
    if (!(f->r->topo = malloc(sizeof *f->r->topo))) return 0;
    ncs_topo_init(f->r->topo, f->r->host);
  }
  ncs_topo_add_raw(f->r->topo, raw->type, raw->body, raw->len);
  return 0;
}

/* The end of a chunk: the straggler arrivals it released go to the engine. */
static int v_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  batch_flush(ctx);
  return 0;
}

static void s_file_clock(void *ctx, int file, const struct ncs_aligner *al) { ((struct sum *)ctx)->f[file].al = al; }

static void s_file_visitor(void *ctx, int file, struct ncs_mux *m) {
  struct sum *S = ctx;
  struct sfile *f = &S->f[file];
  f->own = ncs_cown_new();
  m->v[m->n++] = (struct ncs_visitor){.ctx = f, .process = v_process, .comm = v_comm, .comm_end = v_comm_end,
                                      .calls = v_calls, .log_line = v_log, .raw = v_raw, .chunk = v_chunk};
  if (S->o && S->o->file_visitor) S->o->file_visitor(S->o->ctx, file, m);
}

/* The end of a file's read: its figures are settled. */
static void s_file_done(void *ctx, int file, int read_rc, const struct ncs_read_status *st) {
  struct sum *S = ctx;
  struct sfile *f = &S->f[file];
  batch_flush(f);
  ncs_strag_file_done(S->job->strag, file, st->truncated);
  ncs_cown_settle(f->own, conn_given, f);
  ncs_cown_free(f->own);
  f->own = NULL;
  pthread_mutex_lock(&S->mu);
  for (size_t k = 0; k < f->ncomms; k++) if (f->comms[k].nranks) cmask_add(S, f->comms[k].comm_id, f->comms[k].mask);
  pthread_mutex_unlock(&S->mu);
  free(f->comms);
  f->comms = NULL; f->ncomms = 0;
  f->al = NULL;
  if (S->o && S->o->file_done) S->o->file_done(S->o->ctx, file, read_rc, st);
}

static int cmp_opstat(const void *a, const void *b) {
  const struct ncs_opstat *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  if (x->bucket != y->bucket) return x->bucket - y->bucket;
  return strcmp(x->transport, y->transport);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* After the read: the loader's figures copied in, each row's transports, the job's rows. */
static void job_figures(struct sum *S, const struct ncs_jobread *R) {
  struct ncs_jobdata *J = S->job;
  J->origin = R->origin;
  J->lockstep = R->lockstep;
  for (int i = 0; i < J->n; i++) {
    struct ncs_jrank *r = &J->r[i];
    const struct ncs_fileread *x = &R->r[i];
    r->created_ns = x->created_ns;
    r->read_rc = x->read_rc; r->truncated = x->truncated;
    snprintf(r->error, sizeof r->error, "%s", x->error);
    r->dropped = x->dropped; r->gpu_unmatched = x->gpu_unmatched;
    r->clock_pairs = x->clock_pairs; r->clock_unc_ns = x->clock_unc_ns;
    r->clock_offset_ns = x->clock_offset_ns; r->clock_drift_ppm = x->clock_drift_ppm;
    r->from_profiler = x->from_profiler;
    r->profiler_calls = x->profiler_calls; r->profiler_gpu_timed = x->profiler_gpu_timed;
  }
  /* a collective is as fast as the slowest link of its communicator: each row gets the
   * transports every rank of its communicator reported */
  for (int i = 0; i < J->n; i++)
    for (int k = 0; k < J->r[i].nops; k++) {
      struct ncs_opstat *st = &J->r[i].ops[k];
      ncs_tmask_name(st->comm_id ? cmask_of(S, st->comm_id) : 0, st->transport, sizeof st->transport);
    }
  topo_settle(S);
  uint64_t calls = 0, gpu = 0, unc = 0;
  for (int i = 0; i < J->n; i++) {
    struct ncs_jrank *r = &J->r[i];
    gpu += r->gpu_calls;
    if (r->clock_unc_ns > unc) unc = r->clock_unc_ns;
    int dup = 0;
    for (int k = 0; k < i && !dup; k++) dup = !strcmp(J->r[k].host, r->host);
    if (!dup) J->hosts++;
    for (int k = 0; k < r->nops; k++) {
      const struct ncs_opstat *s = &r->ops[k];
      calls += s->calls;
      struct ncs_opstat *d = NULL;
      for (int m = 0; m < J->nops && !d; m++)
        if (J->ops[m].op == s->op && J->ops[m].bucket == s->bucket && !strcmp(J->ops[m].transport, s->transport)) d = &J->ops[m];
      if (!d) {
        struct ncs_opstat *p = realloc(J->ops, (size_t)(J->nops + 1) * sizeof *p);
        if (!p) continue;
        J->ops = p;
        d = &J->ops[J->nops++];
        *d = *s;
        continue;
      }
      d->calls += s->calls; d->bytes += s->bytes; d->time_s += s->time_s; d->busbytes += s->busbytes; d->steps += s->steps;
      if (s->max_s > d->max_s) d->max_s = s->max_s;
    }
  }
  if (J->nops > 1) qsort(J->ops, (size_t)J->nops, sizeof *J->ops, cmp_opstat);
  J->gpu_timing = calls && gpu * 2 > calls;
  J->clock_err_us = (double)unc / 1e3;
}

int ncs_jobsum_load(int nfiles, char **files, const struct ncs_load_opts *o, const struct ncs_jobsum_events *ev,
                    struct ncs_jobdata **out) {
  *out = NULL;
  double t0 = now_s();
  struct sum S = {.o = o, .ev = ev};
  struct ncs_jobdata *J = S.job = calloc(1, sizeof *J);
  if (!J) return 2;
  J->n = nfiles;
  J->r = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *J->r);
  int strag = !(ev && ev->no_stragglers);
  J->strag = strag ? ncs_strag_new(nfiles) : NULL;
  S.f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *S.f);
  if (!J->r || (strag && !J->strag) || !S.f) { free(S.f); ncs_job_free(J); return 2; }
  ncs_rule_ops(S.rule0, 0);
  for (int i = 0; i < nfiles; i++) {
    J->r[i].path = files[i];
    J->r[i].rank = -1;
    S.f[i] = (struct sfile){.S = &S, .file = i, .r = &J->r[i], .strag = J->strag};
    memo_clear(&S.f[i]);
  }
  struct ncs_load_opts lo = {.ctx = &S, .file_visitor = s_file_visitor, .file_done = s_file_done,
                             .aligned = s_aligned, .file_clock = s_file_clock};
  if (o) { lo.threads = o->threads; lo.progress_label = o->progress_label; lo.in_order = o->in_order; }
  if (ev && ev->on_kernel) lo.aligned_kernel = s_aligned_kernel;
  pthread_mutex_init(&S.mu, NULL);
  struct ncs_jobread *R = NULL;
  int rc = ncs_job_load(nfiles, files, &lo, &R);
  pthread_mutex_destroy(&S.mu);
  if (R) {
    ncs_strag_finish(J->strag);
    job_figures(&S, R);
    J->jobs = R->jobs; /* the summary keeps the grouping */
    R->jobs = NULL;
  }
  ncs_jobread_free(R);
  free(S.cm);
  for (int i = 0; i < S.ntopo; i++) free(S.topo_hosts[i].host);
  free(S.topo_hosts);
  free(S.f);
  if (!R) { ncs_job_free(J); return 2; }
  J->decode_s = now_s() - t0;
  *out = J;
  return rc;
}

void ncs_job_free(struct ncs_jobdata *J) {
  if (!J) return;
  if (J->r)
    for (int i = 0; i < J->n; i++) { free(J->r[i].ops); free(J->r[i].tmat); free(J->r[i].topo); }
  free(J->r);
  free(J->ops);
  ncs_strag_free(J->strag);
  ncs_jobset_free(J->jobs);
  free(J);
}
