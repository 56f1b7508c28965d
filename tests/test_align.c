/* test_align.c — clock alignment (decoder/model/align.c, docs/CLOCKS.md): the clock map interpolates
 * exactly on a drifting clock; the aligner attaches GPU times written after their call and
 * releases everything; and on synthetic traces from hosts with different boot times, drift and
 * no realtime error, every rank's recovered entry time matches the generator's true time
 * within a microsecond, while with a realtime error between hosts the error stays within it;
 * kernels (KERNEL records) are held until the next pair and mapped by the same interpolation;
 * stretches release what the same records fed one at a time release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include "model/align.h"
#include "check.h"
#include "analysis/jobsum.h"
#include "io/synth.h"
#include "ncclscope/ops.h"

static void test_clockmap(void) {
  struct ncs_clockmap m;
  ncs_clockmap_init(&m);
  CHECK(ncs_clockmap_map(&m, 1234) == 1234, "align: empty map is the identity");
  /* realtime = 1e18 + mono * (1 + 100e-6): a clock 100 ppm slow against realtime */
  for (int i = 0; i < 6; i++) {
    uint64_t mono = 1000000000ull * (uint64_t)(i + 1);
    struct ncs_clock c = {1000000000000000000ull + mono + mono / 10000, mono, 30};
    ncs_clockmap_add(&m, &c);
  }
  int ok = 1;
  for (uint64_t mono = 2500000000ull; mono < 6000000000ull; mono += 123456789ull) {
    int64_t want = (int64_t)(1000000000000000000ull + mono + mono / 10000);
    int64_t got = ncs_clockmap_map(&m, mono);
    if (llabs(got - want) > 1) { ok = 0; printf("  mono %llu: got %lld want %lld\n", (unsigned long long)mono, (long long)got, (long long)want); }
  }
  CHECK(ok, "align: interpolation between pairs is exact on a linearly drifting clock");
  CHECK(llabs(ncs_clockmap_map(&m, 7000000000ull) - (int64_t)(1000000000000000000ull + 7000000000ull + 700000ull)) <= 1,
        "align: extrapolation past the last pair follows the last slope");
  double ppm = ncs_clockmap_drift_ppm(&m);
  CHECK(ppm > 99.9 && ppm < 100.1, "align: drift measured as 100 ppm (got %.3f)", ppm);
  CHECK(m.unc_max == 30, "align: uncertainty kept");
}

struct rel { int n, gpu; int64_t last_enter; int ordered; };
static void on_rel(void *ctx, const struct ncs_aligned *a) {
  struct rel *r = ctx;
  if (r->n && a->enter < r->last_enter) r->ordered = 0;
  r->last_enter = a->enter;
  r->n++;
  r->gpu += a->has_gpu;
}

static void test_aligner(void) {
  struct rel r = {0, 0, 0, 1};
  struct ncs_aligner a;
  ncs_aligner_init(&a, 0, on_rel, &r);
  struct ncs_clock c0 = {5000, 1000, 10};
  ncs_aligner_clock(&a, &c0);
  for (int i = 1; i <= 3000; i++) {
    struct ncs_call call = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i, .seq = (uint64_t)i,
                            .t_enter = 1000 + (uint64_t)i * 100, .t_exit = 1000 + (uint64_t)i * 100 + 10};
    ncs_aligner_call(&a, &call);
    if (i > 1) { /* GPU time of the previous call arrives one call late */
      struct ncs_gpu_time g = {.kind = 0, .thread = 1, .ref = (uint64_t)i - 1, .gpu_start = call.t_enter - 90,
                               .gpu_end = call.t_enter - 20};
      ncs_aligner_gpu(&a, &g);
    }
    if (i % 1000 == 0) { struct ncs_clock c = {5000 + 1000 + (uint64_t)i * 100 + 50, 1000 + (uint64_t)i * 100 + 50, 10}; ncs_aligner_clock(&a, &c); }
  }
  CHECK(a.n < 3000, "align: calls bracketed by clock pairs are released before the end (held %zu)", a.n);
  ncs_aligner_flush(&a);
  CHECK(r.n == 3000, "align: every call released once (%d)", r.n);
  CHECK(r.gpu == 2999, "align: GPU times written after their call are attached (%d of 2999)", r.gpu);
  CHECK(r.ordered, "align: calls released in order");
  CHECK(a.gpu_unmatched == 0, "align: no GPU time left unmatched");
  ncs_aligner_free(&a);
}

/* GPU times matched to their calls: the aligner against the rule of align.h done by hand (the
 * newest of the last 4096 held calls of the thread with that tcall, looking back no further
 * than a call of the thread with a lower tcall; a group's time to every call of the group), on
 * random streams: several threads (two of them 64 apart), GPU times up to 300 calls late or
 * for no call, gaps in tcall, and in some streams tcalls that repeat or go back. */
struct gref { uint32_t thread; uint64_t tcall, group; int has; uint64_t gs, ge; };
struct grel { struct gref *got; int n; };
static void on_grel(void *ctx, const struct ncs_aligned *a) {
  struct grel *r = ctx;
  struct gref *x = &r->got[r->n++];
  x->thread = a->call->thread; x->tcall = a->call->tcall; x->group = a->call->group;
  x->has = a->has_gpu; x->gs = (uint64_t)a->gpu_start; x->ge = (uint64_t)a->gpu_end;
}
static uint64_t lcg(uint64_t *s) { *s = *s * 6364136223846793005ull + 1442695040888963407ull; return *s >> 33; }
/* Records fed one at a time, or (stretch mode) gathered into stretches of 1..200 records handed
 * to ncs_aligner_stretch, as the loader does. */
