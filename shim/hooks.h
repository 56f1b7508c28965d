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

/* ---- provided by the core (shim/) ---- */
/* Queues one record (type from format.h, body already encoded) for the next chunk.
 * Returns 0, or -1 when it had to be dropped (counted as NCS_DROP_NO_MEMORY). */
__attribute__((visibility("hidden"))) int ncs_emit(uint32_t type, const void *body, size_t len);
/* CLOCK_MONOTONIC in ns. */
__attribute__((visibility("hidden"))) uint64_t ncs_now_ns(void);
/* 1 once the core is initialised and writing (the process has used NCCL), else 0. */
__attribute__((visibility("hidden"))) int ncs_hooks_ready(void);

/* ---- provided by collectors; the core calls them ---- */
/* NCCL log capture (shim/logcap.c). Called once, before the process's first call into the
 * real NCCL, while the environment can still steer NCCL's debug output. */
__attribute__((visibility("hidden"))) void ncs_logcap_start(void);
/* Called by the writer thread before each flush: moves captured lines into records. */
__attribute__((visibility("hidden"))) void ncs_logcap_poll(void);
/* Called once at exit (after the last NCCL call), before the final flush. */
__attribute__((visibility("hidden"))) void ncs_logcap_stop(void);
/* Called in a forked child before it uses NCCL again: forget the parent's capture state. */
__attribute__((visibility("hidden"))) void ncs_logcap_atfork_child(void);

/* NVML topology (shim/topo.c). Called once by the writer thread after the file is open. */
__attribute__((visibility("hidden"))) void ncs_topo_collect(void);
#endif
