/* stepcost.h — what the problems cost in step time (analysis/whatif.h) for a command other than
 * `report` (compare, html): the steps' starts (analysis/stepstarts.h: the boundary metrics
 * chooses, without metrics' per-operation figures) and the `whatif` analysis run as plug-ins of
 * that command's one read of the traces. Memory: what whatif keeps (its kernels, for a file
 * with kernel activity) and, per file being read, stepstarts' bounded state.
 *
 * Contract: new() before the load; visitor() from the load's file_visitor and file_done() from
 * its file_done (files may be read in parallel: both analyses keep per-file state); finish()
 * after the load with the loader's ranks and the job's headline (transports and NVLink,
 * ncs_headline_build) returns the result, valid until free(). A command comparing runs makes
 * one per run. */
#ifndef NCS_STEPCOST_H
#define NCS_STEPCOST_H
#include "analysis/whatif.h"
#include "analysis/jobsum.h"
#include "io/mux.h"

struct ncs_headline;
struct ncs_stepcost;
/* paths[n] must live until free. NULL when out of memory. */
struct ncs_stepcost *ncs_stepcost_new(int n, char *const *paths);
void ncs_stepcost_visitor(struct ncs_stepcost *c, int file, struct ncs_mux *m);
void ncs_stepcost_file_done(struct ncs_stepcost *c, int file, const struct ncs_read_status *st);
const struct ncs_whatif *ncs_stepcost_finish(struct ncs_stepcost *c, const struct ncs_jobdata *J, struct ncs_headline *h);
void ncs_stepcost_free(struct ncs_stepcost *c);
#endif
