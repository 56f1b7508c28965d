/* commnames.c — communicators named as the job knows them (contract: commnames.h). */
#include "model/commnames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/grow.h"
#include "io/trace.h"
#include "model/ranks.h"
#include "ncclscope/ops.h"

struct centry {
  uint64_t id, parent;
  int nranks, color;
  uint32_t init_op;
  char name[64];
  struct ncs_ranks parent_ranks; /* the parent's ranks that joined it */
};
/* one file's COMM records as read (a completion replaces its communicator's earlier record) */
struct cfile { struct ncs_comm *c; size_t n, cap; };
struct ncs_commnames { struct centry *e; size_t n, cap; struct cfile *f; int nfiles, finished; };

struct ncs_commnames *ncs_commnames_new(int nfiles) {
  struct ncs_commnames *cn = calloc(1, sizeof *cn);
  if (!cn) return NULL;
  if (nfiles > 0 && !(cn->f = calloc((size_t)nfiles, sizeof *cn->f))) { free(cn); return NULL; }
  cn->nfiles = nfiles > 0 ? nfiles : 0;
  return cn;
}

static void keep(struct cfile *f, const struct ncs_comm *c) {
  for (size_t i = 0; i < f->n; i++)
    if (f->c[i].comm == c->comm) { f->c[i] = *c; return; }
  if (ncs_grow((void **)&f->c, &f->cap, f->n + 1, sizeof *f->c)) return;
  f->c[f->n++] = *c;
}
static int on_comm(void *ctx, const struct ncs_comm *c) { keep(ctx, c); return 0; }

void ncs_commnames_comm(struct ncs_commnames *cn, int file, const struct ncs_comm *c) {
  if (cn && file >= 0 && file < cn->nfiles) keep(&cn->f[file], c);
}

size_t ncs_commnames_file(const struct ncs_commnames *cn, int file, const struct ncs_comm **out) {
  *out = NULL;
  if (!cn || file < 0 || file >= cn->nfiles) return 0;
  *out = cn->f[file].c;
  return cn->f[file].n;
}

const struct ncs_comm *ncs_commnames_of(const struct ncs_commnames *cn, int file, uint32_t comm) {
  const struct ncs_comm *c;
  size_t n = ncs_commnames_file(cn, file, &c);
  for (size_t i = 0; i < n; i++)
    if (c[i].comm == comm) return &c[i];
  return NULL;
}

void ncs_commnames_visitor(struct ncs_commnames *cn, int file, struct ncs_visitor *v) {
  if (!cn || file < 0 || file >= cn->nfiles) return;
  v->ctx = &cn->f[file];
  v->comm = on_comm;
}

void ncs_commnames_finish(struct ncs_commnames *cn) {
  if (!cn || cn->finished) return;
  cn->finished = 1;
  for (int i = 0; i < cn->nfiles; i++) {
    const struct cfile *f = &cn->f[i];
    for (size_t k = 0; k < f->n; k++) {
      int prank = -1;
      for (size_t q = 0; f->c[k].parent_id && q < f->n; q++)
        if (f->c[q].comm_id == f->c[k].parent_id) prank = f->c[q].rank;
      ncs_commnames_add(cn, &f->c[k], prank);
    }
  }
}

void ncs_commnames_free(struct ncs_commnames *cn) {
  if (!cn) return;
  for (int i = 0; cn->f && i < cn->nfiles; i++) free(cn->f[i].c);
  free(cn->f);
  for (size_t i = 0; i < cn->n; i++) ncs_ranks_free(&cn->e[i].parent_ranks);
  free(cn->e);
  free(cn);
}

static struct centry *find(const struct ncs_commnames *cn, uint64_t id) {
  for (size_t i = 0; cn && i < cn->n; i++)
    if (cn->e[i].id == id) return &cn->e[i];
  return NULL;
}

