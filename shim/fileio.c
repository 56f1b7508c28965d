/* fileio.c — the file thread: the shim's descriptors live in a table of its own, where the job
 * cannot close, reuse or dup2 over them.
 *
 * A descriptor number is shared by every thread of a process: a job that closes every
 * descriptor, or dup2s one of its files onto a number, between the shim's check that the number
 * is still its file and the write that follows, would have the shim write into the job's file.
 * No check closes that window; a private table does. The writer thread cannot have one itself
 * (the collectors it runs call CUDA, CUPTI and NVML, which keep descriptors for the whole
 * process), so a small thread does the shim's file system calls for it.
 *
 * Contract:
 *   - ncs_fio_start() (writer thread, before its first file) starts the file thread with every
 *     signal blocked and a 64 KiB stack; it unshares its descriptor table (CLONE_FILES) and
 *     closes every descriptor of the copy (close_range), so it holds none of the job's files
 *     (a pipe's end the job closes is closed; POSIX locks are owned per table: the job's stay).
 *     Where unshare is refused (a seccomp profile), the file thread works on the shared table
 *     and the callers' identity checks (writer.c fd_is_ours, rings.c) remain the defence.
 *   - The thread runs nothing but libc's system-call wrappers (open, pwrite, ftruncate,
 *     fallocate, fstat, statx, fchmod, linkat, mmap, close) and the writer's sequences of them
 *     (ncs_fio_run, below), one request at a time, for any
 *     thread: a mutex-held mailbox and two futex words, no spinning (each side sleeps on its
 *     futex word: a visit is two wake-ups, ~25 us of CPU on the development VM, where a spin
 *     of 2000 pauses cost ~100 us on each side of every visit and half an idle process's CPU).
 *     The writer thread waits as long as a request takes; any other thread waits at most
 *     FIO_PATIENCE_MS for the mailbox (else ETIMEDOUT: a ring then lives in memory) with its
 *     signals blocked while it holds it.
 *   - A guarded write (ncs_fio_pwrite_if) checks the file's identity (statx) and writes in the
 *     same visit: a chunk is one visit, not two.
 *   - The writer may post a guarded write and not wait for it (ncs_fio_post_pwrite_if): it
 *     collects the answer later (ncs_fio_collect), so an idle heartbeat costs the writer no
 *     second wake-up. The mailbox is free for any other request once that write is served: a
 *     caller first waits for the request in service, then posts its own. The file thread wakes
 *     a caller only when one sleeps on the answer (`sleepers`): a posted write's answer is
 *     taken without a system call. Only the writer posts; one posted write at a time.
 *   - ncs_fio_run (writer thread) runs a sequence of the shim's calls in one visit: the
 *     ncs_fio_* calls made on the file thread are the plain calls there (link_fd: linkat of
 *     the descriptor itself, else through /proc/thread-self), and its ncs_debug lines are kept
 *     for the writer to print after the visit (the file thread's descriptor 2 may be one of
 *     the shim's files).
 *   - fork: the child has no file thread and none of its descriptors (the forking thread's
 *     table is the job's); ncs_fio_atfork_child() resets the mailbox and says whether the
 *     parent's numbers were private (never to be closed in the child). exec: the thread and its
 *     table end with the image; nothing of the shim's is inherited by the new one.
 *   - A vfork child (same memory, another pid) and calls before start: the plain system call. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "hooks.h"
#include "internal.h"

#define FIO_PATIENCE_MS 200 /* a job thread claiming its ring: then process memory */
#define FIO_START_MS 2000
#define FIO_STACK (64u << 10)

enum { OP_OPEN = 1, OP_CLOSE, OP_PWRITE, OP_PWRITE_IF, OP_FTRUNCATE, OP_FALLOCATE, OP_FSTAT, OP_STATX, OP_FCHMOD, OP_LINK, OP_MMAP, OP_RUN };
enum { ST_NONE, ST_STARTING, ST_PRIVATE, ST_SHARED, ST_DIRECT }; /* DIRECT: gave up waiting for it */

