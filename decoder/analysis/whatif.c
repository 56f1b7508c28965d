/* whatif.c — the `what_if` analysis of `ncclscope report`: what each problem costs in step time
 * and the step time if it were fixed (docs/METRICS.md, "What fixing it would give"), from the
 * trace alone: a slow transport or a low-busbw link (every NCCL kernel re-laid at the busbw the
 * right link reaches for its size), a straggler (its compute as long as the others'), exposed
 * communication (the step with the exposed part hidden), and `--what-if busbw=G[,op=OP]` or
 * `--what-if transport=P2P|NVLS|SHM|NET` for a target the user names.
 *
 * Contract: an analysis (analysis.h) after verdicts (the job's transports and NVLink, from the
 * headline) and metrics (step starts: model/stages.h), and after gputime, in the registry. Per
 * file it keeps the kernels (KERNEL records, 24 bytes each: the file's store in the stages,
 * model/kstore.h, filled by the first of gputime and whatif to ask, taken over when the file
 * is done and packed into relayout's 16 bytes a kernel; what an NCCL kernel moves is then an
 * index into the file's table of distinct sizes, model/relayout.h), the NCCL calls' sizes grouped as NCCL
 * launches them (one kernel per call, one per group and kernel operation; model/launches.h,
 * 4 bytes each in the common case; dropped for a file without kernel activity: model/kwatch.h)
 * and, while the file is read, its topology; when the file is done, each NCCL kernel takes the size of its call (the i-th
 * kernel of an operation the i-th such launch), the step boundaries become the boundary
 * calls' kernels and the topology gives the links finish() asks of it. finish() lays the ranks' timelines out again (model/relayout.h) and keeps
 * the result (whatif.h); render/whatif_render.c prints it. Without kernel activity or steps it says why. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis.h"
#include "analysis/headline.h"
#include "analysis/whatif.h"
#include "base/bigarr.h"
#include "base/mix.h"
#include "io/grow.h"
#include "io/nccllog.h"
#include "model/knames.h"
#include "model/kstore.h"
#include "model/kwatch.h"
#include "model/launches.h"
#include "model/linkref.h"
#include "model/relayout.h"
#include "model/rules.h"
#include "model/stages.h"
#include "model/topo.h"
#include "ncclscope/cupti_abi.h"
#include "ncclscope/encode.h"
#include "ncclscope/ops.h"

/* a finding is listed when fixing it would save at least this share of the step */
#define MIN_SHARE 0.01
#define MIN_LOW_BUSBW 0.10

static const char *const kops[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "SendRecv", NULL, "other"};
enum { NKOPS = 6 };
_Static_assert(sizeof kops / sizeof *kops == NCS_RL_KOPS && NCS_RL_KOPS == NCS_WHATIF_KOPS, "one numbering");
static int kop_index(const char *o, size_t len) {
  for (int i = 0; o && i < NKOPS; i++)
    if (strlen(kops[i]) == len && !strncmp(kops[i], o, len)) return i;
  return -1;
}
static int kop_of(const char *kernel_name) {
  size_t len = 0;
  const char *o = kernel_name ? ncs_kernel_op(kernel_name, &len) : NULL;
  return kop_index(o, len);
}

struct unit {               /* the NCCL launch being made: a call, or a group's calls of one
                               kernel operation (model/launches.h once the next one begins) */
  uint64_t t_first, group;
  int kop;
  unsigned op;
  double busbytes, steps, sent, recvd;
};
struct wf_file {
  struct ncs_knames names;
  struct ncs_kstore own, *ks; /* the kernels while the file is read: the stages' store (own
                                 without stages); fill: appended here */
  int fill;
  struct ncs_rl_k *k;        /* then taken over, sorted, packed as relayout's (base/bigarr.h) */
  size_t nk, capk;
  struct ncs_rl_long *lng;   /* the ends of kernels too long for k's duration (relayout.h) */
  size_t nlong;
  struct ncs_rl_size *size;  /* the kernels' distinct sizes ([0]: unknown), when the file is done */
  size_t nsize;
  uint32_t *bound;
  size_t nbound;
  struct unit u;             /* the launch being made (have_u) */
  int have_u;
  int u_one;                 /* u is one call outside a group, not point-to-point, of u_op, u_comm,
                                u_count, u_dt: a call of the same is a launch of the same shape */
  int u_again;               /* and the log's last launch has u's shape (l->last: wf_calls' run) */
  uint32_t u_op, u_comm, u_dt;
  uint64_t u_count;
  struct ncs_launches *done; /* the launches before it, compact (NULL: none yet, or given back) */
  size_t nua[NKOPS];         /* the launches kept, per kernel operation */
  int lost;                  /* a launch could not be kept (out of memory), or the log was dropped
                                (below): no kernel is sized */
  struct ncs_kwatch kw;      /* kernel activity in the file? (model/kwatch.h) */
  int dropped;               /* none by NCS_KWATCH_WAIT launches: the log is dropped, no more kept */
  int took;                  /* take_spare was called */
  int *nranks;              /* per communicator index */
  int rule_n;                /* the ranks rule[] was made for (ncs_rule_ops), -1 none yet */
  struct ncs_rule_op rule[NCS_OP_LIMIT];
  size_t ncomm, capc;
  struct ncs_topo *topo;     /* until the file is done; then the links it gives: */
  struct ncs_link p2p, user; /* NVLink's, the --what-if transport's, when have_* */
  int have_p2p, have_user;
  struct wf *owner;
};
/* Launch logs of finished files, their blocks handed to the next files: a file's launches are
 * as many as its calls, and growing a fresh buffer for each of 4,096 files (doubling, copying,
 * new pages) was a tenth of `report`'s CPU time. At most NSPARE kept (one per file read at
 * once). */
