/* profiler.c — the shim as NCCL's profiler plugin: per collective, the algorithm, protocol and
 * channel count NCCL chose, as PROFILE records (ncclscope/records.h, docs/PROFILER.md).
 *
 * Contract:
 * - profiler_start() (the "profiler" collector's start, hooks.h) before the process's first NCCL call:
 *   when the user set no NCCL_PROFILER_PLUGIN and no libnccl-profiler.so lies on the library
 *   search path (NCCL's default name), points NCCL_PROFILER_PLUGIN at this library's own path
 *   (dladdr). NCCL (2.23 and later) dlopens that path, which returns the already loaded shim,
 *   and looks up ncclProfiler_v5 (2.28), ncclProfiler_v4 (2.26/2.27) newest first. A user
 *   plugin, or NCCLSCOPE_PROFILER=0, leaves everything alone. The variable is given back
 *   (unset) at the plugin's first init (NCCL has read it) or at profiler_stop.
 * - init starts the recorder (ncs_activate_by_profiler) when no wrapped call did: NCCL linked
 *   statically reaches no wrapper, and its events are then the trace's only calls (PROCESS
 *   calls_from=profiler; docs/PROFILER.md "Static NCCL"). A second copy of the shim loaded only as
 *   the plugin while another is preloaded stays inert (the preloaded one records).
 * - init asks NCCL for collective events only (ncclProfileColl); with static NCCL also for
 *   Send/Recv tasks (ncclProfileP2p: PROFILE records with root = peer and seq = the id of the
 *   plan, a number this plugin returns as the Group event's handle). startEvent of a collective
 *   is NCCL's hot path (the user's thread, inside the collective call): it copies the
 *   descriptor into a fixed lock-free ring (4096 slots, multi-producer, one consumer at a time)
 *   and returns; no malloc, lock or I/O. A full ring drops the event and counts it, as are
 *   records ncs_emit refused; each record carries the count so far, and drops after the last
 *   record are told at exit by a record with an empty func. No event handle is kept:
 *   stopEvent/recordEventState do nothing.
 * - The ring is moved into PROFILE records (ncs_emit, once the core is ready) by a drain
 *   thread the first init starts, "ncclscope-prof" (every 10 ms, every 1 ms while busy; when
 *   it finds nothing it waits twice as long each time, up to 320 ms, and the event that fills
 *   a quarter of the ring wakes it; once it has found nothing for those 310 ms and every
 *   event claimed is drained, it sleeps with no timeout and the next event's publish wakes
 *   it: an idle process's drainer is not woken at all, where it was 3 times a second; that
 *   publish's load of `drainer_deep` is ordered after its claim's seq_cst CAS, the drainer's
 *   look at r_head after its seq_cst store of it: one of the two sees the other), and by
 *   the collector's poll on the writer thread;
 *   a mutex keeps them from draining at the same time. profiler_stop drains last and
 *   stops the thread's draining.
 * - fork: the child forgets the parent's queued events and starts its own drain thread at its
 *   next init. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ncclscope/encode.h"
#include "nccl_profiler/profiler.h"
#include "hooks.h"
#include "internal.h" /* ncs_debug */

#define NCS_EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

/* ---- per-communicator contexts (init/finalize: not the hot path) ---- */
#define NCTX 256
struct prof_ctx { _Atomic int used; uint64_t hash; int rank, nranks; uint32_t version; };
static struct prof_ctx ctxs[NCTX + 1]; /* the last one is shared when the table is full */

/* ---- the event ring ---- */
#define RING 4096u
/* `lap`: the slot's sequence number minus its index (so a slot of the zeroed array is free for
 * the first lap: nothing is written before an event comes, and the 700 KiB array costs the
 * process no page until events reach it; writing every slot's sequence up front was 175 page
 * faults, ~3 ms, of the shim's fixed cost per process on the development VM). */
