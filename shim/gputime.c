/* gputime.c — GPU timing of collectives and point-to-point calls with CUDA events.
 *
 * Contract:
 *   - Uses only the CUDA runtime the application already loaded: a libcudart.so* found with
 *     dl_iterate_phdr and reopened with RTLD_NOLOAD (never a second runtime: PyTorch ships its
 *     own), else cuda* symbols already in the global scope. None, or no device: host timing
 *     only (PROCESS key `timing` = host), and nothing here ever runs.
 *   - Per NCCL call outside a group: cudaStreamIsCapturing, then one event recorded on the
 *     call's stream before the launch and one after (at most 2 event records, 3 CUDA calls,
 *     no synchronisation). A capturing stream gets the CALL's captured flag and no event.
 *     Inside ncclGroupStart/End a member costs one cudaStreamIsCapturing; at the outermost
 *     GroupEnd one event pair per stream used by the group (up to 8) times the group.
 *   - Events come from a per-thread pool of slots (start/end pair, created once per device
 *     and reused). The thread claims slots in order; a slot still pending (its events not yet
 *     complete) means the pool is full: the call is recorded without GPU time and counted
 *     (DROP reason 5). No allocation after the thread's first timed call, no lock.
 *   - The writer thread collects completions with cudaEventQuery (the "gputime" collector's
 *     poll, hooks.h), never waiting on an application stream, and hands GPU_TIME records to
 *     the writer (ncs_writer_put_gpu_time); a pass that fills the chunk to its flush size has
 *     it written outside the fork gate and goes on (poll_once). At exit it waits at most
 *     the given time for pending events; the rest are reported with the failed flag.
 *   - Clock: the writer keeps, per device, anchor events recorded on its own stream and
 *     synchronised (only the writer waits), with the host monotonic time read just before the
 *     record and just after the sync. A GPU time is anchor_host + elapsed(anchor, event),
 *     against the anchor nearest to the event's record, made when it converts an event that
 *     has none within 500 ms (never in an idle process). anchor_host is the host time just before the
 *     anchor's record, an underestimate by at most the record-to-sync bracket; it is lifted
 *     when a start event would otherwise precede the host time of its own record (causality).
 *     Error bound: the bracket (kept under 50 us, usually a few us) plus the event timer's
 *     resolution (about 0.5 us on NVIDIA GPUs); see docs/SHIM.md.
 *   - If an application error was pending (cudaPeekAtLastError) the call is not timed, and an
 *     error caused by the shim's own CUDA call is cleared, so cudaGetLastError is unchanged.
 *   - A forked child does not use CUDA (a CUDA context does not survive fork): timing off. */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks.h"
#include "internal.h"

typedef int cuda_err;
typedef struct CUevent_st *cuda_event;
#define CUDA_SUCCESS 0
#define CUDA_NOT_READY 600
#define CAPTURE_NONE 0

static struct {
  cuda_err (*event_create)(cuda_event *, unsigned);
  cuda_err (*event_record)(cuda_event, cudaStream_t);
  cuda_err (*event_query)(cuda_event);
  cuda_err (*event_sync)(cuda_event);
  cuda_err (*elapsed)(float *, cuda_event, cuda_event);
  cuda_err (*event_destroy)(cuda_event);
  cuda_err (*is_capturing)(cudaStream_t, int *);
  cuda_err (*get_device)(int *);
  cuda_err (*set_device)(int);
  cuda_err (*stream_create)(cudaStream_t *, unsigned);
  cuda_err (*peek_error)(void);
  cuda_err (*get_error)(void);
} cu;


