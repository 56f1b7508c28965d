/* internal.h — what the shim's core modules share (never installed, never exported).
 *
 * Modules and their one job each:
 *   resolve.c   finds the real NCCL entry points (pnccl*, RTLD_NEXT, a privately loaded libnccl)
 *   base.c      what all read: settings struct, flags, ring table, host name, clock, debug (a leaf)
 *   state.c     reads the settings, activation at the first NCCL call, thread registration,
 *               the PROCESS record, fork and exit
 *   commtab.c   the communicator table (handle -> index, ids, sequence counters)
 *   wrappers.c  the exported nccl* functions, generated per shape: time, call the real one, record
 *   call.h      the steps of one recorded call, shared by wrappers.c and comms.c
 *   comms.c     the communicator shapes (creation, split, teardown) and their COMM records
 *   callsite.c  call-site stacks (libunwind loaded privately), their lock-free id table
 *   unwmem.c    libunwind's pages: populated in one call, its trace caches kept across threads
 *   gotpatch.c  one import of a privately loaded library pointed at a shim function
 *   writer.c    the writer thread: file, encoding (ncclscope/encode.h), zstd chunks, ncs_emit
 *   rowzip.c    a large chunk of rows compressed on a helper thread while the writer fills it
 *   gputime.c   CUDA-event timing of collectives, collected asynchronously by the writer
 *   forkgate.c  fork waits until no shim code is inside the loader, the unwinder, CUDA or NVML
 *   collectors.c the table of collectors (hooks.h): profiler, log capture, topology, GPU timing,
 *               call sites; state.c walks it and hands it to the writer
 *   nonblocking.c  non-blocking inits and splits completed after their call returned
 *   dlsym.c     ncclX looked up by handle (dlopen + dlsym, ctypes) reaches the wrappers
 * Everything here has hidden visibility (the Makefile builds with -fvisibility=hidden). */
#ifndef NCS_SHIM_INTERNAL_H
#define NCS_SHIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"
#include "hooks.h" /* ncs_emit, ncs_now_ns, the fork gate (forkgate.c) */
#include "ncclscope/rings.h"

#define NCS_SHIM_VERSION "0.1.0"
#define NCS_LIKELY(x) __builtin_expect(!!(x), 1)
#define NCS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- resolve.c ---- */
enum ncs_fn {
#define NCS_FN_ENUM_(ret, name, params, args) NCS_FN_##name,
  NCCLSCOPE_PROTOTYPES(NCS_FN_ENUM_)
#undef NCS_FN_ENUM_
  NCS_FN_COUNT
};
#define NCS_FN_TYPE_(ret, name, params, args) typedef ret(*ncs_fn_##name##_t) params;
NCCLSCOPE_PROTOTYPES(NCS_FN_TYPE_)
#undef NCS_FN_TYPE_

extern _Atomic(void *) ncs_real_fn[NCS_FN_COUNT];
extern pthread_once_t ncs_resolve_once;
void ncs_resolve_all(void);           /* pthread_once body: fills ncs_real_fn */
void *ncs_resolve_late(enum ncs_fn f); /* retry for an entry still missing (slow path) */
void ncs_resolve_atfork(int phase);    /* 0 before fork, 1 parent after, 2 child after */
void *ncs_real_slow(enum ncs_fn f);    /* ncs_real's out-of-line half: the once-init, then the retry */
/* The real function `f`, or NULL when no NCCL could be found. Safe from any thread, any time.
 * An entry already found is used as is (a slot is only ever set, with release, to the real
 * function); only an empty slot goes through the once-init and the retry. */
static inline void *ncs_real(enum ncs_fn f) {
  void *p = atomic_load_explicit(&ncs_real_fn[f], memory_order_acquire);
  return NCS_LIKELY(p != NULL) ? p : ncs_real_slow(f);
}
#define NCS_REAL(name) ((ncs_fn_##name##_t)ncs_real(NCS_FN_##name))