#define NSPARE 4
struct wf {
  int n;
  struct wf_file *f;
  signed char kop_of_op[NCS_OP_LIMIT]; /* a call's kernel operation (kops), -1 other, -2 none
                                          launched: made once, not looked up by name per call */
  pthread_mutex_t mu;
  struct ncs_launches *spare[NSPARE];
  int nspare;
  /* --what-if */
  const char *spec;
  int spec_bad;
  double user_gbps;         /* busbw=G */
  int user_op;              /* op=OP, -1 any */
  int user_tclass;          /* transport=... */
  struct ncs_whatif res;
  struct ncs_stages *stages; /* the report's: metrics' step starts */
};
const struct ncs_whatif *ncs_whatif_result(const void *state) { return state ? &((const struct wf *)state)->res : NULL; }

static int parse_spec(struct wf *s) {
  s->user_op = -1;
  const char *p = s->spec;
  if (!strncasecmp(p, "transport=", 10)) {
    static const struct { const char *n; int c; } t[] = {{"P2P", NCS_TC_P2P}, {"NVLINK", NCS_TC_P2P}, {"NVLS", NCS_TC_NVLS},
                                                          {"SHM", NCS_TC_SHM}, {"NET", NCS_TC_NET}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
      if (!strcasecmp(p + 10, t[i].n)) { s->user_tclass = t[i].c; return 0; }
    return -1;
  }
  if (strncasecmp(p, "busbw=", 6)) return -1;
  char *end;
  s->user_gbps = strtod(p + 6, &end);
  if (!(s->user_gbps > 0) || !isfinite(s->user_gbps)) return -1;
  if (!*end) return 0;
  if (strncasecmp(end, ",op=", 4)) return -1;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++)
    if (ncs_kernel_op_of_call(op) && !strcasecmp(end + 4, ncs_op_name(op))) { s->user_op = (int)op; return 0; }
  return -1;
}

static void *wf_create(const struct ncs_job *job) {
  struct wf *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  if (!(s->f = calloc(job->n ? (size_t)job->n : 1, sizeof *s->f))) { free(s); return NULL; }
  pthread_mutex_init(&s->mu, NULL);
  for (unsigned op = 0; op < NCS_OP_LIMIT; op++) {
    const char *ko = ncs_kernel_op_of_call(op);
    s->kop_of_op[op] = (signed char)(ko ? kop_index(ko, strlen(ko)) : -2);
  }
  s->stages = job->stages;
  s->spec = ncs_job_option(job, "what-if");
  if (s->spec && parse_spec(s) != 0) s->spec_bad = 1;
  return s;
}

static int wf_bad_options(void *state) {
  struct wf *s = state;
  if (!s || !s->spec_bad) return 0;
  fprintf(stderr, "ncclscope report: --what-if wants busbw=GBPS[,op=OP] or transport=P2P|NVLS|SHM|NET, not '%s'\n", s->spec);
  return 1;
}

/* A file that says it has no kernel activity (model/kwatch.h: format 1.0, as synth writes) keeps
 * no launch: the first (commit_unit) drops the log, its later calls are skipped (wf_calls). */
static int wf_process(void *ctx, const struct ncs_process *p) {
  ncs_kwatch_process(&((struct wf_file *)ctx)->kw, p);
  return 0;
}

static int wf_raw(void *ctx, const struct ncs_raw *r) {
  struct wf_file *f = ctx;
  ncs_kwatch_raw(&f->kw, r);
  if (r->type == NCS_REC_KERNEL) {
    struct ncs_kernel x;
    struct ncs_rbuf b;
    if (ncs_dec_kernel(ncs_rbuf_on(&b, r->body, r->len), &x) != 0) return 0;
    if (f->fill) ncs_kstore_add(f->ks, &x, 1);
    return 0;
  }
  if (ncs_knames_add_raw(&f->names, r)) return 0;
  if (r->type == NCS_REC_TOPO_GPU || r->type == NCS_REC_TOPO_LINK) {
    if (!f->topo && (f->topo = malloc(sizeof *f->topo)) != NULL) ncs_topo_init(f->topo, "");
    if (f->topo) ncs_topo_add_raw(f->topo, r->type, r->body, r->len);
  }
  return 0;
}

static int wf_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct wf_file *f = ctx;
  (void)raw;
  ncs_kwatch_kernel(&f->kw);
  if (f->fill) ncs_kstore_add(f->ks, k, n);
  return 0;
}

static int wf_comm(void *ctx, const struct ncs_comm *c) {
  struct wf_file *f = ctx;
  if (c->comm >= 4096) return 0;
  if (c->comm >= f->ncomm) {
    if (ncs_grow((void **)&f->nranks, &f->capc, (size_t)c->comm + 1, sizeof *f->nranks) != 0) return 0;
    for (size_t i = f->ncomm; i <= c->comm; i++) f->nranks[i] = 0;
    f->ncomm = (size_t)c->comm + 1;
  }
  f->nranks[c->comm] = c->nranks;
  f->u_one = 0; /* (a communicator's ranks may change a launch's bus bytes) */
  return 0;
}

/* The file's launch log: a finished file's blocks, when one is spare (model/launches.h,
 * ncs_launches_reset). */
static void take_spare(struct wf_file *f) {
  struct wf *s = f->owner;
  f->took = 1;
  pthread_mutex_lock(&s->mu);
  if (s->nspare > 0) f->done = s->spare[--s->nspare];
  pthread_mutex_unlock(&s->mu);
  if (!f->done) f->done = calloc(1, sizeof *f->done); /* NULL: no launch kept (lost) */
}
static void give_spare(struct wf_file *f) {
  struct wf *s = f->owner;
  if (!f->done) return;
  if (s && f->done->log.head) {
    ncs_launches_reset(f->done);
    pthread_mutex_lock(&s->mu);
    if (s->nspare < NSPARE) {
      s->spare[s->nspare++] = f->done;
      f->done = NULL;
    }
    pthread_mutex_unlock(&s->mu);
  }
  if (f->done) ncs_launches_free(f->done);
  free(f->done);
  f->done = NULL;
}
/* The launch being made goes to the compact log. */
static void commit_unit(struct wf_file *f) {
  if (!f->have_u) return;
  if (!f->dropped && !ncs_kwatch_keep(&f->kw, f->done ? f->done->log.n : 0)) { /* no kernel activity: no launch is wanted */
    give_spare(f);
    f->dropped = f->lost = 1;
  }
  if (f->dropped) { f->have_u = 0; return; }
  struct ncs_launch x = {f->u.t_first, f->u.op, f->u.kop, f->u.busbytes, f->u.steps};
  if (!f->done || ncs_launches_add(f->done, &x) != 0) f->lost = 1;
  else if (x.kop >= 0 && x.kop < NKOPS) f->nua[x.kop]++;
  f->have_u = 0;
}

