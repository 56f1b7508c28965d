/* kernels.c — kernel activity: what the GPU ran and when, from the job's own CUPTI, so the
 * decoder can tell exposed from overlapped communication (docs/SHIM.md, "Kernel activity").
 *
 * Contract:
 *   - ncs_kernels_start runs once, on the thread that activates the shim (never on a
 *     background thread: dlopen there could deadlock against a fork, issue 9). It loads
 *     CUPTI only when the job already loaded a CUDA runtime (libcudart.so*): the
 *     libcupti.so.<N> the process already holds, else the one beside that runtime
 *     (<dir>/libcupti.so.<N>, <dir>/../extras/CUPTI/lib64/), else by soname; RTLD_LOCAL.
 *   - It stands aside, records nothing and touches no CUPTI state when another CUPTI client
 *     is there: CUDA_INJECTION64_PATH set (Nsight Systems / Compute and other injected tools),
 *     or cuptiSubscribe answers "multiple subscribers" (a framework profiler such as Kineto
 *     holds CUPTI). The probe subscription is released at once: ncclscope never holds the
 *     subscriber slot, so a profiler started later gets it; the writer probes again before
 *     each flush and, when another client has subscribed since, stops asking CUPTI for
 *     anything (KERNEL_STATUS "stood aside"). Otherwise it registers buffer callbacks and
 *     enables CONCURRENT_KERNEL, MEMCPY and MEMSET.
 *   - The job's threads never run any of this. CUPTI asks for buffers and hands them back on
 *     its own threads (buffer_requested / buffer_completed: a mutex-protected pool of 1 MiB
 *     buffers, at most POOL_MAX in flight; none free: CUPTI drops records, and counts them).
 *     The writer thread (this collector's poll, every 100 ms) flushes CUPTI, turns each
 *     record into a KERNEL record (class by name: ncclKernel_* / ncclDevKernel_* are NCCL's,
 *     see cupti_abi.h; times moved from CUPTI's clock to CLOCK_MONOTONIC with an offset
 *     measured at each poll, the tightest of three bracketed reads), names each kernel once per file (KERNEL_NAME, a writer
 *     definition: written again after a lost chunk), hands them to the
 *     writer (ncs_emit) and reports CUPTI's dropped count (DROP reason 6).
 *   - Every loader and CUPTI call is inside the fork gate (ncs_gate_enter/leave, forkgate.c).
 *   - The final poll (the atexit sync, ncs_kernels_exit, while CUDA is still up) forces a
 *     flush; nothing calls CUPTI after it. A forked child records no kernel activity (CUDA does not survive fork). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ncclscope/cupti_abi.h"
#include "hooks.h"

#define BUF_BYTES (1u << 20)
#define POOL_MAX 64
#define NAMES 4096 /* open-addressed name table (power of two) */

static struct {
#define NCS_CUPTI_FN_(ret, name, params) ret(*name) params;
  NCCLSCOPE_CUPTI_PROTOTYPES(NCS_CUPTI_FN_)
#undef NCS_CUPTI_FN_
} cu;

static int k_state = NCS_KSTATE_OFF;
static struct ncs_kernel_status k_status; /* the state and reason to write (writer) */
static int k_status_pending;              /* k_status not yet in the trace */
static _Atomic int k_final;               /* the final flush ran: CUPTI is not called again */
static _Atomic int k_exit;                /* atexit asked for the final flush */
static uint64_t next_poll;                /* writer: when CUPTI is flushed next */
#define POLL_NS 100000000ull              /* every 100 ms: bounded queue use, no CUPTI call per drain */

/* buffer pool: CUPTI's threads take and return, the writer decodes (pool_mu) */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool_free[POOL_MAX];
static unsigned pool_nfree, pool_out;     /* free buffers; buffers in existence */
static struct done { uint8_t *buf; size_t valid; } pool_done[POOL_MAX];
static unsigned pool_ndone;

/* name table (writer thread only) */
static struct { const char *ptr; uint64_t hash; uint32_t id; } names[NAMES];
static uint32_t names_next = 1;
static uint64_t names_emitted_gen; /* file generation the ids were written to */
static uint64_t file_gen = 1;

