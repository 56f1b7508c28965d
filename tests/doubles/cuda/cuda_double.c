/* cuda_double.c — CPU double of the CUDA runtime: devices, host "device" memory, streams that
 * run their work asynchronously on one worker thread each, events, stream capture into
 * graphs and graph replay.
 *
 * Contract: the exported cuda* functions keep the real runtime's prototypes and error codes
 * (include/cuda_double.h); the behaviour modelled, and where it departs from CUDA, is listed
 * in docs/DOUBLES.md. A stream is a fixed ring of work items drained in order by its worker.
 *
 * Device clock: each stream keeps the device time (CLOCK_MONOTONIC ns, cudaDoubleNowNs's domain)
 * at which it is free. An item starts at max(that, the host time of the call that enqueued it
 * (a graph's nodes: the launch), the device time of an event it waits for) and ends at start +
 * its modelled duration: a compute kernel its declared ns, a copy or set its bytes over the
 * bandwidth below, a kernel item what it declared with cudaDoubleItemEndAt (the NCCL double),
 * a host function when it returns (it runs no earlier than its start, in wall time). Workers
 * do the real work at once and never sleep for modelled time, so device times do not depend
 * on the machine's load. An event takes its stream's device time; the host sees work complete
 * (query, synchronize, implicit syncs) once the worker is done with it AND the wall clock has
 * reached its device end (synchronize sleeps until then). Thread-safe. */
#include "../include/cuda_double.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x4556454eu
#define RING_CAP 4096u

/* Bandwidths of the modelled device's copies and sets, bytes per ns (= GB/s): PCIe for
 * host<->device (PCIe Gen5 x16, 63 GB/s peak, at 80%), HBM for device<->device (an H100's HBM3,
 * 3.35 TB/s, read plus write) and for sets (writes only). cudaMemcpyHostToHost goes at the PCIe
 * figure; cudaMemcpyDefault (all "device" memory is host memory here) counts as device<->device. */
#define BW_PCIE 50.0
#define BW_HBM_COPY 1500.0
#define BW_HBM_SET 3000.0

enum item_kind { IT_FN, IT_EVENT, IT_WAIT, IT_COMPUTE, IT_GRAPH, IT_STOP };

struct item {
  enum item_kind kind;
  void (*fn)(void *);
  void *arg;
  void (*release)(void *);
  uint64_t aux; /* event generation, compute ns */
  /* what the item is to an activity observer (cudaDoubleSetActivityHook) */
  enum cudaDoubleActivityKind act;
  const char *name; /* kernel name (static storage) */
  uint64_t bytes;   /* memcpy / memset size */
  int copy_kind;
  uint64_t enq_ns;  /* host time of the enqueueing call (graph nodes: of the launch) */
  struct stamp *stamp; /* event record / wait: the record's device time */
};

/* One cudaEventRecord's outcome: its device time once its stream passed it. Shared by the record
 * item, the event (its latest record) and the waits made on that record (refcounted; fields
 * under the event's mutex), so a wait gets the time of the record it was made on even when
 * the event was recorded again since. */
struct stamp { _Atomic int refs; int done; uint64_t t_ns; };
static void stamp_unref(struct stamp *st) {
  if (st && atomic_fetch_sub(&st->refs, 1) == 1) free(st);
}

struct graph_body { /* the nodes a capture recorded, shared by the graph and its execs */
  atomic_int refs;
  size_t n, cap;
  struct item *items;
};
struct CUgraph_st { struct graph_body *body; };
struct CUgraphExec_st { struct graph_body *body; };

struct CUstream_st {
  unsigned magic;
  pid_t pid;
  int dev;
  unsigned flags;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  struct item ring[RING_CAP];
  uint64_t head, tail; /* next to run, next free; done == head once an item retired */
  uint64_t done;
  uint64_t end_at[RING_CAP]; /* device end of the item at each position, written as it retires */
  _Atomic uint64_t free_at;  /* device time at which the stream is free (worker writes) */
  int worker_idle, waiters;
  uint32_t id;      /* unique in the process, as CUPTI's streamId */
  pthread_t thr;
  /* capture state, protected by g_cap_mu */
  struct CUgraph_st *capture;
  int capture_origin, capture_invalid;
  struct CUstream_st *next_all;
};

struct CUevent_st {
  unsigned magic;
  unsigned flags;
  atomic_int refs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t rec_gen, done_gen;
  uint64_t t_ns; /* device time of the last completed record */
  struct stamp *last; /* the latest record's stamp (NULL before the first) */
  int captured;
  struct CUgraph_st *cap_graph;
};

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_cap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *g_streams;     /* every live stream, for cudaDeviceSynchronize */
static struct CUstream_st *g_legacy;      /* the NULL stream, created on first use */
static _Atomic int g_active_captures;
static _Atomic uint32_t g_next_stream_id = 7;
static _Atomic uint32_t g_next_correlation = 1;
static void (*_Atomic g_activity_hook)(const struct cudaDoubleActivity *);
static void (*_Atomic g_truth_hook)(const struct cudaDoubleActivity *);
static _Thread_local int t_device;
static _Thread_local cudaError_t t_last_error;
static _Thread_local int t_on_worker;
/* the device-time bounds of the item the worker is running (cudaDoubleItem*) */
static _Thread_local uint64_t t_item_start, t_item_end;
static _Thread_local int t_item_declared; /* cudaDoubleItemEndAt was called for this item */

