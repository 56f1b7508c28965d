/* compare.c — `ncclscope compare [options] BASE... NEW`: a CI regression gate between runs.
 *
 * Contract: each BASE and NEW is a trace directory or file (one job each). Rows are
 * (operation, size bucket) with the transports each run used; per row: calls, aggregate bus
 * bandwidth and mean time per call as report states them, and the samples of both runs (one
 * per collective: its last rank's call; one per Send/Recv call; analysis/gate_samples.h),
 * judged by analysis/gate.h: a row regresses when, above the noise floor (at least --min-calls
 * calls in both runs, at least --min-share percent of the base's communication time), the
 * confidence interval of its busbw change lies wholly below -(--busbw-drop percent + the runs'
 * drift) or that of its time change wholly above --time-rise + drift (the drift: the largest
 * shift between a run's second half and its first, any run of the row); a row
 * whose interval holds the threshold is "not enough calls to judge" (no failure); the intervals
 * share a false-alarm budget of ALPHA (Bonferroni). With several BASE runs their calls are
 * pooled and a row's threshold is the larger of the flag and twice the spread of the runs'
 * medians. A transport change that loses NVLink-class transports (P2P, NVLS) is always a
 * regression, other transport changes are reported; the communication share (blocks of each
 * rank's window) is judged the same way against --share-rise points. Method and measured
 * false-alarm and detection rates: docs/COMPARE.md. Runs naming the same files (realpath, in
 * order) are read once; the new run's step split (analysis/stepcost.h) is made only when a base
 * run has one, the only case ncs_stepdiff reads it. Output: text, --markdown (CI job summaries)
 * or --json (version 2).
 * Exit 1 on regression, 0 otherwise, 2 on bad usage or unreadable input. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/doctor.h"
#include "analysis/gate.h"
#include "analysis/gate_samples.h"
#include "analysis/headline.h"
#include "analysis/stepcost.h"
#include "analysis/stepdiff.h"
#include "base/cli.h"
#include "cmd/jobpick.h"
#include "cmd/commands.h"
#include "analysis/jobsum.h"
#include "base/json.h"
#include "io/nccllog.h"
#include "model/rules.h"
#include "model/shift.h"
#include "ncclscope/ops.h"

struct thresholds { double busbw_drop, time_rise, share_rise, min_share; long min_calls; };
static const struct thresholds DEFAULTS = {10.0, 10.0, 5.0, 1.0, 10};
/* The gate's false-alarm budget for one comparison, shared by every figure it judges
 * (docs/COMPARE.md, "Method"). */
#define ALPHA 0.05

#define MAX_RUNS 16
struct side { uint64_t calls; double time_s, busbytes; unsigned tmask; char tnames[48]; };
struct row {
  uint32_t op; int bucket;
  struct side run[MAX_RUNS + 1]; /* base runs 0..K-1, then the new run */
  struct side s[2];        /* [0] the base (median run, transports of all base runs), [1] new */
  double bw[2], tpc[2];    /* busbw GB/s, time per call us */
  double tol_bw, tol_t;    /* thresholds used: the flags, or twice the base runs' spread */
  double dbw, dt;          /* percent changes of the aggregates */
  double mbw[2], mtpc[2];  /* medians of the samples: busbw GB/s, time us (base: all base runs') */
  int above_floor;         /* judged: enough calls and share (the statistics may still say too few) */
  struct ncs_gate_fig gbw, gt; /* the judgements of per-collective busbw and time (analysis/gate.h) */
  int regress_bw, regress_t, too_few, tchange, tregress;
};

static unsigned mask_of(const char *t) {
  unsigned m = 0;
  for (int c = NCS_TC_UNKNOWN + 1; c <= NCS_TC_NVLS; c++) {
    const char *n = ncs_tclass_name(c);
    const char *p = t;
    size_t ln = strlen(n);
    while ((p = strstr(p, n))) {
      if ((p == t || p[-1] == '+') && (p[ln] == 0 || p[ln] == '+')) { m |= 1u << c; break; }
      p += ln;
    }
  }
  return m;
}

static struct row *row_get(struct row **rows, int *n, int *cap, uint32_t op, int bucket) {
  for (int i = 0; i < *n; i++) if ((*rows)[i].op == op && (*rows)[i].bucket == bucket) return &(*rows)[i];
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 32;
    struct row *p = realloc(*rows, (size_t)nc * sizeof *p);
    if (!p) return NULL;
    *rows = p; *cap = nc;
  }
  struct row *r = &(*rows)[(*n)++];
  memset(r, 0, sizeof *r);
  r->op = op; r->bucket = bucket;
  return r;
}

/* Median of n values (sorts them: ncs_sort_asc leaves values in order as they are after one
 * look); 0 when n is 0. */
