/* jobs.c — grouping trace files into jobs and attempts (contract in jobs.h). */
#include "model/jobs.h"

#include <stdlib.h>
#include <string.h>

struct jfile {
  int seen;                   /* a PROCESS record was read */
  char run_id[96];            /* TORCHELASTIC_RUN_ID unless "none" */
  int restart;                /* TORCHELASTIC_RESTART_COUNT, -1 unset */
  char strong[224];           /* ids that name one launch: run id + restart, Slurm step, PMIx... */
  char weak[160];             /* MASTER_ADDR:MASTER_PORT (reused by jobs one after another) */
  char launcher[160];         /* for people */
  uint64_t *comms;            /* distinct comm_ids of its communicators */
  int ncomm, capcomm, nranks;
  uint64_t start, end;        /* realtime ns */
  int state;                  /* enum ncs_end */
  char host[128];
  uint32_t pid;
  int exec_next, exec_prev;   /* the process's next / previous image across an exec, -1 none */
};

struct ncs_jobset {
  int n;
  struct jfile *f;
  int *parent;                /* union-find over files */
  int *job, *attempt;         /* per file, after finish: job index (-1 apart), attempt 1.. (0) */
  struct ncs_job_info *jobs;
  int njobs;
};

static const char *kv(const struct ncs_process *p, const char *k) {
  const char *v = ncs_process_get(p, k);
  return v ? v : "";
}

static int v_process(void *ctx, const struct ncs_process *p) {
  struct jfile *f = ctx;
  f->seen = 1;
  f->start = p->created_realtime_ns;
  snprintf(f->host, sizeof f->host, "%s", kv(p, "host"));
  f->pid = (uint32_t)strtoul(kv(p, "pid"), NULL, 10);
  const char *rid = kv(p, "env.TORCHELASTIC_RUN_ID"), *rc = kv(p, "env.TORCHELASTIC_RESTART_COUNT");
  if (strcmp(rid, "none")) snprintf(f->run_id, sizeof f->run_id, "%s", rid);
  f->restart = *rc ? atoi(rc) : -1;
  const char *sj = kv(p, "env.SLURM_JOB_ID"), *ss = kv(p, "env.SLURM_STEP_ID"),
             *pmix = kv(p, "env.PMIX_NAMESPACE"), *ompi = kv(p, "env.OMPI_MCA_ess_base_jobid"),
             *flux = kv(p, "env.FLUX_JOB_ID"), *ma = kv(p, "env.MASTER_ADDR"), *mp = kv(p, "env.MASTER_PORT");
  if (f->run_id[0] || (*sj && *ss) || *pmix || *ompi || *flux)
    snprintf(f->strong, sizeof f->strong, "%s|%s|%s.%s|%s|%s|%s|%s:%s", f->run_id, rc, sj, ss, pmix, ompi, flux, ma, mp);
  if (*ma || *mp) snprintf(f->weak, sizeof f->weak, "%s:%s", ma, mp);
  size_t k = 0;
  const char *show[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_ARRAY_JOB_ID",
                        "SLURM_ARRAY_TASK_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PBS_JOBID",
                        "LSB_JOBID", "FLUX_JOB_ID", "JAX_COORDINATOR_ADDRESS"};
  for (size_t i = 0; i < sizeof show / sizeof *show && k < sizeof f->launcher; i++) {
    char key[64];
    snprintf(key, sizeof key, "env.%s", show[i]);
    const char *v = kv(p, key);
    if (!*v || (i == 0 && !f->run_id[0])) continue;
    int w = snprintf(f->launcher + k, sizeof f->launcher - k, "%s%s=%s", k ? " " : "", show[i], v);
    if (w > 0) k += (size_t)w;
  }
  if (k < sizeof f->launcher && f->weak[0])
    snprintf(f->launcher + k, sizeof f->launcher - k, "%smaster=%.100s", k ? " " : "", f->weak);
  return 0;
}

static int v_comm(void *ctx, const struct ncs_comm *c) {
  struct jfile *f = ctx;
  if (!c->comm_id || c->nranks <= 0) return 0;
  if (c->nranks > f->nranks) f->nranks = c->nranks;
  for (int i = 0; i < f->ncomm; i++) if (f->comms[i] == c->comm_id) return 0;
  if (f->ncomm == f->capcomm) {
    int nc = f->capcomm ? f->capcomm * 2 : 4;
    uint64_t *p = realloc(f->comms, (size_t)nc * sizeof *p);
    if (!p) return 0;
    f->comms = p; f->capcomm = nc;
  }
  f->comms[f->ncomm++] = c->comm_id;
  return 0;
}

