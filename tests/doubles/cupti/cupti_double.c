/* cupti_double.c — CPU double of CUPTI's activity API (libcupti.so.13): kernel, memcpy and
 * memset activity records of the CUDA double's stream workers, in buffers the client supplies.
 *
 * Contract: the exported cupti* functions keep CUPTI 13's names, prototypes, result codes and
 * record layouts (include/ncclscope/cupti_abi.h, proven against the real headers by
 * tests/test_cupti_abi.c). Modelled as the real library behaves:
 *   - cuptiActivityEnable of a kernel, memcpy or memset kind makes every such item the CUDA
 *     double runs afterwards produce one record (CUpti_ActivityKernel10 / Memcpy6 / Memset4
 *     layout, zero where the double has nothing to say), time-stamped in CLOCK_REALTIME ns
 *     as CUPTI does on Linux (cuptiGetTimestamp reads the same clock; see clock_off). Other kinds are accepted
 *     and produce nothing.
 *   - Kernel names belong to the library (copied once, kept for the process): a record's name
 *     stays valid after the module that launched the kernel is unloaded.
 *   - Records go into the buffer the client's request callback gave; a full buffer is handed to
 *     the completion callback on the thread that filled it (a stream worker: as CUPTI's own
 *     thread does, never the application's); cuptiActivityFlushAll hands over the partly
 *     filled one and any full ones on the calling thread. No buffer (the callback declined, or
 *     none registered): the record is dropped and counted (cuptiActivityGetNumDroppedRecords).
 *     Callbacks run with no CUPTI lock held, so they may call CUPTI (not FlushAll).
 *   - cuptiActivityRegisterCallbacks replaces the previous pair; buffers already given are
 *     completed to whichever pair is registered when they are handed over.
 *   - One subscriber at a time: a second cuptiSubscribe, or any while CUDA_INJECTION64_PATH is
 *     set (an injected tool such as Nsight holds CUPTI), gets
 *     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. Callback domains are not modelled.
 *   - A forked child starts with nothing enabled and no callbacks (CUDA does not survive fork).
 * Thread-safe. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "include/cuda_double.h"
#include "ncclscope/cupti_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_KIND 64
#define MAX_FULL 64

struct full { uint8_t *buf; size_t size, used; };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static ncs_cupti_buffer_requested_fn g_requested;
static ncs_cupti_buffer_completed_fn g_completed;
static int g_enabled[MAX_KIND];
static uint8_t *g_buf;           /* the buffer being filled */
static size_t g_size, g_used, g_max_records, g_records;
static struct full g_full[MAX_FULL];
static size_t g_nfull;
static size_t g_dropped;
static int g_subscribed;
static struct CUpti_Subscriber_st { int unused; } g_subscriber;

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI's clock: CLOCK_MONOTONIC plus CLOCK_REALTIME's offset from it, taken once per process
 * from the tightest of 8 bracketed reads, so records and cuptiGetTimestamp share one exact
 * mapping (a per-record pair of reads would carry a preempted reader's error into a record). */
static uint64_t g_clock_off;
static pthread_once_t g_clock_once = PTHREAD_ONCE_INIT;
static void clock_init(void) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = cudaDoubleNowNs(), r = realtime_ns(), b = cudaDoubleNowNs();
    if (b - a < best) { best = b - a; g_clock_off = r - (a + (b - a) / 2); }
  }
}
static uint64_t clock_off(void) {
  pthread_once(&g_clock_once, clock_init);
  return g_clock_off;
}

static size_t record_size(uint32_t kind) {
  switch (kind) {
  case NCS_CUPTI_KIND_KERNEL: case NCS_CUPTI_KIND_CONCURRENT_KERNEL: return NCS_CUPTI_KERNEL10_SIZE;
  case NCS_CUPTI_KIND_MEMCPY: return NCS_CUPTI_MEMCPY6_SIZE;
  case NCS_CUPTI_KIND_MEMSET: return NCS_CUPTI_MEMSET4_SIZE;
  default: return 0;
  }
}

/* Moves the buffer being filled to the full list (g_mu held). */
static void retire_current(void) {
  if (!g_buf) return;
  if (g_nfull < MAX_FULL) g_full[g_nfull++] = (struct full){g_buf, g_size, g_used};
  g_buf = NULL;
  g_size = g_used = g_records = g_max_records = 0;
}

/* Hands every full buffer to the completion callback, without g_mu held. */
static void deliver(void) {
  for (;;) {
    pthread_mutex_lock(&g_mu);
    if (!g_nfull) { pthread_mutex_unlock(&g_mu); return; }
    struct full f = g_full[0];
    memmove(g_full, g_full + 1, --g_nfull * sizeof *g_full);
    ncs_cupti_buffer_completed_fn done = g_completed;
    pthread_mutex_unlock(&g_mu);
    if (done) done(NULL, 0, f.buf, f.size, f.used);
  }
}