static struct { int on, nc, ng, len; struct ncs_call c[200]; struct ncs_gpu_time g[200]; uint8_t o[200]; } st;
static void st_flush(struct ncs_aligner *a) {
  if (st.nc + st.ng) {
    struct ncs_stretch x = {st.c, st.g, (size_t)st.nc, (size_t)st.ng, st.o, NULL, 0};
    ncs_aligner_stretch(a, &x);
  }
  st.nc = st.ng = 0;
  st.len = st.len * 7 % 200 + 1;
}
static void feed_call(struct ncs_aligner *a, const struct ncs_call *c) {
  if (!st.on) { ncs_aligner_call(a, c); return; }
  st.o[st.nc + st.ng] = 0;
  st.c[st.nc++] = *c;
  if (st.nc + st.ng >= st.len) st_flush(a);
}
static void feed_gpu(struct ncs_aligner *a, const struct ncs_gpu_time *g) {
  if (!st.on) { ncs_aligner_gpu(a, g); return; }
  st.o[st.nc + st.ng] = 1;
  st.g[st.ng++] = *g;
  if (st.nc + st.ng >= st.len) st_flush(a);
}
static void test_gpu_match(void) {
  enum { NCALLS = 6000 };
  int bad = 0, streams = 0;
  uint64_t unmatched_total = 0, late_total = 0;
  for (int sc = 0; sc < 48; sc++) { /* 24 streams fed a record at a time, then the same 24 in stretches */
    st.on = sc >= 24;
    st.len = 1;
    uint64_t seed = 0x5eed + (uint64_t)(sc % 24);
    int disorder = sc % 4 == 3;
    static const uint32_t tids[] = {1, 2, 65, 7};
    int nthreads = 1 + sc % 4;
    struct gref *want = calloc(NCALLS, sizeof *want);
    struct grel r = {calloc(NCALLS, sizeof *r.got), 0};
    uint64_t next_tcall[4] = {1, 1, 1, 1}, unmatched = 0;
    struct ncs_aligner a;
    ncs_aligner_init(&a, 0, on_grel, &r);
    /* GPU times waiting to be written: (index of the call, due at call number) */
    int *wq = calloc(NCALLS * 2, sizeof *wq), nw = 0;
    for (int i = 0; i < NCALLS; i++) {
      int th = (int)(lcg(&seed) % (uint64_t)nthreads);
      uint64_t tc = next_tcall[th];
      next_tcall[th] += 1 + (lcg(&seed) % 8 == 0 ? lcg(&seed) % 5 : 0);
      if (disorder && lcg(&seed) % 50 == 0) tc = tc > 3 ? tc - 3 : tc; /* repeats or goes back */
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = tids[th], .tcall = tc, .seq = (uint64_t)i + 1,
                           .group = lcg(&seed) % 16 == 0 ? 1 + lcg(&seed) % 4 : 0,
                           .t_enter = 1000 + (uint64_t)i * 100, .t_exit = 1050 + (uint64_t)i * 100};
      feed_call(&a, &c);
      want[i] = (struct gref){c.thread, c.tcall, c.group, 0, 0, 0};
      wq[nw++] = i * 4096 + (int)(lcg(&seed) % 300); /* call i, written that many calls later */
      if (lcg(&seed) % 20 == 0) wq[nw++] = -1; /* a GPU time of no held call */
      /* write the GPU times now due (in the order they were queued) */
      int keep = 0;
      for (int q = 0; q < nw; q++) {
        int ci = wq[q] < 0 ? -1 : wq[q] / 4096, lag = wq[q] < 0 ? 0 : wq[q] % 4096;
        if (ci >= 0 && ci + lag > i) { wq[keep++] = wq[q]; continue; }
        int grp = ci >= 0 && want[ci].group && lcg(&seed) % 2;
        struct ncs_gpu_time g = {.kind = grp ? NCS_GPU_KIND_GROUP : NCS_GPU_KIND_CALL,
                                 .thread = ci >= 0 ? want[ci].thread : tids[0],
                                 .ref = ci < 0 ? 999999999ull : grp ? want[ci].group : want[ci].tcall,
                                 .gpu_start = 7000000 + (uint64_t)i * 10 + (uint64_t)q, .gpu_end = 8000000 + (uint64_t)i * 10 + (uint64_t)q};
        feed_gpu(&a, &g);
        late_total += ci >= 0 && lag > 0;
        /* the rule, by hand over the calls held (all of them: no clock pair releases any) */
        int found = 0;
        for (int k = 0; k <= i && k < 4096; k++) {
          struct gref *p = &want[i - k];
          if (p->thread != g.thread) continue;
          int match = g.kind == NCS_GPU_KIND_CALL ? p->tcall == g.ref : p->group == g.ref;
          if (match) {
            if (!p->has) { p->has = 1; p->gs = g.gpu_start; p->ge = g.gpu_end; }
            found = 1;
            if (g.kind == NCS_GPU_KIND_CALL) break;
          } else if (g.kind == NCS_GPU_KIND_CALL && p->tcall < g.ref) {
            break;
          }
        }
        unmatched += !found;
      }
      nw = keep;
    }
    st_flush(&a);
    ncs_aligner_flush(&a);
    int ok = r.n == NCALLS && a.gpu_unmatched == unmatched;
    for (int i = 0; ok && i < NCALLS; i++) {
      const struct gref *x = &r.got[i], *w = &want[i];
      ok = x->thread == w->thread && x->tcall == w->tcall && x->has == w->has && (!w->has || (x->gs == w->gs && x->ge == w->ge));
      if (!ok) printf("  stream %d call %d (thread %u tcall %llu): has %d/%d\n", sc, i, w->thread, (unsigned long long)w->tcall, x->has, w->has);
    }
    bad += !ok;
    streams++;
    unmatched_total += unmatched;
    ncs_aligner_free(&a);
    free(want); free(r.got); free(wq);
  }
  CHECK(bad == 0 && late_total > 10000 && unmatched_total > 0,
        "align: GPU times find their call by the rule on %d random streams, half of them fed as stretches "
        "(%d differ; %llu late, %llu unmatched)", streams, bad,
        (unsigned long long)late_total, (unsigned long long)unmatched_total);
}

struct krel { int n; int64_t s[8], e[8]; };
static void on_krel(void *ctx, const struct ncs_aligned_kernel *k) {
  struct krel *r = ctx;
  if (r->n < 8) { r->s[r->n] = k->start; r->e[r->n] = k->end; }
  r->n++;
}

/* Kernels: held until the pair after them, then mapped by interpolation between the pairs that
 * bracket them, relative to the origin; the rest released at the end. */
static void test_aligner_kernels(void) {
  struct krel r = {0};
  struct ncs_aligner a;
  ncs_aligner_init(&a, 1000, NULL, &r);
  a.release_kernel = on_krel;
  struct ncs_clock c0 = {6000, 1000, 10}, c1 = {8002, 3000, 10}; /* offset 5000, then 5002: 1000 ppm */
  ncs_aligner_clock(&a, &c0);
  struct ncs_kernel k = {.kclass = NCS_KCLASS_NCCL, .stream = 7, .start = 2000, .duration = 500};
  ncs_aligner_kernel(&a, &k);
  CHECK(r.n == 0, "align: a kernel is held until a later clock pair (released %d)", r.n);
  ncs_aligner_clock(&a, &c1);
  CHECK(r.n == 1 && r.s[0] == 2000 + 5001 - 1000 && r.e[0] == 2500 + 5002 - 1000,
        "align: a kernel's start and end are interpolated between the pairs around it, on the job clock (%lld..%lld)",
        (long long)r.s[0], (long long)r.e[0]);
  k.start = 3500; k.duration = 100;
  ncs_aligner_kernel(&a, &k);
  ncs_aligner_flush(&a);
  CHECK(r.n == 2 && r.s[1] == 3500 + 5003 - 1000, "align: kernels after the last pair are released at the end, "
        "extrapolated along the last slope (%lld)", (long long)r.s[1]);
  for (int i = 0; i < 70000; i++) ncs_aligner_kernel(&a, &k);
  CHECK(a.nk <= 65536 && a.kernels_early > 0, "align: no pair for a long time: at most 65536 kernels held (%zu)", a.nk);
  ncs_aligner_flush(&a);
  CHECK(r.n == 70002, "align: ... and every kernel released once (%d)", r.n);
  ncs_aligner_free(&a);
}

static int64_t test_origin; /* realtime of job time 0, as the loader computes it */
/* A trace without CLOCK records must not make the aligner hold the whole file. */
static void test_no_clock(void) {
  struct rel r = {0, 0, 0, 1};
  struct ncs_aligner a;
  ncs_aligner_init(&a, 0, on_rel, &r);
  size_t most = 0;
  for (int i = 1; i <= 200000; i++) {
    struct ncs_call call = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i, .seq = (uint64_t)i,
                            .t_enter = (uint64_t)i * 1000, .t_exit = (uint64_t)i * 1000 + 10};
    ncs_aligner_call(&a, &call);
    if (a.n > most) most = a.n;
  }
  ncs_aligner_flush(&a);
  CHECK(most <= 65536, "align: no CLOCK records: at most 65536 calls held (%zu)", most);
  CHECK(r.n == 200000 && r.ordered, "align: ... and every call released once, in order (%d)", r.n);
  ncs_aligner_free(&a);
}

