/* envview.c — NCCL sees the shim's values of a few variables; nothing else does (issue 9 part 3).
 *
 * Contract:
 *   - The shim exports getenv and fopen. Every caller gets exactly libc's answer (getenv scans
 *     environ as glibc does; fopen is libc's fopen64), except a caller whose return address lies
 *     in the text of the NCCL library the shim traces (the object holding the real entry
 *     points: its internal env plugin and its debug logger call getenv, its logger fopen): for a
 *     variable a collector registered (ncs_env_override), that caller gets the collector's value
 *     instead. environ is never written: the application, its threads and every child it starts
 *     (fork, exec, system, posix_spawn) see exactly the environment they would see without the
 *     shim, at every moment.
 *   - ncs_env_file_hook: a fopen of NCCL_DEBUG_FILE's value the log capture asked for (the path
 *     ncs_env_marker) made by NCCL returns the capture's FILE (fopencookie): NCCL's log goes
 *     into the shim's memory, through no descriptor at all.
 *   - Armed at activation (ncs_env_arm, on the activating thread, before NCCL's first call):
 *     finds NCCL's text (dladdr + dl_iterate_phdr, inside the fork gate). Before that, and for
 *     a process that never uses NCCL, both functions only forward.
 *   - Not covered: an NCCL that reads its environment through an external env plugin
 *     (NCCL_ENV_PLUGIN, 2.28) or statically linked into another library; then NCCL reads the
 *     user's values and nothing is captured (docs/SHIM.md "Environment"). */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define NCS_EXPORT __attribute__((visibility("default")))
#define MAX_OVERRIDES 8

struct override { const char *name; const char *(*value)(const char *user); };
static struct override overrides[MAX_OVERRIDES];
static int noverrides;
static _Atomic uintptr_t nccl_lo, nccl_hi; /* NCCL's executable segment; 0: not armed */
static FILE *(*file_hook)(void);

void ncs_env_override(const char *name, const char *(*value)(const char *user)) {
  for (int i = 0; i < noverrides; i++)
    if (!strcmp(overrides[i].name, name)) { overrides[i].value = value; return; }
  if (noverrides < MAX_OVERRIDES) overrides[noverrides++] = (struct override){name, value};
}

void ncs_env_file_hook(FILE *(*open_capture)(void)) { file_hook = open_capture; }

/* libc's getenv, as glibc computes it: the first NAME=value entry of environ */
static char *plain_getenv(const char *name) {
  extern char **environ;
  size_t n = strlen(name);
  if (!n || !environ) return NULL;
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}
const char *ncs_env_user(const char *name) { return plain_getenv(name); }

static int from_nccl(const void *ra) {
  uintptr_t a = (uintptr_t)ra, lo = atomic_load_explicit(&nccl_lo, memory_order_acquire);
  return lo && a >= lo && a < atomic_load_explicit(&nccl_hi, memory_order_relaxed);
}

NCS_EXPORT char *getenv(const char *name) {
  if (NCS_UNLIKELY(from_nccl(__builtin_return_address(0))))
    for (int i = 0; i < noverrides; i++)
      if (!strcmp(overrides[i].name, name)) return (char *)overrides[i].value(plain_getenv(name));
  return plain_getenv(name);
}

const char *const ncs_env_marker = "/dev/./null"; /* harmless if ever opened for real */

NCS_EXPORT FILE *fopen(const char *path, const char *mode) {
  if (NCS_UNLIKELY(from_nccl(__builtin_return_address(0))) && file_hook && path && !strcmp(path, ncs_env_marker) &&
      mode && mode[0] == 'w') {
    FILE *f = file_hook();
    if (f) return f;
  }
  return fopen64(path, mode);
}

/* dl_iterate_phdr: the executable PT_LOAD segment of the object loaded at base */
struct text_ctx { uintptr_t base, lo, hi; };
static int find_text(struct dl_phdr_info *info, size_t size, void *arg) {
  struct text_ctx *t = arg;
  if ((uintptr_t)info->dlpi_addr != t->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
    if (!t->lo || lo < t->lo) t->lo = lo;
    if (hi > t->hi) t->hi = hi;
  }
  return 1;
}

int ncs_text_range(const void *function, uintptr_t *lo, uintptr_t *hi) {
  Dl_info di;
  struct text_ctx t = {0, 0, 0};
  ncs_gate_enter();
  if (function && dladdr(function, &di) && di.dli_fbase) {
    t.base = (uintptr_t)di.dli_fbase;
    dl_iterate_phdr(find_text, &t);
  }
  ncs_gate_leave();
  if (!t.lo) return -1;
  *lo = t.lo;
  *hi = t.hi;
  return 0;
}

int ncs_env_arm(void *nccl_function) {
  if (atomic_load(&nccl_lo)) return 0;
  uintptr_t lo, hi;
  if (ncs_text_range(nccl_function, &lo, &hi) != 0) return -1;
  atomic_store_explicit(&nccl_hi, hi, memory_order_relaxed);
  atomic_store_explicit(&nccl_lo, lo, memory_order_release);
  return 0;
}
