/* libfault.c — an LD_PRELOAD library that makes chosen libc calls fail, for the shim's
 * fault-injection tests (tests/test_fault_*.sh).
 *
 * Contract: only calls whose return address lies in the executable code of libncclscope.so
 * are "eligible" (NCS_FAULT_SCOPE=all: every call), so the job itself never sees a failure it
 * would not see without the tool. Eligible calls of the functions named in NCS_FAULT_FN are
 * numbered 1, 2, 3, ... (one count for all of them, shared by forked children); call number
 * NCS_FAULT_N fails (0: none fails, the run only counts), and with NCS_FAULT_PERSIST=1 every
 * eligible call from N on fails. I/O calls fail with -1 and errno NCS_FAULT_ERRNO (EIO,
 * ENOSPC, EFBIG or a number; default EIO); allocations return NULL with errno ENOMEM.
 * NCS_FAULT_SHORT=1 turns the injected write/pwrite into a short one (half the bytes written,
 * that count returned), and the next eligible call after it fails: what a disk that fills up
 * in the middle of a write does; later calls succeed again (space was freed).
 * NCS_FAULT_STATS names a file that holds two u64 counters (eligible calls, injections),
 * shared through mmap so they survive kill -9 and add up over forked children.
 *
 * Functions: write pwrite pwrite64 writev pwritev open open64 openat openat64 creat mkdir
 * mkdirat fsync fdatasync ftruncate rename posix_fallocate (I/O) and malloc calloc realloc
 * posix_memalign aligned_alloc memalign mmap (allocation: the shim's rings are mmap'ed), and
 * linkat_empty (in no class: linkat with AT_EMPTY_PATH only, which older kernels refuse a
 * caller without CAP_DAC_READ_SEARCH with ENOENT). Names may be given as classes: "io", "alloc". The real
 * calls are made with syscall() and glibc's __libc_* allocators, so this library never calls
 * dlsym and never allocates. Built with -DNCS_FAULT_NO_ALLOC (sanitizer builds) it leaves the
 * allocator alone. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

enum { F_WRITE, F_PWRITE, F_WRITEV, F_PWRITEV, F_OPEN, F_OPENAT, F_CREAT, F_MKDIR, F_MKDIRAT,
       F_FSYNC, F_FDATASYNC, F_FTRUNCATE, F_RENAME, F_FALLOCATE, F_MALLOC, F_CALLOC, F_REALLOC,
       F_MEMALIGN, F_MMAP, F_LINKAT_EMPTY, F_COUNT };
static const char *const fn_names[F_COUNT] = {
  "write", "pwrite", "writev", "pwritev", "open", "openat", "creat", "mkdir", "mkdirat",
  "fsync", "fdatasync", "ftruncate", "rename", "posix_fallocate", "malloc", "calloc", "realloc",
  "memalign", "mmap", "linkat_empty"};

/* 0 = not configured yet, 1 = configuring, 2 = ready */
static int state;
static unsigned char enabled[F_COUNT];
static uint64_t nth;        /* call number to fail, 0 none */
static int persist;
static int err_no = EIO;
static int scope_all;
static int short_mode;
static int short_pending; /* a short write was injected: the next eligible call fails */
static uint64_t local_counters[2];
static uint64_t *counters = local_counters; /* [0] eligible calls, [1] injections */
static uintptr_t shim_lo, shim_hi;          /* executable range of libncclscope.so */

extern char **environ;

static const char *env(const char *name) {
  /* getenv does not allocate; safe this early */
  return getenv(name);
}

static void enable_list(const char *s) {
  while (s && *s) {
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && !strncmp(s, "io", 2)) {
      for (int i = F_WRITE; i <= F_FALLOCATE; i++) enabled[i] = 1;
    } else if (n == 5 && !strncmp(s, "alloc", 5)) {
      for (int i = F_MALLOC; i <= F_MMAP; i++) enabled[i] = 1;
    } else {
      for (int i = 0; i < F_COUNT; i++)
        if (strlen(fn_names[i]) == n && !strncmp(s, fn_names[i], n)) enabled[i] = 1;
    }
    s = e ? e + 1 : NULL;
  }
}

static void map_stats(const char *path) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size < 16) syscall(SYS_ftruncate, fd, 16);
  void *p = (void *)syscall(SYS_mmap, NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  syscall(SYS_close, fd);
  if (p != MAP_FAILED) counters = p;
}