struct truth { const struct ncs_synth_cfg *c; int64_t origin_set; double max_err_ns; long n; int rank_of_file[64]; };
static void on_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  struct truth *t = ctx;
  if (ncs_op_kind(e->c->op) != NCS_KIND_COLL) return;
  (void)file;
  /* job time + origin is realtime; the generator's realtime equals true time plus the host's
   * NTP error, so the difference to the true entry time is the alignment error */
  int64_t got = e->a->enter + test_origin;
  int64_t want = (int64_t)ncs_synth_true_enter(t->c, e->rank, (long)e->c->seq - 1);
  double err = (double)llabs(got - want);
  if (err > t->max_err_ns) t->max_err_ns = err;
  t->n++;
}

static double run_synth(double ntp_us, long *ncalls) {
  char dir[] = "/tmp/ncs-test-align.XXXXXX";
  if (!mkdtemp(dir)) return -1;
  struct ncs_synth_cfg c;
  ncs_synth_defaults(&c);
  c.ranks = 6; c.hosts = 3; c.calls = 600; c.chunk_calls = 50; c.drift_ppm = 80; c.ntp_us = ntp_us; c.seed = 7;
  char err[512];
  if (ncs_synth_write(&c, dir, err, sizeof err)) { printf("  %s\n", err); return -1; }
  char *p[1] = {dir};
  char **files;
  int n = ncs_paths_expand(1, p, &files);
  struct truth t = {.c = &c};
  struct ncs_load_opts o = {.threads = 2};
  struct ncs_jobsum_events ev = {.ctx = &t, .on_call = on_call};
  /* on_call needs the origin before calls arrive: the loader sets it from the file headers,
   * which it reads first; compute it the same way here */
  struct ncs_jobdata *J = NULL;
  {
    /* first pass only for the origin: cheap (headers) */
    test_origin = INT64_MAX;
    for (int i = 0; i < n; i++) {
      FILE *f = fopen(files[i], "rb");
      unsigned char h[64];
      if (f && fread(h, 1, 64, f) == 64) {
        int64_t rt = 0;
        for (int k = 7; k >= 0; k--) rt = (rt << 8) | h[16 + k];
        if (rt < test_origin) test_origin = rt;
      }
      if (f) fclose(f);
    }
  }
  int rc = ncs_jobsum_load(n, files, &o, &ev, &J);
  CHECK(rc == 0 && J && J->origin == test_origin, "align: loader's origin is the earliest file creation");
  *ncalls = t.n;
  ncs_job_free(J);
  for (int i = 0; i < n; i++) unlink(files[i]);
  ncs_paths_free(files, n);
  rmdir(dir);
  return t.max_err_ns;
}

/* The clock check (straggler.h) recovers each host's residual realtime error from the GPU ends
 * of sampled collectives: compare with the generator's per-host errors, relative to their mean
 * over ranks. */
static void test_clock_check(void) {
  char dir[] = "/tmp/ncs-test-align.XXXXXX";
  if (!mkdtemp(dir)) return;
  struct ncs_synth_cfg c;
  ncs_synth_defaults(&c);
  c.ranks = 16; c.hosts = 4; c.calls = 2000; c.ntp_us = 50; c.drift_ppm = 30; c.seed = 11;
  char err[512];
  if (ncs_synth_write(&c, dir, err, sizeof err)) { printf("  %s\n", err); return; }
  char *p[1] = {dir};
  char **files;
  int n = ncs_paths_expand(1, p, &files);
  struct ncs_jobdata *J = NULL;
  struct ncs_load_opts o = {.threads = 2};
  ncs_jobsum_load(n, files, &o, NULL, &J);
  struct ncs_strag_host_offset off[8];
  int nh = J ? ncs_strag_clock_check(J->strag, off, 8) : 0;
  CHECK(nh == 4, "align: clock check measured 4 hosts (%d)", nh);
  double mean = 0;
  for (int h = 0; h < 4; h++) mean += (double)ncs_synth_host_ntp_ns(&c, h) / 4; /* 4 ranks per host */
  double worst = 0, spread = 0;
  for (int i = 0; i < nh; i++) {
    int h = atoi(off[i].host + 4); /* "node00H" */
    double want = ((double)ncs_synth_host_ntp_ns(&c, h) - mean) / 1e3;
    if (fabs(off[i].offset_us - want) > worst) worst = fabs(off[i].offset_us - want);
    if (fabs(want) > spread) spread = fabs(want);
  }
  CHECK(nh == 4 && worst < 1.5 && spread > 5, "align: clock check recovers each host's realtime error within 1.5 us (worst %.2f us, errors up to %.1f us)", worst, spread);
  ncs_job_free(J);
  for (int i = 0; i < n; i++) unlink(files[i]);
  ncs_paths_free(files, n);
  rmdir(dir);
}

/* Calls released in runs (release_run, the loader's hook): every call once, in order, in runs of
 * 1..NCS_ALIGN_RUN with full runs when many are released at once, each call's content readable
 * in its run, and its times those of interpolation between the pairs around it, computed here
 * (realtime = 10^15 + mono + mono / 5000: a clock 200 ppm slow), within a nanosecond. GPU times
 * come one call late, a few calls have none; some pairs release a handful of calls, some
 * thousands, and past HOLD_MAX the oldest are released one at a time (runs of one). */
