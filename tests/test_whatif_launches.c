/* test_whatif_launches.c — whatif's NCCL launches (analysis/whatif.c, model/launches.h) as the
 * report's readers hand them over, against figures worked out by hand: which kernel each launch
 * sizes and which kernel each step start makes a boundary. One file, 19 AllReduce launches
 * on one communicator: runs of calls of one shape (the shortcut that logs a call of the shape of
 * the call before without working its launch out again), a shape change inside a run, a group of
 * two calls (one launch) right after a call of their shape, calls before the communicator's ranks
 * are known (bus bytes 0) and the same calls after (the ranks change the shape), a run handed
 * over in two pieces, a launch long after the one before (written out, not a word of its
 * shape), and the kernels read before the calls (kernel activity known: the log's one-word path)
 * or after (the general path), and three compute kernels of another name (two streams; one between the kernels of two launches of a run). Truth: each launch's bus bytes by nccl-tests' rule
 * (2(n-1)/n x count x 4 B), the split's bus bandwidth = the bytes of the kernels in the window /
 * their time, the observed step = (end of the last boundary kernel - end of the first) / 4, the
 * compute part of the step = the compute kernels' time / 4. The same file saying first that it
 * has no kernel activity (model/kwatch.h: PROCESS format_version 1.0, or a KERNEL_STATUS off)
 * keeps no launch: its kernels, should they come anyway, have no launch to pair, no step boundary
 * is found; saying format 5.5 changes nothing. Two more files: one with calls of one shape on two
 * communicators of 4 and 2 ranks (each its own launch shape), and the second of a job whose
 * launch log reuses the first's blocks, its first block ending short with the first file's words
 * past it (the pairing walk stops at a block's end). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/whatif.h"
#include "check.h"
#include "give_records.h"
#include "model/stages.h"
#include "model/wordlog.h"
#include "ncclscope/encode.h"
#include "ncclscope/nccl_abi.h"

/* The calls: t_enter, count (floats), group id (0: none); step 2 begins LATE after step 1's last
 * call: its first launch is written out (an escape, model/wordlog.h), not a word of its shape */
#define LATE 20000000ull
struct c { uint64_t t, count, group; };
static const struct c calls[] = {
  {1000, 1000, 0}, {2000, 1000, 0},                                   /* step 0, before the ranks are known */
  {11000, 1000, 0}, {12000, 1000, 77}, {12100, 1000, 77}, {13000, 2500, 0}, {14000, 1000, 0}, {15000, 1000, 0}, /* step 1 */
  {LATE + 21000, 1000, 0}, {LATE + 22000, 1000, 0}, {LATE + 23000, 3000, 0},              /* step 2 */
  {LATE + 29000, 3000, 0}, {LATE + 31000, 3000, 0}, {LATE + 32000, 3000, 0}, {LATE + 32500, 3000, 0}, /* step 3: a run */
  {LATE + 33000, 1000, 0}, {LATE + 34000, 3000, 0}, {LATE + 35000, 3000, 0},             /* broken by another size */
  {LATE + 40000, 3000, 0}, {LATE + 41000, 3000, 0},                                       /* step 4 */
};
enum { NCALLS = sizeof calls / sizeof *calls, NLAUNCH = NCALLS - 1 };
/* each launch's first call, and its bus bytes by hand: 1.5 x 4 B x count on 4 ranks, 0 before
 * the ranks are known; the group's two calls add up */
static const int first_call[NLAUNCH] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
static const double busbytes[NLAUNCH] = {0, 0, 6000, 12000, 15000, 6000, 6000, 6000, 6000, 18000,
                                         18000, 18000, 18000, 18000, 6000, 18000, 18000, 18000, 18000};
/* boundaries: launches 1, 2, 7, 11, 17 (the last launch begun at each start); the first and the
 * last are the second call of a shape (its time from the shortcut) and one inside a run */
static const uint64_t step_starts[] = {2000, 11000, LATE + 21000, LATE + 31000, LATE + 40000};
enum { NB = sizeof step_starts / sizeof *step_starts };
static const int bound[NB] = {1, 2, 7, 11, 17};
static uint64_t kstart(int i) { return calls[first_call[i]].t + 100; }
static uint64_t kdur(int i) { return 50 + 10 * (uint64_t)i; }

