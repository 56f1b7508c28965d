/* stepcost.c — the steps' starts + whatif as plug-ins of another command's read (stepcost.h). */
#include "analysis/stepcost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/headline.h"
#include "analysis/stepstarts.h"
#include "model/stages.h"

struct ncs_stepcost {
  struct ncs_job job;
  struct ncs_rank_info *info;
  int *order;
  struct ncs_stages stages; /* stepstarts puts each file's step starts, whatif reads them */
  struct ncs_stepstarts *m;
  void *w;                 /* whatif's state */
};

struct ncs_stepcost *ncs_stepcost_new(int n, char *const *paths) {
  struct ncs_stepcost *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->info = calloc((size_t)(n > 0 ? n : 1), sizeof *c->info);
  c->order = calloc((size_t)(n > 0 ? n : 1), sizeof *c->order);
  if (!c->info || !c->order || ncs_stages_init(&c->stages, n) != 0) goto fail;
  for (int i = 0; i < n; i++) {
    c->info[i].path = paths[i];
    c->info[i].host = "";
    c->info[i].rank = -1;
    c->order[i] = i;
  }
  c->job = (struct ncs_job){.n = n, .rank = c->info, .order = c->order, .stages = &c->stages};
  c->m = ncs_stepstarts_new(n, &c->stages);
  c->w = ncs_analysis_whatif.create(&c->job);
  if (!c->m || !c->w) goto fail;
  return c;
fail:
  ncs_stepcost_free(c);
  return NULL;
}

void ncs_stepcost_visitor(struct ncs_stepcost *c, int file, struct ncs_mux *m) {
  if (!c || m->n + 2 > NCS_MUX_MAX) return;
  ncs_stepstarts_visitor(c->m, file, &m->v[m->n++]);
  ncs_analysis_whatif.visitor(c->w, file, &m->v[m->n++]);
}

void ncs_stepcost_file_done(struct ncs_stepcost *c, int file, const struct ncs_read_status *st) {
  if (!c) return;
  ncs_stepstarts_file_done(c->m, file); /* hands the file's step starts to whatif */
  ncs_analysis_whatif.file_done(c->w, file, st);
  ncs_stages_drop_file(&c->stages, file);
}

static int cmp_rank(const void *a, const void *b, void *info) {
  const struct ncs_rank_info *x = (const struct ncs_rank_info *)info + *(const int *)a;
  const struct ncs_rank_info *y = (const struct ncs_rank_info *)info + *(const int *)b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

const struct ncs_whatif *ncs_stepcost_finish(struct ncs_stepcost *c, const struct ncs_jobdata *J, struct ncs_headline *h) {
  if (!c) return NULL;
  for (int i = 0; J && i < c->job.n && i < J->n; i++) {
    const struct ncs_jrank *r = &J->r[i];
    c->info[i].rank = r->rank;
    c->info[i].nranks = r->nranks;
    c->info[i].held = r->held;
    c->info[i].no_comm = !r->comm_id && r->rank < 0;
    c->info[i].read_rc = r->read_rc;
    c->info[i].truncated = r->truncated;
    snprintf(c->info[i].label, sizeof c->info[i].label, "%d", r->rank);
  }
  qsort_r(c->order, (size_t)c->job.n, sizeof *c->order, cmp_rank, c->info);
  c->job.headline = h;
  ncs_analysis_whatif.finish(c->w, &c->job);
  return ncs_whatif_result(c->w);
}

void ncs_stepcost_free(struct ncs_stepcost *c) {
  if (!c) return;
  if (c->w) ncs_analysis_whatif.destroy(c->w);
  ncs_stepstarts_free(c->m);
  ncs_stages_free(&c->stages);
  free(c->info);
  free(c->order);
  free(c);
}