struct rrel { int n, runs, full, bad, order, maxrun; uint64_t next_tcall; int64_t worst; };
static int64_t rt_of(uint64_t mono) { return 1000000000000000ll + (int64_t)mono + (int64_t)(mono / 5000); }
static void on_run(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct rrel *r = ctx;
  r->runs++;
  if (n == NCS_ALIGN_RUN) r->full++;
  if (n < 1 || n > NCS_ALIGN_RUN) r->bad++;
  if ((int)n > r->maxrun) r->maxrun = (int)n;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = a[i].call;
    if (c->tcall != r->next_tcall) r->order++;
    r->next_tcall = c->tcall + 1;
    r->n++;
    int64_t origin = rt_of(0);
    int64_t d[4] = {a[i].enter - (rt_of(c->t_enter) - origin), a[i].exit - (rt_of(c->t_exit) - origin), 0, 0};
    int want_gpu = c->tcall % 97 != 0;
    if (a[i].has_gpu != want_gpu) r->bad++;
    if (a[i].has_gpu) {
      d[2] = a[i].gpu_start - (rt_of(c->t_enter + 30) - origin);
      d[3] = a[i].gpu_end - (rt_of(c->t_enter + 70) - origin);
    }
    for (int k = 0; k < 4; k++) if (llabs(d[k]) > llabs(r->worst)) r->worst = d[k];
  }
}
static void test_release_runs(void) {
  struct rrel r = {.next_tcall = 1};
  struct ncs_aligner a;
  ncs_aligner_init(&a, rt_of(0), NULL, &r);
  a.release_run = on_run;
  uint64_t mono = 5000; /* calls 5 us apart: every pair's offset is exact (mono / 5000) */
  int ncalls = 0;
  for (int i = 1; i <= 150000; i++) {
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 3, .tcall = (uint64_t)i, .seq = (uint64_t)i,
                         .t_enter = mono, .t_exit = mono + 50};
    ncs_aligner_call(&a, &c);
    ncalls++;
    if (i > 1 && (i - 1) % 97 != 0) {
      struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 3, .ref = (uint64_t)i - 1,
                               .gpu_start = mono - 5000 + 30, .gpu_end = mono - 5000 + 70};
      ncs_aligner_gpu(&a, &g);
    }
    mono += 5000;
    /* pairs every 1 to 3 calls at first, then every 5000, then none for 80000 calls (HOLD_MAX) */
    int every = i < 3000 ? 3 : i < 60000 ? 5000 : 0;
    if (every && (i % every == 0 || (i < 3000 && i % 7 == 0))) {
      struct ncs_clock ck = {(uint64_t)rt_of(mono), mono, 5};
      ncs_aligner_clock(&a, &ck);
    }
  }
  { struct ncs_clock ck = {(uint64_t)rt_of(mono), mono, 5}; ncs_aligner_clock(&a, &ck); }
  /* the last call's GPU time */
  struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 3, .ref = 150000, .gpu_start = mono - 5000 + 30,
                           .gpu_end = mono - 5000 + 70};
  if (150000 % 97) ncs_aligner_gpu(&a, &g);
  ncs_aligner_flush(&a);
  CHECK(r.n == ncalls && r.order == 0, "align: runs: every call released once, in order (%d of %d, %d out of order)",
        r.n, ncalls, r.order);
  CHECK(r.bad == 0 && r.full > 0 && r.maxrun == NCS_ALIGN_RUN, "align: runs of 1..%d calls, full runs when many go at once "
        "(%d runs, %d full, longest %d, %d bad)", NCS_ALIGN_RUN, r.runs, r.full, r.maxrun, r.bad);
  CHECK(a.early > 0 && llabs(r.worst) <= 1, "align: runs: every time is the interpolation between its pairs "
        "(worst %lld ns; %llu released early past the hold limit)", (long long)r.worst, (unsigned long long)a.early);
  ncs_aligner_free(&a);
}

/* Settled calls (align.h): a call with its GPU time, in no group, whose times lie between the
 * latest two pairs goes at that pair, a chunk before the hold would let it go; the others keep
 * the hold. Pairs 1 ms apart with an offset of 300 k^2 ns (the slope changes 600 ppm at every
 * pair); per chunk 50 calls, GPU times right after their call, but the chunk's last call is one
 * of three: its GPU work ends after the next pair; a group's, a second stream's GPU time written
 * after the next pair; its GPU time written after the next pair. Truth: each time's
 * interpolation between the pairs around it, computed here in integers; every GPU time
 * attached, none unmatched; after each pair only that last call is held. */
#define SK 40
#define SN 50
static int64_t s_off(int k) { return 1000000000000000ll + 300ll * k * k; }
static uint64_t s_mono(int k) { return 1000000000ull + (uint64_t)k * 1000000ull; }
static int64_t s_truth(uint64_t mono) { /* realtime - origin, origin = realtime of pair 0 */
  int k = 0;
  while (k < SK - 1 && mono > s_mono(k + 1)) k++; /* past the last pair: its segment extended */
  int64_t num = (int64_t)(mono - s_mono(k)) * (s_off(k + 1) - s_off(k)), den = (int64_t)(s_mono(k + 1) - s_mono(k));
  int64_t d = (num + den / 2) / den;
  return (int64_t)mono + s_off(k) + d - (s_off(0) + (int64_t)s_mono(0));
}
static uint64_t s_gpu_end(uint64_t tcall, uint64_t t) { /* a chunk's last call, one chunk in 3: ends after the next pair */
  return t + ((tcall - 1) % SN == SN - 1 && (tcall - 1) / SN % 3 == 0 ? 400000 : 9000);
}
struct srel { int n, order, has_bad; uint64_t next; int64_t worst; };
static void on_srun(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct srel *r = ctx;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = a[i].call;
    r->order += c->tcall != r->next;
    r->next = c->tcall + 1;
    r->n++;
    if (!a[i].has_gpu) { r->has_bad++; continue; }
    int64_t d[4] = {a[i].enter - s_truth(c->t_enter), a[i].exit - s_truth(c->t_exit),
                    a[i].gpu_start - s_truth(c->t_enter + 3000), a[i].gpu_end - s_truth(s_gpu_end(c->tcall, c->t_enter))};
    for (int k = 0; k < 4; k++) if (llabs(d[k]) > llabs(r->worst)) r->worst = d[k];
  }
}
static void test_settled(void) {
  struct srel r = {.next = 1};
  struct ncs_aligner a;
  ncs_aligner_init(&a, s_off(0) + (int64_t)s_mono(0), NULL, &r);
  a.release_run = on_srun;
  int held_bad = 0;
  size_t most = 0;
  struct ncs_gpu_time late;
  int have_late = 0;
  for (int k = 0; k <= SK; k++) {
    struct ncs_clock ck = {(uint64_t)(s_off(k) + (int64_t)s_mono(k)), s_mono(k), 5};
    ncs_aligner_clock(&a, &ck);
    if (k >= 1 && a.n != 1) held_bad++;
    if (a.n > most) most = a.n;
    if (have_late) ncs_aligner_gpu(&a, &late); /* the previous chunk's late GPU time */
    have_late = 0;
    if (k == SK) break;
    for (int j = 0; j < SN; j++) {
      uint64_t tc = (uint64_t)k * SN + (uint64_t)j + 1, t = s_mono(k) + 1000 + (uint64_t)j * 15000;
      int last = j == SN - 1, grp = last && k % 3 == 1;
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = tc, .seq = tc, .t_enter = t, .t_exit = t + 2000,
                           .group = grp ? tc : 0, .depth = (uint32_t)grp};
      ncs_aligner_call(&a, &c);
      struct ncs_gpu_time g = {.kind = grp ? NCS_GPU_KIND_GROUP : NCS_GPU_KIND_CALL, .thread = 1, .ref = tc,
                               .gpu_start = t + 3000, .gpu_end = s_gpu_end(tc, t)};
      if (last && k % 3 == 2) { late = g; have_late = 1; continue; } /* written after the next pair */
      ncs_aligner_gpu(&a, &g);
      if (grp) { /* the group's second stream: after the next pair */
        late = g;
        late.gpu_start += 100;
        late.gpu_end += 100;
        have_late = 1;
      }
    }
  }
  ncs_aligner_flush(&a);
  CHECK(r.n == SK * SN && r.order == 0 && r.has_bad == 0 && a.gpu_unmatched == 0,
        "align: settled calls: every call once, in order, each with its GPU time, late ones too (%d of %d, %d out of order, "
        "%d without, %llu unmatched)", r.n, SK * SN, r.order, r.has_bad, (unsigned long long)a.gpu_unmatched);
  CHECK(llabs(r.worst) <= 1, "align: settled calls: every time is the interpolation between its pairs (worst %lld ns)",
        (long long)r.worst);
  CHECK(held_bad == 0 && most == 1, "align: settled calls go at the pair after them: 1 of a chunk's %d calls held past it "
        "(most %zu, %d pairs otherwise)", SN, most, held_bad);
  ncs_aligner_free(&a);
}

