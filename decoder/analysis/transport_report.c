/* transport_report.c — the transports and topology of `ncclscope report`, plugged in through
 * decoder/analysis/analysis.h. Per communicator: the rank x rank connections from the captured
 * NCCL log lines (NCCL_LOG records). Per host: the NVML topology (TOPO_* records,
 * docs/FORMAT-TOPO.md) and which transport NCCL chose between each pair of its GPUs. Its
 * result is data (analysis/transport_report.h), printed by render/transport_render.c.
 * Each connection line goes to the communicator NCCL was working on when it printed it
 * (model/connowner.h); lines no rule settles are counted, never put in a matrix.
 * Memory: per file one transport model (distinct connections), one per communicator, the
 * connection lines not settled yet (model/connowner.h) and at most one topology. */
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "analysis/analysis.h"
#include "analysis/transport_report.h"
#include "model/connowner.h"
#include "model/topo.h"
#include "model/transport.h"

struct tr_comm { uint32_t idx; uint64_t comm_id; int nranks; struct ncs_tmodel conns; };
struct tr_file {
  char host[64];
  struct ncs_tmodel log;
  struct ncs_topo *topo;
  int rank, nranks, device, version_code;
  uint64_t comm_id;
  struct tr_comm *comms;      /* its communicators, in COMM record order */
  int ncomms, capcomms;
  struct ncs_cown *own;       /* whose each connection line is (NULL: out of memory) */
  uint64_t unattributed;
};
struct tr_state { int n; struct tr_file *f; struct ncs_transport_result res; };

static void *tr_create(const struct ncs_job *job) {
  struct tr_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->n = job->n;
  s->f = calloc((size_t)(job->n ? job->n : 1), sizeof *s->f);
  if (!s->f) { free(s); return NULL; }
  for (int i = 0; i < job->n; i++) { ncs_tmodel_init(&s->f[i].log); s->f[i].rank = -1; s->f[i].device = -1; }
  return s;
}

static int tr_process(void *ctx, const struct ncs_process *p) {
  struct tr_file *f = ctx;
  const char *h = ncs_process_get(p, "host");
  const char *v = ncs_process_get(p, "nccl_version");
  snprintf(f->host, sizeof f->host, "%s", h ? h : "");
  if (v) f->version_code = atoi(v);
  return 0;
}
static int tr_comm(void *ctx, const struct ncs_comm *c) {
  struct tr_file *f = ctx;
  if (ncs_rc_ok(c->rc) && c->nranks > f->nranks) {
    f->nranks = c->nranks; f->rank = c->rank; f->device = c->device; f->comm_id = c->comm_id;
  }
  if (c->nranks < 1) return 0;
  ncs_cown_comm(f->own, c);
  struct tr_comm *m = NULL;
  for (int i = 0; i < f->ncomms && !m; i++) /* a second record completes a non-blocking init */
    if (f->comms[i].idx == c->comm) m = &f->comms[i];
  if (!m) {
    if (f->ncomms == f->capcomms) {
      int nc = f->capcomms ? f->capcomms * 2 : 8;
      struct tr_comm *p = realloc(f->comms, (size_t)nc * sizeof *p);
      if (!p) return 0;
      f->comms = p; f->capcomms = nc;
    }
    m = &f->comms[f->ncomms++];
    memset(m, 0, sizeof *m);
    ncs_tmodel_init(&m->conns);
    m->idx = c->comm;
  }
  m->comm_id = c->comm_id; m->nranks = c->nranks;
  return 0;
}

