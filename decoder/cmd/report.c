/* report.c — `ncclscope report [--json] [options] PATH...`: per rank (one traced process per
 * file) and per operation: calls, count, bytes, host time; per communicator; drops and
 * truncation; then the sections of every registered analysis (analysis.h).
 *
 * Contract: each file is read once, streaming (memory: one summary per file, bounded by its
 * communicators); records fan out to the summary and to each analysis. Output: text (trace
 * strings escaped) or JSON (docs/JSON.md). Exit (cmd/commands.h): 0 when it could report (a
 * cut trace is a warning, listed in the JSON's "warnings"), 2 bad usage, 3 a damaged file
 * (everything before the damage is still reported), 4 a file that is not a readable trace. */
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis.h"
#include "analysis/headline.h"
#include "render/headline_render.h"
#include "render/report_render.h"
#include "base/cli.h"
#include "cmd/commands.h"
#include "base/json.h"
#include "model/commnames.h"
#include "model/ranks.h"
#include "analysis/straggler.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"
#include "cmd/report.h"
#include "model/rules.h"
#include "model/stages.h"
#include "model/jobload.h"
#include "cmd/jobpick.h"
#include "io/trace.h"

#define MAX_COMMS 65536 /* communicator indexes past this are counted as "other" */

struct op_sum { uint64_t calls, count, bytes, host_ns, errors;
                uint64_t ends;          /* COMM_END records of this op (communicator-ending calls) */
                uint64_t from_ends; };  /* calls counted from COMM_END: their CALL record was dropped */
struct comm_sum {
  uint64_t comm_id, calls;
  int32_t rank, nranks;
  uint32_t init_op, end_op;
  int32_t rc;
  int seen;
};

struct file_sum {
  struct ncs_rank_info info;
  char *host;
  int env_rank, env_world;
  struct op_sum ops[NCS_OP_LIMIT];
  struct op_sum unknown_op;
  struct comm_sum *comms;
  uint32_t ncomms;      /* allocated entries (index = comm) */
  uint64_t other_comm_calls;
  uint64_t drops[8];    /* by reason (0: unknown reason) */
  uint64_t calls, first_t, last_t;
  /* on_calls' latest (op, datatype): its row and the datatype's size (row NULL: none yet) */
  uint32_t last_op, last_dt;
  struct op_sum *last_row;
  uint64_t last_dsize;
  struct ncs_read_status st;
  int *held_ranks;      /* [info.held] the ranks of its primary communicator it holds, sorted */
};

static int comm_slot(struct file_sum *s, uint32_t comm) {
  if (comm >= MAX_COMMS) return -1;
  if (comm >= s->ncomms) {
    uint32_t n = s->ncomms ? s->ncomms : 8;
    while (n <= comm) n *= 2;
    struct comm_sum *p = realloc(s->comms, n * sizeof *p);
    if (!p) return -1;
    memset(p + s->ncomms, 0, (n - s->ncomms) * sizeof *p);
    s->comms = p;
    s->ncomms = n;
  }
  return (int)comm;
}

static int on_process(void *ctx, const struct ncs_process *p) {
  struct file_sum *s = ctx;
  const char *h = ncs_process_get(p, "host");
  s->info.pid = p->pid;
  free(s->host);
  s->host = strdup(h ? h : "");
  static const char *rank_keys[] = {"env.RANK", "env.OMPI_COMM_WORLD_RANK", "env.SLURM_PROCID",
                                    "env.PMI_RANK", "env.PMIX_RANK", "env.MV2_COMM_WORLD_RANK",
                                    "env.JAX_PROCESS_ID"};
  static const char *size_keys[] = {"env.WORLD_SIZE", "env.OMPI_COMM_WORLD_SIZE",
                                    "env.SLURM_NTASKS", "env.PMI_SIZE"};
  for (size_t i = 0; i < sizeof rank_keys / sizeof *rank_keys && s->env_rank < 0; i++) {
    const char *v = ncs_process_get(p, rank_keys[i]);
    char *e;
    if (v && *v) { long r = strtol(v, &e, 10); if (!*e && r >= 0 && r < (1L << 30)) s->env_rank = (int)r; }
  }
  for (size_t i = 0; i < sizeof size_keys / sizeof *size_keys && s->env_world <= 0; i++) {
    const char *v = ncs_process_get(p, size_keys[i]);
    char *e;
    if (v && *v) { long r = strtol(v, &e, 10); if (!*e && r > 0 && r < (1L << 30)) s->env_world = (int)r; }
  }
  return 0;
}

static int on_comm(void *ctx, const struct ncs_comm *c) {
  struct file_sum *s = ctx;
  int k = comm_slot(s, c->comm);
  if (k < 0) return 0;
  struct comm_sum *m = &s->comms[k];
  m->seen = 1;
  m->comm_id = c->comm_id;
  m->rank = c->rank;
  m->nranks = c->nranks;
  m->init_op = c->init_op;
  m->rc = c->rc;
  return 0;
}

static int on_comm_end(void *ctx, const struct ncs_comm_end *e) {
  struct file_sum *s = ctx;
  int k = comm_slot(s, e->comm);
  if (k >= 0) s->comms[k].end_op = e->op;
  if (e->op > 0 && e->op < NCS_OP_LIMIT) s->ops[e->op].ends++;
  return 0;
}

/* A communicator-ending call has both a CALL record (ring) and a COMM_END record (queue); when
 * the process dropped records and a CALL is missing, the COMM_END still says the call
 * happened: count it. */
static void count_dropped_ends(struct file_sum *s) {
  if (!s->st.dropped_total) return;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    struct op_sum *o = &s->ops[op];
    if (o->ends > o->calls) { o->from_ends = o->ends - o->calls; o->calls = o->ends; }
  }
}

/* Adds n calls on communicator `comm` (0: none) to its count. */
static void add_comm_calls(struct file_sum *s, uint32_t comm, uint64_t n) {
  if (!comm) return;
  if (comm < s->ncomms || comm_slot(s, comm) >= 0) s->comms[comm].calls += n;
  else s->other_comm_calls += n;
}