/* Settled calls' times are mapped with the latest segment's constants folded once a pair
 * (align.c lastseg): bit for bit what ncs_clockmap_map gives. Random pairs ~1 ms apart whose offset
 * moves by -3000..3000 ns (slopes of either sign, and 0 one pair in 8), calls whose four times
 * lie anywhere between their chunk's pairs (both ends included), GPU times right after their
 * call: each released time against ncs_clockmap_map of a map fed every pair, less the origin;
 * every call goes at the pair after it (settled). */
enum { XK = 200, XN = 40 };
struct xrel { int n, bad, order; uint64_t next; int64_t origin; struct ncs_clockmap truth; uint64_t gs[XK * XN + 1], ge[XK * XN + 1]; };
static void on_xrun(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct xrel *r = ctx;
  for (size_t i = 0; i < n; i++) {
    const struct ncs_call *c = a[i].call;
    r->order += c->tcall != r->next;
    r->next = c->tcall + 1;
    r->n++;
    int64_t w[4] = {ncs_clockmap_map(&r->truth, c->t_enter) - r->origin, ncs_clockmap_map(&r->truth, c->t_exit) - r->origin,
                    ncs_clockmap_map(&r->truth, r->gs[c->tcall]) - r->origin, ncs_clockmap_map(&r->truth, r->ge[c->tcall]) - r->origin};
    int bad = !a[i].has_gpu || a[i].enter != w[0] || a[i].exit != w[1] || a[i].gpu_start != w[2] || a[i].gpu_end != w[3];
    if (bad && r->bad++ < 3)
      printf("  call %llu: %lld %lld %lld %lld, want %lld %lld %lld %lld\n", (unsigned long long)c->tcall, (long long)a[i].enter,
             (long long)a[i].exit, (long long)a[i].gpu_start, (long long)a[i].gpu_end, (long long)w[0], (long long)w[1],
             (long long)w[2], (long long)w[3]);
  }
}
static void on_xone(void *ctx, const struct ncs_aligned *a) { on_xrun(ctx, a, 1); }
static uint64_t x_rand(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }
/* one_at_a_time: the release hook takes a call at a time (release, not release_run) */
static void test_settled_exact(int one_at_a_time) {
  uint64_t rs = 0x2545f4914f6cdd1dull, mono = 5000000000ull;
  int64_t off = 1700000000000000000ll;
  static struct xrel r;
  memset(&r, 0, sizeof r);
  r.next = 1;
  r.origin = off + (int64_t)mono - 777;
  ncs_clockmap_init(&r.truth);
  struct ncs_aligner a;
  ncs_aligner_init(&a, r.origin, one_at_a_time ? on_xone : NULL, &r);
  if (!one_at_a_time) a.release_run = on_xrun;
  int held = 0;
  uint64_t tc = 0;
  for (int k = 0; k <= XK; k++) {
    struct ncs_clock ck = {(uint64_t)(off + (int64_t)mono), mono, 5};
    ncs_clockmap_add(&r.truth, &ck);
    ncs_aligner_clock(&a, &ck);
    held += k >= 2 && a.n != 0;
    if (k == XK) break;
    uint64_t span = 900000 + x_rand(&rs) % 200000, lo = mono;
    mono += span;
    off += x_rand(&rs) % 8 == 0 ? 0 : (int64_t)(x_rand(&rs) % 6001) - 3000;
    for (int j = 0; j < XN; j++) {
      uint64_t t[4];
      for (int q = 0; q < 4; q++) t[q] = lo + 1 + x_rand(&rs) % span; /* in (lo, mono] */
      if (j == 0) t[0] = lo + 1;
      if (j == 1) t[3] = mono;
      tc++;
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = tc, .seq = tc, .t_enter = t[0], .t_exit = t[1]};
      struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = tc, .gpu_start = t[2], .gpu_end = t[3]};
      r.gs[tc] = t[2];
      r.ge[tc] = t[3];
      ncs_aligner_call(&a, &c);
      ncs_aligner_gpu(&a, &g);
    }
  }
  ncs_aligner_flush(&a);
  CHECK(r.n == XK * XN && r.order == 0 && r.bad == 0, "align: settled calls' times are ncs_clockmap_map's, bit for bit, on "
        "random clocks of either slope, released %s (%d of %d calls, %d differ, %d out of order)",
        one_at_a_time ? "a call at a time" : "in runs", r.n, XK * XN, r.bad, r.order);
  CHECK(held == 0, "align: random clocks: every call went at the pair after it (%d pairs held some)", held);
  ncs_aligner_free(&a);
}

/* A spare (align.h): aligners of files read one after another by one thread take the memory the
 * one before left (its ring and GPU-time index) and release what a fresh aligner releases. A file
 * of n calls, pairs every `every` calls, GPU times of one call in 5 written 7 calls late (found
 * through the index), one call in 11 without: a digest of every released field, against the same
 * file through an aligner without a spare. */
struct dig { uint64_t h; int n; };
static void on_dig(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct dig *d = ctx;
  for (size_t i = 0; i < n; i++, d->n++) {
    uint64_t v[6] = {a[i].call->tcall, (uint64_t)a[i].enter, (uint64_t)a[i].exit, (uint64_t)a[i].gpu_start,
                     (uint64_t)a[i].gpu_end, (uint64_t)a[i].has_gpu};
    for (int k = 0; k < 6; k++) d->h = (d->h ^ v[k]) * 0x100000001b3ull;
  }
}
static uint64_t spare_file(struct ncs_aligner_spare *sp, int n, int every, int *nrel, void **ring) {
  struct dig d = {0xcbf29ce484222325ull, 0};
  struct ncs_aligner a;
  ncs_aligner_init(&a, rt_of(0), NULL, &d);
  a.release_run = on_dig;
  a.spare = sp;
  uint64_t mono = 5000;
  for (int i = 1; i <= n + 7; i++) {
    if (i <= n) {
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 2, .tcall = (uint64_t)i, .t_enter = mono, .t_exit = mono + 40};
      ncs_aligner_call(&a, &c);
      if (i == 1) *ring = a.q;
    }
    int late = i > 7 && (i - 7) % 5 == 0 ? i - 7 : 0, now = i <= n && i % 5 != 0 && i % 11 != 0 ? i : 0;
    for (int k = 0; k < 2; k++) {
      int t = k ? late : now;
      if (!t) continue;
      struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 2, .ref = (uint64_t)t,
                               .gpu_start = 5000 * (uint64_t)t + 10, .gpu_end = 5000 * (uint64_t)t + 30};
      ncs_aligner_gpu(&a, &g);
    }
    mono += 5000;
    if (i % every == 0) {
      struct ncs_clock ck = {(uint64_t)rt_of(mono), mono, 5};
      ncs_aligner_clock(&a, &ck);
    }
  }
  ncs_aligner_flush(&a);
  ncs_aligner_free(&a);
  *nrel = d.n;
  return d.h;
}
static void test_spare(void) {
  int sizes[3][2] = {{9000, 3000}, {3000, 300}, {9000, 3000}}, n0, n1;
  void *ring, *was;
  struct ncs_aligner_spare sp = {NULL, 0, NULL};
  int same = 0, took = 0;
  for (int f = 0; f < 3; f++) {
    uint64_t want = spare_file(NULL, sizes[f][0], sizes[f][1], &n0, &ring);
    was = sp.q;
    uint64_t got = spare_file(&sp, sizes[f][0], sizes[f][1], &n1, &ring);
    same += want == got && n0 == sizes[f][0] && n1 == n0;
    took += (f == 0 ? sp.q && sp.q != ring && sp.gslot != NULL : ring == was && sp.q == was) && sp.cap == 8192; /* file 0 grew its ring */
  }
  CHECK(same == 3, "align: a spare: three files in turn release what fresh aligners release (%d of 3 the same)", same);
  CHECK(took == 3, "align: a spare: each file takes the ring the one before left, the larger kept, 8192 slots "
        "(%d of 3 files; %zu slots)", took, sp.cap);
  ncs_aligner_spare_free(&sp);
  CHECK(!sp.q && !sp.gslot && !sp.cap, "align: a spare given back");
}