static void set_status(uint32_t state, const char *reason) {
  k_state = (int)state;
  k_status.t = ncs_now_ns();
  k_status.state = state;
  snprintf(k_status.reason, sizeof k_status.reason, "%s", reason);
  k_status_pending = 1;
}

static void buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&pool_mu);
  if (pool_nfree) b = pool_free[--pool_nfree];
  else if (pool_out < POOL_MAX && (b = aligned_alloc(64, BUF_BYTES)) != NULL) pool_out++;
  pthread_mutex_unlock(&pool_mu);
  *buf = b; /* NULL: CUPTI drops records and counts them (reported as DROP reason 6) */
  *size = b ? BUF_BYTES : 0;
  *max_records = 0;
}

static void buffer_completed(ncs_cupti_context ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  if (!buf) return;
  pthread_mutex_lock(&pool_mu);
  if (pool_ndone < POOL_MAX) pool_done[pool_ndone++] = (struct done){buf, valid};
  pthread_mutex_unlock(&pool_mu);
}

/* dlopen of libcupti.so.<major> next to the loaded CUDA runtime, or already loaded. */
static void *open_cupti(void) {
  void *h = ncs_loaded_handle("libcupti.so");
  if (h) return h;
  void *rt = ncs_loaded_handle("libcudart.so");
  if (!rt) return NULL;
  Dl_info info;
  void *sym = dlsym(rt, "cudaGetDevice");
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return NULL;
  const char *base = strrchr(info.dli_fname, '/');
  const char *ver = strstr(base ? base : info.dli_fname, ".so.");
  char major[16] = "";
  if (ver) snprintf(major, sizeof major, "%.*s", (int)strspn(ver + 4, "0123456789"), ver + 4);
  if (!major[0]) return NULL;
  char path[1024];
  int dirlen = base ? (int)(base - info.dli_fname) : 0;
  if (base) {
    snprintf(path, sizeof path, "%.*s/libcupti.so.%s", dirlen, info.dli_fname, major);
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return h;
    snprintf(path, sizeof path, "%.*s/../extras/CUPTI/lib64/libcupti.so.%s", dirlen, info.dli_fname, major);
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return h;
  }
  snprintf(path, sizeof path, "libcupti.so.%s", major);
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* 1 when another CUPTI client holds the subscriber slot (the probe is released at once). */
static int other_client(void) {
  ncs_cupti_subscriber sub = NULL;
  ncs_cupti_result r = cu.cuptiSubscribe(&sub, NULL, NULL);
  if (r == NCS_CUPTI_SUCCESS) { cu.cuptiUnsubscribe(sub); return 0; }
  return r == NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

static void start_gated(void);
static void kernels_start(void) {
  ncs_gate_enter(); /* loader and CUPTI work: no fork meanwhile (forkgate.c) */
  start_gated();
  ncs_gate_leave();
}

static void start_gated(void) {
  char why[160];
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (!ncs_cfg.kernels) { set_status(NCS_KSTATE_OFF, "NCCLSCOPE_KERNELS=0"); return; }
  if (inj && *inj) {
    snprintf(why, sizeof why, "another CUDA tool is injected (CUDA_INJECTION64_PATH=%.100s)", inj);
    set_status(NCS_KSTATE_STOOD_ASIDE, why);
    return;
  }
  if (!ncs_loaded_handle("libcudart.so")) { set_status(NCS_KSTATE_OFF, "no CUDA runtime loaded"); return; }
  void *h = open_cupti();
  if (!h) { set_status(NCS_KSTATE_OFF, "no libcupti beside the CUDA runtime"); return; }
#define NCS_CUPTI_SYM_(ret, name, params) cu.name = (ret(*) params)dlsym(h, #name); if (!cu.name) goto missing;
  NCCLSCOPE_CUPTI_PROTOTYPES(NCS_CUPTI_SYM_)
#undef NCS_CUPTI_SYM_
  if (other_client()) {
    set_status(NCS_KSTATE_STOOD_ASIDE, "another CUPTI client holds CUPTI (cuptiSubscribe: multiple subscribers)");
    return;
  }
  ncs_cupti_result r = cu.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != NCS_CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "cuptiActivityRegisterCallbacks failed (%d)", r);
    set_status(NCS_KSTATE_OFF, why);
    return;
  }
  if ((r = cu.cuptiActivityEnable(NCS_CUPTI_KIND_CONCURRENT_KERNEL)) != NCS_CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "cuptiActivityEnable(CONCURRENT_KERNEL) failed (%d)", r);
    set_status(NCS_KSTATE_OFF, why);
    return;
  }
  cu.cuptiActivityEnable(NCS_CUPTI_KIND_MEMCPY); /* optional: kernels are what matters */
  cu.cuptiActivityEnable(NCS_CUPTI_KIND_MEMSET);
  set_status(NCS_KSTATE_ON, "CUPTI activity: concurrent kernels, memcpy, memset");
  return;