static double median(double *v, int n) {
  if (n <= 0) return 0;
  ncs_sort_asc(v, n); /* model/shift.h */
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_row(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  return x->bucket - y->bucket;
}

/* The doctor's facts of each file, gathered in the same read: the run's communication share is
 * the headline's (median rank; analysis/headline.h), as report, doctor and html state it. */
struct side_load { struct ncs_doctor d; struct ncs_gsamples *G; struct ncs_stepcost *C; };
static void facts_visitor(void *ctx, int file, struct ncs_mux *m) {
  ncs_dfacts_attach(((struct side_load *)ctx)->d.f[file], m);
  ncs_stepcost_visitor(((struct side_load *)ctx)->C, file, m);
  ncs_gsamples_attach(((struct side_load *)ctx)->G, file, m);
}
static void facts_done(void *ctx, int file, int rc, const struct ncs_read_status *st) {
  ncs_dfacts_finish(((struct side_load *)ctx)->d.f[file], rc, st);
  ncs_stepcost_file_done(((struct side_load *)ctx)->C, file, st);
  ncs_gsamples_done(((struct side_load *)ctx)->G, file);
}
/* Every call, in runs: the gate's samples (analysis/gate_samples.h), on the thread reading its file. */
static void sample_calls(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e, size_t n) {
  ncs_gsamples_calls(((struct side_load *)ctx)->G, file, e, n);
}

/* One run's trace files (job `want` of them when not NULL): *files, *nfiles. Returns 0, or the
 * exit code after a message. */
static int side_files(const char *path, const char *want, int *nfiles, char ***files) {
  char *p[1] = {(char *)path};
  int n = ncs_paths_expand(1, p, files), e;
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope compare: %s: no trace files\n", path); return NCS_EXIT_UNREADABLE; }
  *nfiles = n;
  if (want && (e = ncs_pick_job("compare", want, nfiles, files))) return e;
  return 0;
}

/* 1 when the runs' file lists name the same files in the same order (realpath): what one read
 * of them gives is what a second read would (compare of a run against itself reads it once). */
static int same_files(int n, char **a, int m, char **b) {
  if (n != m) return 0;
  char ra[PATH_MAX], rb[PATH_MAX];
  for (int i = 0; i < n; i++)
    if (strcmp(a[i], b[i]) && (!realpath(a[i], ra) || !realpath(b[i], rb) || strcmp(ra, rb))) return 0;
  return 1;
}

/* Loads one run, its n files; *share is its communication share in percent (NaN when no rank
 * can be judged), *G the gate's samples, *W where its step time goes (analysis/whatif.h;
 * W->have 0 when unknown, and without `steps`: not looked for). Returns 0, or the exit code
 * after a message. */
static int load_side(const char *path, int n, char **files, int steps, struct ncs_jobdata **J, double *share,
                     struct ncs_gsamples **G, struct ncs_whatif *W) {
  int e;
  struct side_load L;
  memset(&L, 0, sizeof L);
  if (!(L.G = *G = ncs_gsamples_new(n))) { fprintf(stderr, "ncclscope compare: out of memory\n"); return NCS_EXIT_UNREADABLE; }
  memset(W, 0, sizeof *W);
  L.C = steps ? ncs_stepcost_new(n, files) : NULL; /* NULL (or out of memory): no step-time figures */
  struct ncs_doctor *d = &L.d;
  d->f = calloc((size_t)n, sizeof *d->f);
  for (d->n = 0; d->f && d->n < n; d->n++) {
    if (!(d->f[d->n] = ncs_dfacts_new(files[d->n]))) break;
    d->f[d->n]->kact_elsewhere = 1; /* no kernel figures: compare states none (nor does whatif read them) */
    d->f[d->n]->busbw_unused = 1;   /* nor the large collectives' busbw (the headline's busbw_med) */
  }
  if (!d->f || d->n < n) {
    ncs_doctor_free(d);
    ncs_stepcost_free(L.C);
    fprintf(stderr, "ncclscope compare: out of memory\n");
    return NCS_EXIT_UNREADABLE;
  }
  struct ncs_load_opts o = {.progress_label = "compare", .ctx = &L, .file_visitor = facts_visitor, .file_done = facts_done};
  struct ncs_jobsum_events ev = {.ctx = &L, .on_file_calls = sample_calls, .no_stragglers = 1}; /* none is printed */
  if (ncs_jobsum_load(n, files, &o, &ev, J) || !*J) {
    fprintf(stderr, "ncclscope compare: %s: no trace could be read\n", path);
    ncs_doctor_free(d);
    ncs_stepcost_free(L.C);
    return NCS_EXIT_UNREADABLE;
  }
  if ((e = ncs_one_job("compare", (*J)->jobs, files))) { ncs_doctor_free(d); ncs_stepcost_free(L.C); return e; }
  struct ncs_headline h;
  ncs_headline_build(&h, d);
  *share = 100.0 * h.share_med;
  const struct ncs_whatif *w = ncs_stepcost_finish(L.C, *J, &h);
  if (w) *W = *w;
  ncs_stepcost_free(L.C);
  ncs_doctor_free(d);
  return 0;
}

/* 1 when run k's block shares may be low (its union placed intervals late: gate_samples.h),
 * and no earlier run is the same load. */
static int late_run(struct ncs_gsamples *const *RS, int k) {
  if (!RS[k] || !RS[k]->late) return 0;
  for (int j = 0; j < k; j++) if (RS[j] == RS[k]) return 0;
  return 1;
}

static const char *bucket_label(int b, char *buf, size_t n) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = b / 10;
  if (k > 4) k = 4;
  snprintf(buf, n, "%d %s", 1 << (b - 10 * k), u[k]);
  return buf;
}

/* ---- where the step-time change comes from (analysis/stepdiff.h) ---- */

/* The base run to explain against: the one run, or the base run of median step time. */
static void step_diff(const struct ncs_whatif *W, int K, struct ncs_stepdiff *sd) {
  int idx[MAX_RUNS], m = 0;
  for (int k = 0; k < K; k++) if (W[k].have) idx[m++] = k;
  for (int a = 1; a < m; a++) /* by step, insertion sort */
    for (int b = a; b > 0 && W[idx[b]].step_s < W[idx[b - 1]].step_s; b--) { int t = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = t; }
  ncs_stepdiff(m ? &W[idx[(m - 1) / 2]] : &W[0], &W[K], sd);
}

/* A kernel operation's largest row (the most base communication time): its size, median
 * per-collective busbw and transports in the base runs and the new run. */