/* A call after a pair whose GPU start lies three pairs back (a GPU clock off, or a bad record) is
 * not settled: it keeps the hold, and its GPU start is extrapolated with the oldest segment kept
 * when the hold releases it (pairs 2..5: the segment from pair 2 to 3, extended back). */
struct sone { int n; int64_t gs; };
static void on_sone(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct sone *r = ctx;
  for (size_t i = 0; i < n; i++, r->n++) r->gs = a[i].gpu_start;
}
static void test_settled_odd(void) {
  struct sone r = {0, 0};
  struct ncs_aligner a;
  ncs_aligner_init(&a, s_off(0) + (int64_t)s_mono(0), NULL, &r);
  a.release_run = on_sone;
  uint64_t gs = s_mono(0) + 500;
  for (int k = 0; k <= 5; k++) {
    struct ncs_clock ck = {(uint64_t)(s_off(k) + (int64_t)s_mono(k)), s_mono(k), 5};
    ncs_aligner_clock(&a, &ck);
    if (k == 4 && r.n) break; /* released a pair early */
    if (k != 3) continue;
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = 1, .t_enter = s_mono(3) + 1000, .t_exit = s_mono(3) + 2000};
    struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = 1, .gpu_start = gs, .gpu_end = s_mono(3) + 3000};
    ncs_aligner_call(&a, &c);
    ncs_aligner_gpu(&a, &g);
  }
  int64_t num = -(int64_t)(s_mono(2) - gs) * (s_off(3) - s_off(2)), den = (int64_t)(s_mono(3) - s_mono(2));
  int64_t want = (int64_t)gs + s_off(2) + (num - den / 2) / den - (s_off(0) + (int64_t)s_mono(0));
  CHECK(r.n == 1 && llabs(r.gs - want) <= 1, "align: a call whose GPU start lies pairs back keeps the hold (released %d; GPU "
        "start %lld, want %lld: the oldest kept segment extended)", r.n, (long long)r.gs, (long long)want);
  ncs_aligner_flush(&a);
  ncs_aligner_free(&a);
}

/* Stretches (ncs_aligner_stretch: a call's own GPU time right after it taken at once, the
 * ring's tail in locals) release what the same records fed one at a time release: every field
 * of every released call, in order, and the same counts, on random streams of calls whose GPU
 * time mostly follows at once, else comes late, for another thread or call, failed, captured
 * or for a group; threads that share a slot of the aligner's tables (1 and 65), tcalls that go
 * back, clock pairs at random gaps of either slope, and a long stretch without any (the ring
 * grows, then holds its most). */
