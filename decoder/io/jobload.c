/* jobload.c — the parallel whole-job loader (contract in jobload.h). */
#include "io/jobload.h"
#include "base/settings.h"
#include "model/profcalls.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ncclscope/cupti_abi.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"
#include "io/nccllog.h"
#include "io/progress.h"
#include "io/readcount.h"
#include "io/regfile.h"
#include "model/connowner.h"
#include "model/knames.h"
#include "model/rules.h"

/* Row bucket of a call's message size S (nccl-tests' S, as in report: docs/METRICS.md):
 * floor(log2), 0 for 0 or 1 byte (model/rules.h). */
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

struct lcomm { uint64_t comm_id; int rank, nranks; unsigned mask, tmask_stream; char tname[24]; };
/* mask: transports of its connection lines (settled at the file's end); tmask_stream and tname:
 * those seen so far in the stream, for the calls' events */

struct loader;
struct fctx {
  struct loader *L;
  int file;
  struct ncs_jrank *r;
  struct ncs_aligner al;
  struct lcomm *comms;
  size_t ncomms;
  uint32_t last_comm;
  struct ncs_cown *own;       /* whose each connection line is, settled when the file ends */
  int64_t cur_s, cur_e;
  int have_cur;
  long double union_ns;
  uint64_t last_off;
  int have_first;
  int topo_state;             /* 0 undecided, 1 keeps its host's topology, -1 another file does */
  uint8_t *nccl_names;        /* bitmap of KERNEL_NAME ids named as NCCL's but recorded as compute
                                 (an older shim's symmetric kernels): their kernels are lifted */
  uint64_t coll_calls;
  struct ncs_strag_arrival *batch; /* the advancing thread's batch of arrivals for the straggler
                                      engine, handed over at the end of each step */
  size_t nbatch;
  struct fmux *mx;            /* while the file is open (9 KiB: not held for every file of the job) */
  struct ncs_visitor inner;   /* mx->mux's out */
  struct ncs_profcalls *pc;
  /* lockstep (see ncs_job_load) */
  struct ncs_trace *t;
  struct ncs_read_status st;
  struct ncs_visitor v;
  int live;                   /* opened and not read to the end */
  int have_t;                 /* a call was released: t_rel is known */
  int64_t t_rel;              /* host entry (job clock) of the latest call released */
  int64_t span;               /* how far t_rel moved in this file's latest step */
  int waiting;                /* whole files: not opened yet (a worker opens it when it takes it) */
};
struct fmux {
  struct ncs_mux mux;         /* the summary's visitor and the plug-ins' (ncs_load_opts) */
  struct ncs_mux outer;       /* inner, then the calls rebuilt from profiler events (profcalls.h) */
};
#define BATCH 512

struct loader {
  int n;
  char **files;
  const struct ncs_load_opts *o;
  struct ncs_jobdata *job;
  pthread_mutex_t mu;         /* next file of the round; serialises callbacks; the comm masks */
  struct fctx *f;             /* [n] every file's reading state */
  int *step;                  /* [n] files advancing in this round */
  int nstep, next;
  int lockstep;               /* 1: files advance a chunk at a time in lockstep; 0: whole files */
  struct cmask { uint64_t comm_id; unsigned mask; } *cm; /* transports seen per communicator */
  int ncm, capcm;
  struct tkeep { char *host; int file; } *topo_hosts; /* per host, the file that keeps its topology */
  int ntopo, captopo;
};

/* 1 when file should keep its host's topology: no file before it in file order keeps it so
 * far. In the end the first file of the host (in file order) that has one keeps it, whichever
 * thread asked first; a file it displaced drops its copy when the load ends (topo_settle). */
static int topo_claim(struct loader *L, const char *host, int file) {
  int mine = 1, i = 0;
  pthread_mutex_lock(&L->mu);
  while (i < L->ntopo && strcmp(L->topo_hosts[i].host, host)) i++;
  if (i < L->ntopo) {
    mine = file < L->topo_hosts[i].file;
    if (mine) L->topo_hosts[i].file = file;
  } else {
    if (L->ntopo == L->captopo) {
      int nc = L->captopo ? L->captopo * 2 : 16;
      struct tkeep *p = realloc(L->topo_hosts, (size_t)nc * sizeof *p);
      if (p) { L->topo_hosts = p; L->captopo = nc; }
    }
    char *h = L->ntopo < L->captopo ? strdup(host) : NULL;
    if (h) L->topo_hosts[L->ntopo++] = (struct tkeep){h, file}; else mine = 0;
  }
  pthread_mutex_unlock(&L->mu);
  return mine;
}