/* The row of operation `op`, and its datatype's size in s->last_dsize. */
static struct op_sum *op_row(struct file_sum *s, uint32_t op, uint32_t dt) {
  s->last_dsize = ncs_rule_dtype_size(dt);
  return (op > 0 && op < NCS_OP_LIMIT && ncs_op_name(op)) ? &s->ops[op] : &s->unknown_op;
}

/* One call (a run of one: CALL and GPU_TIME records alternating, or one-record chunks). */
static int add_call(struct file_sum *s, const struct ncs_call *c) {
  if (!s->last_row || c->op != s->last_op || c->datatype != s->last_dt) { /* calls repeat a few of these */
    s->last_row = op_row(s, c->op, c->datatype);
    s->last_op = c->op;
    s->last_dt = c->datatype;
  }
  struct op_sum *o = s->last_row;
  o->calls++;
  o->count += c->count;
  o->bytes += c->count * s->last_dsize; /* ncs_rule_bytes */
  o->host_ns += c->t_exit - c->t_enter;
  if (!ncs_rc_ok(c->rc)) o->errors++;
  if (c->comm) add_comm_calls(s, c->comm, 1);
  if (!s->calls || c->t_enter < s->first_t) s->first_t = c->t_enter;
  if (c->t_exit > s->last_t) s->last_t = c->t_exit;
  s->calls++;
  return 0;
}

/* A run of calls, as spans of consecutive calls of one (op, datatype) and communicator: a
 * span adds up in locals and reaches its row and communicator once (sums modulo 2^64, as
 * adding each call: bytes = count sum x datatype size, host time = exit sum - enter sum); the
 * window's ends and the call count once per run. */
static __attribute__((noinline)) int add_calls(struct file_sum *s, const struct ncs_call *x, size_t n) {
  struct op_sum *o = s->last_row;
  uint32_t op = s->last_op, dt = s->last_dt, comm = x->comm;
  if (!o) o = op_row(s, op = x->op, dt = x->datatype);
  uint64_t first = s->calls ? s->first_t : x->t_enter, last = s->last_t;
  const struct ncs_call *c = x, *end = x + n, *comm_from = x;
  while (c < end) {
    if (c->op != op || c->datatype != dt) o = op_row(s, op = c->op, dt = c->datatype); /* calls repeat a few of these */
    if (c->comm != comm) {
      add_comm_calls(s, comm, (uint64_t)(c - comm_from));
      comm = c->comm;
      comm_from = c;
    }
    const struct ncs_call *from = c;
    uint64_t count = 0, enter = 0, exit = 0, errors = 0, key = ncs_u32_pair(&c->comm);
    for (; c < end && c->op == op && ncs_u32_pair(&c->comm) == key; c++) {
      count += c->count;
      enter += c->t_enter;
      exit += c->t_exit;
      if (__builtin_expect(c->rc != 0, 0) && !ncs_rc_ok(c->rc)) errors++;
      first = c->t_enter < first ? c->t_enter : first;
      last = c->t_exit > last ? c->t_exit : last;
    }
    o->calls += (uint64_t)(c - from);
    o->count += count;
    o->bytes += count * s->last_dsize; /* ncs_rule_bytes */
    o->host_ns += exit - enter;
    o->errors += errors;
  }
  add_comm_calls(s, comm, (uint64_t)(c - comm_from));
  s->last_row = o;
  s->last_op = op;
  s->last_dt = dt;
  s->first_t = first;
  s->last_t = last;
  s->calls += n;
  return 0;
}

/* (the longer loop kept out of line: a run of one then saves few registers) */
static int on_calls(void *ctx, const struct ncs_call *x, size_t n) {
  return n == 1 ? add_call(ctx, x) : add_calls(ctx, x, n);
}

static int on_drop(void *ctx, const struct ncs_drop *d) {
  struct file_sum *s = ctx;
  s->drops[d->reason < 8 ? d->reason : 0] += d->records;
  return 0;
}

const char *ncs_job_option(const struct ncs_job *job, const char *name) {
  size_t n = strlen(name);
  for (const char *const *o = job->options; o && *o; o++)
    if (strncmp(*o, "--", 2) == 0 && strncmp(*o + 2, name, n) == 0 && (*o)[2 + n] == '=')
      return *o + 3 + n;
  return NULL;
}

/* ---- the analyses ---- */
#define NCS_ANALYSIS_PTR_(name) &ncs_analysis_##name,
static const struct ncs_analysis *const analyses[] = {NCS_ANALYSES(NCS_ANALYSIS_PTR_)};
#undef NCS_ANALYSIS_PTR_
enum { NANALYSES = sizeof analyses / sizeof *analyses };

/* ---- output ---- */
static const char *drop_reason(unsigned r) {
  static const char *names[] = {"unknown", "buffer_full", "no_thread_slot", "write_failed",
                                "no_memory", "event_pool", "kernel_records", "calls_lost_disk_full"};
  return r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

static void text_str(FILE *f, const char *s) { ncs_text_escape(f, s, strlen(s)); }

static void utc_time(uint64_t ns, char *buf, size_t len) {
  time_t sec = (time_t)(ns / 1000000000u);
  struct tm tm;
  gmtime_r(&sec, &tm);
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000u / 1000000u));
}

/* A file whose image ended with exec (chunk flag EXEC): complete, the process went on. */
#define EXECD(s) ((s)->st.exec_ended && !(s)->st.final_seen && !(s)->info.truncated && !(s)->info.read_rc)
#define EXEC_TEXT "the process replaced its image by exec and went on with the same pid; its next image, when it used NCCL, wrote a file of its own"

