/* verdicts.c — the doctor inside `report`: its facts and the hang checks' (analysis/hang.h)
 * gathered in report's single read of each file, its checks run once all files are read, and
 * the job's answer (analysis/headline.h) built into job->headline, which report prints before
 * everything else (render/headline_render.h), so report, doctor and html give the same
 * verdicts and the same communication share. Its result is the doctor (analysis/doctor.h),
 * printed by render/doctor_render.c: JSON "verdicts" (id, title, problem, evidence, next). */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/doctor.h"
#include "analysis/hang.h"
#include "analysis/headline.h"
#include "analysis/straggler.h"
#include "model/stages.h"

struct verdicts {
  struct ncs_doctor d;
  struct ncs_hang *hang;         /* the hang checks; NULL when out of memory (then left out) */
  struct ncs_mux *mux;           /* [n] per file: facts + hang visitors, fanned out */
  struct ncs_headline *h;        /* job->headline */
  struct ncs_stages *stages;     /* job->stages: each file's solved replays are put there (metrics
                                    and sizes read them: one model per file, not two) */
  struct ncs_stages *figs;       /* job->stages when gputime puts kernel-activity figures there:
                                    the facts take theirs from it (one kernel store per file) */
  int ok;                        /* every file had its facts */
};

static void *v_create(const struct ncs_job *job) {
  struct verdicts *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->d.f = calloc((size_t)(job->n > 0 ? job->n : 1), sizeof *s->d.f);
  if (!s->d.f) { free(s); return NULL; }
  for (s->d.n = 0; s->d.n < job->n; s->d.n++)
    if (!(s->d.f[s->d.n] = ncs_dfacts_new(job->rank[s->d.n].path))) break;
  s->ok = s->d.n == job->n;
  s->mux = calloc((size_t)(job->n > 0 ? job->n : 1), sizeof *s->mux);
  char **paths = calloc((size_t)(job->n > 0 ? job->n : 1), sizeof *paths);
  for (int i = 0; paths && i < job->n; i++) paths[i] = (char *)job->rank[i].path;
  if (paths) s->hang = ncs_hang_new(job->n, paths, NCS_HANG_DEFAULT_S);
  free(paths);
  s->ok = s->ok && s->mux;
  s->figs = job->stages;
  if (s->ok && job->stages && job->stages->replay) {
    s->stages = job->stages;
    s->stages->replay_on = 1;
    for (int i = 0; i < s->d.n; i++) s->d.f[i]->keep_replay = 1;
  }
  return s;
}

static void v_visitor(void *state, int file, struct ncs_visitor *v) {
  struct verdicts *s = state;
  if (!s || !s->ok) return;
  struct ncs_mux *m = &s->mux[file];
  memset(m, 0, sizeof *m);
  /* (every analysis was created before the first visitor: fig_on is known) */
  if (s->figs && s->figs->fig_on && s->figs->n == s->d.n) s->d.f[file]->kact_elsewhere = 1;
  ncs_dfacts_attach(s->d.f[file], m);
  if (s->hang && m->n < NCS_MUX_MAX) ncs_hang_visitor(s->hang, file, &m->v[m->n++]);
  ncs_mux_build(m, v);
}

static void v_file_done(void *state, int file, const struct ncs_read_status *st) {
  struct verdicts *s = state;
  if (!s || !s->ok) return;
  int rc = st->damaged ? 1 : st->error[0] && !st->chunks && !st->truncated ? 2 : 0;
  ncs_dfacts_finish(s->d.f[file], rc, st);
  if (s->stages) { ncs_stages_put_replay(s->stages, file, s->d.f[file]->replay); s->d.f[file]->replay = NULL; }
  if (s->hang) ncs_hang_file_done(s->hang, file, rc, st);
}

static void v_finish(void *state, const struct ncs_job *job) {
  struct verdicts *s = state;
  if (!s || !s->ok) return;
  for (int i = 0; i < s->d.n; i++) /* gputime's figures, made from the same KERNEL* records */
    if (s->d.f[i]->kact_elsewhere) s->d.f[i]->gpu = s->figs->fig[i];
  if (job->strag && *job->strag) { /* the engine's files are all read: its results are final */
    ncs_strag_finish(*job->strag);
    s->d.strag = *job->strag;      /* for the doctor's straggler check */
  }
  ncs_doctor_run(&s->d);
  if (s->hang) { ncs_hang_finish(s->hang); ncs_hang_to_doctor(s->hang, &s->d); }
  for (int i = 0; i < s->d.nv && job->ended_badly; i++)
    if (s->d.v[i].problem && s->d.v[i].hang && s->d.v[i].hang->kind >= NCS_HANG_INIT_FAILED &&
        s->d.v[i].hang->kind != NCS_HANG_IN_FLIGHT) /* a cut trace stays normal input (docs/CLI.md) */
      *job->ended_badly = 1;
  s->h = job->headline;
  if (s->h) ncs_headline_build(s->h, &s->d);
}

/* The doctor's verdicts, after finish() (render/doctor_render.c prints report's "verdicts");
 * NULL when a file's facts could not be made (then report shows none). */
static const void *v_result(void *state) {
  struct verdicts *s = state;
  return s && s->ok ? &s->d : NULL;
}

static void v_destroy(void *state) {
  struct verdicts *s = state;
  if (!s) return;
  ncs_doctor_free(&s->d);
  ncs_hang_free(s->hang);
  free(s->mux);
  free(s);
}

const struct ncs_analysis ncs_analysis_verdicts = {
  .name = "verdicts",
  .create = v_create,
  .visitor = v_visitor,
  .file_done = v_file_done,
  .finish = v_finish,
  .result = v_result,
  .destroy = v_destroy,
};
