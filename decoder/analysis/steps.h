/* steps.h — a few steps of every rank, kept during the one read for the html page's "steps"
 * picture: which ranks it draws (the slowest, the median and the fastest to arrive, any the
 * headline names) and the run's end are known only after the read.
 *
 * Contract: for each checkpoint c_k of the job clock (0, then 2^(k+19) ns: 0.5 ms, 1 ms, 2 ms,
 * ...) every file keeps its first NCS_STEP_CALLS data-moving calls starting at or after c_k,
 * allocated when the first such call comes (a 2 s run fills 13 checkpoints: 13 x 32 x 16 B =
 * 6.6 KiB a file, 27 MiB at 4,096 files). ncs_steps_call() is the loader's on_file_call (on the
 * thread reading the file: it touches that file's entry only, analysis/jobsum.h); a call it cannot
 * keep (no memory) is left out of the picture. */
#ifndef NCS_STEPS_H
#define NCS_STEPS_H
#include <stdint.h>
#include "analysis/jobsum.h"

#define NCS_STEP_CKPT 44
#define NCS_STEP_CALLS 32
struct ncs_step_span { int64_t s; uint32_t dur, op; }; /* dur: ns, at most 4.29 s */
struct ncs_step_file {
  int n[NCS_STEP_CKPT];
  struct ncs_step_span *sp[NCS_STEP_CKPT];
  int full;     /* checkpoints 0..full-1 hold NCS_STEP_CALLS calls each: a call skips them */
};
struct ncs_steps { int nfiles; struct ncs_step_file *f; };

/* Checkpoint k's job-clock time, ns. */
static inline int64_t ncs_step_ckpt(int k) { return k ? (int64_t)1 << (k + 19) : 0; }
/* 0, or -1 when out of memory (then s->f is NULL). */
int ncs_steps_init(struct ncs_steps *s, int nfiles);
void ncs_steps_call(struct ncs_steps *s, int file, const struct ncs_jev *e);
void ncs_steps_free(struct ncs_steps *s);
#endif