static void give_calls(struct ncs_visitor *v, size_t a, size_t b) {
  struct ncs_call x[NCALLS];
  for (size_t i = a; i < b; i++)
    x[i - a] = (struct ncs_call){.op = NCS_OP_AllReduce, .comm = 0, .count = calls[i].count, .datatype = ncclFloat32,
                                 .t_enter = calls[i].t, .t_exit = calls[i].t + 10, .depth = calls[i].group ? 1 : 0,
                                 .group = calls[i].group};
  v->calls(v->ctx, x, b - a);
}
/* compute kernels of one name: two in step 1, between launch 4's kernel and launch 5's, the first on
 * the NCCL kernels' stream 0 (right after one of them), the second on stream 1; one in step 2 on
 * stream 0 between the kernels of launches 10 and 11, a run of one shape (launch 11's kernel is
 * not the next kernel after launch 10's). {start, end, the launch it follows, stream} */
static const uint64_t comp[][4] = {{13500, 13600, 4, 0}, {13700, 13800, 4, 1}, {LATE + 30000, LATE + 30100, 10, 0}};
enum { NCOMP = sizeof comp / sizeof *comp };
static void give_kernels(struct ncs_visitor *v) {
  struct ncs_kernel k[NLAUNCH + NCOMP];
  int n = 0;
  for (int i = 0; i < NLAUNCH; i++) {
    k[n++] = (struct ncs_kernel){.kclass = NCS_KCLASS_NCCL, .start = kstart(i), .duration = kdur(i), .name = 1};
    for (int j = 0; j < NCOMP; j++)
      if (comp[j][2] == (uint64_t)i)
        k[n++] = (struct ncs_kernel){.kclass = NCS_KCLASS_COMPUTE, .start = comp[j][0], .duration = comp[j][1] - comp[j][0], .name = 2, .stream = (uint32_t)comp[j][3]};
  }
  v->kernels(v->ctx, k, NULL, (size_t)n);
}

/* What the file says first: nothing, a PROCESS of format 5.5 or 1.0, a KERNEL_STATUS off. */
enum says { SAYS_NOTHING, SAYS_55, SAYS_10, SAYS_OFF };
static void say(struct ncs_visitor *v, enum says what) {
  if (what == SAYS_55 || what == SAYS_10) {
    const char *fmt = what == SAYS_55 ? "5.5" : "1.0";
    struct ncs_kv kv[] = {{"host", "h", 1}, {"format_version", fmt, 3}};
    v->process(v->ctx, &(struct ncs_process){.path = "x.ncs", .major = 5, .minor = 5, .kv = kv, .nkv = 2});
  } else if (what == SAYS_OFF) {
    uint8_t b[256];
    struct ncs_wbuf wb;
    ncs_wbuf_init(&wb, b, sizeof b);
    struct ncs_kernel_status ks = {.t = 1, .state = NCS_KSTATE_OFF};
    snprintf(ks.reason, sizeof ks.reason, "NCCLSCOPE_KERNELS=0");
    ncs_enc_kernel_status_body(&wb, &ks);
    v->raw(v->ctx, &(struct ncs_raw){NCS_REC_KERNEL_STATUS, b, wb.len});
  }
}

/* One rank's whatif analysis on its own job, its step starts handed over at the file's end
 * (open_file, then the records through f->v, then close_file). */
struct file_run {
  struct ncs_stages st;
  struct ncs_step_starts s;
  struct ncs_rank_info info;
  int order[1];
  const char *opts[1];
  struct ncs_job job;
  void *w;
  struct ncs_visitor v;
};
static int open_file(struct file_run *f, const uint64_t *starts, size_t nstarts, const char *how) {
  memset(f, 0, sizeof *f);
  if (ncs_stages_init(&f->st, 1) != 0) { CHECK(0, "whatif launches (%s): stages", how); return -1; }
  for (size_t i = 0; i < nstarts; i++) ncs_starts_add(&f->s, starts[i]);
  f->info = (struct ncs_rank_info){.path = "x.ncs", .host = "", .rank = 0, .nranks = 4, .held = 1, .label = "0"};
  f->job = (struct ncs_job){.n = 1, .rank = &f->info, .order = f->order, .options = f->opts, .stages = &f->st};
  f->w = ncs_analysis_whatif.create(&f->job);
  ncs_analysis_whatif.visitor(f->w, 0, &f->v);
  return 0;
}
/* The file read: its starts to the stages, the analysis' result. */
static const struct ncs_whatif *end_file(struct file_run *f) {
  ncs_stages_put_starts(&f->st, 0, &f->s);
  ncs_analysis_whatif.file_done(f->w, 0, NULL);
  ncs_analysis_whatif.finish(f->w, &f->job);
  return ncs_whatif_result(f->w);
}
static void close_file(struct file_run *f) {
  ncs_analysis_whatif.destroy(f->w);
  ncs_stages_free(&f->st);
}

