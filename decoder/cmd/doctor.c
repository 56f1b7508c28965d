/* doctor.c — `ncclscope doctor [--json] PATH...`: verdicts on a traced job, each with its
 * evidence and a concrete next step (docs/DOCTOR.md lists them with their thresholds).
 *
 * Contract: PATH: files or directories of *.ncs; a file that is not a trace but a text NCCL
 * log is read as a log. Every trace is read once, by the loader (model/jobload.h, files in
 * parallel), into per-process facts (analysis/doctor_facts.h); the checks
 * (analysis/doctor.h) run over the whole job and their verdicts are printed as text or JSON
 * (render/doctor_render.h). The hang checks (analysis/hang.h: desync, dead rank, init hang,
 * hang) read the same files in the same pass, as a second plug-in, and come first. Exit codes
 * (cmd/commands.h): 0 no check fired, 1 a problem found, 2 bad usage, 3 a damaged trace (used
 * up to the damage; verdicts still printed), 4 an input that cannot be read or no trace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "analysis/doctor.h"
#include "analysis/hang.h"
#include "analysis/window.h"
#include "render/window_render.h"
#include "analysis/headline.h"
#include "analysis/straggler.h"
#include "analysis/sitefacts.h"
#include "analysis/callsites.h"
#include "render/headline_render.h"
#include "base/cli.h"
#include "cmd/jobpick.h"
#include "cmd/commands.h"
#include "model/jobload.h"
#include "io/readcount.h"
#include "io/regfile.h"
#include "io/trace.h"
#include "ncclscope/format.h"
#include "render/doctor_render.h"

/* 1 trace (or a directory of traces), 0 a text file, -1 missing or not a regular file. */
#define NCS_DOCTOR_SCREEN 40 /* lines of doctor's default text (docs/DOCTOR.md) */

static int is_trace_file(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return -1;
  if (S_ISDIR(sb.st_mode)) return 1;
  FILE *fp = ncs_fopen_regular(path, NULL, 0); /* never blocks; ncs_paths_expand says why */
  if (!fp) return -1;
  ncs_readcount_peek(path);
  char magic[8];
  size_t n = fread(magic, 1, 8, fp);
  fclose(fp);
  return n == 8 && !memcmp(magic, NCS_FILE_MAGIC, 8);
}

static int add_facts(struct ncs_doctor *d, int *cap, struct ncs_dfacts *f) {
  if (d->n == *cap) {
    int nc = *cap ? *cap * 2 : 64;
    struct ncs_dfacts **p = realloc(d->f, (size_t)nc * sizeof *p);
    if (!p) return -1;
    d->f = p;
    *cap = nc;
  }
  d->f[d->n++] = f;
  return 0;
}

/* The loader's plug-ins: trace file i feeds facts d->f[slot[i]], the hang checks, the
 * straggler engine (report's `stragglers` analysis: the same lining up as report and html) and
 * the call sites and communicator names of the verdicts, and a bounded trace's window. */
struct facts_load { struct ncs_doctor *d; const int *slot; struct ncs_hang *hang; void *strag; struct ncs_sitefacts *sites;
                    struct ncs_window *win; struct ncs_callsites *cs; };
static void facts_visitor(void *ctx, int file, struct ncs_mux *m) {
  const struct facts_load *L = ctx;
  ncs_dfacts_attach(L->d->f[L->slot[file]], m);
  if (L->hang && m->n < NCS_MUX_MAX) ncs_hang_visitor(L->hang, file, &m->v[m->n++]);
  if (L->strag && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_analysis_stragglers.visitor(L->strag, file, &m->v[m->n++]);
  }
  if (L->sites && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_sitefacts_visitor(L->sites, file, &m->v[m->n++]);
  }
  if (L->win && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_window_visitor(L->win, file, &m->v[m->n++]);
  }
  if (L->cs && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_callsites_visitor(L->cs, file, &m->v[m->n++]);
  }
}

