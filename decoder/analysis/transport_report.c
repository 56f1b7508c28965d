/* transport_report.c — the transport and topology sections of `ncclscope report`, plugged in
 * through decoder/analysis/analysis.h. Per communicator: the rank x rank transport matrix from the
 * captured NCCL log lines (NCCL_LOG records). Per host: the NVML topology (TOPO_* records,
 * docs/FORMAT-TOPO.md) in `nvidia-smi topo -m` form with the chosen transport overlaid.
 * JSON: top-level "topology": [...] and per rank "transports": [...].
 * Memory: per file one transport model (distinct connections) and at most one topology. */
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "analysis/analysis.h"
#include "model/topo.h"
#include "model/transport.h"

struct tr_file {
  char host[64];
  struct ncs_tmodel log;
  struct ncs_topo *topo;
  int rank, nranks, device, version_code;
  uint64_t comm_id;
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
  return 0;
}
static int tr_log(void *ctx, const struct ncs_log_line *l) {
  struct tr_file *f = ctx;
  ncs_tmodel_line(&f->log, l->line, l->len);
  return 0;
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

static void tr_text(void *state, FILE *out, const struct ncs_job *job) {
  struct tr_state *s = state;
  if (!s) return;
  int any = 0;
  for (int i = 0; i < s->n; i++) any |= s->f[i].log.nconns > 0 || s->f[i].topo != NULL;
  if (!any) return;
  fprintf(out, "\nTransports (from NCCL's log, captured by the shim)\n");
  /* per communicator: files sharing the comm_id of their largest communicator */
  for (int i = 0; i < s->n; i++) {
    int first = 1;
    for (int k = 0; k < i; k++) first &= !(s->f[k].comm_id == s->f[i].comm_id && s->f[k].nranks == s->f[i].nranks);
    if (!first) continue;
    struct ncs_tmodel m;
    ncs_tmodel_init(&m);
    for (int k = i; k < s->n; k++) {
      if (s->f[k].comm_id != s->f[i].comm_id || s->f[k].nranks != s->f[i].nranks) continue;
      for (size_t c = 0; c < s->f[k].log.nconns; c++) ncs_tmodel_add_conn(&m, &s->f[k].log.conns[c]);
    }
    if (m.nconns) {
      fprintf(out, "  communicator 0x%016llx (%d ranks): %zu connections (P2P %zu, SHM %zu, NET %zu)\n",
              (unsigned long long)s->f[i].comm_id, s->f[i].nranks, m.nconns, ncs_tmodel_count(&m, NCS_TC_P2P),
              ncs_tmodel_count(&m, NCS_TC_SHM), ncs_tmodel_count(&m, NCS_TC_NET));
      if (job->detail || s->f[i].nranks <= 8) ncs_tmodel_matrix(&m, out, "    ");
      else fprintf(out, "    (rank x rank matrix: --detail)\n");
    }
    ncs_tmodel_free(&m);
  }
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
  for (int i = 0; i < s->n; i++) { ncs_tmodel_free(&s->f[i].log); free(s->f[i].topo); }
  free(s->f);
  free(s);
}

const struct ncs_analysis ncs_analysis_transport = {
  .name = "transport",
  .create = tr_create,
  .visitor = tr_visitor,
  .print_text = tr_text,
  .print_json = tr_json,
  .print_rank_json = tr_rank_json,
  .destroy = tr_destroy,
};