/* A file that says it has no kernel activity, its kernels given after its calls anyway: no launch
 * was kept, so none sizes a kernel or makes a boundary. */
static void run_none(enum says what) {
  const char *how = what == SAYS_10 ? "format 1.0" : "KERNEL_STATUS off";
  struct file_run f;
  if (open_file(&f, step_starts, NB, how) != 0) return;
  say(&f.v, what);
  give_name(&f.v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  f.v.comm(f.v.ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  give_calls(&f.v, 0, NCALLS);
  give_kernels(&f.v);
  const struct ncs_whatif *r = end_file(&f);
  CHECK(r && !r->have && strstr(r->why_not, "no steps found"), "whatif launches (%s): no launch kept, no step found (have %d, why: %s)",
        how, r ? r->have : -1, r ? r->why_not : "(none)");
  close_file(&f);
}

/* Three AllReduce launches of one shape, their kernels of one name and stream, the last one 5 s
 * long (over the 32-bit duration: its end kept apart) right after one of its shape, the first
 * and the last step boundaries: the observed step = its end - the first kernel's end. */
static void run_long(void) {
  static const uint64_t starts[] = {1000, 3000};
  struct file_run f;
  if (open_file(&f, starts, 2, "long kernel") != 0) return;
  give_name(&f.v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  f.v.comm(f.v.ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  const uint64_t LONG5 = 5000000007ull;
  struct ncs_call c[3];
  struct ncs_kernel k[3];
  for (int i = 0; i < 3; i++) {
    c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .count = 1000, .datatype = ncclFloat32, .t_enter = 1000 * (uint64_t)(i + 1), .t_exit = 1000 * (uint64_t)(i + 1) + 10};
    k[i] = (struct ncs_kernel){.kclass = NCS_KCLASS_NCCL, .start = c[i].t_enter + 100, .duration = i == 2 ? LONG5 : 50, .name = 1};
  }
  f.v.calls(f.v.ctx, c, 3);
  f.v.kernels(f.v.ctx, k, NULL, 3);
  const struct ncs_whatif *r = end_file(&f);
  double want = (double)(3100 + LONG5) - 1150;
  CHECK(r && r->have && r->steps == 2 && r->step_s * 1e9 == want,
        "whatif launches (long kernel): observed step %.0f ns = the 5 s kernel's end - the first kernel's = %.0f", r ? r->step_s * 1e9 : -1, want);
  close_file(&f);
}

/* r against a file whose launch i has one kernel, k[i], and bus bytes bb[i] (by hand), and whose
 * step starts make nbound boundaries, the first kernel b0's and the last b1's: the boundaries
 * found, the observed step and the window's AllReduce bus bandwidth, as run() checks them. */
static void check_window(const char *how, const struct ncs_whatif *r, const struct ncs_kernel *k, const double *bb,
                         int b0, int b1, int nbound) {
  double bytes = 0, ns = 0;
  for (int i = b0 + 1; i <= b1; i++) bytes += bb[i], ns += (double)k[i].duration;
  double step = ((double)(k[b1].start + k[b1].duration) - (double)(k[b0].start + k[b0].duration)) / (nbound - 1);
  double got = r ? r->split.busbw_gbps[0] : -1;
  CHECK(r && r->have && r->steps == nbound, "whatif launches (%s): %d step boundaries found (got %d)", how, nbound, r ? r->steps : -1);
  CHECK(r && fabs(r->step_s * 1e9 - step) < 1e-6, "whatif launches (%s): observed step %.3f ns = (end of the last boundary kernel - end of the first) / %d = %.3f",
        how, r ? r->step_s * 1e9 : -1, nbound - 1, step);
  CHECK(r && fabs(got - bytes / ns) < 1e-9 * (bytes / ns), "whatif launches (%s): AllReduce busbw %.6f GB/s = the window's bus bytes %.0f (each launch's by hand) / its kernels' %.0f ns = %.6f",
        how, got, bytes, ns, bytes / ns);
}

/* Two communicators of 4 and 2 ranks, calls of one op, count and datatype on both, in one
 * handed-over run, the kernels read first (the run path): a call on the other communicator is a
 * launch of another shape (bus bytes 1.5 x 4000 B on 4 ranks, 1 x 4000 B on 2), both where the
 * run's loop meets it and where a call is compared with the launch before. */
static void run_comms(void) {
  static const uint32_t comm[] = {0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1};
  enum { N = sizeof comm / sizeof *comm };
  struct ncs_call c[N];
  struct ncs_kernel k[N];
  double bb[N];
  uint64_t starts[2];
  for (int i = 0; i < N; i++) {
    uint64_t t = 1000 * (uint64_t)(i + 1);
    c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .comm = comm[i], .count = 1000, .datatype = ncclFloat32, .t_enter = t, .t_exit = t + 10};
    k[i] = (struct ncs_kernel){.kclass = NCS_KCLASS_NCCL, .start = t + 100, .duration = 50 + 10 * (uint64_t)i, .name = 1};
    bb[i] = comm[i] ? 4000 : 6000;
  }
  starts[0] = c[0].t_enter, starts[1] = c[N - 1].t_enter;
  struct file_run f;
  if (open_file(&f, starts, 2, "two communicators") != 0) return;
  give_name(&f.v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  f.v.comm(f.v.ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  f.v.comm(f.v.ctx, &(struct ncs_comm){.comm = 1, .nranks = 2, .rank = 0});
  f.v.kernels(f.v.ctx, k, NULL, N);
  f.v.calls(f.v.ctx, c, N);
  check_window("two communicators", end_file(&f), k, bb, 0, N - 1, 2);
  close_file(&f);
}

/* Two files in one job, read one after the other: the second's launch log is the first's blocks
 * (model/launches.h, kept by a reset), full of its one-word entries. The second's first block
 * ends 4 words short (its next launch is written out, 9 words, and goes to a new block), so the
 * words past that block's end are the first file's, of the code the second's run has: the
 * pairing walk stops at the block's end, and the written-out launch (another size) sizes its own
 * kernel. The first file (calls only: no kernel, left out) fills a block; the second has its step
 * starts at its first and last calls. */
static void run_reused(void) {
  enum { RUN = NCS_WLOG_BLOCK - 4, N = RUN + 3, N0 = NCS_WLOG_BLOCK + 10 };
  struct ncs_call *c = calloc(N0 > N ? N0 : N, sizeof *c);
  struct ncs_kernel *k = calloc(N, sizeof *k);
  double *bb = calloc(N, sizeof *bb);
  if (!c || !k || !bb) { CHECK(0, "whatif launches (reused log): memory"); goto out; }
  struct ncs_stages st;
  if (ncs_stages_init(&st, 2) != 0) { CHECK(0, "whatif launches (reused log): stages"); goto out; }
  struct ncs_rank_info info[2] = {{.path = "a.ncs", .host = "", .rank = 0, .nranks = 2, .held = 1, .label = "0"},
                                  {.path = "b.ncs", .host = "", .rank = 1, .nranks = 2, .held = 1, .label = "1"}};
  int order[2] = {0, 1};
  const char *opts[1] = {NULL};
  struct ncs_job job = {.n = 2, .rank = info, .order = order, .options = opts, .stages = &st};
  void *w = ncs_analysis_whatif.create(&job);
  struct ncs_visitor v;
  for (int i = 0; i < N0; i++) {
    uint64_t t = 1000 * (uint64_t)(i + 1);
    c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .count = 500, .datatype = ncclFloat32, .t_enter = t, .t_exit = t + 10};
  }
  ncs_analysis_whatif.visitor(w, 0, &v);
  v.comm(v.ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  v.calls(v.ctx, c, N0);
  ncs_analysis_whatif.file_done(w, 0, NULL);
  /* the second file: RUN launches of count 1000, one much later of count 2000, two of 3000 (a
   * launch paired one off would change the window's bytes) */
  for (int i = 0; i < N; i++) {
    uint64_t t = 1000 * (uint64_t)(i + 1) + (i >= RUN ? LATE : 0);
    uint64_t count = i < RUN ? 1000 : i == RUN ? 2000 : 3000;
    c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .count = count, .datatype = ncclFloat32, .t_enter = t, .t_exit = t + 10};
    k[i] = (struct ncs_kernel){.kclass = NCS_KCLASS_NCCL, .start = t + 100, .duration = 50 + (uint64_t)(i % 7), .name = 1};
    bb[i] = 1.5 * 4 * (double)count;
  }
  struct ncs_step_starts s = {0};
  ncs_starts_add(&s, c[0].t_enter);
  ncs_starts_add(&s, c[N - 1].t_enter);
  ncs_analysis_whatif.visitor(w, 1, &v);
  give_name(&v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  v.comm(v.ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  v.kernels(v.ctx, k, NULL, N);
  v.calls(v.ctx, c, N);
  ncs_stages_put_starts(&st, 1, &s);
  ncs_analysis_whatif.file_done(w, 1, NULL);
  ncs_analysis_whatif.finish(w, &job);
  check_window("reused log", ncs_whatif_result(w), k, bb, 0, N - 1, 2);
  ncs_analysis_whatif.destroy(w);
  ncs_stages_free(&st);
out:
  free(c);
  free(k);
  free(bb);
}

/* One run of the analysis on the scenario; kernels_first: the kernels read before the calls. */
static void run(int kernels_first, enum says what) {
  const char *how = kernels_first ? (what == SAYS_55 ? "kernels first, format 5.5" : "kernels first") : "calls first";
  struct file_run f;
  if (open_file(&f, step_starts, NB, how) != 0) return;
  struct ncs_visitor *v = &f.v;
  say(v, what);
  /* the kernels' names */
  give_name(v, 1, NCS_KCLASS_NCCL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  give_name(v, 2, NCS_KCLASS_COMPUTE, "sgemm_128x64");
  if (kernels_first) give_kernels(v);
  give_calls(v, 0, 2);                                           /* ranks unknown */
  v->comm(v->ctx, &(struct ncs_comm){.comm = 0, .nranks = 4, .rank = 0});
  give_calls(v, 2, 9);                                           /* a run handed over in two pieces */
  give_calls(v, 9, NCALLS);
  if (!kernels_first) give_kernels(v);
  const struct ncs_whatif *r = end_file(&f);
  double A = (double)(kstart(bound[0]) + kdur(bound[0])), B = (double)(kstart(bound[NB - 1]) + kdur(bound[NB - 1]));
  double step = (B - A) / (NB - 1), bytes = 0, ns = 0;
  for (int i = bound[0] + 1; i <= bound[NB - 1]; i++) bytes += busbytes[i], ns += (double)kdur(i); /* the window's kernels */
  CHECK(r && r->have && r->steps == NB, "whatif launches (%s): %d step boundaries found (got %d)", how, NB, r ? r->steps : -1);
  CHECK(r && fabs(r->step_s * 1e9 - step) < 1e-6, "whatif launches (%s): observed step %.3f ns = (end of launch 17's kernel - end of launch 1's) / 4 = %.3f",
        how, r ? r->step_s * 1e9 : -1, step);
  double got = r ? r->split.busbw_gbps[0] : -1;
  CHECK(r && r->split.kop[0] && !strcmp(r->split.kop[0], "AllReduce") && fabs(got - bytes / ns) < 1e-9 * (bytes / ns),
        "whatif launches (%s): AllReduce busbw %.6f GB/s = the window's bus bytes %.0f (each launch's by hand) / its kernels' %.0f ns = %.6f",
        how, got, bytes, ns, bytes / ns);
  double cns = 0;
  for (int j = 0; j < NCOMP; j++) cns += (double)(comp[j][1] - comp[j][0]);
  CHECK(r && fabs(r->split.compute * 1e9 - cns / (NB - 1)) < 1e-6, "whatif launches (%s): compute %.3f ns a step = the three compute kernels' %.0f ns / 4",
        how, r ? r->split.compute * 1e9 : -1, cns);
  close_file(&f);
}

int main(void) {
  run(1, SAYS_NOTHING);
  run(0, SAYS_NOTHING);
  run(1, SAYS_55);
  run_long();
  run_comms();
  run_reused();
  run_none(SAYS_10);
  run_none(SAYS_OFF);
  return check_done();
}
