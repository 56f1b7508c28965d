/* dlsym.c — NCCL calls made through dlsym(handle, "ncclX") (ctypes, vLLM's pynccl, plugins
 * that dlopen NCCL) are traced exactly like linked calls.
 *
 * Contract: the shim exports `dlsym` (and nothing else outside nccl*). Its entry is a few
 * instructions of assembly: RTLD_DEFAULT and RTLD_NEXT lookups jump straight into libc's
 * dlsym (a tail jump, so libc sees the caller's own return address: RTLD_NEXT and the
 * caller's namespace stay the caller's, and such lookups of ncclX already land in the
 * preloaded shim). A lookup on a handle calls libc's dlsym and returns its result unchanged,
 * except when the name is one of the NCCLSCOPE_PROTOTYPES entry points, the caller is not the
 * shim itself, and the address lies in the same object as the NCCL the wrappers forward to
 * (resolve.c): then the shim's wrapper of that name is returned. An ncclX found in another
 * object (a second NCCL, another interposer) is returned as found and, with
 * NCCLSCOPE_DEBUG=1, named as not traced. After a successful lookup dlerror() reports no
 * error, as libc leaves it; errno is unchanged. libc's dlsym is found with
 * dlvsym(RTLD_NEXT, "dlsym", version), never with dlsym.
 * Only what the real library has: a lookup (RTLD_DEFAULT, or a handle whose scope holds the
 * shim, e.g. dlopen(NULL)) that would land on the shim's wrapper of an entry point the loaded
 * NCCL lacks (an older NCCL without ncclCommShrink, say), or of any entry point while no NCCL
 * is loaded, fails as it would without the shim: NULL, with dlerror() set by a failing lookup
 * of the same name (its text names libc rather than the caller: docs/SHIM.md).
 * x86_64 and aarch64 only (RTLD_DEFAULT filtering: x86_64); elsewhere the shim does not define
 * dlsym and lookups by handle are not traced (docs/SHIM.md). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__aarch64__)

typedef void *(*dlsym_fn)(void *, const char *);

/* libc's dlsym, read by the assembly entry; set once by ncs_dlsym_init (any thread may set
 * it, always to the same value). */
__attribute__((visibility("hidden"))) void *ncs_real_dlsym;

#define NCS_WRAPPER_DECL_(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(NCS_WRAPPER_DECL_)
#undef NCS_WRAPPER_DECL_

static const char *const names[NCS_FN_COUNT] = {
#define NCS_WRAPPER_NAME_(ret, name, params, args) "nccl" #name,
  NCCLSCOPE_PROTOTYPES(NCS_WRAPPER_NAME_)
#undef NCS_WRAPPER_NAME_
};

/* The shim's own exported wrappers (resolved through the GOT: the preloaded shim's). */
static void *wrapper_addr(int i) {
  static void *const addr[NCS_FN_COUNT] = {
#define NCS_WRAPPER_ADDR_(ret, name, params, args) (void *)&nccl##name,
    NCCLSCOPE_PROTOTYPES(NCS_WRAPPER_ADDR_)
#undef NCS_WRAPPER_ADDR_
  };
  return addr[i];
}

static void *null_dlsym(void *handle, const char *name) { (void)handle; (void)name; return NULL; }

/* Not instrumented by TSan (make tsan): a sanitizer runtime finds the functions it intercepts
 * with dlsym(RTLD_NEXT, ...) while it initialises, before any instrumented code may run, and
 * those lookups come here first. */
__attribute__((visibility("hidden"), used, no_sanitize_thread)) void *ncs_dlsym_init(void) {
  void *p = ncs_real_dlsym;
  if (p) return p;
  p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__x86_64__)
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#else
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#endif
  if (!p) p = (void *)null_dlsym; /* no libc dlsym: lookups fail as if the symbol were absent */
  __atomic_store_n(&ncs_real_dlsym, p, __ATOMIC_RELEASE);
  return p;
}

static void *object_base(const void *p) {
  Dl_info info;
  return p && dladdr(p, &info) ? info.dli_fbase : NULL;
}

static void not_traced(const char *name, const void *p, const char *why) {
  const char *d = getenv("NCCLSCOPE_DEBUG");
  if (!ncs_cfg.debug && !(d && *d == '1')) return;
  Dl_info info;
  const char *file = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
  char line[768];
  int n = snprintf(line, sizeof line, "ncclscope[%d]: dlsym(\"%s\") found %s: %s; calls through it are not traced\n",
                   (int)getpid(), name, file, why);
  if (n > 0) {
    ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)w;
  }
}

/* The wrapper to hand out for `name` found at p, or NULL to hand out p. */
static void *wrapper_for(const char *name, void *p, void *caller) {
  int i = 0;
  while (i < NCS_FN_COUNT && strcmp(names[i], name) != 0) i++;
  if (i == NCS_FN_COUNT) return NULL;
  void *self = object_base((void *)wrapper_for);
  if (object_base(caller) == self) return NULL;   /* the shim's own lookups (resolve.c) */
  void *p_base = object_base(p);
  if (p_base == self) return NULL;                /* already our wrapper */
  void *wrap = wrapper_addr(i);
  if (object_base(wrap) != self) {
    not_traced(name, p, "the shim is not first in the global scope (not preloaded?)");
    return NULL;
  }
  void *real = ncs_real((enum ncs_fn)i);
  if (!real) {
    not_traced(name, p, "the shim found no NCCL to forward to");
    return NULL;
  }
  if (real != p && object_base(real) != p_base) {
    not_traced(name, p, "it is not the NCCL the shim traces");
    return NULL;
  }
  return wrap;
}