static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}
__attribute__((visibility("hidden"))) cudaError_t cuda_double_fail(cudaError_t e) { return ret(e); }

EXPORT uint64_t cudaDoubleNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

EXPORT void cudaDoubleSleepUntil(uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

EXPORT int cudaDoubleOnWorker(void) { return t_on_worker; }
EXPORT uint64_t cudaDoubleItemStartNs(void) { return t_on_worker ? t_item_start : 0; }
EXPORT void cudaDoubleItemEndAt(uint64_t end_ns) {
  if (!t_on_worker) return;
  t_item_end = end_ns > t_item_start ? end_ns : t_item_start;
  t_item_declared = 1;
}
EXPORT uint64_t cudaDoubleItemEndNs(void) { return t_on_worker ? t_item_end : 0; }

/* ---- devices ---- */

static int device_count(void) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  if (v) {
    int n = 0, in = 0;
    for (const char *p = v; *p; p++) {
      if (*p == ',') in = 0;
      else if (*p != ' ' && !in) { in = 1; n++; }
    }
    return n;
  }
  v = getenv("NCCLDOUBLE_NGPUS");
  if (v && *v) return atoi(v) > 0 ? atoi(v) : 0;
  return 8;
}

EXPORT cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return ret(cudaErrorInvalidValue);
  *count = device_count();
  return *count ? cudaSuccess : ret(cudaErrorNoDevice);
}

EXPORT cudaError_t cudaSetDevice(int device) {
  int n = device_count();
  if (n == 0) return ret(cudaErrorNoDevice);
  if (device < 0 || device >= n) return ret(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}

EXPORT cudaError_t cudaGetDevice(int *device) {
  if (!device) return ret(cudaErrorInvalidValue);
  *device = t_device;
  return cudaSuccess;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

/* ---- memory ("device" memory is host memory) ---- */

EXPORT cudaError_t cudaMalloc(void **p, size_t size) {
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  if (size == 0) return cudaSuccess;
  void *m = NULL;
  if (posix_memalign(&m, 256, size) != 0) return ret(cudaErrorMemoryAllocation);
  *p = m;
  return cudaSuccess;
}

/* cudaFree waits for the device's work first, as CUDA's does (it synchronizes implicitly): work
 * still queued on a stream never touches memory freed under it. Not on a stream's own worker
 * (a host function must not call CUDA) nor while a capture is active (it would wait for nothing
 * the capture holds): freed at once there. */
static void sync_streams(int only_blocking);
EXPORT cudaError_t cudaFree(void *p) {
  if (p && !t_on_worker && !g_active_captures) sync_streams(0);
  free(p);
  return cudaSuccess;
}

/* ---- streams ---- */

static void graph_body_unref(struct graph_body *b);
static uint64_t run_item(struct CUstream_st *s, struct item *it);
static void event_unref(struct CUevent_st *e);
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void *worker_main(void *arg) {
  struct CUstream_st *s = arg;
  t_on_worker = 1;
  t_device = s->dev;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->head == s->tail) {
      s->worker_idle = 1;
      pthread_cond_wait(&s->cv_work, &s->mu);
      s->worker_idle = 0;
    }
    struct item it = s->ring[s->head % RING_CAP];
    pthread_mutex_unlock(&s->mu);
    if (it.kind == IT_STOP) {
      pthread_mutex_lock(&s->mu);
      s->end_at[s->head % RING_CAP] = atomic_load(&s->free_at);
      s->head++;
      s->done = s->head;
      pthread_cond_broadcast(&s->cv_done);
      pthread_mutex_unlock(&s->mu);
      return NULL;
    }
    if (it.kind == IT_EVENT) {
      /* as on a GPU, the stream passing an event and the event completing are one moment:
       * stream and event are updated together (lock order: stream, then event), so
       * cudaStreamQuery after cudaEventSynchronize, and cudaEventQuery after
       * cudaStreamSynchronize, both say ready */
      struct CUevent_st *e = it.arg;
      uint64_t t = max64(atomic_load(&s->free_at), it.enq_ns);
      atomic_store(&s->free_at, t);
      pthread_mutex_lock(&s->mu);
      pthread_mutex_lock(&e->mu);
      if (it.aux > e->done_gen) { e->done_gen = it.aux; e->t_ns = t; }
      it.stamp->t_ns = t;
      it.stamp->done = 1;
      s->end_at[s->head % RING_CAP] = t;
      s->head++;
      s->done = s->head;
      pthread_cond_broadcast(&e->cv);
      pthread_mutex_unlock(&e->mu);
      if (s->waiters) pthread_cond_broadcast(&s->cv_done);
      pthread_mutex_unlock(&s->mu);
      stamp_unref(it.stamp);
      event_unref(e);
      pthread_mutex_lock(&s->mu);
      continue;
    }
    uint64_t end = run_item(s, &it);
    pthread_mutex_lock(&s->mu);
    s->end_at[s->head % RING_CAP] = end;
    s->head++;
    s->done = s->head;
    if (s->waiters) pthread_cond_broadcast(&s->cv_done);
  }
}