static void print_rank_text(FILE *f, const struct file_sum *s, const struct ncs_commnames *names) {
  const struct ncs_rank_info *r = &s->info;
  fprintf(f, "\nrank%s %s", r->held > 1 ? "s" : "", r->label);
  if (r->nranks > 0) fprintf(f, "/%d", r->nranks);
  fprintf(f, "  host ");
  text_str(f, r->host);
  fprintf(f, "  pid %u  file ", r->pid);
  text_str(f, r->path);
  fprintf(f, "\n");
  if (s->st.error[0]) {
    fprintf(f, "  %s: ", r->read_rc == 1 ? "DAMAGED" : r->truncated ? "CUT" : "ERROR");
    text_str(f, s->st.error);
    fprintf(f, "\n");
  }
  if (r->read_rc != 2 && (r->truncated || r->read_rc == 1) && s->st.last_realtime_ns) {
    char t[64];
    utc_time(s->st.last_realtime_ns, t, sizeof t);
    fprintf(f, "  last sign of life: %s\n", t);
  }
  if (s->st.comms_closed) fprintf(f, "  complete: every communicator was closed (the process left without exit handlers)\n");
  if (EXECD(s)) fprintf(f, "  exec'd: %s\n", EXEC_TEXT);
  if (r->read_rc == 2) return;
  if (s->st.dropped_total) {
    fprintf(f, "  DROPPED %llu records (", (unsigned long long)s->st.dropped_total);
    int any = 0;
    for (unsigned i = 0; i < 8; i++)
      if (s->drops[i]) { fprintf(f, "%s%s %llu", any ? ", " : "", drop_reason(i), (unsigned long long)s->drops[i]); any = 1; }
    fprintf(f, "%s)\n", any ? "" : "reasons not recorded");
  }
  fprintf(f, "  %-22s %10s %16s %18s %12s\n", "op", "calls", "count", "bytes", "host_s");
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    const struct op_sum *o = &s->ops[op];
    if (!o->calls) continue;
    fprintf(f, "  %-22s %10llu %16llu %18llu %12.6f", ncs_op_name(op), (unsigned long long)o->calls,
            (unsigned long long)o->count, (unsigned long long)o->bytes, o->host_ns / 1e9);
    if (o->errors) fprintf(f, "  (%llu errors)", (unsigned long long)o->errors);
    if (o->from_ends) fprintf(f, "  (%llu known only from COMM_END: CALL record dropped)", (unsigned long long)o->from_ends);
    fprintf(f, "\n");
  }
  if (s->unknown_op.calls)
    fprintf(f, "  %-22s %10llu\n", "(unknown op)", (unsigned long long)s->unknown_op.calls);
  int header = 0;
  for (uint32_t k = 0; k < s->ncomms; k++) {
    const struct comm_sum *c = &s->comms[k];
    if (!c->seen && !c->calls) continue;
    if (!header) { fprintf(f, "  communicators:\n"); header = 1; }
    char nm[240];
    fprintf(f, "    #%u ", k);
    text_str(f, ncs_commnames_text(names, c->comm_id, 1, nm, sizeof nm));
    fprintf(f, "  rank %d/%d  %llu calls", c->rank, c->nranks, (unsigned long long)c->calls);
    if (!c->seen) fprintf(f, "  (no COMM record)");
    if (c->seen && c->rc == 7) fprintf(f, "  (non-blocking init: not seen complete, ncclInProgress)");
    else if (c->seen && c->rc) fprintf(f, "  (init returned %d)", c->rc);
    if (c->end_op) fprintf(f, "  ended by %s", ncs_op_name(c->end_op) ? ncs_op_name(c->end_op) : "?");
    fprintf(f, "\n");
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Processes that are not ranks (no communicator, no call on one: a launcher, a version probe):
 * one line for all, then one per process with its calls. */
static void print_no_comm_text(FILE *f, const struct file_sum *sums, const int *order, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += sums[order[i]].info.no_comm;
  if (!k) return;
  fprintf(f, "  %d process%s made no communicator (not ranks; left out of the rows above):\n", k, k == 1 ? "" : "es");
  for (int i = 0; i < n; i++) {
    const struct file_sum *s = &sums[order[i]];
    if (!s->info.no_comm) continue;
    fprintf(f, "    host ");
    text_str(f, s->info.host);
    fprintf(f, " pid %u:", s->info.pid);
    int any = 0;
    for (unsigned op = 1; op < NCS_OP_LIMIT; op++)
      if (s->ops[op].calls) { fprintf(f, "%s %s %llu", any ? "," : "", ncs_op_name(op), (unsigned long long)s->ops[op].calls); any = 1; }
    fprintf(f, "%s  file ", any ? "" : " no NCCL call");
    text_str(f, s->info.path);
    fprintf(f, "\n");
  }
}

/* The short form: one table of operations across ranks (host time min/median/max per rank),
 * then only the ranks whose trace is cut, damaged or dropped records. */
/* The job's attempts (model/jobs.h): "job" in JSON, null when the files hold no job. */
static void print_attempts_json(struct ncs_json *j, const struct ncs_jobread *jd) {
  const struct ncs_job_info *jobs;
  int n = jd ? ncs_jobset_jobs(jd->jobs, &jobs) : 0;
  if (n != 1) { ncs_json_null(j, "job"); return; }
  ncs_json_obj_begin(j, "job");
  ncs_json_str(j, "launcher", jobs[0].launcher);
  if (jobs[0].run_id[0]) ncs_json_str(j, "run_id", jobs[0].run_id); else ncs_json_null(j, "run_id");
  ncs_jobset_json_attempts(jd->jobs, j, 0);
  ncs_json_obj_end(j);
}

/* Text: the attempts, in order, when there are several (a torchrun restart). */
static void print_attempts_text(FILE *f, const struct ncs_jobread *jd, char **files) {
  const struct ncs_job_info *jobs;
  int n = jd ? ncs_jobset_jobs(jd->jobs, &jobs) : 0;
  if (n != 1 || jobs[0].nattempts < 2) return;
  fprintf(f, "%d attempts of one job (restarts; collectives are lined up within an attempt only; rank "
             "rows are attempt 1's, then 2's ...; --job 1.K reports attempt K alone):\n", jobs[0].nattempts);
  ncs_jobset_print(jd->jobs, f, files);
}

/* A cut trace with nothing else wrong: what a killed job leaves in every file. */
static int only_cut(const struct file_sum *s) {
  return s->info.truncated && s->info.read_rc == 0 && !s->st.dropped_total && !EXECD(s);
}

/* The files' read problems, aggregated: the traces that are only cut short as one line (their
 * ranks as ranges, when the job was killed: the span of their last signs of life), then each
 * damaged, unreadable or dropping file on its own line, at most 8 unless `all`. */
static void print_file_problems(FILE *f, const char *prefix, const struct file_sum *sums, const int *order, int n, int all) {
  struct ncs_ranks cut = {0};
  int ncut = 0, nother = 0, shown = 0;
  uint64_t lo = 0, hi = 0;
  for (int i = 0; i < n; i++) {
    const struct file_sum *s = &sums[order[i]];
    if (!s->st.error[0] && !s->st.dropped_total && s->info.read_rc == 0 && !EXECD(s)) continue;
    if (!only_cut(s) || all) { nother++; continue; }
    ncut++;
    ncs_ranks_add(&cut, s->info.rank);
    uint64_t t = s->st.last_realtime_ns;
    if (t && (!lo || t < lo)) lo = t;
    if (t > hi) hi = t;
  }
  if (ncut == 1) nother++; /* one cut trace: its own line, as before */
  if (ncut > 1) {
    char rtxt[200], t1[64], t2[64];
    ncs_ranks_sort(&cut);
    ncs_ranks_format(&cut, rtxt, sizeof rtxt);
    fprintf(f, "%s%d traces cut short (no final chunk, communicators still open: the job was killed, or still runs)", prefix, ncut);
    if (lo) {
      utc_time(lo, t1, sizeof t1);
      utc_time(hi, t2, sizeof t2);
      if (lo == hi) fprintf(f, "; last sign of life %s", t1);
      else fprintf(f, "; last signs of life from %s to %s", t1, t2);
    }
    fprintf(f, ": ranks %s\n", rtxt);
  }
  ncs_ranks_free(&cut);
  for (int i = 0; i < n && nother; i++) {
    const struct file_sum *s = &sums[order[i]];
    if (!s->st.error[0] && !s->st.dropped_total && s->info.read_rc == 0 && !EXECD(s)) continue;
    if (only_cut(s) && ncut > 1 && !all) continue;
    if (!all && shown == 8) { fprintf(f, "%s... %d more files with read problems (--detail)\n", prefix, nother - shown); break; }
    shown++;
    const struct ncs_rank_info *r = &s->info;
    fprintf(f, "%srank%s %s (", prefix, r->held > 1 ? "s" : "", r->label);
    text_str(f, r->host);
    fprintf(f, " pid %u):", r->pid);
    if (s->st.error[0]) {
      fprintf(f, " %s ", r->read_rc == 1 ? "DAMAGED" : r->truncated ? "CUT" : "ERROR");
      text_str(f, s->st.error);
    }
    if (s->st.dropped_total) fprintf(f, " DROPPED %llu records", (unsigned long long)s->st.dropped_total);
    if (EXECD(s)) fprintf(f, " exec'd: %s", EXEC_TEXT);
    fprintf(f, "\n");
  }
}

static void print_job_text(FILE *f, const struct file_sum *sums, const int *order, int n) {
  uint64_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return;
  fprintf(f, "\noperations, all ranks of %d trace file%s (host time per rank: min / median / max; --detail: every rank)\n", n,
          n == 1 ? "" : "s");
  fprintf(f, "  %-22s %6s %12s %16s %11s %11s %11s\n", "op", "ranks", "calls", "bytes", "min_s", "median_s", "max_s");
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    uint64_t calls = 0, bytes = 0;
    int k = 0, nr = 0;
    for (int i = 0; i < n; i++) {
      const struct op_sum *o = &sums[order[i]].ops[op];
      if (!o->calls || sums[order[i]].info.no_comm) continue;
      nr += sums[order[i]].info.held > 1 ? sums[order[i]].info.held : 1; /* a rank per thread: each */
      calls += o->calls;
      bytes += o->bytes;
      v[k++] = o->host_ns;
    }
    if (!k) continue;
    if (k > 1) qsort(v, (size_t)k, sizeof *v, cmp_u64);
    fprintf(f, "  %-22s %6d %12llu %16llu %11.6f %11.6f %11.6f\n", ncs_op_name(op), nr, (unsigned long long)calls,
            (unsigned long long)bytes, v[0] / 1e9, v[(k - 1) / 2] / 1e9, v[k - 1] / 1e9);
  }
  free(v);
  print_no_comm_text(f, sums, order, n);
  print_file_problems(f, "  ", sums, order, n, 0);
}

