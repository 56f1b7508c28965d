/* transport_report.c — the transport and topology sections of `ncclscope report`, plugged in
 * through decoder/analysis/analysis.h. Per communicator: the rank x rank transport matrix from the
 * captured NCCL log lines (NCCL_LOG records). Per host: the NVML topology (TOPO_* records,
 * docs/FORMAT-TOPO.md) in `nvidia-smi topo -m` form with the chosen transport overlaid.
 * JSON: top-level "topology": [...], "transport_matrices": [...] and per rank "transports": [...].
 *
 * Which communicator a connection line belongs to: NCCL's "Channel .. : a[x] -> b[y] via .."
 * lines name no communicator, and a process may hold several (ncclCommSplit, a rank per
 * thread). A line is given to the communicator (a COMM record of the same file) that NCCL
 * was working on when it printed it, by the first rule that names exactly one:
 *  1. the init window of the printing thread: its last "comm 0x.. rank .." init line (Init
 *     START / the nRanks line, closed by Init COMPLETE) names the ncclComm_t, matched to a
 *     COMM record's handle (connections made at init, NCCL_RUNTIME_CONNECT=0 or before 2.22);
 *  2. the calls of the file in flight when the line was printed (entered before, returned
 *     after: NCCL >= 2.22 connects inside the first collective of each communicator, on its
 *     caller's thread or a helper thread of that call), kept when the line's own rank (`a`,
 *     the receiver `b` for "[receive]" lines) is that communicator's rank and its peer fits in
 *     it; of several (threads in flight at once), the one whose CUDA device is the number in
 *     the line's own bracket;
 *  3. when no call was in flight: among all the file's communicators, as in 2;
 *  4. the file's only communicator.
 * A line no rule settles is counted (unattributed), never put in a matrix.
 * Memory: per file one transport model (distinct connections), one per communicator, the
 * connection lines not settled yet (at most 65536) and at most one topology. */
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "analysis/analysis.h"
#include "model/topo.h"
#include "model/transport.h"

struct tr_comm { uint32_t idx; uint64_t comm_id, handle; int rank, nranks, device; struct ncs_tmodel conns; };
#define MAX_CAND 4
struct tr_pend { struct ncs_tconn c; uint64_t t, ptr; int cand[MAX_CAND]; int ncand; };
#define MAX_PEND 65536
#define MAX_TIDS 64
struct tr_file {
  char host[64];
  struct ncs_tmodel log;
  struct ncs_topo *topo;
  int rank, nranks, device, version_code;
  uint64_t comm_id;
  struct tr_comm *comms;      /* its communicators, in COMM record order */
  int ncomms, capcomms;
  struct tr_pend *pend;       /* connection lines not given to a communicator yet */
  int npend, cappend;
  uint64_t pmin, pmax;        /* their time range */
  struct { long tid; uint64_t ptr; } tids[MAX_TIDS]; /* threads inside an init window */
  int ntids;
  uint64_t unattributed;
};
struct tr_state { int n; struct tr_file *f; };

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
  m->comm_id = c->comm_id; m->handle = c->handle; m->rank = c->rank; m->nranks = c->nranks; m->device = c->device;
  return 0;
}

static int tid_slot(struct tr_file *f, long tid) {
  for (int i = 0; i < f->ntids; i++) if (f->tids[i].tid == tid) return i;
  return -1;
}

/* A connection line: kept until its communicator is known (the rules at the top). */
static void pend_add(struct tr_file *f, const struct ncs_nl_rec *r, uint64_t t) {
  if (f->npend >= MAX_PEND) { f->unattributed++; return; }
  if (f->npend == f->cappend) {
    int nc = f->cappend ? f->cappend * 2 : 64;
    struct tr_pend *p = realloc(f->pend, (size_t)nc * sizeof *p);
    if (!p) { f->unattributed++; return; }
    f->pend = p; f->cappend = nc;
  }
  struct tr_pend *p = &f->pend[f->npend++];
  memset(p, 0, sizeof *p);
  ncs_tconn_of(r, &p->c);
  p->t = t;
  int k = r->tid >= 0 ? tid_slot(f, r->tid) : -1;
  p->ptr = k >= 0 ? f->tids[k].ptr : 0;
  if (f->npend == 1 || t < f->pmin) f->pmin = t;
  if (f->npend == 1 || t > f->pmax) f->pmax = t;
}