static int wf_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct wf_file *f = ctx;
  if (!f->took && f->owner) take_spare(f);
  if (f->dropped) return 0;
  const signed char *kop_of_op = f->owner->kop_of_op;
#define SAME_LAUNCH(c) (f->u_one && (c)->op == f->u_op && (c)->count == f->u_count && (c)->datatype == f->u_dt && \
                         (c)->comm == f->u_comm && (!(c)->depth || !(c)->group) && !((c)->flags & NCS_CALL_F_CAPTURED) && \
                         ncs_rc_ok((c)->rc))
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = &x[i];
    if (f->u_again && f->kw.on && SAME_LAUNCH(c)) {
      /* a run of them, the log's last launch of their shape: each commits the launch before as
       * a one-word entry of that shape (model/wordlog.h) in room there is, the log's end in
       * registers; the first that does not fit goes below (commit_unit) */
      struct ncs_launches *l = f->done;
      uint32_t *at = l->log.at, *end = l->log.end, code = l->last;
      uint64_t last = l->log.last_t, tp = f->u.t_first;
      /* SAME_LAUNCH with u's shape in locals (u_one holds: c passed it; the stores to the log
       * would reload them from f) */
      const uint32_t op = f->u_op, comm = f->u_comm, dt = f->u_dt;
      const uint64_t count = f->u_count;
      size_t j = i;
      for (; j < n && at < end && ncs_wlog_fits(code, tp - last); j++) {
        const struct ncs_call *y = &x[j];
        if (y->op != op || y->count != count || y->datatype != dt || y->comm != comm || (y->depth && y->group) ||
            (y->flags & NCS_CALL_F_CAPTURED) || !ncs_rc_ok(y->rc))
          break;
        *at++ = ncs_wlog_word(code, tp - last);
        last = tp;
        tp = y->t_enter;
      }
      if (j > i) {
        size_t words = (size_t)(at - l->log.at);
        l->log.at = at;
        l->log.tail->used = (uint32_t)(at - l->log.tail->w);
        l->log.last_t = last;
        l->log.n += words;
        if (f->u.kop >= 0 && f->u.kop < NKOPS) f->nua[f->u.kop] += words;
        f->u.t_first = tp;
        i = j - 1;
        continue;
      }
    }
    if (SAME_LAUNCH(c)) {
      /* the launch of the call before, again (DDP's and the doubles' runs of one op and size):
       * its kop, bus bytes and steps as the unit being made has them */
      commit_unit(f);
      f->u_again = !f->lost && !f->dropped && f->done;
      f->u.t_first = c->t_enter;
      f->have_u = 1;
      continue;
    }
#undef SAME_LAUNCH
    int kop = c->op < NCS_OP_LIMIT ? kop_of_op[c->op] : -2;
    if (kop == -2 || (c->flags & NCS_CALL_F_CAPTURED) || !ncs_rc_ok(c->rc)) continue;
    int nr = c->comm < f->ncomm ? f->nranks[c->comm] : 0;
    int p2p = ncs_op_kind(c->op) == NCS_KIND_P2P;
    if (nr != f->rule_n) { ncs_rule_ops(f->rule, nr); f->rule_n = nr; } /* a file's calls: mostly one communicator */
    const struct ncs_rule_op *ru = &f->rule[c->op];
    double bb = p2p ? (double)ncs_rule_bytes(c->count, c->datatype)
                    : ru->fac > 0 ? ncs_rule_S(c->op, c->count, c->datatype, nr) * ru->fac : 0; /* ncs_rule_busbytes */
    uint64_t grp = c->depth > 0 ? c->group : 0;
    struct unit *last = &f->u;
    if (!(grp && f->have_u && last->group == grp && last->kop == kop)) {
      commit_unit(f);
      *last = (struct unit){.t_first = c->t_enter, .group = grp, .kop = kop, .op = c->op};
      f->have_u = 1;
      f->u_one = !grp && !p2p, f->u_op = c->op, f->u_comm = c->comm, f->u_dt = c->datatype, f->u_count = c->count;
      f->u_again = 0;
    } else f->u_one = 0;
    if (p2p) { /* a group of sends and receives moves the larger of the two (nd_model.c's rule) */
      if (c->op == NCS_OP_Recv) last->recvd += bb; else last->sent += bb;
      last->busbytes = last->sent > last->recvd ? last->sent : last->recvd;
      last->steps = 1;
    } else {
      last->busbytes += bb;
      double st = ru->steps;
      if (st > last->steps) last->steps = st;
    }
  }
  return 0;
}

static void wf_visitor(void *state, int file, struct ncs_visitor *v) {
  struct wf *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  s->f[file].ks = ncs_stages_kernels(s->stages, file, &s->f[file].fill);
  if (!s->f[file].ks) s->f[file].ks = &s->f[file].own, s->f[file].fill = 1;
  s->f[file].owner = s;
  s->f[file].rule_n = -1;
  v->process = wf_process;
  v->raw = wf_raw;
  v->kernels = wf_kernels;
  v->comm = wf_comm;
  v->calls = wf_calls;
}

/* The file's table of distinct sizes (f->size), looked up by a hash of open slots (index + 1,
 * 0 empty) while the file is done. */