struct slot { _Atomic uint64_t lap; struct ncs_profile rec; };
static uint64_t slot_seq(struct slot *s, uint64_t pos) {
  return atomic_load_explicit(&s->lap, memory_order_acquire) + (pos & (RING - 1));
}
static void slot_set(struct slot *s, uint64_t pos, uint64_t seq) {
  atomic_store_explicit(&s->lap, seq - (pos & (RING - 1)), memory_order_release);
}
static struct slot ring[RING];
static _Atomic uint64_t r_head; /* next ticket for producers */
static uint64_t r_tail;         /* consumer (writer thread) only */
static _Atomic uint64_t r_dropped;
static atomic_flag ring_init_done = ATOMIC_FLAG_INIT;
static _Atomic int ring_ready;

static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER; /* one consumer at a time */
static _Atomic int drainer_started, drainer_stop;
static _Atomic int drainer_idle;      /* the drainer is in a long wait: the quarter-full event wakes it */
static _Atomic int drainer_deep;      /* it sleeps with no timeout: the next event wakes it */
static _Atomic uint32_t drainer_wake; /* futex word */
static uint64_t dropped_told; /* the largest `dropped` written so far (under drain_mu) */

static struct {
  int set_by_us;         /* NCCL_PROFILER_PLUGIN is ours, to be given back */
  _Atomic int static_nccl; /* this plugin started the recorder: NCCL reaches no wrapper */
  _Atomic uint64_t groups; /* Group event handles given out (static NCCL): 1, 2, ... */
  char self[1024];       /* this library's path */
  _Atomic int restored;
  _Atomic uint64_t events;
} pf;

static void ring_reset(int used) {
  if (used) /* every slot free for the first lap again (a fresh array is zeroed already) */
    for (uint32_t i = 0; i < RING; i++) atomic_store_explicit(&ring[i].lap, 0, memory_order_relaxed);
  atomic_store(&r_head, 0);
  r_tail = 0;
  atomic_store(&r_dropped, 0);
  atomic_store(&ring_ready, 1);
}

static void copy_name(char *dst, const char *src) {
  size_t i = 0;
  if (src)
    for (; i < NCS_PROF_STR - 1 && src[i]; i++) dst[i] = src[i];
  dst[i] = 0;
}