struct op_sides { const struct row *r; };
static void op_sides(const struct row *rows, int nrows, int K, const char *kop, struct op_sides *o) {
  o->r = NULL;
  double best = -1;
  for (int i = 0; i < nrows; i++) {
    const char *n = ncs_op_name(rows[i].op);
    if (!n || !(strcmp(n, kop) == 0 || (!strcmp(kop, "SendRecv") && (!strcmp(n, "Send") || !strcmp(n, "Recv"))))) continue;
    double t = 0;
    for (int k = 0; k < K; k++) t += rows[i].run[k].time_s;
    if (t > best) { best = t; o->r = &rows[i]; }
  }
}

/* "AllReduce transfer (busbw 70.89 -> 20.12 GB/s, P2P -> SHM)" */
static void part_label(const struct ncs_stepdiff_part *p, const struct row *rows, int nrows, int K, char *buf, size_t n) {
  if (!strcmp(p->id, "transfer")) {
    struct op_sides o;
    op_sides(rows, nrows, K, p->op, &o);
    int k = snprintf(buf, n, "%s transfer", p->op);
    char sz[32];
    if (o.r && k > 0 && (size_t)k < n) {
      (void)sz;
      if (p->gbps_base > 0 && p->gbps_new > 0)
        k += snprintf(buf + k, n - (size_t)k, " (busbw %.1f -> %.1f GB/s", p->gbps_base, p->gbps_new);
      else k += snprintf(buf + k, n - (size_t)k, " (");
      if ((size_t)k < n && strcmp(o.r->s[0].tnames, o.r->s[1].tnames))
        k += snprintf(buf + k, n - (size_t)k, "%s%s -> %s", p->gbps_base > 0 && p->gbps_new > 0 ? ", " : "", o.r->s[0].tnames, o.r->s[1].tnames);
      if ((size_t)k < n) snprintf(buf + k, n - (size_t)k, ")");
      if (buf[strlen(buf) - 2] == '(') buf[strlen(buf) - 2] = 0; /* nothing to say */
    }
  } else if (!strcmp(p->id, "waiting")) {
    if (p->rank >= 0) snprintf(buf, n, "waiting for other ranks (a straggler: rank %d last in most in the new run)", p->rank);
    else snprintf(buf, n, "waiting for other ranks");
  } else if (!strcmp(p->id, "overlap")) snprintf(buf, n, "overlap (transfer hidden under compute or other communication)");
  else if (!strcmp(p->id, "idle")) snprintf(buf, n, "idle GPU (host gaps, launches)");
  else if (!strcmp(p->id, "remainder")) snprintf(buf, n, "remainder (smaller parts; medians over ranks do not add up exactly)");
  else snprintf(buf, n, "%s", p->id);
}

static void step_text(const struct ncs_stepdiff *sd, const struct row *rows, int nrows, int K, int md) {
  char l[224];
  if (!sd->have) {
    printf("%sstep time on the GPU: not compared (%s)\n", md ? "\n" : "  ", sd->why_not);
    return;
  }
  double pct = sd->base_s > 0 ? 100.0 * sd->change_s / sd->base_s : 0;
  printf("%sstep %+.0f%% (%.3f -> %.3f ms per step on the GPU, median rank)", md ? "\n**" : "  ", pct, sd->base_s * 1e3, sd->new_s * 1e3);
  int said = 0;
  for (int i = 0; i < sd->n && said < 3; i++) { /* the parts that moved it the way it went */
    const struct ncs_stepdiff_part *p = &sd->p[i];
    if (!strcmp(p->id, "remainder") || p->change_s * sd->change_s <= 0) continue;
    part_label(p, rows, nrows, K, l, sizeof l);
    printf("%s %.3f ms from %s", said ? "," : ":", fabs(p->change_s) * 1e3, l);
    said++;
  }
  printf("%s\n", md ? "**" : "");
  printf("%s  where it comes from (docs/COMPARE.md \"Where a step-time change comes from\"; ms per step, base -> new):\n", md ? "\n" : "");
  for (int i = 0; i < sd->n; i++) {
    const struct ncs_stepdiff_part *p = &sd->p[i];
    part_label(p, rows, nrows, K, l, sizeof l);
    if (!strcmp(p->id, "remainder")) printf("%s    %+8.3f  %s\n", md ? "-" : "", p->change_s * 1e3, l);
    else printf("%s    %+8.3f  %s: %.3f -> %.3f\n", md ? "-" : "", p->change_s * 1e3, l, p->base_s * 1e3, p->new_s * 1e3);
  }
}

static void step_json(struct ncs_json *j, const struct ncs_stepdiff *sd, const struct row *rows, int nrows, int K) {
  char l[224];
  ncs_json_obj_begin(j, "step_time");
  ncs_json_bool(j, "computed", sd->have);
  if (!sd->have) ncs_json_str(j, "why_not", sd->why_not);
  else {
    ncs_json_num(j, "base_s", sd->base_s);
    ncs_json_num(j, "new_s", sd->new_s);
    ncs_json_num(j, "change_s", sd->change_s);
    ncs_json_num(j, "change_pct", sd->base_s > 0 ? 100.0 * sd->change_s / sd->base_s : 0);
    ncs_json_str(j, "model", "each run's step on the GPU (median rank) split into compute, each operation's transfer, "
                             "transfer hidden (overlap, negative), waiting for other ranks and idle, each part the median over "
                             "ranks per step; a part's change is new - base; the remainder closes the sum");
    ncs_json_arr_begin(j, "parts");
    for (int i = 0; i < sd->n; i++) {
      const struct ncs_stepdiff_part *p = &sd->p[i];
      ncs_json_obj_begin(j, NULL);
      ncs_json_str(j, "id", p->id);
      if (p->op) ncs_json_str(j, "op", p->op);
      if (p->rank >= 0) ncs_json_int(j, "rank", p->rank);
      part_label(p, rows, nrows, K, l, sizeof l);
      ncs_json_str(j, "what", l);
      if (p->op) {
        struct op_sides o;
        op_sides(rows, nrows, K, p->op, &o);
        if (p->gbps_base > 0 && p->gbps_new > 0) {
          ncs_json_num(j, "busbw_base_gbps", p->gbps_base);
          ncs_json_num(j, "busbw_new_gbps", p->gbps_new);
        }
        if (o.r) {
          ncs_json_str(j, "transport_base", o.r->s[0].tnames);
          ncs_json_str(j, "transport_new", o.r->s[1].tnames);
        }
      }
      if (strcmp(p->id, "remainder")) {
        ncs_json_num(j, "base_s", p->base_s);
        ncs_json_num(j, "new_s", p->new_s);
      }
      ncs_json_num(j, "change_s", p->change_s);
      ncs_json_obj_end(j);
    }
    ncs_json_arr_end(j);
  }
  ncs_json_obj_end(j);
}

