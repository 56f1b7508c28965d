/* kwatch.h — whether one trace file holds kernel activity, told by its records as they come, for
 * the per-call logs that only kernel activity uses (whatif's NCCL launches, metrics' step starts
 * for gputime and whatif): a file without kernels drops them, so its memory does not grow with
 * its length.
 *
 * Contract: zero a struct ncs_kwatch per file and hand it every raw record (ncs_kwatch_raw) and,
 * when the owner reads it, the PROCESS record (ncs_kwatch_process). A KERNEL record, or a
 * KERNEL_STATUS record saying kernel activity is on (the shim writes it at its first poll,
 * before any KERNEL), makes it `on`. Before that, the file says it has none (`off`): a
 * KERNEL_STATUS saying off or stood aside (the shim then writes no KERNEL record), or a PROCESS
 * whose format_version is 1.0 (a 1.0 file has no KERNEL record, docs/FORMAT.md; `ncclscope
 * synth` writes its traces so). ncs_kwatch_keep(w, kept) says whether a log now holding `kept`
 * entries is still wanted: yes while on; no once off; else while fewer than NCS_KWATCH_WAIT
 * entries were kept (a file of format 1.1 or later whose first KERNEL_STATUS is late or lost);
 * once no, the log's owner drops it for good (the file is then treated as one without kernel
 * activity, also if a KERNEL record came later). An owner may ask ncs_kwatch_off first, before
 * a call's work, and skip it. */
#ifndef NCS_KWATCH_H
#define NCS_KWATCH_H
#include <stddef.h>
#include "io/trace.h"

#define NCS_KWATCH_WAIT 65536
struct ncs_kwatch { int on, off; };
void ncs_kwatch_raw(struct ncs_kwatch *w, const struct ncs_raw *r);
void ncs_kwatch_process(struct ncs_kwatch *w, const struct ncs_process *p);
/* A KERNEL record decoded already (a reader's `kernels` run): the same as its raw form. */
static inline void ncs_kwatch_kernel(struct ncs_kwatch *w) { w->on = 1; }
/* 1 when the file said it has no kernel activity before any showed (no log is wanted). */
static inline int ncs_kwatch_off(const struct ncs_kwatch *w) { return !w->on && w->off; }
static inline int ncs_kwatch_keep(const struct ncs_kwatch *w, size_t kept) { return w->on || (!w->off && kept < NCS_KWATCH_WAIT); }
#endif
