/* html_cmd.c — `ncclscope html PATH... -o report.html`: parses its options, reads the job once
 * with the analyses the page needs plugged in (the doctor's facts and hang checks, a few steps
 * per rank, the GPU-stream lanes, the call sites (analysis/callsites.h), a bounded trace's whole run and window, the step cost:
 * analysis/stepcost.h; with --no-doctor, each file's communication union per calling thread,
 * model/ivunion.h, for the share the doctor's facts would otherwise give), runs the doctor, the
 * headline and the what-if, and hands it all to the html renderer (render/html.h).
 * Exit (cmd/commands.h): 0 (cut traces too; the page says which), 2 bad usage, 3 damaged
 * input, 4 when nothing could be read or the page cannot be written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "cmd/commands.h"
#include "cmd/jobpick.h"
#include "analysis/jobsum.h"
#include "analysis/doctor.h"
#include "analysis/hang.h"
#include "analysis/headline.h"
#include "analysis/stepcost.h"
#include "analysis/sitefacts.h"
#include "analysis/callsites.h"
#include "analysis/steps.h"
#include "model/ivunion.h"
#include "render/gpu_lanes.h"
#include "render/html.h"

/* the loader's ctx for every plug-in of the page */
struct html_load { struct ncs_doctor *d; struct ncs_hang *hang; struct ncs_steps *steps; struct ncs_gpulanes *lanes;
                   struct ncs_stepcost *cost;
                   struct ncs_sitefacts *sites; /* call sites and communicator names for the verdicts */
                   struct ncs_window *win; /* bounded traces: whole run and window */
                   struct ncs_callsites *cs; /* the call-site table and the most exposed site */
                   struct ncs_ivu *comm; /* --no-doctor: each file's union of its data-moving calls'
                                            intervals (the share without the doctor's facts) */
                   double *comm_s;      /* [file] that union's length, s, at the file's end */ };

/* Every call, on the thread reading its file (the loader's on_file_call): the steps picture. */
static void step_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  (void)r;
  ncs_steps_call(((struct html_load *)ctx)->steps, file, e);
}
/* The same without the doctor: also the file's communication union (per calling thread:
 * model/ivunion.h), the share the doctor's facts would give. */
static void comm_step_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  const struct html_load *L = ctx;
  int kind = ncs_op_kind(e->c->op);
  if (kind == NCS_KIND_COLL || kind == NCS_KIND_P2P)
    ncs_ivu_add(&L->comm[file], e->c->thread, ncs_ivu_of_signed(e->start), ncs_ivu_of_signed(e->end));
  if (L->steps->f) step_call(ctx, file, r, e);
}
static int comm_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  (void)index; (void)dropped; (void)flags; (void)offset;
  ncs_ivu_chunk(ctx);
  return 0;
}
static void kernel_seen(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *k) {
  (void)r;
  ncs_gpulanes_add(((struct html_load *)ctx)->lanes, file, k);
}
/* The page's plug-ins: file i feeds the doctor's facts d->f[i] (when the doctor runs), the hang
 * checks, the step cost, the call sites and the window. */
static void facts_visitor(void *ctx, int file, struct ncs_mux *m) {
  const struct html_load *L = ctx;
  if (L->d->f) ncs_dfacts_attach(L->d->f[file], m);
  if (L->comm && m->n < NCS_MUX_MAX) {
    ncs_ivu_by_chunk(&L->comm[file]);
    m->v[m->n++] = (struct ncs_visitor){.ctx = &L->comm[file], .chunk = comm_chunk};
  }
  if (L->win && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_window_visitor(L->win, file, &m->v[m->n++]);
  }
  if (L->hang && m->n < NCS_MUX_MAX) ncs_hang_visitor(L->hang, file, &m->v[m->n++]);
  ncs_stepcost_visitor(L->cost, file, m);
  if (L->sites && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_sitefacts_visitor(L->sites, file, &m->v[m->n++]);
  }
  if (L->cs && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_callsites_visitor(L->cs, file, &m->v[m->n++]);
  }
}
static void facts_done(void *ctx, int file, int rc, const struct ncs_read_status *st) {
  const struct html_load *L = ctx;
  if (L->d->f) ncs_dfacts_finish(L->d->f[file], rc, st);
  if (L->hang) ncs_hang_file_done(L->hang, file, rc, st);
  if (L->win) ncs_window_file_done(L->win, file);
  if (L->comm) L->comm_s[file] = ncs_ivu_total(&L->comm[file]) / 1e9;
  ncs_stepcost_file_done(L->cost, file, st);
  /* after the facts' finish: their kernel-activity figures (without the doctor: exposed unknown) */
  if (L->cs) ncs_callsites_file_done(L->cs, file, L->d->f ? &L->d->f[file]->gpu : NULL);
}

