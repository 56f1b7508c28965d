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
/* A run of CALL or GPU_TIME records to each receiver of flat list L in turn, one call each
 * (walked by pointer, the ends in locals: nothing reloaded from m after each call). A
 * per-record receiver's entry calls an adapter (one_<fields>) with the entry as its context,
 * which loops over the run. */
#define MUX_RUN_CB(fields, T, RX, L, NL) \
  static int one_##fields(void *e, const T *x, size_t n) { \
    const struct RX *p = e; \
    int stop = 0; \
    for (const T *y = x, *ye = x + n; y < ye; y++) stop |= p->one(p->octx, y); \
    return stop; \
  } \
  static int mux_##fields(void *ctx, const T *x, size_t n) { \
    const struct ncs_mux *m = ctx; \
    int stop = 0; \
    for (const struct RX *p = m->L, *end = p + m->NL; p < end; p++) stop |= p->run(p->ctx, x, n); \
    return stop != 0; \
  }
MUX_RUN_CB(calls, struct ncs_call, ncs_mux_call_rx, callv, ncall)
MUX_RUN_CB(gpu_times, struct ncs_gpu_time, ncs_mux_gpu_rx, gpuv, ngpu)
#undef MUX_RUN_CB
/* Appends sub-visitor i's receiver of list L (its run callback `fields`, else its per-record
 * `field` through the adapter): the receivers of the mux it is when they fit with a slot left
 * for each later sub-visitor, else the visitor itself (a nested mux then costs one call per
 * run). A copied adapter entry keeps pointing at the sub-mux's entry (same receiver). */
#define FLATTEN(L, NL, field, fields) do { \
    const struct ncs_visitor *s_ = &m->v[i]; \
    if (!s_->fields && !s_->field) break; \
    const struct ncs_mux *sub = s_->fields == mux_##fields ? s_->ctx : NULL; \
    if (sub && m->NL + sub->NL + (m->n - 1 - i) <= NCS_MUX_FLAT) { \
      for (int k = 0; k < sub->NL; k++) m->L[m->NL++] = sub->L[k]; \
    } else if (s_->fields) { \
      m->L[m->NL++] = (struct RX_##L){.run = s_->fields, .ctx = s_->ctx}; \
    } else { \
      m->L[m->NL] = (struct RX_##L){.run = one_##fields, .ctx = &m->L[m->NL], .one = s_->field, .octx = s_->ctx}; \
      m->NL++; \
    } \
  } while (0)
#define RX_callv ncs_mux_call_rx
#define RX_gpuv ncs_mux_gpu_rx
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
    FLATTEN(callv, ncall, call, calls);
    FLATTEN(gpuv, ngpu, gpu_time, gpu_times);
  }
  if (m->ncall) out->calls = mux_calls;
  if (m->ngpu) out->gpu_times = mux_gpu_times;
#define SET(field) for (int i = 0; i < m->n; i++) if (m->v[i].field) { out->field = mux_##field; break; }
  SET(process) SET(thread) SET(comm) SET(comm_end) SET(callsite) SET(module)
  SET(drop) SET(clock) SET(log_line) SET(raw) SET(chunk) SET(inflight)
#undef SET
  if (m->n == 1) *out = m->v[0]; /* nothing to fan out */
}