/* ---- per-thread event pools ---- */
#define POOL_SLOTS 4096
#define GROUP_STREAMS 8
enum { SLOT_FREE = 0, SLOT_RECORDING = 1, SLOT_PENDING = 2 };
struct slot {
  _Atomic int state;
  int dev_1;              /* 1 + the device the events were created on, 0 none yet (a
                           * calloc'ed pool needs no pass over its 80 pages: ~1 ms of the
                           * first timed call's CPU on the development VM) */
  cuda_event start, end;
  cudaStream_t stream;
  uint32_t kind, thread, flags;
  uint64_t ref;
  struct ncs_ring *ring;  /* the CALL's ring and its position: GPU_TIME waits for the CALL */
  uint64_t ring_pos;
  uint64_t host_before;   /* host time just before the start event was recorded */
};
struct ncs_gpu_group {   /* one per thread that made a timed call */
  uint64_t next;
  /* CUDA calls the shim made on this thread, NCCL calls timed: written by the owner thread only
   * (a relaxed load and store, no locked add), read by ncs_gpu_counts from another thread */
  _Atomic uint64_t cuda_calls, timed_calls;
  int group_n, group_tokens[GROUP_STREAMS];
  cudaStream_t group_streams[GROUP_STREAMS];
  int group_devs[GROUP_STREAMS];
  struct slot slots[POOL_SLOTS];
};
#define MAX_POOLS NCS_MAX_THREADS
static struct ncs_gpu_group *_Atomic pools[MAX_POOLS];
static _Atomic int npools;

/* Adds n to a counter only its owner thread writes. */
static inline void owner_add(_Atomic uint64_t *c, uint64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* Counts n CUDA calls made by the shim on the calling (application) thread. */
static inline void app_cuda(int n) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (p) owner_add(&p->cuda_calls, (uint64_t)n);
}

static int gpu_init(void) {
  if (ncs_gpu_on) return 1;
  void *h = ncs_loaded_handle("libcudart.so"); /* the application's runtime, never a new one */
  if (!h) h = RTLD_DEFAULT;
  ncs_gate_enter();
#define SYM(field, name) (*(void **)&cu.field = dlsym(h, name))
  int ok = SYM(event_create, "cudaEventCreateWithFlags") && SYM(event_record, "cudaEventRecord") &&
           SYM(event_query, "cudaEventQuery") && SYM(event_sync, "cudaEventSynchronize") &&
           SYM(elapsed, "cudaEventElapsedTime") && SYM(event_destroy, "cudaEventDestroy") &&
           SYM(is_capturing, "cudaStreamIsCapturing") && SYM(get_device, "cudaGetDevice") &&
           SYM(set_device, "cudaSetDevice") && SYM(stream_create, "cudaStreamCreateWithFlags") &&
           SYM(peek_error, "cudaPeekAtLastError") && SYM(get_error, "cudaGetLastError");
#undef SYM
  ncs_gate_leave();
  if (!ok) {
    ncs_debug("no CUDA runtime loaded: host timing only");
    return 0;
  }
  int dev = -1;
  if (cu.peek_error() != CUDA_SUCCESS || cu.get_device(&dev) != CUDA_SUCCESS || dev < 0) {
    cu.get_error(); /* the probe's own error, if any; the app had none pending (peek) */
    ncs_debug("CUDA runtime present but no usable device: host timing only");
    return 0;
  }
  ncs_gpu_on = 1;
  return 1;
}

/* The calling thread's pool, created at its first timed call. */
static struct ncs_gpu_group *pool_get(void) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (NCS_LIKELY(p != NULL)) return p;
  int i = atomic_fetch_add(&npools, 1);
  if (i >= MAX_POOLS) return NULL; /* later calls of this thread retry; counted as pool drops */
  p = calloc(1, sizeof *p);
  if (!p) return NULL;
  atomic_store_explicit(&pools[i], p, memory_order_release);
  ncs_tls.gpu = p;
  return p;
}

static int current_device(void) {
  int d = -1;
  app_cuda(1);
  if (cu.get_device(&d) != CUDA_SUCCESS) { cu.get_error(); return -1; }
  return d;
}
int ncs_gpu_current_device(void) { return ncs_gpu_on ? current_device() : -1; }

/* (Re)creates a slot's events on `dev` (events belong to the device current at creation;
 * recording them later needs no particular current device). Rare: once per slot and device. */
static int create_pair(struct slot *s, int dev) {
  if (s->dev_1 > 0) { cu.event_destroy(s->start); cu.event_destroy(s->end); }
  s->dev_1 = 0;
  int cur = current_device(), rc = -1;
  if (dev >= 0 && cur != dev && cu.set_device(dev) != CUDA_SUCCESS) { cu.get_error(); return -1; }
  app_cuda(2);
  if (cu.event_create(&s->start, 0) == CUDA_SUCCESS) {
    if (cu.event_create(&s->end, 0) == CUDA_SUCCESS) rc = 0;
    else cu.event_destroy(s->start);
  }
  if (rc) cu.get_error();
  if (dev >= 0 && cur >= 0 && cur != dev) cu.set_device(cur);
  if (rc == 0) s->dev_1 = dev + 1;
  return rc;
}