static void wake_drainer(void) {
  atomic_fetch_add(&drainer_wake, 1);
  syscall(SYS_futex, &drainer_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The hot path: claim a slot (NULL: the ring is full, counted), fill it, publish it. */
static struct slot *claim(uint64_t *at) {
  if (!atomic_load_explicit(&ring_ready, memory_order_acquire)) return NULL;
  uint64_t pos = atomic_load_explicit(&r_head, memory_order_relaxed);
  struct slot *s;
  for (;;) {
    s = &ring[pos & (RING - 1)];
    uint64_t seq = slot_seq(s, pos);
    if (seq == pos) {
      /* seq_cst (the same locked instruction on x86): ordered before publish's look at drainer_deep */
      if (atomic_compare_exchange_weak_explicit(&r_head, &pos, pos + 1, memory_order_seq_cst, memory_order_relaxed))
        break;
    } else if (seq < pos) { /* full: the writer has not taken this slot's previous event */
      atomic_fetch_add_explicit(&r_dropped, 1, memory_order_relaxed);
      return NULL;
    } else {
      pos = atomic_load_explicit(&r_head, memory_order_relaxed);
    }
  }
  *at = pos;
  return s;
}
static void publish(struct slot *s, uint64_t pos, const struct prof_ctx *c, int rank) {
  struct ncs_profile *p = &s->rec;
  p->comm_hash = c->hash;
  p->rank = rank;
  p->nranks = (uint32_t)c->nranks;
  p->t = ncs_now_ns();
  p->dropped = atomic_load_explicit(&r_dropped, memory_order_relaxed);
  p->version = c->version;
  slot_set(s, pos, pos + 1);
  /* the first event after the drainer went to sleep for good wakes it (one system call per
   * pause); else the one that fills a quarter of the ring, while it waits long */
  if ((atomic_load_explicit(&drainer_deep, memory_order_seq_cst) && atomic_exchange(&drainer_deep, 0)) ||
      (((pos + 1) & (RING / 4 - 1)) == 0 && atomic_load_explicit(&drainer_idle, memory_order_relaxed)))
    wake_drainer();
}
static void enqueue(const struct prof_ctx *c, const struct nccl_prof_coll *e, int rank) {
  uint64_t pos;
  struct slot *s = claim(&pos);
  if (!s) return;
  struct ncs_profile *p = &s->rec;
  p->seq = e->seq;
  copy_name(p->func, e->func);
  copy_name(p->algo, e->algo);
  copy_name(p->proto, e->proto);
  p->nchannels = e->nchannels;
  p->nwarps = e->nwarps;
  p->count = e->count;
  copy_name(p->datatype, e->datatype);
  p->root = e->root;
  publish(s, pos, c, rank);
}
/* A Send/Recv task (static NCCL only): root = its peer, seq = the id of its plan (the Group
 * event's handle this plugin gave out: the same for every task of one kernel launch). */
static void enqueue_p2p(const struct prof_ctx *c, const struct nccl_prof_p2p *e, int rank, const void *group) {
  uint64_t pos;
  struct slot *s = claim(&pos);
  if (!s) return;
  struct ncs_profile *p = &s->rec;
  p->seq = (uint64_t)(uintptr_t)group;
  copy_name(p->func, e->func);
  p->algo[0] = p->proto[0] = 0;
  p->nchannels = e->nchannels;
  p->nwarps = 0;
  p->count = e->count;
  copy_name(p->datatype, e->datatype);
  p->root = e->peer;
  publish(s, pos, c, rank);
}

static void give_back_env(void) {} /* nothing to give back: environ is never written (envview.c) */

/* NCCL_PROFILER_PLUGIN as NCCL alone sees it (envview.c): this library, when the user set none */
static const char *plugin_for_nccl(const char *user) { return user ? user : pf.self; }

static void *drainer(void *arg);
static void start_drainer(void) {
  if (atomic_exchange(&drainer_started, 1)) return;
  pthread_t th;
  pthread_attr_t a;
  sigset_t all, old;
  if (pthread_attr_init(&a) != 0) { atomic_store(&drainer_started, 0); return; }
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the job's signals stay the job's threads' */
  if (pthread_create(&th, &a, drainer, NULL) != 0) atomic_store(&drainer_started, 0); /* the writer still drains */
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
}

NCS_EXPORT extern const struct nccl_profiler_v5 ncclProfiler_v5;

/* 1 when another copy of the shim (another path, preloaded) is in the global scope: that copy
 * records this process; this one, loaded only as NCCL's plugin, must not write a second trace. */
static int other_copy_present(void) {
  ncs_gate_enter();
  void *p = dlsym(RTLD_DEFAULT, "ncclProfiler_v5");
  ncs_gate_leave();
  return p && p != (void *)&ncclProfiler_v5;
}

/* The recorder, started from NCCL itself when no wrapped call started it: NCCL's calls never
 * reached a wrapper (NCCL linked statically into the program or into a library), so NCCL's
 * events are the only view of its calls (docs/PROFILER.md, "Static NCCL"). */
static void start_recorder(void) {
  if (atomic_load_explicit(&ncs_active, memory_order_acquire) != 0) return; /* recording, or off */
  const char *off = getenv("NCCLSCOPE_PROFILER");
  if (off && !strcmp(off, "0")) return; /* the plugin is off: it starts nothing */
  if (other_copy_present()) {
    ncs_debug("profiler init: another copy of the shim is preloaded; this one (%s) records nothing", pf.self);
    return;
  }
  int (*activate)(void) = atomic_load(&ncs_activate_by_profiler);
  if (activate && activate() == 0 && !atomic_exchange(&pf.static_nccl, 1)) ncs_debug("profiler init before any wrapped NCCL call: NCCL is not interposed (static?); recording its profiler events");
}

static int ctx_init(void **ctx, uint64_t hash, int *mask, int nranks, int rank, uint32_t version) {
  give_back_env(); /* NCCL has read NCCL_PROFILER_PLUGIN: it is the user's again */
  start_recorder();
  if (!atomic_flag_test_and_set(&ring_init_done)) ring_reset(0);
  start_drainer();
  struct prof_ctx *c = &ctxs[NCTX];
  for (int i = 0; i < NCTX; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&ctxs[i].used, &z, 1)) { c = &ctxs[i]; break; }
  }
  c->hash = hash;
  c->rank = rank;
  c->nranks = nranks;
  c->version = version;
  *ctx = c;
  /* static NCCL: Send/Recv tasks too (no wrapper sees them), and the plans they belong to */
  if (mask) *mask = NCCL_PROFILE_COLL | (atomic_load(&pf.static_nccl) ? NCCL_PROFILE_P2P : 0);
  return 0; /* never fail: NCCL would print a warning the user did not ask for */
}
static int ctx_finalize(void *ctx) {
  struct prof_ctx *c = ctx;
  if (c && c != &ctxs[NCTX]) atomic_store(&c->used, 0);
  return 0;
}
static int v5_init(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes, int nranks, int rank,
                   nccl_prof_logger_t log) {
  return ctx_init(ctx, comm_id, mask, nranks, rank, 5);
}
static int v4_init(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes, int nranks, int rank,
                   nccl_prof_logger_t log) {
  return ctx_init(ctx, hash, mask, nranks, rank, 4);
}
/* A Group event's handle, static NCCL only: a number NCCL hands back as its tasks' parent (never
 * dereferenced: stopEvent and recordEventState ignore it). */
