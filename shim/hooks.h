/* hooks.h — the seams between the shim's core (interposition, buffers, writer) and its
 * optional collectors (NCCL log capture, NVML topology, GPU timing).
 *
 * Contract, core side: ncs_emit() and ncs_now_ns() may be called from any thread, any time
 * after ncs_hooks_ready() returned 1, never on the per-call hot path; ncs_emit copies the body.
 * Contract, collector side: each hook returns quickly, never blocks the job, never exits, and
 * does nothing (returns) when its feature is unavailable. */
#ifndef NCS_SHIM_HOOKS_H
#define NCS_SHIM_HOOKS_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- provided by the core (shim/) ---- */
/* Queues one record (type from format.h, body already encoded) for the next chunk.
 * Returns 0, or -1 when it had to be dropped (counted as NCS_DROP_NO_MEMORY). */
__attribute__((visibility("hidden"))) int ncs_emit(uint32_t type, const void *body, size_t len);
/* Writer thread only (a collector's prepare): puts whole records (`records` of them, type and
 * length included) that later records refer to into the chunk being built, and keeps them to
 * write again if that chunk is lost. */
__attribute__((visibility("hidden"))) void ncs_writer_put_definition(const void *recs, size_t len, uint32_t records);
/* CLOCK_MONOTONIC in ns. */
__attribute__((visibility("hidden"))) uint64_t ncs_now_ns(void);
/* 1 once the core is initialised and writing (the process has used NCCL), else 0. */
__attribute__((visibility("hidden"))) int ncs_hooks_ready(void);
/* What NCCL alone sees of its environment (envview.c, docs/SHIM.md "Environment"): getenv(name)
 * made from NCCL's own code returns value(the user's value or NULL); everyone else gets libc's
 * answer. Register at activation (a collector's start), before NCCL's first call. */
#include <stdio.h>
__attribute__((visibility("hidden"))) void ncs_env_override(const char *name, const char *(*value)(const char *user));
/* NCCL's fopen(ncs_env_marker, "w...") returns open_capture()'s stream (NCCL_DEBUG_FILE). */
__attribute__((visibility("hidden"))) void ncs_env_file_hook(FILE *(*open_capture)(void));
extern __attribute__((visibility("hidden"))) const char *const ncs_env_marker;
/* Finds NCCL's text from one of its functions (activation); 0 when found. */
__attribute__((visibility("hidden"))) int ncs_env_arm(void *nccl_function);
/* The executable segment [*lo, *hi) of the object holding function (dladdr + dl_iterate_phdr,
 * inside the fork gate); 0 when found. */
#include <stdint.h>
__attribute__((visibility("hidden"))) int ncs_text_range(const void *function, uintptr_t *lo, uintptr_t *hi);
/* Moves a descriptor the shim opened to a high number (F_DUPFD_CLOEXEC at or above half the
 * soft RLIMIT_NOFILE, at most 4096), closing the original; returns the new one, or fd itself when
 * it cannot. An application opening files gets the lowest free numbers, never these; and every
 * write the shim makes is preceded by a check that the descriptor is still the shim's. */
__attribute__((visibility("hidden"))) int ncs_fd_move_high(int fd);
/* The fork gate (forkgate.c, docs/SHIM.md "Fork"): any shim code, on any thread, that enters
 * the dynamic loader (dlopen, dlsym, dladdr, dl_iterate_phdr), the unwinder, CUDA or NVML does
 * it between ncs_gate_enter() and ncs_gate_leave(), and takes no shim lock in between. A fork
 * waits (at most 2 s) until no thread is inside; a thread entering during a fork waits for it. */
__attribute__((visibility("hidden"))) void ncs_gate_enter(void);
__attribute__((visibility("hidden"))) void ncs_gate_leave(void);
__attribute__((visibility("hidden"))) void ncs_gate_close(void);       /* atfork prepare, last */
__attribute__((visibility("hidden"))) void ncs_gate_open(void);        /* atfork parent, first */
__attribute__((visibility("hidden"))) void ncs_gate_reset_child(void); /* atfork child, first */
__attribute__((visibility("hidden"))) unsigned long ncs_gate_timeouts(void); /* forks that did not wait to the end */

struct ncs_call;
struct ncs_inflight;
struct ncs_gpu_time;
/* ---- provided by collectors; the core walks them (collectors.c) ----
 * One struct per collector; a NULL hook is skipped. Each collector module defines its struct
 * (hidden); the table in collectors.c lists them in the order they are walked. */
