/* test_mux.c — the fan-out of one read (decoder/io/mux.c) and the reader's runs of CALL and
 * GPU_TIME records (decoder/io/trace.h): receivers taking runs and receivers taking one record
 * at a time see the same records in the same order, each receiver a whole run in turn, nested
 * muxes (flattened or not) call every receiver once per run in order, a stop takes effect
 * after the run; and a trace read with run callbacks gives exactly the records, counts and
 * stop of the per-record read, on column chunks (runs longer than one) and row chunks;
 * stretches (trace.h): a stretch receiver gets each whole with its interleaving (replayed, the
 * per-record read's order), other receivers of a mux its CALL records then its GPU_TIME
 * records (each type in file order); stretches only in column chunks.
 * `--write FILE PER_CHUNK`: a trace for tests/test_report_runs.sh (write_mixed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_trace_writer.h"
#include "io/mux.h"
#include "io/trace.h"

/* ---- receivers that log what they saw ---- */
struct rx {
  int id;
  uint64_t hash, records, runs, longest; /* FNV of (kind, fields) in order */
  uint64_t hc, hg;                       /* of the CALL records alone, of the GPU_TIME records alone */
  uint64_t stretches, mixed, st_longest; /* stretches seen; of them with both types; the longest */
  int bad_stretch;                       /* a stretch whose order[] disagrees with nc, ng or its bounds */
  int stop_at;                           /* 1-based record at which to ask for a stop, 0 never */
};
static int order[4096], norder; /* receiver ids in the order they were called */

static void mix(uint64_t *h, uint64_t v) { *h = (*h ^ v) * 1099511628211ull; }
static void see_call(struct rx *r, const struct ncs_call *c) {
  uint64_t f[] = {1, c->op, c->tcall, c->count, c->t_enter, c->t_exit, c->comm};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) { mix(&r->hash, f[i]); mix(&r->hc, f[i]); }
  r->records++;
}
static void see_gpu(struct rx *r, const struct ncs_gpu_time *g) {
  uint64_t f[] = {2, g->ref, g->gpu_start, g->gpu_end};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) { mix(&r->hash, f[i]); mix(&r->hg, f[i]); }
  r->records++;
}
static void called(struct rx *r, size_t n) {
  if (norder < (int)(sizeof order / sizeof *order)) order[norder++] = r->id;
  r->runs++;
  if (n > r->longest) r->longest = n;
}
static int one_call(void *ctx, const struct ncs_call *c) {
  struct rx *r = ctx;
  called(r, 1);
  see_call(r, c);
  return r->stop_at && r->records == (uint64_t)r->stop_at;
}
static int run_calls(void *ctx, const struct ncs_call *x, size_t n) {
  struct rx *r = ctx;
  called(r, n);
  int stop = 0;
  for (size_t i = 0; i < n; i++) { see_call(r, &x[i]); stop |= r->stop_at && r->records == (uint64_t)r->stop_at; }
  return stop;
}
static int one_gpu(void *ctx, const struct ncs_gpu_time *g) { struct rx *r = ctx; called(r, 1); see_gpu(r, g); return 0; }
static int run_gpus(void *ctx, const struct ncs_gpu_time *x, size_t n) {
  struct rx *r = ctx;
  called(r, n);
  for (size_t i = 0; i < n; i++) see_gpu(r, &x[i]);
  return 0;
}
/* A stretch (trace.h): checked against its bounds, then replayed in file order */
static int on_stretch(void *ctx, const struct ncs_stretch *s) {
  struct rx *r = ctx;
  size_t zeros = 0;
  for (size_t i = 0; i < s->nc + s->ng; i++) zeros += s->order[i] == 0;
  for (size_t i = 0; i < s->nc + s->ng; i++) r->bad_stretch |= s->order[i] > 1;
  r->bad_stretch |= zeros != s->nc || s->nc + s->ng == 0 || s->nc > 256 || s->ng > 256;
  r->stretches++;
  r->mixed += s->nc && s->ng;
  if (s->nc + s->ng > r->st_longest) r->st_longest = s->nc + s->ng;
  return ncs_stretch_in_order(s, r, run_calls, run_gpus);
}
/* runs: 0 per record, 1 runs, 2 runs and stretches */
static struct ncs_visitor rx_visitor(struct rx *r, int runs) {
  struct ncs_visitor v = {.ctx = r};
  if (runs) { v.calls = run_calls; v.gpu_times = run_gpus; }
  else { v.call = one_call; v.gpu_time = one_gpu; }
  if (runs == 2) v.stretch = on_stretch;
  return v;
}
static void rx_init(struct rx *r, int id) {
  memset(r, 0, sizeof *r);
  r->id = id;
  r->hash = r->hc = r->hg = 14695981039346656037ull;
}