struct ncs_jobset *ncs_jobset_new(int nfiles) {
  struct ncs_jobset *s = calloc(1, sizeof *s);
  int n = nfiles > 0 ? nfiles : 1;
  if (!s) return NULL;
  s->n = nfiles;
  s->f = calloc((size_t)n, sizeof *s->f);
  s->parent = calloc((size_t)n, sizeof *s->parent);
  s->job = calloc((size_t)n, sizeof *s->job);
  s->attempt = calloc((size_t)n, sizeof *s->attempt);
  if (!s->f || !s->parent || !s->job || !s->attempt) { ncs_jobset_free(s); return NULL; }
  for (int i = 0; i < nfiles; i++) {
    s->f[i].restart = -1;
    s->job[i] = -1;
    s->f[i].exec_next = s->f[i].exec_prev = -1;
  }
  return s;
}

void ncs_jobset_free(struct ncs_jobset *s) {
  if (!s) return;
  for (int i = 0; s->f && i < s->n; i++) free(s->f[i].comms);
  for (int i = 0; i < s->njobs; i++) {
    for (int a = 0; a < s->jobs[i].nattempts; a++) free(s->jobs[i].att[a].files);
    free(s->jobs[i].att);
  }
  free(s->jobs); free(s->f); free(s->parent); free(s->job); free(s->attempt);
  free(s);
}

void ncs_jobset_process(struct ncs_jobset *s, int file, const struct ncs_process *p) { v_process(&s->f[file], p); }
void ncs_jobset_comm(struct ncs_jobset *s, int file, const struct ncs_comm *c) { v_comm(&s->f[file], c); }

struct ncs_visitor ncs_jobset_visitor(struct ncs_jobset *s, int file) {
  return (struct ncs_visitor){.ctx = &s->f[file], .process = v_process, .comm = v_comm};
}

void ncs_jobset_file_done(struct ncs_jobset *s, int file, int read_rc, const struct ncs_read_status *st) {
  struct jfile *f = &s->f[file];
  f->end = st && st->last_realtime_ns > f->start ? st->last_realtime_ns : f->start;
  f->state = read_rc == 2 ? NCS_END_UNREADABLE : read_rc == 1 ? NCS_END_DAMAGED
           : st && st->truncated ? NCS_END_CUT : st && st->exec_ended && !st->final_seen ? NCS_END_EXEC
           : NCS_END_COMPLETE;
}

const char *ncs_end_name(int end) {
  static const char *names[] = {"complete", "cut", "damaged", "unreadable", "exec'd"};
  return end >= 0 && end <= 4 ? names[end] : "?";
}

static int root(int *p, int i) {
  while (p[i] != i) { p[i] = p[p[i]]; i = p[i]; }
  return i;
}
static void join(int *p, int a, int b) {
  a = root(p, a); b = root(p, b);
  if (a != b) { if (a < b) p[b] = a; else p[a] = b; } /* the lowest file is the root */
}

struct cf { uint64_t id; int file; };
static int cmp_cf(const void *a, const void *b) {
  const struct cf *x = a, *y = b;
  return x->id != y->id ? (x->id < y->id ? -1 : 1) : x->file - y->file;
}
static int overlap(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2) { return s1 <= e2 && s2 <= e1; }

/* Attempt under construction: a union-find root and its span. */
struct att { int root, restart, job; uint64_t start, stop; const struct jfile *f0; };
static int cmp_att(const void *a, const void *b) {
  const struct att *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->root - y->root;
}