/* ---- base.c (what all read) and state.c (activation, threads) ---- */
struct ncs_config {
  char dir[512];
  unsigned flush_ms;        /* chunk period */
  unsigned callsite_depth;  /* 0 = off */
  unsigned ring_records;    /* power of two */
  int debug;                /* NCCLSCOPE_DEBUG=1: diagnostics to stderr */
  int gpu_timing;           /* NCCLSCOPE_GPU_TIMING (default 1) */
  int kernels;              /* NCCLSCOPE_KERNELS (default 1): kernel activity through CUPTI */
  unsigned exit_ms;         /* NCCLSCOPE_EXIT_MS: longest wait for the last flush (default 3000) */
  int nccl_log;             /* NCCLSCOPE_NCCL_LOG (default 1): capture NCCL's log (logcap.c) */
  int profiler;             /* NCCLSCOPE_PROFILER (default 1): be NCCL's profiler plugin (profiler.c) */
  char metrics_dir[512];    /* NCCLSCOPE_METRICS: Prometheus text files go there (promexport.c); "" = off */
  unsigned metrics_ms;      /* NCCLSCOPE_METRICS_MS: their period (default 5000) */
  uint64_t keep_ns;         /* NCCLSCOPE_KEEP time bound (0: none): the trace keeps the calls of the last keep_ns */
  uint64_t keep_bytes;      /* NCCLSCOPE_KEEP size bound (0: none): at most this much disk (docs/SHIM.md) */
};
extern struct ncs_config ncs_cfg;

/* One thread's single-producer ring of raw CALL records (layout: ncclscope/rings.h). The
 * owning thread writes `head`, the writer thread writes `tail`; the owner counts what it had
 * to drop. */
#define NCS_MAX_THREADS 128
extern struct ncs_ring *_Atomic ncs_rings[NCS_MAX_THREADS];

/* Per-thread state. `gen` differs from ncs_gen after a fork: the thread registers again. */
struct ncs_tls {
  struct ncs_ring *ring;
  uint32_t gen, thread, busy, depth;
  uint64_t tcall, group;
  uint64_t slot_drops;            /* calls lost because no ring slot was free */
  struct ncs_gpu_group *gpu;      /* gputime.c: streams of the open group */
  /* the last communicator this thread recorded a call on (ncs_comm_cached) */
  uint64_t comm_handle;
  struct ncs_comm_info *comm_info;
  uint32_t comm_index, comm_gen;
};
extern __thread struct ncs_tls ncs_tls __attribute__((tls_model("initial-exec")));
extern _Atomic uint32_t ncs_gen;
extern _Atomic int ncs_active; /* 0 not yet, 1 recording, 2 forward only (NCCLSCOPE_DISABLE=1 or no writer) */

/* Activates the shim (config, writer thread, file) at the first recorded call; 0 when
 * recording is possible, -1 when not (then calls are only forwarded). */
int ncs_activate(void);
/* From the plugin's init when no wrapped call came first. A pointer in base.c that state.c's
 * constructor sets (NULL before it ran): profiler.c reaches the recorder's start without
 * naming state.c, which names the collectors, which name the profiler (no import loop). */
extern int (*_Atomic ncs_activate_by_profiler)(void);
/* Registers the calling thread (ring, thread index) if not done in this generation.
 * Returns the ring or NULL (no slot: the call is counted as dropped). */
struct ncs_ring *ncs_thread_ring(void);
static inline struct ncs_ring *ncs_ring_get(void) {
  struct ncs_tls *t = &ncs_tls;
  if (NCS_LIKELY(t->ring != NULL && t->gen == atomic_load_explicit(&ncs_gen, memory_order_relaxed)))
    return t->ring;
  return ncs_thread_ring();
}
/* The writer sleeps until a ring reaches 1/NCS_WAKE_FRACTION of its size (or the flush
 * period ends): the push that makes a ring exactly that full wakes it, one futex call per
 * (records / NCS_WAKE_FRACTION) pushes at most, and none while the writer is awake. So does
 * the push that makes head equal to the ring's wake_at (rings.c: half-way through the pages
 * the writer made present ahead of the head), so that a thread's first pass does not outrun
 * them, or head + 1 while an idle writer sleeps a heartbeat period (ncs_rings_arm). wake_at
 * sits on the tail's cache line, which the push reads anyway. */
#define NCS_WAKE_FRACTION 8
extern _Atomic int ncs_writer_sleeping;
void ncs_writer_wake(void);
/* Owner thread, at a push whose head h reached its ring's `limit` with room in the ring: 1 when
 * the limit is above h now (a new ring's next pages made present by this thread: rings.c; it
 * sets wake_at to h + 1, so this push wakes the writer, which wakes the pagers), 0 when the
 * call is to be dropped. Never on the per-call path. */