/* After the load: the topology copies of files their host's keeper displaced are dropped. */
static void topo_settle(struct loader *L) {
  for (int f = 0; f < L->n; f++) {
    struct ncs_jrank *r = &L->job->r[f];
    if (!r->topo) continue;
    int i = 0;
    while (i < L->ntopo && strcmp(L->topo_hosts[i].host, r->host)) i++;
    if (i < L->ntopo && L->topo_hosts[i].file == f) continue;
    free(r->topo);
    r->topo = NULL;
  }
}

/* Adds a file's transport classes of communicator comm_id (caller holds L->mu). */
static void cmask_add(struct loader *L, uint64_t id, unsigned mask) {
  for (int i = 0; i < L->ncm; i++) if (L->cm[i].comm_id == id) { L->cm[i].mask |= mask; return; }
  if (L->ncm == L->capcm) {
    int nc = L->capcm ? L->capcm * 2 : 16;
    struct cmask *p = realloc(L->cm, (size_t)nc * sizeof *p);
    if (!p) return;
    L->cm = p; L->capcm = nc;
  }
  L->cm[L->ncm].comm_id = id;
  L->cm[L->ncm++].mask = mask;
}
static unsigned cmask_of(const struct loader *L, uint64_t id) {
  for (int i = 0; i < L->ncm; i++) if (L->cm[i].comm_id == id) return L->cm[i].mask;
  return 0;
}