/* Appends one record of `size` bytes; asks the client for a buffer when needed. */
static void append(const void *rec, size_t size) {
  pthread_mutex_lock(&g_mu);
  if (g_buf && (g_used + size > g_size || (g_max_records && g_records >= g_max_records))) retire_current();
  if (!g_buf) {
    ncs_cupti_buffer_requested_fn req = g_requested;
    uint8_t *b = NULL;
    size_t sz = 0, maxr = 0;
    if (req && g_nfull < MAX_FULL) {
      pthread_mutex_unlock(&g_mu);
      req(&b, &sz, &maxr);
      pthread_mutex_lock(&g_mu);
      if (b && g_buf) retire_current(); /* another worker got one meanwhile: keep the order simple */
    }
    if (!b || sz < size || ((uintptr_t)b & 7u)) {
      g_dropped++;
      pthread_mutex_unlock(&g_mu);
      if (b) { /* unusable: hand it straight back */
        pthread_mutex_lock(&g_mu);
        if (g_nfull < MAX_FULL) g_full[g_nfull++] = (struct full){b, sz, 0};
        pthread_mutex_unlock(&g_mu);
      }
      deliver();
      return;
    }
    g_buf = b; g_size = sz; g_used = 0; g_records = 0; g_max_records = maxr;
  }
  memcpy(g_buf + g_used, rec, size);
  g_used += size;
  g_records++;
  int have_full = g_nfull > 0;
  pthread_mutex_unlock(&g_mu);
  if (have_full) deliver();
}

/* CUPTI owns the names its records point to (they outlive the module that launched the
 * kernel, e.g. a dlclose'd NCCL): interned here, never freed. */
struct name_ent { struct name_ent *next; char s[]; };
static struct name_ent *g_names;
static const char *intern(const char *name) {
  if (!name) return NULL;
  pthread_mutex_lock(&g_mu);
  struct name_ent *e = g_names;
  while (e && strcmp(e->s, name)) e = e->next;
  if (!e && (e = malloc(sizeof *e + strlen(name) + 1)) != NULL) {
    strcpy(e->s, name);
    e->next = g_names;
    g_names = e;
  }
  pthread_mutex_unlock(&g_mu);
  return e ? e->s : NULL;
}

static void on_activity(const struct cudaDoubleActivity *a) {
  uint64_t off = clock_off(); /* CLOCK_MONOTONIC -> CUPTI's clock */
  union { uint8_t bytes[NCS_CUPTI_KERNEL10_SIZE]; struct ncs_cupti_kernel k; struct ncs_cupti_memcpy c;
          struct ncs_cupti_memset m; uint64_t align; } r;
  memset(&r, 0, sizeof r);
  uint32_t kind;
  pthread_mutex_lock(&g_mu);
  int kern = g_enabled[NCS_CUPTI_KIND_CONCURRENT_KERNEL] ? NCS_CUPTI_KIND_CONCURRENT_KERNEL
             : g_enabled[NCS_CUPTI_KIND_KERNEL] ? NCS_CUPTI_KIND_KERNEL : 0;
  int cpy = g_enabled[NCS_CUPTI_KIND_MEMCPY], set = g_enabled[NCS_CUPTI_KIND_MEMSET];
  pthread_mutex_unlock(&g_mu);
  switch (a->kind) {
  case cudaDoubleActivityKernel:
    if (!kern) return;
    kind = (uint32_t)kern;
    r.k = (struct ncs_cupti_kernel){.kind = kind, .start = a->start_ns + off, .end = a->end_ns + off,
                                    .completed = a->end_ns + off, .device_id = (uint32_t)a->device,
                                    .context_id = (uint32_t)a->device + 1, .stream_id = a->stream_id,
                                    .grid_x = 1, .grid_y = 1, .grid_z = 1, .block_x = 1, .block_y = 1,
                                    .block_z = 1, .correlation_id = a->correlation_id,
                                    .grid_id = a->correlation_id, .name = intern(a->name)};
    break;
  case cudaDoubleActivityMemcpy:
    if (!cpy) return;
    kind = NCS_CUPTI_KIND_MEMCPY;
    r.c = (struct ncs_cupti_memcpy){.kind = kind, .copy_kind = (uint8_t)a->copy_kind, .bytes = a->bytes,
                                    .start = a->start_ns + off, .end = a->end_ns + off,
                                    .device_id = (uint32_t)a->device, .context_id = (uint32_t)a->device + 1,
                                    .stream_id = a->stream_id, .correlation_id = a->correlation_id};
    break;
  case cudaDoubleActivityMemset:
    if (!set) return;
    kind = NCS_CUPTI_KIND_MEMSET;
    r.m = (struct ncs_cupti_memset){.kind = kind, .bytes = a->bytes, .start = a->start_ns + off,
                                    .end = a->end_ns + off, .device_id = (uint32_t)a->device,
                                    .context_id = (uint32_t)a->device + 1, .stream_id = a->stream_id,
                                    .correlation_id = a->correlation_id};
    break;
  default:
    return;
  }
  append(&r, record_size(kind));
}