int ncs_rings_grow(struct ncs_ring *r, uint64_t h);
/* Appends one record to the ring, or counts it as dropped when the ring is full or its head
 * reached `limit` (an idle ring whose other pages the writer gave back, or a new ring past
 * what it may grow to by itself: rings.c; `limit` sits on the tail's cache line). */
static inline void ncs_ring_push(struct ncs_ring *r, const struct ncs_call *c) {
  uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  if (NCS_UNLIKELY((h - t > r->mask || h >= atomic_load_explicit(&r->limit, memory_order_relaxed)) &&
                   (h - t > r->mask || !ncs_rings_grow(r, h)))) {
    /* release: the writer reads `thread` (set when this slot was claimed) after seeing it */
    atomic_store_explicit(&r->dropped, atomic_load_explicit(&r->dropped, memory_order_relaxed) + 1,
                          memory_order_release);
    return;
  }
  r->rec[h & r->mask] = *c;
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
  if (NCS_UNLIKELY(h - t == (r->mask + 1) / NCS_WAKE_FRACTION ||
                   h + 1 == atomic_load_explicit(&r->wake_at, memory_order_relaxed))) {
    atomic_thread_fence(memory_order_seq_cst); /* head stored before `sleeping` is read */
    if (atomic_load_explicit(&ncs_writer_sleeping, memory_order_relaxed)) ncs_writer_wake();
  }
}

/* Publishes the call `c` (t_enter set) as in flight on ring r; nranks: see INFLIGHT. `key` is
 * not stored here: it stays 0 but during an init or a split, which set it before and clear it
 * after (comms.c). */
