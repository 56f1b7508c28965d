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
/* A stretch (trace.h): whole to each receiver with `stretch`, then its CALL records as a run
 * to each other CALL receiver, then its GPU_TIME records to each other GPU_TIME receiver. */
static int mux_stretch(void *ctx, const struct ncs_stretch *s) {
  const struct ncs_mux *m = ctx;
  int stop = 0;
  for (const struct ncs_mux_stretch_rx *p = m->stv, *end = p + m->nst; p < end; p++) stop |= p->fn(p->ctx, s);
  if (s->nc)
    for (const struct ncs_mux_call_rx *p = m->callv, *end = p + m->ncall; p < end; p++) {
      if (p->st) continue;
      if (!p->one) stop |= p->run(p->ctx, s->c, s->nc);
      else for (size_t i = 0; i < s->nc; i++) stop |= p->one(p->octx, &s->c[i]);
    }
  if (s->ng)
    for (const struct ncs_mux_gpu_rx *p = m->gpuv, *end = p + m->ngpu; p < end; p++) {
      if (p->st) continue;
      if (!p->one) stop |= p->run(p->ctx, s->g, s->ng);
      else for (size_t i = 0; i < s->ng; i++) stop |= p->one(p->octx, &s->g[i]);
    }
  return stop != 0;
}
/* The run lists are CALL's and GPU_TIME's: a new DELTA record needs one of its own here. */
#define MUX_DELTA_(T, name, st, rd) + MUX_DELTA_##st
#define MUX_DELTA_DELTA 1
#define MUX_DELTA_PLAIN 0
_Static_assert(0 NCS_RECORDS(MUX_DELTA_) == 2, "each DELTA record has its run list (callv, gpuv)");
#undef MUX_DELTA_
/* Appends sub-visitor s's receivers (i: its index; later ones keep a slot in each list): the
 * receivers of the mux it is when they fit, else the visitor itself (a nested mux then costs
 * one call per run or stretch). */
static void flatten(struct ncs_mux *m, int i) {
  const struct ncs_visitor *s = &m->v[i];
  const struct ncs_mux *sub = s->stretch == mux_stretch ? s->ctx : NULL;
  int later = m->n - 1 - i;
  if (sub && m->ncall + sub->ncall + later <= NCS_MUX_FLAT && m->ngpu + sub->ngpu + later <= NCS_MUX_FLAT &&
      m->nst + sub->nst + later <= NCS_MUX_FLAT) {
    for (int k = 0; k < sub->ncall; k++) m->callv[m->ncall++] = sub->callv[k];
    for (int k = 0; k < sub->ngpu; k++) m->gpuv[m->ngpu++] = sub->gpuv[k];
    for (int k = 0; k < sub->nst; k++) m->stv[m->nst++] = sub->stv[k];
    return;
  }
  int st = s->stretch != NULL;
  if (st) m->stv[m->nst++] = (struct ncs_mux_stretch_rx){s->stretch, s->ctx};
  if (s->calls) m->callv[m->ncall++] = (struct ncs_mux_call_rx){.run = s->calls, .ctx = s->ctx, .st = st};
  else if (s->call) m->callv[m->ncall++] = (struct ncs_mux_call_rx){.one = s->call, .octx = s->ctx, .st = st};
  if (s->gpu_times) m->gpuv[m->ngpu++] = (struct ncs_mux_gpu_rx){.run = s->gpu_times, .ctx = s->ctx, .st = st};
  else if (s->gpu_time) m->gpuv[m->ngpu++] = (struct ncs_mux_gpu_rx){.one = s->gpu_time, .octx = s->ctx, .st = st};
}
/* A column chunk's KERNEL run has no raw[] (trace.h): their stored bodies, rebuilt from k for
 * a receiver that takes them through `raw` (made[], in body[]: NCS_KERNEL_BODY_MAX each). */
#define NCS_KERNEL_BODY_MAX (10 * NCS_NF_kernel)
static const struct ncs_raw *kernel_rows(const struct ncs_kernel *k, size_t n, struct ncs_raw *made, uint8_t *body) {
  for (size_t j = 0; j < n; j++) {
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, body, NCS_KERNEL_BODY_MAX);
    ncs_enc_kernel_body(&w, &k[j]);
    made[j] = (struct ncs_raw){NCS_REC_KERNEL, body, w.len};
    body += NCS_KERNEL_BODY_MAX;
  }
  return made;
}
/* A KERNEL run: to each sub-visitor's `kernels`, else record by record to its `raw`. */
static int mux_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  const struct ncs_mux *m = ctx;
  struct ncs_raw made[NCS_KERNEL_RUN];
  uint8_t body[NCS_KERNEL_RUN * NCS_KERNEL_BODY_MAX];
  int stop = 0;
  for (int i = 0; i < m->n; i++) {
    const struct ncs_visitor *s = &m->v[i];
    if (s->kernels) stop |= s->kernels(s->ctx, k, raw, n);
    else if (s->raw) {
      if (!raw) raw = kernel_rows(k, n, made, body); /* n <= NCS_KERNEL_RUN (trace.h) */
      for (size_t j = 0; j < n; j++) stop |= s->raw(s->ctx, &raw[j]);
    }
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
  m->ncall = m->ngpu = m->nst = 0;
  for (int i = 0; i < m->n; i++) flatten(m, i);
  if (m->ncall) out->calls = mux_calls;
  if (m->ngpu) out->gpu_times = mux_gpu_times;
  if (m->ncall || m->ngpu || m->nst) out->stretch = mux_stretch;
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