/* Installs or removes the CUDA double's hook after the enabled set changed (g_mu held). */
static void update_hook(void) {
  int any = g_enabled[NCS_CUPTI_KIND_KERNEL] || g_enabled[NCS_CUPTI_KIND_CONCURRENT_KERNEL] ||
            g_enabled[NCS_CUPTI_KIND_MEMCPY] || g_enabled[NCS_CUPTI_KIND_MEMSET];
  cudaDoubleSetActivityHook(any ? on_activity : NULL);
}

EXPORT ncs_cupti_result cuptiActivityEnable(ncs_cupti_kind kind) {
  if (kind == 0 || kind >= MAX_KIND) return NCS_CUPTI_ERROR_INVALID_KIND;
  pthread_mutex_lock(&g_mu);
  g_enabled[kind] = 1;
  update_hook();
  pthread_mutex_unlock(&g_mu);
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiActivityDisable(ncs_cupti_kind kind) {
  if (kind == 0 || kind >= MAX_KIND) return NCS_CUPTI_ERROR_INVALID_KIND;
  pthread_mutex_lock(&g_mu);
  g_enabled[kind] = 0;
  update_hook();
  pthread_mutex_unlock(&g_mu);
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiActivityRegisterCallbacks(ncs_cupti_buffer_requested_fn requested,
                                                       ncs_cupti_buffer_completed_fn completed) {
  if (!requested || !completed) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  g_requested = requested;
  g_completed = completed;
  pthread_mutex_unlock(&g_mu);
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiActivityFlushAll(uint32_t flag) {
  pthread_mutex_lock(&g_mu);
  if (!g_completed) { pthread_mutex_unlock(&g_mu); return NCS_CUPTI_ERROR_INVALID_OPERATION; }
  if (g_buf && (g_records || (flag & NCS_CUPTI_FLUSH_FORCED))) retire_current();
  pthread_mutex_unlock(&g_mu);
  deliver();
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, ncs_cupti_activity_t **rec) {
  if (!buffer || !rec) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  size_t off = 0;
  if (*rec) {
    size_t cur = record_size((*rec)->kind);
    if (!cur) return NCS_CUPTI_ERROR_INVALID_KIND;
    off = (size_t)((uint8_t *)*rec - buffer) + cur;
  }
  if (off + sizeof(ncs_cupti_activity_t) > valid) return NCS_CUPTI_ERROR_MAX_LIMIT_REACHED;
  ncs_cupti_activity_t *next = (ncs_cupti_activity_t *)(buffer + off);
  size_t sz = record_size(next->kind);
  if (!sz || off + sz > valid) return NCS_CUPTI_ERROR_INVALID_KIND;
  *rec = next;
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiActivityGetNumDroppedRecords(ncs_cupti_context ctx, uint32_t stream, size_t *dropped) {
  if (!dropped) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  *dropped = g_dropped; /* as CUPTI: the count since the previous call */
  g_dropped = 0;
  pthread_mutex_unlock(&g_mu);
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiGetTimestamp(uint64_t *t) {
  if (!t) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  *t = cudaDoubleNowNs() + clock_off();
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiSubscribe(ncs_cupti_subscriber *sub, ncs_cupti_callback_fn cb, void *user) {
  if (!sub) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  pthread_mutex_lock(&g_mu);
  int taken = g_subscribed || (inj && *inj);
  if (!taken) g_subscribed = 1;
  pthread_mutex_unlock(&g_mu);
  if (taken) return NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  *sub = &g_subscriber;
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiUnsubscribe(ncs_cupti_subscriber sub) {
  if (sub != &g_subscriber) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  g_subscribed = 0;
  pthread_mutex_unlock(&g_mu);
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiFinalize(void) {
  pthread_mutex_lock(&g_mu);
  memset(g_enabled, 0, sizeof g_enabled);
  update_hook();
  retire_current();
  pthread_mutex_unlock(&g_mu);
  deliver();
  return NCS_CUPTI_SUCCESS;
}

EXPORT ncs_cupti_result cuptiGetResultString(ncs_cupti_result r, const char **str) {
  if (!str) return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  switch (r) {
  case NCS_CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
  case NCS_CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
  case NCS_CUPTI_ERROR_INVALID_OPERATION: *str = "CUPTI_ERROR_INVALID_OPERATION"; break;
  case NCS_CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
  case NCS_CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
  case NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
  default: *str = "CUPTI_ERROR_UNKNOWN"; return NCS_CUPTI_ERROR_INVALID_PARAMETER;
  }
  return NCS_CUPTI_SUCCESS;
}

static void atfork_child(void) {
  pthread_mutex_init(&g_mu, NULL);
  memset(g_enabled, 0, sizeof g_enabled);
  g_requested = NULL;
  g_completed = NULL;
  g_buf = NULL;
  g_size = g_used = g_records = g_max_records = 0;
  g_nfull = 0;
  g_dropped = 0;
  g_subscribed = 0;
  cudaDoubleSetActivityHook(NULL);
}

__attribute__((constructor)) static void cupti_double_init(void) { pthread_atfork(NULL, NULL, atfork_child); }