static struct CUstream_st *stream_new(unsigned flags) {
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->magic = STREAM_MAGIC;
  s->pid = getpid();
  s->dev = t_device;
  s->flags = flags;
  s->id = atomic_fetch_add(&g_next_stream_id, 1);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_work, NULL);
  pthread_cond_init(&s->cv_done, NULL);
  if (pthread_create(&s->thr, NULL, worker_main, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_lock(&g_reg_mu);
  s->next_all = g_streams;
  g_streams = s;
  pthread_mutex_unlock(&g_reg_mu);
  return s;
}

static void atfork_child(void) {
  /* The parent's workers do not exist in the child: forget its streams (their handles now
   * fail with cudaErrorInitializationError, as CUDA fails in a forked child). */
  pthread_mutex_init(&g_reg_mu, NULL);
  pthread_mutex_init(&g_cap_mu, NULL);
  g_streams = NULL;
  g_legacy = NULL;
  g_active_captures = 0;
}

__attribute__((constructor)) static void cuda_double_init(void) {
  pthread_atfork(NULL, NULL, atfork_child);
}

/* Resolves a stream handle: NULL, cudaStreamLegacy and cudaStreamPerThread mean the legacy
 * default stream. Returns NULL with *err set for a bad handle. */
static struct CUstream_st *resolve(cudaStream_t h, cudaError_t *err) {
  *err = cudaSuccess;
  if (h == NULL || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    pthread_mutex_lock(&g_reg_mu);
    struct CUstream_st *s = g_legacy;
    pthread_mutex_unlock(&g_reg_mu);
    if (s) return s;
    s = stream_new(0);
    if (!s) { *err = cudaErrorMemoryAllocation; return NULL; }
    pthread_mutex_lock(&g_reg_mu);
    if (!g_legacy) g_legacy = s;
    struct CUstream_st *won = g_legacy;
    pthread_mutex_unlock(&g_reg_mu);
    return won; /* a losing racer's extra stream stays idle in the registry */
  }
  if (h->magic != STREAM_MAGIC) { *err = cudaErrorInvalidResourceHandle; return NULL; }
  if (h->pid != getpid()) { *err = cudaErrorInitializationError; return NULL; }
  return h;
}

static void push(struct CUstream_st *s, const struct item *it) {
  pthread_mutex_lock(&s->mu);
  while (s->tail - s->head >= RING_CAP) {
    s->waiters++;
    pthread_cond_wait(&s->cv_done, &s->mu);
    s->waiters--;
  }
  s->ring[s->tail % RING_CAP] = *it;
  s->ring[s->tail % RING_CAP].enq_ns = cudaDoubleNowNs();
  s->tail++;
  if (s->worker_idle) pthread_cond_signal(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
}

static void graph_append(struct CUgraph_st *g, const struct item *it) {
  struct graph_body *b = g->body;
  if (b->n == b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 16;
    struct item *ni = realloc(b->items, nc * sizeof *ni);
    if (!ni) return;
    b->items = ni;
    b->cap = nc;
  }
  b->items[b->n++] = *it;
}

/* Enqueues an item, or records it into the stream's capture. Takes ownership of the item's
 * release either way. */
static cudaError_t submit(cudaStream_t h, const struct item *it) {
  cudaError_t e;
  struct CUstream_st *s = resolve(h, &e);
  if (!s) return ret(e);
  if (g_active_captures) {
    pthread_mutex_lock(&g_cap_mu);
    if (s->capture) {
      if (!s->capture_invalid) graph_append(s->capture, it);
      pthread_mutex_unlock(&g_cap_mu);
      return s->capture_invalid ? ret(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
    }
    pthread_mutex_unlock(&g_cap_mu);
  }
  push(s, it);
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *p, unsigned flags, int prio) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (flags & ~1u) return ret(cudaErrorInvalidValue);
  struct CUstream_st *s = stream_new(flags);
  if (!s) return ret(cudaErrorMemoryAllocation);
  *p = s;
  return cudaSuccess;
}
EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *p, unsigned flags) {
  return cudaStreamCreateWithPriority(p, flags, 0);
}
EXPORT cudaError_t cudaStreamCreate(cudaStream_t *p) { return cudaStreamCreateWithPriority(p, 0, 0); }

/* Marks the capture that `s` takes part in as invalidated (a forbidden call was made). */
static int capture_check_invalidate(struct CUstream_st *s) {
  if (!g_active_captures) return 0;
  pthread_mutex_lock(&g_cap_mu);
  int cap = s->capture != NULL;
  if (cap) s->capture_invalid = 1;
  pthread_mutex_unlock(&g_cap_mu);
  return cap;
}

/* The device end of the work up to position `target` (exclusive) of a stream whose worker has
 * retired it; s->mu held. When the worker has since retired a full ring more, the slot was
 * reused: the stream's current free time (later) stands in for it. */
static uint64_t end_of(struct CUstream_st *s, uint64_t target) {
  if (target == 0) return 0;
  if (s->done - (target - 1) > RING_CAP) return atomic_load(&s->free_at);
  return s->end_at[(target - 1) % RING_CAP];
}

/* Waits until the worker retired the work enqueued so far; returns its device end. */
static uint64_t stream_wait_done(struct CUstream_st *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t target = s->tail;
  s->waiters++;
  while (s->done < target) pthread_cond_wait(&s->cv_done, &s->mu);
  s->waiters--;
  uint64_t end = end_of(s, target);
  pthread_mutex_unlock(&s->mu);
  return end;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  cudaError_t e;
  struct CUstream_st *s = resolve(h, &e);
  if (!s) return ret(e);
  if (capture_check_invalidate(s)) return ret(cudaErrorStreamCaptureUnsupported);
  cudaDoubleSleepUntil(stream_wait_done(s));
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamQuery(cudaStream_t h) {
  cudaError_t e;
  struct CUstream_st *s = resolve(h, &e);
  if (!s) return ret(e);
  if (capture_check_invalidate(s)) return ret(cudaErrorStreamCaptureUnsupported);
  pthread_mutex_lock(&s->mu);
  int idle = s->done == s->tail && cudaDoubleNowNs() >= end_of(s, s->tail);
  pthread_mutex_unlock(&s->mu);
  return idle ? cudaSuccess : cudaErrorNotReady;
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t h) {
  if (h == NULL || h == cudaStreamLegacy || h == cudaStreamPerThread)
    return ret(cudaErrorInvalidResourceHandle);
  cudaError_t e;
  struct CUstream_st *s = resolve(h, &e);
  if (!s) return ret(e);
  struct item stop = {.kind = IT_STOP};
  push(s, &stop);
  pthread_join(s->thr, NULL);
  pthread_mutex_lock(&g_reg_mu);
  for (struct CUstream_st **pp = &g_streams; *pp; pp = &(*pp)->next_all)
    if (*pp == s) { *pp = s->next_all; break; }
  pthread_mutex_unlock(&g_reg_mu);
  for (;;) { /* let synchronizers that already hold a waiter slot leave */
    pthread_mutex_lock(&s->mu);
    int w = s->waiters;
    pthread_mutex_unlock(&s->mu);
    if (!w) break;
    sched_yield();
  }
  s->magic = 0;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_work);
  pthread_cond_destroy(&s->cv_done);
  free(s);
  return cudaSuccess;
}

/* Waits for the work enqueued so far on every live stream (only blocking ones when
 * only_blocking), in wall time up to the latest device end among them. The registry is
 * snapshotted, then each stream is waited for without the registry lock held (stream work may
 * itself create streams); a stream destroyed meanwhile was drained by its destroyer. */
static void sync_streams(int only_blocking) {
  struct CUstream_st *list[256];
  size_t n = 0;
  uint64_t end = 0;
  pthread_mutex_lock(&g_reg_mu);
  for (struct CUstream_st *s = g_streams; s && n < 256; s = s->next_all)
    if (!only_blocking || !(s->flags & cudaStreamNonBlocking)) list[n++] = s;
  pthread_mutex_unlock(&g_reg_mu);
  for (size_t i = 0; i < n; i++) {
    pthread_mutex_lock(&g_reg_mu);
    int live = 0;
    for (struct CUstream_st *s = g_streams; s; s = s->next_all) live |= s == list[i];
    if (!live) { pthread_mutex_unlock(&g_reg_mu); continue; }
    struct CUstream_st *s = list[i];
    pthread_mutex_lock(&s->mu); /* taken under the registry lock: destroy cannot free it */
    pthread_mutex_unlock(&g_reg_mu);
    uint64_t target = s->tail;
    s->waiters++;
    while (s->done < target) pthread_cond_wait(&s->cv_done, &s->mu);
    s->waiters--;
    end = max64(end, end_of(s, target));
    pthread_mutex_unlock(&s->mu);
  }
  cudaDoubleSleepUntil(end);
}

EXPORT cudaError_t cudaDeviceSynchronize(void) {
  if (g_active_captures) return ret(cudaErrorStreamCaptureUnsupported);
  sync_streams(0);
  return cudaSuccess;
}

/* Synchronous copy/set: ordered after the work of the legacy stream and every blocking
 * stream, like the legacy default stream. */
static void sync_blocking_streams(void) { sync_streams(1); }

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  if (n && (!dst || !src)) return ret(cudaErrorInvalidValue);
  if ((unsigned)kind > cudaMemcpyDefault) return ret(cudaErrorInvalidValue);
  if (!t_on_worker) sync_blocking_streams();
  if (n) memmove(dst, src, n);
  return cudaSuccess;
}

