/* topo.c — one host's GPU topology from TOPO_* records (topo.h). */
#include "model/topo.h"

#include <ctype.h>
#include <string.h>

void ncs_topo_init(struct ncs_topo *t, const char *host) {
  memset(t, 0, sizeof *t);
  if (host) snprintf(t->host, sizeof t->host, "%s", host);
  for (int a = 0; a < NCS_TOPO_MAX; a++)
    for (int b = 0; b < NCS_TOPO_MAX; b++) t->rel[a][b] = a == b ? NCS_REL_X : NCS_REL_UNKNOWN;
}

void ncs_topo_add_gpu(struct ncs_topo *t, const struct ncs_topo_gpu *g) {
  if (g->index >= NCS_TOPO_MAX) { t->dropped++; return; }
  if (t->have_gpu[g->index]) return;
  t->have_gpu[g->index] = 1;
  t->gpu[g->index] = *g;
  if ((int)g->index + 1 > t->ngpus) t->ngpus = (int)g->index + 1;
}

void ncs_topo_add_link(struct ncs_topo *t, const struct ncs_topo_link *l) {
  if (l->a >= NCS_TOPO_MAX || l->b >= NCS_TOPO_MAX || l->a == l->b) { t->dropped++; return; }
  if (t->have_link[l->a][l->b]) return;
  t->have_link[l->a][l->b] = t->have_link[l->b][l->a] = 1;
  unsigned char nv = l->nvlinks > 255 ? 255 : (unsigned char)l->nvlinks;
  t->nv[l->a][l->b] = t->nv[l->b][l->a] = nv;
  unsigned char rel = l->pcie > 255 ? NCS_REL_UNKNOWN : (unsigned char)l->pcie;
  t->rel[l->a][l->b] = t->rel[l->b][l->a] = rel;
  int hi = (int)(l->a > l->b ? l->a : l->b) + 1;
  if (hi > t->ngpus) t->ngpus = hi;
}

int ncs_topo_add_raw(struct ncs_topo *t, uint32_t type, const uint8_t *body, size_t len) {
  struct ncs_rbuf r;
  struct ncs_topo_gpu g;
  struct ncs_topo_link l;
  ncs_rbuf_init(&r, body, len, NULL, 0);
  if (type == NCS_REC_TOPO_GPU && ncs_dec_topo_gpu(&r, &g) == 0) ncs_topo_add_gpu(t, &g);
  else if (type == NCS_REC_TOPO_LINK && ncs_dec_topo_link(&r, &l) == 0) ncs_topo_add_link(t, &l);
  else return type == NCS_REC_TOPO_GPU || type == NCS_REC_TOPO_LINK ? -1 : 1;
  return 0;
}

/* Bus id text to NCCL's integer form: the hex digits of domain, bus, device and function
 * ("00000000:1A:00.0" -> 0x1a000; "1a000" -> 0x1a000). Returns 0 when unparsable. */
static unsigned long long bus_value(const char *s) {
  unsigned long long v = 0;
  int nd = 0;
  for (; *s; s++) {
    if (*s == ':' || *s == '.') continue;
    if (!isxdigit((unsigned char)*s)) return 0;
    int h = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
    v = (v << 4) | (unsigned)h;
    if (++nd > 16) return 0;
  }
  return nd ? v : 0;
}

int ncs_topo_find_bus(const struct ncs_topo *t, const char *nccl_bus) {
  unsigned long long want = bus_value(nccl_bus);
  if (!want) return -1;
  for (int i = 0; i < t->ngpus; i++)
    if (t->have_gpu[i] && bus_value(t->gpu[i].bus_id) == want) return i;
  return -1;
}

int ncs_topo_nvlink_pairs(const struct ncs_topo *t) {
  int n = 0;
  for (int a = 0; a < t->ngpus; a++)
    for (int b = a + 1; b < t->ngpus; b++) n += t->nv[a][b] > 0;
  return n;
}

const char *ncs_topo_cell(const struct ncs_topo *t, int a, int b, char *buf, size_t cap) {
  if (a == b) snprintf(buf, cap, "X");
  else if (t->nv[a][b]) snprintf(buf, cap, "NV%u", t->nv[a][b]);
  else snprintf(buf, cap, "%s", ncs_pcie_rel_name(t->rel[a][b]));
  return buf;
}