static __attribute__((no_sanitize_thread)) int entry_index(const char *name) {
  if (!name || strncmp(name, "nccl", 4) != 0) return -1;
  for (int i = 0; i < NCS_FN_COUNT; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

/* 1 when entry point i has no real function to forward to (looked up again if still missing:
 * NCCL may have been loaded since). */
static int real_absent(int i) {
  return !atomic_load_explicit(&ncs_real_fn[i], memory_order_acquire) && !ncs_real_slow((enum ncs_fn)i);
}

/* Fails the lookup of `name` as an absent symbol: NULL, with dlerror() set by libc's own failing
 * lookup of the name in libc (which never defines an nccl name). libc's handle is opened once
 * and kept (libc is never unloaded). */
static void *absent(const char *name) {
  static void *libc_h;
  dlsym_fn real = (dlsym_fn)__atomic_load_n(&ncs_real_dlsym, __ATOMIC_ACQUIRE);
  int saved = errno;
  void *h = __atomic_load_n(&libc_h, __ATOMIC_ACQUIRE);
  if (!h) {
    h = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    __atomic_store_n(&libc_h, h, __ATOMIC_RELEASE); /* any thread stores the same handle */
  }
  void *p = h ? real(h, name) : NULL;
  errno = saved;
  return p; /* NULL, and dlerror() says "...libc.so.6: undefined symbol: NAME" */
}

/* RTLD_DEFAULT lookups (x86_64's entry calls this first, the caller's arguments kept): 1 when
 * `name` is an entry point the loaded NCCL lacks, so the lookup must fail. Not instrumented by
 * TSan (as ncs_dlsym_init): its runtime looks names up this way before it is initialised. */
__attribute__((visibility("hidden"), used, no_sanitize_thread)) int ncs_dlsym_default_absent(const char *name) {
  int i = entry_index(name);
  if (i < 0) return 0;
  int saved = errno;
  int r = real_absent(i);
  errno = saved;
  return r;
}
__attribute__((visibility("hidden"), used)) void *ncs_dlsym_absent(void *handle, const char *name) {
  (void)handle;
  return absent(name);
}

/* Lookups on a handle (the assembly entry jumps here, so our return address is the caller's). */
__attribute__((visibility("hidden"), used)) void *ncs_dlsym_handle(void *handle, const char *name) {
  void *caller = __builtin_return_address(0);
  void *p = ((dlsym_fn)__atomic_load_n(&ncs_real_dlsym, __ATOMIC_ACQUIRE))(handle, name);
  if (!p || !name || strncmp(name, "nccl", 4) != 0) return p;
  int saved = errno;
  int i = entry_index(name);
  if (i >= 0 && object_base(p) == object_base((void *)wrapper_for) &&
      object_base(caller) != object_base((void *)wrapper_for) && real_absent(i)) {
    errno = saved;
    return absent(name); /* the handle's scope holds the shim (dlopen(NULL)): as without it */
  }
  void *w = wrapper_for(name, p, caller);
  dlerror(); /* our own lookups leave no error behind; after a successful dlsym there is none */
  errno = saved;
  return w ? w : p;
}

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl dlsym\n"
    ".type dlsym, @function\n"
    ".p2align 4\n"
    "dlsym:\n"
    "  endbr64\n"
    "  movq ncs_real_dlsym(%rip), %rax\n"
    "  testq %rax, %rax\n"
    "  jz 2f\n"
    "1:\n"
    "  testq %rdi, %rdi\n"          /* RTLD_DEFAULT */
    "  jz 4f\n"
    "  cmpq $-1, %rdi\n"            /* RTLD_NEXT */
    "  je 3f\n"
    "  jmp ncs_dlsym_handle\n"
    "3:\n"
    "  jmp *%rax\n"
    "4:\n"                          /* RTLD_DEFAULT: an entry point NCCL lacks fails */
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  subq $8, %rsp\n"
    "  movq %rsi, %rdi\n"
    "  call ncs_dlsym_default_absent\n"
    "  addq $8, %rsp\n"
    "  popq %rsi\n"
    "  popq %rdi\n"
    "  testl %eax, %eax\n"
    "  jnz 5f\n"
    "  movq ncs_real_dlsym(%rip), %rax\n"
    "  jmp *%rax\n"
    "5:\n"
    "  jmp ncs_dlsym_absent\n"
    "2:\n"                          /* first lookup: find libc's dlsym, arguments kept */
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  subq $8, %rsp\n"
    "  call ncs_dlsym_init\n"
    "  addq $8, %rsp\n"
    "  popq %rsi\n"
    "  popq %rdi\n"
    "  jmp 1b\n"
    ".size dlsym, .-dlsym\n");
#else
__asm__(
    ".text\n"
    ".globl dlsym\n"
    ".type dlsym, %function\n"
    ".p2align 4\n"
    "dlsym:\n"
    "  hint #34\n"                  /* bti c */
    "  adrp x16, ncs_real_dlsym\n"
    "  ldr x16, [x16, :lo12:ncs_real_dlsym]\n"
    "  cbz x16, 2f\n"
    "1:\n"
    "  cbz x0, 3f\n"                /* RTLD_DEFAULT */
    "  cmn x0, #1\n"                /* RTLD_NEXT */
    "  b.eq 3f\n"
    "  b ncs_dlsym_handle\n"
    "3:\n"
    "  br x16\n"
    "2:\n"
    "  stp x29, x30, [sp, #-32]!\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  bl ncs_dlsym_init\n"
    "  mov x16, x0\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldp x29, x30, [sp], #32\n"
    "  b 1b\n"
    ".size dlsym, .-dlsym\n");
#endif

#endif