struct sdig { uint64_t h; int n; };
static void on_sdig(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct sdig *d = ctx;
  for (size_t i = 0; i < n; i++, d->n++) {
    const struct ncs_call *c = a[i].call;
    uint64_t v[9] = {c->thread, c->tcall, c->group, c->seq, (uint64_t)a[i].enter, (uint64_t)a[i].exit,
                     (uint64_t)a[i].gpu_start, (uint64_t)a[i].gpu_end, (uint64_t)a[i].has_gpu};
    for (int k = 0; k < 9; k++) d->h = (d->h ^ v[k]) * 0x100000001b3ull;
  }
}
enum { SS_MAX = 150000 };
struct srec { int type; union { struct ncs_call c; struct ncs_gpu_time g; struct ncs_clock k; }; }; /* type 0 call, 1 GPU time, 2 pair */
static int ss_others; /* GPU times written right after a call for another thread or call (the last stream's) */
static int ss_stream(uint64_t *rs, struct srec *r, int variant) {
  static const uint32_t tids[] = {1, 65, 2};
  int nthreads = 1 + variant % 3, disorder = variant % 4 == 3, nocl = variant == 5, n = 0, ncalls = nocl ? 70000 : 20000;
  uint64_t tc[3] = {1, 1, 1}, mono = 1000000, last_pair = 0;
  int64_t off = 1600000000000000000ll;
  struct { uint32_t thread; uint64_t tcall, group, t; } late[64];
  int nlate = 0;
  ss_others = 0;
  for (int i = 0; i < ncalls && n < SS_MAX - 8; i++) {
    int th = (int)(x_rand(rs) % (uint64_t)nthreads);
    uint64_t t = tc[th];
    tc[th] += 1 + (x_rand(rs) % 16 == 0);
    if (disorder && x_rand(rs) % 40 == 0) t = t > 2 ? t - 2 : t;
    mono += 100 + x_rand(rs) % 900;
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = tids[th], .tcall = t, .seq = (uint64_t)i + 1,
                         .group = x_rand(rs) % 32 == 0 ? 1 + x_rand(rs) % 3 : 0, .t_enter = mono,
                         .t_exit = mono + 50 + x_rand(rs) % 100};
    r[n++] = (struct srec){.type = 0, .c = c};
    uint64_t u = x_rand(rs) % 100;
    struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = c.thread, .ref = c.tcall,
                             .gpu_start = mono + 20 + x_rand(rs) % 300, .gpu_end = mono + 400 + x_rand(rs) % 400};
    if (u < 70) { /* right after its call */
      if (x_rand(rs) % 50 == 0) g.flags = x_rand(rs) % 2 ? NCS_GPU_F_FAILED : NCS_GPU_F_CAPTURED;
      if (c.group && x_rand(rs) % 2) { g.kind = NCS_GPU_KIND_GROUP; g.ref = c.group; }
      r[n++] = (struct srec){.type = 1, .g = g};
    } else if (u < 75) { /* right after it, but another thread's or another call's */
      if (x_rand(rs) % 2) g.thread = tids[(th + 1) % 3]; else g.ref = c.tcall + 1 + x_rand(rs) % 2;
      r[n++] = (struct srec){.type = 1, .g = g};
      ss_others++;
    } else if (u < 90 && nlate < 64) { /* later */
      late[nlate].thread = c.thread; late[nlate].tcall = c.tcall; late[nlate].group = c.group; late[nlate++].t = g.gpu_start;
    }
    while (nlate && x_rand(rs) % 3 == 0) { /* a late one written */
      int q = (int)(x_rand(rs) % (uint64_t)nlate);
      struct ncs_gpu_time lg = {.kind = NCS_GPU_KIND_CALL, .thread = late[q].thread, .ref = late[q].tcall,
                                .gpu_start = late[q].t, .gpu_end = mono + 10};
      if (late[q].group && x_rand(rs) % 2) { lg.kind = NCS_GPU_KIND_GROUP; lg.ref = late[q].group; }
      r[n++] = (struct srec){.type = 1, .g = lg};
      late[q] = late[--nlate];
    }
    if (!nocl && (mono - last_pair > 50000 + x_rand(rs) % 400000)) {
      off += (int64_t)(x_rand(rs) % 4001) - 2000;
      last_pair = mono + 200;
      r[n++] = (struct srec){.type = 2, .k = {(uint64_t)(off + (int64_t)last_pair), last_pair, 7}};
    }
  }
  return n;
}
static void test_stretch_same(void) {
  static struct srec rec[SS_MAX];
  static struct ncs_call sc[512];
  static struct ncs_gpu_time sg[512];
  static uint8_t so[512];
  int same = 0, streams = 0, big = 0, told = 0;
  uint64_t pairs = 0, unmatched = 0, early = 0, ahead_unmatched = 0;
  for (int v = 0; v < 12; v++, streams++) {
    uint64_t rs = 0x9e3779b97f4a7c15ull ^ (uint64_t)v * 0x1234567ull;
    int n = ss_stream(&rs, rec, v);
    struct sdig d[3] = {{0xcbf29ce484222325ull, 0}, {0xcbf29ce484222325ull, 0}, {0xcbf29ce484222325ull, 0}};
    struct ncs_aligner a[3];
    static int nextclk[SS_MAX + 1]; /* the first pair at or after each record (n: none) */
    nextclk[n] = n;
    for (int i = n - 1; i >= 0; i--) nextclk[i] = rec[i].type == 2 ? i : nextclk[i + 1];
    for (int m = 0; m < 3; m++) {
      ncs_aligner_init(&a[m], 1600000000000000000ll, NULL, &d[m]);
      a[m].release_run = on_sdig;
      struct ncs_clock k0 = {1600000000000000000ull + 1000, 1000, 5};
      ncs_aligner_clock(&a[m], &k0);
    }
    size_t ns = 0, nc = 0, ng = 0, len = 1;
    for (int i = 0; i <= n; i++) {
      if (i < n && rec[i].type == 0) { ncs_aligner_call(&a[0], &rec[i].c); so[ns++] = 0; sc[nc++] = rec[i].c; }
      if (i < n && rec[i].type == 1) { ncs_aligner_gpu(&a[0], &rec[i].g); so[ns++] = 1; sg[ng++] = rec[i].g; }
      if (ns && (i == n || ns >= len || rec[i].type == 2 || (i + 1 < n && rec[i + 1].type == 2))) {
        struct ncs_stretch s = {sc, sg, nc, ng, so, NULL, 0};
        ncs_aligner_stretch(&a[1], &s);
        big += a[1].n > 1024;
        int e = i < n && rec[i].type != 2 ? i + 1 : i; /* the stretch's end: the pair, if any, comes after it */
        if (nextclk[e] < n) { s.closing = &rec[nextclk[e]].k; s.after = (size_t)(nextclk[e] - e); }
        told += s.closing != NULL;
        ncs_aligner_stretch(&a[2], &s);
        ns = nc = ng = 0;
        len = 1 + x_rand(&rs) % 512;
      }
      if (i < n && rec[i].type == 2) {
        for (int m = 0; m < 3; m++) ncs_aligner_clock(&a[m], &rec[i].k);
        pairs++;
      }
    }
    for (int m = 0; m < 3; m++) ncs_aligner_flush(&a[m]);
    int ok = 1;
    for (int m = 1; m < 3; m++) {
      /* told the pair: a GPU time naming a call released ahead of it (one that had its own:
       * only those written for another thread or call can) counts as unmatched */
      uint64_t u0 = a[0].gpu_unmatched, um = a[m].gpu_unmatched;
      int okm = d[0].h == d[m].h && d[0].n == d[m].n && (m == 1 ? um == u0 : um >= u0 && um - u0 <= (uint64_t)ss_others) &&
                a[0].early == a[m].early && a[0].disorder == a[m].disorder;
      ahead_unmatched += m == 2 ? um - u0 : 0;
      if (!okm)
        printf("  stream %d, %s: %d / %d released, unmatched %llu / %llu, early %llu / %llu\n", v, m == 1 ? "stretches" : "told",
               d[0].n, d[m].n, (unsigned long long)a[0].gpu_unmatched, (unsigned long long)a[m].gpu_unmatched,
               (unsigned long long)a[0].early, (unsigned long long)a[m].early);
      ok &= okm;
    }
    same += ok;
    unmatched += a[0].gpu_unmatched;
    early += a[0].early;
    for (int m = 0; m < 3; m++) ncs_aligner_free(&a[m]);
  }
  CHECK(same == streams && pairs > 100 && unmatched > 0 && big > 0 && early > 0 && told > 1000,
        "align: stretches release what the same records one at a time release, field for field, told their closing pair or "
        "not (%d of %d streams; %llu pairs, %d stretches told; %llu GPU times unmatched, %llu more when told; %llu calls past "
        "the hold limit)", same, streams, (unsigned long long)pairs, told, (unsigned long long)unmatched,
        (unsigned long long)ahead_unmatched, (unsigned long long)early);
}

/* A stretch told its chunk's closing pair releases its settled calls at once, the rest as the
 * records fed one at a time release them: a call whose GPU end lies on the pair is released
 * ahead, one a nanosecond past it is held; a thread's tcall going back among the calls released
 * ahead is noted as when they are held; a chunk of more calls than the aligner holds releases
 * its oldest early, told or not; a call whose GPU time comes after the next call is held, then
 * released with the calls after it; the GPU times of the calls released ahead are noted (a
 * later call of the thread whose tcall goes back among theirs waits for none). */