static int tr_log(void *ctx, const struct ncs_log_line *l) {
  struct tr_file *f = ctx;
  ncs_tmodel_line(&f->log, l->line, l->len);
  struct ncs_nl_rec r;
  if (ncs_nl_parse(l->line, l->len, &r) != NCS_NL_NONE) ncs_cown_line(f->own, &r, l->t);
  return 0;
}
static int tr_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct ncs_cown *own = ((struct tr_file *)ctx)->own;
  if (n == 1) ncs_cown_call(own, x->comm, x->t_enter, x->t_exit); /* CALL and GPU_TIME alternating */
  else ncs_cown_calls(own, x, n);
  return 0;
}
static void given(void *ctx, uint32_t comm, const struct ncs_tconn *c) {
  struct tr_file *f = ctx;
  for (int i = 0; i < f->ncomms; i++)
    if (f->comms[i].idx == comm) { ncs_tmodel_add_conn(&f->comms[i].conns, c); return; }
}
static void tr_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct tr_state *s = state;
  (void)st;
  if (!s || file < 0 || file >= s->n) return;
  struct tr_file *f = &s->f[file];
  f->unattributed += ncs_cown_settle(f->own, given, f);
  ncs_cown_free(f->own);
  f->own = NULL;
}
static int tr_raw(void *ctx, const struct ncs_raw *r) {
  struct tr_file *f = ctx;
  if (r->type != NCS_REC_TOPO_GPU && r->type != NCS_REC_TOPO_LINK) return 0;
  if (!f->topo) {
    if (!(f->topo = malloc(sizeof *f->topo))) return 0;
    ncs_topo_init(f->topo, f->host);
  }
  ncs_topo_add_raw(f->topo, r->type, r->body, r->len);
  return 0;
}
static int tr_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  (void)ctx, (void)k, (void)raw, (void)n; /* KERNEL records are none of its business: taken as runs, not one by one through tr_raw */
  return 0;
}
static void tr_visitor(void *state, int file, struct ncs_visitor *v) {
  struct tr_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  if (!s->f[file].own) s->f[file].own = ncs_cown_new();
  v->process = tr_process;
  v->comm = tr_comm;
  v->calls = tr_calls;
  v->log_line = tr_log;
  v->raw = tr_raw;
  v->kernels = tr_kernels;
}

/* first file of each host that has a topology */
static int host_topo_owner(const struct tr_state *s, int i) {
  for (int k = 0; k < s->n; k++)
    if (s->f[k].topo && !strcmp(s->f[k].host, s->f[i].host)) return k;
  return -1;
}

static int tag_gpu(const struct tr_file *f, const struct ncs_topo *t, const char *tag) {
  if (!tag[0]) return -1;
  int digits = 1;
  for (const char *p = tag; *p; p++) digits &= *p >= '0' && *p <= '9';
  int vc = f->version_code ? f->version_code : (f->log.nvers ? f->log.vers[0].code : 0);
  if (digits && vc >= 21803) return atoi(tag);
  return ncs_topo_find_bus(t, tag);
}

/* For GPUs a and b of host h's topology t: the transports NCCL chose between them, over every
 * file of that host (bit NCS_TC_<class>; NET and COLLNET left out). */
static void chosen(const struct tr_state *s, const char *host, const struct ncs_topo *t, unsigned *mask) {
  int n = t->ngpus;
  for (int i = 0; i < s->n; i++) {
    const struct tr_file *f = &s->f[i];
    if (strcmp(f->host, host)) continue;
    for (size_t k = 0; k < f->log.nconns; k++) {
      const struct ncs_tconn *c = &f->log.conns[k];
      if (c->tclass == NCS_TC_NET || c->tclass == NCS_TC_COLLNET) continue;
      int ga = tag_gpu(f, t, c->from_tag), gb = tag_gpu(f, t, c->to_tag);
      if (ga < 0 || gb < 0 || ga >= n || gb >= n) continue;
      mask[ga * n + gb] |= 1u << c->tclass;
      mask[gb * n + ga] |= 1u << c->tclass;
    }
  }
}

/* Communicator k of file i is the first file's record of its (comm_id, nranks). */
static int first_of(const struct tr_state *s, int i, int k) {
  const struct tr_comm *c = &s->f[i].comms[k];
  for (int j = 0; j <= i; j++)
    for (int q = 0; q < (j < i ? s->f[j].ncomms : k); q++)
      if (s->f[j].comms[q].comm_id == c->comm_id && s->f[j].comms[q].nranks == c->nranks) return 0;
  return 1;
}
/* The connections every file gave to the communicator of file i's comms[k], into m (init'd here). */
static void merged(const struct tr_state *s, int i, int k, struct ncs_tmodel *m) {
  const struct tr_comm *c = &s->f[i].comms[k];
  ncs_tmodel_init(m);
  for (int j = i; j < s->n; j++)
    for (int q = 0; q < s->f[j].ncomms; q++) {
      const struct tr_comm *d = &s->f[j].comms[q];
      if (d->comm_id != c->comm_id || d->nranks != c->nranks) continue;
      for (size_t x = 0; x < d->conns.nconns; x++) ncs_tmodel_add_conn(m, &d->conns.conns[x]);
    }
}