missing:
  set_status(NCS_KSTATE_OFF, "libcupti lacks an activity entry point");
}

/* Queues one record (ncs_emit copies it); the body of the largest record fits `buf`. */
static void emit_kernel(const struct ncs_kernel *k) {
  uint8_t buf[128];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, buf, sizeof buf);
  ncs_enc_kernel_body(&w, k);
  if (!w.overflow) ncs_emit(NCS_REC_KERNEL, buf, w.len);
}
static void emit_status(void) {
  uint8_t buf[256];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, buf, sizeof buf);
  ncs_enc_kernel_status_body(&w, &k_status);
  if (!w.overflow && ncs_emit(NCS_REC_KERNEL_STATUS, buf, w.len) == 0) k_status_pending = 0;
}

static uint32_t name_id(const char *name, uint32_t kclass) {
  if (!name) return 0;
  if (names_emitted_gen != file_gen) { /* a forked child's new file: every name is written again */
    memset(names, 0, sizeof names);
    names_next = 1;
    names_emitted_gen = file_gen;
  }
  uint64_t h = ncs_hash64(NCS_FNV64_INIT, name, strlen(name));
  for (uint32_t i = 0, s = (uint32_t)h & (NAMES - 1); i < NAMES; i++, s = (s + 1) & (NAMES - 1)) {
    if (names[s].id && names[s].hash == h && (names[s].ptr == name || !strcmp(names[s].ptr, name)))
      return names[s].id;
    if (names[s].id) continue;
    if (names_next >= NAMES * 3 / 4) return 0; /* full: unnamed (class still recorded) */
    names[s].ptr = name; /* CUPTI keeps kernel names for the module's lifetime */
    names[s].hash = h;
    names[s].id = names_next++;
    static struct ncs_kernel_name kn; /* writer thread only */
    kn.id = names[s].id;
    kn.kclass = kclass;
    snprintf(kn.name, sizeof kn.name, "%s", name);
    uint8_t buf[NCS_KERNEL_NAME_MAX + 32];
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, buf, sizeof buf);
    ncs_enc_kernel_name(&w, &kn); /* a definition: the writer writes it again after a lost chunk */
    if (!w.overflow) ncs_writer_put_definition(buf, w.len, 1);
    return names[s].id;
  }
  return 0;
}

/* CUPTI times on the monotonic clock, at the stored resolution (format.h) */
static uint64_t to_mono(uint64_t t, int64_t off) { return ncs_kernel_round((uint64_t)((int64_t)t - off)); }
static uint64_t span(uint64_t s, uint64_t e, int64_t off) { /* incomplete: 0 */
  return e > s ? to_mono(e, off) - to_mono(s, off) : 0;
}

/* Records of one completed buffer into KERNEL records; off: CUPTI time minus monotonic. */
static void decode_buffer(uint8_t *buf, size_t valid, int64_t off) {
  ncs_cupti_activity_t *rec = NULL;
  for (;;) {
    ncs_gate_enter();
    ncs_cupti_result r = cu.cuptiActivityGetNextRecord(buf, valid, &rec);
    ncs_gate_leave();
    if (r != NCS_CUPTI_SUCCESS) break;
    struct ncs_kernel k = {0};
    switch (rec->kind) {
    case NCS_CUPTI_KIND_KERNEL: case NCS_CUPTI_KIND_CONCURRENT_KERNEL: {
      const struct ncs_cupti_kernel *c = (const void *)rec;
      k = (struct ncs_kernel){ncs_is_nccl_kernel(c->name) ? NCS_KCLASS_NCCL : NCS_KCLASS_COMPUTE, c->device_id,
                              c->stream_id, to_mono(c->start, off), span(c->start, c->end, off), 0, 0, c->correlation_id};
      k.name = name_id(c->name, k.kclass);
      break;
    }
    case NCS_CUPTI_KIND_MEMCPY: {
      const struct ncs_cupti_memcpy *c = (const void *)rec;
      k = (struct ncs_kernel){NCS_KCLASS_MEMCPY, c->device_id, c->stream_id, to_mono(c->start, off),
                              span(c->start, c->end, off), 0, c->bytes, c->correlation_id};
      break;
    }
    case NCS_CUPTI_KIND_MEMSET: {
      const struct ncs_cupti_memset *c = (const void *)rec;
      k = (struct ncs_kernel){NCS_KCLASS_MEMSET, c->device_id, c->stream_id, to_mono(c->start, off),
                              span(c->start, c->end, off), 0, c->bytes, c->correlation_id};
      break;
    }
    default:
      continue; /* a kind another client enabled */
    }
    emit_kernel(&k);
  }
}