static void configure(void) {
  int expect = 0;
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) return;
  if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) { /* another thread configures */ }
    return;
  }
  enable_list(env("NCS_FAULT_FN"));
  const char *s = env("NCS_FAULT_N");
  nth = s ? strtoull(s, NULL, 10) : 0;
  s = env("NCS_FAULT_PERSIST");
  persist = s && *s == '1';
  s = env("NCS_FAULT_ERRNO");
  if (s) {
    if (!strcmp(s, "EIO")) err_no = EIO;
    else if (!strcmp(s, "ENOSPC")) err_no = ENOSPC;
    else if (!strcmp(s, "EFBIG")) err_no = EFBIG;
    else if (!strcmp(s, "EACCES")) err_no = EACCES;
    else err_no = atoi(s) > 0 ? atoi(s) : EIO;
  }
  s = env("NCS_FAULT_SHORT");
  short_mode = s && *s == '1';
  s = env("NCS_FAULT_SCOPE");
  scope_all = s && !strcmp(s, "all");
  s = env("NCS_FAULT_STATS");
  if (s && *s) map_stats(s);
  __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void fault_init(void) { configure(); }

static int find_shim(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size; (void)data;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "libncclscope")) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (hi > lo) {
    __atomic_store_n(&shim_lo, lo, __ATOMIC_RELAXED);
    __atomic_store_n(&shim_hi, hi, __ATOMIC_RELEASE);
    return 1;
  }
  return 0;
}

static int from_shim(const void *ret) {
  uintptr_t a = (uintptr_t)ret;
  if (!__atomic_load_n(&shim_hi, __ATOMIC_ACQUIRE)) dl_iterate_phdr(find_shim, NULL);
  return a >= shim_lo && a < __atomic_load_n(&shim_hi, __ATOMIC_ACQUIRE);
}

/* 1 when this call (function f, called from ret) must fail. */
static int inject(int f, const void *ret) {
  /* Before libc has its environment (a sanitizer runtime starting up: log_path's mkdir) nothing
   * can be configured yet, and the call is never the shim's: let it through, configure later. */
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2 && !environ) return 0;
  configure();
  if (!enabled[f]) return 0;
  if (!scope_all && !from_shim(ret)) return 0;
  uint64_t n = __atomic_add_fetch(&counters[0], 1, __ATOMIC_RELAXED);
  if (__atomic_exchange_n(&short_pending, 0, __ATOMIC_ACQ_REL)) {
    __atomic_add_fetch(&counters[1], 1, __ATOMIC_RELAXED);
    return 1;
  }
  if (!nth || n < nth || (n > nth && !persist)) return 0;
  __atomic_add_fetch(&counters[1], 1, __ATOMIC_RELAXED);
  return 1;
}

#define RET_ADDR __builtin_extract_return_addr(__builtin_return_address(0))
#define IO_FAIL(f) do { if (inject(f, RET_ADDR)) { errno = err_no; return -1; } } while (0)
#define ALLOC_FAIL(f) do { if (inject(f, RET_ADDR)) { errno = ENOMEM; return NULL; } } while (0)

/* In short mode, an injected write writes half of its bytes (at least 1) and arms a failure. */
#define SHORT_OR_FAIL(f, call_half) do { \
    int pending_ = __atomic_load_n(&short_pending, __ATOMIC_ACQUIRE); \
    if (inject(f, RET_ADDR)) { \
      if (short_mode && !pending_ && n > 1) { n /= 2; __atomic_store_n(&short_pending, 1, __ATOMIC_RELEASE); return call_half; } \
      errno = err_no; return -1; } } while (0)
