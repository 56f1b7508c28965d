/* mux.h — one read, many readers: a visitor that hands every record to several visitors.
 *
 * Contract: fill v[0..n-1] (each with its own ctx; NULL callbacks are skipped), then
 * ncs_mux_build() sets `out` to a visitor calling, for each record, every sub-visitor that has
 * that callback, in index order; the read stops when any of them asks to stop. CALL and
 * GPU_TIME records go a run at a time (trace.h): each receiver in turn gets the whole run, as
 * the run (its `calls` / `gpu_times`) or record by record (its `call` / `gpu_time`), so a
 * receiver sees its records in file order but may see a run before an earlier receiver has
 * seen all of it; a stop takes effect after the run. A column chunk's stretch (trace.h: CALL and
 * GPU_TIME records with no other record between them, up to a block of each) goes to each
 * receiver that has `stretch` whole, with its interleaving, and to every other receiver as its
 * CALL records (the run, as above), then its GPU_TIME records: such a receiver sees each type
 * in file order, and every other record in its place, but a GPU_TIME record may come after
 * CALL records (at most a block) that followed it in the file. A receiver whose result could
 * depend on that interleaving sets `stretch` (ncs_stretch_in_order replays it in file order).
 * The receivers with `stretch` get a stretch first, then the others' CALL runs, then their
 * GPU_TIME runs (receivers never read one another's state, so their order is free).
 * docs/ARCHITECTURE.md lists the receivers that set `stretch` and why the others need not.
 * KERNEL runs (`kernels`, decoded once by the reader) go the same way: to a receiver's `kernels`, or record by record to its `raw` when it
 * has no `kernels`; `out` has `kernels` when a sub-visitor has. With one sub-visitor `out` is that
 * visitor itself (no fan-out cost). A sub-visitor may be another mux's `out` (built before
 * this one): its receivers are called in its place, same order. The mux (and any mux in it)
 * must outlive the read. */
#ifndef NCS_MUX_H
#define NCS_MUX_H
#include "io/trace.h"

#define NCS_MUX_MAX 17
#define NCS_MUX_FLAT (2 * NCS_MUX_MAX) /* CALL and GPU_TIME receivers, nested muxes flattened */
struct ncs_mux {
  struct ncs_visitor v[NCS_MUX_MAX];
  int n;
  /* set by ncs_mux_build: the receivers of the per-call records (CALL, GPU_TIME), in order,
   * a sub-visitor that is itself a built mux replaced by its own receivers when they fit (one
   * indirect call per receiver and run, none per level): run(ctx, x, n), the receiver's own
   * run callback, or for a per-record receiver (one set, run NULL) one(octx, record), which
   * the mux calls for each record of the run */
  struct ncs_mux_call_rx {
    int (*run)(void *, const struct ncs_call *, size_t);
    void *ctx;
    int (*one)(void *, const struct ncs_call *);
    void *octx;
    int st;          /* the receiver takes stretches (stv): left out of the stretches' runs */
  } callv[NCS_MUX_FLAT];
  struct ncs_mux_gpu_rx {
    int (*run)(void *, const struct ncs_gpu_time *, size_t);
    void *ctx;
    int (*one)(void *, const struct ncs_gpu_time *);
    void *octx;
    int st;
  } gpuv[NCS_MUX_FLAT];
  struct ncs_mux_stretch_rx { /* the receivers with `stretch`, flattened the same way */
    int (*fn)(void *, const struct ncs_stretch *);
    void *ctx;
  } stv[NCS_MUX_FLAT];
  int ncall, ngpu, nst;
};

void ncs_mux_build(struct ncs_mux *m, struct ncs_visitor *out);
#endif