EXPORT cudaError_t cudaMemset(void *p, int v, size_t n) {
  if (n && !p) return ret(cudaErrorInvalidValue);
  if (!t_on_worker) sync_blocking_streams();
  if (n) memset(p, v, n);
  return cudaSuccess;
}

struct copy_args { void *dst; const void *src; size_t n; int value, is_set; };
static void copy_run(void *a_) {
  struct copy_args *a = a_;
  if (a->is_set) memset(a->dst, a->value, a->n);
  else memmove(a->dst, a->src, a->n);
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                   cudaStream_t st) {
  if (n && (!dst || !src)) return ret(cudaErrorInvalidValue);
  if ((unsigned)kind > cudaMemcpyDefault) return ret(cudaErrorInvalidValue);
  struct copy_args *a = malloc(sizeof *a);
  if (!a) return ret(cudaErrorMemoryAllocation);
  *a = (struct copy_args){dst, src, n, 0, 0};
  struct item it = {.kind = IT_FN, .fn = copy_run, .arg = a, .release = free,
                    .act = cudaDoubleActivityMemcpy, .bytes = n, .copy_kind = (int)kind};
  return submit(st, &it);
}

EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st) {
  if (n && !p) return ret(cudaErrorInvalidValue);
  struct copy_args *a = malloc(sizeof *a);
  if (!a) return ret(cudaErrorMemoryAllocation);
  *a = (struct copy_args){p, NULL, n, v, 1};
  struct item it = {.kind = IT_FN, .fn = copy_run, .arg = a, .release = free,
                    .act = cudaDoubleActivityMemset, .bytes = n};
  return submit(st, &it);
}

EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t st, cudaHostFn_t fn, void *user) {
  if (!fn) return ret(cudaErrorInvalidValue);
  struct item it = {.kind = IT_FN, .fn = fn, .arg = user};
  return submit(st, &it);
}

EXPORT cudaError_t cudaDoubleEnqueue(cudaStream_t st, void (*fn)(void *), void *arg,
                                     void (*release)(void *)) {
  if (!fn) return ret(cudaErrorInvalidValue);
  struct item it = {.kind = IT_FN, .fn = fn, .arg = arg, .release = release};
  return submit(st, &it);
}

EXPORT cudaError_t cudaDoubleCompute(cudaStream_t st, uint64_t ns) {
  return cudaDoubleLaunchKernel(st, "cudaDoubleCompute_kernel", ns);
}

EXPORT cudaError_t cudaDoubleLaunchKernel(cudaStream_t st, const char *name, uint64_t ns) {
  if (!name) return ret(cudaErrorInvalidValue);
  struct item it = {.kind = IT_COMPUTE, .aux = ns, .act = cudaDoubleActivityKernel, .name = name};
  return submit(st, &it);
}

EXPORT cudaError_t cudaDoubleEnqueueKernel(cudaStream_t st, const char *name, void (*fn)(void *),
                                           void *arg, void (*release)(void *)) {
  if (!fn || !name) return ret(cudaErrorInvalidValue);
  struct item it = {.kind = IT_FN, .fn = fn, .arg = arg, .release = release,
                    .act = cudaDoubleActivityKernel, .name = name};
  return submit(st, &it);
}

EXPORT void cudaDoubleSetActivityHook(void (*hook)(const struct cudaDoubleActivity *)) {
  atomic_store(&g_activity_hook, hook);
}

EXPORT void cudaDoubleSetTruthHook(void (*hook)(const struct cudaDoubleActivity *)) {
  atomic_store(&g_truth_hook, hook);
}

/* ---- events ---- */

static void event_unref(struct CUevent_st *e) {
  if (atomic_fetch_sub(&e->refs, 1) == 1) {
    e->magic = 0;
    stamp_unref(e->last);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
  }
}