/* ---- the mux alone ---- */
static void mux_alone(void) {
  struct ncs_call x[5];
  for (int i = 0; i < 5; i++) x[i] = (struct ncs_call){.op = 2, .tcall = (uint64_t)i + 1, .count = 100u * (unsigned)i, .t_enter = 10u * (unsigned)i, .t_exit = 10u * (unsigned)i + 3};
  struct ncs_gpu_time g[3];
  for (int i = 0; i < 3; i++) g[i] = (struct ncs_gpu_time){.ref = (uint64_t)i + 1, .gpu_start = 7u * (unsigned)i, .gpu_end = 7u * (unsigned)i + 2};
  struct rx want, a, b, d, e;
  rx_init(&want, 0);
  for (int i = 0; i < 5; i++) see_call(&want, &x[i]);
  uint64_t want_calls = want.hash;
  rx_init(&want, 0);
  for (int i = 0; i < 3; i++) see_gpu(&want, &g[i]);
  uint64_t want_gpus = want.hash;

  /* A per record, B runs, then a nested mux of D (per record) and E (runs) */
  rx_init(&a, 1); rx_init(&b, 2); rx_init(&d, 3); rx_init(&e, 4);
  struct ncs_mux inner = {0}, outer = {0};
  struct ncs_visitor vin, vout;
  inner.v[inner.n++] = rx_visitor(&d, 0);
  inner.v[inner.n++] = rx_visitor(&e, 1);
  ncs_mux_build(&inner, &vin);
  outer.v[outer.n++] = rx_visitor(&a, 0);
  outer.v[outer.n++] = rx_visitor(&b, 1);
  outer.v[outer.n++] = vin;
  ncs_mux_build(&outer, &vout);
  CHECK(vout.calls && vout.gpu_times && !vout.call && !vout.gpu_time, "a mux takes CALL and GPU_TIME records as runs");
  CHECK(outer.ncall == 4, "a nested mux's receivers are flattened into the outer list (%d receivers)", outer.ncall);
  norder = 0;
  int stop = vout.calls(vout.ctx, x, 5);
  int want_order[] = {1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 4};
  CHECK(stop == 0 && norder == 12 && memcmp(order, want_order, sizeof want_order) == 0,
        "a run goes to each receiver in turn, whole: per-record ones once per record, run ones once (%d calls)", norder);
  CHECK(a.hash == want_calls && b.hash == want_calls && d.hash == want_calls && e.hash == want_calls,
        "every receiver sees the run's records in order");
  CHECK(b.runs == 1 && b.longest == 5 && e.runs == 1 && e.longest == 5, "run receivers get the run as one call");
  vout.gpu_times(vout.ctx, g, 3);
  CHECK(a.records == 8 && b.records == 8 && d.records == 8 && e.records == 8, "GPU_TIME runs reach every receiver too");

  /* a stop asked for at record 2 by A: every receiver still gets the run, the mux asks to stop */
  rx_init(&a, 1); rx_init(&b, 2); rx_init(&d, 3); rx_init(&e, 4);
  a.stop_at = 2;
  stop = vout.calls(vout.ctx, x, 5);
  CHECK(stop == 1 && b.records == 5 && e.records == 5 && a.records == 5, "a stop takes effect after the run, every receiver having seen it");
  rx_init(&a, 1); rx_init(&b, 2); rx_init(&d, 3); rx_init(&e, 4);
  e.stop_at = 5;
  CHECK(vout.calls(vout.ctx, x, 5) == 1, "a stop from a nested receiver reaches the outer mux");
  (void)want_gpus;
  rx_init(&a, 1); rx_init(&b, 2); rx_init(&d, 3); rx_init(&e, 4);
  vout.gpu_times(vout.ctx, g, 3);
  CHECK(a.hash == want_gpus && e.hash == want_gpus, "GPU_TIME runs in order");

  /* more receivers than the flat list holds: 17 nested muxes of 3 receivers each (51 > 34) */
  static struct ncs_mux subs[NCS_MUX_MAX], top;
  static struct rx many[NCS_MUX_MAX * 3];
  memset(&top, 0, sizeof top);
  for (int i = 0; i < NCS_MUX_MAX; i++) {
    memset(&subs[i], 0, sizeof subs[i]);
    for (int k = 0; k < 3; k++) {
      rx_init(&many[3 * i + k], 3 * i + k);
      subs[i].v[subs[i].n++] = rx_visitor(&many[3 * i + k], k == 1);
    }
    ncs_mux_build(&subs[i], &top.v[top.n++]);
  }
  ncs_mux_build(&top, &vout);
  norder = 0;
  vout.calls(vout.ctx, x, 1);
  int in_order = norder == NCS_MUX_MAX * 3;
  for (int i = 0; in_order && i < norder; i++) in_order = order[i] == i;
  CHECK(in_order && top.ncall <= NCS_MUX_FLAT, "51 receivers in 17 nested muxes: each called once per run, in order (%d calls, %d listed)",
        norder, top.ncall);

  /* a stretch (trace.h) of C G C C G C through an outer mux of A (per record), a stretch
   * receiver S, and the inner mux of D (per record) and E (runs) flattened in: S gets it whole
   * and replays the interleaving; the others get its 4 CALL records, then its 2 GPU_TIME ones */
  {
    struct rx s, want_s;
    rx_init(&a, 1); rx_init(&s, 2); rx_init(&d, 3); rx_init(&e, 4); rx_init(&want_s, 0);
    struct ncs_mux in2 = {0}, out2 = {0};
    struct ncs_visitor vin2, vout2;
    in2.v[in2.n++] = rx_visitor(&d, 0);
    in2.v[in2.n++] = rx_visitor(&e, 1);
    ncs_mux_build(&in2, &vin2);
    out2.v[out2.n++] = rx_visitor(&a, 0);
    out2.v[out2.n++] = rx_visitor(&s, 2);
    out2.v[out2.n++] = vin2;
    ncs_mux_build(&out2, &vout2);
    CHECK(vout2.stretch && out2.nst == 1 && out2.ncall == 4 && out2.ngpu == 4,
          "a mux takes stretches; its stretch receiver is listed once (%d), its CALL and GPU_TIME receivers as before (%d, %d)",
          out2.nst, out2.ncall, out2.ngpu);
    static const uint8_t ord[] = {0, 1, 0, 0, 1, 0};
    struct ncs_stretch st = {x, g, 4, 2, ord, NULL, 0};
    see_call(&want_s, &x[0]); see_gpu(&want_s, &g[0]); see_call(&want_s, &x[1]); see_call(&want_s, &x[2]);
    see_gpu(&want_s, &g[1]); see_call(&want_s, &x[3]);
    uint64_t want_split = 14695981039346656037ull;
    for (int i = 0; i < 4; i++) { uint64_t f[] = {1, x[i].op, x[i].tcall, x[i].count, x[i].t_enter, x[i].t_exit, x[i].comm}; for (int j = 0; j < 7; j++) mix(&want_split, f[j]); }
    for (int i = 0; i < 2; i++) { uint64_t f[] = {2, g[i].ref, g[i].gpu_start, g[i].gpu_end}; for (int j = 0; j < 4; j++) mix(&want_split, f[j]); }
    norder = 0;
    int stop2 = vout2.stretch(vout2.ctx, &st);
    CHECK(stop2 == 0 && s.hash == want_s.hash && s.stretches == 1 && s.records == 6,
          "a stretch receiver gets the stretch whole, in one call, and replays it in file order");
    CHECK(a.hash == want_split && d.hash == want_split && e.hash == want_split && e.runs == 2,
          "receivers without `stretch` get its CALL records, then its GPU_TIME records (runs whole: %llu runs)",
          (unsigned long long)e.runs);
    rx_init(&a, 1); rx_init(&s, 2); rx_init(&d, 3); rx_init(&e, 4);
    s.stop_at = 1;
    CHECK(vout2.stretch(vout2.ctx, &st) == 1 && a.records == 6 && e.records == 6,
          "a stop from a stretch receiver takes effect after the stretch, every receiver having seen it");
  }

  /* one sub-visitor: the mux is that visitor */
  struct ncs_mux solo = {0};
  solo.v[solo.n++] = rx_visitor(&a, 0);
  ncs_mux_build(&solo, &vout);
  CHECK(vout.call == one_call && vout.ctx == &a && !vout.calls, "a mux of one visitor is that visitor");
}

