/* jobload.c — the loader (contract in jobload.h). */
#include "model/jobload.h"
#include "base/settings.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclscope/cupti_abi.h"
#include "ncclscope/format.h"
#include "io/progress.h"
#include "io/readcount.h"
#include "io/regfile.h"
#include "model/knames.h"
#include "model/profcalls.h"

struct loader;
struct fctx {
  struct loader *L;
  int file;
  struct ncs_fileread *r;
  struct ncs_aligner al;
  int aligning;               /* a plug-in takes aligned calls */
  uint64_t last_off;
  uint8_t *nccl_names;        /* bitmap of KERNEL_NAME ids named as NCCL's but recorded as compute
                                 (an older shim's symmetric kernels): their kernels are lifted */
  struct fmux *mx;            /* while the file is open (9 KiB: not held for every file of the job) */
  struct ncs_visitor inner;   /* mx->mux's out */
  struct ncs_profcalls *pc;
  /* lockstep (see ncs_job_load) */
  struct ncs_trace *t;
  struct ncs_read_status st;
  struct ncs_visitor v;
  int live;                   /* opened and not read to the end */
  int have_t;                 /* lockstep: a call was released, t_rel is known */
  int64_t t_rel;              /* host entry (job clock) of the latest call released */
  int64_t span;               /* how far t_rel moved in this file's latest step */
  int waiting;                /* whole files: not opened yet (a worker opens it when it takes it) */
};
struct fmux {
  struct ncs_mux mux;         /* the loader's visitor and the plug-ins' */
  struct ncs_mux outer;       /* inner, then the calls rebuilt from profiler events (profcalls.h) */
};

struct loader {
  int n;
  char **files;
  const struct ncs_load_opts *o;
  struct ncs_jobread *job;
  pthread_mutex_t mu;         /* next file of the round */
  struct fctx *f;             /* [n] every file's reading state */
  int *step;                  /* [n] files advancing in this round */
  int nstep, next;
  int lockstep;               /* 1: files advance a chunk at a time in lockstep; 0: whole files */
};

/* A run of calls released by the aligner: the lockstep's pace (t_rel, have_t: read by
 * plan_round in lockstep only), then the plug-in. */
static void on_aligned(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct fctx *f = ctx;
  if (f->L->lockstep) {
    int64_t t = f->have_t ? f->t_rel : a[0].enter;
    for (size_t i = 0; i < n; i++) t = a[i].enter > t ? a[i].enter : t;
    f->t_rel = t;
    f->have_t = 1;
  }
  if (f->L->o->aligned) f->L->o->aligned(f->L->o->ctx, f->file, a, n);
}

static void on_aligned_kernel(void *ctx, const struct ncs_aligned_kernel *k) {
  struct fctx *f = ctx;
  f->L->o->aligned_kernel(f->L->o->ctx, f->file, k);
}

static int v_process(void *ctx, const struct ncs_process *p) {
  struct fctx *f = ctx;
  ncs_jobset_process(f->L->job->jobs, f->file, p);
  if (!f->aligning) return 0;
  const char *rt = ncs_process_get(p, "clock_realtime_ns"), *mo = ncs_process_get(p, "clock_monotonic_ns");
  if (rt && mo) {
    struct ncs_clock c = {strtoull(rt, NULL, 10), strtoull(mo, NULL, 10), 0};
    if (c.realtime_ns && c.monotonic_ns) ncs_aligner_clock(&f->al, &c);
  }
  return 0;
}
static int v_comm(void *ctx, const struct ncs_comm *c) {
  struct fctx *f = ctx;
  ncs_jobset_comm(f->L->job->jobs, f->file, c);
  return 0;
}
static int v_call(void *ctx, const struct ncs_call *c) { ncs_aligner_call(&((struct fctx *)ctx)->al, c); return 0; }
static int v_gpu(void *ctx, const struct ncs_gpu_time *g) { ncs_aligner_gpu(&((struct fctx *)ctx)->al, g); return 0; }
static int v_clock(void *ctx, const struct ncs_clock *c) { ncs_aligner_clock(&((struct fctx *)ctx)->al, c); return 0; }
static int v_inflight(void *ctx, const struct ncs_inflight *x) { ncs_aligner_inflight(&((struct fctx *)ctx)->al, x); return 0; }
/* A stretch of CALL and GPU_TIME records (io/trace.h), in file order: the aligner's matching
 * depends on it (a GPU time finds its call among the newest held calls). */