/* Writer, at every drain: every POLL_NS (and at the final exit sync) flushes CUPTI and turns
 * the completed buffers into records. */
static int kernels_poll(unsigned wait_ms) {
  if (k_status_pending) emit_status();
  if (k_state != NCS_KSTATE_ON || atomic_load(&k_final)) return 0;
  int final = atomic_load(&k_exit);
  uint64_t now = ncs_now_ns();
  if (!final && now < next_poll) return 0;
  next_poll = now + POLL_NS;
  ncs_gate_enter();
  int other = other_client();
  ncs_gate_leave();
  if (other) {
    set_status(NCS_KSTATE_STOOD_ASIDE, "another CUPTI client subscribed during the run; kernel activity stopped");
    emit_status();
    return 0;
  }
  /* CUPTI's clock against CLOCK_MONOTONIC, bracketed by two monotonic reads; the tightest of
   * three brackets, so a writer preempted inside one does not shift a whole buffer of records */
  ncs_gate_enter(); /* buffer_completed may run inside: it takes only pool_mu, never a core lock */
  int64_t off = 0;
  for (int i = 0, best = -1; i < 3; i++) {
    uint64_t t0 = ncs_now_ns(), c = 0;
    cu.cuptiGetTimestamp(&c);
    uint64_t t1 = ncs_now_ns();
    if (best < 0 || t1 - t0 < (uint64_t)best) { best = (int)(t1 - t0 < INT32_MAX ? t1 - t0 : INT32_MAX); off = (int64_t)(c - (t0 + (t1 - t0) / 2)); }
  }
  cu.cuptiActivityFlushAll(final ? NCS_CUPTI_FLUSH_FORCED : 0);
  ncs_gate_leave();
  if (final) atomic_store(&k_final, 1); /* CUDA goes away after the exit sync: no more CUPTI */
  for (;;) {
    pthread_mutex_lock(&pool_mu);
    struct done d = {NULL, 0};
    if (pool_ndone) { d = pool_done[0]; memmove(pool_done, pool_done + 1, --pool_ndone * sizeof *pool_done); }
    pthread_mutex_unlock(&pool_mu);
    if (!d.buf) break;
    decode_buffer(d.buf, d.valid, off);
    pthread_mutex_lock(&pool_mu);
    pool_free[pool_nfree++] = d.buf;
    pthread_mutex_unlock(&pool_mu);
  }
  size_t dropped = 0;
  ncs_gate_enter();
  ncs_cupti_result dr = cu.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
  ncs_gate_leave();
  if (dr == NCS_CUPTI_SUCCESS && dropped)
    ncs_writer_count_drop(NCS_DROP_KERNEL_RECORDS, dropped);
  return 0;
}

void ncs_kernels_exit(void) { atomic_store(&k_exit, 1); }

static void kernels_atfork_child(void) {
  pthread_mutex_init(&pool_mu, NULL);
  pool_ndone = 0; /* the parent's buffers stay allocated in the child: CUDA is gone here */
  if (k_state != NCS_KSTATE_OFF) set_status(NCS_KSTATE_OFF, "forked child (CUDA does not survive fork)");
  file_gen++;
}

NCS_COLLECTOR ncs_kernels_collector = {.name = "kernels", .start = kernels_start, .poll = kernels_poll,
                                       .atfork_child = kernels_atfork_child};
