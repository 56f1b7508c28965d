/* collectors.c — the one table of the shim's collectors (shim/hooks.h).
 *
 * Contract: the order is the walk order: the profiler starts before log capture (both steer
 * NCCL's environment before its first call; log capture hides the profiler's own INFO lines)
 * and stops before it. Weak references: the shim links and works without any collector (its
 * entry is then NULL and skipped). Adding a collector: its struct in its own file, one line
 * here, one declaration in hooks.h. */
#include "hooks.h"

extern NCS_COLLECTOR ncs_profiler_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_logcap_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_topo_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_gputime_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_callsite_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_kernels_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_prom_collector __attribute__((weak));

static const struct ncs_collector *const table[] = {
  &ncs_profiler_collector,
  &ncs_logcap_collector,
  &ncs_topo_collector,
  &ncs_gputime_collector,
  &ncs_callsite_collector,
  &ncs_kernels_collector,
  &ncs_prom_collector,
};

const struct ncs_collector_table ncs_collectors = {table, sizeof table / sizeof table[0]};