int cmd_html(int argc, char **argv) {
  static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'}, {"no-doctor", no_argument, NULL, 'D'}, NCS_JOB_OPTION, {0}};
  static const struct ncs_cli cli = {
    "html",
    "usage: ncclscope html [--no-doctor] [--job ID] PATH... -o report.html\n"
    "One self-contained HTML page (no script, no network) with the job's verdict first, charts\n"
    "and tables after.\n"
    "  -o, --output FILE   where to write it (- for standard output)\n"
    "  --no-doctor         leave out the doctor's verdicts\n"
    NCS_JOB_HELP
    "  -h, --help          this text\n"
    "Exit: 0 (cut traces too: the page says which), 2 bad usage, 3 damaged, 4 unreadable input.\n",
    opts, 0};
  const char *out = NULL, *want_job = NULL;
  int doctor = 1, r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'o') out = optarg;
    else if (r == 'D') doctor = 0;
    else if (r == 'J') want_job = optarg;
    else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&cli, "no PATH given");
  if (!out) return ncs_cli_fail(&cli, "no output file: -o report.html");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope html: no trace files\n"); return NCS_EXIT_UNREADABLE; }
  if (want_job && (r = ncs_pick_job("html", want_job, &n, &files))) { ncs_paths_free(files, n); return r; }
  struct ncs_steps steps;
  ncs_steps_init(&steps, n);
  struct ncs_load_opts o = {.progress_label = "html"};
  struct ncs_doctor doc;
  memset(&doc, 0, sizeof doc);
  struct html_load L = {&doc, doctor ? ncs_hang_new(n, files, NCS_HANG_DEFAULT_S) : NULL, &steps, ncs_gpulanes_new(),
                        ncs_stepcost_new(n, files), /* NULL (out of memory): the section says not computed */
                        doctor ? ncs_sitefacts_new(n) : NULL, ncs_window_new(n), ncs_callsites_new(n), NULL, NULL};
  struct ncs_jobdata *J = NULL;
  FILE *f = NULL;
  int rc = NCS_EXIT_UNREADABLE;
  struct ncs_jobsum_events ev = {.ctx = &L};
  o.ctx = &L;
  if (!doctor && (!(L.comm = calloc((size_t)n, sizeof *L.comm)) || !(L.comm_s = calloc((size_t)n, sizeof *L.comm_s)))) {
    fprintf(stderr, "ncclscope html: out of memory\n"); rc = NCS_EXIT_USAGE; goto done;
  }
  /* per-file state only: no lock a call */
  ev.on_file_call = L.comm ? comm_step_call : steps.f ? step_call : NULL;
  if (L.lanes) ev.on_kernel = kernel_seen;
  if (doctor && (doc.f = calloc((size_t)n, sizeof *doc.f)) != NULL) {
    for (doc.n = 0; doc.n < n; doc.n++)
      if (!(doc.f[doc.n] = ncs_dfacts_new(files[doc.n]))) break;
  }
  if ((doctor && doc.n != n) || !L.win) { fprintf(stderr, "ncclscope html: out of memory\n"); rc = NCS_EXIT_USAGE; goto done; }
  o.file_visitor = facts_visitor;
  o.file_done = facts_done;
  if (ncs_jobsum_load(n, files, &o, &ev, &J) || !J) { fprintf(stderr, "ncclscope html: no trace could be read\n"); goto done; }
  if ((r = ncs_one_job("html", J->jobs, files))) { rc = r; goto done; }
  if (!(f = strcmp(out, "-") ? fopen(out, "w") : stdout)) { perror(out); goto done; }
  ncs_callsites_finish(L.cs);
  int doctor_ran = 0;
  if (doctor) {
    int unreadable = 0;
    for (int i = 0; i < doc.n; i++) unreadable |= doc.f[i]->read_rc == 2;
    if (!unreadable) {
      doc.strag = J->strag; /* the loader's straggler engine, for the straggler check */
      ncs_doctor_run(&doc);
      if (L.hang) { ncs_hang_finish(L.hang); ncs_hang_to_doctor(L.hang, &doc); }
      ncs_callsites_to_doctor(L.cs, &doc);
      if (L.sites) ncs_sitefacts_name_verdicts(L.sites, &doc, 0);
      doctor_ran = 1;
    }
  }
  struct ncs_headline h;
  memset(&h, 0, sizeof h);
  h.slowest_rank = -1;
  if (doctor_ran) ncs_headline_build(&h, &doc);
  /* before the headline is printed: whatif puts each problem's cost on its line, as in report */
  const struct ncs_whatif *cost = ncs_stepcost_finish(L.cost, J, &h);
  if (doctor_ran) {
    ncs_headline_add_stragglers(&h, J->strag);
    ncs_headline_add_top_op(&h, J); /* the dominant operation, as report's metrics finds it */
    ncs_headline_add_callsite(&h, L.cs);
  }
  struct ncs_window_sum *win = malloc(sizeof *win);
  if (win && !ncs_window_sum(L.win, win)) { free(win); win = NULL; }
  struct ncs_html_page page = {J, doctor ? &doc : NULL, doctor_ran, L.hang, doctor_ran ? &h : NULL,
                               steps.f ? &steps : NULL, L.lanes, win, cost, L.cs, L.comm_s, L.comm};
  int werr = ncs_html_write(f, &page) != 0;
  free(win);
  if (f != stdout && fclose(f) != 0) werr = 1;
  f = NULL;
  if (werr) { fprintf(stderr, "ncclscope html: write error on %s\n", out); goto done; }
  rc = NCS_EXIT_OK; /* a cut trace is normal input */
  for (int i = 0; i < J->n; i++) rc = ncs_exit_worse(rc, ncs_exit_of_read(J->r[i].read_rc));
done:
  if (f && f != stdout) fclose(f);
  ncs_job_free(J);
  ncs_doctor_free(&doc);
  ncs_hang_free(L.hang);
  ncs_sitefacts_free(L.sites);
  ncs_callsites_free(L.cs);
  ncs_gpulanes_free(L.lanes);
  ncs_window_free(L.win);
  ncs_stepcost_free(L.cost);
  ncs_steps_free(&steps);
  if (L.comm) for (int i = 0; i < n; i++) ncs_ivu_free(&L.comm[i]);
  free(L.comm);
  free(L.comm_s);
  ncs_paths_free(files, n);
  return rc;
}
