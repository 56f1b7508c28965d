/* kwatch.h — whether one trace file holds kernel activity, told by its records as they come, for
 * the per-call logs that only kernel activity uses (whatif's NCCL launches, metrics' step starts
 * for gputime and whatif): a file without kernels drops them, so its memory does not grow with
 * its length.
 *
 * Contract: zero a struct ncs_kwatch per file and hand it every raw record (ncs_kwatch_raw). A
 * KERNEL record, or a KERNEL_STATUS record saying kernel activity is on (the shim writes it at
 * its first poll, before any KERNEL), makes it `on`. ncs_kwatch_keep(w, kept) says whether a log
 * now holding `kept` entries is still wanted: yes while on, or while fewer than NCS_KWATCH_WAIT
 * entries were kept; no from then on (a file of format 1.0, a job without CUDA, kernel activity
 * off), and the log's owner drops it for good (the file is then treated as one without kernel
 * activity, also if a KERNEL record came later with no status record before it). */
#ifndef NCS_KWATCH_H
#define NCS_KWATCH_H
#include <stddef.h>
#include "io/trace.h"

#define NCS_KWATCH_WAIT 65536
struct ncs_kwatch { int on; };
void ncs_kwatch_raw(struct ncs_kwatch *w, const struct ncs_raw *r);
/* A KERNEL record decoded already (a reader's `kernels` run): the same as its raw form. */
static inline void ncs_kwatch_kernel(struct ncs_kwatch *w) { w->on = 1; }
static inline int ncs_kwatch_keep(const struct ncs_kwatch *w, size_t kept) { return w->on || kept < NCS_KWATCH_WAIT; }
#endif