static struct lcomm *lc_get(struct fctx *f, uint32_t comm) {
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

/* Hands a call to the caller's callback (every call: collectives, point-to-point, groups,
 * registration, ...), serialised. */
static void emit_call(struct fctx *f, const struct ncs_aligned *a, const struct lcomm *lc, int64_t s, int64_t e,
                      uint64_t bytes, double busbw) {
  if (!f->L->o->on_call) return;
  struct ncs_jev ev = {.c = a->call, .a = a, .start = s, .end = e, .has_gpu = a->has_gpu, .bytes = bytes,
                       .comm_id = lc ? lc->comm_id : 0, .busbw_gbps = busbw, .rank = lc ? lc->rank : -1,
                       .nranks = lc ? lc->nranks : 0, .transport = lc ? lc->tname : "?"};
  pthread_mutex_lock(&f->L->mu);
  f->L->o->on_call(f->L->o->ctx, f->file, f->r, &ev);
  pthread_mutex_unlock(&f->L->mu);
}

static void on_aligned(void *ctx, const struct ncs_aligned *a) {
  struct fctx *f = ctx;
  struct ncs_jrank *r = f->r;
  const struct ncs_call *c = a->call;
  r->calls++;
  if (!f->have_t || a->enter > f->t_rel) f->t_rel = a->enter;
  f->have_t = 1;
  int kind = ncs_op_kind(c->op);
  struct lcomm *lc = lc_get(f, c->comm);
  if (kind != NCS_KIND_COLL && kind != NCS_KIND_P2P) { /* host interval only, no statistics */
    emit_call(f, a, lc, a->enter, a->exit > a->enter ? a->exit : a->enter, 0, 0);
    return;
  }
  int nranks = lc ? lc->nranks : 0;
  int64_t s = a->has_gpu ? a->gpu_start : a->enter, e = a->has_gpu ? a->gpu_end : a->exit;
  if (e < s) e = s;
  if (a->has_gpu) r->gpu_calls++;
  f->coll_calls++;
  uint64_t bytes = ncs_rule_bytes(c->count, c->datatype);
  double bb = ncs_rule_busbytes(c->op, c->count, c->datatype, nranks);
  double dt = (double)(e - s) / 1e9;
  struct ncs_opstat *st = opstat(r, c->op, ncs_job_bucket(ncs_rule_S(c->op, c->count, c->datatype, nranks)),
                                 lc ? lc->comm_id : 0);
  if (st) {
    st->calls++; st->bytes += bytes; st->time_s += dt; st->busbytes += bb; st->steps += ncs_rule_steps(c->op, nranks);
    if (dt > st->max_s) st->max_s = dt;
  }
  if (!f->have_first || a->enter < r->t_first) r->t_first = a->enter;
  if (!f->have_first || e > r->t_last) r->t_last = e;
  f->have_first = 1;
  if (!f->have_cur) { f->cur_s = s; f->cur_e = e; f->have_cur = 1; }
  else if (s > f->cur_e) { f->union_ns += f->cur_e - f->cur_s; f->cur_s = s; f->cur_e = e; }
  else if (e > f->cur_e) f->cur_e = e;
  if (kind == NCS_KIND_COLL) {
    struct ncs_strag_arrival *x = &f->batch[f->nbatch++];
    x->comm = c->comm; x->op = c->op; x->datatype = c->datatype; x->root = c->root;
    x->seq = c->seq; x->count = c->count; x->t = a->has_gpu ? a->gpu_start : a->enter;
    x->has_gpu = a->has_gpu; x->gpu_end = a->gpu_end;
    if (f->nbatch == BATCH) {
      ncs_strag_arrive_batch(f->L->job->strag, f->file, f->batch, f->nbatch);
      f->nbatch = 0;
    }
  }
  emit_call(f, a, lc, s, e, bytes, dt > 0 ? bb / dt / 1e9 : 0);
}

static int v_process(void *ctx, const struct ncs_process *p) {
  struct fctx *f = ctx;
  const char *v;
  if (f->L->job->jobs) ncs_jobset_process(f->L->job->jobs, f->file, p);
  snprintf(f->r->host, sizeof f->r->host, "%s", (v = ncs_process_get(p, "host")) ? v : "");
  snprintf(f->r->nccl_version, sizeof f->r->nccl_version, "%s", (v = ncs_process_get(p, "nccl_version")) ? v : "");
  for (size_t i = 0; i < p->nkv; i++)
    if (!strcmp(p->kv[i].key, "cmdline")) {
      size_t n = p->kv[i].value_len < sizeof f->r->cmdline - 1 ? p->kv[i].value_len : sizeof f->r->cmdline - 1;
      for (size_t k = 0; k < n; k++) f->r->cmdline[k] = p->kv[i].value[k] ? p->kv[i].value[k] : ' ';
      f->r->cmdline[n] = 0;
    }
  f->r->pid = p->pid;
  const char *rt = ncs_process_get(p, "clock_realtime_ns"), *mo = ncs_process_get(p, "clock_monotonic_ns");
  if (rt && mo) {
    struct ncs_clock c = {strtoull(rt, NULL, 10), strtoull(mo, NULL, 10), 0};
    if (c.realtime_ns && c.monotonic_ns) ncs_aligner_clock(&f->al, &c);
  }
  if (f->r->rank < 0 && (v = ncs_process_get(p, "env.RANK"))) f->r->rank = atoi(v);
  ncs_strag_file_info(f->L->job->strag, f->file, f->r->host, p->pid);
  return 0;
}

static void comm_event(struct fctx *f, int is_end, uint32_t op, const struct lcomm *lc, uint64_t t) {
  if (!f->L->o->on_comm || !lc) return;
  struct ncs_jcomm_ev e = {.is_end = is_end, .op = op, .comm_id = lc->comm_id, .rank = lc->rank,
                           .nranks = lc->nranks, .t = ncs_aligner_time(&f->al, t)};
  pthread_mutex_lock(&f->L->mu);
  f->L->o->on_comm(f->L->o->ctx, f->file, f->r, &e);
  pthread_mutex_unlock(&f->L->mu);
}

static int v_comm(void *ctx, const struct ncs_comm *c) {
  struct fctx *f = ctx;
  if (f->L->job->jobs) ncs_jobset_comm(f->L->job->jobs, f->file, c);
  if (c->comm >= 1u << 20) return 0;
  if (c->comm >= f->ncomms) {
    size_t n = c->comm + 8;
    struct lcomm *p = realloc(f->comms, n * sizeof *p);
    if (!p) return 0;
    memset(p + f->ncomms, 0, (n - f->ncomms) * sizeof *p);
    f->comms = p; f->ncomms = n;
  }
  struct lcomm *lc = &f->comms[c->comm];
  if (c->nranks < 1) return 0;
  /* a second COMM record for the index completes a non-blocking init (FORMAT.md) */
  int update = lc->nranks > 0 && lc->comm_id == c->comm_id;
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
  ncs_strag_comm(f->L->job->strag, f->file, c);
  ncs_cown_comm(f->own, c);
  if (!update) comm_event(f, 0, c->init_op, lc, c->t_enter);
  return 0;
}

static int v_comm_end(void *ctx, const struct ncs_comm_end *e) {
  struct fctx *f = ctx;
  comm_event(f, 1, e->op, lc_get(f, e->comm), e->t_enter);
  return 0;
}
static int v_call(void *ctx, const struct ncs_call *c) {
  struct fctx *f = ctx;
  ncs_cown_call(f->own, c->comm, c->t_enter, c->t_exit);
  ncs_aligner_call(&f->al, c);
  return 0;
}
static int v_gpu(void *ctx, const struct ncs_gpu_time *g) { ncs_aligner_gpu(&((struct fctx *)ctx)->al, g); return 0; }
static int v_clock(void *ctx, const struct ncs_clock *c) { ncs_aligner_clock(&((struct fctx *)ctx)->al, c); return 0; }

/* A connection line: its communicator is settled when the file ends (model/connowner.h);
 * until then the calls' transport names (on_call) take the latest communicator made. */
static int v_log(void *ctx, const struct ncs_log_line *l) {
  struct fctx *f = ctx;
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
  struct fctx *f = ctx;
  struct lcomm *lc = lc_get(f, comm);
  if (!lc || c->tclass < 0 || c->tclass > 7) return;
  lc->mask |= 1u << c->tclass;
  struct ncs_jrank *r = f->r;
  if (lc->comm_id == r->comm_id && lc->nranks == r->nranks && lc->rank == r->rank && r->tmat && c->to >= 0 &&
      c->to < r->tmat_n && c->dir != NCS_DIR_RECV)
    r->tmat[c->to] = (unsigned char)c->tclass;
}

/* Hands a kernel released by the aligner to the caller's callback, serialised. */
static void on_aligned_kernel(void *ctx, const struct ncs_aligned_kernel *k) {
  struct fctx *f = ctx;
  pthread_mutex_lock(&f->L->mu);
  f->L->o->on_kernel(f->L->o->ctx, f->file, f->r, k);
  pthread_mutex_unlock(&f->L->mu);
}

static int v_raw(void *ctx, const struct ncs_raw *raw) {
  struct fctx *f = ctx;
  if (raw->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    struct ncs_rbuf rb;
    if (f->al.release_kernel && ncs_dec_kernel(ncs_rbuf_on(&rb, raw->body, raw->len), &k) == 0) {
      if (k.kclass == NCS_KCLASS_COMPUTE && f->nccl_names && k.name < NCS_KNAMES_MAX &&
          (f->nccl_names[k.name / 8] >> (k.name % 8) & 1))
        k.kclass = NCS_KCLASS_NCCL; /* every NCCL kernel is communication */
      ncs_aligner_kernel(&f->al, &k);
    }
    return 0;
  }
  if (raw->type == NCS_REC_KERNEL_NAME) {
    struct ncs_kernel_name x;
    struct ncs_rbuf rb;
    if (ncs_dec_kernel_name(ncs_rbuf_on(&rb, raw->body, raw->len), &x) != 0 || x.kclass == NCS_KCLASS_NCCL ||
        x.id >= NCS_KNAMES_MAX)
      return 0;
    x.name[sizeof x.name - 1] = 0;
    if (!ncs_is_nccl_kernel(x.name)) return 0;
    if (!f->nccl_names && !(f->nccl_names = calloc(NCS_KNAMES_MAX / 8, 1))) return 0;
    f->nccl_names[x.id / 8] |= (uint8_t)(1u << (x.id % 8));
    return 0;
  }
  if (raw->type != NCS_REC_TOPO_GPU && raw->type != NCS_REC_TOPO_LINK) return 0;
  if (!f->topo_state) f->topo_state = topo_claim(f->L, f->r->host, f->file) ? 1 : -1;
  if (f->topo_state < 0) return 0;
  if (!f->r->topo) {
    if (!(f->r->topo = malloc(sizeof *f->r->topo))) return 0;
    ncs_topo_init(f->r->topo, f->r->host);
  }
  ncs_topo_add_raw(f->r->topo, raw->type, raw->body, raw->len);
  return 0;
}

static int v_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  struct fctx *f = ctx;
  if (offset > f->last_off) { ncs_progress_bytes(offset - f->last_off); f->last_off = offset; }
  return 0;
}

