/* callsites.h — one trace's call sites (CALLSITE and MODULE records) and the names a user knows
 * for them: the first frame in the job's own code, as function + source file:line where the
 * files allow (io/symbolize.h), and the whole stack (docs/CLI.md, "Call sites").
 *
 * Contract: ncs_sites_module / ncs_sites_callsite copy each record (a file's records in file
 * order; ids and module indexes mean something only within the file). ncs_sites_name(t, id,
 * sym, &n) names an id after the read: `n.where` is the first frame outside the runtime —
 * NCCL, the shim, the C and C++ runtimes, the loader, CUDA's runtime and Python's interpreter
 * (ncs_frame_is_runtime) — else the innermost frame; `n.key` the same frame as
 * "module+0xOFFSET", equal across ranks running one build (the rows of a job merge on it); and
 * ncs_sites_frame names frame k of the stack (innermost first). A name is
 * "func (file:line)", "func+0xOFF (module)" without lines, "module+0xOFF" without a symbol,
 * taking the symbol the shim recorded (dynamic symbols only) when the file is missing or
 * changed, and saying so ("[module changed since the run]"). Not thread-safe; one table per file. */
#ifndef NCS_MODEL_CALLSITES_H
#define NCS_MODEL_CALLSITES_H
#include <stddef.h>
#include <stdint.h>

#include "io/symbolize.h"
#include "ncclscope/records.h"

struct ncs_sites;
struct ncs_sites *ncs_sites_new(void);
void ncs_sites_free(struct ncs_sites *t);
void ncs_sites_module(struct ncs_sites *t, const struct ncs_module *m);
void ncs_sites_callsite(struct ncs_sites *t, const struct ncs_callsite *c);
/* Sites defined (0: the trace has none). */
size_t ncs_sites_count(const struct ncs_sites *t);

struct ncs_site_name {
  char where[512];   /* the job's frame, named */
  char key[320];     /* module basename + offset of that frame: equal across ranks of one build */
  char func[256];    /* its function, "" when unknown */
  char file[256];    /* its source file, "" without lines */
  int line;          /* 0 without lines */
  int frame;         /* its index in the stack, -1 when the id is unknown */
  int nframes;
  enum ncs_sym_state state; /* of its module's file */
};
/* 0, or -1 when the id has no CALLSITE record (n->where then says "unknown call site"). */
int ncs_sites_name(const struct ncs_sites *t, uint32_t id, struct ncs_symbolizer *sym, struct ncs_site_name *n);
/* Frame k of id's stack, named as above, into buf. 0, or -1 past the last frame. */
int ncs_sites_frame(const struct ncs_sites *t, uint32_t id, int k, struct ncs_symbolizer *sym, char *buf, size_t n);
/* 1 when a frame in the module at `path` with symbol `func` (either may be NULL) belongs to the
 * runtime, not to the job (see above). */
int ncs_frame_is_runtime(const char *path, const char *func);
#endif
