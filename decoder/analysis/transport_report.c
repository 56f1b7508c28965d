/* transport_report.c — the transport and topology sections of `ncclscope report`, plugged in
 * through decoder/analysis/analysis.h. Per communicator: the rank x rank transport matrix from the
 * captured NCCL log lines (NCCL_LOG records). Per host: the NVML topology (TOPO_* records,
 * docs/FORMAT-TOPO.md) in `nvidia-smi topo -m` form with the chosen transport overlaid.
 * JSON: top-level "topology": [...], "transport_matrices": [...] and per rank "transports": [...].
 * Each connection line goes to the communicator NCCL was working on when it printed it
 * (model/connowner.h); lines no rule settles are counted, never put in a matrix.
 * Memory: per file one transport model (distinct connections), one per communicator, the
 * connection lines not settled yet (model/connowner.h) and at most one topology. */
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "analysis/analysis.h"
#include "model/commnames.h"
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
  int matrix_hidden = 0; /* said once, with the topology's pointer */
  for (int i = 0; i < s->n; i++) {
    unattributed += s->f[i].unattributed;
    for (int k = 0; k < s->f[i].ncomms; k++) {
      if (!first_of(s, i, k)) continue;
      const struct tr_comm *c = &s->f[i].comms[k];
      struct ncs_tmodel m;
      merged(s, i, k, &m);
      if (m.nconns) {
        char nm[240];
        ncs_commnames_text(job->names, c->comm_id, job->detail, nm, sizeof nm);
        fputs("  communicator ", out);
        ncs_text_escape(out, nm, strlen(nm));
        char sz[32];
        snprintf(sz, sizeof sz, "%d rank", c->nranks);
        if (strncmp(nm, sz, strlen(sz))) fprintf(out, " (%d ranks)", c->nranks); /* unless the name says it */
        fprintf(out, ": %zu connections (P2P %zu, SHM %zu, NET %zu)\n",
                m.nconns, ncs_tmodel_count(&m, NCS_TC_P2P),
                ncs_tmodel_count(&m, NCS_TC_SHM), ncs_tmodel_count(&m, NCS_TC_NET));
        if (job->detail || c->nranks <= 8) ncs_tmodel_matrix(&m, out, "    ");
        else matrix_hidden = 1;
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
      fprintf(out, "  topology: %d hosts recorded (%smatrices: --detail)\n", hosts, matrix_hidden ? "rank x rank and topology " : "");
      matrix_hidden = 0;
      break;
    }
    fprintf(out, "  topology of host ");
    ncs_text_escape(out, s->f[i].host, strlen(s->f[i].host));
    fprintf(out, " (NVML, nvidia-smi topo -m form)\n");
    struct overlay_ctx o = { s, s->f[i].host, s->f[i].topo, "" };
    ncs_topo_print(s->f[i].topo, out, "    ", overlay, &o);
  }
  if (matrix_hidden) fprintf(out, "    (rank x rank matrix: --detail)\n");
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
        char nm[240];
        if (job->names) ncs_json_str(j, "comm", ncs_commnames_label(job->names, c->comm_id, nm, sizeof nm));
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
    ncs_cown_free(s->f[i].own);
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