/* The visitors of file i: the summary's (unless plugins_only) and the plug-ins'. Returns 0, or
 * -1 when out of memory. */
static int file_attach(struct loader *L, int i) {
  struct fctx *f = &L->f[i];
  const struct ncs_load_opts *o = L->o;
  if (!(f->mx = calloc(1, sizeof *f->mx))) return -1;
  struct ncs_mux *m = &f->mx->mux;
  if (!o->plugins_only)
    m->v[m->n++] = (struct ncs_visitor){.ctx = f, .process = v_process, .comm = v_comm, .comm_end = v_comm_end,
                                        .call = v_call, .gpu_time = v_gpu, .clock = v_clock, .log_line = v_log,
                                        .raw = v_raw, .chunk = v_chunk};
  else if (o->progress_label)
    m->v[m->n++] = (struct ncs_visitor){.ctx = f, .chunk = v_chunk};
  if (o->plugins_only && L->job->jobs) /* which job (model/jobs.h); else the summary's visitor feeds it */
    m->v[m->n++] = ncs_jobset_visitor(L->job->jobs, i);
  if (o->file_visitor) o->file_visitor(o->ctx, i, m);
  ncs_mux_build(m, &f->inner);
  /* a process whose NCCL no wrapper reached (static NCCL): its calls come from NCCL's profiler
   * events, handed to the same visitors (model/profcalls.h) */
  f->pc = ncs_profcalls_new();
  if (!f->pc) { f->v = f->inner; return 0; }
  struct ncs_mux *outer = &f->mx->outer;
  outer->v[outer->n++] = f->inner;
  outer->v[outer->n++] = ncs_profcalls_visitor(f->pc, &f->inner);
  ncs_mux_build(outer, &f->v);
  return 0;
}