/* Claims the next slot and records its start event on `stream`; returns the slot index. */
static int slot_start(struct ncs_gpu_group *p, cudaStream_t stream, int dev) {
  struct slot *s = &p->slots[p->next % POOL_SLOTS];
  if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_FREE) {
    ncs_writer_count_drop(NCS_DROP_EVENT_POOL, 1);
    return -1;
  }
  if (dev < 0) dev = current_device();
  if (s->dev_1 != dev + 1 && create_pair(s, dev) != 0) return -1;
  s->host_before = ncs_now_ns();
  app_cuda(1);
  if (cu.event_record(s->start, stream) != CUDA_SUCCESS) { cu.get_error(); return -1; }
  s->stream = stream;
  atomic_store_explicit(&s->state, SLOT_RECORDING, memory_order_relaxed);
  int idx = (int)(p->next % POOL_SLOTS);
  p->next++;
  if ((p->next & (POOL_SLOTS / 4 - 1)) == 0) { /* the writer frees slots: a sleeping one is woken */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&ncs_writer_sleeping, memory_order_relaxed)) ncs_writer_wake();
  }
  return idx;
}

static void slot_finish(struct ncs_gpu_group *p, int idx, uint32_t kind, uint32_t thread, uint64_t ref,
                        int failed) {
  struct slot *s = &p->slots[idx];
  s->kind = kind;
  s->thread = thread;
  s->ref = ref;
  s->flags = failed ? NCS_GPU_F_FAILED : 0;
  s->ring = ncs_tls.ring;
  s->ring_pos = s->ring ? atomic_load_explicit(&s->ring->head, memory_order_relaxed) : 0;
  app_cuda(1);
  if (cu.event_record(s->end, s->stream) != CUDA_SUCCESS) { cu.get_error(); s->flags = NCS_GPU_F_FAILED; }
  atomic_store_explicit(&s->state, SLOT_PENDING, memory_order_release);
}

/* 1 when the stream is capturing (flag set), 0 when it can be timed, -1 when not timeable. */
static int capture_check(cudaStream_t stream, uint32_t *flags) {
  struct ncs_gpu_group *p = pool_get();
  if (p) owner_add(&p->timed_calls, 1);
  app_cuda(2);
  if (cu.peek_error() != CUDA_SUCCESS) return -1; /* the app has an error pending: hands off */
  int st = CAPTURE_NONE;
  if (cu.is_capturing(stream, &st) != CUDA_SUCCESS) { cu.get_error(); return -1; }
  if (st != CAPTURE_NONE) { *flags |= NCS_CALL_F_CAPTURED; return 1; }
  return 0;
}

int ncs_gpu_before(cudaStream_t stream, int dev, uint32_t *flags) {
  if (capture_check(stream, flags) != 0) return -1;
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (!p) { ncs_writer_count_drop(NCS_DROP_EVENT_POOL, 1); return -1; }
  return slot_start(p, stream, dev);
}

void ncs_gpu_after(int token, uint32_t thread, uint64_t ref, int failed) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (p && token >= 0) slot_finish(p, token, NCS_GPU_KIND_CALL, thread, ref, failed);
}

void ncs_gpu_group_member(cudaStream_t stream, int dev, uint32_t *flags) {
  if (capture_check(stream, flags) != 0) return;
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (!p) return;
  for (int i = 0; i < p->group_n; i++)
    if (p->group_streams[i] == stream) return;
  if (p->group_n == GROUP_STREAMS) { ncs_writer_count_drop(NCS_DROP_EVENT_POOL, 1); return; }
  p->group_streams[p->group_n] = stream;
  p->group_devs[p->group_n] = dev;
  p->group_n++;
}

void ncs_gpu_group_before(void) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (!p) return;
  for (int i = 0; i < p->group_n; i++) p->group_tokens[i] = slot_start(p, p->group_streams[i], p->group_devs[i]);
}

