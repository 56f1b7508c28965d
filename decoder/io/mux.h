/* mux.h — one read, many readers: a visitor that hands every record to several visitors.
 *
 * Contract: fill v[0..n-1] (each with its own ctx; NULL callbacks are skipped), then
 * ncs_mux_build() sets `out` to a visitor calling, for each record, every sub-visitor that has
 * that callback, in index order; the read stops when any of them asks to stop. With one
 * sub-visitor `out` is that visitor itself (no fan-out cost). The mux must outlive the read. */
#ifndef NCS_MUX_H
#define NCS_MUX_H
#include "io/trace.h"

#define NCS_MUX_MAX 17
struct ncs_mux { struct ncs_visitor v[NCS_MUX_MAX]; int n; };

void ncs_mux_build(struct ncs_mux *m, struct ncs_visitor *out);
#endif