static int v_stretch(void *ctx, const struct ncs_stretch *s) {
  ncs_aligner_stretch(&((struct fctx *)ctx)->al, s);
  return 0;
}

/* KERNEL records, aligned; KERNEL_NAME records, for the NCCL kernels an older shim recorded as
 * compute. */
static int v_raw(void *ctx, const struct ncs_raw *raw) {
  struct fctx *f = ctx;
  if (raw->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    struct ncs_rbuf rb;
    if (ncs_dec_kernel(ncs_rbuf_on(&rb, raw->body, raw->len), &k) == 0) {
      if (k.kclass == NCS_KCLASS_COMPUTE && f->nccl_names && k.name < NCS_KNAMES_MAX &&
          (f->nccl_names[k.name / 8] >> (k.name % 8) & 1))
        k.kclass = NCS_KCLASS_NCCL; /* every NCCL kernel is communication */
      ncs_aligner_kernel(&f->al, &k);
    }
    return 0;
  }
  if (raw->type == NCS_REC_KERNEL_NAME) {
    struct ncs_kernel_name x;
    struct ncs_rbuf rb;
    if (ncs_dec_kernel_name(ncs_rbuf_on(&rb, raw->body, raw->len), &x) != 0 || x.kclass == NCS_KCLASS_NCCL ||
        x.id >= NCS_KNAMES_MAX)
      return 0;
    x.name[sizeof x.name - 1] = 0;
    if (!ncs_is_nccl_kernel(x.name)) return 0;
    if (!f->nccl_names && !(f->nccl_names = calloc(NCS_KNAMES_MAX / 8, 1))) return 0;
    f->nccl_names[x.id / 8] |= (uint8_t)(1u << (x.id % 8));
  }
  return 0;
}

static int v_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  struct fctx *f = ctx;
  if (offset > f->last_off) { ncs_progress_bytes(offset - f->last_off); f->last_off = offset; }
  return 0;
}

/* The visitors of file i: the loader's own, then the plug-ins'. Returns 0, or -1 when out of
 * memory. */
static int file_attach(struct loader *L, int i) {
  struct fctx *f = &L->f[i];
  const struct ncs_load_opts *o = L->o;
  if (!(f->mx = calloc(1, sizeof *f->mx))) return -1;
  struct ncs_mux *m = &f->mx->mux;
  struct ncs_visitor own = {.ctx = f, .process = v_process, .comm = v_comm};
  if (o->progress_label) own.chunk = v_chunk;
  if (f->aligning) {
    own.call = v_call; own.gpu_time = v_gpu; own.clock = v_clock; own.inflight = v_inflight;
    own.stretch = v_stretch;
  }
  if (o->aligned_kernel) own.raw = v_raw;
  m->v[m->n++] = own;
  if (o->file_visitor) o->file_visitor(o->ctx, i, m);
  ncs_mux_build(m, &f->inner);
  /* a process whose NCCL no wrapper reached (static NCCL): its calls come from NCCL's profiler
   * events, handed to the same visitors (model/profcalls.h) */
  f->pc = ncs_profcalls_new();
  if (!f->pc) { f->v = f->inner; return 0; }
  struct ncs_mux *outer = &f->mx->outer;
  outer->v[outer->n++] = f->inner;
  outer->v[outer->n++] = ncs_profcalls_visitor(f->pc, &f->inner);
  ncs_mux_build(outer, &f->v);
  return 0;
}

/* Opens file i (its PROCESS record etc. follow with its first step); sp: the memory its aligner
 * starts from and leaves when the file is closed (the thread's that reads it to its end), or NULL. */
static void file_open(struct loader *L, int i, struct ncs_aligner_spare *sp) {
  struct fctx *f = &L->f[i];
  const struct ncs_load_opts *o = L->o;
  memset(f, 0, sizeof *f);
  f->L = L; f->file = i; f->r = &L->job->r[i];
  f->aligning = o->aligned || o->aligned_kernel;
  ncs_aligner_init(&f->al, L->job->origin, NULL, f);
  f->al.release_run = on_aligned;
  f->al.spare = sp;
  if (o->aligned_kernel) f->al.release_kernel = on_aligned_kernel;
  if (f->aligning && o->file_clock) o->file_clock(o->ctx, i, &f->al);
  if (file_attach(L, i) != 0) {
    f->r->read_rc = 2;
    snprintf(f->st.error, sizeof f->st.error, "%s: out of memory", L->files[i]);
    return;
  }
  f->r->read_rc = ncs_trace_open(L->files[i], &f->v, &f->st, &f->t);
  f->live = f->t != NULL;
  if (L->lockstep) ncs_trace_park(f->t); /* thousands of files: no descriptor held until the file's turn */
}