/* Files whose calls were rebuilt from NCCL's profiler events (static NCCL, model/profcalls.h):
 * what is known that way and what is not, said once for the job. */
static const char *const prof_known[] = {"op", "count", "bytes", "datatype", "root", "peer", "communicator", "rank",
                                         "nranks", "gpu_time", "busbw", "algorithm", "protocol", NULL};
static const char *const prof_unknown[] = {"groups", "AlltoAll/Gather/Scatter (seen as their Send/Recv)", "communicator init/destroy", "host_time",
                                           "reduction_op", "stream", "callsite", "return_code", NULL};
static void prof_totals(const struct ncs_jobread *jd, int *files, uint64_t *calls, uint64_t *timed) {
  *files = 0; *calls = *timed = 0;
  for (int i = 0; jd && i < jd->n; i++)
    if (jd->r[i].from_profiler) { ++*files; *calls += jd->r[i].profiler_calls; *timed += jd->r[i].profiler_gpu_timed; }
}
static void print_prof_text(FILE *f, const struct ncs_jobread *jd) {
  int files;
  uint64_t calls, timed;
  prof_totals(jd, &files, &calls, &timed);
  if (!files) return;
  fprintf(f, "calls from NCCL profiler events (NCCL not interposed: linked statically; docs/PROFILER.md): %d of %d files, "
          "%" PRIu64 " calls, %" PRIu64 " with GPU time from their kernel\n", files, jd->n, calls, timed);
  fprintf(f, "  known that way:");
  for (int k = 0; prof_known[k]; k++) fprintf(f, "%s %s", k ? "," : "", prof_known[k]);
  fprintf(f, " (AllGather/Broadcast counts in bytes; Send/Recv: the GPU time of their plan's kernel)\n  not known:");
  for (int k = 0; prof_unknown[k]; k++) fprintf(f, "%s %s", k ? "," : "", prof_unknown[k]);
  fprintf(f, " (host_s is 0)\n");
}
static void print_prof_json(struct ncs_json *j, const struct ncs_jobread *jd) {
  int files;
  uint64_t calls, timed;
  prof_totals(jd, &files, &calls, &timed);
  if (!files) return; /* present only for such traces (docs/JSON.md) */
  ncs_json_obj_begin(j, "calls_from_profiler");
  ncs_json_int(j, "files", files);
  ncs_json_uint(j, "calls", calls);
  ncs_json_uint(j, "gpu_timed_calls", timed);
  ncs_json_arr_begin(j, "known");
  for (int k = 0; prof_known[k]; k++) ncs_json_str(j, NULL, prof_known[k]);
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "not_known");
  for (int k = 0; prof_unknown[k]; k++) ncs_json_str(j, NULL, prof_unknown[k]);
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

