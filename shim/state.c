/* state.c — the shim's process-wide state: configuration, activation, thread rings, the
 * communicator table, the PROCESS record, fork and exit.
 *
 * Contract:
 *   - The constructor only resolves NCCL's entry points, notes the working directory (a
 *     relative NCCLSCOPE_DIR is resolved against it) and registers fork handlers: no I/O,
 *     no thread, no file. A process that never makes a recorded NCCL call stays that way.
 *   - ncs_activate() runs once per process (again in a forked child that uses NCCL): reads
 *     NCCLSCOPE_* settings, starts log capture and GPU timing, and the writer thread, which
 *     creates the file. Called by the first wrapped call, or by NCCL's profiler plugin init
 *     (ncs_activate_by_profiler, profiler.c) when no wrapped call came first (NCCL linked
 *     statically): PROCESS then has calls_from=profiler.
 *   - A thread's first recorded call takes a ring slot (malloc of its ring happens only then,
 *     or is reused from an exited thread); later calls allocate nothing and take no lock.
 *   - Communicator lookups are lock-free; inserts happen at init calls under a mutex.
 *   - fork: the parent carries on; the child forgets the parent's buffered records, rings,
 *     threads and communicators, and activates again (new file, new pid) only if it calls
 *     NCCL. Locks are taken before fork and released on both sides.
 *   - exit: a destructor asks the writer for a final flush and waits a bounded time. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "internal.h"

static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
/* 1 when the process was activated by NCCL's profiler plugin init (profiler.c) before any wrapped
 * call: its NCCL is one the wrappers do not reach (linked statically); PROCESS says so. */
static int by_profiler;
static int act_failed;              /* activation failed in this process: forward only */
static _Atomic uint32_t next_thread; /* trace thread indexes, from 1 */
static pthread_key_t thread_key;
static int thread_key_ok;

static unsigned env_uint(const char *name, unsigned def, unsigned lo, unsigned hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*end) return def;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return (unsigned)v;
}

/* The working directory when the process started (constructor): a relative NCCLSCOPE_DIR is
 * resolved against it, not against wherever the job chdir'ed before its first NCCL call. */
static char start_cwd[4096];

/* NCCLSCOPE_KEEP: a time ("30m": s, m, h, d), a size ("2G": K, M, G, T, powers of 1024) or
 * both, comma-separated. Anything else leaves both bounds off (an unbounded trace). Floors:
 * 1 s, and 256 KiB: the file's fixed overhead (the reserve for its final chunk, partial
 * blocks: about 40 KiB) must leave room for segments of a quarter of the bound. */
static void read_keep(void) {
  ncs_cfg.keep_ns = ncs_cfg.keep_bytes = 0;
  const char *k = getenv("NCCLSCOPE_KEEP");
  if (!k || !*k) return;
  uint64_t ns = 0, bytes = 0;
  const char *p = k;
  while (*p) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno || v == 0 || v > (1ull << 40)) goto bad;
    switch (*end) {
    case 's': ns = v * 1000000000ull; break;
    case 'm': ns = v * 60000000000ull; break;
    case 'h': ns = v * 3600000000000ull; break;
    case 'd': ns = v * 86400000000000ull; break;
    case 'K': bytes = v << 10; break;
    case 'M': bytes = v << 20; break;
    case 'G': bytes = v << 30; break;
    case 'T': if (v > (1u << 20)) goto bad; bytes = v << 40; break;
    default: goto bad;
    }
    p = end + 1;
    if (*p == ',') p++;
    else if (*p) goto bad;
  }
  ncs_cfg.keep_ns = ns && ns < 1000000000ull ? 1000000000ull : ns;
  ncs_cfg.keep_bytes = bytes && bytes < (256u << 10) ? (256u << 10) : bytes;
  return;
bad:
  ncs_debug("NCCLSCOPE_KEEP=%s not understood (e.g. 30m, 2G, 30m,2G): the trace is not bounded", k);
}