static void tr_finish(void *state, const struct ncs_job *job) {
  struct tr_state *s = state;
  if (!s) return;
  struct ncs_transport_result *r = &s->res;
  (void)job;
  for (int i = 0; i < s->n; i++) r->recorded |= s->f[i].log.nconns > 0 || s->f[i].topo != NULL;
  r->nfiles = s->n;
  r->file_log = calloc(s->n > 0 ? (size_t)s->n : 1, sizeof *r->file_log);
  for (int i = 0; r->file_log && i < s->n; i++) r->file_log[i] = &s->f[i].log;
  int ncomms = 0;
  for (int i = 0; i < s->n; i++) ncomms += s->f[i].ncomms;
  r->comms = calloc(ncomms > 0 ? (size_t)ncomms : 1, sizeof *r->comms);
  for (int i = 0; i < s->n; i++) {
    r->unattributed += s->f[i].unattributed;
    for (int k = 0; r->comms && k < s->f[i].ncomms; k++) {
      if (!first_of(s, i, k)) continue;
      struct ncs_transport_comm *c = &r->comms[r->ncomms];
      merged(s, i, k, &c->conns);
      if (!c->conns.nconns) { ncs_tmodel_free(&c->conns); continue; }
      c->comm_id = s->f[i].comms[k].comm_id;
      c->nranks = s->f[i].comms[k].nranks;
      r->ncomms++;
    }
  }
  ncs_tmodel_init(&r->no_comm);
  for (int i = 0; i < s->n; i++)
    for (size_t c = 0; !s->f[i].ncomms && c < s->f[i].log.nconns; c++) ncs_tmodel_add_conn(&r->no_comm, &s->f[i].log.conns[c]);
  r->hosts = calloc(s->n > 0 ? (size_t)s->n : 1, sizeof *r->hosts);
  for (int i = 0; r->hosts && i < s->n; i++) {
    if (host_topo_owner(s, i) != i) continue;
    const struct ncs_topo *t = s->f[i].topo;
    struct ncs_transport_host *h = &r->hosts[r->nhosts++];
    h->host = s->f[i].host;
    h->topo = t;
    h->chosen = calloc(t->ngpus > 0 ? (size_t)t->ngpus * (size_t)t->ngpus : 1, sizeof *h->chosen);
    if (h->chosen) chosen(s, h->host, t, h->chosen);
  }
}

static const void *tr_result(void *state) {
  struct tr_state *s = state;
  return s ? &s->res : NULL;
}

static void tr_destroy(void *state) {
  struct tr_state *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    ncs_tmodel_free(&s->f[i].log);
    free(s->f[i].topo);
    for (int k = 0; k < s->f[i].ncomms; k++) ncs_tmodel_free(&s->f[i].comms[k].conns);
    free(s->f[i].comms);
    ncs_cown_free(s->f[i].own);
  }
  free(s->f);
  for (int c = 0; c < s->res.ncomms; c++) ncs_tmodel_free(&s->res.comms[c].conns);
  free(s->res.comms);
  ncs_tmodel_free(&s->res.no_comm);
  for (int h = 0; h < s->res.nhosts; h++) free(s->res.hosts[h].chosen);
  free(s->res.hosts);
  free(s->res.file_log);
  free(s);
}

const struct ncs_analysis ncs_analysis_transport = {
  .name = "transport",
  .create = tr_create,
  .visitor = tr_visitor,
  .file_done = tr_file_done,
  .finish = tr_finish,
  .result = tr_result,
  .destroy = tr_destroy,
};