static void print_rank_json(struct ncs_json *j, const struct file_sum *s, int file, void **state,
                            const struct ncs_jobread *jd, const struct ncs_commnames *names) {
  const struct ncs_rank_info *r = &s->info;
  int att = jd ? ncs_jobset_attempt_of(jd->jobs, file) : 0;
  if (att) ncs_json_int(j, "attempt", att); else ncs_json_null(j, "attempt");
  if (r->rank >= 0) ncs_json_int(j, "rank", r->rank); else ncs_json_null(j, "rank");
  ncs_json_int(j, "nranks", r->nranks);
  if (r->held > 1) { /* a rank per thread: every rank it holds, `rank` the lowest */
    ncs_json_arr_begin(j, "ranks_held");
    for (int k = 0; k < r->held && s->held_ranks; k++) ncs_json_int(j, NULL, s->held_ranks[k]);
    ncs_json_arr_end(j);
  }
  ncs_json_str(j, "host", r->host);
  ncs_json_uint(j, "pid", r->pid);
  ncs_json_str(j, "file", r->path);
  ncs_json_bool(j, "truncated", r->truncated);
  ncs_json_bool(j, "complete", r->read_rc == 0 && !r->truncated);
  if (EXECD(s)) ncs_json_bool(j, "execd", 1); /* only when true: the image ended with exec */
  ncs_json_uint(j, "last_sign_of_life_realtime_ns", s->st.last_realtime_ns);
  ncs_json_bool(j, "damaged", r->read_rc != 0);
  if (s->st.error[0]) ncs_json_str(j, "error", s->st.error); else ncs_json_null(j, "error");
  if (jd && file < jd->n && jd->r[file].from_profiler) ncs_json_str(j, "calls_from", "profiler");
  ncs_json_uint(j, "dropped", s->st.dropped_total);
  ncs_json_obj_begin(j, "drops");
  for (unsigned i = 0; i < 8; i++)
    if (s->drops[i]) ncs_json_uint(j, drop_reason(i), s->drops[i]);
  ncs_json_obj_end(j);
  ncs_json_uint(j, "calls", s->calls);
  ncs_json_obj_begin(j, "ops");
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    const struct op_sum *o = &s->ops[op];
    if (!o->calls) continue;
    ncs_json_obj_begin(j, ncs_op_name(op));
    ncs_json_uint(j, "calls", o->calls);
    ncs_json_uint(j, "count", o->count);
    ncs_json_uint(j, "bytes", o->bytes);
    ncs_json_num(j, "host_s", o->host_ns / 1e9);
    ncs_json_uint(j, "errors", o->errors);
    if (o->from_ends) ncs_json_uint(j, "from_comm_end", o->from_ends);
    for (int a = 0; a < NANALYSES; a++)
      ncs_report_render_op_json(analyses[a], state[a], j, file, op);
    ncs_json_obj_end(j);
  }
  ncs_json_obj_end(j);
  ncs_json_arr_begin(j, "comms");
  for (uint32_t k = 0; k < s->ncomms; k++) {
    const struct comm_sum *c = &s->comms[k];
    if (!c->seen && !c->calls) continue;
    char id[20];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)c->comm_id);
    ncs_json_obj_begin(j, NULL);
    ncs_json_uint(j, "index", k);
    ncs_json_str(j, "comm_id", id);
    char nm[240];
    ncs_json_str(j, "comm", ncs_commnames_label(names, c->comm_id, nm, sizeof nm));
    ncs_json_int(j, "rank", c->rank);
    ncs_json_int(j, "nranks", c->nranks);
    ncs_json_uint(j, "calls", c->calls);
    ncs_json_str(j, "init_op", ncs_op_name(c->init_op));
    ncs_json_int(j, "init_rc", c->rc);
    ncs_json_str(j, "init_state", c->rc == 0 ? "complete" : c->rc == 7 ? "in_progress" : "failed");
    ncs_json_str(j, "end_op", c->end_op ? ncs_op_name(c->end_op) : NULL);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* "0-3", "0,2,5-7" for sorted distinct ranks, cut with "..." when it does not fit. */
static void ranks_label(char *b, size_t n, const int *r, int k) {
  size_t used = 0;
  b[0] = 0;
  for (int i = 0; i < k; ) {
    int j = i;
    while (j + 1 < k && r[j + 1] == r[j] + 1) j++;
    char part[32];
    if (j > i) snprintf(part, sizeof part, "%s%d-%d", i ? "," : "", r[i], r[j]);
    else snprintf(part, sizeof part, "%s%d", i ? "," : "", r[i]);
    if (used + strlen(part) + 4 >= n) { snprintf(b + used, n - used, ",..."); return; }
    used += (size_t)snprintf(b + used, n - used, "%s", part);
    i = j + 1;
  }
}

/* "no_communicator": processes that are not ranks (only when there is one). */
static void print_no_comm_json(struct ncs_json *j, const struct file_sum *sums, const int *order, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += sums[i].info.no_comm;
  if (!k) return;
  ncs_json_arr_begin(j, "no_communicator");
  for (int i = 0; i < n; i++) {
    const struct file_sum *s = &sums[order[i]];
    if (!s->info.no_comm) continue;
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "host", s->info.host);
    ncs_json_uint(j, "pid", s->info.pid);
    ncs_json_str(j, "file", s->info.path);
    ncs_json_uint(j, "calls", s->calls);
    ncs_json_obj_begin(j, "ops");
    for (unsigned op = 1; op < NCS_OP_LIMIT; op++)
      if (s->ops[op].calls) ncs_json_uint(j, ncs_op_name(op), s->ops[op].calls);
    ncs_json_obj_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}