void ncs_gpu_group_after(uint32_t thread, uint64_t group, int failed) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (!p) return;
  for (int i = 0; i < p->group_n; i++)
    if (p->group_tokens[i] >= 0) slot_finish(p, p->group_tokens[i], NCS_GPU_KIND_GROUP, thread, group, failed);
  p->group_n = 0;
}

void ncs_gpu_group_forget(void) {
  struct ncs_gpu_group *p = ncs_tls.gpu;
  if (p) p->group_n = 0;
}

/* ---- writer side ---- */
/* Anchors: per device, the last ANCHORS (host time, event) pairs. An event is converted
 * against the anchor nearest to it in time, before or after it (an elapsed time of either
 * sign); when none is within ANCHOR_EVERY_NS of it, a new one is made first, if that one is
 * nearer (anchor_for). So anchors are made only for events to convert: at most one per
 * ANCHOR_EVERY_NS of calls, none in an idle process (each is a record and a synchronisation,
 * up to 5 times), and the first calls after a pause get one at their conversion, a writer
 * pass after them. The elapsed times stay under ANCHOR_EVERY_NS, or the time from a call to
 * its conversion: float milliseconds precise to well under a microsecond. */
#define MAX_DEVS 64
#define ANCHORS 4
#define ANCHOR_EVERY_NS 500000000ull
struct anchor {
  int ok;
  cuda_event ev;
  uint64_t host_ns, bracket_ns;
  uint64_t lift;  /* causality correction: no GPU start before the host recorded its event */
};
static struct anchor_set {
  cudaStream_t stream;
  unsigned n;                 /* anchors made so far; a[(n - 1) % ANCHORS] is the newest */
  int broken;                 /* the device refused: no anchors, its GPU times fail */
  struct anchor a[ANCHORS];
} anchors[MAX_DEVS];

/* Records a new anchor on `dev`. 0, or -1 when the device cannot give one. */
static int anchor_new(int dev) {
  struct anchor_set *as = &anchors[dev];
  if (as->broken) return -1;
  if (!as->stream) {
    if (cu.set_device(dev) != CUDA_SUCCESS ||
        cu.stream_create(&as->stream, 1 /* non-blocking */) != CUDA_SUCCESS) {
      as->stream = NULL;
      as->broken = 1;
      return -1;
    }
  }
  struct anchor *a = &as->a[as->n % ANCHORS];
  if (!a->ev) {
    if (cu.set_device(dev) != CUDA_SUCCESS || cu.event_create(&a->ev, 0) != CUDA_SUCCESS) {
      a->ev = NULL;
      return -1;
    }
  }
  /* The event cannot complete before its record call began and, on an idle stream, completes
   * right after it: t0 is the estimate, the bracket t1 - t0 bounds the error. Up to 5 tries
   * until the bracket is under 50 us (a busy host can delay the sync's wake-up). */
  uint64_t t0 = 0, t1 = 0;
  a->ok = 0;
  for (int k = 0; k < 5; k++) {
    t0 = ncs_now_ns();
    if (cu.event_record(a->ev, as->stream) != CUDA_SUCCESS) return -1;
    if (cu.event_sync(a->ev) != CUDA_SUCCESS) return -1;
    t1 = ncs_now_ns();
    if (t1 - t0 < 50000) break;
  }
  a->host_ns = t0;
  a->bracket_ns = t1 - t0;
  a->lift = 0;
  a->ok = 1;
  as->n++;
  ncs_debug("GPU clock anchor %u on device %d: bracket %llu ns", as->n, dev, (unsigned long long)a->bracket_ns);
  return 0;
}

/* The anchor for an event whose start was recorded at host time `host_before` (writer thread,
 * after that record): the nearest one, made now when none is within ANCHOR_EVERY_NS and a new
 * one would be nearer (so two made for events are at least ANCHOR_EVERY_NS apart); NULL when
 * the device gives none. */