static int event_ok(cudaEvent_t e) { return e && e->magic == EVENT_MAGIC; }

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned flags) {
  if (!pe) return ret(cudaErrorInvalidValue);
  if (flags & ~7u) return ret(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return ret(cudaErrorInvalidValue);
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) return ret(cudaErrorMemoryAllocation);
  e->magic = EVENT_MAGIC;
  e->flags = flags;
  atomic_init(&e->refs, 1);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  *pe = e;
  return cudaSuccess;
}
EXPORT cudaError_t cudaEventCreate(cudaEvent_t *pe) { return cudaEventCreateWithFlags(pe, 0); }

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!event_ok(e)) return ret(cudaErrorInvalidResourceHandle);
  event_unref(e);
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t h, unsigned flags) {
  if (!event_ok(e)) return ret(cudaErrorInvalidResourceHandle);
  cudaError_t err;
  struct CUstream_st *s = resolve(h, &err);
  if (!s) return ret(err);
  if (g_active_captures) {
    pthread_mutex_lock(&g_cap_mu);
    if (s->capture) {
      /* Recorded into a capture: the event becomes a dependency marker of that capture (for
       * cudaStreamWaitEvent joins); host queries of it now fail with cudaErrorCapturedEvent. */
      pthread_mutex_lock(&e->mu);
      e->captured = 1;
      e->cap_graph = s->capture;
      pthread_mutex_unlock(&e->mu);
      pthread_mutex_unlock(&g_cap_mu);
      return cudaSuccess;
    }
    pthread_mutex_unlock(&g_cap_mu);
  }
  struct stamp *st = calloc(1, sizeof *st);
  if (!st) return ret(cudaErrorMemoryAllocation);
  atomic_init(&st->refs, 2); /* the record item's, the event's */
  pthread_mutex_lock(&e->mu);
  uint64_t gen = ++e->rec_gen;
  e->captured = 0;
  e->cap_graph = NULL;
  struct stamp *old = e->last;
  e->last = st;
  pthread_mutex_unlock(&e->mu);
  stamp_unref(old);
  atomic_fetch_add(&e->refs, 1);
  struct item it = {.kind = IT_EVENT, .arg = e, .aux = gen, .stamp = st};
  push(s, &it);
  return cudaSuccess;
}
EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t h) {
  return cudaEventRecordWithFlags(e, h, 0);
}

EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (!event_ok(e)) return ret(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&e->mu);
  cudaError_t r = e->captured ? cudaErrorCapturedEvent
                  : e->done_gen >= e->rec_gen && cudaDoubleNowNs() >= e->t_ns ? cudaSuccess
                  : cudaErrorNotReady;
  pthread_mutex_unlock(&e->mu);
  return ret(r);
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!event_ok(e)) return ret(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&e->mu);
  if (e->captured) { pthread_mutex_unlock(&e->mu); return ret(cudaErrorCapturedEvent); }
  uint64_t gen = e->rec_gen;
  while (e->done_gen < gen) pthread_cond_wait(&e->cv, &e->mu);
  uint64_t t = e->t_ns;
  pthread_mutex_unlock(&e->mu);
  cudaDoubleSleepUntil(t);
  return cudaSuccess;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms) return ret(cudaErrorInvalidValue);
  if (!event_ok(a) || !event_ok(b)) return ret(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return ret(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&a->mu);
  int ca = a->captured, ra = a->rec_gen != 0, da = a->done_gen >= a->rec_gen;
  uint64_t ta = a->t_ns;
  pthread_mutex_unlock(&a->mu);
  pthread_mutex_lock(&b->mu);
  int cb = b->captured, rb = b->rec_gen != 0, db = b->done_gen >= b->rec_gen;
  uint64_t tb = b->t_ns;
  pthread_mutex_unlock(&b->mu);
  if (ca || cb) return ret(cudaErrorCapturedEvent);
  if (!ra || !rb) return ret(cudaErrorInvalidResourceHandle);
  uint64_t now = cudaDoubleNowNs();
  if (!da || !db || now < ta || now < tb) return ret(cudaErrorNotReady);
  *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t e, unsigned flags) {
  if (!event_ok(e)) return ret(cudaErrorInvalidResourceHandle);
  cudaError_t err;
  struct CUstream_st *s = resolve(h, &err);
  if (!s) return ret(err);
  pthread_mutex_lock(&g_cap_mu);
  pthread_mutex_lock(&e->mu);
  int captured = e->captured;
  struct CUgraph_st *g = e->cap_graph;
  uint64_t gen = e->rec_gen;
  struct stamp *st = captured ? NULL : e->last;
  if (st) atomic_fetch_add(&st->refs, 1);
  pthread_mutex_unlock(&e->mu);
  if (captured) {
    /* Waiting on an event recorded in a capture joins this stream to that capture. */
    if (!s->capture) {
      s->capture = g;
      s->capture_origin = 0;
      s->capture_invalid = 0;
    } else if (s->capture != g) {
      pthread_mutex_unlock(&g_cap_mu);
      return ret(cudaErrorStreamCaptureMerge);
    }
    pthread_mutex_unlock(&g_cap_mu);
    return cudaSuccess;
  }
  int capturing = s->capture != NULL;
  pthread_mutex_unlock(&g_cap_mu);
  if (capturing || gen == 0 || !st) stamp_unref(st);
  if (capturing) return ret(cudaErrorStreamCaptureIsolation); /* external event in capture */
  if (gen == 0 || !st) return cudaSuccess; /* never recorded: nothing to wait for */
  atomic_fetch_add(&e->refs, 1);
  struct item it = {.kind = IT_WAIT, .arg = e, .aux = gen, .stamp = st};
  push(s, &it);
  return cudaSuccess;
}