/* Rank of a file: its rank in its primary communicator (the largest it made successfully;
 * ties: the lowest comm_id, so the choice does not depend on the order threads recorded them);
 * a process holding several ranks of it (a rank per thread) is named by all of them and its
 * `rank` is the lowest. Else the launcher's rank variable, else -1. A readable file with no
 * communicator and no call on one is not a rank (no_comm). */
static void settle_rank(struct file_sum *s) {
  int best = -1, any = 0;
  for (uint32_t k = 0; k < s->ncomms; k++) {
    const struct comm_sum *c = &s->comms[k];
    any |= c->seen || c->calls;
    if (!c->seen || !ncs_rc_ok(c->rc) || c->nranks <= 0) continue;
    const struct comm_sum *b = best >= 0 ? &s->comms[best] : NULL;
    if (!b || c->nranks > b->nranks || (c->nranks == b->nranks && c->comm_id < b->comm_id)) best = (int)k;
  }
  s->info.held = 0;
  s->info.no_comm = !any && !s->other_comm_calls && s->info.read_rc != 2;
  if (best >= 0) {
    const struct comm_sum *b = &s->comms[best];
    int *rk = malloc(s->ncomms * sizeof *rk), k = 0;
    for (uint32_t i = 0; rk && i < s->ncomms; i++) {
      const struct comm_sum *c = &s->comms[i];
      if (c->seen && ncs_rc_ok(c->rc) && c->comm_id == b->comm_id && c->nranks == b->nranks) rk[k++] = c->rank;
    }
    if (rk) {
      if (k > 1) qsort(rk, (size_t)k, sizeof *rk, cmp_int);
      int d = 0;
      for (int i = 0; i < k; i++) if (!d || rk[d - 1] != rk[i]) rk[d++] = rk[i];
      ranks_label(s->info.label, sizeof s->info.label, rk, d);
      s->info.rank = rk[0];
      s->info.held = d;
      s->held_ranks = rk;
      rk = NULL;
    } else {
      s->info.rank = b->rank;
      s->info.held = 1;
      snprintf(s->info.label, sizeof s->info.label, "%d", b->rank);
    }
    free(rk);
    s->info.nranks = b->nranks;
  } else {
    s->info.rank = s->env_rank;
    s->info.nranks = s->env_world > 0 ? s->env_world : 0;
    if (s->info.rank >= 0) snprintf(s->info.label, sizeof s->info.label, "%d", s->info.rank);
    else snprintf(s->info.label, sizeof s->info.label, "?");
  }
  s->info.host = s->host ? s->host : "";
}