static void read_config(void) {
  const char *d = getenv("NCCLSCOPE_DIR");
  d = d && *d ? d : "ncclscope-trace";
  int n = -1;
  if (d[0] != '/' && start_cwd[0] == '/')
    n = snprintf(ncs_cfg.dir, sizeof ncs_cfg.dir, "%s/%s", start_cwd[1] ? start_cwd : "", d);
  if (n < 0 || (size_t)n >= sizeof ncs_cfg.dir) /* absolute, or too long: as given */
    n = snprintf(ncs_cfg.dir, sizeof ncs_cfg.dir, "%s", d);
  /* a directory that does not fit is never cut short: the cut path names another directory
   * (an ancestor, or one the shim would create); the process records nothing (ncs_activate) */
  if (n < 0 || (size_t)n >= sizeof ncs_cfg.dir) ncs_cfg.dir[0] = 0;
  const char *dbg = getenv("NCCLSCOPE_DEBUG");
  ncs_cfg.debug = dbg && *dbg == '1';
  ncs_cfg.flush_ms = env_uint("NCCLSCOPE_FLUSH_MS", 500, 10, 1000);
  ncs_cfg.callsite_depth = env_uint("NCCLSCOPE_CALLSITE_DEPTH", 8, 0, 32);
  /* the largest power of two of records that fits the buffer (default 16 MiB: 174762 records
   * fit, 131072 are used = 12 MiB per thread: 12 ms of a thread calling every 90 ns, the
   * shim's own cost, which covers the writer's scheduling delays on a loaded machine) */
  unsigned kb = env_uint("NCCLSCOPE_BUFFER_KB", 16384, 64, 262144);
  unsigned recs = (unsigned)(((size_t)kb << 10) / sizeof(struct ncs_call));
  unsigned p2 = 1;
  while (p2 * 2 <= recs) p2 *= 2;
  ncs_cfg.ring_records = p2;
  ncs_cfg.gpu_timing = env_uint("NCCLSCOPE_GPU_TIMING", 1, 0, 1);
  ncs_cfg.kernels = env_uint("NCCLSCOPE_KERNELS", ncs_cfg.gpu_timing, 0, 1); /* GPU_TIMING=0: nothing from the GPU */
  ncs_cfg.exit_ms = env_uint("NCCLSCOPE_EXIT_MS", 3000, 10, 60000);
  const char *log = getenv("NCCLSCOPE_NCCL_LOG"), *prof = getenv("NCCLSCOPE_PROFILER");
  ncs_cfg.nccl_log = !(log && !strcmp(log, "0"));
  ncs_cfg.profiler = !(prof && !strcmp(prof, "0"));
  /* NCCLSCOPE_METRICS: relative to the start directory, as NCCLSCOPE_DIR; too long: off */
  const char *m = getenv("NCCLSCOPE_METRICS");
  ncs_cfg.metrics_dir[0] = 0;
  if (m && *m) {
    int k = m[0] != '/' && start_cwd[0] == '/'
                ? snprintf(ncs_cfg.metrics_dir, sizeof ncs_cfg.metrics_dir, "%s/%s", start_cwd[1] ? start_cwd : "", m)
                : snprintf(ncs_cfg.metrics_dir, sizeof ncs_cfg.metrics_dir, "%s", m);
    if (k < 0 || (size_t)k >= sizeof ncs_cfg.metrics_dir) ncs_cfg.metrics_dir[0] = 0;
  }
  ncs_cfg.metrics_ms = env_uint("NCCLSCOPE_METRICS_MS", 5000, 100, 600000);
  read_keep();
}

/* ---- the PROCESS record ---- */

/* The launcher's rank and job variables, declared once (ncclscope/records.h). */
#define NCS_ENV_NAME_(name) #name,
static const char *const rank_vars[] = {NCS_PROCESS_ENV(NCS_ENV_NAME_) NULL};
#undef NCS_ENV_NAME_

static int env_allowed(const char *entry, size_t namelen) {
  if (namelen > 5 && strncmp(entry, "NCCL_", 5) == 0) return 1;
  if (namelen > 10 && strncmp(entry, "NCCLSCOPE_", 10) == 0) return 1;
  for (int i = 0; rank_vars[i]; i++)
    if (strlen(rank_vars[i]) == namelen && strncmp(entry, rank_vars[i], namelen) == 0) return 1;
  return 0;
}

/* Snapshot taken at activation; the PROCESS record is encoded from it and handed to the
 * writer (which writes it first in the file). */
static struct {
  char cmdline[4096];
  size_t cmdline_len;
  int nccl_version;     /* -1: unknown */
  uint64_t rt, mono;
  char **env;           /* allowed "NAME=value" strings, malloc'ed, NULL-terminated */
} proc;