static int tr_log(void *ctx, const struct ncs_log_line *l) {
  struct tr_file *f = ctx;
  ncs_tmodel_line(&f->log, l->line, l->len);
  struct ncs_nl_rec r;
  int kind = ncs_nl_parse(l->line, l->len, &r);
  if (kind == NCS_NL_TRANSPORT) pend_add(f, &r, l->t);
  else if ((kind == NCS_NL_INIT || kind == NCS_NL_COMMINFO) && r.tid >= 0 && r.u.init.comm_ptr) {
    int k = tid_slot(f, r.tid);
    if (kind == NCS_NL_INIT && !r.u.init.start) { /* Init COMPLETE: the window closes */
      if (k >= 0) f->tids[k] = f->tids[--f->ntids];
    } else if (k >= 0) f->tids[k].ptr = r.u.init.comm_ptr;
    else if (f->ntids < MAX_TIDS) { f->tids[f->ntids].tid = r.tid; f->tids[f->ntids++].ptr = r.u.init.comm_ptr; }
  }
  return 0;
}

/* A call of the file: the connection lines printed while it was in flight get its communicator
 * as a candidate. */
static int tr_call(void *ctx, const struct ncs_call *c) {
  struct tr_file *f = ctx;
  if (!f->npend || !c->comm || c->t_exit < f->pmin || c->t_enter > f->pmax) return 0;
  for (int i = 0; i < f->npend; i++) {
    struct tr_pend *p = &f->pend[i];
    if (p->t < c->t_enter || p->t > c->t_exit) continue;
    int seen = 0;
    for (int k = 0; k < p->ncand; k++) seen |= p->cand[k] == (int)c->comm;
    if (!seen && p->ncand < MAX_CAND) p->cand[p->ncand++] = (int)c->comm;
  }
  return 0;
}

static struct tr_comm *comm_at(struct tr_file *f, uint32_t idx) {
  for (int i = 0; i < f->ncomms; i++) if (f->comms[i].idx == idx) return &f->comms[i];
  return NULL;
}
/* The line's ranks fit communicator m: its own rank is m's, its peer one of m's ranks. */
static int fits(const struct tr_comm *m, const struct ncs_tconn *c) {
  int me = c->dir == NCS_DIR_RECV ? c->to : c->from, peer = c->dir == NCS_DIR_RECV ? c->from : c->to;
  return me == m->rank && peer >= 0 && peer < m->nranks;
}

/* Among n communicators that fit a line, the one whose CUDA device is the number in the line's
 * own bracket (cudaDev or nvmlDev: equal unless CUDA_VISIBLE_DEVICES reorders), when only one
 * is; else NULL. */
static struct tr_comm *by_device(struct tr_comm **c, int n, const struct ncs_tconn *l) {
  const char *tag = l->dir == NCS_DIR_RECV ? l->to_tag : l->from_tag;
  if (!tag[0] || strspn(tag, "0123456789") != strlen(tag)) return NULL;
  struct tr_comm *got = NULL;
  int k = 0;
  for (int i = 0; i < n; i++) if (c[i]->device == atoi(tag)) { got = c[i]; k++; }
  return k == 1 ? got : NULL;
}

/* The communicators of `cand` (or all of the file's when cand is NULL) that the line fits, as
 * distinct communicator ranks, into out (at most max); returns how many. */
static int fitting(struct tr_file *f, const struct tr_pend *p, int use_cand, struct tr_comm **out, int max) {
  int n = 0, lim = use_cand ? p->ncand : f->ncomms;
  for (int k = 0; k < lim && n < max; k++) {
    struct tr_comm *m = use_cand ? comm_at(f, (uint32_t)p->cand[k]) : &f->comms[k];
    if (!m || !fits(m, &p->c)) continue;
    int dup = 0;
    for (int q = 0; q < n && !dup; q++) dup = out[q]->comm_id == m->comm_id && out[q]->rank == m->rank;
    if (!dup) out[n++] = m;
  }
  return n;
}

