/* callsites.c — one trace's call sites and their names (contract: callsites.h). */
#include "model/callsites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/grow.h"

#define MAXF 32
struct frame { uint32_t module; uint64_t offset, symbol_offset; char *symbol; };
struct site { uint32_t id, nframes; struct frame f[MAXF]; };
struct mod { uint32_t index; char *path; char build_id[41]; };
struct ncs_sites {
  struct site *s;
  size_t ns, caps;
  struct mod *m;
  size_t nm, capm;
};

struct ncs_sites *ncs_sites_new(void) { return calloc(1, sizeof(struct ncs_sites)); }

void ncs_sites_free(struct ncs_sites *t) {
  if (!t) return;
  for (size_t i = 0; i < t->ns; i++)
    for (uint32_t k = 0; k < t->s[i].nframes; k++) free(t->s[i].f[k].symbol);
  for (size_t i = 0; i < t->nm; i++) free(t->m[i].path);
  free(t->s);
  free(t->m);
  free(t);
}

size_t ncs_sites_count(const struct ncs_sites *t) { return t ? t->ns : 0; }

void ncs_sites_module(struct ncs_sites *t, const struct ncs_module *m) {
  if (!t) return;
  for (size_t i = 0; i < t->nm; i++)
    if (t->m[i].index == m->module) return; /* written again after a lost chunk: the same */
  if (ncs_grow((void **)&t->m, &t->capm, t->nm + 1, sizeof *t->m)) return;
  struct mod *x = &t->m[t->nm];
  x->index = m->module;
  x->path = strdup(m->path ? m->path : "");
  memcpy(x->build_id, m->build_id, sizeof x->build_id);
  x->build_id[sizeof x->build_id - 1] = 0;
  if (x->path) t->nm++;
}

static const struct site *site_of(const struct ncs_sites *t, uint32_t id) {
  for (size_t i = 0; t && i < t->ns; i++)
    if (t->s[i].id == id) return &t->s[i];
  return NULL;
}

void ncs_sites_callsite(struct ncs_sites *t, const struct ncs_callsite *c) {
  if (!t || !c->id || site_of(t, c->id)) return;
  if (ncs_grow((void **)&t->s, &t->caps, t->ns + 1, sizeof *t->s)) return;
  struct site *s = &t->s[t->ns++];
  memset(s, 0, sizeof *s);
  s->id = c->id;
  s->nframes = c->nframes < MAXF ? c->nframes : MAXF;
  for (uint32_t k = 0; k < s->nframes; k++) {
    const struct ncs_frame *f = &c->frames[k];
    s->f[k] = (struct frame){f->module, f->offset, f->symbol_offset,
                             f->symbol && *f->symbol ? strdup(f->symbol) : NULL};
  }
}

static const struct mod *mod_of(const struct ncs_sites *t, uint32_t index) {
  for (size_t i = 0; i < t->nm; i++)
    if (t->m[i].index == index) return &t->m[i];
  return NULL;
}

static const char *base_name(const char *p) {
  const char *s = p ? strrchr(p, '/') : NULL;
  return s ? s + 1 : p ? p : "";
}

int ncs_frame_is_runtime(const char *path, const char *func) {
  static const char *const libs[] = {"libnccl", "libncclscope", "libc.so", "libc-", "libpthread", "ld-linux",
                                     "ld64.so", "libdl", "libstdc++", "libgcc_s", "libcudart", "libcuda.so",
                                     "libpython", "python", "libunwind", NULL};
  const char *b = base_name(path);
  for (int i = 0; libs[i]; i++)
    if (!strncmp(b, libs[i], strlen(libs[i]))) return 1;
  /* NCCL or the shim linked into the program itself, or Python's evaluation loop */
  if (func && (!strncmp(func, "nccl", 4) || !strncmp(func, "pnccl", 5) || !strncmp(func, "_PyEval", 7) ||
               !strncmp(func, "_start", 6) || !strcmp(func, "__libc_start_main")))
    return 1;
  return 0;
}

/* Frame f named into buf; its parts into n when n is given. */
static void name_frame(const struct ncs_sites *t, const struct frame *f, struct ncs_symbolizer *sym, char *buf,
                       size_t len, struct ncs_site_name *n) {
  const struct mod *m = f->module ? mod_of(t, f->module) : NULL;
  const char *mb = m ? base_name(m->path) : "?";
  struct ncs_sym s;
  if (m) ncs_symbolize(sym, m->path, m->build_id, f->offset, &s);
  else { memset(&s, 0, sizeof s); s.state = NCS_SYM_MISSING; }
  const char *func = s.func ? s.func : (s.state != NCS_SYM_OK && s.state != NCS_SYM_UNCHECKED) ? f->symbol : NULL;
  uint64_t off = s.func ? s.func_off : f->symbol_offset;
  const char *note = s.state == NCS_SYM_CHANGED ? " [module changed since the run]"
                     : s.state == NCS_SYM_MISSING && m ? " [module not found]" : "";
  if (func && s.file)
    snprintf(buf, len, "%s (%s:%d)%s", func, s.file, s.line, note);
  else if (func)
    snprintf(buf, len, "%s+0x%llx (%s)%s", func, (unsigned long long)off, mb, note);
  else
    snprintf(buf, len, "%s+0x%llx%s", mb, (unsigned long long)f->offset, note);
  if (!n) return;
  snprintf(n->key, sizeof n->key, "%s+0x%llx", mb, (unsigned long long)f->offset);
  snprintf(n->func, sizeof n->func, "%s", func ? func : "");
  snprintf(n->file, sizeof n->file, "%s", s.file ? s.file : "");
  n->line = s.file ? s.line : 0;
  n->state = s.state;
}

int ncs_sites_name(const struct ncs_sites *t, uint32_t id, struct ncs_symbolizer *sym, struct ncs_site_name *n) {
  memset(n, 0, sizeof *n);
  n->frame = -1;
  const struct site *s = site_of(t, id);
  if (!s || !s->nframes) {
    snprintf(n->where, sizeof n->where, "unknown call site");
    snprintf(n->key, sizeof n->key, "?");
    return -1;
  }
  n->nframes = (int)s->nframes;
  int pick = 0;
  for (uint32_t k = 0; k < s->nframes; k++) {
    const struct mod *m = s->f[k].module ? mod_of(t, s->f[k].module) : NULL;
    struct ncs_sym y;
    if (m) ncs_symbolize(sym, m->path, m->build_id, s->f[k].offset, &y);
    const char *func = m && y.func ? y.func : s->f[k].symbol;
    if (!ncs_frame_is_runtime(m ? m->path : NULL, func)) { pick = (int)k; break; }
  }
  n->frame = pick;
  name_frame(t, &s->f[pick], sym, n->where, sizeof n->where, n);
  return 0;
}

int ncs_sites_frame(const struct ncs_sites *t, uint32_t id, int k, struct ncs_symbolizer *sym, char *buf, size_t n) {
  const struct site *s = site_of(t, id);
  if (!s || k < 0 || (uint32_t)k >= s->nframes) return -1;
  name_frame(t, &s->f[k], sym, buf, n, NULL);
  return 0;
}