static void facts_done(void *ctx, int file, int rc, const struct ncs_read_status *st) {
  const struct facts_load *L = ctx;
  ncs_dfacts_finish(L->d->f[L->slot[file]], rc, st);
  if (L->hang) ncs_hang_file_done(L->hang, file, rc, st);
  if (L->strag) ncs_analysis_stragglers.file_done(L->strag, file, st);
  if (L->win) ncs_window_file_done(L->win, file);
  /* after the facts' finish: their kernel-activity figures price each site's exposed time */
  if (L->cs) ncs_callsites_file_done(L->cs, file, &L->d->f[L->slot[file]]->gpu);
}

static const struct option doctor_opts[] = {{"json", no_argument, NULL, 'j'}, {"detail", no_argument, NULL, 'd'},
                                            {"hang-after", required_argument, NULL, 'a'}, NCS_JOB_OPTION, {0}};
static const struct ncs_cli doctor_cli = {
  "doctor",
  "usage: ncclscope doctor [--json] [--detail] [--hang-after SECONDS] [--job ID] PATH...\n"
  "Verdicts with their evidence and a next step (docs/DOCTOR.md). PATH: trace files, trace\n"
  "directories, or plain NCCL debug logs.\n"
  "  -j, --json                the verdicts as JSON\n"
  "  -d, --detail              every evidence line and every blamed rank's figure (by default\n"
  "                            a first screen: each verdict's ranks as ranges, worst first)\n"
  "  -a, --hang-after SECONDS  a rank is blamed for not arriving once it was seen alive that\n"
  "                            long after a peer arrived (default 2)\n"
  "  --job ID                  one job of traces holding several (`ncclscope jobs` lists them)\n"
  "  -h, --help                this text\n"
  "Exit: 0 healthy, 1 a problem found, 2 bad usage, 3 damaged input, 4 unreadable input.\n",
  doctor_opts, 0};