/* The end of the file: each kept line goes to its communicator (rules at the top). */
static void settle(struct tr_file *f) {
  for (int i = 0; i < f->npend; i++) {
    struct tr_pend *p = &f->pend[i];
    struct tr_comm *got = NULL;
    int n = 0;
    for (int k = 0; p->ptr && k < f->ncomms; k++) /* 1 */
      if (f->comms[k].handle == p->ptr && fits(&f->comms[k], &p->c)) { got = &f->comms[k]; n++; }
    struct tr_comm *fit[16];
    for (int use_cand = 1; n != 1 && use_cand >= 0; use_cand--) { /* 2, then 3 */
      if (!use_cand && p->ncand) break;
      n = fitting(f, p, use_cand, fit, 16);
      got = n == 1 ? fit[0] : n > 1 ? by_device(fit, n, &p->c) : NULL;
      if (got) n = 1;
    }
    if (n != 1 && f->ncomms == 1) { got = &f->comms[0]; n = 1; } /* 4 */
    if (n == 1 && got) ncs_tmodel_add_conn(&got->conns, &p->c);
    else f->unattributed++;
  }
  free(f->pend);
  f->pend = NULL;
  f->npend = f->cappend = 0;
}
static void tr_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct tr_state *s = state;
  (void)st;
  if (s && file >= 0 && file < s->n) settle(&s->f[file]);
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
static void tr_visitor(void *state, int file, struct ncs_visitor *v) {
  struct tr_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  v->ctx = &s->f[file];
  v->process = tr_process;
  v->comm = tr_comm;
  v->call = tr_call;
  v->log_line = tr_log;
  v->raw = tr_raw;
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

struct overlay_ctx { const struct tr_state *s; const char *host; const struct ncs_topo *t; char buf[64]; };
static const char *overlay(void *vctx, int a, int b) {
  struct overlay_ctx *o = vctx;
  unsigned mask = 0;
  for (int i = 0; i < o->s->n; i++) {
    const struct tr_file *f = &o->s->f[i];
    if (strcmp(f->host, o->host)) continue;
    for (size_t k = 0; k < f->log.nconns; k++) {
      const struct ncs_tconn *c = &f->log.conns[k];
      if (c->tclass == NCS_TC_NET || c->tclass == NCS_TC_COLLNET) continue;
      int ga = tag_gpu(f, o->t, c->from_tag), gb = tag_gpu(f, o->t, c->to_tag);
      if ((ga == a && gb == b) || (ga == b && gb == a)) mask |= 1u << c->tclass;
    }
  }
  if (!mask) return NULL;
  o->buf[0] = 0;
  for (int c = 0; c < 6; c++)
    if (mask & (1u << c)) {
      if (o->buf[0]) strcat(o->buf, "+");
      strcat(o->buf, ncs_tclass_name(c));
    }
  return o->buf;
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

static void tr_text(void *state, FILE *out, const struct ncs_job *job) {
  struct tr_state *s = state;
  if (!s) return;
  int any = 0;
  for (int i = 0; i < s->n; i++) any |= s->f[i].log.nconns > 0 || s->f[i].topo != NULL;
  if (!any) return;
  fprintf(out, "\nTransports (from NCCL's log, captured by the shim)\n");
  /* per communicator: the connections every file gave it (rules at the top) */
  uint64_t unattributed = 0;
  for (int i = 0; i < s->n; i++) {
    unattributed += s->f[i].unattributed;
    for (int k = 0; k < s->f[i].ncomms; k++) {
      if (!first_of(s, i, k)) continue;
      const struct tr_comm *c = &s->f[i].comms[k];
      struct ncs_tmodel m;
      merged(s, i, k, &m);
      if (m.nconns) {
        fprintf(out, "  communicator 0x%016llx (%d ranks): %zu connections (P2P %zu, SHM %zu, NET %zu)\n",
                (unsigned long long)c->comm_id, c->nranks, m.nconns, ncs_tmodel_count(&m, NCS_TC_P2P),
                ncs_tmodel_count(&m, NCS_TC_SHM), ncs_tmodel_count(&m, NCS_TC_NET));
        if (job->detail || c->nranks <= 8) ncs_tmodel_matrix(&m, out, "    ");
        else fprintf(out, "    (rank x rank matrix: --detail)\n");
      }
      ncs_tmodel_free(&m);
    }
  }
  /* files with no communicator recorded: their connections together, as NCCL logged them */
  struct ncs_tmodel m;
  ncs_tmodel_init(&m);
  for (int i = 0; i < s->n; i++)
    for (size_t c = 0; !s->f[i].ncomms && c < s->f[i].log.nconns; c++) ncs_tmodel_add_conn(&m, &s->f[i].log.conns[c]);
  if (m.nconns) {
    fprintf(out, "  no communicator recorded: %zu connections (P2P %zu, SHM %zu, NET %zu)\n", m.nconns,
            ncs_tmodel_count(&m, NCS_TC_P2P), ncs_tmodel_count(&m, NCS_TC_SHM), ncs_tmodel_count(&m, NCS_TC_NET));
    ncs_tmodel_matrix(&m, out, "    ");
  }
  ncs_tmodel_free(&m);
  if (unattributed)
    fprintf(out, "  %llu connection line(s) could not be given to one communicator: in no matrix above\n",
            (unsigned long long)unattributed);
  int hosts = 0;
  for (int i = 0; i < s->n; i++) hosts += host_topo_owner(s, i) == i;
  for (int i = 0; i < s->n; i++) {
    if (host_topo_owner(s, i) != i) continue;
    if (!job->detail && hosts > 1) {
      fprintf(out, "  topology: %d hosts recorded (matrices: --detail)\n", hosts);
      break;
    }
    fprintf(out, "  topology of host ");
    ncs_text_escape(out, s->f[i].host, strlen(s->f[i].host));
    fprintf(out, " (NVML, nvidia-smi topo -m form)\n");
    struct overlay_ctx o = { s, s->f[i].host, s->f[i].topo, "" };
    ncs_topo_print(s->f[i].topo, out, "    ", overlay, &o);
  }
}

static void tr_json(void *state, struct ncs_json *j, const struct ncs_job *job) {
  struct tr_state *s = state;
  if (!s) return;
  ncs_json_arr_begin(j, "topology");
  for (int i = 0; i < s->n; i++)
    if (host_topo_owner(s, i) == i) ncs_topo_json(s->f[i].topo, j, NULL);
  ncs_json_arr_end(j);
  /* per communicator: its distinct rank pairs and the transports of each */
  uint64_t unattributed = 0;
  ncs_json_arr_begin(j, "transport_matrices");
  for (int i = 0; i < s->n; i++) {
    unattributed += s->f[i].unattributed;
    for (int k = 0; k < s->f[i].ncomms; k++) {
      if (!first_of(s, i, k)) continue;
      const struct tr_comm *c = &s->f[i].comms[k];
      struct ncs_tmodel m;
      merged(s, i, k, &m);
      if (m.nconns) {
        char id[24];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)c->comm_id);
        ncs_json_obj_begin(j, NULL);
        ncs_json_str(j, "comm_id", id);
        ncs_json_int(j, "nranks", c->nranks);
        ncs_json_uint(j, "connections", m.nconns);
        ncs_json_arr_begin(j, "pairs");
        for (size_t x = 0; x < m.nconns; x++) {
          const struct ncs_tconn *a = &m.conns[x];
          int dup = 0;
          for (size_t y = 0; y < x && !dup; y++) dup = m.conns[y].from == a->from && m.conns[y].to == a->to;
          if (dup) continue;
          unsigned mask = 0;
          for (size_t y = x; y < m.nconns; y++)
            if (m.conns[y].from == a->from && m.conns[y].to == a->to) mask |= 1u << m.conns[y].tclass;
          char names[64] = "";
          for (int t = 0; t < 8; t++)
            if (mask & (1u << t)) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? "+" : "", ncs_tclass_name(t));
          ncs_json_obj_begin(j, NULL);
          ncs_json_int(j, "from", a->from);
          ncs_json_int(j, "to", a->to);
          ncs_json_str(j, "transports", names);
          ncs_json_obj_end(j);
        }
        ncs_json_arr_end(j);
        ncs_json_obj_end(j);
      }
      ncs_tmodel_free(&m);
    }
  }
  ncs_json_arr_end(j);
  ncs_json_uint(j, "transport_lines_unattributed", unattributed);
  (void)job;
}

static void tr_rank_json(void *state, struct ncs_json *j, int file) {
  struct tr_state *s = state;
  if (!s || file < 0 || file >= s->n) return;
  ncs_tmodel_json_transports(&s->f[file].log, j, "transports");
  ncs_json_str(j, "nccl_log_version", ncs_tmodel_version(&s->f[file].log));
}

static void tr_destroy(void *state) {
  struct tr_state *s = state;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    ncs_tmodel_free(&s->f[i].log);
    free(s->f[i].topo);
    for (int k = 0; k < s->f[i].ncomms; k++) ncs_tmodel_free(&s->f[i].comms[k].conns);
    free(s->f[i].comms);
    free(s->f[i].pend);
  }
  free(s->f);
  free(s);
}

const struct ncs_analysis ncs_analysis_transport = {
  .name = "transport",
  .create = tr_create,
  .visitor = tr_visitor,
  .file_done = tr_file_done,
  .print_text = tr_text,
  .print_json = tr_json,
  .print_rank_json = tr_rank_json,
  .destroy = tr_destroy,
};