void ncs_jobset_finish(struct ncs_jobset *s) {
  int n = s->n;
  struct jfile *F = s->f;
  for (int i = 0; i < n; i++) s->parent[i] = i;
  /* 1. files sharing a communicator */
  size_t total = 0;
  for (int i = 0; i < n; i++) total += (size_t)F[i].ncomm;
  struct cf *cf = malloc((total ? total : 1) * sizeof *cf);
  if (!cf) return;
  size_t k = 0;
  for (int i = 0; i < n; i++) for (int c = 0; c < F[i].ncomm; c++) cf[k++] = (struct cf){F[i].comms[c], i};
  if (total > 1) qsort(cf, total, sizeof *cf, cmp_cf);
  for (size_t i = 1; i < total; i++) if (cf[i].id == cf[i - 1].id) join(s->parent, cf[i - 1].file, cf[i].file);
  free(cf);
  /* 1b. an image that ended with exec, and the same process's next image: the file of the same
   * host and pid created first at or after it */
  for (int i = 0; i < n; i++) {
    if (F[i].state != NCS_END_EXEC || !F[i].seen || !F[i].pid) continue;
    int next = -1;
    for (int j = 0; j < n; j++)
      if (j != i && F[j].seen && F[j].pid == F[i].pid && !strcmp(F[j].host, F[i].host) && (F[j].start > F[i].start || (F[j].start == F[i].start && j > i)) &&
          F[j].exec_prev < 0 && (next < 0 || F[j].start < F[next].start))
        next = j;
    if (next < 0) continue;
    F[i].exec_next = next;
    F[next].exec_prev = i;
    if (F[i].ncomm && F[next].ncomm) join(s->parent, i, next);
  }
  /* 2. components of one launch (strong ids equal) whose spans overlap; spans per root */
  int changed = 1;
  uint64_t *cs = calloc((size_t)(n ? n : 1), sizeof *cs), *ce = calloc((size_t)(n ? n : 1), sizeof *ce);
  if (!cs || !ce) { free(cs); free(ce); return; }
  while (changed) {
    changed = 0;
    for (int i = 0; i < n; i++) { cs[i] = UINT64_MAX; ce[i] = 0; }
    for (int i = 0; i < n; i++) {
      if (!F[i].ncomm) continue;
      int r = root(s->parent, i);
      if (F[i].start < cs[r]) cs[r] = F[i].start;
      if (F[i].end > ce[r]) ce[r] = F[i].end;
    }
    for (int i = 0; i < n && !changed; i++) {
      if (!F[i].ncomm || !F[i].strong[0]) continue;
      for (int j = i + 1; j < n && !changed; j++) {
        if (!F[j].ncomm || strcmp(F[i].strong, F[j].strong)) continue;
        int a = root(s->parent, i), b = root(s->parent, j);
        if (a != b && overlap(cs[a], ce[a], cs[b], ce[b])) { join(s->parent, a, b); changed = 1; }
      }
    }
  }
  /* 3. a file in no communicator joins the one attempt its launcher ids and time match */
  for (int i = 0; i < n; i++) {
    if (F[i].ncomm || !F[i].seen) continue;
    int kin = -1; /* an image of the same process, across exec, that made communicators */
    for (int k = F[i].exec_prev; k >= 0 && kin < 0; k = F[k].exec_prev) if (F[k].ncomm) kin = k;
    for (int k = F[i].exec_next; k >= 0 && kin < 0; k = F[k].exec_next) if (F[k].ncomm) kin = k;
    if (kin >= 0) { s->parent[i] = root(s->parent, kin); continue; }
    const char *key = F[i].strong[0] ? F[i].strong : F[i].weak;
    int match = -1, count = 0;
    for (int r = 0; r < n && *key; r++) {
      if (!F[r].ncomm || root(s->parent, r) != r) continue;
      int same = 0;
      for (int j = r; j < n && !same; j++)
        same = F[j].ncomm && root(s->parent, j) == r && !strcmp(F[i].strong[0] ? F[j].strong : F[j].weak, key);
      if (same && overlap(cs[r], ce[r], F[i].start, F[i].end)) { match = r; count++; }
    }
    s->parent[i] = count == 1 ? match : -1; /* apart: -1 (its own root never counts) */
  }
  /* 4. attempts: the roots of files with communicators, in start order */
  struct att *A = calloc((size_t)(n ? n : 1), sizeof *A);
  int na = 0;
  if (!A) { free(cs); free(ce); return; }
  for (int i = 0; i < n; i++)
    if (F[i].ncomm && root(s->parent, i) == i)
      A[na++] = (struct att){.root = i, .restart = F[i].restart, .start = cs[i], .stop = ce[i], .f0 = &F[i], .job = -1};
  if (na > 1) qsort(A, (size_t)na, sizeof *A, cmp_att);
  /* 5. jobs: an attempt follows an earlier one of the same torchelastic run with a lower
   * restart count that ended before it started; else it starts a job */
  s->jobs = calloc((size_t)(na ? na : 1), sizeof *s->jobs);
  if (!s->jobs) { free(A); free(cs); free(ce); return; }
  for (int a = 0; a < na; a++) {
    int j = -1;
    for (int k = s->njobs - 1; k >= 0 && j < 0 && A[a].f0->run_id[0]; k--) {
      const struct ncs_job_info *J = &s->jobs[k];
      int last = J->att[J->nattempts - 1].restart_count;
      if (!strcmp(J->run_id, A[a].f0->run_id) && last >= 0 && A[a].restart > last) j = k;
    }
    if (j < 0) {
      j = s->njobs++;
      struct ncs_job_info *J = &s->jobs[j];
      J->id = j + 1;
      snprintf(J->launcher, sizeof J->launcher, "%s", A[a].f0->launcher);
      snprintf(J->run_id, sizeof J->run_id, "%s", A[a].f0->run_id);
    }
    struct ncs_job_info *J = &s->jobs[j];
    struct ncs_attempt *p = realloc(J->att, (size_t)(J->nattempts + 1) * sizeof *p);
    if (!p) continue;
    J->att = p;
    struct ncs_attempt *at = &J->att[J->nattempts++];
    memset(at, 0, sizeof *at);
    at->restart_count = A[a].restart;
    at->start_ns = A[a].start;
    at->end_ns = A[a].stop;
    A[a].job = j;
    for (int i = 0; i < n; i++) {
      if (s->parent[i] < 0 || root(s->parent, i) != A[a].root) continue;
      int *q = realloc(at->files, (size_t)(at->n + 1) * sizeof *q);
      if (!q) continue;
      at->files = q;
      at->files[at->n++] = i;
      if (F[i].nranks > at->nranks) at->nranks = F[i].nranks;
      int end = F[i].state == NCS_END_EXEC ? NCS_END_COMPLETE : F[i].state; /* it goes on in the next image */
      if (F[i].ncomm && end > at->end) at->end = end;
      s->job[i] = j;
      s->attempt[i] = J->nattempts;
    }
  }
  free(A);
  free(cs);
  free(ce);
}