static const struct option compare_opts[] = {
  {"json", no_argument, NULL, 'j'}, {"markdown", no_argument, NULL, 'm'},
  {"busbw-drop", required_argument, NULL, 'B'}, {"time-rise", required_argument, NULL, 'T'},
  {"share-rise", required_argument, NULL, 'S'}, {"min-calls", required_argument, NULL, 'C'},
  {"min-share", required_argument, NULL, 'M'}, NCS_JOB_OPTION, {"base-job", required_argument, NULL, 'b'}, {0}};

int cmd_compare(int argc, char **argv) {
  static char help[1536];
  snprintf(help, sizeof help,
           "usage: ncclscope compare [--json|--markdown] [--busbw-drop PCT] [--time-rise PCT]\n"
           "         [--share-rise POINTS] [--min-calls N] [--min-share PCT] BASE [BASE...] NEW\n"
           "The CI gate (docs/COMPARE.md). Each BASE and NEW is a run: a trace directory or file.\n"
           "A row regresses when the confidence interval of its per-collective change lies wholly\n"
           "past the threshold plus the runs' drift; 'not enough calls to judge' when it holds it (exit 0).\n"
           "Several BASE runs: their calls are pooled, twice their spread widens the threshold.\n"
           "  -j, --json, -m, --markdown   output format (markdown for CI job summaries)\n"
           "  --busbw-drop PCT   (default %.0f)   --time-rise PCT   (default %.0f)\n"
           "  --share-rise POINTS (default %.0f)  --min-calls N     (default %ld)\n"
           "  --min-share PCT    (default %.0f)   -h, --help        this text\n"
           "  --job ID, --base-job ID   NEW's job, each BASE's job, where a path holds several\n"
           "                     (`ncclscope jobs` lists them: compare --base-job 1 --job 2 DIR DIR)\n"
           "Exit: 0 no regression, 1 a regression, 2 bad usage, 3 damaged, 4 unreadable input.\n",
           DEFAULTS.busbw_drop, DEFAULTS.time_rise, DEFAULTS.share_rise, DEFAULTS.min_calls, DEFAULTS.min_share);
  const struct ncs_cli cli = {"compare", help, compare_opts, 0};
  struct thresholds th = DEFAULTS;
  int json = 0, md = 0, r, bad = 0;
  const char *side[MAX_RUNS + 1], *new_job = NULL, *base_job = NULL;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    switch (r) {
    case 'j': json = 1; break;
    case 'm': md = 1; break;
    case 'B': bad |= ncs_cli_double(&cli, "--busbw-drop", optarg, &th.busbw_drop); break;
    case 'T': bad |= ncs_cli_double(&cli, "--time-rise", optarg, &th.time_rise); break;
    case 'S': bad |= ncs_cli_double(&cli, "--share-rise", optarg, &th.share_rise); break;
    case 'M': bad |= ncs_cli_double(&cli, "--min-share", optarg, &th.min_share); break;
    case 'C': bad |= ncs_cli_long(&cli, "--min-calls", optarg, &th.min_calls); break;
    case 'J': new_job = optarg; break;
    case 'b': base_job = optarg; break;
    default: return ncs_cli_exit(r);
    }
    if (bad) return 2;
  }
  int ns = argc - optind;
  if (ns < 2) return ncs_cli_fail(&cli, "needs at least two runs: BASE [BASE...] NEW");
  if (ns > MAX_RUNS + 1) return ncs_cli_fail(&cli, "at most %d runs", MAX_RUNS + 1);
  if (json && md) return ncs_cli_fail(&cli, "--json and --markdown exclude each other");
  for (int i = 0; i < ns; i++) side[i] = argv[optind + i];
  const int K = ns - 1; /* base runs; the last path is the new run */

  struct ncs_jobdata *J[MAX_RUNS + 1] = {NULL};
  char **files[MAX_RUNS + 1] = {NULL};
  int nf[MAX_RUNS + 1] = {0};
  int rc = NCS_EXIT_UNREADABLE; /* until both sides are loaded */
  struct row *rows = NULL;
  int nrows = 0, cap = 0;
  double shs[MAX_RUNS + 1];
  struct ncs_gsamples *RS[MAX_RUNS + 1] = {NULL};
  static struct ncs_whatif W[MAX_RUNS + 1];
  struct ncs_stepdiff sd;
  double *pool_bw = NULL, *pool_t = NULL, *bsh[MAX_RUNS + 1] = {NULL};
  int nbsh[MAX_RUNS + 1] = {0};
  int same_as[MAX_RUNS + 1]; /* the earlier run reading the same files, whose load it shares; -1 */
  for (int k = 0; k <= MAX_RUNS; k++) same_as[k] = -1;
  for (int k = 0; k < ns; k++) {
    int e = side_files(side[k], k == K ? new_job : base_job, &nf[k], &files[k]);
    if (e) { rc = e; goto done; }
    for (int j = 0; j < k && same_as[k] < 0; j++)
      if (same_as[j] < 0 && same_files(nf[j], files[j], nf[k], files[k])) same_as[k] = j;
    if (same_as[k] >= 0) {
      int j = same_as[k];
      J[k] = J[j]; RS[k] = RS[j]; shs[k] = shs[j]; W[k] = W[j];
      continue;
    }
    /* the new run's step time is compared only against a base run that has one
     * (ncs_stepdiff): without, its whatif and step starts (a tenth of a run's read) are skipped */
    int steps = k < K;
    for (int j = 0; j < K && !steps; j++) steps = W[j].have;
    if ((e = load_side(side[k], nf[k], files[k], steps, &J[k], &shs[k], &RS[k], &W[k]))) { rc = e; goto done; }
    ncs_gsamples_finish(RS[k]);
  }

  double total_t[2] = {0, 0};
  for (int k = 0; k < ns; k++)
    for (int i = 0; i < J[k]->nops; i++) {
      const struct ncs_opstat *o = &J[k]->ops[i];
      if (ncs_op_bw(o->op) == NCS_BW_NONE) continue;
      struct row *r = row_get(&rows, &nrows, &cap, o->op, o->bucket);
      if (!r) goto done;
      struct side *d = &r->run[k];
      d->calls += o->calls; d->time_s += o->time_s; d->busbytes += o->busbytes;
      d->tmask |= mask_of(o->transport);
      total_t[k == K] += o->time_s / (k == K ? 1 : K);
    }
  if (nrows) qsort(rows, (size_t)nrows, sizeof *rows, cmp_row);
  int regressions = 0, changes = 0, too_few = 0, judged = 0;
  const unsigned NVL = (1u << NCS_TC_P2P) | (1u << NCS_TC_NVLS);
  if (!(pool_bw = malloc((size_t)K * NCS_GS_CAP * sizeof *pool_bw)) || !(pool_t = malloc((size_t)K * NCS_GS_CAP * sizeof *pool_t))) {
    fprintf(stderr, "ncclscope compare: out of memory\n");
    goto done;
  }
  for (int i = 0; i < nrows; i++) {
    struct row *r = &rows[i];
    /* aggregates, as report states them: the base is the median of the base runs having the row */
    double bws[MAX_RUNS], tps[MAX_RUNS];
    int nb = 0;
    for (int k = 0; k < K; k++) {
      const struct side *d = &r->run[k];
      r->s[0].tmask |= d->tmask;
      if (!d->calls || d->time_s <= 0) continue;
      bws[nb] = d->busbytes / d->time_s / 1e9;
      tps[nb] = d->time_s / (double)d->calls * 1e6;
      if (!r->s[0].calls || d->calls < r->s[0].calls) r->s[0].calls = d->calls; /* fewest calls: the floor */
      r->s[0].time_s += d->time_s / K;
      nb++;
    }
    r->bw[0] = median(bws, nb);
    r->tpc[0] = median(tps, nb);
    r->s[1] = r->run[K];
    r->bw[1] = r->s[1].time_s > 0 ? r->s[1].busbytes / r->s[1].time_s / 1e9 : 0;
    r->tpc[1] = r->s[1].calls ? r->s[1].time_s / (double)r->s[1].calls * 1e6 : 0;
    for (int k = 0; k < 2; k++) ncs_tmask_name(r->s[k].tmask, r->s[k].tnames, sizeof r->s[k].tnames);
    r->dbw = r->bw[0] > 0 ? 100.0 * (r->bw[1] - r->bw[0]) / r->bw[0] : 0;
    r->dt = r->tpc[0] > 0 ? 100.0 * (r->tpc[1] - r->tpc[0]) / r->tpc[0] : 0;
    r->above_floor = r->s[0].calls >= (uint64_t)th.min_calls && r->s[1].calls >= (uint64_t)th.min_calls &&
                     total_t[0] > 0 && total_t[1] > 0 &&
                     100.0 * r->s[0].time_s / total_t[0] >= th.min_share; /* the base's weight decides */
    judged += r->above_floor;
    if (r->s[0].calls && r->s[1].calls && r->s[0].tmask && r->s[1].tmask && r->s[0].tmask != r->s[1].tmask) {
      r->tchange = 1;
      changes++;
      /* NVLink-class transport in the base that the new run no longer uses */
      r->tregress = (r->s[0].tmask & NVL) && !(r->s[1].tmask & NVL & r->s[0].tmask);
    }
  }
  /* The false-alarm budget ALPHA is shared by the figures judged (two a row: busbw and time;
   * and the communication share; Bonferroni): each interval is at 1 - ALPHA / figures. */
  const double conf = 1.0 - ALPHA / (2.0 * judged + 1);
  for (int i = 0; i < nrows; i++) {
    struct row *r = &rows[i];
    /* samples: the base pools its runs'; with several base runs each run's
     * median is also taken, and twice their spread around the pooled median widens the
     * threshold (a noisy machine sets its own bar) */
    int np = 0;
    double med_k[MAX_RUNS], medt_k[MAX_RUNS];
    int nk = 0;
    for (int k = 0; k < K; k++) {
      const struct ncs_gs_row *sp = ncs_gsamples_row(RS[k], r->op, r->bucket);
      if (!sp || !sp->n) continue;
      memcpy(pool_bw + np, sp->lbw, (size_t)sp->n * sizeof *pool_bw);
      memcpy(pool_t + np, sp->lt, (size_t)sp->n * sizeof *pool_t);
      med_k[nk] = median(pool_bw + np, sp->n);
      medt_k[nk] = median(pool_t + np, sp->n);
      nk++;
      np += sp->n;
    }
    const struct ncs_gs_row *sn = ncs_gsamples_row(RS[K], r->op, r->bucket);
    int nn = sn ? sn->n : 0;
    /* the runs' own drift (second half against first half of each run, in its order), before
     * anything sorts the new run's samples: the threshold grows by the largest */
    double dr_bw = nn ? ncs_gate_drift(sn->lbw, nn) : 0, dr_t = nn ? ncs_gate_drift(sn->lt, nn) : 0;
    for (int k = 0; k < K; k++) {
      const struct ncs_gs_row *sp = ncs_gsamples_row(RS[k], r->op, r->bucket);
      if (!sp || !sp->n) continue;
      dr_bw = fmax(dr_bw, ncs_gate_drift(sp->lbw, sp->n));
      dr_t = fmax(dr_t, ncs_gate_drift(sp->lt, sp->n));
    }
    double mb = median(pool_bw, np), mt = median(pool_t, np);
    r->tol_bw = th.busbw_drop;
    r->tol_t = th.time_rise;
    for (int k = 0; k < nk && nk > 1; k++) {
      double sb = 200.0 * fabs(expm1(med_k[k] - mb)), st = 200.0 * fabs(expm1(medt_k[k] - mt));
      if (sb > r->tol_bw) r->tol_bw = sb;
      if (st > r->tol_t) r->tol_t = st;
    }
    r->mbw[0] = np ? exp(mb) : 0;
    r->mtpc[0] = np ? exp(mt) : 0;
    r->mbw[1] = nn ? exp(median(sn->lbw, nn)) : 0;
    r->mtpc[1] = nn ? exp(median(sn->lt, nn)) : 0;
    ncs_gate_judge(pool_bw, np, nn ? sn->lbw : NULL, nn, -1, 0, r->tol_bw, dr_bw, conf, &r->gbw);
    ncs_gate_judge(pool_t, np, nn ? sn->lt : NULL, nn, +1, 0, r->tol_t, dr_t, conf, &r->gt);
    if (r->above_floor) {
      r->regress_bw = r->gbw.verdict == NCS_GATE_REGRESSION;
      r->regress_t = r->gt.verdict == NCS_GATE_REGRESSION;
      r->too_few = !r->regress_bw && !r->regress_t &&
                   (r->gbw.verdict == NCS_GATE_TOO_FEW || r->gt.verdict == NCS_GATE_TOO_FEW);
    }
    too_few += r->too_few;
    regressions += r->regress_bw || r->regress_t || r->tregress;
  }
  /* The communication share: the headline's figure is shown; what is judged is the share of
   * each rank's window cut into blocks (analysis/gate_samples.h), in points. */
  double sh[2] = {median(shs, K), shs[K]};
  double tol_share = th.share_rise;
  for (int k = 0; k < K; k++) if (2 * fabs(shs[k] - sh[0]) > tol_share) tol_share = 2 * fabs(shs[k] - sh[0]);
  int npsh = 0;
  for (int k = 0; k < ns; k++) nbsh[k] = ncs_gsamples_shares(RS[k], &bsh[k]);
  for (int k = 0; k < K; k++) npsh += nbsh[k];
  double *pool_sh = malloc((size_t)(npsh ? npsh : 1) * sizeof *pool_sh);
  if (!pool_sh) { fprintf(stderr, "ncclscope compare: out of memory\n"); goto done; }
  npsh = 0;
  for (int k = 0; k < K; k++) { if (nbsh[k]) memcpy(pool_sh + npsh, bsh[k], (size_t)nbsh[k] * sizeof *pool_sh); npsh += nbsh[k]; }
  struct ncs_gate_fig gsh;
  double dr_sh = 0; /* the runs' drift: the second half of the ranks' windows against the first */
  for (int k = 0; k < ns; k++) if (nbsh[k]) dr_sh = fmax(dr_sh, ncs_gate_drift(bsh[k], nbsh[k]));
  ncs_gate_judge(pool_sh, npsh, bsh[K], nbsh[K], +1, 1, tol_share, dr_sh, conf, &gsh);
  free(pool_sh);
  int share_regress = gsh.verdict == NCS_GATE_REGRESSION;
  regressions += share_regress;
  rc = regressions ? NCS_EXIT_FINDING : NCS_EXIT_OK;
  for (int k = 0; k < ns; k++) /* a damaged input outranks the finding; a cut trace does not */
    for (int i = 0; i < J[k]->n; i++) rc = ncs_exit_worse(rc, ncs_exit_of_read(J[k]->r[i].read_rc));

  step_diff(W, K, &sd);
  char b[32];
  if (json) {
    struct ncs_json j;
    ncs_json_init(&j, stdout, 1);
    ncs_json_obj_begin(&j, NULL);
    ncs_json_int(&j, "version", 2);
    ncs_json_arr_begin(&j, "base");
    for (int k = 0; k < K; k++) ncs_json_str(&j, NULL, side[k]);
    ncs_json_arr_end(&j);
    ncs_json_str(&j, "new", side[K]);
    ncs_json_obj_begin(&j, "thresholds");
    ncs_json_num(&j, "busbw_drop_pct", th.busbw_drop);
    ncs_json_num(&j, "time_rise_pct", th.time_rise);
    ncs_json_num(&j, "share_rise_points", th.share_rise);
    ncs_json_int(&j, "min_calls", th.min_calls);
    ncs_json_num(&j, "min_share_pct", th.min_share);
    ncs_json_obj_end(&j);
    ncs_json_obj_begin(&j, "method");
    ncs_json_str(&j, "test", "hodges-lehmann shift of log per-collective figures (last rank in), mann-whitney interval, "
                             "threshold plus the runs' half-to-half drift");
    ncs_json_num(&j, "family_alpha", ALPHA);
    ncs_json_int(&j, "figures_judged", 2 * judged);
    ncs_json_num(&j, "confidence", conf);
    ncs_json_obj_end(&j);
    ncs_json_arr_begin(&j, "rows");
    for (int i = 0; i < nrows; i++) {
      const struct row *r = &rows[i];
      ncs_json_obj_begin(&j, NULL);
      ncs_json_str(&j, "op", ncs_op_name(r->op));
      ncs_json_uint(&j, "bucket_bytes", r->bucket ? 1ull << r->bucket : 0);
      ncs_json_str(&j, "transport_base", r->s[0].tnames);
      ncs_json_str(&j, "transport_new", r->s[1].tnames);
      ncs_json_uint(&j, "calls_base", r->s[0].calls);
      ncs_json_uint(&j, "calls_new", r->s[1].calls);
      ncs_json_num(&j, "busbw_base_gbps", r->bw[0]);
      ncs_json_num(&j, "busbw_new_gbps", r->bw[1]);
      ncs_json_num(&j, "busbw_change_pct", r->dbw);
      ncs_json_num(&j, "time_per_call_base_us", r->tpc[0]);
      ncs_json_num(&j, "time_per_call_new_us", r->tpc[1]);
      ncs_json_num(&j, "time_change_pct", r->dt);
      ncs_json_num(&j, "busbw_tolerance_pct", r->tol_bw);
      ncs_json_num(&j, "time_tolerance_pct", r->tol_t);
      for (int f = 0; f < 2; f++) {
        const struct ncs_gate_fig *g = f ? &r->gt : &r->gbw;
        ncs_json_obj_begin(&j, f ? "time_judged" : "busbw_judged");
        ncs_json_int(&j, "samples_base", g->n);
        ncs_json_int(&j, "samples_new", g->m);
        ncs_json_num(&j, f ? "median_base_us" : "median_base_gbps", f ? r->mtpc[0] : r->mbw[0]);
        ncs_json_num(&j, f ? "median_new_us" : "median_new_gbps", f ? r->mtpc[1] : r->mbw[1]);
        ncs_json_num(&j, "change_pct", g->change_pct);
        ncs_json_num(&j, "ci_low_pct", g->lo_pct);
        ncs_json_num(&j, "ci_high_pct", g->hi_pct);
        ncs_json_num(&j, f ? "detectable_rise_pct" : "detectable_drop_pct", g->detectable_pct);
        ncs_json_num(&j, "drift_pct", g->drift_pct);
        ncs_json_str(&j, "verdict", !r->above_floor ? "not judged" : ncs_gate_verdict_name(g->verdict));
        ncs_json_obj_end(&j);
      }
      ncs_json_bool(&j, "above_noise_floor", r->above_floor);
      ncs_json_bool(&j, "not_enough_calls", r->too_few);
      ncs_json_bool(&j, "transport_changed", r->tchange);
      ncs_json_bool(&j, "regression", r->regress_bw || r->regress_t || r->tregress);
      ncs_json_obj_end(&j);
    }
    ncs_json_arr_end(&j);
    ncs_json_obj_begin(&j, "comm_share");
    ncs_json_num(&j, "base_pct", sh[0]);
    ncs_json_num(&j, "new_pct", sh[1]);
    ncs_json_num(&j, "change_points", sh[1] - sh[0]);
    ncs_json_num(&j, "tolerance_points", tol_share);
    ncs_json_int(&j, "blocks_base", gsh.n);
    ncs_json_int(&j, "blocks_new", gsh.m);
    ncs_json_num(&j, "block_change_points", gsh.change_pct);
    ncs_json_num(&j, "ci_low_points", gsh.lo_pct);
    ncs_json_num(&j, "ci_high_points", gsh.hi_pct);
    ncs_json_num(&j, "detectable_rise_points", gsh.detectable_pct);
    ncs_json_num(&j, "drift_points", gsh.drift_pct);
    ncs_json_str(&j, "verdict", ncs_gate_verdict_name(gsh.verdict));
    ncs_json_bool(&j, "regression", share_regress);
    int nlate = 0; /* only when some run's union placed an interval late: its block shares may be low */
    for (int k = 0; k < ns; k++) nlate += late_run(RS, k);
    if (nlate) {
      ncs_json_arr_begin(&j, "blocks_late");
      for (int k = 0; k < ns; k++) {
        if (!late_run(RS, k)) continue;
        ncs_json_obj_begin(&j, NULL);
        ncs_json_str(&j, "run", side[k]);
        ncs_json_uint(&j, "intervals", RS[k]->late);
        ncs_json_num(&j, "max_missing_s", (double)RS[k]->late_ns / 1e9);
        ncs_json_uint(&j, "forced_commits", RS[k]->forced);
        ncs_json_obj_end(&j);
      }
      ncs_json_arr_end(&j);
    }
    ncs_json_obj_end(&j);
    step_json(&j, &sd, rows, nrows, K);
    ncs_json_int(&j, "transport_changes", changes);
    ncs_json_int(&j, "not_enough_calls", too_few);
    ncs_json_int(&j, "regressions", regressions);
    ncs_json_str(&j, "verdict", regressions ? "regression" : "ok");
    ncs_json_obj_end(&j);
    ncs_json_done(&j);
    goto done;
  }
  if (md) {
    printf("### ncclscope compare: %s\n\n", regressions ? "**regression**" : "no regression");
    printf("| operation | size | transport | calls | busbw GB/s (median/call) | change [interval] | can detect | time/call us (median) | change | |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
  } else {
    printf("ncclscope compare: base ");
    for (int k = 0; k < K; k++) {
      ncs_text_escape(stdout, side[k], strlen(side[k]));
      printf(" (%d files)%s", nf[k], k + 1 < K ? ", " : "");
    }
    printf("; new ");
    ncs_text_escape(stdout, side[K], strlen(side[K]));
    printf(" (%d files)\n", nf[K]);
    if (K > 1) printf("  %d base runs: their calls are pooled; a row's threshold is the larger of the flag and twice the spread of their medians\n", K);
    printf("  per-collective medians (last rank in); change: Hodges-Lehmann shift [%.4g%% interval]; can detect: the smallest busbw drop this row could flag\n",
           100.0 * conf);
    printf("  %-14s %8s  %-17s %13s %19s %25s %9s %19s %8s\n", "operation", "size", "transport", "calls", "busbw GB/s",
           "change [interval]", "can det.", "time/call us", "change");
  }
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    char tr[100], ci[64], det[16];
    if (r->tchange || !r->s[0].calls || !r->s[1].calls) snprintf(tr, sizeof tr, "%s -> %s", r->s[0].calls ? r->s[0].tnames : "-", r->s[1].calls ? r->s[1].tnames : "-");
    else snprintf(tr, sizeof tr, "%s", r->s[0].tnames);
    if (isinf(r->gbw.lo_pct) || isinf(r->gbw.hi_pct) || r->gbw.lo_pct <= -100) snprintf(ci, sizeof ci, "%+.1f%% [unbounded]", r->gbw.change_pct);
    else snprintf(ci, sizeof ci, "%+.1f%% [%+.1f,%+.1f]", r->gbw.change_pct, r->gbw.lo_pct, r->gbw.hi_pct);
    if (isinf(r->gbw.detectable_pct)) snprintf(det, sizeof det, "-");
    else snprintf(det, sizeof det, "%.1f%%", r->gbw.detectable_pct);
    const char *verdict = r->tregress ? "REGRESSION (lost NVLink-class transport)"
                          : (r->regress_bw || r->regress_t) ? "REGRESSION"
                          : r->tchange ? "transport changed"
                          : !r->above_floor ? "(below noise floor)"
                          : r->too_few ? "not enough calls to judge" : "";
    if (md)
      printf("| %s | %s | %s | %llu / %llu | %.2f / %.2f | %s | %s | %.1f / %.1f | %+.1f%% | %s |\n", ncs_op_name(r->op),
             bucket_label(r->bucket, b, sizeof b), tr, (unsigned long long)r->s[0].calls, (unsigned long long)r->s[1].calls,
             r->mbw[0], r->mbw[1], ci, det, r->mtpc[0], r->mtpc[1], r->gt.change_pct, verdict);
    else
      printf("  %-14s %8s  %-17s %6llu/%-6llu %8.2f -> %-8.2f %25s %9s %8.1f -> %-8.1f %+7.1f%% %s\n", ncs_op_name(r->op),
             bucket_label(r->bucket, b, sizeof b), tr, (unsigned long long)r->s[0].calls, (unsigned long long)r->s[1].calls,
             r->mbw[0], r->mbw[1], ci, det, r->mtpc[0], r->mtpc[1], r->gt.change_pct, verdict);
  }
  if (md) {
    printf("\nCommunication share: %.1f%% -> %.1f%% (%+.1f points; blocks of the window: %+.1f [%+.1f, %+.1f]) %s\n\n",
           sh[0], sh[1], sh[1] - sh[0], gsh.change_pct, gsh.lo_pct, gsh.hi_pct,
           share_regress ? "**regression**" : gsh.verdict == NCS_GATE_TOO_FEW ? "not enough to judge" : "");
    for (int k = 0; k < ns; k++)
      if (late_run(RS, k)) { /* as the text says it */
        printf("Blocks of ");
        ncs_text_escape(stdout, side[k], strlen(side[k]));
        printf(" may be low by up to %.6f s: %llu intervals came after a rank's union was committed past their start "
               "(%llu forced commits)\n\n", (double)RS[k]->late_ns / 1e9, (unsigned long long)RS[k]->late,
               (unsigned long long)RS[k]->forced);
      }
    printf("A figure regresses when its change is larger than its threshold with confidence (Hodges-Lehmann "
           "interval at %.4g%% wholly beyond it plus the runs' drift, %d figures judged): per-collective busbw drop > %.0f%%, time/call rise > "
           "%.0f%%, communication share rise > %.0f points; rows with < %ld calls or < %.0f%% of communication time "
           "are not judged. NVLink-class (P2P, NVLS) to another transport is always a regression.\n",
           100.0 * conf, 2 * judged + 1, th.busbw_drop, th.time_rise, tol_share, th.min_calls, th.min_share);
    step_text(&sd, rows, nrows, K, 1);
  } else {
    printf("  communication share: %.1f%% -> %.1f%% (%+.1f points); blocks of the window: %+.1f points [%+.1f, %+.1f], "
           "tolerance %.1f: %s\n", sh[0], sh[1], sh[1] - sh[0], gsh.change_pct, gsh.lo_pct, gsh.hi_pct, tol_share,
           share_regress ? "REGRESSION" : gsh.verdict == NCS_GATE_TOO_FEW ? "not enough to judge" : "ok");
    for (int k = 0; k < ns; k++)
      if (late_run(RS, k)) {
        printf("  blocks of ");
        ncs_text_escape(stdout, side[k], strlen(side[k]));
        printf(" may be low by up to %.6f s: %llu intervals came after a rank's union was committed past their start "
               "(%llu forced commits)\n", (double)RS[k]->late_ns / 1e9, (unsigned long long)RS[k]->late,
               (unsigned long long)RS[k]->forced);
      }
    step_text(&sd, rows, nrows, K, 0);
    printf("%s: %d regression(s), %d transport change(s), %d row(s) with not enough calls to judge\n",
           regressions ? "REGRESSION" : "OK", regressions, changes, too_few);
  }
done:
  for (int k = 0; k < ns; k++) {
    if (files[k]) ncs_paths_free(files[k], nf[k]);
    free(bsh[k]);
    if (same_as[k] >= 0) continue; /* another run's load */
    ncs_job_free(J[k]);
    ncs_gsamples_free(RS[k]);
  }
  free(pool_bw);
  free(pool_t);
  free(rows);
  return rc;
}