static inline void ncs_current_enter(struct ncs_ring *r, const struct ncs_call *c, int32_t nranks) {
  struct ncs_current *k = &r->cur;
  atomic_store_explicit(&k->t_enter, c->t_enter, memory_order_relaxed);
  atomic_store_explicit(&k->seq, c->seq, memory_order_relaxed);
  atomic_store_explicit(&k->count, c->count, memory_order_relaxed);
  atomic_store_explicit(&k->op_dtype_comm, (uint64_t)(c->op & 0xff) | (uint64_t)(c->datatype & 0xff) << 8 |
                        (uint64_t)c->comm << 32, memory_order_relaxed);
  atomic_store_explicit(&k->root_nranks, (uint64_t)(uint32_t)c->root | (uint64_t)(uint32_t)nranks << 32,
                        memory_order_relaxed);
  atomic_store_explicit(&k->tcall, c->tcall, memory_order_release);
}
static inline void ncs_current_exit(struct ncs_ring *r) {
  atomic_store_explicit(&r->cur.tcall, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}
/* ---- rings.c: the shared, file-backed mapping the rings live in ---- */
/* Writer thread, after creating trace file `trace_path`: creates `<trace_path>.rings` and maps
 * its header and a chunk buffer of at least buf_cap bytes (or, for a later trace file, renames
 * the rings file after it); 0, or -1 (rings then live in process memory). */
int ncs_rings_attach(const char *trace_path, uint32_t pid, uint64_t realtime_ns, size_t buf_cap);
/* The writer's chunk buffer inside the mapping (capacity in *cap, of which the first
 * *reserved bytes have their blocks reserved: only those may be written), or NULL. */
uint8_t *ncs_rings_buf(size_t *cap, size_t *reserved);
/* Writer thread: reserves the chunk buffer's first `want` bytes (capped at its capacity) when
 * the file system can (/dev/shm keeping its free share); returns the bytes reserved now. */
size_t ncs_rings_buf_grow(size_t want);
void ncs_rings_buf_reset(uint64_t chunk);  /* the buffer now builds chunk `chunk`, empty */
void ncs_rings_buf_publish(size_t len);    /* its first len bytes are whole records */
/* A zeroed ring with ncs_cfg.ring_records slots (mask set): in the file, else process memory
 * (flags NCS_RING_F_MEMORY); NULL when neither can be had. */
struct ncs_ring *ncs_rings_new_ring(void);
uint64_t ncs_rings_in_memory(void);        /* rings that could not be in the file */
/* Writer thread, before each drain: populates the pages ahead of every ring's head, keeps a
 * ring ready for the next thread once one was asked for, trims the mappings of idle rings.
 * Returns 1 while it has work left for its next pass (a dead process's rings file being given
 * back, a step a pass): the writer then comes back within a flush period, idle or not. */
int ncs_rings_tend(uint64_t now_ns);
/* Writer thread, before a sleep of more than a flush period (an idle process: writer.c): the
 * next push on any ring wakes it (its wake_at moved to the head + 1, so no per-call cost is
 * added); 0, or -1 when a ring holds records not drained yet or a push raced the arming (the
 * writer then sleeps a flush period only). ncs_rings_disarm, at its next pass, puts back the
 * wake-ups the arming replaced (rings.c: half-way through the pages made present). */
int ncs_rings_arm(void);
void ncs_rings_disarm(void);
void ncs_rings_remove(void);               /* clean shutdown: unlink the file */
void ncs_rings_atfork_child(void);

/* Communicator table: ncclComm_t → trace index, lock-free for readers. One cache line per
 * communicator: the sequence counters are written on every call, by the (one) thread using it. */
struct __attribute__((aligned(64))) ncs_comm_info {
  uint64_t handle, comm_id;
  _Atomic uint64_t coll_seq, p2p_seq, split_count;
  int32_t device;
  int32_t rank;   /* this process's rank in it, -1 when not known (an init deferred by a group):
                     the in-place test of AllGather, ReduceScatter, Gather, Scatter needs it */
};
#define NCS_MAX_COMMS 4096
uint32_t ncs_comm_lookup(ncclComm_t comm);             /* 0 when unknown */
struct ncs_comm_info *ncs_comm_info(uint32_t index);   /* NULL for 0 / out of range */
/* Bumped (release) after every change of the table: an insert, a forked child's reset. */
extern _Atomic uint32_t ncs_comm_gen;
/* Looks comm up (ncs_comm_lookup), remembers the answer in the thread's ncs_tls (with gen, the
 * table's generation read before the lookup) and returns its index (0: unknown, not
 * remembered). */
uint32_t ncs_comm_remember(ncclComm_t comm, uint32_t gen);
/* The hot path's lookup: the thread's last communicator while the table has not changed
 * (calls on one communicator follow each other: a compare instead of a hash probe), else
 * ncs_comm_remember. *info: its entry (NULL when unknown). */
static inline uint32_t ncs_comm_cached(ncclComm_t comm, struct ncs_comm_info **info) {
  struct ncs_tls *t = &ncs_tls;
  uint32_t gen = atomic_load_explicit(&ncs_comm_gen, memory_order_acquire);
  if (NCS_UNLIKELY(t->comm_handle != (uint64_t)(uintptr_t)comm || t->comm_gen != gen) &&
      !ncs_comm_remember(comm, gen)) {
    *info = NULL;
    return 0;
  }
  *info = t->comm_info;
  return t->comm_index;
}
/* CLOCK_MONOTONIC in ns, inlined where the hot path reads it (ncs_now_ns elsewhere). */
static inline uint64_t ncs_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Allocates the next index for a new communicator (inserted in the table when handle != 0);
 * rank -1 when not known. */
uint32_t ncs_comm_add(ncclComm_t handle, uint64_t comm_id, int32_t device, int32_t rank);
void ncs_comm_atfork(int phase);       /* 0 before fork, 1 parent after, 2 child after */
uint64_t ncs_hash64(uint64_t h, const void *p, size_t n); /* FNV-1a 64, continued from h */
#define NCS_FNV64_INIT 0xcbf29ce484222325ull

extern char ncs_host[256];                              /* this host's name, set at activation */
const char *ncs_host_name(void);
void ncs_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where this thread's ncs_debug lines go instead of descriptor 2 while set (the file thread,
 * whose descriptor 2 may be one of the shim's own files): appended while they fit. */
struct ncs_debug_sink { char buf[2048]; size_t len; };
void ncs_debug_divert(struct ncs_debug_sink *sink);
uint64_t ncs_now_ns(void);

/* ---- nonblocking.c: communicators completed after their creating call returned ---- */
struct ncs_comm;
void ncs_nb_init_pending(ncclComm_t handle, const struct ncs_comm *c); /* init returned ncclInProgress */
void ncs_nb_split_pending(ncclComm_t *where, const struct ncs_comm *c); /* split: *where set later */
uint32_t ncs_nb_adopt(ncclComm_t handle);   /* unknown handle: a pending split's child? its index or 0 */
void ncs_nb_polled(ncclComm_t handle, ncclResult_t rc, const ncclResult_t *async); /* after GetAsyncError */
void ncs_nb_atfork_child(void);

/* ---- callsite.c (also the "callsites" collector, hooks.h) ---- */
/* The call-site id of the current stack, starting at the wrapper's return address, which is
 * stored at ra_at (on x86-64 the word below the caller's stack pointer); 0 when off/full. */
uint32_t ncs_callsite_capture(void *const *ra_at);
/* unwmem.c: libunwind's mmap and munmap go through the shim (call before its first unwind) */
void ncs_unwmem_install(void *libunwind_handle);
/* gotpatch.c: the object's GOT slots for `name` point at fn; returns slots changed, -1 on error */
int ncs_got_patch(void *handle, const char *name, void *fn);
void ncs_pipe2_resolve(void); /* constructor: the pipe2 the exported one forwards to */

/* ---- rowzip.c (writer thread only): a large chunk of rows compressed on a helper thread
 * while the writer still appends to it ---- */
/* 0, or -1: no helper; pieces: ranges may be left out (ncs_rowzip_skip), the input copied as it goes */
int ncs_rowzip_begin(const uint8_t *raw, uint8_t *out, size_t cap, int level, int pieces);
int ncs_rowzip_skip(size_t off, size_t len); /* raw[off, off + len) left out of the frame: 0, or -1 */
void ncs_rowzip_feed(size_t len);  /* raw[0, len) is final */
size_t ncs_rowzip_end(size_t len); /* the whole chunk is raw[0, len): the frame's size, or 0 */
void ncs_rowzip_stop(void);
void ncs_rowzip_atfork_child(void);

/* ---- writer.c ---- */
int ncs_writer_start(void);            /* starts the writer thread (from ncs_activate) */
/* Waits until the writer has created its file (or failed to), at most timeout_ms; 0 when it has.
 * Activation waits for it, so the descriptors the shim holds exist before the first NCCL call
 * returns: a job that closes every descriptor after init never races the file's creation. */
int ncs_writer_wait_file(unsigned timeout_ms);
struct ncs_collector_table;
/* The collectors the writer walks (prepare, poll, stop), handed over before ncs_writer_start. */
void ncs_writer_set_collectors(const struct ncs_collector_table *t);
void ncs_writer_stop(unsigned timeout_ms); /* final flush, bounded wait (destructor) */
/* Writes a chunk now (after collecting GPU times for up to gpu_drain_ms; gpu_off: then ends GPU
 * timing) and waits for it, at most timeout_ms. The writer keeps going. -1 on timeout. */
int ncs_writer_sync(unsigned timeout_ms, unsigned gpu_drain_ms, int gpu_off);
/* exec.c, before the real exec: asks the writer for a chunk flagged EXEC with everything so far
 * (GPU times collected for up to 100 ms), after which it unlinks the rings file and writes
 * nothing more, and waits for it at most timeout_ms. Returns the request (0: nothing asked: no
 * writer, or a vfork child, which shares the parent's memory and must touch none of it).
 * Async-signal-safe. ncs_writer_exec_failed(request): the exec returned; the writer goes on
 * (its next chunks, unflagged, say the image lived on). */
uint32_t ncs_writer_exec(unsigned timeout_ms);
void ncs_writer_exec_failed(uint32_t request);
void ncs_exec_resolve(void); /* constructor: the exec functions the exported ones forward to */
void ncs_writer_atfork_prepare(void);
void ncs_writer_atfork_parent(void);
void ncs_writer_atfork_child(void);
/* Queues an internally built record (COMM, COMM_END, ...); same as ncs_emit. */
int ncs_emit(uint32_t type, const void *body, size_t len);
void ncs_writer_count_drop(unsigned reason, uint64_t n); /* drops with no ring (e.g. no slot) */
/* Writer thread only (a collector's poll): encodes a GPU_TIME into the chunk being built,
 * after every CALL drained so far. -1 when the chunk has no room for it (try again later). */
int ncs_writer_put_gpu_time(const struct ncs_gpu_time *g);
/* Writer thread only, outside the fork gate (a collector's poll, after ncs_writer_put_gpu_time
 * said -1): writes the chunk being built when it reached its flush size. */
void ncs_writer_flush_full(void);
/* The PROCESS record (whole record), handed over at activation before ncs_writer_start: the
 * writer copies it and writes it first in the file. */
void ncs_writer_set_process(const void *rec, size_t len);
/* Writer thread (collectors' inflight hook): one INFLIGHT record into the chunk; -1 when full. */
int ncs_writer_put_inflight(const struct ncs_inflight *f);

/* exposure.c, writer thread only: NCCL kernels against the rest of the GPU's work, lined up
 * [until, h) at a time (contract there). Zeroed = empty; `cap` kernels may wait (fixed at the
 * first kernel); ncs_expo_free empties it again. */
struct ncs_expo_piece;
struct ncs_expo {
  uint64_t until;                  /* lined up before this CLOCK_MONOTONIC ns */
  uint64_t comm_ns, exposed_ns;    /* before until: the NCCL kernels' union, its part alone */
  uint64_t kernels;                /* kernels taken (their part from until on) */
  struct ncs_kernel *pend;         /* [cap] waiting, cut to start at until or later */
  struct ncs_expo_piece *scratch;  /* [2 cap] the pieces of one lining up */
  unsigned n, cap;
  int nomem;
};
void ncs_expo_kernel(struct ncs_expo *x, const struct ncs_kernel *k, unsigned cap);
void ncs_expo_line_up(struct ncs_expo *x, uint64_t h);
void ncs_expo_free(struct ncs_expo *x);

/* aggregate.c, writer thread only (NCCLSCOPE_KEEP): the whole-run aggregates fed with the
 * ring slots [from, to) the writer encodes and the GPU times it writes, encoded as AGGREGATE
 * records (returns the bytes added, *records counted up); reset in a forked child. */
void ncs_agg_calls(const struct ncs_call *rec, uint64_t mask, uint64_t from, uint64_t to);
void ncs_agg_gpu(const struct ncs_gpu_time *g);
/* the queue records the writer puts into its chunks (KERNEL records: exposed communication) */
void ncs_agg_queue(const uint8_t *q, size_t len);
size_t ncs_agg_encode(struct ncs_wbuf *w, uint32_t *records);
void ncs_agg_reset(void);

/* Writer thread: records the process lost so far (the chunk headers' count). */
uint64_t ncs_writer_dropped(void);


/* ---- kernels.c (a collector, hooks.h) ---- */
void ncs_kernels_exit(void);     /* atexit, before the last sync: the next poll is the final one */

/* ---- gputime.c ---- */
struct ncs_call;
extern _Atomic int ncs_gpu_on;        /* GPU timing on (set by gputime.c's start; the writer clears it at exit) */
/* Around one launch outside a group (dev: the communicator's device, -1 unknown): returns a
 * token for ncs_gpu_after, or -1. Sets
 * NCS_CALL_F_CAPTURED in *flags when the stream is capturing. */
int ncs_gpu_before(cudaStream_t stream, int dev, uint32_t *flags);
void ncs_gpu_after(int token, uint32_t thread, uint64_t ref, int failed);
/* Inside a group: notes the stream; marks capture. */
void ncs_gpu_group_member(cudaStream_t stream, int dev, uint32_t *flags);
/* Outermost GroupEnd: before / after the real GroupEnd. */
void ncs_gpu_group_before(void);
void ncs_gpu_group_after(uint32_t thread, uint64_t group, int failed);
void ncs_gpu_group_forget(void);      /* a group closed without launching (GroupSimulateEnd) */
/* A handle on an object already loaded whose file name starts with prefix (e.g.
 * "libcudart.so"), without loading anything; NULL when none is. */
void *ncs_loaded_handle(const char *prefix);
/* 1 when st (from stat/fstat) is this process's trace file: never write or truncate it. */
struct stat;
int ncs_is_trace_file(const struct stat *st);
int ncs_gpu_current_device(void);     /* cudaGetDevice, -1 without GPU timing */
/* CUDA calls the shim made on application threads, and NCCL calls it timed (NCCLSCOPE_DEBUG). */
void ncs_gpu_counts(uint64_t *cuda_calls, uint64_t *timed_calls);

#endif
