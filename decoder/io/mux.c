/* mux.c — fan-out of one read to several visitors (mux.h). */
#include "io/mux.h"

#include <string.h>

#define MUX_CB(field, T) \
  static int mux_##field(void *ctx, const T *x) { \
    struct ncs_mux *m = ctx; int stop = 0; \
    for (int i = 0; i < m->n; i++) \
      if (m->v[i].field && m->v[i].field(m->v[i].ctx, x)) stop = 1; \
    return stop; \
  }
MUX_CB(process, struct ncs_process)
MUX_CB(thread, struct ncs_thread)
MUX_CB(comm, struct ncs_comm)
MUX_CB(comm_end, struct ncs_comm_end)
MUX_CB(call, struct ncs_call)
MUX_CB(callsite, struct ncs_callsite)
MUX_CB(module, struct ncs_module)
MUX_CB(drop, struct ncs_drop)
MUX_CB(clock, struct ncs_clock)
MUX_CB(gpu_time, struct ncs_gpu_time)
MUX_CB(log_line, struct ncs_log_line)
MUX_CB(raw, struct ncs_raw)
MUX_CB(inflight, struct ncs_inflight)
#undef MUX_CB
static int mux_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  struct ncs_mux *m = ctx;
  int stop = 0;
  for (int i = 0; i < m->n; i++)
    if (m->v[i].chunk && m->v[i].chunk(m->v[i].ctx, index, dropped, flags, off)) stop = 1;
  return stop;
}

void ncs_mux_build(struct ncs_mux *m, struct ncs_visitor *out) {
  memset(out, 0, sizeof *out);
  out->ctx = m;
#define SET(field) for (int i = 0; i < m->n; i++) if (m->v[i].field) { out->field = mux_##field; break; }
  SET(process) SET(thread) SET(comm) SET(comm_end) SET(call) SET(callsite) SET(module)
  SET(drop) SET(clock) SET(gpu_time) SET(log_line) SET(raw) SET(chunk) SET(inflight)
#undef SET
  if (m->n == 1) *out = m->v[0]; /* nothing to fan out */
}
