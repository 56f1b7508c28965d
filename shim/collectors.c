/* collectors.c — the one table of the shim's collectors (shim/hooks.h) and its walks.
 *
 * Contract: each walk calls one hook of every collector, in table order, skipping a collector
 * that is not linked in (weak references: the shim links and works without any of them) and
 * a hook that is NULL. Order: the profiler starts before log capture (both steer NCCL's
 * environment before its first call; log capture hides the profiler's own INFO lines), and
 * stops before it. start and atfork_child are walked by state.c (activation, fork); prepare,
 * poll and stop by the writer thread. */
#include "hooks.h"

extern NCS_COLLECTOR ncs_profiler_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_logcap_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_topo_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_gputime_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_callsite_collector __attribute__((weak));
extern NCS_COLLECTOR ncs_kernels_collector __attribute__((weak));

static const struct ncs_collector *const table[] = {
  &ncs_profiler_collector,
  &ncs_logcap_collector,
  &ncs_topo_collector,
  &ncs_gputime_collector,
  &ncs_callsite_collector,
  &ncs_kernels_collector,
};
#define N_COLLECTORS (sizeof table / sizeof table[0])

void ncs_collectors_start(void) {
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->start) table[i]->start();
}

void ncs_collectors_prepare(void) {
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->prepare) table[i]->prepare();
}

int ncs_collectors_poll(unsigned wait_ms) {
  int busy = 0;
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->poll && table[i]->poll(wait_ms)) busy = 1;
  return busy;
}

void ncs_collectors_stop(void) {
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->stop) table[i]->stop();
}

void ncs_collectors_atfork_child(void) {
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->atfork_child) table[i]->atfork_child();
}

void ncs_collectors_inflight(uint64_t now) {
  for (unsigned i = 0; i < N_COLLECTORS; i++)
    if (table[i] && table[i]->inflight) table[i]->inflight(now);
}