static void *group_handle(void) {
  return atomic_load_explicit(&pf.static_nccl, memory_order_relaxed) ? (void *)(uintptr_t)(atomic_fetch_add(&pf.groups, 1) + 1) : NULL;
}
static int v5_start(void *ctx, void **handle, struct nccl_prof_descr_v5 *d) {
  if (handle) *handle = NULL;
  if (!ctx || !d) return 0;
  if (d->type == NCCL_PROFILE_COLL) enqueue(ctx, &d->u.coll, d->rank);
  else if (d->type == NCCL_PROFILE_P2P && atomic_load_explicit(&pf.static_nccl, memory_order_relaxed))
    enqueue_p2p(ctx, &d->u.p2p, d->rank, d->u.p2p.parent_group);
  else if (d->type == NCCL_PROFILE_GROUP && handle) *handle = group_handle();
  return 0;
}
static int v4_start(void *ctx, void **handle, struct nccl_prof_descr_v4 *d) {
  if (handle) *handle = NULL;
  if (!ctx || !d) return 0;
  if (d->type == NCCL_PROFILE_COLL) enqueue(ctx, &d->u.coll, d->rank);
  else if (d->type == NCCL_PROFILE_P2P && atomic_load_explicit(&pf.static_nccl, memory_order_relaxed))
    enqueue_p2p(ctx, &d->u.p2p, d->rank, d->parent); /* v4: the plan's Group event is the parent */
  else if (d->type == NCCL_PROFILE_GROUP && handle) *handle = group_handle();
  return 0;
}
static int ev_stop(void *handle) { return 0; }
static int ev_record(void *handle, int state, void *args) { return 0; }

NCS_EXPORT const struct nccl_profiler_v5 ncclProfiler_v5 = {"ncclscope", v5_init, v5_start, ev_stop, ev_record, ctx_finalize};
NCS_EXPORT const struct nccl_profiler_v4 ncclProfiler_v4 = {"ncclscope", v4_init, v4_start, ev_stop, ev_record, ctx_finalize};

/* ---- the collector side (hooks.h) ---- */

/* 1 when NAME (e.g. libnccl-profiler.so) is a file in LD_LIBRARY_PATH or a standard library
 * directory: NCCL would load it by default. (rpath, runpath and ld.so.cache are not read.) */