static struct {
  pthread_mutex_t mu;        /* one request at a time */
  _Atomic uint32_t req;      /* futex words: the request posted last, the one served last */
  _Atomic uint32_t done;
  _Atomic int state;
  _Atomic int pid;           /* the process the file thread belongs to */
  int op, fd, i1;
  long l1, l2;
  const void *p1;
  void *p2;
  int (*fn)(void *);         /* OP_RUN */
  long ret;
  int err;
  _Atomic int sleepers;      /* callers asleep on `done` (the file thread wakes them) */
  int posted;                /* the request in service was posted (ncs_fio_post_pwrite_if): its answer goes to post_* */
  int post_out;              /* writer thread: a posted write not collected yet */
  uint32_t post_req;         /* its request number */
  long post_ret;
  int post_err;
  struct ncs_fio_ident post_want; /* the posted write's identity check (the poster's copy may be gone) */
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};
static __thread int on_file_thread; /* this thread is the file thread: ncs_fio_* are plain calls */
static struct ncs_debug_sink fio_debug; /* the file thread's ncs_debug lines (OP_RUN's fn) */
static int child_was_private; /* fork child: the parent's descriptors were private */
static __thread int patient;  /* the writer thread: waits as long as a request takes */

static void fwait(_Atomic uint32_t *w, uint32_t v, long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, ms ? &ts : NULL, NULL, 0);
}
static void fwake(_Atomic uint32_t *w) { syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0); }
/* Sleeps until request `my` is served. `sleepers` counted before `done` is looked at again, and
 * the file thread looks at `sleepers` after storing `done` (both seq_cst): one of the two sees
 * the other, so no wake-up is lost and none is made for nobody. */
static void wait_done(uint32_t my) {
  uint32_t d;
  while ((int32_t)((d = atomic_load_explicit(&F.done, memory_order_acquire)) - my) < 0) {
    atomic_fetch_add_explicit(&F.sleepers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&F.done, memory_order_seq_cst) == d) fwait(&F.done, d, 0);
    atomic_fetch_sub_explicit(&F.sleepers, 1, memory_order_relaxed);
  }
}
#define IDENT_MASK (STATX_INO | STATX_SIZE | STATX_TYPE | STATX_BTIME | STATX_NLINK)
/* *id from a statx of IDENT_MASK: 0, or -1 when the file is not a regular file. */
static int ident_of(const struct statx *sx, struct ncs_fio_ident *id) {
  if (!(sx->stx_mask & STATX_INO) || !(sx->stx_mask & STATX_TYPE) || !S_ISREG(sx->stx_mode)) return -1;
  id->dev = ((uint64_t)sx->stx_dev_major << 32) | sx->stx_dev_minor;
  id->ino = sx->stx_ino;
  id->size = sx->stx_size;
  id->has_btime = (sx->stx_mask & STATX_BTIME) != 0;
  id->btime_s = id->has_btime ? sx->stx_btime.tv_sec : 0;
  id->btime_ns = id->has_btime ? sx->stx_btime.tv_nsec : 0;
  id->nlink = sx->stx_mask & STATX_NLINK ? sx->stx_nlink : 1;
  return 0;
}
/* 1 when fd's file is still `want`: same file, size, and not deleted. */
static int still(int fd, const struct ncs_fio_ident *want) {
  struct statx sx;
  struct ncs_fio_ident id;
  return statx(fd, "", AT_EMPTY_PATH, IDENT_MASK, &sx) == 0 && ident_of(&sx, &id) == 0 &&
         ncs_fio_same_file(&id, want) && id.size == want->size && id.nlink > 0;
}
int ncs_fio_same_file(const struct ncs_fio_ident *a, const struct ncs_fio_ident *b) {
  return a->dev == b->dev && a->ino == b->ino &&
         (!b->has_btime || (a->has_btime && a->btime_s == b->btime_s && a->btime_ns == b->btime_ns));
}

/* Names the unnamed file behind fd. First linkat(fd, "", AT_EMPTY_PATH), which recent kernels
 * allow a caller without CAP_DAC_READ_SEARCH on a file it opened itself (checked on 6.18, as
 * root and as nobody); an older kernel answers ENOENT, and then the name goes through /proc:
 * this thread's own table on the file thread (/proc/self would name the job's). Not /proc
 * first: a lookup of /proc/thread-self/fd/N leaves dentries under /proc/PID/task/TID/fd that
 * the parent reaping the process pays for (shrink_dcache_parent: 5-10 ms of its CPU per
 * process, measured on the development VM's 6.18 kernel). */
