/* sitefacts.c — call sites and communicator names for the doctor (contract: sitefacts.h). */
#include "analysis/sitefacts.h"

#include "analysis/doctor.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/grow.h"
#include "model/callsites.h"
#include "model/commnames.h"
#include "ncclscope/ops.h"

struct opsite { uint32_t comm, op, site; };
struct sfile {
  struct ncs_sites *sites;
  struct ncs_commnames *cn;   /* the facts': this file's COMM records are kept there */
  int file;
  struct opsite *os;
  size_t nos, capos;
  size_t last;
};
struct ncs_sitefacts {
  int n;
  struct sfile *f;
  struct ncs_commnames *cn;
  struct ncs_symbolizer *sym;
};

struct ncs_sitefacts *ncs_sitefacts_new(int n) {
  struct ncs_sitefacts *sf = calloc(1, sizeof *sf);
  if (!sf) return NULL;
  sf->f = calloc((size_t)(n > 0 ? n : 1), sizeof *sf->f);
  sf->cn = ncs_commnames_new(n);
  if (!sf->f || !sf->cn) { free(sf->f); ncs_commnames_free(sf->cn); free(sf); return NULL; }
  sf->n = n;
  for (int i = 0; i < n; i++) { sf->f[i].cn = sf->cn; sf->f[i].file = i; }
  return sf;
}

static int s_comm(void *ctx, const struct ncs_comm *c) {
  struct sfile *f = ctx;
  ncs_commnames_comm(f->cn, f->file, c);
  return 0;
}
static int s_callsite(void *ctx, const struct ncs_callsite *s) { ncs_sites_callsite(((struct sfile *)ctx)->sites, s); return 0; }
static int s_module(void *ctx, const struct ncs_module *m) { ncs_sites_module(((struct sfile *)ctx)->sites, m); return 0; }
static int s_call(void *ctx, const struct ncs_call *c) {
  struct sfile *f = ctx;
  if (!c->callsite || !c->comm) return 0;
  if (f->last < f->nos && f->os[f->last].comm == c->comm && f->os[f->last].op == c->op) {
    f->os[f->last].site = c->callsite;
    return 0;
  }
  for (size_t i = 0; i < f->nos; i++)
    if (f->os[i].comm == c->comm && f->os[i].op == c->op) { f->os[i].site = c->callsite; f->last = i; return 0; }
  if (ncs_grow((void **)&f->os, &f->capos, f->nos + 1, sizeof *f->os)) return 0;
  f->os[f->nos] = (struct opsite){c->comm, c->op, c->callsite};
  f->last = f->nos++;
  return 0;
}

void ncs_sitefacts_visitor(struct ncs_sitefacts *sf, int file, struct ncs_visitor *v) {
  if (!sf || file < 0 || file >= sf->n) return;
  struct sfile *f = &sf->f[file];
  if (!f->sites && !(f->sites = ncs_sites_new())) return;
  v->ctx = f;
  v->comm = s_comm;
  v->callsite = s_callsite;
  v->module = s_module;
  v->call = s_call;
}

void ncs_sitefacts_finish(struct ncs_sitefacts *sf) {
  if (!sf || sf->sym) return;
  sf->sym = ncs_symbolizer_new();
  ncs_commnames_finish(sf->cn);
}

int ncs_sitefacts_site(struct ncs_sitefacts *sf, uint64_t comm_id, int rank, uint32_t op, char *buf, size_t n) {
  if (!sf || !sf->sym) return -1;
  for (int i = 0; i < sf->n; i++) {
    const struct sfile *f = &sf->f[i];
    const struct ncs_comm *cm;
    size_t ncm = ncs_commnames_file(sf->cn, i, &cm);
    for (size_t k = 0; k < ncm; k++) {
      if (cm[k].comm_id != comm_id || cm[k].rank != rank) continue;
      for (size_t q = 0; q < f->nos; q++) {
        if (f->os[q].comm != cm[k].comm || f->os[q].op != op) continue;
        struct ncs_site_name nm;
        if (ncs_sites_name(f->sites, f->os[q].site, sf->sym, &nm) != 0) return -1;
        snprintf(buf, n, "%s", nm.where);
        return 0;
      }
    }
  }
  return -1;
}