/* ---- through the reader ---- */
static char dir[] = "/tmp/ncs-mux.XXXXXX";

/* calls with a GPU_TIME block every 64 calls (none when gpu is 0); `per_chunk` records a chunk */
static int write_trace(const char *path, int n, int per_chunk, int gpu) {
  struct tw t;
  if (tw_open(&t, path, 1, 1)) return 1;
  struct ncs_kv kv[] = {{"host", "mux", 3}};
  tw_kv(&t, kv, 1);
  uint64_t now = 1000000;
  for (int i = 0; i < n; i++) {
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i + 1, .comm = 1, .seq = (uint64_t)i + 1,
                         .count = 1u << (i % 7), .datatype = 7, .root = -1, .callsite = 1};
    now += 1000 + (uint64_t)(i * 37 % 101);
    c.t_enter = now;
    c.t_exit = now + 300 + (uint64_t)(i % 13);
    tw_call(&t, &c);
    if (gpu && i % 64 == 63)
      for (int k = 0; k < 16; k++) {
        struct ncs_gpu_time g = {.kind = 1, .thread = 1, .ref = (uint64_t)(i - 15 + k), .gpu_start = now - 5000 + (uint64_t)k * 100};
        g.gpu_end = g.gpu_start + 50 + (uint64_t)k;
        tw_gpu_time(&t, &g);
      }
    if ((int)t.nrec >= per_chunk) tw_flush(&t, 0);
  }
  return tw_close(&t, 1) ? 1 : 0;
}