static int link_fd(int fd, const char *path) {
  if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOENT) return -1;
  char proc[64];
  snprintf(proc, sizeof proc, on_file_thread ? "/proc/thread-self/fd/%d" : "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

static void serve(void) {
  long r = -1;
  switch (F.op) {
  case OP_OPEN: r = open((const char *)F.p1, F.i1, (mode_t)F.l1); break;
  case OP_CLOSE: r = close(F.fd); break;
  case OP_PWRITE: r = pwrite(F.fd, F.p1, (size_t)F.l1, (off_t)F.l2); break;
  case OP_PWRITE_IF:
    if (still(F.fd, (const struct ncs_fio_ident *)F.p2)) r = pwrite(F.fd, F.p1, (size_t)F.l1, (off_t)F.l2);
    else errno = ESTALE;
    break;
  case OP_FTRUNCATE: r = ftruncate(F.fd, (off_t)F.l1); break;
  case OP_FALLOCATE: r = fallocate(F.fd, F.i1, (off_t)F.l1, (off_t)F.l2); break;
  case OP_FSTAT: r = fstat(F.fd, (struct stat *)F.p2); break;
  case OP_STATX: r = statx(F.fd, "", AT_EMPTY_PATH, (unsigned)F.i1, (struct statx *)F.p2); break;
  case OP_FCHMOD: r = fchmod(F.fd, (mode_t)F.l1); break;
  case OP_LINK: r = link_fd(F.fd, (const char *)F.p1); break;
  case OP_MMAP: {
    void *m = mmap(NULL, (size_t)F.l1, F.i1 >> 16, F.i1 & 0xffff, F.fd, (off_t)F.l2);
    F.p2 = m;
    r = m == MAP_FAILED ? -1 : 0;
    break;
  }
  case OP_RUN: r = F.fn(F.p2); break;
  default: errno = EINVAL;
  }
  F.err = r == -1 ? errno : 0;
  F.ret = r;
}

static void *fio_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "ncclscope-fio");
  on_file_thread = 1;
  ncs_debug_divert(&fio_debug);
  int st = ST_SHARED;
  if (syscall(SYS_unshare, CLONE_FILES) == 0) {
    st = ST_PRIVATE;
    /* the copy holds every file of the job's: none stays open here */
    if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0) {
      struct rlimit rl;
      long n = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 1L << 20;
      for (long i = 0; i < n; i++) close((int)i);
    }
  }
  uint32_t seen = atomic_load(&F.req); /* before the state says so, no request is posted */
  int expect = ST_STARTING;
  if (!atomic_compare_exchange_strong(&F.state, &expect, st)) return NULL; /* the starter gave up */
  fwake((_Atomic uint32_t *)&F.state);
  for (;;) {
    uint32_t r = atomic_load_explicit(&F.req, memory_order_acquire);
    if (r == seen) { fwait(&F.req, seen, 0); continue; }
    serve();
    if (F.posted) { /* nobody waits for it: its answer kept for ncs_fio_collect */
      F.post_ret = F.ret;
      F.post_err = F.err;
      F.posted = 0;
    }
    seen = r;
    atomic_store_explicit(&F.done, r, memory_order_seq_cst);
    if (atomic_load_explicit(&F.sleepers, memory_order_seq_cst)) fwake(&F.done); /* no sleeper: no system call */
  }
  return NULL;
}

int ncs_fio_start(void) {
  patient = 1;
  int pid = (int)syscall(SYS_getpid);
  int st = atomic_load(&F.state);
  if (atomic_load(&F.pid) == pid && (st == ST_PRIVATE || st == ST_SHARED)) return 0;
  if (st == ST_STARTING || st == ST_DIRECT) return -1; /* tried once in this process */
  atomic_store(&F.state, ST_STARTING);
  atomic_store(&F.pid, pid);
  pthread_attr_t a;
  pthread_t th;
  sigset_t all, old;
  if (pthread_attr_init(&a) != 0) goto direct;
  pthread_attr_setstacksize(&a, FIO_STACK);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&th, &a, fio_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0) goto direct;
  for (int waited = 0; waited < FIO_START_MS; waited += 10) {
    st = atomic_load(&F.state);
    if (st != ST_STARTING) break;
    fwait((_Atomic uint32_t *)&F.state, ST_STARTING, 10);
  }