int ncs_jobset_jobs(const struct ncs_jobset *s, const struct ncs_job_info **out) {
  *out = s ? s->jobs : NULL;
  return s ? s->njobs : 0;
}
int ncs_jobset_job_of(const struct ncs_jobset *s, int file) { return s && file >= 0 && file < s->n ? s->job[file] : -1; }
int ncs_jobset_attempt_of(const struct ncs_jobset *s, int file) {
  return s && file >= 0 && file < s->n ? s->attempt[file] : 0;
}

int ncs_jobset_pick(const struct ncs_jobset *s, const char *want, int **out) {
  *out = NULL;
  if (!s || !want || !*want) return -1;
  int job = -1, attempt = 0;
  char *end;
  long v = strtol(want, &end, 10);
  if (end != want && v >= 1 && v <= s->njobs && (!*end || *end == '.')) {
    job = (int)v - 1;
    if (*end == '.') {
      long a = strtol(end + 1, &end, 10);
      if (*end || a < 1 || a > s->jobs[job].nattempts) return -1;
      attempt = (int)a;
    }
  } else {
    for (int j = 0; j < s->njobs && job < 0; j++)
      if (s->jobs[j].run_id[0] && !strcmp(s->jobs[j].run_id, want)) job = j;
  }
  if (job < 0) return -1;
  int *p = malloc((size_t)(s->n ? s->n : 1) * sizeof *p), m = 0;
  if (!p) return -1;
  for (int i = 0; i < s->n; i++)
    if (s->job[i] == job && (!attempt || s->attempt[i] == attempt)) p[m++] = i;
  *out = p;
  return m;
}

static double span_s(uint64_t a, uint64_t b) { return b > a ? (double)(b - a) / 1e9 : 0; }