/* The end of file i's read: what remains held is released and its figures are settled. */
static void file_close(struct loader *L, int i) {
  struct fctx *f = &L->f[i];
  if (f->t) f->r->read_rc = ncs_trace_close(f->t);
  f->t = NULL;
  f->live = 0;
  if (f->st.bytes > f->last_off) ncs_progress_bytes(f->st.bytes - f->last_off);
  if (f->pc) { /* the calls still waiting for their kernel go on now */
    struct ncs_profcalls_stats ps = ncs_profcalls_finish(f->pc);
    f->r->from_profiler = ps.active;
    f->r->profiler_calls = ps.calls;
    f->r->profiler_gpu_timed = ps.gpu_timed;
    ncs_profcalls_free(f->pc);
    f->pc = NULL;
  }
  ncs_aligner_flush(&f->al);
  f->r->truncated = f->st.truncated;
  f->r->dropped = f->st.dropped_total;
  snprintf(f->r->error, sizeof f->r->error, "%s", f->st.error);
  if (f->aligning) {
    f->r->gpu_unmatched = f->al.gpu_unmatched;
    f->r->clock_pairs = f->al.map.npairs;
    f->r->clock_unc_ns = f->al.map.unc_max;
    f->r->clock_offset_ns = f->al.map.off_first;
    f->r->clock_drift_ppm = ncs_clockmap_drift_ppm(&f->al.map);
  }
  ncs_progress_file_done();
  ncs_jobset_file_done(L->job->jobs, i, f->r->read_rc, &f->st);
  if (L->o->file_done) L->o->file_done(L->o->ctx, i, f->r->read_rc, &f->st);
  ncs_aligner_free(&f->al);
  free(f->nccl_names);
  f->nccl_names = NULL;
  free(f->mx);
  f->mx = NULL;
}

/* One step of file i: its next chunk is decoded and its records handed on. */
static void file_step(struct loader *L, int i, struct ncs_trace_bufs *b) {
  struct fctx *f = &L->f[i];
  int64_t before = f->t_rel, had = f->have_t;
  int more = ncs_trace_next(f->t, b);
  if (L->lockstep) ncs_trace_park(f->t); /* no descriptor held between steps: thousands of files stay open */
  f->span = had && f->have_t ? f->t_rel - before : 0;
  if (!more) file_close(L, i);
}

#define HELD_CALL_BYTES 128   /* an aligner's held call (align.c), rounded up */
#define FILE_STATE_BYTES 8192 /* a file's reading state besides its held calls */
#define WINDOW_SLOT_BYTES 64  /* a cross-file window's open collective (analysis/straggler.c's slot) */

/* A worker's share of a round: the files in L->step[] not taken yet. */
struct wctx { struct loader *L; struct ncs_trace_bufs *b; struct ncs_aligner_spare spare; };

