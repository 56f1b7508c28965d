/* stepstarts.h — where each file's steps start, for a command that needs them without the
 * `metrics` analysis (html and compare, through analysis/stepcost.h): the boundary is chosen by
 * the rule metrics uses (model/stepmark.h, over the same first records), and every counted
 * boundary's entry time goes to the run's stages (model/stages.h) as metrics puts them in
 * `report`: the same starts from the same file.
 *
 * Contract: new() before the load, with the stages the starts go to (they must outlive it);
 * visitor() from the load's file_visitor and file_done() from its file_done, before the
 * readers of the starts' file_done of that file (files may be read in parallel: per-file
 * state only). Memory per file being read: the signature table (128 KiB), its first calls
 * while the boundary is not chosen (24 bytes a call, at most NCS_STEPMARK_HOLD) and the starts
 * (model/stages.h: 4 bytes a step, dropped for a file without kernel activity,
 * model/kwatch.h; a file that says so before its calls has none of this: no call is counted);
 * nothing is kept once the file is done. */
#ifndef NCS_STEPSTARTS_H
#define NCS_STEPSTARTS_H
#include "io/trace.h"
#include "model/stages.h"

struct ncs_stepstarts;
/* NULL when out of memory. */
struct ncs_stepstarts *ncs_stepstarts_new(int nfiles, struct ncs_stages *stages);
void ncs_stepstarts_visitor(struct ncs_stepstarts *s, int file, struct ncs_visitor *v);
void ncs_stepstarts_file_done(struct ncs_stepstarts *s, int file);
void ncs_stepstarts_free(struct ncs_stepstarts *s);
#endif