static int on_search_path(const char *name) {
  char path[4096];
  const char *std = "/lib:/usr/lib:/lib64:/usr/lib64:/usr/local/lib:/usr/lib/x86_64-linux-gnu:/usr/lib/aarch64-linux-gnu";
  const char *lists[2] = { getenv("LD_LIBRARY_PATH"), std };
  for (int l = 0; l < 2; l++) {
    const char *p = lists[l];
    while (p && *p) {
      const char *e = strchr(p, ':');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      if (n && n < sizeof path - strlen(name) - 2) {
        snprintf(path, sizeof path, "%.*s/%s", (int)n, p, name);
        if (access(path, F_OK) == 0) return 1;
      }
      p = e ? e + 1 : NULL;
    }
  }
  return 0;
}

static void profiler_start(void) {
  if (!ncs_cfg.profiler) return;
  if (pf.set_by_us) return; /* once per process image */
  Dl_info di;
  ncs_gate_enter();
  int found = dladdr((void *)&ncclProfiler_v5, &di);
  ncs_gate_leave();
  if (!found || !di.dli_fname || di.dli_fname[0] != '/') return;
  const char *dbg = getenv("NCCL_DEBUG");
  if (!ncs_cfg.nccl_log && dbg && (!strcasecmp(dbg, "INFO") || !strcasecmp(dbg, "TRACE"))) {
    /* no log capture to hide NCCL's "loaded profiler plugin" lines from the user's INFO log */
    ncs_debug("NCCLSCOPE_NCCL_LOG=0 with NCCL_DEBUG=%s: the shim does not register as NCCL's profiler", dbg);
    return;
  }
  const char *user = getenv("NCCL_PROFILER_PLUGIN");
  if (user && strcmp(user, di.dli_fname)) { /* the user's own (or "none"): leave it */
    ncs_debug("NCCL_PROFILER_PLUGIN=%s set by the user: the shim does not register as NCCL's profiler", user);
    return;
  }
  /* (equal to our own path: a program exec'ed in the window inherited our setting) */
  if (!user && on_search_path("libnccl-profiler.so")) {
    ncs_debug("libnccl-profiler.so is on the library path: the shim does not register as NCCL's profiler");
    return;
  }
  if (!atomic_flag_test_and_set(&ring_init_done)) ring_reset(0);
  snprintf(pf.self, sizeof pf.self, "%s", di.dli_fname);
  ncs_env_override("NCCL_PROFILER_PLUGIN", plugin_for_nccl);
  pf.set_by_us = 1;
  atomic_store(&pf.restored, 0);
}

/* 1 for an NCCL INFO line about the shim as NCCL's profiler ("NCCL_PROFILER_PLUGIN set by
 * environment to <shim>", "Successfully loaded external profiler plugin <shim>", "Profiler
 * event mask ...", "PROFILER/Plugin: Loaded/Closing ... ncclscope"): lines the user would not
 * have seen without the shim. */
HIDDEN int ncs_profiler_own_line(const char *s, size_t n) {
  if (!pf.set_by_us) return 0;
  if (!memmem(s, n, "rofiler", 7) && !memmem(s, n, "PROFILER", 8)) return 0;
  return memmem(s, n, pf.self, strlen(pf.self)) || memmem(s, n, "ncclscope", 9) ||
         memmem(s, n, "Profiler event mask", 19);
}