static int count_columns(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  (void)index; (void)dropped; (void)off;
  if (flags & NCS_CHUNK_F_COLUMNS) ++*(int *)ctx;
  return 0;
}

/* Returns the longest run a run visitor was given. */
static uint64_t through_reader(const char *path, const char *what, int want_columns, int want_runs) {
  struct rx one, run, m1, m2, m3, st;
  rx_init(&one, 1); rx_init(&run, 2); rx_init(&m1, 3); rx_init(&m2, 4); rx_init(&m3, 5); rx_init(&st, 6);
  struct ncs_read_status s1, s2, s3, s4;
  struct ncs_visitor v = rx_visitor(&one, 0);
  int cols = 0;
  struct ncs_mux m = {0};
  m.v[m.n++] = rx_visitor(&m1, 0);
  m.v[m.n++] = rx_visitor(&m2, 1);
  m.v[m.n++] = rx_visitor(&m3, 2);
  m.v[m.n++] = (struct ncs_visitor){.ctx = &cols, .chunk = count_columns};
  struct ncs_visitor vm;
  ncs_mux_build(&m, &vm);
  int rc1 = ncs_trace_read(path, &v, &s1);
  v = rx_visitor(&run, 1);
  int rc2 = ncs_trace_read(path, &v, &s2);
  int rc3 = ncs_trace_read(path, &vm, &s3);
  v = rx_visitor(&st, 2);
  int rc4 = ncs_trace_read(path, &v, &s4);
  CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0 && rc4 == 0 && s1.records == s2.records && s1.records == s3.records &&
        s1.records == s4.records && one.records > 1000,
        "%s: read per record, as runs, as stretches and through a mux: same result and record count (%llu)", what,
        (unsigned long long)s1.records);
  CHECK(one.hash == run.hash && one.hash == m3.hash && one.hash == st.hash && one.records == run.records &&
        one.records == m3.records && one.records == st.records,
        "%s: the same CALL and GPU_TIME records in the same order as runs, and as stretches replayed in order", what);
  CHECK(!st.bad_stretch && !m3.bad_stretch, "%s: every stretch's order[] holds nc zeros and ng ones, at most a block of each", what);
  /* a mux's receivers without `stretch`: each type in file order, whole; the interleaving may be lost (mux.h) */
  CHECK(one.hc == m1.hc && one.hg == m1.hg && one.hc == m2.hc && one.hg == m2.hg && m1.records == one.records &&
        m2.records == one.records, "%s: through a mux, each receiver sees each type's records in file order", what);
  /* the truth of where stretches are: column chunks only (trace.h); there the trace's GPU_TIME
   * records come 16 after each 64 calls, so most stretches hold both types */
  CHECK(want_columns ? st.stretches > 0 && st.mixed > 0 && st.st_longest > 64 && st.stretches < st.records / 64
                     : st.stretches == 0 && m3.stretches == 0 && one.hash == m1.hash && one.hash == m2.hash,
        "%s: %llu stretches (%llu of both types, the longest %llu records) for %llu records", what,
        (unsigned long long)st.stretches, (unsigned long long)st.mixed, (unsigned long long)st.st_longest,
        (unsigned long long)st.records);
  CHECK(want_columns ? cols > 0 : cols == 0, "%s: %d column chunks", what, cols);
  /* column chunks: runs up to a block; row chunks: CALL records gathered up to 256 (trace.h) */
  CHECK(run.longest > 1 && run.runs < run.records && (want_runs || run.longest <= 256),
        "%s: runs of %llu records at most (%llu runs for %llu records)", what, (unsigned long long)run.longest,
        (unsigned long long)run.runs, (unsigned long long)run.records);
  uint64_t longest = run.longest;

  /* a stop asked for inside a run: the read ends after the run, the run counted */
  rx_init(&run, 2);
  run.stop_at = 100;
  v = rx_visitor(&run, 1);
  ncs_trace_read(path, &v, &s2);
  rx_init(&one, 1);
  one.stop_at = 100;
  v = rx_visitor(&one, 0);
  ncs_trace_read(path, &v, &s1);
  CHECK(s1.stopped && s2.stopped && one.records == 100 && run.records >= 100 && s2.records - s1.records == run.records - 100,
        "%s: a stop inside a run ends the read after it (per record: %llu records, runs: %llu)", what,
        (unsigned long long)one.records, (unsigned long long)run.records);
  rx_init(&st, 6);
  st.stop_at = 100;
  v = rx_visitor(&st, 2);
  ncs_trace_read(path, &v, &s4);
  CHECK(s4.stopped && st.records >= 100 && s4.records - s1.records == st.records - 100,
        "%s: a stop inside a stretch ends the read after it, the stretch counted (%llu records)", what,
        (unsigned long long)st.records);
  return longest;
}