direct:;
  int expect = ST_STARTING;
  if (atomic_compare_exchange_strong(&F.state, &expect, ST_DIRECT)) {
    ncs_debug("the file thread did not start: the shim's descriptors share the job's table");
    return -1;
  }
  st = atomic_load(&F.state);
  ncs_debug(st == ST_PRIVATE ? "descriptors: the file thread's own table"
                             : "descriptors: unshare refused, the job's table (checked before each use)");
  return 0;
}

/* 1 when this process's file thread runs and may be asked. The writer thread (`patient`) lives
 * only in the process that started it (a fork child has no writer; its forking thread is not
 * patient): no getpid for it, two system calls fewer per chunk. */
static int served_here(int st) {
  return (st == ST_PRIVATE || st == ST_SHARED) && (patient || atomic_load(&F.pid) == (int)syscall(SYS_getpid));
}

int ncs_fio_private(void) {
  int st = atomic_load(&F.state);
  return st == ST_PRIVATE && served_here(st);
}

int ncs_fio_atfork_child(void) {
  int st = atomic_load(&F.state);
  if (st != ST_NONE) {
    child_was_private = st == ST_PRIVATE;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    F.mu = fresh;
    atomic_store(&F.req, 0);
    atomic_store(&F.done, 0);
    atomic_store(&F.sleepers, 0);
    F.posted = 0;
    F.post_out = 0; /* the parent's writer collects its own */
    atomic_store(&F.pid, 0);
    atomic_store(&F.state, ST_NONE);
  }
  patient = 0;
  return child_was_private;
}

#define NOT_SERVED (-2L) /* no file thread for this process: the caller makes the call itself */

/* Runs one request on the file thread: its answer (libc's convention, errno set), NOT_SERVED,
 * or -1 with ETIMEDOUT when an impatient caller found the file thread busy for too long. */
static long call(int op, int fd, int i1, long l1, long l2, const void *p1, void **p2) {
  if (on_file_thread) return NOT_SERVED; /* inside an OP_RUN: the plain call, here */
  if (!served_here(atomic_load(&F.state))) return NOT_SERVED;
  sigset_t all, old;
  if (!patient) { /* a job's thread: no handler of the job's runs while it holds the mailbox */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += FIO_PATIENCE_MS * 1000000L;
    if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
    if (pthread_mutex_timedlock(&F.mu, &dl) != 0) {
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      errno = ETIMEDOUT;
      return -1;
    }
  } else {
    pthread_mutex_lock(&F.mu);
  }
  wait_done(atomic_load(&F.req)); /* a posted write in service: the mailbox is still its */
  F.op = op; F.fd = fd; F.i1 = i1; F.l1 = l1; F.l2 = l2; F.p1 = p1; F.p2 = p2 ? *p2 : NULL;
  uint32_t my = atomic_load(&F.req) + 1;
  atomic_store_explicit(&F.req, my, memory_order_release);
  fwake(&F.req);
  wait_done(my);
  long r = F.ret;
  int e = F.err;
  if (p2) *p2 = F.p2;
  pthread_mutex_unlock(&F.mu);
  if (!patient) pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return r;
}

