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
MUX_CB(callsite, struct ncs_callsite)
MUX_CB(module, struct ncs_module)
MUX_CB(drop, struct ncs_drop)
MUX_CB(clock, struct ncs_clock)
MUX_CB(log_line, struct ncs_log_line)
MUX_CB(raw, struct ncs_raw)
MUX_CB(inflight, struct ncs_inflight)
#undef MUX_CB
/* CALL and GPU_TIME come once or more per call: their receivers are in flat lists */
#define MUX_FLAT_CB(field, T, RX, L, NL) \
  static int mux_##field(void *ctx, const T *x) { \
    struct ncs_mux *m = ctx; int stop = 0; \
    if (m->NL < 0) { /* too many to list: every sub-visitor, as the other records */ \
      for (int i = 0; i < m->n; i++) \
        if (m->v[i].field && m->v[i].field(m->v[i].ctx, x)) stop = 1; \
      return stop; \
    } \
    /* walked by pointer, the end in a local: nothing reloaded from m after each call */ \
    for (const struct RX *p = m->L, *end = p + m->NL; p < end; p++) stop |= p->fn(p->ctx, x); \
    return stop != 0; \
  }
MUX_FLAT_CB(call, struct ncs_call, ncs_mux_call_rx, callv, ncall)
MUX_FLAT_CB(gpu_time, struct ncs_gpu_time, ncs_mux_gpu_rx, gpuv, ngpu)
#undef MUX_FLAT_CB
/* Appends receiver (fn, ctx) to list L of m, or the receivers of the mux it is; NL -1 when
 * they do not fit. */
#define FLATTEN(L, NL, field) do { \
    if (m->NL < 0) break; \
    const struct ncs_mux *sub = fn == mux_##field ? ctx : NULL; \
    if (sub && sub->NL >= 0 && m->NL + sub->NL <= NCS_MUX_FLAT) \
      for (int k = 0; k < sub->NL; k++) m->L[m->NL++] = sub->L[k]; \
    else if (!sub && m->NL < NCS_MUX_FLAT) { m->L[m->NL].fn = fn; m->L[m->NL++].ctx = ctx; } \
    else m->NL = -1; \
  } while (0)
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
  m->ncall = m->ngpu = 0;
  for (int i = 0; i < m->n; i++) {
    void *ctx = m->v[i].ctx;
    if (m->v[i].call) { int (*fn)(void *, const struct ncs_call *) = m->v[i].call; FLATTEN(callv, ncall, call); }
    if (m->v[i].gpu_time) { int (*fn)(void *, const struct ncs_gpu_time *) = m->v[i].gpu_time; FLATTEN(gpuv, ngpu, gpu_time); }
  }
#define SET(field) for (int i = 0; i < m->n; i++) if (m->v[i].field) { out->field = mux_##field; break; }
  SET(process) SET(thread) SET(comm) SET(comm_end) SET(call) SET(callsite) SET(module)
  SET(drop) SET(clock) SET(gpu_time) SET(log_line) SET(raw) SET(chunk) SET(inflight)
#undef SET
  if (m->n == 1) *out = m->v[0]; /* nothing to fan out */
}