/* `--write FILE PER_CHUNK` (tests/test_report_runs.sh): a trace whose calls change operation,
 * datatype, communicator (none, two known, one past report's table) and result code (ok,
 * in progress, error) in stretches of random length, `per_chunk` records a chunk (1: row
 * chunks, so runs of one; large: column chunks, long runs). Prints "columns N": its column
 * chunks. Same arguments, same file. */
static uint64_t lcg = 12345;
static uint32_t rnd(uint32_t n) { lcg = lcg * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(lcg >> 33) % n; }
static int write_mixed(const char *path, int per_chunk) {
  struct tw t;
  if (tw_open(&t, path, 7, 1700000000000000000ull)) return 1;
  struct ncs_kv kv[] = {{"host", "mux", 3}, {"env.RANK", "0", 1}, {"env.WORLD_SIZE", "2", 1}};
  tw_kv(&t, kv, 3);
  for (uint32_t k = 1; k <= 2; k++) {
    struct ncs_comm cm = {.comm = k, .init_op = NCS_OP_CommInitRank, .thread = 1, .comm_id = 0xabc0u + k,
                          .handle = 0x1000u * k, .t_enter = 1000, .t_exit = 2000, .rank = 0, .nranks = 2 * (int)k};
    tw_comm(&t, &cm);
  }
  static const uint32_t ops[] = {NCS_OP_AllReduce, NCS_OP_Broadcast, NCS_OP_AllGather, NCS_OP_ReduceScatter, 250};
  static const uint32_t dts[] = {7, 6, 0, 9};
  static const uint32_t comms[] = {1, 2, 0, 70000};
  static const int32_t rcs[] = {0, 0, 0, 7, 3};
  uint32_t op = ops[0], dt = dts[0], comm = 1;
  int32_t rc = 0;
  uint64_t now = 1000000;
  for (uint32_t i = 0; i < 20000; i++) {
    if (!rnd(40)) op = ops[rnd(5)];
    if (!rnd(30)) dt = dts[rnd(4)];
    if (!rnd(25)) comm = comms[rnd(4)];
    rc = rnd(8) ? 0 : rcs[rnd(5)];
    struct ncs_call c = {.op = op, .thread = 1 + rnd(2), .tcall = i + 1, .comm = comm, .seq = i + 1,
                         .count = 1u + rnd(1u << 20), .datatype = dt, .root = -1, .callsite = 1, .rc = rc};
    now += 500 + rnd(3000);
    c.t_enter = now - rnd(400); /* not in order: the window's ends are a min and a max */
    c.t_exit = c.t_enter + 100 + rnd(5000);
    tw_call(&t, &c);
    if (!rnd(50)) { struct ncs_clock ck = {1700000000000000000ull + now, now, 40}; tw_clock(&t, &ck); }
    if ((int)t.nrec >= per_chunk) tw_flush(&t, 0);
  }
  if (tw_close(&t, 1)) return 1;
  int cols = 0;
  struct ncs_visitor v = {.ctx = &cols, .chunk = count_columns};
  struct ncs_read_status st;
  if (ncs_trace_read(path, &v, &st)) return 1;
  printf("columns %d\n", cols);
  return 0;
}