void ncs_topo_print(const struct ncs_topo *t, FILE *f, const char *indent,
                    const char *(*overlay)(void *ctx, int a, int b), void *ctx) {
  int n = t->ngpus;
  int w = overlay ? 14 : 6;
  fprintf(f, "%s%-6s", indent, "");
  for (int b = 0; b < n; b++) { char h[16]; snprintf(h, sizeof h, "GPU%d", b); fprintf(f, " %-*s", w, h); }
  fputc('\n', f);
  for (int a = 0; a < n; a++) {
    fprintf(f, "%sGPU%-3d", indent, a);
    for (int b = 0; b < n; b++) {
      char c[16], cell[64];
      ncs_topo_cell(t, a, b, c, sizeof c);
      const char *o = overlay && a != b ? overlay(ctx, a, b) : NULL;
      if (o) snprintf(cell, sizeof cell, "%s>%s", c, o);
      else snprintf(cell, sizeof cell, "%s", c);
      fprintf(f, " %-*s", w, cell);
    }
    if (t->have_gpu[a]) {
      fputs("  ", f);
      ncs_text_escape(f, t->gpu[a].name, strlen(t->gpu[a].name));
      fputs(" ", f);
      ncs_text_escape(f, t->gpu[a].bus_id, strlen(t->gpu[a].bus_id));
      if (t->gpu[a].pcie_gen) fprintf(f, " PCIe Gen%u x%u", t->gpu[a].pcie_gen, t->gpu[a].pcie_width);
    }
    fputc('\n', f);
  }
  if (overlay) fprintf(f, "%s(cell: link>transport NCCL chose for that pair, '.' = no connection seen)\n", indent);
}

void ncs_topo_json(const struct ncs_topo *t, struct ncs_json *j, const char *key) {
  ncs_json_obj_begin(j, key);
  ncs_json_str(j, "host", t->host);
  ncs_json_arr_begin(j, "gpus");
  for (int i = 0; i < t->ngpus; i++) {
    if (!t->have_gpu[i]) continue;
    const struct ncs_topo_gpu *g = &t->gpu[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_uint(j, "index", g->index);
    ncs_json_str(j, "name", g->name);
    ncs_json_str(j, "bus_id", g->bus_id);
    ncs_json_str(j, "uuid", g->uuid);
    ncs_json_uint(j, "pcie_gen", g->pcie_gen);
    ncs_json_uint(j, "pcie_width", g->pcie_width);
    ncs_json_uint(j, "nvlinks", g->nvlinks);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "links");
  for (int a = 0; a < t->ngpus; a++)
    for (int b = a + 1; b < t->ngpus; b++) {
      if (!t->have_link[a][b]) continue;
      char c[16];
      ncs_json_obj_begin(j, NULL);
      ncs_json_int(j, "a", a);
      ncs_json_int(j, "b", b);
      ncs_json_int(j, "nvlinks", t->nv[a][b]);
      ncs_json_str(j, "pcie", ncs_pcie_rel_name(t->rel[a][b]));
      ncs_json_str(j, "cell", ncs_topo_cell(t, a, b, c, sizeof c));
      ncs_json_obj_end(j);
    }
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

/* Per-link NVLink rate (GB/s per direction) by GPU name; docs/REFERENCE-FIGURES.md: A100 12 links = 300 GB/s,
 * H100/H200 18 links = 450 GB/s (25 GB/s per link), B200 900 GB/s over 18 links (50 per link),
 * GA102 bridge (3090/A6000) 56.25 GB/s over 4 links (14.0625 per link). */
static double nvlink_rate(const char *name, const char **why) {
  if (strstr(name, "B200") || strstr(name, "B100") || strstr(name, "GB200")) { *why = "NVLink 5: 50 GB/s per link"; return 50.0; }
  if (strstr(name, "3090") || strstr(name, "A6000") || strstr(name, "A40")) { *why = "GA102 NVLink bridge: 14.06 GB/s per link"; return 14.0625; }
  *why = "NVLink 3/4: 25 GB/s per link";
  return 25.0;
}

double ncs_topo_peak_gbps(const struct ncs_topo *t, int a, int b, const char **why) {
  static const char *none = "unknown";
  *why = none;
  if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus || a == b) return 0;
  if (t->nv[a][b]) return t->nv[a][b] * nvlink_rate(t->have_gpu[a] ? t->gpu[a].name : "", why);
  /* PCIe: the slower end, per direction, 0.985 GB/s per lane at Gen3 doubling per generation */
  double best = 0;
  for (int k = 0; k < 2; k++) {
    int i = k ? b : a;
    if (!t->have_gpu[i] || !t->gpu[i].pcie_gen || !t->gpu[i].pcie_width) return 0;
    double lane = t->gpu[i].pcie_gen >= 3 ? 0.984375 * (double)(1u << (t->gpu[i].pcie_gen - 3)) : 0.5;
    double v = lane * t->gpu[i].pcie_width;
    if (k == 0 || v < best) best = v;
  }
  *why = "PCIe gen x width (Gen3 x16 = 15.75 GB/s)";
  return best;
}