static struct anchor *anchor_for(int dev, uint64_t host_before) {
  if (dev < 0 || dev >= MAX_DEVS) return NULL;
  struct anchor_set *as = &anchors[dev];
  struct anchor *best = NULL;
  uint64_t best_gap = UINT64_MAX;
  for (int k = 0; k < ANCHORS; k++) {
    struct anchor *a = &as->a[k];
    uint64_t gap = a->host_ns > host_before ? a->host_ns - host_before : host_before - a->host_ns;
    if (a->ok && gap < best_gap) {
      best = a;
      best_gap = gap;
    }
  }
  if (best_gap > ANCHOR_EVERY_NS && ncs_now_ns() - host_before < best_gap && anchor_new(dev) == 0)
    best = &as->a[(as->n - 1) % ANCHORS];
  return best;
}

static uint64_t to_host(const struct anchor *a, cuda_event e, int *ok) {
  float ms = 0;
  if (cu.elapsed(&ms, a->ev, e) != CUDA_SUCCESS) { *ok = 0; return 0; }
  double ns = (double)a->host_ns + (double)ms * 1e6;
  return ns > 0 ? (uint64_t)ns : 0;
}

/* Hands the slot's GPU_TIME to the writer; -1 when the chunk has no room (next poll). */
static int emit_slot(struct slot *s, int failed) {
  struct ncs_gpu_time g = {.kind = s->kind, .thread = s->thread, .ref = s->ref, .flags = s->flags};
  if (failed) g.flags |= NCS_GPU_F_FAILED;
  if (!(g.flags & NCS_GPU_F_FAILED)) {
    struct anchor *a = anchor_for(s->dev_1 - 1, s->host_before);
    int ok = a != NULL;
    if (ok) g.gpu_start = to_host(a, s->start, &ok);
    if (ok) g.gpu_end = to_host(a, s->end, &ok);
    if (ok) {
      /* t0 underestimates the anchor's completion by up to its bracket; a start that lands
       * before the host even recorded the event shows by how much: lift by the worst seen */
      if (g.gpu_start + a->lift < s->host_before && s->host_before - g.gpu_start <= a->bracket_ns)
        a->lift = s->host_before - g.gpu_start;
      g.gpu_start += a->lift;
      g.gpu_end += a->lift;
      if (g.gpu_end < g.gpu_start) g.gpu_end = g.gpu_start;
      g.gpu_start = ncs_gpu_round(g.gpu_start); /* the stored resolution (format.h) */
      g.gpu_end = ncs_gpu_round(g.gpu_end);
    }
    if (!ok) { g.flags |= NCS_GPU_F_FAILED; g.gpu_start = g.gpu_end = 0; }
  }
  return ncs_writer_put_gpu_time(&g);
}

static void emit_inflight(struct slot *s, uint64_t now);

/* One pass over every pool; returns how many slots are still pending. The writer's CUDA calls
 * are inside the fork gate (the runtime's locks; anchor_new's too), its sleeps outside. */
static int chunk_full; /* writer thread: the last pass stopped at the chunk's flush size */
static int poll_once_gated(int give_up) {
  int pending = 0, n = atomic_load(&npools);
  chunk_full = 0;
  if (n > MAX_POOLS) n = MAX_POOLS;
  for (int i = 0; i < n; i++) {
    struct ncs_gpu_group *p = atomic_load_explicit(&pools[i], memory_order_acquire);
    if (!p) continue;
    for (int k = 0; k < POOL_SLOTS; k++) {
      struct slot *s = &p->slots[k];
      if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_PENDING) continue;
      if (s->ring && !give_up && atomic_load_explicit(&s->ring->tail, memory_order_acquire) < s->ring_pos) {
        pending++; /* its CALL is not written yet */
        continue;
      }
      cuda_err e = cu.event_query(s->end);
      if (e == CUDA_NOT_READY && !give_up) { pending++; continue; }
      if (e == CUDA_NOT_READY) emit_inflight(s, ncs_now_ns()); /* never finished */
      if (emit_slot(s, e != CUDA_SUCCESS) != 0) { chunk_full = 1; return pending + 1; } /* the chunk is full */
      atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
    }
  }
  return pending;
}
/* A pass that fills the chunk to its flush size has it written, outside the fork gate (a fork
 * never waits for a write), and goes on: the GPU times of one pass are split over chunks as
 * the writer splits its queue. At most 64 chunks a call (4096 slots a thread: a pass holds a
 * few hundred KiB of records). */