/* posix_fallocate returns the error number; mmap fails with MAP_FAILED / ENOMEM. */
int posix_fallocate(int fd, off_t off, off_t len) {
  if (inject(F_FALLOCATE, RET_ADDR)) return err_no;
  if (syscall(SYS_fallocate, fd, 0, off, len) == 0) return 0;
  return errno;
}
int posix_fallocate64(int fd, off_t off, off_t len) {
  if (inject(F_FALLOCATE, RET_ADDR)) return err_no;
  if (syscall(SYS_fallocate, fd, 0, off, len) == 0) return 0;
  return errno;
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (inject(F_MMAP, RET_ADDR)) { errno = ENOMEM; return MAP_FAILED; }
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (inject(F_MMAP, RET_ADDR)) { errno = ENOMEM; return MAP_FAILED; }
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

ssize_t write(int fd, const void *b, size_t n) {
  SHORT_OR_FAIL(F_WRITE, syscall(SYS_write, fd, b, n));
  return syscall(SYS_write, fd, b, n);
}
ssize_t pwrite(int fd, const void *b, size_t n, off_t off) {
  SHORT_OR_FAIL(F_PWRITE, syscall(SYS_pwrite64, fd, b, n, off));
  return syscall(SYS_pwrite64, fd, b, n, off);
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t off) {
  SHORT_OR_FAIL(F_PWRITE, syscall(SYS_pwrite64, fd, b, n, off));
  return syscall(SYS_pwrite64, fd, b, n, off);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  IO_FAIL(F_WRITEV);
  return syscall(SYS_writev, fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  IO_FAIL(F_PWRITEV);
  return syscall(SYS_pwritev, fd, iov, cnt, (unsigned long)off, 0UL);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}
int open(const char *p, int flags, ...) {
  va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
  IO_FAIL(F_OPEN);
  return (int)syscall(SYS_openat, AT_FDCWD, p, flags, m);
}
int open64(const char *p, int flags, ...) {
  va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
  IO_FAIL(F_OPEN);
  return (int)syscall(SYS_openat, AT_FDCWD, p, flags, m);
}
int __open_2(const char *p, int flags) {
  IO_FAIL(F_OPEN);
  return (int)syscall(SYS_openat, AT_FDCWD, p, flags, 0);
}
int openat(int dfd, const char *p, int flags, ...) {
  va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
  IO_FAIL(F_OPENAT);
  return (int)syscall(SYS_openat, dfd, p, flags, m);
}
int openat64(int dfd, const char *p, int flags, ...) {
  va_list ap; va_start(ap, flags); mode_t m = mode_arg(flags, ap); va_end(ap);
  IO_FAIL(F_OPENAT);
  return (int)syscall(SYS_openat, dfd, p, flags, m);
}
int __openat_2(int dfd, const char *p, int flags) {
  IO_FAIL(F_OPENAT);
  return (int)syscall(SYS_openat, dfd, p, flags, 0);
}
int creat(const char *p, mode_t m) {
  IO_FAIL(F_CREAT);
  return (int)syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_TRUNC, m);
}
int mkdir(const char *p, mode_t m) {
  IO_FAIL(F_MKDIR);
  return (int)syscall(SYS_mkdirat, AT_FDCWD, p, m);
}
int mkdirat(int dfd, const char *p, mode_t m) {
  IO_FAIL(F_MKDIRAT);
  return (int)syscall(SYS_mkdirat, dfd, p, m);
}
int fsync(int fd) {
  IO_FAIL(F_FSYNC);
  return (int)syscall(SYS_fsync, fd);
}
int fdatasync(int fd) {
  IO_FAIL(F_FDATASYNC);
  return (int)syscall(SYS_fdatasync, fd);
}
int ftruncate(int fd, off_t len) {
  IO_FAIL(F_FTRUNCATE);
  return (int)syscall(SYS_ftruncate, fd, len);
}
int rename(const char *a, const char *b) {
  IO_FAIL(F_RENAME);
  return (int)syscall(SYS_renameat, AT_FDCWD, a, AT_FDCWD, b);
}
int linkat(int olddir, const char *old, int newdir, const char *new, int flags) {
  if (flags & AT_EMPTY_PATH) IO_FAIL(F_LINKAT_EMPTY);
  return (int)syscall(SYS_linkat, olddir, old, newdir, new, flags);
}

#ifndef NCS_FAULT_NO_ALLOC /* sanitizer builds: the sanitizer owns malloc */
void *malloc(size_t n) {
  ALLOC_FAIL(F_MALLOC);
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  ALLOC_FAIL(F_CALLOC);
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  ALLOC_FAIL(F_REALLOC);
  return __libc_realloc(p, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
  if (inject(F_MEMALIGN, RET_ADDR)) return ENOMEM;
  if (align % sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) {
  ALLOC_FAIL(F_MEMALIGN);
  return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n) {
  ALLOC_FAIL(F_MEMALIGN);
  return __libc_memalign(align, n);
}
#endif