struct sizes { uint32_t *slot; size_t nslot, cap; long last; /* the index found last (launches repeat a size) */ };
static uint64_t size_hash(const struct ncs_rl_size *x) {
  uint64_t a, b;
  memcpy(&a, &x->busbytes, sizeof a);
  memcpy(&b, &x->steps, sizeof b);
  return ncs_mix64(a ^ ncs_mix64(b ^ x->op));
}
static int size_same(const struct ncs_rl_size *x, const struct ncs_rl_size *y) {
  return !memcmp(&x->busbytes, &y->busbytes, sizeof x->busbytes) && !memcmp(&x->steps, &y->steps, sizeof x->steps) && x->op == y->op;
}
/* x's index in f->size (added when new), or 0 (unknown) when the table is full or out of memory;
 * the caller tries h->last first. */
static long size_index(struct wf_file *f, struct sizes *h, const struct ncs_rl_size *x) {
  if (f->nsize * 2 >= h->nslot) { /* keep the slots under half full */
    size_t n = h->nslot ? h->nslot * 2 : 64;
    uint32_t *sl = calloc(n, sizeof *sl);
    if (!sl) return f->nsize ? 0 : -1;
    for (size_t i = 0; i < f->nsize; i++) {
      size_t j = (size_t)size_hash(&f->size[i]) & (n - 1);
      while (sl[j]) j = (j + 1) & (n - 1);
      sl[j] = (uint32_t)i + 1;
    }
    free(h->slot);
    h->slot = sl, h->nslot = n;
  }
  size_t j = (size_t)size_hash(x) & (h->nslot - 1);
  for (; h->slot[j]; j = (j + 1) & (h->nslot - 1))
    if (size_same(&f->size[h->slot[j] - 1], x)) return h->last = (long)h->slot[j] - 1;
  if (f->nsize > NCS_RL_SIZE) return 0;
  if (ncs_grow((void **)&f->size, &h->cap, f->nsize + 1, sizeof *f->size) != 0) return f->nsize ? 0 : -1;
  f->size[f->nsize] = *x;
  h->slot[j] = (uint32_t)++f->nsize;
  return h->last = (long)f->nsize - 1;
}

/* The file's kernels (the store's, sorted) packed into relayout's 16 bytes (f->k), in place
 * (kernel i is written at 16 i, read at 24 i before), with what each kernel's name says (NCCL or
 * not, its operation); nka[kop]: the NCCL kernels of each operation. A stream becomes its index
 * in the order streams first appear (NCS_RL_STREAMS: relayout tells only the first ones apart),
 * a duration of 2^32 - 1 ns or more (or an end before the start) goes to f->lng. Out of memory
 * for that list: the file keeps no kernel. One pass; the memory past the packed kernels is given
 * back once they are sized (wf_file_done). */
static void pack(struct wf_file *f, struct ncs_kstore_k *kin, size_t *nka) {
  uint32_t sid[NCS_RL_STREAMS];
  unsigned ns = 0;
  size_t caplong = 0;
  uint32_t last = 0, rinfo = 0; /* the name looked up last (kernels repeat a few names), and what it says */
  int have_last = 0, last_nccl = 0, last_kop = -1;
  /* the kernel before's info and stream, and what they gave: its packed info, its nka slot (-1 none) */
  uint32_t prev_info = 0, prev_stream = 0, prev_out = 0;
  int have_prev = 0, prev_ka = -1;
  for (size_t i = 0; i < f->nk; i++) {
    struct ncs_kstore_k x;
    memcpy(&x, &kin[i], sizeof x);
    uint64_t d = x.end - x.start;
    if (have_prev && x.info == prev_info && x.stream == prev_stream && d < NCS_RL_LONG) {
      /* the name, class and stream of the kernel before (mostly): the same packed info, for it
       * and the ones after of the same, in one loop (counted once) */
      size_t j = i;
      for (;;) {
        struct ncs_rl_k y = {x.start, (uint32_t)d, prev_out};
        memcpy((char *)kin + j * sizeof y, &y, sizeof y);
        if (++j == f->nk) break;
        memcpy(&x, &kin[j], sizeof x);
        d = x.end - x.start;
        if (x.info != prev_info || x.stream != prev_stream || d >= NCS_RL_LONG) break;
      }
      if (prev_ka >= 0) nka[prev_ka] += j - i;
      i = j - 1;
      continue;
    }
    uint32_t name = ncs_ks_name(&x);
    if (!have_last || name != last) {
      const char *nm = ncs_knames_get(&f->names, name);
      last = name, have_last = 1;
      last_nccl = ncs_is_nccl_kernel(nm ? nm : "");
      last_kop = kop_of(nm);
    }
    int nccl = ncs_ks_class(&x) == NCS_KCLASS_NCCL || last_nccl;
    rinfo = nccl ? NCS_RL_NCCL | (uint32_t)(last_kop + 1) << NCS_RL_KOP_SHIFT : 0;
    prev_ka = nccl && last_kop >= 0 && last_kop < NKOPS ? last_kop : -1;
    if (prev_ka >= 0) nka[prev_ka]++;
    unsigned si = 0;
    while (si < ns && sid[si] != x.stream) si++;
    if (si == ns && ns < NCS_RL_STREAMS) sid[ns++] = x.stream;
    struct ncs_rl_k y = {x.start, d < NCS_RL_LONG ? (uint32_t)d : NCS_RL_LONG, rinfo | si << NCS_RL_STREAM_SHIFT};
    have_prev = 1, prev_info = x.info, prev_stream = x.stream, prev_out = y.info;
    if (y.dur == NCS_RL_LONG) {
      if (ncs_grow((void **)&f->lng, &caplong, f->nlong + 1, sizeof *f->lng) != 0) { f->nk = 0; break; }
      f->lng[f->nlong++] = (struct ncs_rl_long){i, x.end};
    }
    memcpy((char *)kin + i * sizeof y, &y, sizeof y);
  }
  f->k = (struct ncs_rl_k *)(void *)kin;
}