const char *ncs_sitefacts_comm(const struct ncs_sitefacts *sf, uint64_t comm_id, char *buf, size_t n) {
  return ncs_commnames_label(sf ? sf->cn : NULL, comm_id, buf, n);
}

static int known(const struct ncs_sitefacts *sf, uint64_t id) {
  for (int i = 0; i < sf->n; i++) {
    const struct ncs_comm *cm;
    size_t ncm = ncs_commnames_file(sf->cn, i, &cm);
    for (size_t k = 0; k < ncm; k++)
      if (cm[k].comm_id == id) return 1;
  }
  return 0;
}

void ncs_sitefacts_name_comms(const struct ncs_sitefacts *sf, char *line, size_t cap, int keep_id) {
  if (!sf || !sf->sym || !cap) return;
  char out[1024];
  size_t o = 0;
  for (size_t i = 0; line[i] && o + 1 < sizeof out;) {
    size_t k = 0;
    while (k < 17 && isxdigit((unsigned char)line[i + k])) k++;
    int word = (i == 0 || !isalnum((unsigned char)line[i - 1]));
    if (k == 16 && word && !isalnum((unsigned char)line[i + 16])) {
      char hex[17];
      memcpy(hex, line + i, 16);
      hex[16] = 0;
      uint64_t id = strtoull(hex, NULL, 16);
      if (known(sf, id)) {
        char lab[200];
        ncs_commnames_label(sf->cn, id, lab, sizeof lab);
        int w = keep_id ? snprintf(out + o, sizeof out - o, "%s (%s)", hex, lab)
                        : snprintf(out + o, sizeof out - o, "%s", lab);
        if (w > 0) o += (size_t)w < sizeof out - o ? (size_t)w : sizeof out - o - 1;
        i += 16;
        continue;
      }
    }
    size_t adv = k ? k : 1; /* copy a run that was not an id as it is */
    for (size_t j = 0; j < adv && o + 1 < sizeof out; j++) out[o++] = line[i + j];
    i += adv;
  }
  out[o] = 0;
  snprintf(line, cap, "%s", out);
}

void ncs_sitefacts_name_verdicts(struct ncs_sitefacts *sf, struct ncs_doctor *d, int detail) {
  ncs_sitefacts_finish(sf);
  for (int i = 0; i < d->nv; i++) {
    struct ncs_verdict *v = &d->v[i];
    const struct ncs_hang_verdict *h = v->hang;
    char site[160], comm[96], line[320];
    if (h && h->op && h->comm_id && h->nentered > 0 && v->nevidence > 0 && strcmp(v->id, "init-hang") &&
        ncs_sitefacts_site(sf, h->comm_id, h->entered[0], h->op, site, sizeof site) == 0) {
      snprintf(line, sizeof line, "issued at %s (where rank %d's %s calls on %s came from; a call still in flight has no site of its own)",
               site, h->entered[0], ncs_op_name(h->op) ? ncs_op_name(h->op) : "?",
               ncs_sitefacts_comm(sf, h->comm_id, comm, sizeof comm));
      if (v->nevidence == NCS_VERDICT_EVIDENCE) { v->nevidence--; v->more++; }
      memmove(v->evidence[2], v->evidence[1], (size_t)(v->nevidence - 1) * sizeof v->evidence[0]);
      snprintf(v->evidence[1], sizeof v->evidence[1], "%s", line);
      v->nevidence++;
    }
    for (int e = 0; e < v->nevidence; e++) ncs_sitefacts_name_comms(sf, v->evidence[e], sizeof v->evidence[e], detail);
    ncs_sitefacts_name_comms(sf, v->next, sizeof v->next, detail);
  }
}
void ncs_sitefacts_free(struct ncs_sitefacts *sf) {
  if (!sf) return;
  for (int i = 0; i < sf->n; i++) {
    ncs_sites_free(sf->f[i].sites);
    free(sf->f[i].os);
  }
  free(sf->f);
  ncs_commnames_free(sf->cn);
  ncs_symbolizer_free(sf->sym);
  free(sf);
}
