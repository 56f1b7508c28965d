/* callsites.h — which line of the job issued its NCCL calls and what each line cost, as data:
 * one row per call site over the job, most exposed first (docs/CLI.md, "Call sites"). The one
 * computation behind `report --callsites` (the `callsites` analysis, analysis/analysis.h),
 * html's call-site table and the doctor's comm-bound evidence.
 *
 * Contract: ncs_callsites_new(n) for n trace files; ncs_callsites_visitor(cs, file, v) fills a
 * loader visitor for that file (files may be read in parallel: per-file state only);
 * ncs_callsites_file_done(cs, file, g) after the file's read, with its kernel-activity figures
 * (model/kact.h; NULL or !g->have: its exposed time is unknown); ncs_callsites_finish(cs) once,
 * on one thread, after every file: names the sites (io/symbolize.h reads the job's ELF files
 * here) and the communicators (model/commnames.h), merges the rows and sorts them by exposed
 * time, then GPU time, then host time, most first. Then ncs_callsites_rows() gives them.
 * Exposed time is a model (callsites.c's top comment). Memory: per file its sites (at most the
 * shim's 2048) and communicators; nothing per call. */
#ifndef NCS_CALLSITES_H
#define NCS_CALLSITES_H
#include <stddef.h>
#include <stdint.h>

#include "io/trace.h"
#include "model/kact.h"
#include "io/symbolize.h"

struct ncs_cs_slow { uint64_t ns; uint32_t op, comm; uint64_t seq; int gpu; };
/* One call site of the job: its calls on every rank. */
struct ncs_csrow {
  char key[320], where[512];      /* where: "func (file:line)" as model/callsites.h names it */
  char file[256], func[256];
  int line;                       /* 0 without source lines */
  enum ncs_sym_state state;       /* of its module's file */
  int fidx; uint32_t id;          /* a file holding this site and its id there (its stack) */
  uint32_t op, mixed;             /* mixed: more than one operation from this line */
  uint64_t calls, bytes, host_ns, gpu_ns, gpu_calls;
  uint64_t exp_ns, exp_gpu_ns;    /* exposed GPU time, and the GPU time it was modelled from
                                     (0: unknown, no kernel activity) */
  int ranks;                      /* files that issued calls from it */
  struct ncs_cs_slow slow;        /* its slowest call (GPU time where it has any) */
  int slow_file;
  char slow_comm[200];            /* that call's communicator, named (commnames.h), "" none */
  uint64_t slow_comm_id;
  int nstack; char **stack;       /* its stack, innermost first, each frame named */
};

struct ncs_callsites;
struct ncs_callsites *ncs_callsites_new(int nfiles);
void ncs_callsites_free(struct ncs_callsites *cs);
void ncs_callsites_visitor(struct ncs_callsites *cs, int file, struct ncs_visitor *v);
void ncs_callsites_file_done(struct ncs_callsites *cs, int file, const struct ncs_kact_fig *g);
void ncs_callsites_finish(struct ncs_callsites *cs);
/* The rows after finish, most exposed first: their count, *rows pointing at them. */
size_t ncs_callsites_rows(const struct ncs_callsites *cs, const struct ncs_csrow **rows);
/* Why there is no row: "NCCLSCOPE_CALLSITE_DEPTH=0" when every file said so, else "not recorded". */
const char *ncs_callsites_missing(const struct ncs_callsites *cs);
/* 1 when source lines could be read (libdw is installed). */
int ncs_callsites_have_lines(const struct ncs_callsites *cs);
/* Calls of the operations sites are recorded for that had none (counted, not in a row). */
uint64_t ncs_callsites_without(const struct ncs_callsites *cs);
/* The most exposed site (rows[0] when its exposed time is known and above 0), else NULL. */
const struct ncs_csrow *ncs_callsites_most_exposed(const struct ncs_callsites *cs);

/* What report's `callsites` analysis (report --callsites) returns, after its finish(); valid
 * until its destroy(); NULL without --callsites. render/callsites_render.h prints it. */
struct ncs_callsites_result {
  size_t nrow; const struct ncs_csrow *row; /* ncs_callsites_rows */
  const char *missing;                     /* why there is no row: ncs_callsites_missing */
  int have_lines;                          /* ncs_callsites_have_lines */
};

/* The doctor's comm-bound verdict names the most exposed call site, with its figure, as its
 * second evidence line (docs/DOCTOR.md "comm-bound"); nothing when there is no such verdict or
 * site. */
struct ncs_doctor;
void ncs_callsites_to_doctor(const struct ncs_callsites *cs, struct ncs_doctor *d);
#endif