/* ---- capture and graphs ---- */

EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t h, enum cudaStreamCaptureStatus *st) {
  if (!st) return ret(cudaErrorInvalidValue);
  cudaError_t err;
  struct CUstream_st *s = resolve(h, &err);
  if (!s) return ret(err);
  pthread_mutex_lock(&g_cap_mu);
  *st = !s->capture ? cudaStreamCaptureStatusNone
        : s->capture_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  pthread_mutex_unlock(&g_cap_mu);
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t h, enum cudaStreamCaptureMode mode) {
  if (h == NULL || h == cudaStreamLegacy) return ret(cudaErrorStreamCaptureUnsupported);
  if ((unsigned)mode > cudaStreamCaptureModeRelaxed) return ret(cudaErrorInvalidValue);
  cudaError_t err;
  struct CUstream_st *s = resolve(h, &err);
  if (!s) return ret(err);
  struct CUgraph_st *g = calloc(1, sizeof *g);
  struct graph_body *b = calloc(1, sizeof *b);
  if (!g || !b) { free(g); free(b); return ret(cudaErrorMemoryAllocation); }
  atomic_init(&b->refs, 1);
  g->body = b;
  pthread_mutex_lock(&g_cap_mu);
  if (s->capture) {
    pthread_mutex_unlock(&g_cap_mu);
    free(g); free(b);
    return ret(cudaErrorIllegalState);
  }
  s->capture = g;
  s->capture_origin = 1;
  s->capture_invalid = 0;
  g_active_captures++;
  pthread_mutex_unlock(&g_cap_mu);
  return cudaSuccess;
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t h, cudaGraph_t *pg) {
  if (!pg) return ret(cudaErrorInvalidValue);
  cudaError_t err;
  struct CUstream_st *s = resolve(h, &err);
  if (!s) return ret(err);
  pthread_mutex_lock(&g_cap_mu);
  struct CUgraph_st *g = s->capture;
  if (!g || !s->capture_origin) {
    pthread_mutex_unlock(&g_cap_mu);
    return ret(cudaErrorStreamCaptureUnmatched);
  }
  int invalid = s->capture_invalid;
  pthread_mutex_lock(&g_reg_mu);
  for (struct CUstream_st *o = g_streams; o; o = o->next_all)
    if (o->capture == g) { o->capture = NULL; o->capture_origin = 0; o->capture_invalid = 0; }
  pthread_mutex_unlock(&g_reg_mu);
  g_active_captures--;
  pthread_mutex_unlock(&g_cap_mu);
  if (invalid) {
    *pg = NULL;
    cudaGraphDestroy(g);
    return ret(cudaErrorStreamCaptureInvalidated);
  }
  *pg = g;
  return cudaSuccess;
}

static void graph_body_unref(struct graph_body *b) {
  if (atomic_fetch_sub(&b->refs, 1) != 1) return;
  for (size_t i = 0; i < b->n; i++) {
    struct item *it = &b->items[i];
    if (it->kind == IT_FN && it->release) it->release(it->arg);
    if (it->kind == IT_GRAPH) graph_body_unref(it->arg);
  }
  free(b->items);
  free(b);
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  if (!g) return ret(cudaErrorInvalidValue);
  graph_body_unref(g->body);
  free(g);
  return cudaSuccess;
}

EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pe, cudaGraph_t g, unsigned long long fl) {
  if (!pe || !g) return ret(cudaErrorInvalidValue);
  struct CUgraphExec_st *x = calloc(1, sizeof *x);
  if (!x) return ret(cudaErrorMemoryAllocation);
  atomic_fetch_add(&g->body->refs, 1);
  x->body = g->body;
  *pe = x;
  return cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  if (!x) return ret(cudaErrorInvalidValue);
  graph_body_unref(x->body);
  free(x);
  return cudaSuccess;
}

EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t st) {
  if (!x) return ret(cudaErrorInvalidValue);
  atomic_fetch_add(&x->body->refs, 1);
  struct item it = {.kind = IT_GRAPH, .arg = x->body};
  cudaError_t e = submit(st, &it);
  if (e != cudaSuccess) graph_body_unref(x->body);
  return e;
}

/* ---- the worker's side ---- */

/* Replays a graph's nodes in order; each node counts as enqueued at the launch (`enq_ns`).
 * Returns the device end of the last one. */
