/* timeline.h — the timeline renderer: a Chrome trace / Perfetto JSON file of every traced call
 * and kernel on the job clock (render/timeline.c states what is written and how it is bounded).
 *
 * Contract: ncs_timeline_new() makes the renderer for nfiles files (their events go to a spool,
 * an unlinked temporary file, during the read); ncs_timeline_plug() sets its callbacks in the
 * loader's options, for the command's one read; after that read ncs_timeline_write() writes
 * the files of the job (keep[0..nk), NULL: every file) to cfg->out and says on stderr what it
 * left out. new and write return an exit code (base/exit.h) after their message: 0, 2 (no file
 * holds a chosen rank), 3 damaged input (still written), 4 (spool or output not writable, out
 * of memory). ncs_timeline_new() owns cfg->sel from its call on, even when it fails; ncs_timeline_free()
 * takes NULL. */
#ifndef NCS_TIMELINE_H
#define NCS_TIMELINE_H
#include <stdint.h>
#include "analysis/jobsum.h"

struct ncs_timeline_cfg {
  const char *out;        /* output path, "-" standard output, a name ending in .gz compressed */
  int64_t max_kernels;    /* kernels written per process, -1 no cap, 0 none */
  const char *ranks;      /* --ranks as given (messages; "all"), NULL when not given */
  unsigned char *sel;     /* --ranks parsed: ranks [0, nsel) chosen (malloc'ed, the renderer's
                             from ncs_timeline_new on); NULL every rank, or the culprits past 64 */
  int nsel;
  int windowed;           /* --window T0:T1 given: w0, w1 seconds on the timeline's axis */
  double w0, w1;
  double max_mb;          /* --max-mb: bound on the JSON's size, 0 none */
};
struct ncs_timeline;

int ncs_timeline_new(int nfiles, const struct ncs_timeline_cfg *cfg, struct ncs_timeline **t);
void ncs_timeline_plug(struct ncs_timeline *t, struct ncs_load_opts *o, struct ncs_jobsum_events *ev);
/* After a first read of the same files by the loader alone (J, the job's files keep[0..nk),
 * NULL every file): past 64 ranks with no --ranks, the ranks written are rank 0 and the
 * straggler analysis' culprits, known only once every file was read; chosen here, the
 * timeline's own read spools their events only (else every event waits in the spool: 6.5 GB
 * at 1024 ranks x 100k calls). Returns an exit code (out of memory) or 0. */
int ncs_timeline_choose(struct ncs_timeline *t, const struct ncs_jobdata *J, const int *keep, int nk);
int ncs_timeline_write(struct ncs_timeline *t, const struct ncs_jobdata *J, const int *keep, int nk);
void ncs_timeline_free(struct ncs_timeline *t);
#endif
