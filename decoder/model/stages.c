/* stages.c — the table of what one analysis computes once and others read (stages.h). */
#include "model/stages.h"

#include <stdlib.h>
#include <string.h>

#include "model/replay.h"

int ncs_stages_init(struct ncs_stages *s, int nfiles) {
  memset(s, 0, sizeof *s);
  size_t n = nfiles > 0 ? (size_t)nfiles : 1;
  s->starts = calloc(n, sizeof *s->starts);
  s->fig = calloc(n, sizeof *s->fig);
  s->replay = calloc(n, sizeof *s->replay);
  if (!s->starts || !s->fig || !s->replay) {
    free(s->starts); free(s->fig); free(s->replay);
    memset(s, 0, sizeof *s);
    return -1;
  }
  s->n = nfiles;
  for (int i = 0; i < nfiles; i++) s->fig[i].state = -1;
  return 0;
}

void ncs_stages_free(struct ncs_stages *s) {
  for (int i = 0; s->starts && i < s->n; i++) free(s->starts[i].t);
  for (int i = 0; s->replay && i < s->n; i++) ncs_replay_free(s->replay[i]);
  free(s->starts);
  free(s->replay);
  free(s->fig);
  memset(s, 0, sizeof *s);
}

void ncs_stages_put_starts(struct ncs_stages *s, int file, uint64_t *t, size_t n) {
  if (!s || file < 0 || file >= s->n) { free(t); return; }
  free(s->starts[file].t);
  s->starts[file] = (struct ncs_step_starts){t, t ? n : 0};
}

size_t ncs_stages_starts(const struct ncs_stages *s, int file, const uint64_t **t) {
  *t = NULL;
  if (!s || file < 0 || file >= s->n) return 0;
  *t = s->starts[file].t;
  return s->starts[file].n;
}

void ncs_stages_put_replay(struct ncs_stages *s, int file, struct ncs_replay *r) {
  if (!s || !s->replay || file < 0 || file >= s->n) { ncs_replay_free(r); return; }
  ncs_replay_free(s->replay[file]);
  s->replay[file] = r;
}

const struct ncs_replay *ncs_stages_replay(const struct ncs_stages *s, int file) {
  return s && s->replay && file >= 0 && file < s->n ? s->replay[file] : NULL;
}

void ncs_stages_drop_file(struct ncs_stages *s, int file) {
  if (!s || file < 0 || file >= s->n) return;
  free(s->starts[file].t);
  s->starts[file] = (struct ncs_step_starts){NULL, 0};
  ncs_replay_free(s->replay[file]);
  s->replay[file] = NULL;
}

const struct ncs_kact_fig *ncs_stages_fig(const struct ncs_stages *s, int file) {
  return s && s->fig_on && file >= 0 && file < s->n ? &s->fig[file] : NULL;
}
