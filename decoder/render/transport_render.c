/* transport_render.c — report's transports and topology as text and JSON (transport_render.h). */
#include "render/transport_render.h"

#include <string.h>

/* The transports a mask names, "P2P+SHM", into buf; "" for none. */
static const char *class_names(unsigned mask, char *buf, size_t cap) {
  buf[0] = 0;
  for (int t = 0; t < 8; t++)
    if (mask & (1u << t)) snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "+" : "", ncs_tclass_name(t));
  return buf;
}

struct overlay_ctx { const struct ncs_transport_host *h; char buf[64]; };
static const char *overlay(void *vctx, int a, int b) {
  struct overlay_ctx *o = vctx;
  int n = o->h->topo->ngpus;
  unsigned mask = o->h->chosen && a < n && b < n ? o->h->chosen[a * n + b] : 0;
  return mask ? class_names(mask & 0x3fu, o->buf, sizeof o->buf) : NULL;
}

static void conn_counts(FILE *out, const struct ncs_tmodel *m) {
  fprintf(out, "%zu connections (P2P %zu, SHM %zu, NET %zu)\n", m->nconns, ncs_tmodel_count(m, NCS_TC_P2P),
          ncs_tmodel_count(m, NCS_TC_SHM), ncs_tmodel_count(m, NCS_TC_NET));
}

void ncs_transport_print_text(const struct ncs_transport_result *r, FILE *out, int detail, const struct ncs_commnames *names) {
  if (!r || !r->recorded) return;
  fprintf(out, "\nTransports (from NCCL's log, captured by the shim)\n");
  int matrix_hidden = 0; /* said once, with the topology's pointer */
  for (int c = 0; c < r->ncomms; c++) {
    const struct ncs_transport_comm *m = &r->comms[c];
    char nm[240], sz[32];
    ncs_commnames_text(names, m->comm_id, detail, nm, sizeof nm);
    fputs("  communicator ", out);
    ncs_text_escape(out, nm, strlen(nm));
    snprintf(sz, sizeof sz, "%d rank", m->nranks);
    if (strncmp(nm, sz, strlen(sz))) fprintf(out, " (%d ranks)", m->nranks); /* unless the name says it */
    fprintf(out, ": ");
    conn_counts(out, &m->conns);
    if (detail || m->nranks <= 8) ncs_tmodel_matrix(&m->conns, out, "    ");
    else matrix_hidden = 1;
  }
  if (r->no_comm.nconns) {
    fprintf(out, "  no communicator recorded: ");
    conn_counts(out, &r->no_comm);
    ncs_tmodel_matrix(&r->no_comm, out, "    ");
  }
  if (r->unattributed)
    fprintf(out, "  %llu connection line(s) could not be given to one communicator: in no matrix above\n",
            (unsigned long long)r->unattributed);
  if (!detail && r->nhosts > 1) {
    fprintf(out, "  topology: %d hosts recorded (%smatrices: --detail)\n", r->nhosts,
            matrix_hidden ? "rank x rank and topology " : "");
    matrix_hidden = 0;
  } else {
    for (int h = 0; h < r->nhosts; h++) {
      fprintf(out, "  topology of host ");
      ncs_text_escape(out, r->hosts[h].host, strlen(r->hosts[h].host));
      fprintf(out, " (NVML, nvidia-smi topo -m form)\n");
      struct overlay_ctx o = { &r->hosts[h], "" };
      ncs_topo_print(r->hosts[h].topo, out, "    ", overlay, &o);
    }
  }
  if (matrix_hidden) fprintf(out, "    (rank x rank matrix: --detail)\n");
}

void ncs_transport_print_json(const struct ncs_transport_result *r, struct ncs_json *j, const struct ncs_commnames *names) {
  if (!r) return;
  ncs_json_arr_begin(j, "topology");
  for (int h = 0; h < r->nhosts; h++) ncs_topo_json(r->hosts[h].topo, j, NULL);
  ncs_json_arr_end(j);
  /* per communicator: its distinct rank pairs and the transports of each */
  ncs_json_arr_begin(j, "transport_matrices");
  for (int c = 0; c < r->ncomms; c++) {
    const struct ncs_tmodel *m = &r->comms[c].conns;
    char id[24];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)r->comms[c].comm_id);
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "comm_id", id);
    char nm[240];
    if (names) ncs_json_str(j, "comm", ncs_commnames_label(names, r->comms[c].comm_id, nm, sizeof nm));
    ncs_json_int(j, "nranks", r->comms[c].nranks);
    ncs_json_uint(j, "connections", m->nconns);
    ncs_json_arr_begin(j, "pairs");
    for (size_t x = 0; x < m->nconns; x++) {
      const struct ncs_tconn *a = &m->conns[x];
      int dup = 0;
      for (size_t y = 0; y < x && !dup; y++) dup = m->conns[y].from == a->from && m->conns[y].to == a->to;
      if (dup) continue;
      unsigned mask = 0;
      for (size_t y = x; y < m->nconns; y++)
        if (m->conns[y].from == a->from && m->conns[y].to == a->to) mask |= 1u << m->conns[y].tclass;
      char names[64];
      ncs_json_obj_begin(j, NULL);
      ncs_json_int(j, "from", a->from);
      ncs_json_int(j, "to", a->to);
      ncs_json_str(j, "transports", class_names(mask, names, sizeof names));
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_uint(j, "transport_lines_unattributed", r->unattributed);
}

void ncs_transport_print_rank_json(const struct ncs_transport_result *r, struct ncs_json *j, int file) {
  if (!r || !r->file_log || file < 0 || file >= r->nfiles) return;
  ncs_tmodel_json_transports(r->file_log[file], j, "transports");
  ncs_json_str(j, "nccl_log_version", ncs_tmodel_version(r->file_log[file]));
}