void ncs_commnames_add(struct ncs_commnames *cn, const struct ncs_comm *c, int rank_in_parent) {
  if (!cn || !c->comm_id) return;
  struct centry *e = find(cn, c->comm_id);
  if (!e) {
    if (ncs_grow((void **)&cn->e, &cn->cap, cn->n + 1, sizeof *cn->e)) return;
    e = &cn->e[cn->n++];
    memset(e, 0, sizeof *e);
    e->id = c->comm_id;
    e->color = -1;
  }
  if (c->parent_id) e->parent = c->parent_id;
  if (c->nranks > e->nranks) e->nranks = c->nranks;
  if (c->init_op) e->init_op = c->init_op;
  if (c->parent_id && c->init_op == NCS_OP_CommSplit && c->color >= 0) e->color = c->color;
  if (c->name[0] && !e->name[0]) snprintf(e->name, sizeof e->name, "%s", c->name);
  if (rank_in_parent >= 0) ncs_ranks_add(&e->parent_ranks, rank_in_parent);
}

const char *ncs_commnames_given(const struct ncs_commnames *cn, uint64_t comm_id) {
  const struct centry *e = find(cn, comm_id);
  return e ? e->name : "";
}

static void label(const struct ncs_commnames *cn, const struct centry *e, char *buf, size_t n, int depth) {
  if (e->name[0]) { snprintf(buf, n, "%s", e->name); return; }
  const struct centry *p = e->parent ? find(cn, e->parent) : NULL;
  if (e->parent) {
    char pl[160], rr[96];
    if (p && depth < 8) label(cn, p, pl, sizeof pl, depth + 1);
    else snprintf(pl, sizeof pl, "communicator %016" PRIx64, e->parent);
    ncs_ranks_sort((struct ncs_ranks *)&e->parent_ranks);
    if (e->parent_ranks.n) ncs_ranks_format(&e->parent_ranks, rr, sizeof rr);
    char how[32];
    if (e->init_op == NCS_OP_CommSplit && e->color >= 0) snprintf(how, sizeof how, "split, color %d", e->color);
    else snprintf(how, sizeof how, "%s", e->init_op == NCS_OP_CommShrink ? "shrunk" : "split");
    if (e->parent_ranks.n)
      snprintf(buf, n, "ranks %s of %s (%s)", rr, pl, how);
    else
      snprintf(buf, n, "%d rank%s of %s (%s)", e->nranks, e->nranks == 1 ? "" : "s", pl, how);
    return;
  }
  const char *op = e->init_op ? ncs_op_name(e->init_op) : NULL;
  int twin = 0;
  for (size_t i = 0; i < cn->n; i++)
    twin += !cn->e[i].name[0] && !cn->e[i].parent && cn->e[i].nranks == e->nranks && cn->e[i].init_op == e->init_op;
  if (twin > 1)
    snprintf(buf, n, "%d rank%s (nccl%s #%08" PRIx64 ")", e->nranks, e->nranks == 1 ? "" : "s", op ? op : "?", e->id >> 32);
  else
    snprintf(buf, n, "%d rank%s (nccl%s)", e->nranks, e->nranks == 1 ? "" : "s", op ? op : "?");
}

const char *ncs_commnames_label(const struct ncs_commnames *cn, uint64_t comm_id, char *buf, size_t n) {
  const struct centry *e = find(cn, comm_id);
  if (!e) snprintf(buf, n, "communicator %016" PRIx64, comm_id);
  else label(cn, e, buf, n, 0);
  return buf;
}

const char *ncs_commnames_text(const struct ncs_commnames *cn, uint64_t comm_id, int with_id, char *buf, size_t n) {
  const struct centry *e = find(cn, comm_id);
  if (!e) { snprintf(buf, n, "%016" PRIx64, comm_id); return buf; }
  char lab[200];
  label(cn, e, lab, sizeof lab, 0);
  if (with_id) snprintf(buf, n, "%s [%016" PRIx64 "]", lab, comm_id);
  else snprintf(buf, n, "%s", lab);
  return buf;
}