static int cmp_rank(const void *a, const void *b, void *base) {
  const struct file_sum *sums = base;
  const struct ncs_rank_info *x = &sums[*(const int *)a].info, *y = &sums[*(const int *)b].info;
  unsigned ax = (unsigned)x->attempt - 1, ay = (unsigned)y->attempt - 1; /* a restarted job: by attempt, 0 last */
  if (ax != ay) return ax < ay ? -1 : 1;
  unsigned rx = (unsigned)x->rank, ry = (unsigned)y->rank; /* -1 sorts last */
  if (rx != ry) return rx < ry ? -1 : 1;
  int c = strcmp(x->host, y->host);
  if (c) return c;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

/* ---- reading: the loader (model/jobload.h) reads each file once, files in parallel, and hands
 * its records to the core summary and to every analysis ---- */
struct report_run {
  struct file_sum *sums;
  void **state;
  struct ncs_stages *stages;
  struct ncs_commnames *names;
};

static void run_visitor(void *ctx, int file, struct ncs_mux *m) {
  struct report_run *R = ctx;
  struct file_sum *s = &R->sums[file];
  struct ncs_visitor *core = &m->v[m->n++];
  core->ctx = s;
  core->process = on_process;
  core->comm = on_comm;
  core->comm_end = on_comm_end;
  core->calls = on_calls;
  core->drop = on_drop;
  if (R->names && m->n < NCS_MUX_MAX) ncs_commnames_visitor(R->names, file, &m->v[m->n++]);
  for (int a = 0; a < NANALYSES && m->n < NCS_MUX_MAX; a++)
    if (analyses[a]->visitor) analyses[a]->visitor(R->state[a], file, &m->v[m->n++]);
}

static void run_file_done(void *ctx, int file, int rc, const struct ncs_read_status *st) {
  struct report_run *R = ctx;
  struct file_sum *s = &R->sums[file];
  s->st = *st;
  count_dropped_ends(s);
  s->info.read_rc = rc;
  s->info.truncated = s->st.truncated;
  for (int a = 0; a < NANALYSES; a++)
    if (analyses[a]->file_done) analyses[a]->file_done(R->state[a], file, &s->st);
  ncs_stages_drop_file(R->stages, file); /* read by the analyses above, needed no more */
}

/* The command line: --json, then every option the analyses declare (analysis.h), each
 * handed on to them as "--name=value". */
enum { MAX_OPTS = 32, OPT_ANALYSIS = 256, NFIXED = 4 /* json, detail, summary, job */ };
static struct option report_opts[MAX_OPTS + 2];
static const struct ncs_analysis_option *opt_of[MAX_OPTS];
static char report_help[4096];
static struct ncs_cli report_cli = {"report", report_help, report_opts, 0};

static void build_cli(void) {
  int n = 0;
  size_t k = 0;
  report_opts[n++] = (struct option){"json", no_argument, NULL, 'j'};
  report_opts[n++] = (struct option){"detail", no_argument, NULL, 'd'};
  report_opts[n++] = (struct option){"summary", no_argument, NULL, 's'};
  report_opts[n++] = (struct option)NCS_JOB_OPTION;
  k += (size_t)snprintf(report_help + k, sizeof report_help - k, "usage: ncclscope report [--json] [--summary|--detail] [--job ID]");
  for (int a = 0; a < NANALYSES; a++)
    for (const struct ncs_analysis_option *o = analyses[a]->options; o && o->name && n <= MAX_OPTS; o++) {
      opt_of[n - NFIXED] = o;
      report_opts[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, OPT_ANALYSIS + n - NFIXED};
      n++;
      k += (size_t)snprintf(report_help + k, sizeof report_help - k, " [--%s%s%s]", o->name, o->arg ? " " : "",
                            o->arg ? o->arg : "");
    }
  report_opts[n] = (struct option){0};
  k += (size_t)snprintf(report_help + k, sizeof report_help - k, " PATH...\n"
       "Per-rank and per-operation summary of traces. PATH: trace files (*.ncs) or directories.\n"
       "  %-23s%s\n  %-23s%s\n", "-j, --json", "the document of docs/JSON.md",
       "-d, --detail", "every rank's own sections (default: the job, and outlier ranks only)");
  k += (size_t)snprintf(report_help + k, sizeof report_help - k, "  %-23s%s\n", "-s, --summary",
                        "only the job's answer (the headline; text only)");
  k += (size_t)snprintf(report_help + k, sizeof report_help - k, "%s", NCS_JOB_HELP);
  for (int i = NFIXED; i < n && k < sizeof report_help; i++) {
    char name[96];
    snprintf(name, sizeof name, "--%s%s%s", opt_of[i - NFIXED]->name, opt_of[i - NFIXED]->arg ? " " : "",
             opt_of[i - NFIXED]->arg ? opt_of[i - NFIXED]->arg : "");
    k += (size_t)snprintf(report_help + k, sizeof report_help - k, "  %-23s%s\n", name, opt_of[i - NFIXED]->help);
  }
  if (k < sizeof report_help)
    snprintf(report_help + k, sizeof report_help - k, "  %-23s%s\n%s", "-h, --help", "this text",
             "Exit: 0 reported (a cut trace is a warning), 1 the job ended badly (an init failed or\n"
             "was aborted, a communicator aborted mid-collective, calls lost), 2 bad usage, 3 damaged\n"
             "input (what came before is reported), 4 unreadable input.\n");
}

static int usage(void) { return ncs_cli_fail(&report_cli, "bad option value"); }

int cmd_report(int argc, char **argv) {
  int json = 0, detail = 0, summary = 0, ret = 0, nfiles = 0, nopt = 0;
  char **files = NULL, **paths = calloc((size_t)argc + 1, sizeof *paths);
  const char **opts = calloc((size_t)argc + 1, sizeof *opts);
  struct file_sum *sums = NULL;
  struct ncs_rank_info *infos = NULL;
  int *order = NULL;
  void *state[NANALYSES ? NANALYSES : 1] = {0};
  char *optbuf[64];
  int noptbuf = 0;
  int npaths = 0, r;
  const char *want_job = NULL;
  struct ncs_jobread *jd = NULL;
  struct ncs_stages stages = {0}; /* what one analysis computes once and others read */
  struct ncs_commnames *names = NULL; /* communicators as the job knows them, for every section */
  if (!paths || !opts) { ret = 2; goto out; }
  build_cli();
  while ((r = ncs_cli_next(&report_cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'j') { json = 1; continue; }
    if (r == 'd') { detail = 1; continue; }
    if (r == 's') { summary = 1; continue; }
    if (r == 'J') { want_job = optarg; continue; }
    if (r < OPT_ANALYSIS || noptbuf >= 64) { ret = ncs_cli_exit(r); goto out; }
    const char *name = opt_of[r - OPT_ANALYSIS]->name, *val = optarg ? optarg : "1";
    size_t l = strlen(name) + strlen(val) + 4;
    char *o = malloc(l);
    if (!o) { ret = 2; goto out; }
    snprintf(o, l, "--%s=%s", name, val);
    optbuf[noptbuf++] = o;
    opts[nopt++] = o;
  }
  while (optind < argc) paths[npaths++] = argv[optind++];
  if (npaths == 0) { ret = ncs_cli_fail(&report_cli, "no PATH given"); goto out; }
  nfiles = ncs_paths_expand(npaths, paths, &files);
  if (nfiles < 0) { ret = NCS_EXIT_UNREADABLE; goto out; }
  if (nfiles == 0) { fprintf(stderr, "ncclscope report: no trace files (*.ncs) found\n"); ret = NCS_EXIT_UNREADABLE; goto out; }
  if (want_job && (ret = ncs_pick_job("report", want_job, &nfiles, &files))) goto out;
  sums = calloc((size_t)nfiles, sizeof *sums);
  infos = calloc((size_t)nfiles, sizeof *infos);
  order = calloc((size_t)nfiles, sizeof *order);
  if (!sums || !infos || !order) { ret = NCS_EXIT_UNREADABLE; goto out; }
  struct ncs_headline headline;
  memset(&headline, 0, sizeof headline);
  headline.slowest_rank = -1;
  int ended_badly = 0;
  if (ncs_stages_init(&stages, nfiles) != 0) { ret = NCS_EXIT_UNREADABLE; goto out; }
  struct ncs_strag *strag = NULL;
  struct ncs_job job = {nfiles, infos, order, opts, detail, &headline, &ended_badly, &stages, &strag, NULL, !json};
  names = ncs_commnames_new(nfiles);
  for (int i = 0; i < nfiles; i++) infos[i].path = files[i]; /* analyses may read the files too */
  for (int a = 0; a < NANALYSES; a++) {
    state[a] = analyses[a]->create ? analyses[a]->create(&job) : NULL;
    if (analyses[a]->bad_options && analyses[a]->bad_options(state[a])) { ret = usage(); goto out; }
  }

  for (int i = 0; i < nfiles; i++) {
    sums[i].env_rank = -1;
    sums[i].info.path = files[i];
    sums[i].info.host = "";
  }
  struct report_run run = {sums, state, &stages, names};
  struct ncs_load_opts lo = {.ctx = &run, .file_visitor = run_visitor,
                             .file_done = run_file_done};
  ncs_job_load(nfiles, files, &lo, &jd); /* files in parallel: every analysis keeps per-file state */
  int ncut_only = 0;
  for (int i = 0; i < nfiles; i++) { /* in file order, whatever order the files were read in */
    ret = ncs_exit_worse(ret, ncs_exit_of_read(sums[i].info.read_rc)); /* a cut trace is a warning, not an error */
    ncut_only += sums[i].st.error[0] && sums[i].info.truncated && sums[i].info.read_rc == 0;
  }
  /* on stderr: each file's error, except that many traces merely cut short (a killed job)
   * are one line; --detail names each */
  for (int i = 0; i < nfiles; i++)
    if (sums[i].st.error[0] && (detail || ncut_only < 2 || !(sums[i].info.truncated && sums[i].info.read_rc == 0)))
      fprintf(stderr, "ncclscope: %s\n", sums[i].st.error);
  if (!detail && ncut_only > 1)
    fprintf(stderr, "ncclscope: %d traces cut short: no final chunk, communicators still open (the job was killed, or "
                    "still runs); --detail names each\n", ncut_only);
  /* a file that is not a trace (or of an unknown major version): no verdict, which would read
   * as a healthy job of fewer ranks; nothing at all when no input was a trace */
  int unreadable = 0;
  for (int i = 0; i < nfiles; i++) unreadable += sums[i].info.read_rc == 2;
  if (unreadable == nfiles) {
    fprintf(stderr, "ncclscope report: no report: %s cannot be read as a trace (above)\n",
            nfiles == 1 ? "the input" : "no input");
    goto out;
  }
  if ((r = ncs_one_job("report", jd ? jd->jobs : NULL, files))) { ret = r; goto out; }
  const struct ncs_job_info *jobs;
  int restarted = jd && ncs_jobset_jobs(jd->jobs, &jobs) == 1 && jobs[0].nattempts > 1;
  for (int i = 0; i < nfiles; i++) {
    settle_rank(&sums[i]);
    sums[i].info.attempt = restarted ? ncs_jobset_attempt_of(jd->jobs, i) : 0;
    infos[i] = sums[i].info;
    order[i] = i;
  }
  qsort_r(order, (size_t)nfiles, sizeof *order, cmp_rank, sums);
  ncs_commnames_finish(names);
  job.names = names;
  for (int a = 0; a < NANALYSES; a++)
    if (analyses[a]->finish) analyses[a]->finish(state[a], &job);

  if (json) {
    struct ncs_json j;
    ncs_json_init(&j, stdout, 1);
    ncs_json_obj_begin(&j, NULL);
    ncs_json_int(&j, "version", NCS_REPORT_JSON_VERSION);
    ncs_json_int(&j, "files", nfiles);
    ncs_json_arr_begin(&j, "ranks");
    for (int k = 0; k < nfiles; k++) {
      int i = order[k];
      if (sums[i].info.no_comm) continue;
      ncs_json_obj_begin(&j, NULL);
      print_rank_json(&j, &sums[i], i, state, jd, names);
      for (int a = 0; a < NANALYSES; a++)
        ncs_report_render_rank_json(analyses[a], state[a], &j, i);
      ncs_json_obj_end(&j);
    }
    ncs_json_arr_end(&j);
    print_attempts_json(&j, jd);
    print_prof_json(&j, jd);
    print_no_comm_json(&j, sums, order, nfiles);
    /* warnings: what a script should know although the report could be made (exit 0) */
    ncs_json_arr_begin(&j, "warnings");
    for (int k = 0; k < nfiles; k++) {
      const struct file_sum *s = &sums[order[k]];
      if (!s->info.truncated || s->info.read_rc) continue;
      ncs_json_obj_begin(&j, NULL);
      ncs_json_str(&j, "file", s->info.path);
      ncs_json_str(&j, "what", "cut");
      ncs_json_str(&j, "message", s->st.error);
      ncs_json_uint(&j, "last_sign_of_life_realtime_ns", s->st.last_realtime_ns);
      ncs_json_obj_end(&j);
    }
    ncs_json_arr_end(&j);
    if (headline.built) ncs_headline_print_json(&headline, &j);
    for (int a = 0; a < NANALYSES; a++)
      ncs_report_render_json(analyses[a], state[a], &j, &job);
    ncs_json_obj_end(&j);
    ncs_json_done(&j);
  } else if (unreadable) {
    printf("ncclscope: no verdict: %d of the %d inputs cannot be read as traces (named on stderr); below, the other %d\n",
           unreadable, nfiles, nfiles - unreadable);
  } else if (headline.built) { /* the job's answer first (analysis/verdicts.c built it) */
    ncs_headline_print_text(&headline, stdout, 1);
  }
  if (!json && !summary) { /* --summary: the headline alone */
    if (detail) printf("\n%d trace file%s\n", nfiles, nfiles == 1 ? "" : "s"); /* else in the operations' title */
    print_prof_text(stdout, jd);
    print_attempts_text(stdout, jd, files);
    if (detail) {
      for (int k = 0; k < nfiles; k++)
        if (!sums[order[k]].info.no_comm) print_rank_text(stdout, &sums[order[k]], names);
      print_no_comm_text(stdout, sums, order, nfiles);
    }
    else print_job_text(stdout, sums, order, nfiles);
    for (int a = 0; a < NANALYSES; a++)
      ncs_report_render_text(analyses[a], state[a], stdout, &job);
  }
  fflush(stdout);
  if (ended_badly) ret = ncs_exit_worse(ret, NCS_EXIT_FINDING); /* a failed init, an abort, calls lost */
out:
  ncs_jobread_free(jd);
  for (int a = 0; a < NANALYSES; a++)
    if (state[a] && analyses[a]->destroy) analyses[a]->destroy(state[a]);
  ncs_stages_free(&stages);
  ncs_commnames_free(names);
  if (sums)
    for (int i = 0; i < nfiles; i++) { free(sums[i].comms); free(sums[i].host); free(sums[i].held_ranks); }
  free(sums);
  free(infos);
  free(order);
  for (int i = 0; i < noptbuf; i++) free(optbuf[i]);
  if (files) ncs_paths_free(files, nfiles);
  free(paths);
  free(opts);
  return ret;
}