static void snapshot_process(void) {
  if (gethostname(ncs_host, sizeof ncs_host - 1) != 0) snprintf(ncs_host, sizeof ncs_host, "unknown");
  proc.cmdline_len = 0;
  FILE *f = fopen("/proc/self/cmdline", "re");
  if (f) {
    proc.cmdline_len = fread(proc.cmdline, 1, sizeof proc.cmdline, f);
    fclose(f);
    while (proc.cmdline_len > 0 && proc.cmdline[proc.cmdline_len - 1] == '\0') proc.cmdline_len--;
  }
  struct timespec r, m;
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &m);
  proc.rt = (uint64_t)r.tv_sec * 1000000000ull + (uint64_t)r.tv_nsec;
  proc.mono = (uint64_t)m.tv_sec * 1000000000ull + (uint64_t)m.tv_nsec;
  extern char **environ;
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n++;
  free(proc.env);
  proc.env = calloc(n + 1, sizeof *proc.env);
  if (!proc.env) return;
  size_t k = 0;
  for (char **e = environ; e && *e && k < n; e++) {
    const char *eq = strchr(*e, '=');
    if (eq && env_allowed(*e, (size_t)(eq - *e))) proc.env[k++] = *e;
  }
}

static void process_record(struct ncs_wbuf *w) {
  enum { MAXKV = 256 };
  struct ncs_kv kv[MAXKV];
  char num[16][32], keys[MAXKV][128];
  size_t n = 0, nn = 0;
#define KV(k, v) do { kv[n].key = (k); kv[n].value = (v); kv[n].value_len = strlen(kv[n].value); n++; } while (0)
#define KVNUM(k, fmt, x) do { snprintf(num[nn], sizeof num[nn], fmt, x); KV(k, num[nn]); nn++; } while (0)
  KV("host", ncs_host);
  KVNUM("pid", "%d", (int)getpid());
  KVNUM("ppid", "%d", (int)getppid());
  kv[n].key = "cmdline"; kv[n].value = proc.cmdline; kv[n].value_len = proc.cmdline_len; n++;
  KV("shim_version", NCS_SHIM_VERSION);
  KV("format_version", NCS_FORMAT_STRING);
  if (proc.nccl_version >= 0) KVNUM("nccl_version", "%d", proc.nccl_version);
  KVNUM("clock_realtime_ns", "%llu", (unsigned long long)proc.rt);
  KVNUM("clock_monotonic_ns", "%llu", (unsigned long long)proc.mono);
  KVNUM("callsite_depth", "%u", ncs_cfg.callsite_depth);
  KVNUM("buffer_bytes", "%zu", (size_t)ncs_cfg.ring_records * sizeof(struct ncs_call));
  KV("timing", ncs_gpu_on ? "gpu" : "host");
  if (by_profiler) KV("calls_from", "profiler"); /* no wrapper saw a call: NCCL's events are the calls */
  KVNUM("gpu_resolution_ns", "%u", NCS_GPU_RESOLUTION_NS);
  KVNUM("kernel_resolution_ns", "%u", NCS_KERNEL_RESOLUTION_NS);
  if (ncs_cfg.keep_ns) KVNUM("keep_ns", "%llu", (unsigned long long)ncs_cfg.keep_ns);
  if (ncs_cfg.keep_bytes) KVNUM("keep_bytes", "%llu", (unsigned long long)ncs_cfg.keep_bytes);
#undef KVNUM
#undef KV
  for (size_t i = 0; proc.env && proc.env[i] && n < MAXKV; i++) {
    const char *e = proc.env[i], *eq = strchr(e, '=');
    snprintf(keys[n], sizeof keys[n], "env.%.*s", (int)(eq - e), e);
    kv[n].key = keys[n];
    kv[n].value = eq + 1;
    kv[n].value_len = strlen(eq + 1);
    n++;
  }
  ncs_enc_process(w, kv, n);
}

/* ---- activation ---- */

/* exit(): the atexit handler runs before any library's destructor, while CUDA is still up:
 * collect pending GPU times and write them. The destructor (last) writes the final chunk,
 * which also holds calls made by other libraries' destructors (e.g. communicator teardown). */