void ncs_jobset_print(const struct ncs_jobset *s, FILE *f, char **paths) {
  if (!s) return;
  uint64_t t0 = UINT64_MAX;
  for (int j = 0; j < s->njobs; j++) if (s->jobs[j].nattempts && s->jobs[j].att[0].start_ns < t0) t0 = s->jobs[j].att[0].start_ns;
  for (int j = 0; j < s->njobs; j++) {
    const struct ncs_job_info *J = &s->jobs[j];
    int files = 0;
    for (int a = 0; a < J->nattempts; a++) files += J->att[a].n;
    fprintf(f, "job %d: %d attempt%s, %d file%s", J->id, J->nattempts, J->nattempts == 1 ? "" : "s", files,
            files == 1 ? "" : "s");
    if (J->launcher[0]) { fputs(", ", f); ncs_text_escape(f, J->launcher, strlen(J->launcher)); }
    fputc('\n', f);
    for (int a = 0; a < J->nattempts; a++) {
      const struct ncs_attempt *at = &J->att[a];
      fprintf(f, "  %d.%d  %d rank%s, %d file%s, %+.3f s to %+.3f s, %s", J->id, a + 1, at->nranks,
              at->nranks == 1 ? "" : "s", at->n, at->n == 1 ? "" : "s", span_s(t0, at->start_ns),
              span_s(t0, at->end_ns), ncs_end_name(at->end));
      if (at->restart_count >= 0) fprintf(f, ", restart %d", at->restart_count);
      fputs(at->n ? ", e.g. " : "", f);
      if (at->n && paths) ncs_text_escape(f, paths[at->files[0]], strlen(paths[at->files[0]]));
      fputc('\n', f);
    }
  }
  int apart = 0;
  for (int i = 0; i < s->n; i++) apart += s->job[i] < 0;
  if (apart) {
    fprintf(f, "in no job (no communicator: ncclGetVersion-only or still starting): %d file%s\n", apart,
            apart == 1 ? "" : "s");
    for (int i = 0; i < s->n && paths; i++)
      if (s->job[i] < 0) { fputs("  ", f); ncs_text_escape(f, paths[i], strlen(paths[i])); fputc('\n', f); }
  }
}

static void json_attempt(struct ncs_json *j, const struct ncs_job_info *J, int a, char **paths) {
  const struct ncs_attempt *at = &J->att[a];
  ncs_json_obj_begin(j, NULL);
  ncs_json_int(j, "attempt", a + 1);
  if (at->restart_count >= 0) ncs_json_int(j, "restart_count", at->restart_count);
  else ncs_json_null(j, "restart_count");
  ncs_json_int(j, "ranks", at->nranks);
  ncs_json_int(j, "files", at->n);
  ncs_json_uint(j, "start_realtime_ns", at->start_ns);
  ncs_json_uint(j, "end_realtime_ns", at->end_ns);
  ncs_json_str(j, "ended", ncs_end_name(at->end));
  if (paths) {
    ncs_json_arr_begin(j, "paths");
    for (int i = 0; i < at->n; i++) ncs_json_str(j, NULL, paths[at->files[i]]);
    ncs_json_arr_end(j);
  }
  ncs_json_obj_end(j);
}

void ncs_jobset_json(const struct ncs_jobset *s, struct ncs_json *j, char **paths) {
  ncs_json_arr_begin(j, "jobs");
  for (int k = 0; s && k < s->njobs; k++) {
    const struct ncs_job_info *J = &s->jobs[k];
    ncs_json_obj_begin(j, NULL);
    ncs_json_int(j, "job", J->id);
    ncs_json_str(j, "launcher", J->launcher);
    if (J->run_id[0]) ncs_json_str(j, "run_id", J->run_id);
    else ncs_json_null(j, "run_id");
    ncs_json_arr_begin(j, "attempts");
    for (int a = 0; a < J->nattempts; a++) json_attempt(j, J, a, paths);
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "apart");
  for (int i = 0; s && i < s->n; i++) if (s->job[i] < 0 && paths) ncs_json_str(j, NULL, paths[i]);
  ncs_json_arr_end(j);
}

void ncs_jobset_json_attempts(const struct ncs_jobset *s, struct ncs_json *j, int job) {
  ncs_json_arr_begin(j, "attempts");
  for (int a = 0; s && job >= 0 && job < s->njobs && a < s->jobs[job].nattempts; a++) json_attempt(j, &s->jobs[job], a, NULL);
  ncs_json_arr_end(j);
}