int cmd_doctor(int argc, char **argv) {
  int json = 0, detail = 0, rc = 0, cap = 0, nt = 0, r;
  double hang_after = NCS_HANG_DEFAULT_S;
  struct ncs_hang *hang = NULL;
  struct ncs_rank_info *infos = NULL; /* the straggler analysis' view of the files */
  struct ncs_job sjob;
  struct ncs_strag *strag = NULL;
  void *sstate = NULL;
  struct ncs_sitefacts *sites = NULL;
  struct ncs_window *win = NULL;
  struct ncs_callsites *cs = NULL; /* the most exposed call site, for comm-bound and the headline */
  const char *want_job = NULL;
  while ((r = ncs_cli_next(&doctor_cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'j') json = 1;
    else if (r == 'd') detail = 1;
    else if (r == 'J') want_job = optarg;
    else if (r == 'a') {
      if (ncs_cli_double(&doctor_cli, "--hang-after", optarg, &hang_after) != 0) return NCS_EXIT_USAGE;
      if (!(hang_after >= 0 && hang_after < 1e6)) return ncs_cli_fail(&doctor_cli, "--hang-after wants seconds >= 0");
    } else return ncs_cli_exit(r);
  }
  int np = argc - optind;
  if (np <= 0) return ncs_cli_fail(&doctor_cli, "no PATH given");
  char **paths = calloc((size_t)np + 1, sizeof *paths);
  char **tfiles = NULL; /* trace files, in input order */
  int *slot = NULL;     /* their facts' index in d.f */
  struct ncs_doctor d;
  memset(&d, 0, sizeof d);
  if (!paths) return 2;
  for (int i = 0; i < np; i++) paths[i] = argv[optind + i];
  for (int i = 0; i < np && rc == 0; i++) {
    int t = is_trace_file(paths[i]);
    if (t == 0) { /* a text NCCL log */
      struct ncs_dfacts *f = ncs_dfacts_new(paths[i]);
      if (!f) { rc = 2; break; }
      if (ncs_tmodel_file(&f->log, paths[i]) != 0) {
        fprintf(stderr, "ncclscope doctor: %s: %s\n", paths[i], strerror(errno));
        ncs_dfacts_free(f);
        rc = 2;
        break;
      }
      if (!f->log.lines_nccl) { /* neither a trace nor a log of NCCL's: no verdict on it */
        fprintf(stderr, "ncclscope doctor: %s: not an ncclscope trace (no NCSTRACE file header at offset 0) and no NCCL "
                        "log line in it (%ld lines read)\n", paths[i], f->log.lines);
        ncs_dfacts_free(f);
        rc = 2;
        break;
      }
      if (f->log.nconns) snprintf(f->host, sizeof f->host, "%s", f->log.conns[0].host);
      else if (f->log.nvers) snprintf(f->host, sizeof f->host, "%s", f->log.vers[0].host);
      if (add_facts(&d, &cap, f)) { ncs_dfacts_free(f); rc = 2; }
      continue;
    }
    char **files = NULL;
    int nf = ncs_paths_expand(1, &paths[i], &files);
    if (nf < 0) { rc = 2; break; }
    char **nt2 = realloc(tfiles, (size_t)(nt + nf + 1) * sizeof *nt2);
    if (nt2) tfiles = nt2;
    int *ns = nt2 ? realloc(slot, (size_t)(nt + nf + 1) * sizeof *ns) : NULL;
    if (ns) slot = ns;
    for (int k = 0; k < nf; k++) {
      struct ncs_dfacts *f = ns ? ncs_dfacts_new(files[k]) : NULL;
      if (!f || add_facts(&d, &cap, f)) { ncs_dfacts_free(f); free(files[k]); rc = 2; continue; }
      tfiles[nt] = files[k];
      slot[nt++] = d.n - 1;
    }
    free(files);
  }
  if (rc == 0 && nt && want_job) { /* --job: only that job's traces (and the logs) */
    int *keep = NULL, nk = ncs_pick_job_index("doctor", want_job, nt, tfiles, &keep);
    if (nk < 0) { rc = -nk; goto done; }
    char *drop = calloc((size_t)d.n + 1, 1);
    if (!drop) { free(keep); rc = 2; goto done; }
    for (int k = 0, m = 0; k < nt; k++) {
      if (m < nk && keep[m] == k) { m++; continue; }
      drop[slot[k]] = 1;
      free(tfiles[k]);
      tfiles[k] = NULL;
    }
    int *remap = calloc((size_t)d.n + 1, sizeof *remap), w = 0;
    for (int i = 0; remap && i < d.n; i++) {
      remap[i] = w;
      if (drop[i]) ncs_dfacts_free(d.f[i]); else d.f[w++] = d.f[i];
    }
    if (remap) d.n = w;
    int m = 0;
    for (int k = 0; remap && k < nt; k++)
      if (tfiles[k]) { tfiles[m] = tfiles[k]; slot[m++] = remap[slot[k]]; }
    if (remap) nt = m;
    free(remap); free(drop); free(keep);
    if (!remap) { rc = 2; goto done; }
  }
  if (rc == 0 && nt) {
    hang = ncs_hang_new(nt, tfiles, hang_after);
    infos = calloc((size_t)nt, sizeof *infos);
    for (int k = 0; infos && k < nt; k++) infos[k].path = tfiles[k];
    sjob = (struct ncs_job){.n = nt, .rank = infos, .strag = &strag};
    if (infos) sstate = ncs_analysis_stragglers.create(&sjob);
    sites = ncs_sitefacts_new(nt);
    win = ncs_window_new(nt);
    cs = ncs_callsites_new(nt);
    struct facts_load fl = {&d, slot, hang, sstate, sites, win, cs};
    struct ncs_load_opts lo = {.ctx = &fl, .file_visitor = facts_visitor, .file_done = facts_done};
    struct ncs_jobread *jd = NULL;
    ncs_job_load(nt, tfiles, &lo, &jd);
    int one = ncs_one_job("doctor", jd ? jd->jobs : NULL, tfiles);
    ncs_jobread_free(jd);
    if (one) { rc = one; goto done; }
    for (int k = 0; k < nt; k++) {
      const struct ncs_dfacts *f = d.f[slot[k]];
      if (f->read_rc == 2) { fprintf(stderr, "ncclscope doctor: %s\n", f->error[0] ? f->error : tfiles[k]); rc = 2; }
      else if (f->read_rc == 1) fprintf(stderr, "ncclscope doctor: warning: %s (using the records before it)\n", f->error);
    }
  }
  if (rc == 0 && d.n == 0) {
    fprintf(stderr, "ncclscope doctor: no trace found in the given paths\n");
    rc = 2;
  }
  if (rc == 0) {
    if (strag) { ncs_strag_finish(strag); d.strag = strag; } /* for the straggler check */
    ncs_doctor_run(&d);
    if (hang) { ncs_hang_finish(hang); ncs_hang_to_doctor(hang, &d); }
    ncs_callsites_finish(cs);
    ncs_callsites_to_doctor(cs, &d);
    if (sites) ncs_sitefacts_name_verdicts(sites, &d, detail);
    if (json) ncs_doctor_print_json(&d, stdout);
    else {
      struct ncs_headline h; /* the job's answer first, as `report` and `html` give it */
      ncs_headline_build(&h, &d);
      if (strag) ncs_headline_add_stragglers(&h, strag);
      ncs_headline_add_callsite(&h, cs);
      /* the job's facts, then the verdicts (not listed twice); the whole a first screen of
       * NCS_DOCTOR_SCREEN lines unless --detail */
      char *head = NULL;
      size_t hlen = 0;
      int hlines = 0;
      FILE *m = open_memstream(&head, &hlen);
      if (m) { ncs_headline_print_text(&h, m, 0); fclose(m); }
      for (size_t k = 0; head && k < hlen; k++) hlines += head[k] == '\n';
      if (head) fwrite(head, 1, hlen, stdout);
      free(head);
      struct ncs_window_sum *ws = malloc(sizeof *ws);
      if (ws && ncs_window_sum(win, ws)) {
        char kt[64], wa[48], wb[48];
        ncs_window_keep_text(ws, kt, sizeof kt);
        ncs_window_utc(ws->t0_utc, wa, sizeof wa);
        ncs_window_utc(ws->t1_utc, wb, sizeof wb);
        printf("Bounded trace (NCCLSCOPE_KEEP: %s; %d of %d files): these verdicts are of the last window only, %s to %s "
               "(%llu of the run's %llu calls); whole-run calls, bytes and bandwidth: ncclscope report\n",
               kt, ws->files, ws->nfiles, wa, wb, (unsigned long long)ws->win_calls,
               (unsigned long long)(ws->agg_calls + ws->win_calls));
        hlines++;
      }
      free(ws);
      fputc('\n', stdout);
      ncs_doctor_print_text(&d, stdout, detail, NCS_DOCTOR_SCREEN - hlines - 1);
    }
    rc = ncs_doctor_problems(&d) ? NCS_EXIT_FINDING : NCS_EXIT_OK;
    for (int i = 0; i < d.n; i++)
      if (d.f[i]->read_rc == 1) rc = ncs_exit_worse(rc, NCS_EXIT_DAMAGED);
  } else {
    rc = NCS_EXIT_UNREADABLE; /* bad usage returned earlier: what is left is input */
  }
done:
  ncs_doctor_free(&d);
  ncs_hang_free(hang);
  if (sstate) ncs_analysis_stragglers.destroy(sstate);
  free(infos);
  ncs_sitefacts_free(sites);
  ncs_window_free(win);
  ncs_callsites_free(cs);
  for (int k = 0; k < nt; k++) free(tfiles[k]);
  free(tfiles);
  free(slot);
  free(paths);
  return rc;
}
