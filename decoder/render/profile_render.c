/* profile_render.c — report's NCCL-profiler section as text and JSON (profile_render.h). */
#include "render/profile_render.h"

#include <string.h>

void ncs_profile_print_text(const struct ncs_profile_result *r, FILE *out) {
  if (!r || !r->events) return;
  fprintf(out, "\nNCCL profiler plugin: algorithm/protocol and channels per collective (%llu events)\n",
          (unsigned long long)r->events);
  for (int i = 0; i < r->nfuncs; i++) {
    const struct ncs_profile_func *m = &r->funcs[i];
    fprintf(out, "  ");
    ncs_text_escape(out, m->name, strlen(m->name));
    fprintf(out, ": %llu on %d rank%s;", (unsigned long long)m->events, m->ranks, m->ranks == 1 ? "" : "s");
    for (int c = 0; c < m->ncombos; c++) {
      fprintf(out, "%s", c ? ", " : " ");
      ncs_text_escape(out, m->combo[c].algo, strlen(m->combo[c].algo));
      fputc('/', out);
      ncs_text_escape(out, m->combo[c].proto, strlen(m->combo[c].proto));
      fprintf(out, " %llu", (unsigned long long)m->combo[c].events);
    }
    if (m->other) fprintf(out, ", other %llu", (unsigned long long)m->other);
    if (m->ch_min == m->ch_max) fprintf(out, "; channels %u\n", m->ch_min);
    else fprintf(out, "; channels %u-%u\n", m->ch_min, m->ch_max);
  }
  if (r->dropped) fprintf(out, "  events lost in the shim (ring full): %llu\n", (unsigned long long)r->dropped);
}

static void funcs_json(struct ncs_json *j, const struct ncs_profile_func *f, int n, int with_ranks) {
  ncs_json_arr_begin(j, "ops");
  for (int i = 0; i < n; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "func", f[i].name);
    ncs_json_uint(j, "events", f[i].events);
    ncs_json_uint(j, "count", f[i].count);
    if (with_ranks) ncs_json_int(j, "ranks", f[i].ranks);
    ncs_json_uint(j, "channels_min", f[i].ch_min);
    ncs_json_uint(j, "channels_max", f[i].ch_max);
    ncs_json_arr_begin(j, "algorithms");
    for (int c = 0; c < f[i].ncombos; c++) {
      ncs_json_obj_begin(j, NULL);
      ncs_json_str(j, "algo", f[i].combo[c].algo);
      ncs_json_str(j, "proto", f[i].combo[c].proto);
      ncs_json_uint(j, "events", f[i].combo[c].events);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
    ncs_json_uint(j, "other", f[i].other);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

void ncs_profile_print_json(const struct ncs_profile_result *r, struct ncs_json *j) {
  if (!r) return;
  ncs_json_obj_begin(j, "profile");
  ncs_json_uint(j, "events", r->events);
  ncs_json_uint(j, "dropped", r->dropped);
  funcs_json(j, r->funcs, r->nfuncs, 1);
  ncs_json_obj_end(j);
}

void ncs_profile_print_rank_json(const struct ncs_profile_result *r, struct ncs_json *j, int file) {
  if (!r || !r->file || file < 0 || file >= r->nfiles) return;
  const struct ncs_profile_file *pf = &r->file[file];
  ncs_json_obj_begin(j, "profile");
  ncs_json_uint(j, "events", pf->events);
  ncs_json_uint(j, "dropped", pf->dropped);
  ncs_json_uint(j, "undecodable", pf->bad);
  funcs_json(j, pf->f, pf->nfuncs, 0);
  ncs_json_obj_end(j);
}
