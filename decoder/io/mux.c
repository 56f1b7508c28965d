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
/* one fan-out per per-record callback of the visitor, expanded from NCS_RECORDS as the
 * visitor's members are (io/trace.h); a RAW record's is `raw`'s, below */
#define MUX_REC_(T, name, st, rd) MUX_REC_##rd##_##st(name)
#define MUX_REC_VISIT_PLAIN(name) MUX_CB(name, struct ncs_##name)
#define MUX_REC_VISIT_DELTA(name) /* CALL, GPU_TIME: the run lists below */
#define MUX_REC_RAW_PLAIN(name)
#define MUX_REC_PROCESS_PLAIN(name) MUX_CB(process, struct ncs_process)
NCS_RECORDS(MUX_REC_)
#undef MUX_REC_
MUX_CB(raw, struct ncs_raw)
#undef MUX_CB
/* A run of CALL or GPU_TIME records to each receiver of flat list L in turn (walked by pointer,
 * the ends in locals: nothing reloaded from m after each call): a run receiver gets the run in
 * one call, a per-record receiver (`one` set) a call per record, made from here (no adapter
 * in between: with CALL and GPU_TIME interleaved most runs are one record long). */
#define MUX_RUN_CB(fields, T, RX, L, NL) \
  static int mux_##fields(void *ctx, const T *x, size_t n) { \
    const struct ncs_mux *m = ctx; \
    int stop = 0; \
    for (const struct RX *p = m->L, *end = p + m->NL; p < end; p++) { \
      if (!p->one) stop |= p->run(p->ctx, x, n); \
      else for (const T *y = x, *ye = x + n; y < ye; y++) stop |= p->one(p->octx, y); \
    } \
    return stop != 0; \
  }
MUX_RUN_CB(calls, struct ncs_call, ncs_mux_call_rx, callv, ncall)
MUX_RUN_CB(gpu_times, struct ncs_gpu_time, ncs_mux_gpu_rx, gpuv, ngpu)
#undef MUX_RUN_CB
/* Appends sub-visitor i's receiver of list L (its run callback `fields`, else its per-record
 * `field`): the receivers of the mux it is when they fit with a slot left
 * for each later sub-visitor, else the visitor itself (a nested mux then costs one call per
 * run). */
#define FLATTEN(L, NL, field, fields) do { \
    const struct ncs_visitor *s_ = &m->v[i]; \
    if (!s_->fields && !s_->field) break; \
    const struct ncs_mux *sub = s_->fields == mux_##fields ? s_->ctx : NULL; \
    if (sub && m->NL + sub->NL + (m->n - 1 - i) <= NCS_MUX_FLAT) { \
      for (int k = 0; k < sub->NL; k++) m->L[m->NL++] = sub->L[k]; \
    } else if (s_->fields) { \
      m->L[m->NL++] = (struct RX_##L){.run = s_->fields, .ctx = s_->ctx}; \
    } else { \
      m->L[m->NL++] = (struct RX_##L){.one = s_->field, .octx = s_->ctx}; \
    } \
  } while (0)
/* The run lists are CALL's and GPU_TIME's: a new DELTA record needs one of its own here. */
#define MUX_DELTA_(T, name, st, rd) + MUX_DELTA_##st
#define MUX_DELTA_DELTA 1
#define MUX_DELTA_PLAIN 0
_Static_assert(0 NCS_RECORDS(MUX_DELTA_) == 2, "each DELTA record has its run list (callv, gpuv)");
#undef MUX_DELTA_
#define RX_callv ncs_mux_call_rx
#define RX_gpuv ncs_mux_gpu_rx
/* A KERNEL run: to each sub-visitor's `kernels`, else record by record to its `raw`. */
static int mux_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  const struct ncs_mux *m = ctx;
  int stop = 0;
  for (int i = 0; i < m->n; i++) {
    const struct ncs_visitor *s = &m->v[i];
    if (s->kernels) stop |= s->kernels(s->ctx, k, raw, n);
    else if (s->raw)
      for (size_t j = 0; j < n; j++) stop |= s->raw(s->ctx, &raw[j]);
  }
  return stop != 0;
}
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
  /* the DELTA records' callbacks (CALL, GPU_TIME) are the run lists above */
#define SET_REC_(T, name, st, rd) SET_REC_##rd##_##st(name)
#define SET_REC_VISIT_PLAIN(name) SET(name)
#define SET_REC_VISIT_DELTA(name)
#define SET_REC_RAW_PLAIN(name)
#define SET_REC_PROCESS_PLAIN(name) SET(process)
  NCS_RECORDS(SET_REC_)
  SET(raw) SET(kernels) SET(chunk)
#undef SET_REC_
#undef SET
  if (m->n == 1) *out = m->v[0]; /* nothing to fan out */
}