static void *worker(void *arg) {
  struct wctx *w = arg;
  struct loader *L = w->L;
  for (;;) {
    pthread_mutex_lock(&L->mu);
    int i = L->next < L->nstep ? L->step[L->next++] : -1;
    pthread_mutex_unlock(&L->mu);
    if (i < 0) return NULL;
    if (L->f[i].waiting) { /* visitors attached one file at a time, as when all are opened first */
      pthread_mutex_lock(&L->mu);
      file_open(L, i, &w->spare); /* whole files: this thread reads it to its end */
      pthread_mutex_unlock(&L->mu);
    }
    if (!L->f[i].live) { file_close(L, i); continue; }
    file_step(L, i, w->b);
    while (!L->lockstep && L->f[i].live) file_step(L, i, w->b); /* whole file */
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Chooses the files that advance in the next round (L->step), as described at ncs_job_load.
 * Returns how many; 0 when every file has been read. */
static int plan_round(struct loader *L, int64_t *spans) {
  int64_t tmin = 0;
  int known = 0, nspan = 0;
  for (int i = 0; i < L->n; i++) {
    const struct fctx *f = &L->f[i];
    if (!f->live || !f->have_t) continue;
    if (!known || f->t_rel < tmin) tmin = f->t_rel;
    known = 1;
    spans[nspan++] = f->span;
  }
  int64_t horizon = 0;
  if (known) {
    if (nspan > 1) qsort(spans, (size_t)nspan, sizeof *spans, cmp_i64);
    horizon = tmin + spans[nspan / 2];
  }
  L->nstep = 0;
  L->next = 0;
  for (int i = 0; i < L->n; i++) {
    const struct fctx *f = &L->f[i];
    if (f->waiting || (f->live && (!L->lockstep || !f->have_t || f->t_rel <= horizon))) L->step[L->nstep++] = i;
  }
  return L->nstep;
}

/* What the file header and the first chunk header tell before decoding: realtime at file
 * creation (0 when unreadable), file size, and the first chunk's records and payload bytes
 * (0 when there is none). */
struct probe { uint64_t rt, size; uint32_t nrec, psz; };
static struct probe probe_file(const char *path) {
  struct probe p = {0, 0, 0, 0};
  FILE *fp = ncs_fopen_regular(path, NULL, 0);
  uint8_t h[NCS_FILE_HEADER_SIZE], ch[NCS_CHUNK_HEADER_SIZE];
  if (!fp) return p;
  ncs_readcount_peek(path);
  if (fread(h, 1, sizeof h, fp) == sizeof h && !memcmp(h, NCS_FILE_MAGIC, 8)) {
    p.rt = ncs_get_u64(h + NCS_FH_REALTIME);
    uint32_t hs = ncs_get_u32(h + NCS_FH_SIZE);
    /* the larger of the first two chunks (the first may be cut short by the first flush) */
    off_t at = (off_t)hs;
    if ((ncs_get_u32(h + NCS_FH_FLAGS) & NCS_FILE_F_BOUNDED) && ncs_get_u64(h + NCS_FH_FIRST_KEPT) > hs)
      at = (off_t)ncs_get_u64(h + NCS_FH_FIRST_KEPT); /* a bounded file: its first kept chunk */
    for (int k = 0; k < 2 && hs >= NCS_FILE_HEADER_SIZE && hs <= (1u << 20) && fseeko(fp, at, SEEK_SET) == 0 &&
                    fread(ch, 1, sizeof ch, fp) == sizeof ch && ncs_get_u32(ch + NCS_CH_MAGIC) == NCS_CHUNK_MAGIC; k++) {
      uint32_t n = ncs_get_u32(ch + NCS_CH_RECORDS), ps = ncs_get_u32(ch + NCS_CH_PAYLOAD);
      if (n >= p.nrec && ps) { p.nrec = n; p.psz = ps; }
      at += NCS_CHUNK_HEADER_SIZE + (off_t)ps;
    }
  }
  struct stat sb;
  if (fstat(fileno(fp), &sb) == 0) p.size = (uint64_t)sb.st_size;
  fclose(fp);
  return p;
}

int64_t ncs_file_created_ns(const char *path) { return (int64_t)probe_file(path).rt; }

int ncs_job_load(int nfiles, char **files, const struct ncs_load_opts *o, struct ncs_jobread **out) {
  static const struct ncs_load_opts none;
  if (!o) o = &none;
  *out = NULL;
  struct ncs_jobread *J = calloc(1, sizeof *J);
  if (!J) return 2;
  J->n = nfiles;
  J->r = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *J->r);
  J->jobs = ncs_jobset_new(nfiles);
  if (!J->r || !J->jobs) { ncs_jobread_free(J); return 2; }
  int aligning = o->aligned || o->aligned_kernel;
  uint64_t total = 0, most_recs = 0, held = 0;
  for (int i = 0; i < nfiles; i++) {
    struct probe pr = {0, 0, 0, 0};
    struct stat sb;
    if (aligning) pr = probe_file(files[i]); /* the job clock's origin, lockstep or not */
    else if (o->progress_label && stat(files[i], &sb) == 0) pr.size = (uint64_t)sb.st_size;
    uint64_t sz = pr.size, rt = pr.rt;
    total += sz;
    /* the two ways of reading (see ncs_job_load in jobload.h): what each would keep */
    uint64_t recs = pr.psz ? (uint64_t)((double)sz * pr.nrec / pr.psz) : 0; /* records in the file */
    if (recs > most_recs) most_recs = recs;
    held += 2 * (uint64_t)(pr.nrec ? pr.nrec : 1) * HELD_CALL_BYTES + FILE_STATE_BYTES;
    if (rt && (!J->origin || (int64_t)rt < J->origin)) J->origin = (int64_t)rt;
    J->r[i].path = files[i];
    J->r[i].created_ns = (int64_t)rt;
  }
  struct loader L = {.n = nfiles, .files = files, .o = o, .job = J};
  /* Lockstep keeps every file's aligner hold (two chunks of calls) at once; whole files let a
   * cross-file window (analysis/straggler.h) grow as long as the longest trace (64 B per
   * collective, records of a file being at most one collective each; past 2^20 collectives the
   * window gives up the oldest, so such traces are always read in lockstep). Pick whichever
   * keeps less. */
  const struct ncs_settings *set = ncs_settings();
  if (o->in_order || !aligning) L.lockstep = 0; /* plug-ins keep their state per file being read */
  else if (set->lockstep >= 0) L.lockstep = set->lockstep;
  else L.lockstep = most_recs > (1u << 20) || held < most_recs * WINDOW_SLOT_BYTES;
  J->lockstep = L.lockstep;
  pthread_mutex_init(&L.mu, NULL);
  int nt = o->threads > 0 ? o->threads : set->threads > 0 ? set->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > nfiles) nt = nfiles;
  if (nt > 256) nt = 256;
  if (nt < 1 || o->in_order) nt = 1;
  if (o->progress_label) ncs_progress_begin(o->progress_label, total, nfiles);
  L.f = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *L.f);
  L.step = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *L.step);
  int64_t *spans = calloc((size_t)(nfiles > 0 ? nfiles : 1), sizeof *spans);
  struct wctx *w = calloc((size_t)nt, sizeof *w);
  int ok = L.f && L.step && spans && w;
  for (int k = 0; ok && k < nt; k++) { w[k].L = &L; ok = (w[k].b = ncs_trace_bufs_new()) != NULL; }
  if (!ok) {
    for (int k = 0; w && k < nt; k++) ncs_trace_bufs_free(w[k].b);
    free(L.f); free(L.step); free(spans); free(w);
    if (o->progress_label) ncs_progress_end();
    pthread_mutex_destroy(&L.mu);
    ncs_jobread_free(J);
    return 2;
  }
  for (int i = 0; i < nfiles && o->in_order; i++) { /* one file after another, in order */
    file_open(&L, i, &w[0].spare);
    if (!L.f[i].live) file_close(&L, i);
    while (L.f[i].live) file_step(&L, i, w[0].b);
  }
  /* Lockstep: every file opened (and parked) first. Whole files: each is opened by the worker
   * that reads it, so only the files being read hold their reading state and their plug-ins'
   * (at 128 ranks they were 1.4 MiB of html's peak, all held from the start). */
  for (int i = 0; i < nfiles && !o->in_order; i++) {
    if (!L.lockstep) { L.f[i].waiting = 1; continue; }
    file_open(&L, i, NULL); /* lockstep: any thread may end it */
    if (!L.f[i].live) file_close(&L, i);
  }
  while (plan_round(&L, spans)) {
    pthread_t th[256];
    int started = 0;
    int want = nt < L.nstep ? nt : L.nstep;
    for (int k = 1; k < want; k++)
      if (pthread_create(&th[started], NULL, worker, &w[k]) == 0) started++;
    worker(&w[0]);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
  }
  for (int k = 0; k < nt; k++) { ncs_trace_bufs_free(w[k].b); ncs_aligner_spare_free(&w[k].spare); }
  free(w);
  free(spans);
  free(L.step);
  free(L.f);
  if (o->progress_label) ncs_progress_end();
  pthread_mutex_destroy(&L.mu);
  ncs_jobset_finish(J->jobs);
  int readable = 0;
  for (int i = 0; i < nfiles; i++) readable += J->r[i].read_rc != 2;
  *out = J;
  return readable ? 0 : 2;
}

void ncs_jobread_free(struct ncs_jobread *J) {
  if (!J) return;
  free(J->r);
  ncs_jobset_free(J->jobs);
  free(J);
}