static void told_chunk(struct ncs_aligner *a, int told, const struct ncs_call *c, const struct ncs_gpu_time *g, size_t nc,
                       const uint8_t *o, const struct ncs_clock *P) {
  for (size_t i = 0; i < nc;) { /* stretches of up to 256 calls, as a column chunk's blocks make them */
    size_t m = nc - i < 256 ? nc - i : 256;
    struct ncs_stretch s = {c + i, g + i, m, m, o + 2 * i, told ? P : NULL, 2 * (nc - i - m)};
    ncs_aligner_stretch(a, &s);
    i += m;
  }
}
static void test_told_ahead(void) {
  enum { NC = 70000 };
  static struct ncs_call c[NC];
  static struct ncs_gpu_time g[NC];
  static uint8_t o[2 * NC];
  int ok = 1, ahead = 0;
  for (int v = 0; v < 5; v++) {
    struct sdig d[2] = {{0xcbf29ce484222325ull, 0}, {0xcbf29ce484222325ull, 0}};
    struct ncs_aligner a[2];
    size_t nc = v == 2 ? NC : 1000;
    uint64_t mono = 2000000, pair = mono + 1000 * nc + 5000;
    for (size_t i = 0; i < nc; i++) {
      uint64_t t = mono + 1000 * i + 100;
      c[i] = (struct ncs_call){.op = NCS_OP_AllReduce, .thread = 1, .tcall = 1 + i, .t_enter = t, .t_exit = t + 50};
      g[i] = (struct ncs_gpu_time){.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = 1 + i, .gpu_start = t + 60, .gpu_end = t + 500};
    }
    if (v == 0) { g[nc - 2].gpu_end = pair; g[nc - 1].gpu_end = pair + 1; } /* on the pair; one past it */
    if (v == 1) { c[500].tcall = c[499].tcall; g[500].ref = c[500].tcall; } /* tcall goes back (not up) */
    for (size_t i = 0; i < 2 * nc; i++) o[i] = (uint8_t)(i & 1);
    if (v == 3) { o[601] = 0; o[602] = 1; } /* a call's GPU time after the next call */
    struct ncs_call back = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = nc - 1, .t_enter = pair + 1000, .t_exit = pair + 1100};
    struct ncs_clock k0 = {1700000000000000000ull + mono, mono, 5}, P = {1700000000000000000ull + pair + 3000, pair, 5};
    struct ncs_clock k2 = {P.realtime_ns + 2000000, pair + 2000000, 5};
    struct ncs_clock k3 = {k2.realtime_ns + 2000000, k2.monotonic_ns + 2000000, 5};
    int before = 0, unflushed[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
      ncs_aligner_init(&a[m], 1700000000000000000ll, NULL, &d[m]);
      a[m].release_run = on_sdig;
      ncs_aligner_clock(&a[m], &k0);
      told_chunk(&a[m], m, c, g, nc, o, &P);
      if (m) before = d[m].n; /* released before the pair came */
      ncs_aligner_clock(&a[m], &P);
      if (v == 4) ncs_aligner_call(&a[m], &back); /* its tcall back among those noted GPU-timed: it waits for none */
      ncs_aligner_clock(&a[m], &k2);
      ncs_aligner_clock(&a[m], &k3);
      unflushed[m] = d[m].n;
      ncs_aligner_flush(&a[m]);
    }
    int want_before = v == 0 ? (int)nc - 1 : v == 1 || v == 4 ? (int)nc : v == 2 ? (int)nc - 65536 /* the oldest, early */ : (int)nc;
    int same = d[0].h == d[1].h && d[0].n == d[1].n && a[0].early == a[1].early && a[0].disorder == a[1].disorder &&
               a[0].gpu_unmatched == a[1].gpu_unmatched;
    same &= unflushed[0] == unflushed[1] && (v != 4 || unflushed[1] == (int)nc + 1);
    if (!same || before != want_before || (v == 1 && !a[1].disorder) || (v == 2 && !a[1].early))
      printf("  case %d: digests %s, released %d / %d, %d ahead (want %d), early %llu / %llu, disorder %d / %d\n", v,
             d[0].h == d[1].h ? "same" : "differ", d[0].n, d[1].n, before, want_before, (unsigned long long)a[0].early,
             (unsigned long long)a[1].early, a[0].disorder, a[1].disorder), ok = 0;
    ahead += before;
    for (int m = 0; m < 2; m++) ncs_aligner_free(&a[m]);
  }
  CHECK(ok && ahead > 0, "align: a stretch told its closing pair releases the calls that pair settles at once (%d), the "
        "same values as held; a GPU end one past the pair, a tcall that goes back, a chunk over the hold limit, a GPU time "
        "after the next call, a later call whose tcall goes back among those released ahead (no GPU time awaited): as held",
        ahead);
}

/* A GPU-timed thread's call without its GPU time is held past the pairs that would release it
 * (its GPU time may still come: written long after the call), and takes it when it comes; a
 * call of a thread with no GPU time so far goes at the hold. */
struct wrel { int n, has[4]; uint64_t tcall[4]; };
static void on_wrel(void *ctx, const struct ncs_aligned *a, size_t n) {
  struct wrel *r = ctx;
  for (size_t i = 0; i < n; i++, r->n++)
    if (r->n < 4) { r->has[r->n] = a[i].has_gpu; r->tcall[r->n] = a[i].call->tcall; }
}
static void on_wone(void *ctx, const struct ncs_aligned *a) { on_wrel(ctx, a, 1); }
/* one_at_a_time: the release hook takes a call at a time (release, not release_run) */
static void test_gpu_wait(int one_at_a_time) {
  struct wrel r = {0, {0}, {0}};
  struct ncs_aligner a;
  ncs_aligner_init(&a, 0, one_at_a_time ? on_wone : NULL, &r);
  if (!one_at_a_time) a.release_run = on_wrel;
  struct ncs_call c1 = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = 1, .t_enter = 1100, .t_exit = 1200};
  struct ncs_call c2 = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = 2, .t_enter = 1300, .t_exit = 1400};
  struct ncs_call c3 = {.op = NCS_OP_AllReduce, .thread = 2, .tcall = 1, .t_enter = 1500, .t_exit = 1600};
  struct ncs_gpu_time g1 = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = 1, .gpu_start = 1150, .gpu_end = 1190};
  struct ncs_gpu_time g2 = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = 2, .gpu_start = 5150, .gpu_end = 5190};
  int held = 0;
  for (int k = 0; k < 5; k++) {
    if (k == 1) { ncs_aligner_call(&a, &c1); ncs_aligner_gpu(&a, &g1); ncs_aligner_call(&a, &c2); ncs_aligner_call(&a, &c3); }
    if (k == 4) { held = r.n == 1; ncs_aligner_gpu(&a, &g2); } /* pairs 2 and 3 released call 1 only: call 2 waits, call 3 behind it */
    struct ncs_clock ck = {1000000 + 1000 * (uint64_t)k, 1000 * (uint64_t)k, 5};
    ncs_aligner_clock(&a, &ck);
  }
  ncs_aligner_flush(&a);
  CHECK(held && r.n == 3 && r.has[0] && r.has[1] && r.tcall[1] == 2 && !r.has[2],
        "align: a GPU-timed thread's call waits past the hold for its GPU time written late, and gets it, released %s "
        "(%d released before it came; %d in all, GPU time %d %d %d)", one_at_a_time ? "a call at a time" : "in runs",
        held ? 1 : 0, r.n, r.has[0], r.has[1], r.has[2]);
  ncs_aligner_free(&a);
}

int main(void) {
  test_clockmap();
  test_settled();
  test_settled_odd();
  test_settled_exact(0);
  test_settled_exact(1);
  test_spare();
  test_aligner();
  test_gpu_match();
  test_stretch_same();
  test_told_ahead();
  test_gpu_wait(0);
  test_gpu_wait(1);
  test_no_clock();
  test_aligner_kernels();
  test_clock_check();
  test_release_runs();
  long n = 0;
  double e0 = run_synth(0, &n);
  CHECK(n == 6 * 600, "align: synthetic job, every collective seen (%ld)", n);
  CHECK(e0 >= 0 && e0 <= 1000, "align: 3 hosts, different boot times, 80 ppm drift, exact realtime: worst error %.0f ns <= 1 us", e0);
  double e1 = run_synth(50, &n);
  CHECK(e1 > 1000 && e1 <= 50000 + 1000, "align: with +-50 us realtime error between hosts the error is bounded by it (%.0f ns)", e1);
  return check_done();
}