/* Opens file i (its PROCESS record etc. follow with its first step). */
static void file_open(struct loader *L, int i) {
  struct fctx *f = &L->f[i];
  memset(f, 0, sizeof *f);
  f->L = L; f->file = i; f->r = &L->job->r[i];
  f->r->rank = -1;
  if (!L->o->plugins_only) f->own = ncs_cown_new();
  ncs_aligner_init(&f->al, L->job->origin, on_aligned, f);
  if (L->o->on_kernel) f->al.release_kernel = on_aligned_kernel;
  if (file_attach(L, i) != 0) {
    f->r->read_rc = 2;
    snprintf(f->st.error, sizeof f->st.error, "%s: out of memory", L->files[i]);
    return;
  }
  f->r->read_rc = ncs_trace_open(L->files[i], &f->v, &f->st, &f->t);
  f->live = f->t != NULL;
  if (L->lockstep) ncs_trace_park(f->t); /* thousands of files: no descriptor held until the file's turn */
}

/* The end of file i's read: what remains held is released and its figures are settled. */
static void file_close(struct loader *L, int i, struct ncs_strag_arrival *batch) {
  struct fctx *f = &L->f[i];
  if (f->t) f->r->read_rc = ncs_trace_close(f->t);
  f->t = NULL;
  f->live = 0;
  f->batch = batch;
  if (f->st.bytes > f->last_off) ncs_progress_bytes(f->st.bytes - f->last_off);
  if (f->pc) { /* the calls still waiting for their kernel go on now */
    struct ncs_profcalls_stats ps = ncs_profcalls_finish(f->pc);
    f->r->from_profiler = ps.active;
    f->r->profiler_calls = ps.calls;
    f->r->profiler_gpu_timed = ps.gpu_timed;
    ncs_profcalls_free(f->pc);
    f->pc = NULL;
  }
  ncs_aligner_flush(&f->al);
  ncs_strag_arrive_batch(L->job->strag, i, f->batch, f->nbatch);
  f->nbatch = 0;
  f->batch = NULL;
  if (f->have_cur) f->union_ns += f->cur_e - f->cur_s;
  f->r->comm_s = (double)(f->union_ns / 1e9L);
  f->r->truncated = f->st.truncated;
  f->r->dropped = f->st.dropped_total;
  f->r->gpu_unmatched = f->al.gpu_unmatched;
  snprintf(f->r->error, sizeof f->r->error, "%s", f->st.error);
  f->r->clock_pairs = f->al.map.npairs;
  f->r->clock_unc_ns = f->al.map.unc_max;
  f->r->clock_offset_ns = f->al.map.off_first;
  f->r->clock_drift_ppm = ncs_clockmap_drift_ppm(&f->al.map);
  ncs_strag_file_done(L->job->strag, i, f->st.truncated);
  ncs_cown_settle(f->own, conn_given, f);
  ncs_cown_free(f->own);
  f->own = NULL;
  pthread_mutex_lock(&L->mu);
  for (size_t k = 0; k < f->ncomms; k++) if (f->comms[k].nranks) cmask_add(L, f->comms[k].comm_id, f->comms[k].mask);
  pthread_mutex_unlock(&L->mu);
  ncs_aligner_free(&f->al);
  free(f->comms);
  free(f->nccl_names);
  f->nccl_names = NULL;
  f->comms = NULL; f->ncomms = 0;
  ncs_progress_file_done();
  if (L->job->jobs) ncs_jobset_file_done(L->job->jobs, i, f->r->read_rc, &f->st);
  if (L->o->file_done) L->o->file_done(L->o->ctx, i, f->r->read_rc, &f->st);
  free(f->mx);
  f->mx = NULL;
}