/* Moves what the ring holds into records; returns how many. Consumer side only. */
static unsigned drain(void) {
  unsigned n = 0;
  if (!atomic_load(&ring_ready) || !ncs_hooks_ready()) return 0;
  pthread_mutex_lock(&drain_mu);
  uint8_t buf[256];
  for (;;) {
    struct slot *s = &ring[r_tail & (RING - 1)];
    if (slot_seq(s, r_tail) != r_tail + 1) break;
    struct ncs_wbuf w;
    struct ncs_profile_id id;
    ncs_wbuf_init(&w, buf, sizeof buf);
    /* names NCCL is known to use: every field a number (stored in columns, FORMAT-TOPO.md) */
    int named = ncs_profile_to_id(&s->rec, &id) == 0;
    if (named) ncs_enc_profile_id_body(&w, &id);
    else ncs_enc_profile_body(&w, &s->rec);
    if (w.overflow || ncs_emit(named ? NCS_REC_PROFILE_ID : NCS_REC_PROFILE, buf, w.len) != 0) /* lost after all: count it */
      atomic_fetch_add_explicit(&r_dropped, 1, memory_order_relaxed);
    else if (s->rec.dropped > dropped_told)
      dropped_told = s->rec.dropped;
    slot_set(s, r_tail, r_tail + RING);
    r_tail++;
    n++;
    atomic_fetch_add_explicit(&pf.events, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&drain_mu);
  return n;
}

/* 1 when every event claimed so far has been drained (r_head read after the caller's seq_cst
 * store of drainer_deep: an event claimed before that store is seen here). */
static int ring_drained(void) {
  pthread_mutex_lock(&drain_mu);
  int e = r_tail == atomic_load_explicit(&r_head, memory_order_seq_cst);
  pthread_mutex_unlock(&drain_mu);
  return e;
}

#define DRAIN_WAIT_MAX_NS 320000000L
static void *drainer(void *arg) {
  long wait_ns = 10000000;
  pthread_setname_np(pthread_self(), "ncclscope-prof");
  while (!atomic_load(&drainer_stop)) {
    uint32_t seq = atomic_load(&drainer_wake);
    /* nothing found for the whole back-off (10 + 20 + ... + 160 ms): asleep until an event */
    int deep = wait_ns >= DRAIN_WAIT_MAX_NS;
    if (deep) {
      atomic_store_explicit(&drainer_deep, 1, memory_order_seq_cst);
      if (!ring_drained()) { /* an event claimed meanwhile: drained soon, as while busy */
        atomic_store(&drainer_deep, 0);
        deep = 0;
        wait_ns = 10000000;
      }
    }
    atomic_store(&drainer_idle, wait_ns > 10000000);
    struct timespec t = {0, wait_ns};
    syscall(SYS_futex, &drainer_wake, FUTEX_WAIT_PRIVATE, seq, deep ? NULL : &t, NULL, 0);
    atomic_store(&drainer_idle, 0);
    if (deep) { /* an event woke it (or a stop, or the word moved before it slept) */
      atomic_store(&drainer_deep, 0);
      wait_ns = 10000000;
    }
    if (atomic_load(&drainer_stop)) break;
    unsigned n = drain();
    /* busy: come back sooner; nothing: back off (the quarter-full event wakes it) */
    wait_ns = n > RING / 8 ? 1000000 : n ? 10000000 : (wait_ns < DRAIN_WAIT_MAX_NS ? wait_ns * 2 : DRAIN_WAIT_MAX_NS);
  }
  return NULL;
}

static int profiler_poll(unsigned wait_ms) {
  drain();
  return 0;
}

static void profiler_stop(void) {
  give_back_env();
  atomic_store(&drainer_stop, 1);
  if (atomic_exchange(&drainer_deep, 0)) wake_drainer(); /* it ends instead of sleeping on */
  drain();
  uint64_t d = atomic_load(&r_dropped);
  if (d > dropped_told && ncs_hooks_ready()) { /* events lost after the last record: say so */
    struct ncs_profile tail = { .dropped = d };
    uint8_t buf[64];
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, buf, sizeof buf);
    ncs_enc_profile_body(&w, &tail);
    if (!w.overflow) ncs_emit(NCS_REC_PROFILE, buf, w.len);
  }
  if (pf.set_by_us)
    ncs_debug("NCCL profiler plugin: %llu collective events recorded, %llu dropped (ring full)",
              (unsigned long long)atomic_load(&pf.events), (unsigned long long)d);
}

static void profiler_atfork_child(void) {
  pthread_mutex_init(&drain_mu, NULL);
  atomic_store(&drainer_started, 0); /* no drain thread in the child until its next init */
  atomic_store(&drainer_stop, 0);
  atomic_store(&drainer_deep, 0);
  dropped_told = 0;
  if (atomic_load(&ring_ready)) ring_reset(1); /* the parent's queued events are the parent's */
  atomic_store(&pf.events, 0);
}

NCS_COLLECTOR ncs_profiler_collector = {
  .name = "profiler", .start = profiler_start, .poll = profiler_poll, .stop = profiler_stop,
  .atfork_child = profiler_atfork_child};