static int atexit_done, exit_stuck; /* exit_stuck: the writer missed the atexit deadline */
static void exit_sync(void) {
  int saved = errno, cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel); /* never left holding the writer's lock */
  if (atomic_load(&ncs_active) == 1) {
    ncs_kernels_exit(); /* CUDA is still up: the sync's poll is CUPTI's last (forced) flush */
    exit_stuck = ncs_writer_sync(ncs_cfg.exit_ms, 500, 1) != 0;
  }
  pthread_setcancelstate(cancel, NULL);
  errno = saved;
}
static void exit_flush(void) {
  int saved = errno, cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  if (atomic_load(&ncs_active) == 1) {
    /* a writer already stuck (a disk that does not answer) gets 100 ms more, not the whole wait */
    ncs_writer_stop(exit_stuck ? 100 : ncs_cfg.exit_ms);
    uint64_t cuda_calls, timed;
    ncs_gpu_counts(&cuda_calls, &timed);
    if (timed) ncs_debug("GPU timing: %llu CUDA calls on application threads for %llu NCCL calls (%.2f per call)",
                         (unsigned long long)cuda_calls, (unsigned long long)timed, (double)cuda_calls / (double)timed);
    if (ncs_gate_timeouts())
      ncs_debug("%lu fork(s) proceeded after 2 s with shim code still inside the loader, CUDA or NVML",
                ncs_gate_timeouts());
  }
  pthread_setcancelstate(cancel, NULL);
  errno = saved;
}

static void thread_exit(void *arg) {
  struct ncs_ring *r = arg;
  if (r) atomic_store_explicit(&r->state, NCS_SLOT_DEAD, memory_order_release);
}

static int activate(int from_profiler);
int ncs_activate(void) { return activate(0); }
static int activate_by_profiler(void) { return activate(1); }

static int activate(int from_profiler) {
  int rc = 0;
  int saved = errno, cancel;
  /* a thread cancelled here (a job giving up on a slow init) would leave act_mu locked and the
   * writer half started: every later NCCL call and fork of the process would hang. The request
   * stays pending and acts at the job's next cancellation point, after activation. */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  uint32_t busy = ncs_tls.busy;
  ncs_tls.busy = 1; /* an NCCL call made by what activation runs is forwarded, not recorded */
  pthread_mutex_lock(&act_mu);
  int was = atomic_load_explicit(&ncs_active, memory_order_acquire);
  if (was) { rc = was == 1 ? 0 : -1; goto out; }
  if (act_failed) { rc = -1; goto out; }
  const char *off = getenv("NCCLSCOPE_DISABLE");
  if (off && off[0] == '1' && off[1] == 0) { /* the off switch: forward only, no file */
    atomic_store_explicit(&ncs_active, 2, memory_order_release);
    rc = -1;
    goto out;
  }
  read_config();
  by_profiler = from_profiler;
  if (!ncs_cfg.dir[0]) { /* NCCLSCOPE_DIR too long: forward only, no file anywhere */
    ncs_debug("NCCLSCOPE_DIR is longer than %zu bytes: nothing is recorded", sizeof ncs_cfg.dir - 1);
    act_failed = 1;
    atomic_store_explicit(&ncs_active, 2, memory_order_release);
    rc = -1;
    goto out;
  }
  if (!thread_key_ok) thread_key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
  snapshot_process();
  if (ncs_env_arm((void *)NCS_REAL(GetVersion)) != 0) ncs_debug("NCCL's code not found: NCCL sees the user's environment only");
  /* log capture and the profiler: before NCCL's first call */
  ncs_collectors_walk(&ncs_collectors, offsetof(struct ncs_collector, start));
  proc.nccl_version = -1;
  ncs_fn_GetVersion_t gv = NCS_REAL(GetVersion);
  int v = 0;
  if (gv && gv(&v) == ncclSuccess) proc.nccl_version = v;
  /* 64 KiB holds a usual PROCESS record and comes from the heap; only a larger one (a long
   * command line and environment) takes 1 MiB: a mapping of its own, whose unmapping (its pages
   * touched) costs the process a TLB flush on every CPU it ran on */
  for (size_t cap = 64u << 10; cap <= (1u << 20); cap *= 16) {
    uint8_t *rec = malloc(cap);
    if (!rec) break;
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, rec, cap);
    process_record(&w);
    int done = !w.overflow;
    if (done) ncs_writer_set_process(w.buf, w.len);
    free(rec);
    if (done) break;
  }
  ncs_writer_set_collectors(&ncs_collectors);
  if (ncs_writer_start() != 0) {
    act_failed = 1;
    atomic_store_explicit(&ncs_active, 2, memory_order_release); /* forward only from now */
    rc = -1;
    goto out;
  }
  if (ncs_writer_wait_file(1000) != 0) ncs_debug("the trace file was not created within 1 s: the job goes on");
  if (!atexit_done) atexit_done = atexit(exit_sync) == 0;
  atomic_store_explicit(&ncs_active, 1, memory_order_release);
out:
  pthread_mutex_unlock(&act_mu);
  ncs_tls.busy = busy;
  pthread_setcancelstate(cancel, NULL);
  errno = saved;
  return rc;
}

/* ---- thread rings ---- */