static int poll_once(int give_up) {
  int pending = 0;
  for (int k = 0; k < 64; k++) {
    ncs_gate_enter();
    pending = poll_once_gated(give_up);
    ncs_gate_leave();
    if (!chunk_full) break;
    ncs_writer_flush_full();
  }
  return pending;
}

/* Returns how many calls are still pending. */
static int gpu_poll(unsigned drain_ms) {
  if (!ncs_gpu_on) return 0;
  int pending = poll_once(0);
  if (!drain_ms || !pending) return pending;
  uint64_t deadline = ncs_now_ns() + (uint64_t)drain_ms * 1000000ull;
  while (pending && ncs_now_ns() < deadline) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pending = poll_once(0);
  }
  if (pending) poll_once(1); /* report what never completed as failed */
  return 0;
}

/* A pending slot as an INFLIGHT record: since when its work runs on the GPU (its start event
 * completed), 0 when it has not started yet. */
static void emit_inflight(struct slot *s, uint64_t now) {
  struct ncs_inflight f = {.kind = NCS_INFLIGHT_GPU, .thread = s->thread, .tcall = s->ref, .key = s->kind,
                           .datatype = 255, .root = -1, .t_enter = s->host_before, .t_seen = now};
  if (!(s->flags & NCS_GPU_F_FAILED) && cu.event_query(s->start) == CUDA_SUCCESS) {
    struct anchor *a = anchor_for(s->dev_1 - 1, s->host_before);
    int ok = a != NULL;
    uint64_t t = ok ? to_host(a, s->start, &ok) : 0;
    if (ok) f.gpu_since = t + a->lift;
  }
  ncs_writer_put_inflight(&f);
}

/* Writer, at the end of every chunk: every timed call already written whose GPU work has not
 * finished, at most INFLIGHT_PER_POOL per thread (the first slots of its pool). */
#define INFLIGHT_PER_POOL 32
static void gpu_inflight_gated(uint64_t now);
static void gpu_inflight(uint64_t now) {
  if (!ncs_gpu_on) return;
  ncs_gate_enter(); /* CUDA calls (event query, elapsed time): inside the fork gate */
  gpu_inflight_gated(now);
  ncs_gate_leave();
}
static void gpu_inflight_gated(uint64_t now) {
  int n = atomic_load(&npools);
  if (n > MAX_POOLS) n = MAX_POOLS;
  for (int i = 0; i < n; i++) {
    struct ncs_gpu_group *p = atomic_load_explicit(&pools[i], memory_order_acquire);
    if (!p) continue;
    int listed = 0;
    for (int k = 0; k < POOL_SLOTS && listed < INFLIGHT_PER_POOL; k++) {
      struct slot *s = &p->slots[k];
      if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_PENDING) continue;
      if (s->ring && atomic_load_explicit(&s->ring->tail, memory_order_acquire) < s->ring_pos) continue;
      emit_inflight(s, now);
      listed++;
    }
  }
}

void ncs_gpu_counts(uint64_t *cuda_calls, uint64_t *timed_calls) {
  *cuda_calls = *timed_calls = 0;
  int n = atomic_load(&npools);
  for (int i = 0; i < n && i < MAX_POOLS; i++) {
    struct ncs_gpu_group *p = atomic_load(&pools[i]);
    if (!p) continue;
    *cuda_calls += atomic_load_explicit(&p->cuda_calls, memory_order_relaxed);
    *timed_calls += atomic_load_explicit(&p->timed_calls, memory_order_relaxed);
  }
}

static void gpu_atfork_child(void) {
  ncs_gpu_on = 0;
  atomic_store(&npools, 0);
  for (int i = 0; i < MAX_POOLS; i++) atomic_store(&pools[i], NULL);
  memset(anchors, 0, sizeof anchors);
}

static void gpu_start(void) {
  if (ncs_cfg.gpu_timing) gpu_init();
}
/* calls pending: the writer comes back within 10 ms; many: in 1 ms */
static int gpu_poll_hook(unsigned wait_ms) {
  int pending = gpu_poll(wait_ms);
  return pending > 256 ? 2 : pending > 0;
}

NCS_COLLECTOR ncs_gputime_collector = {
  .name = "gputime", .start = gpu_start, .poll = gpu_poll_hook, .atfork_child = gpu_atfork_child,
  .inflight = gpu_inflight};