int main(int argc, char **argv) {
  (void)tw_golden_rank; /* the shared writer's fixture, not used here */
  if (argc == 4 && strcmp(argv[1], "--write") == 0) return write_mixed(argv[2], atoi(argv[3]));
  mux_alone();
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  char big[600], small[600];
  snprintf(big, sizeof big, "%s/columns.ncs", dir);
  snprintf(small, sizeof small, "%s/rows.ncs", dir);
  CHECK(write_trace(big, 6000, 3000, 1) == 0 && write_trace(small, 2000, 3, 1) == 0, "write a column trace and a row trace");
  through_reader(big, "column chunks", 1, 1);
  through_reader(small, "row chunks", 0, 0);
  /* CALL records alone, in chunks too large for columns (the shim at very high call rates):
   * decoded by the row walk's fast path, gathered into runs of NCS_ROW_RUN */
  char rows[600];
  snprintf(rows, sizeof rows, "%s/bigrows.ncs", dir);
  CHECK(write_trace(rows, 160000, 80000, 0) == 0, "write a trace of CALL records in large row chunks");
  uint64_t longest = through_reader(rows, "large row chunks", 0, 0);
  CHECK(longest == 256, "large row chunks: CALL runs of 256 (trace.h), here %llu", (unsigned long long)longest);
  unlink(big);
  unlink(small);
  unlink(rows);
  rmdir(dir);
  return check_done();
}