struct ncs_ring *ncs_thread_ring(void) {
  struct ncs_tls *t = &ncs_tls;
  uint32_t gen = atomic_load_explicit(&ncs_gen, memory_order_acquire);
  if (t->gen != gen) {  /* new thread, or first call in a forked child */
    uint32_t keep_busy = t->busy;
    memset(t, 0, sizeof *t);
    t->busy = keep_busy;
    t->gen = gen;
  }
  if (t->ring) return t->ring;
  if (t->slot_drops) return NULL; /* already failed: do not search on every call */
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (r) {
      int expect = NCS_SLOT_FREE;
      if (r->mask + 1 != ncs_cfg.ring_records) continue;
      if (!atomic_compare_exchange_strong(&r->state, &expect, NCS_SLOT_LIVE)) continue;
    } else {
      r = ncs_rings_new_ring();
      if (!r) break;
      atomic_store(&r->state, NCS_SLOT_LIVE);
      struct ncs_ring *expect = NULL;
      /* a slot taken meanwhile: this ring (in the file or not) becomes the next slot's */
      while (i < NCS_MAX_THREADS && !atomic_compare_exchange_strong(&ncs_rings[i], &expect, r)) { expect = NULL; i++; }
      if (i == NCS_MAX_THREADS) break;
      /* the writer populates the new ring's pages ahead of its owner (rings.c) */
      atomic_thread_fence(memory_order_seq_cst);
      if (atomic_load_explicit(&ncs_writer_sleeping, memory_order_relaxed)) ncs_writer_wake();
    }
    atomic_store_explicit(&r->cur.tcall, 0, memory_order_relaxed); /* nothing in flight yet */
    atomic_store_explicit(&r->cur.key, 0, memory_order_relaxed);   /* set only during an init or a split */
    /* fresh identity; the writer reads these only after it sees records past `head` or a
     * call in flight (`cur.tcall`, published with release) */
    r->thread = atomic_fetch_add(&next_thread, 1) + 1;
    r->tid = (int32_t)syscall(SYS_gettid);
    r->name[0] = 0;
    pthread_getname_np(pthread_self(), r->name, sizeof r->name);
    /* `announced` is the writer's: it clears it when it frees the slot (no race with it here) */
    t->ring = r;
    t->thread = r->thread;
    if (thread_key_ok) pthread_setspecific(thread_key, r);
    return r;
  }
  t->slot_drops = 1;
  t->thread = atomic_fetch_add(&next_thread, 1) + 1;
  return NULL;
}

/* ---- fork and exit ---- */

static void atfork_prepare(void) {
  pthread_mutex_lock(&act_mu);
  ncs_comm_atfork(0);
  ncs_resolve_atfork(0);
  ncs_writer_atfork_prepare();
  ncs_gate_close(); /* last: a thread inside a bracket takes none of the locks above */
}
static void atfork_parent(void) {
  ncs_gate_open();
  ncs_writer_atfork_parent();
  ncs_resolve_atfork(1);
  ncs_comm_atfork(1);
  pthread_mutex_unlock(&act_mu);
}
static void atfork_child(void) {
  ncs_gate_reset_child();
  int was_active = atomic_load(&ncs_active) == 1;
  ncs_writer_atfork_child();  /* forgets the parent's file, queue and writer thread */
  atomic_store(&ncs_active, 0);
  act_failed = 0;
  atomic_fetch_add(&ncs_gen, 1);
  atomic_store(&next_thread, 0);
  /* the rings are MADV_DONTFORK mappings: not in this process; it makes its own */
  for (int i = 0; i < NCS_MAX_THREADS; i++) atomic_store(&ncs_rings[i], NULL);
  ncs_rings_atfork_child();
  ncs_comm_atfork(2);
  if (was_active) ncs_collectors_walk(&ncs_collectors, offsetof(struct ncs_collector, atfork_child));
  ncs_resolve_atfork(2);
  ncs_nb_atfork_child();
  pthread_mutex_unlock(&act_mu); /* taken by the forking thread in atfork_prepare */
}

__attribute__((constructor)) static void ncs_constructor(void) {
  int saved = errno;
  pthread_once(&ncs_resolve_once, ncs_resolve_all);
  ncs_pipe2_resolve();
  ncs_exec_resolve();
  atomic_store(&ncs_activate_by_profiler, activate_by_profiler);
  if (!getcwd(start_cwd, sizeof start_cwd)) start_cwd[0] = 0;
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  errno = saved;
}

__attribute__((destructor)) static void ncs_destructor(void) { exit_flush(); }