int ncs_fio_open(const char *path, int flags, mode_t mode) {
  long r = call(OP_OPEN, -1, flags, (long)mode, 0, path, NULL);
  if (r == NOT_SERVED) r = open(path, flags, mode);
  return ncs_fio_private() || r < 0 ? (int)r : ncs_fd_move_high((int)r);
}
int ncs_fio_close(int fd) {
  long r = call(OP_CLOSE, fd, 0, 0, 0, NULL, NULL);
  return r == NOT_SERVED ? close(fd) : (int)r;
}
ssize_t ncs_fio_pwrite(int fd, const void *buf, size_t n, off_t off) {
  long r = call(OP_PWRITE, fd, 0, (long)n, (long)off, buf, NULL);
  return r == NOT_SERVED ? pwrite(fd, buf, n, off) : (ssize_t)r;
}
ssize_t ncs_fio_pwrite_if(int fd, const void *buf, size_t n, off_t off, const struct ncs_fio_ident *want) {
  void *p = (void *)want;
  long r = call(OP_PWRITE_IF, fd, 0, (long)n, (long)off, buf, &p);
  if (r != NOT_SERVED) return (ssize_t)r;
  if (!still(fd, want)) {
    errno = ESTALE;
    return -1;
  }
  return pwrite(fd, buf, n, off);
}
int ncs_fio_post_pwrite_if(int fd, const void *buf, size_t n, off_t off, const struct ncs_fio_ident *want) {
  if (on_file_thread || !patient || F.post_out || !served_here(atomic_load(&F.state))) return -1;
  pthread_mutex_lock(&F.mu);
  wait_done(atomic_load(&F.req));
  F.post_want = *want;
  F.op = OP_PWRITE_IF; F.fd = fd; F.l1 = (long)n; F.l2 = (long)off; F.p1 = buf; F.p2 = &F.post_want;
  F.posted = 1;
  uint32_t my = atomic_load(&F.req) + 1;
  F.post_req = my;
  F.post_out = 1;
  atomic_store_explicit(&F.req, my, memory_order_release);
  fwake(&F.req);
  pthread_mutex_unlock(&F.mu);
  return 0;
}
ssize_t ncs_fio_collect(void) {
  if (!F.post_out) {
    errno = EINVAL;
    return -1;
  }
  wait_done(F.post_req); /* served long ago, as a rule: no system call */
  F.post_out = 0;
  errno = F.post_err;
  return (ssize_t)F.post_ret;
}
int ncs_fio_ftruncate(int fd, off_t len) {
  long r = call(OP_FTRUNCATE, fd, 0, (long)len, 0, NULL, NULL);
  return r == NOT_SERVED ? ftruncate(fd, len) : (int)r;
}
int ncs_fio_fallocate(int fd, int mode, off_t off, off_t len) {
  long r = call(OP_FALLOCATE, fd, mode, (long)off, (long)len, NULL, NULL);
  return r == NOT_SERVED ? fallocate(fd, mode, off, len) : (int)r;
}
int ncs_fio_fstat(int fd, struct stat *st) {
  void *p = st;
  long r = call(OP_FSTAT, fd, 0, 0, 0, NULL, &p);
  return r == NOT_SERVED ? fstat(fd, st) : (int)r;
}
int ncs_fio_identify(int fd, struct ncs_fio_ident *id) {
  struct statx sx;
  void *p = &sx;
  long r = call(OP_STATX, fd, (int)IDENT_MASK, 0, 0, NULL, &p);
  if (r == NOT_SERVED) r = statx(fd, "", AT_EMPTY_PATH, IDENT_MASK, &sx);
  return r == 0 ? ident_of(&sx, id) : -1;
}
int ncs_fio_fchmod(int fd, mode_t mode) {
  long r = call(OP_FCHMOD, fd, 0, (long)mode, 0, NULL, NULL);
  return r == NOT_SERVED ? fchmod(fd, mode) : (int)r;
}
int ncs_fio_link(int fd, const char *path) {
  long r = call(OP_LINK, fd, 0, 0, 0, path, NULL);
  return r == NOT_SERVED ? link_fd(fd, path) : (int)r;
}
void *ncs_fio_mmap(size_t len, int prot, int flags, int fd, off_t off) {
  void *p = NULL;
  long r = call(OP_MMAP, fd, (prot << 16) | (flags & 0xffff), (long)len, (long)off, NULL, &p);
  if (r == NOT_SERVED) return mmap(NULL, len, prot, flags, fd, off);
  return r == 0 ? p : MAP_FAILED;
}
int ncs_fio_run(int (*fn)(void *), void *arg) {
  F.fn = fn; /* written by the writer thread only; read by the file thread after call()'s release of the request */
  void *p = arg;
  long r = call(OP_RUN, -1, 0, 0, 0, NULL, &p);
  if (r == NOT_SERVED) return fn(arg);
  if (fio_debug.len) { /* written here, on the job's descriptor 2 as every ncs_debug line */
    int e = errno;
    ssize_t w = write(2, fio_debug.buf, fio_debug.len);
    (void)w;
    fio_debug.len = 0;
    errno = e;
  }
  return (int)r;
}