/* One step of file i: its next chunk is decoded and its records handed on; the straggler
 * arrivals it released go to the engine before the step ends. */
static void file_step(struct loader *L, int i, struct ncs_trace_bufs *b, struct ncs_strag_arrival *batch) {
  struct fctx *f = &L->f[i];
  int64_t before = f->t_rel, had = f->have_t;
  f->batch = batch;
  int more = ncs_trace_next(f->t, b);
  if (L->lockstep) ncs_trace_park(f->t); /* no descriptor held between steps: thousands of files stay open */
  ncs_strag_arrive_batch(L->job->strag, i, f->batch, f->nbatch);
  f->nbatch = 0;
  f->batch = NULL;
  f->span = had && f->have_t ? f->t_rel - before : 0;
  if (!more) file_close(L, i, batch);
}

#define HELD_CALL_BYTES 128   /* an aligner's held call (align.c), rounded up */
#define FILE_STATE_BYTES 8192 /* a file's reading state besides its held calls */

/* A worker's share of a round: the files in L->step[] not taken yet. */
struct wctx { struct loader *L; struct ncs_trace_bufs *b; struct ncs_strag_arrival batch[BATCH]; };

static void *worker(void *arg) {
  struct wctx *w = arg;
  struct loader *L = w->L;
  for (;;) {
    pthread_mutex_lock(&L->mu);
    int i = L->next < L->nstep ? L->step[L->next++] : -1;
    pthread_mutex_unlock(&L->mu);
    if (i < 0) return NULL;
    if (L->f[i].waiting) { /* visitors attached one file at a time, as when all are opened first */
      pthread_mutex_lock(&L->mu);
      file_open(L, i);
      pthread_mutex_unlock(&L->mu);
    }
    if (!L->f[i].live) { file_close(L, i, w->batch); continue; }
    file_step(L, i, w->b, w->batch);
    while (!L->lockstep && L->f[i].live) file_step(L, i, w->b, w->batch); /* whole file */
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Chooses the files that advance in the next round (L->step), as described at ncs_job_load.
 * Returns how many; 0 when every file has been read. */
static int plan_round(struct loader *L, int64_t *spans) {
  int64_t tmin = 0;
  int known = 0, nspan = 0;
  for (int i = 0; i < L->n; i++) {
    const struct fctx *f = &L->f[i];
    if (!f->live || !f->have_t) continue;
    if (!known || f->t_rel < tmin) tmin = f->t_rel;
    known = 1;
    spans[nspan++] = f->span;
  }
  int64_t horizon = 0;
  if (known) {
    if (nspan > 1) qsort(spans, (size_t)nspan, sizeof *spans, cmp_i64);
    horizon = tmin + spans[nspan / 2];
  }
  L->nstep = 0;
  L->next = 0;
  for (int i = 0; i < L->n; i++) {
    const struct fctx *f = &L->f[i];
    if (f->waiting || (f->live && (!L->lockstep || !f->have_t || f->t_rel <= horizon))) L->step[L->nstep++] = i;
  }
  return L->nstep;
}

/* What the file header and the first chunk header tell before decoding: realtime at file
 * creation (0 when unreadable), file size, and the first chunk's records and payload bytes
 * (0 when there is none). */
struct probe { uint64_t rt, size; uint32_t nrec, psz; };
static struct probe probe_file(const char *path) {
  struct probe p = {0, 0, 0, 0};
  FILE *fp = ncs_fopen_regular(path, NULL, 0);
  uint8_t h[NCS_FILE_HEADER_SIZE], ch[NCS_CHUNK_HEADER_SIZE];
  if (!fp) return p;
  ncs_readcount_peek(path);
  if (fread(h, 1, sizeof h, fp) == sizeof h && !memcmp(h, NCS_FILE_MAGIC, 8)) {
    p.rt = ncs_get_u64(h + NCS_FH_REALTIME);
    uint32_t hs = ncs_get_u32(h + NCS_FH_SIZE);
    /* the larger of the first two chunks (the first may be cut short by the first flush) */
    off_t at = (off_t)hs;
    if ((ncs_get_u32(h + NCS_FH_FLAGS) & NCS_FILE_F_BOUNDED) && ncs_get_u64(h + NCS_FH_FIRST_KEPT) > hs)
      at = (off_t)ncs_get_u64(h + NCS_FH_FIRST_KEPT); /* a bounded file: its first kept chunk */
    for (int k = 0; k < 2 && hs >= NCS_FILE_HEADER_SIZE && hs <= (1u << 20) && fseeko(fp, at, SEEK_SET) == 0 &&
                    fread(ch, 1, sizeof ch, fp) == sizeof ch && ncs_get_u32(ch + NCS_CH_MAGIC) == NCS_CHUNK_MAGIC; k++) {
      uint32_t n = ncs_get_u32(ch + NCS_CH_RECORDS), ps = ncs_get_u32(ch + NCS_CH_PAYLOAD);
      if (n >= p.nrec && ps) { p.nrec = n; p.psz = ps; }
      at += NCS_CHUNK_HEADER_SIZE + (off_t)ps;
    }
  }
  struct stat sb;
  if (fstat(fileno(fp), &sb) == 0) p.size = (uint64_t)sb.st_size;
  fclose(fp);
  return p;
}

int64_t ncs_file_created_ns(const char *path) { return (int64_t)probe_file(path).rt; }

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

int ncs_job_load(int nfiles, char **files, const struct ncs_load_opts *o, struct ncs_jobdata **out) {
  static const struct ncs_load_opts none;
  if (!o) o = &none;
  *out = NULL;
  struct ncs_jobdata *J = calloc(1, sizeof *J);
  if (!J) return 2;
  J->n = nfiles;
  J->r = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *J->r);
  J->strag = ncs_strag_new(nfiles);
  J->jobs = ncs_jobset_new(nfiles);
  if (!J->r || !J->strag || !J->jobs) { ncs_job_free(J); return 2; }
  double t0 = now_s();
  uint64_t total = 0, most_recs = 0, held = 0;
  for (int i = 0; i < nfiles; i++) {
    struct probe pr = {0, 0, 0, 0};
    struct stat sb;
    if (!o->plugins_only) pr = probe_file(files[i]); /* the summary's clock origin, lockstep or not */
    else if (o->progress_label && stat(files[i], &sb) == 0) pr.size = (uint64_t)sb.st_size;
    uint64_t sz = pr.size, rt = pr.rt;
    total += sz;
    /* the two ways of reading (see ncs_job_load in jobload.h): what each would keep */
    uint64_t recs = pr.psz ? (uint64_t)((double)sz * pr.nrec / pr.psz) : 0; /* records in the file */
    if (recs > most_recs) most_recs = recs;
    held += 2 * (uint64_t)(pr.nrec ? pr.nrec : 1) * HELD_CALL_BYTES + FILE_STATE_BYTES;
    if (rt && (!J->origin || (int64_t)rt < J->origin)) J->origin = (int64_t)rt;
    J->r[i].path = files[i];
    J->r[i].created_ns = (int64_t)rt;
    J->r[i].rank = -1;
  }
  struct loader L = {.n = nfiles, .files = files, .o = o, .job = J};
  /* Lockstep keeps every file's aligner hold (two chunks of calls) at once; whole files keep
   * a straggler window as long as the longest trace (96 B per collective, records of a file
   * being at most one collective each; past 2^20 collectives the window gives up the oldest,
   * so such traces are always read in lockstep). Pick whichever keeps less. */
  const struct ncs_settings *set = ncs_settings();
  if (o->in_order || o->plugins_only) L.lockstep = 0; /* plug-ins keep their state per file being read */
  else if (set->lockstep >= 0) L.lockstep = set->lockstep;
  else L.lockstep = most_recs > (1u << 20) || held < most_recs * 96;
  J->lockstep = L.lockstep;
  pthread_mutex_init(&L.mu, NULL);
  int nt = o->threads > 0 ? o->threads : set->threads > 0 ? set->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > nfiles) nt = nfiles;
  if (nt > 256) nt = 256;
  if (nt < 1 || o->in_order) nt = 1;
  if (o->progress_label) ncs_progress_begin(o->progress_label, total, nfiles);
  L.f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *L.f);
  L.step = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *L.step);
  int64_t *spans = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *spans);
  struct wctx *w = calloc((size_t)nt, sizeof *w);
  int ok = L.f && L.step && spans && w;
  for (int k = 0; ok && k < nt; k++) { w[k].L = &L; ok = (w[k].b = ncs_trace_bufs_new()) != NULL; }
  if (!ok) {
    for (int k = 0; w && k < nt; k++) ncs_trace_bufs_free(w[k].b);
    free(L.f); free(L.step); free(spans); free(w);
    if (o->progress_label) ncs_progress_end();
    pthread_mutex_destroy(&L.mu);
    ncs_job_free(J);
    return 2;
  }
  for (int i = 0; i < nfiles && o->in_order; i++) { /* one file after another, in order */
    file_open(&L, i);
    if (!L.f[i].live) file_close(&L, i, w[0].batch);
    while (L.f[i].live) file_step(&L, i, w[0].b, w[0].batch);
  }
  /* Lockstep: every file opened (and parked) first. Whole files: each is opened by the worker
   * that reads it, so only the files being read hold their reading state and their plug-ins'
   * (at 128 ranks they were 1.4 MiB of html's peak, all held from the start). */
  for (int i = 0; i < nfiles && !o->in_order; i++) {
    if (!L.lockstep) { L.f[i].waiting = 1; continue; }
    file_open(&L, i);
    if (!L.f[i].live) file_close(&L, i, w[0].batch);
  }
  while (plan_round(&L, spans)) {
    pthread_t th[256];
    int started = 0;
    int want = nt < L.nstep ? nt : L.nstep;
    for (int k = 1; k < want; k++)
      if (pthread_create(&th[started], NULL, worker, &w[k]) == 0) started++;
    worker(&w[0]);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
  }
  for (int k = 0; k < nt; k++) ncs_trace_bufs_free(w[k].b);
  free(w);
  free(spans);
  free(L.step);
  free(L.f);
  if (o->progress_label) ncs_progress_end();
  pthread_mutex_destroy(&L.mu);
  ncs_strag_finish(J->strag);
  ncs_jobset_finish(J->jobs);
  /* a collective is as fast as the slowest link of its communicator: each row gets the
   * transports every rank of its communicator reported */
  for (int i = 0; i < nfiles; i++)
    for (int k = 0; k < J->r[i].nops; k++) {
      struct ncs_opstat *st = &J->r[i].ops[k];
      ncs_tmask_name(st->comm_id ? cmask_of(&L, st->comm_id) : 0, st->transport, sizeof st->transport);
    }
  free(L.cm);
  topo_settle(&L);
  for (int i = 0; i < L.ntopo; i++) free(L.topo_hosts[i].host);
  free(L.topo_hosts);

  /* job-level figures */
  int readable = 0;
  uint64_t calls = 0, gpu = 0;
  uint64_t unc = 0;
  for (int i = 0; i < nfiles; i++) {
    struct ncs_jrank *r = &J->r[i];
    if (r->read_rc != 2) readable++;
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
  J->decode_s = now_s() - t0;
  *out = J;
  return readable ? 0 : 2;
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
