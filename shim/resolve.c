/* resolve.c — finds the real NCCL entry points behind the shim's wrappers.
 *
 * Contract: ncs_real_fn[f] holds the real function for every entry point that could be found,
 * never one of the shim's own wrappers. Order per entry point: `pncclX` through RTLD_NEXT
 * (NCCL >= 2.16 exports the strong pncclX behind a weak ncclX), then `ncclX` through
 * RTLD_NEXT, then a libnccl.so* already loaded privately (RTLD_LOCAL, e.g. by a Python
 * extension) found with dl_iterate_phdr and reopened with RTLD_NOLOAD. ncs_resolve_all runs
 * once (constructor or the first wrapper to find its entry empty, whichever comes first;
 * ncs_real_slow); an entry still missing is looked up again at its next call (a private NCCL
 * may be loaded later), under a mutex, off the hot path. A slot, once set, never changes:
 * wrappers use a set slot without the once-init. No I/O, no allocation of our own, no recursion into the wrappers. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

_Atomic(void *) ncs_real_fn[NCS_FN_COUNT];
pthread_once_t ncs_resolve_once = PTHREAD_ONCE_INIT;

static const char *const fn_names[NCS_FN_COUNT] = {
#define NCS_FN_NAME_(ret, name, params, args) #name,
  NCCLSCOPE_PROTOTYPES(NCS_FN_NAME_)
#undef NCS_FN_NAME_
};

static pthread_mutex_t late_mu = PTHREAD_MUTEX_INITIALIZER;

/* 1 when p lies inside this shared object (one of our own wrappers). */
static int is_ours(void *p) {
  Dl_info self, other;
  if (!p) return 0;
  if (!dladdr((void *)ncs_resolve_all, &self) || !dladdr(p, &other)) return 0;
  return self.dli_fbase == other.dli_fbase;
}

static void *lookup_next(const char *name) {
  char sym[96];
  snprintf(sym, sizeof sym, "pnccl%s", name);
  void *p = dlsym(RTLD_NEXT, sym);
  if (p && !is_ours(p)) return p;
  snprintf(sym, sizeof sym, "nccl%s", name);
  p = dlsym(RTLD_NEXT, sym);
  if (p && !is_ours(p)) return p;
  return NULL;
}

/* dl_iterate_phdr: remembers the first loaded object whose file name starts with prefix. */
struct find_ctx { const char *prefix; char path[512]; };
static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg) {
  struct find_ctx *fc = arg;
  const char *name = info->dlpi_name;
  if (!name || !*name) return 0;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, fc->prefix, strlen(fc->prefix)) != 0) return 0;
  snprintf(fc->path, sizeof fc->path, "%s", name);
  return 1;
}

void *ncs_loaded_handle(const char *prefix) {
  struct find_ctx fc = {prefix, {0}};
  void *h = NULL;
  ncs_gate_enter();
  if (dl_iterate_phdr(find_loaded, &fc) != 0) h = dlopen(fc.path, RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL);
  ncs_gate_leave();
  return h;
}

static void *private_handle(void) {
  static void *handle;  /* guarded by late_mu or by the once-init */
  if (handle) return handle;
  handle = ncs_loaded_handle("libnccl.so");
  return handle;
}

static void *lookup_in(void *h, const char *name) {
  if (!h) return NULL;
  char sym[96];
  snprintf(sym, sizeof sym, "pnccl%s", name);
  void *p = dlsym(h, sym);
  if (!p || is_ours(p)) {
    snprintf(sym, sizeof sym, "nccl%s", name);
    p = dlsym(h, sym);
  }
  return (p && !is_ours(p)) ? p : NULL;
}

void ncs_resolve_all(void) {
  pthread_mutex_lock(&late_mu);
  ncs_gate_enter(); /* (nests with ncs_loaded_handle's) */
  void *priv = NULL;
  int priv_looked = 0; /* the loaded objects are walked at most once here */
  for (int i = 0; i < NCS_FN_COUNT; i++) {
    void *p = lookup_next(fn_names[i]);
    if (!p && !priv_looked) { priv = private_handle(); priv_looked = 1; }
    if (!p) p = lookup_in(priv, fn_names[i]);
    atomic_store_explicit(&ncs_real_fn[i], p, memory_order_release);
  }
  ncs_gate_leave();
  pthread_mutex_unlock(&late_mu);
}

/* fork: no resolution may be half done in the child */
void ncs_resolve_atfork(int phase) {
  if (phase == 0) pthread_mutex_lock(&late_mu);
  else if (phase == 1) pthread_mutex_unlock(&late_mu);
  else pthread_mutex_unlock(&late_mu); /* the child's thread is the one that took it */
}

void *ncs_real_slow(enum ncs_fn f) {
  pthread_once(&ncs_resolve_once, ncs_resolve_all);
  void *p = atomic_load_explicit(&ncs_real_fn[f], memory_order_acquire);
  return p ? p : ncs_resolve_late(f);
}

void *ncs_resolve_late(enum ncs_fn f) {
  if ((unsigned)f >= NCS_FN_COUNT) return NULL;
  pthread_mutex_lock(&late_mu);
  void *p = atomic_load_explicit(&ncs_real_fn[f], memory_order_acquire);
  if (!p) {
    ncs_gate_enter();
    p = lookup_next(fn_names[f]);
    if (!p) p = lookup_in(private_handle(), fn_names[f]);
    ncs_gate_leave();
    if (p) atomic_store_explicit(&ncs_real_fn[f], p, memory_order_release);
  }
  pthread_mutex_unlock(&late_mu);
  if (!p) ncs_debug("no real nccl%s found", fn_names[f]);
  return p;
}