static uint64_t run_graph(struct CUstream_st *s, struct graph_body *b, uint64_t enq_ns) {
  uint64_t end = atomic_load(&s->free_at);
  for (size_t i = 0; i < b->n; i++) {
    struct item it = b->items[i];
    it.release = NULL; /* the graph keeps owning its nodes */
    it.enq_ns = enq_ns;
    if (it.kind == IT_GRAPH) {
      atomic_fetch_add(&((struct graph_body *)it.arg)->refs, 1);
    }
    end = run_item(s, &it);
  }
  return end;
}

/* Modelled duration of a copy or set of `bytes` (see BW_*). */
static uint64_t copy_ns(const struct item *it) {
  double bw = it->act == cudaDoubleActivityMemset ? BW_HBM_SET
              : it->copy_kind == cudaMemcpyDeviceToDevice || it->copy_kind == cudaMemcpyDefault
                  ? BW_HBM_COPY
                  : BW_PCIE;
  return (uint64_t)((double)it->bytes / bw + 0.5);
}

/* Runs one item on the stream's device clock: it starts at max(stream free, its enqueue time)
 * (an event wait also after the event's time), does its real work and ends when its model says;
 * the stream is free from then. A kernel, copy or set is reported to the activity hook and the
 * truth hook (those set) with its device start and end. Returns the end. */
static uint64_t run_item(struct CUstream_st *s, struct item *it) {
  uint64_t start = max64(atomic_load(&s->free_at), it->enq_ns), end = start;
  uint32_t corr = it->act ? atomic_fetch_add(&g_next_correlation, 1) : 0;
  switch (it->kind) {
  case IT_FN:
    if (it->act == cudaDoubleActivityNone) {
      /* a host function: the host sees it run when the device reaches it, and the stream
       * waits for it to return (or, double-only, resumes at the end it declared) */
      cudaDoubleSleepUntil(start);
      t_item_start = t_item_end = start;
      t_item_declared = 0;
      it->fn(it->arg);
      end = t_item_declared ? t_item_end : max64(start, cudaDoubleNowNs());
      t_item_start = t_item_end = 0;
    } else {
      t_item_start = t_item_end = start;
      it->fn(it->arg);
      end = it->act == cudaDoubleActivityKernel ? max64(start, t_item_end) : start + copy_ns(it);
      t_item_start = t_item_end = 0;
    }
    if (it->release) it->release(it->arg);
    break;
  case IT_COMPUTE:
    end = start + it->aux;
    break;
  case IT_EVENT: { /* not reached from the ring (worker_main records events); kept for graphs */
    struct CUevent_st *e = it->arg;
    pthread_mutex_lock(&e->mu);
    if (it->aux > e->done_gen) { e->done_gen = it->aux; e->t_ns = start; }
    if (it->stamp) { it->stamp->t_ns = start; it->stamp->done = 1; }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    stamp_unref(it->stamp);
    event_unref(e);
    break;
  }
  case IT_WAIT: {
    struct CUevent_st *e = it->arg;
    pthread_mutex_lock(&e->mu);
    while (!it->stamp->done) pthread_cond_wait(&e->cv, &e->mu);
    end = start = max64(start, it->stamp->t_ns);
    pthread_mutex_unlock(&e->mu);
    stamp_unref(it->stamp);
    event_unref(e);
    break;
  }
  case IT_GRAPH:
    atomic_store(&s->free_at, start);
    end = max64(start, run_graph(s, it->arg, it->enq_ns));
    graph_body_unref(it->arg);
    break;
  case IT_STOP:
    break;
  }
  atomic_store(&s->free_at, end);
  if (it->act) {
    void (*hook)(const struct cudaDoubleActivity *) = atomic_load(&g_activity_hook);
    void (*truth)(const struct cudaDoubleActivity *) = atomic_load(&g_truth_hook);
    struct cudaDoubleActivity a = {.kind = it->act, .name = it->name, .device = s->dev,
                                   .stream_id = s->id, .bytes = it->bytes, .copy_kind = it->copy_kind,
                                   .correlation_id = corr, .start_ns = start, .end_ns = end};
    if (hook) hook(&a);
    if (truth) truth(&a);
  }
  return end;
}

/* ---- errors ---- */

EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
EXPORT cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

static const struct { cudaError_t e; const char *name, *str; } k_errors[] = {
  {cudaSuccess, "cudaSuccess", "no error"},
  {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
  {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
  {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
  {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
  {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
  {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
  {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
  {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
  {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
  {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
  {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
  {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
  {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
  {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
  {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
  {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
  {cudaErrorCapturedEvent, "cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
  {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
};

EXPORT const char *cudaGetErrorString(cudaError_t e) {
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].e == e) return k_errors[i].str;
  return "unrecognized error code";
}
EXPORT const char *cudaGetErrorName(cudaError_t e) {
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].e == e) return k_errors[i].name;
  return "cudaErrorUnknown";
}