/* Kernels get their operation and their launch's size; boundaries become kernel indices. */
static void wf_file_done(void *state, int file, const struct ncs_read_status *st) {
  (void)st;
  struct wf *s = state;
  if (!s || file < 0 || file >= s->n) return;
  struct wf_file *f = &s->f[file];
  /* the kernels, sorted (by gputime already, when it read them too), are ours now */
  if (!f->ks) f->ks = &f->own; /* (a file never read) */
  ncs_kstore_sort(f->ks);
  struct ncs_kstore_k *kin = f->ks->k;
  size_t capin = f->ks->cap;
  f->nk = f->ks->n;
  memset(f->ks, 0, sizeof *f->ks);
  f->ks = NULL;
  size_t nka[NKOPS] = {0}, *nua = f->nua, next[NKOPS] = {0};
  pack(f, kin, nka);
  ncs_knames_free(&f->names);
  commit_unit(f);
  /* the i-th kernel of an operation is its i-th launch: the operations whose kernels and
   * launches are as many pair them in one walk over the launches, each operation's kernels
   * taken in order (next[kop]) */
  struct ncs_rl_k *k = f->k;
  struct sizes sz = {0};
  if (size_index(f, &sz, &(struct ncs_rl_size){0}) != 0) f->lost = 1; /* [0]: unknown */
  struct ncs_launch_cur cur;
  struct ncs_launch scratch[2]; /* launches written out (code 0): u's and un's */
  long xcode[NCS_LAUNCH_SHAPES + 1] = {0}; /* the size index (> 0) of a launch shape's code, once found */
  static const struct ncs_launches none;
  const struct ncs_launches *log_u = f->done ? f->done : &none;
  const struct ncs_step_starts *log = NULL;
  size_t nb = f->nk ? ncs_stages_starts(s->stages, file, &log) : 0; /* no kernel: no boundary kernel */
  struct ncs_starts_cur sc; /* the starts, read in order (not copied out: 8 bytes a step) */
  uint64_t tg = 0;          /* the start at the cursor, when have_g */
  int have_g = 0;
  if (nb) { ncs_starts_begin(log, &sc); have_g = ncs_starts_next(&sc, &tg); }
  size_t capb = 0;
  /* the boundary at start tg is the kernel of the launch holding it: the last begun by then (the
   * walk's launch u, at ut, while the next one begins after tg) */
  ncs_launches_begin(log_u, &cur);
  uint64_t ut = 0, nt = 0;
  uint32_t uc = 0, nc = 0;
  int sw = 0;
  const struct ncs_launch *u = f->lost ? NULL : ncs_launches_next_shape(log_u, &cur, &ut, &uc, &scratch[sw]), *un;
  while (u) {
    size_t kj = (size_t)-1; /* launch u's kernel */
    int kop = u->kop;
    if (kop >= 0 && kop < NKOPS && nka[kop] == nua[kop]) {
      size_t a = next[kop];
      while (a < f->nk && !(ncs_rl_nccl(&k[a]) && ncs_rl_kop(&k[a]) == kop)) a++;
      if (a < f->nk) {
        long x = xcode[uc];
        if (!uc || !x) {
          struct ncs_rl_size x1 = {u->busbytes, u->steps, u->op};
          x = sz.last > 0 && size_same(&f->size[sz.last], &x1) ? sz.last : size_index(f, &sz, &x1);
          if (uc && x > 0) xcode[uc] = x;
        }
        if (x > 0) k[a].info |= (uint32_t)x;
        kj = a;
        next[kop] = a + 1;
      }
    }
    /* then the launches of u's code that follow as one-word entries in the log's block, while
     * their kernels follow too (k[a], no other kernel between): each paired straight from its word
     * (no shape read, no size looked up), the starts before it made boundaries as below */
    if (kj != (size_t)-1 && uc && xcode[uc] > 0) {
      const uint32_t want = NCS_RL_NCCL | (uint32_t)(kop + 1) << NCS_RL_KOP_SHIFT, xv = (uint32_t)xcode[uc];
      const struct ncs_wlog_block *b = cur.c.b;
      size_t a = kj + 1, nk = f->nk;
      /* the cursor in registers: its word, the words there are, the entries left, the time; a
       * word and a kernel a step, so the walk ends by the block's last word, the log's last
       * entry or the last kernel, whichever comes first (stop: the kernel past it) */
      uint32_t at = cur.c.at, used = b ? b->used : 0;
      uint64_t left = cur.left, t = cur.c.t;
      size_t room = used > at ? used - at : 0, a0 = a;
      if (room > left) room = (size_t)left;
      size_t stop = nk - a < room ? nk : a + room;
      const uint32_t *wd = b ? b->w + at : NULL; /* kernel a's word: wd[a - a0] */
      while (a < stop) {
        uint32_t word = wd[a - a0], info = k[a].info; /* (each read once: the store to k may alias the log) */
        if (word >> NCS_WLOG_DT_BITS != uc || (info & (NCS_RL_NCCL | 7u << NCS_RL_KOP_SHIFT)) != want) break;
        uint64_t t2 = t + (word & ((1u << NCS_WLOG_DT_BITS) - 1));
        for (; have_g && t2 > tg; have_g = ncs_starts_next(&sc, &tg))
          if (ut <= tg && ncs_grow((void **)&f->bound, &capb, f->nbound + 1, sizeof *f->bound) == 0)
            f->bound[f->nbound++] = (uint32_t)kj;
        t = t2;
        ut = t2;
        k[a].info = info | xv;
        kj = a++;
      }
      cur.c.at = at + (uint32_t)(a - a0), cur.left = left - (a - a0), cur.c.t = t;
      next[kop] = a;
    }
    sw ^= 1;
    un = ncs_launches_next_shape(log_u, &cur, &nt, &nc, &scratch[sw]);
    for (; have_g && (!un || nt > tg); have_g = ncs_starts_next(&sc, &tg))
      if (ut <= tg && kj != (size_t)-1 && ncs_grow((void **)&f->bound, &capb, f->nbound + 1, sizeof *f->bound) == 0)
        f->bound[f->nbound++] = (uint32_t)kj;
    u = un, ut = nt, uc = nc;
  }
  f->capk = capin;
  ncs_big_shrink((void **)&f->k, &f->capk, sizeof *kin, f->nk, sizeof *f->k);
  free(sz.slot);
  give_spare(f);
  free(f->nranks);
  f->nranks = NULL;
  /* the links finish() asks of this host, then no topology is kept */
  f->have_p2p = f->topo && ncs_linkref_of(NCS_TC_P2P, f->topo, &f->p2p) == 0;
  f->have_user = f->topo && s->user_tclass && ncs_linkref_of(s->user_tclass, f->topo, &f->user) == 0;
  free(f->topo);
  f->topo = NULL;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(const double *v, int n) {
  double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
  if (!w || n <= 0) { free(w); return NAN; }
  memcpy(w, v, (size_t)n * sizeof *w);
  qsort(w, (size_t)n, sizeof *w, cmp_dbl);
  double m = w[(n - 1) / 2];
  free(w);
  return m;
}

/* The transfer time of kernel k at link l's α-β reference; `cap` keeps the faster of that and
 * the observed (a fix never slows a kernel down); an unsized kernel keeps its time. */
struct link_ctx { const struct ncs_link *l; double gbps; int op; int cap; };
static double at_link(void *ctx, const struct ncs_rl_size *k, double t) {
  const struct link_ctx *c = ctx;
  if (k->busbytes <= 0) return t;
  if (c->op >= 0 && (int)k->op != c->op) return t;
  double ref = c->l ? k->steps * c->l->alpha_us * 1e3 + k->busbytes / c->l->beta_gbps : k->busbytes / c->gbps;
  return c->cap && ref > t ? t : ref;
}

static const char *const a_relayout[] = {
  "each rank's GPU timeline is laid out again in the order it ran: a kernel starts after its stream's previous kernel, the kernel on another stream it waited for, or the same idle gap as traced",
  "a collective ends when its last rank arrives plus its transfer time; compute overlap and waiting are recomputed",
  NULL};

static void add(struct wf *s, const char *id, const char *title, double step, double fixed, const char *model,
                const char *const *assume, double evidence, int rank) {
  if (s->res.n >= NCS_WHATIF_MAX) return;
  struct ncs_whatif_item *it = &s->res.it[s->res.n++];
  memset(it, 0, sizeof *it);
  snprintf(it->id, sizeof it->id, "%s", id);
  snprintf(it->title, sizeof it->title, "%s", title);
  it->step_s = step;
  it->step_s_if_fixed = fixed;
  it->saved_s_per_step = step - fixed;
  it->model = model;
  for (int i = 0; assume && assume[i] && i < 3; i++) it->assumptions[i] = assume[i];
  it->evidence = evidence;
  it->rank = rank;
}

/* The relaid baseline: the timelines laid out again unchanged, once, when a change first asks
 * for it (a job with no finding to price and no --what-if needs none: one rank, no transport). */
struct baseline { double med; int state; /* 0 not laid out yet, 1 med valid, -1 failed */ };
/* The relaid step (median rank) with change c, as a difference from the relaid baseline added to
 * the observed step (what the replay itself gets wrong cancels); NaN when it cannot be applied. */
static double relaid(struct ncs_rl *rl, const struct ncs_rl_change *c, struct baseline *b, double obs_med) {
  double *v = malloc((size_t)rl->nr * sizeof *v);
  double out = NAN;
  if (!b->state && !rl->r[0].dep && ncs_rl_prepare(rl) != 0) b->state = -1; /* (one rank: prepared when first laid out) */
  if (v && !b->state) {
    struct ncs_rl_change none = {.fix_rank = -1};
    b->state = ncs_rl_run(rl, &none, v) == 0 ? 1 : -1;
    if (b->state > 0) b->med = median(v, rl->nr);
  }
  if (v && b->state > 0 && ncs_rl_run(rl, c, v) == 0) out = obs_med + (median(v, rl->nr) - b->med);
  free(v);
  return out;
}

/* The median over p[0..n) of the double at byte offset `off`, in seconds (v: scratch of n). */
static double med_of(const struct ncs_rl_split *p, int n, size_t off, double *v) {
  for (int r = 0; r < n; r++) memcpy(&v[r], (const char *)&p[r] + off, sizeof *v);
  return median(v, n) * 1e-9;
}

/* Where the step goes: each part's median over the ranks; the rank that made the others wait.
 * ex[0..nr): each rank's exposed communication per step (ncs_rl_observed_exposed), from the
 * same sweep when it could stream. */
static void split_of(struct ncs_whatif_split *o, const struct ncs_rl *rl, double step_ns, const int *rank_of, double *ex) {
  struct ncs_rl_split *p = malloc((size_t)rl->nr * sizeof *p);
  double *v = malloc((size_t)rl->nr * sizeof *v);
  memset(o, 0, sizeof *o);
  o->wait_rank = -1;
  if (!p || !v) {
    for (int r = 0; r < rl->nr; r++) ex[r] = ncs_rl_observed_exposed(rl, r);
    goto out;
  }
  int n = 0;
  for (int r = 0; r < rl->nr; r++) {
    int ok = ncs_rl_split(rl, r, &p[n]) == 0;
    ex[r] = ok && !p[n].heaped ? p[n].exposed : ncs_rl_observed_exposed(rl, r);
    n += ok;
  }
  if (!n) goto out;
  o->compute = med_of(p, n, offsetof(struct ncs_rl_split, compute), v);
  o->wait = med_of(p, n, offsetof(struct ncs_rl_split, wait), v);
  o->idle = med_of(p, n, offsetof(struct ncs_rl_split, idle), v);
  double sum = o->compute + o->wait + o->idle;
  for (int k = 0; k < NCS_WHATIF_KOPS; k++) {
    o->kop[k] = kops[k];
    o->transfer[k] = med_of(p, n, offsetof(struct ncs_rl_split, transfer) + (size_t)k * sizeof(double), v);
    o->transfer_all[k] = med_of(p, n, offsetof(struct ncs_rl_split, transfer_all) + (size_t)k * sizeof(double), v);
    sum += o->transfer[k];
    double bb = med_of(p, n, offsetof(struct ncs_rl_split, busbytes) + (size_t)k * sizeof(double), v) * 1e9;
    o->busbw_gbps[k] = o->transfer_all[k] > 0 ? bb / o->transfer_all[k] / 1e9 : 0;
  }
  o->rest = step_ns * 1e-9 - sum;
  if (ncs_rl_wait_caused(rl, v) && rl->nr > 1) {
    int w = 0;
    for (int r = 1; r < rl->nr; r++) if (v[r] > v[w]) w = r;
    o->wait_rank = rank_of[w];
    o->wait_caused_s = v[w] / (double)(rl->r[w].nbound > 1 ? rl->r[w].nbound - 1 : 1) * 1e-9;
  }
out:
  free(p);
  free(v);
}

static void wf_finish(void *state, const struct ncs_job *job) {
  struct wf *s = state;
  if (!s) return;
  s->res.min_share = MIN_SHARE;
  /* every file is read: the spare launch logs go before the replay's memory is made */
  for (; s->nspare > 0; s->nspare--) { ncs_launches_free(s->spare[s->nspare - 1]); free(s->spare[s->nspare - 1]); }
  struct ncs_rl rl = {0};
  double *obs = NULL, *wait = NULL, *ex = NULL;
  int *rank_of = NULL;
  rl.r = calloc((size_t)(s->n > 0 ? s->n : 1), sizeof *rl.r);
  rank_of = calloc((size_t)(s->n > 0 ? s->n : 1), sizeof *rank_of);
  if (!rl.r || !rank_of) goto out;
  int nokern = 0, nosteps = 0;
  for (int k = 0; k < s->n; k++) {
    int i = job->order[k];
    struct wf_file *f = &s->f[i];
    if (job->rank[i].no_comm) continue;
    if (!f->nk) { nokern++; continue; }
    if (f->nbound < 2) { nosteps++; continue; }
    static const struct ncs_rl_size unknown = {0}; /* a file whose size table could not be made */
    rl.r[rl.nr] = (struct ncs_rl_rank){.k = f->k, .n = f->nk, .lng = f->lng, .nlong = f->nlong, .size = f->size ? f->size : &unknown, .bound = f->bound, .nbound = f->nbound};
    rank_of[rl.nr++] = job->rank[i].rank;
  }
  if (!rl.nr) {
    snprintf(s->res.why_not, sizeof s->res.why_not, "%s",
             nokern ? "no kernel activity in the trace: the GPU timeline cannot be laid out" : "no steps found on the GPU (--step-op OP names the boundary)");
    goto out;
  }
  if (nokern || nosteps)
    snprintf(s->res.why_not, sizeof s->res.why_not, "%d rank(s) left out: %d without kernel activity, %d without steps", nokern + nosteps, nokern, nosteps);
  /* the dependencies: one rank's split needs none (its collectives are its own: in step), only a
   * layout does (relaid) */
  if (rl.nr == 1) rl.synced = 1;
  else if (ncs_rl_prepare(&rl) != 0) goto out;
  obs = malloc((size_t)rl.nr * sizeof *obs);
  wait = malloc((size_t)rl.nr * sizeof *wait);
  ex = malloc((size_t)rl.nr * sizeof *ex);
  if (!obs || !wait || !ex) goto out;
  for (int r = 0; r < rl.nr; r++) obs[r] = ncs_rl_observed_step(&rl, r);
  struct baseline bl = {0};
  double step = median(obs, rl.nr);
  s->res.have = step > 0;
  s->res.step_s = step * 1e-9;
  s->res.steps = (int)rl.r[0].nbound;
  if (!s->res.have) goto out;

  split_of(&s->res.split, &rl, step, rank_of, ex);

  /* the transport: the link NVLink would give when NCCL did not use it, else the link in use */
  const struct ncs_headline *h = job->headline;
  if (h && h->link.tclass) {
    struct ncs_link best = h->link;
    const char *id = "low-busbw";
    if (h->nvlink_in_box == 1 && !(h->transports & ((1u << NCS_TC_P2P) | (1u << NCS_TC_NVLS)))) {
      struct ncs_link l = {0};
      int any = 0;
      for (int i = 0; i < s->n; i++) {
        struct ncs_link x;
        if (!s->f[i].have_p2p) continue;
        x = s->f[i].p2p;
        if (!any || ncs_linkref_slower(&l, &x) == &x) l = x;
        any = 1;
      }
      if (!any) ncs_linkref_of(NCS_TC_P2P, NULL, &l);
      best = l;
      id = "nvlink-unused";
    }
    struct link_ctx lc = {&best, 0, -1, 1};
    struct ncs_rl_change c = {at_link, &lc, -1};
    double fixed = relaid(&rl, &c, &bl, step);
    static const char *const a_link[] = {
      "each NCCL kernel's transfer takes what the reference link reaches for its size and algorithm steps (alpha-beta, docs/REFERENCE-FIGURES.md); a kernel already faster keeps its time",
      NULL, NULL};
    const char *al[4] = {a_link[0], a_relayout[0], a_relayout[1], NULL};
    char title[224];
    snprintf(title, sizeof title, "communication at %s", best.why);
    char *colon = strchr(title, ':');
    if (colon) *colon = 0;
    /* the reference is a model: a link in use is called slow only when it costs 10% of the step */
    if (isfinite(fixed) && step - fixed >= (best.tclass == h->link.tclass ? MIN_LOW_BUSBW : MIN_SHARE) * step)
      add(s, id, title, s->res.step_s, fixed * 1e-9,
          "every NCCL kernel re-laid at the reference link's busbw for its size, each rank's step laid out again", al, 0, -1);
  }
  /* a straggler: the rank whose lateness made the others wait most */
  size_t ncoll = ncs_rl_wait_caused(&rl, wait);
  if (ncoll && rl.nr > 1) {
    int w = 0;
    for (int r = 1; r < rl.nr; r++) if (wait[r] > wait[w]) w = r;
    struct ncs_rl_change c = {NULL, NULL, w};
    double fixed = relaid(&rl, &c, &bl, step);
    double per_step = wait[w] / (double)(rl.r[w].nbound > 1 ? rl.r[w].nbound : 1);
    if (isfinite(fixed) && step - fixed >= MIN_SHARE * step) {
      static const char *const a_strag[] = {
        "its compute kernels take the median length of the other ranks' kernels at the same place in the step",
        "its host-side lateness (idle gaps) is not changed", NULL};
      const char *al[4] = {a_strag[0], a_strag[1], a_relayout[1], NULL};
      char title[224];
      snprintf(title, sizeof title, "rank %d late: the others wait for it", rank_of[w]);
      add(s, "straggler", title, s->res.step_s, fixed * 1e-9,
          "the straggler's compute kernels as long as the other ranks', every rank's step laid out again", al,
          per_step * 1e-9, rank_of[w]);
    }
  }
  /* exposed communication: the ceiling of overlap work */
  {
    double e = median(ex, rl.nr);
    if (e >= MIN_SHARE * step) {
      static const char *const a_exp[] = {
        "every exposed NCCL kernel runs under compute: the ceiling of overlap work (bucket sizing, earlier launches); the transfer itself is unchanged",
        "exposed: NCCL kernel time with no compute kernel beside it between the first and last step boundary, per step (median rank)", NULL};
      add(s, "exposed-comm", "exposed communication hidden under compute", s->res.step_s, (step - e) * 1e-9,
          "the step minus its exposed communication", a_exp, 0, -1);
    }
  }
  /* by saved time, descending (insertion sort: stable) */
  for (int a = 1; a < s->res.n; a++)
    for (int b = a; b > 0 && s->res.it[b].saved_s_per_step > s->res.it[b - 1].saved_s_per_step; b--) {
      struct ncs_whatif_item t = s->res.it[b]; s->res.it[b] = s->res.it[b - 1]; s->res.it[b - 1] = t;
    }
  /* the headline's problem lines carry their cost */
  for (int i = 0; job->headline && i < s->res.n && job->headline->ncost < (int)(sizeof job->headline->cost / sizeof *job->headline->cost); i++) {
    struct ncs_headline_cost *c = &job->headline->cost[job->headline->ncost++];
    snprintf(c->id, sizeof c->id, "%s", s->res.it[i].id);
    c->step_s = s->res.it[i].step_s;
    c->fixed_s = s->res.it[i].step_s_if_fixed;
  }
  /* the user's target */
  if (s->spec) {
    struct ncs_link l = {0};
    struct link_ctx lc = {NULL, s->user_gbps, s->user_op, 0};
    char title[224];
    if (s->user_tclass) {
      int any = 0;
      for (int i = 0; i < s->n; i++) {
        struct ncs_link x;
        if (!s->f[i].have_user) continue;
        x = s->f[i].user;
        if (!any || ncs_linkref_slower(&l, &x) == &x) l = x;
        any = 1;
      }
      if (!any) ncs_linkref_of(s->user_tclass, NULL, &l);
      lc.l = &l;
      snprintf(title, sizeof title, "communication at %s", l.why);
      char *colon = strchr(title, ':');
      if (colon) *colon = 0;
    } else {
      snprintf(title, sizeof title, "%s at %g GB/s busbw", s->user_op >= 0 ? ncs_op_name((unsigned)s->user_op) : "every NCCL kernel", s->user_gbps);
    }
    struct ncs_rl_change c = {at_link, &lc, -1};
    double fixed = relaid(&rl, &c, &bl, step);
    static const char *const a_user[] = {
      "each NCCL kernel (of that operation) with a known size takes its bus bytes over the target busbw (a transport: alpha x steps + bus bytes / beta of its reference link); kernels of unknown size keep their time",
      NULL};
    const char *al[4] = {a_user[0], a_relayout[0], a_relayout[1], NULL};
    add(s, "what-if", title, s->res.step_s, isfinite(fixed) ? fixed * 1e-9 : NAN,
        "the NCCL kernels re-laid at the target, each rank's step laid out again", al, 0, -1);
  }
out:
  ncs_rl_free(&rl);
  free(rl.r);
  free(rank_of);
  free(obs);
  free(wait);
  free(ex);
}

static const void *wf_result(void *state) { return ncs_whatif_result(state); }

static void wf_destroy(void *state) {
  struct wf *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    ncs_big_free(s->f[i].k, s->f[i].capk, sizeof *s->f[i].k);
    ncs_kstore_free(&s->f[i].own);
    free(s->f[i].lng);
    if (s->f[i].done) ncs_launches_free(s->f[i].done);
    free(s->f[i].done);
    free(s->f[i].nranks);
    free(s->f[i].topo);
    free(s->f[i].bound);
    free(s->f[i].size);
    ncs_knames_free(&s->f[i].names);
  }
  free(s->f);
  for (int i = 0; i < s->nspare; i++) { ncs_launches_free(s->spare[i]); free(s->spare[i]); }
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static const struct ncs_analysis_option wf_options[] = {
  {"what-if", "busbw=GBPS[,op=OP]|transport=P2P|NVLS|SHM|NET", "the step time if NCCL's kernels ran at that busbw or over that link (docs/METRICS.md)"},
  {NULL, NULL, NULL}};

const struct ncs_analysis ncs_analysis_whatif = {
  .name = "whatif",
  .options = wf_options,
  .bad_options = wf_bad_options,
  .create = wf_create,
  .visitor = wf_visitor,
  .file_done = wf_file_done,
  .finish = wf_finish,
  .result = wf_result,
  .destroy = wf_destroy,
};