struct ncs_collector {
  const char *name;
  /* At activation, on the thread making the process's first recorded NCCL call, before that
   * call reaches the real NCCL (the environment can still steer NCCL). */
  void (*start)(void);
  /* Writer thread, at every drain, after it has seen how far the threads' rings reach and
   * before it writes those calls: definitions they refer to (call sites), handed to the
   * writer with ncs_writer_put_definition. */
  void (*prepare)(void);
  /* Writer thread: once right after the trace file is open, then every time the writer wakes
   * (at least every flush period, every 2 s in an idle process: docs/SHIM.md). May wait up to
   * wait_ms for outstanding work (exit). Hands records to the writer (ncs_emit; GPU_TIME
   * through ncs_writer_put_gpu_time). Returns 0 when it holds no work that needs polling, 1
   * when it does (the writer comes back within 10 ms), 2 when it holds much (1 ms). */
  int (*poll)(unsigned wait_ms);
  /* Writer thread, once, before the final chunk (after the last NCCL call). */
  void (*stop)(void);
  /* In a forked child of a process that was recording, before it uses NCCL again: forget the
   * parent's state (threads, descriptors, queued data). */
  void (*atfork_child)(void);
  /* Writer thread, at the end of every chunk: hand the writer what is still in flight
   * (ncs_writer_put_inflight), as seen at `now`. */
  void (*inflight)(uint64_t now);
  /* Observers of what the writer writes (promexport.c), writer thread, never blocking: each
   * batch of ring slots [from, to) of rec (mask: the ring's) it encodes; the ncs_emit records
   * it takes (whole records, len bytes); each INFLIGHT record of a chunk (NULL first: a new
   * chunk's); each chunk written because the job waits for it (a sync) or the final one; each
   * GPU_TIME record it writes (after the calls it times were seen). */
  void (*seen_calls)(const struct ncs_call *rec, uint64_t mask, uint64_t from, uint64_t to);
  void (*seen_queue)(const uint8_t *q, size_t len);
  void (*seen_inflight)(const struct ncs_inflight *f);
  void (*flushed)(int final);
  void (*seen_gpu_time)(const struct ncs_gpu_time *g);
};
#define NCS_COLLECTOR __attribute__((visibility("hidden"))) const struct ncs_collector
extern NCS_COLLECTOR ncs_profiler_collector; /* profiler.c: NCCL's profiler plugin (PROFILE) */
extern NCS_COLLECTOR ncs_logcap_collector;   /* logcap.c: NCCL's log lines (NCCL_LOG) */
extern NCS_COLLECTOR ncs_topo_collector;     /* topo.c: NVML topology (TOPO_GPU, TOPO_LINK) */
extern NCS_COLLECTOR ncs_gputime_collector;  /* gputime.c: CUDA-event timing (GPU_TIME) */
extern NCS_COLLECTOR ncs_callsite_collector; /* callsite.c: call-site definitions (MODULE, CALLSITE) */
extern NCS_COLLECTOR ncs_kernels_collector;  /* kernels.c: kernel activity (KERNEL*) */
extern NCS_COLLECTOR ncs_prom_collector;     /* promexport.c: Prometheus text files (no records; an observer) */

/* The table (collectors.c), in walk order; an entry is NULL when that collector is not linked
 * in. state.c walks start and atfork_child and hands the table to the writer
 * (ncs_writer_set_collectors), which walks prepare, poll and stop: the writer itself names no
 * collector. */
struct ncs_collector_table {
  const struct ncs_collector *const *at;
  unsigned n;
};
extern __attribute__((visibility("hidden"))) const struct ncs_collector_table ncs_collectors;

/* Calls one void hook of every collector: hook = offsetof(struct ncs_collector, start),
 * ..., prepare, stop or atfork_child. */
static inline void ncs_collectors_walk(const struct ncs_collector_table *t, size_t hook) {
  for (unsigned i = 0; t && i < t->n; i++) {
    if (!t->at[i]) continue;
    void (*fn)(void);
    memcpy(&fn, (const char *)t->at[i] + hook, sizeof fn);
    if (fn) fn();
  }
}
/* Every collector's poll; returns the largest answer. */
static inline int ncs_collectors_poll(const struct ncs_collector_table *t, unsigned wait_ms) {
  int busy = 0;
  for (unsigned i = 0; t && i < t->n; i++) {
    int b = t->at[i] && t->at[i]->poll ? t->at[i]->poll(wait_ms) : 0;
    if (b > busy) busy = b;
  }
  return busy;
}
/* Every collector's inflight hook (the writer, for an INFLIGHT snapshot as seen at `now`). */
static inline void ncs_collectors_inflight(const struct ncs_collector_table *t, uint64_t now) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->inflight) t->at[i]->inflight(now);
}
/* The observers (seen_* and flushed hooks) of every collector that has them. */
static inline void ncs_collectors_seen_calls(const struct ncs_collector_table *t, const struct ncs_call *rec,
                                             uint64_t mask, uint64_t from, uint64_t to) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->seen_calls) t->at[i]->seen_calls(rec, mask, from, to);
}
static inline void ncs_collectors_seen_queue(const struct ncs_collector_table *t, const uint8_t *q, size_t len) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->seen_queue) t->at[i]->seen_queue(q, len);
}
static inline void ncs_collectors_seen_inflight(const struct ncs_collector_table *t, const struct ncs_inflight *f) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->seen_inflight) t->at[i]->seen_inflight(f);
}
static inline void ncs_collectors_seen_gpu_time(const struct ncs_collector_table *t, const struct ncs_gpu_time *g) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->seen_gpu_time) t->at[i]->seen_gpu_time(g);
}
static inline void ncs_collectors_flushed(const struct ncs_collector_table *t, int final) {
  for (unsigned i = 0; t && i < t->n; i++)
    if (t->at[i] && t->at[i]->flushed) t->at[i]->flushed(final);
}
#endif
