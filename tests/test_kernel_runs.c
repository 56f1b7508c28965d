/* test_kernel_runs.c — the reader's KERNEL runs (decoder/io/trace.h `kernels`, mux.h): a
 * visitor with `kernels` gets every KERNEL record the trace holds, decoded, in file order among
 * the CALL records, in runs (longer than one in row and in column chunks, never longer than
 * NCS_KERNEL_RUN), each with its stored form (a column chunk's rebuilt as its row body);
 * one whose body does not decode goes to its `raw` instead, at its place; a visitor without
 * `kernels` still gets them all through `raw`, also inside a mux beside one that has it; a stop
 * asked inside a run ends the read after it. The truth is the list the test wrote. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_trace_writer.h"
#include "io/mux.h"
#include "io/trace.h"

static uint64_t truth_hash, truth_kernels, truth_bad; /* of what was written */
static void mix(uint64_t *h, uint64_t v) { *h = (*h ^ v) * 1099511628211ull; }
static void see_kernel(uint64_t *h, const struct ncs_kernel *k) {
  mix(h, 15); mix(h, k->kclass); mix(h, k->stream); mix(h, k->start); mix(h, k->duration); mix(h, k->name);
}

static const uint8_t bad_body[] = {0xff}; /* a varint cut short: does not decode */

static void put_kernel(struct tw *t, const struct ncs_kernel *k) {
  uint8_t b[128];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, b, sizeof b);
  ncs_enc_kernel_body(&w, k);
  tw_room(t, 256);
  ncs_enc_record(&t->w, NCS_REC_KERNEL, b, w.len);
  t->nrec++;
  see_kernel(&truth_hash, k);
  truth_kernels++;
}

/* CALL records, each followed by one kernel; every 97th by a burst of 300 (longer than a run),
 * a malformed KERNEL inside it; `per_chunk` records a chunk */
static int write_trace(const char *path, int ncalls, int per_chunk) {
  struct tw t;
  truth_hash = 14695981039346656037ull;
  truth_kernels = truth_bad = 0;
  if (tw_open(&t, path, 1, 1)) return 1;
  struct ncs_kv kv[] = {{"host", "kruns", 5}};
  tw_kv(&t, kv, 1);
  uint64_t now = 1000000;
  for (int i = 0; i < ncalls; i++) {
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i + 1, .comm = 1, .seq = (uint64_t)i + 1,
                         .count = 1024, .datatype = 7, .root = -1};
    now += 1000 + (uint64_t)(i % 7);
    c.t_enter = now;
    c.t_exit = now + 200;
    tw_call(&t, &c);
    mix(&truth_hash, 5); mix(&truth_hash, c.tcall);
    int burst = i % 97 == 50 ? 300 : 1;
    for (int k = 0; k < burst; k++) {
      if (burst > 1 && k == 290) { /* the malformed one: to `raw`, at its place */
        tw_room(&t, 16);
        ncs_enc_record(&t.w, NCS_REC_KERNEL, bad_body, sizeof bad_body);
        t.nrec++;
        mix(&truth_hash, 99);
        truth_bad++;
      }
      struct ncs_kernel x = {.kclass = (uint32_t)(k % 2), .stream = 7, .start = now + 10 + (uint64_t)k * 3,
                             .duration = 2 + (uint64_t)(k % 5), .name = 1 + (uint32_t)(k % 3)};
      put_kernel(&t, &x);
    }
    if ((int)t.nrec >= per_chunk) tw_flush(&t, 0);
  }
  return tw_close(&t, 1) ? 1 : 0;
}

/* a receiver: the hash of what it saw in order, its runs */
struct rx { uint64_t hash, kernels, bad, runs, longest, calls, bare; int stop_after; };
static void rx_init(struct rx *r) { memset(r, 0, sizeof *r); r->hash = 14695981039346656037ull; }
static int rx_calls(void *ctx, const struct ncs_call *c, size_t n) {
  struct rx *r = ctx;
  for (size_t i = 0; i < n; i++) { mix(&r->hash, 5); mix(&r->hash, c[i].tcall); }
  r->calls += n;
  return 0;
}
static int rx_raw(void *ctx, const struct ncs_raw *x) {
  struct rx *r = ctx;
  if (x->type != NCS_REC_KERNEL) return 0;
  struct ncs_kernel k;
  struct ncs_rbuf b;
  if (ncs_dec_kernel(ncs_rbuf_on(&b, x->body, x->len), &k) != 0) { mix(&r->hash, 99); r->bad++; return 0; }
  see_kernel(&r->hash, &k);
  r->kernels++;
  return 0;
}
static int rx_kernels(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n) {
  struct rx *r = ctx;
  r->runs++;
  if (n > r->longest) r->longest = n;
  if (!raw) r->bare++; /* a column chunk's run: no stored bodies (trace.h) */
  for (size_t i = 0; i < n; i++) {
    struct ncs_kernel again; /* the stored form is handed over too: the same record */
    struct ncs_rbuf b;
    if (raw && (raw[i].type != NCS_REC_KERNEL || ncs_dec_kernel(ncs_rbuf_on(&b, raw[i].body, raw[i].len), &again) != 0 ||
                again.start != k[i].start || again.duration != k[i].duration))
      mix(&r->hash, 12345); /* spoils the hash */
    see_kernel(&r->hash, &k[i]);
  }
  r->kernels += n;
  return r->stop_after && r->kernels >= (uint64_t)r->stop_after;
}
static int count_columns(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  (void)index; (void)dropped; (void)off;
  if (flags & NCS_CHUNK_F_COLUMNS) ++*(int *)ctx;
  return 0;
}

static void check_file(const char *path, const char *what, int want_columns) {
  struct rx plain, runs, m_plain, m_runs;
  rx_init(&plain); rx_init(&runs); rx_init(&m_plain); rx_init(&m_runs);
  struct ncs_read_status s1, s2, s3;
  int cols = 0;
  struct ncs_mux cm = {0};
  cm.v[cm.n++] = (struct ncs_visitor){.ctx = &plain, .calls = rx_calls, .raw = rx_raw};
  cm.v[cm.n++] = (struct ncs_visitor){.ctx = &cols, .chunk = count_columns};
  struct ncs_visitor vc;
  ncs_mux_build(&cm, &vc);
  int rc1 = ncs_trace_read(path, &vc, &s1);
  struct ncs_visitor v2 = {.ctx = &runs, .calls = rx_calls, .raw = rx_raw, .kernels = rx_kernels};
  int rc2 = ncs_trace_read(path, &v2, &s2);
  struct ncs_mux m = {0};
  m.v[m.n++] = (struct ncs_visitor){.ctx = &m_runs, .calls = rx_calls, .raw = rx_raw, .kernels = rx_kernels};
  m.v[m.n++] = (struct ncs_visitor){.ctx = &m_plain, .calls = rx_calls, .raw = rx_raw};
  struct ncs_visitor vm;
  ncs_mux_build(&m, &vm);
  int rc3 = ncs_trace_read(path, &vm, &s3);
  CHECK(want_columns ? cols > 0 : cols == 0, "%s: %d column chunks", what, cols);
  CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0 && s1.records == s2.records && s1.records == s3.records,
        "%s: read through raw, through kernels and through a mux of both: rc 0, %llu records each", what,
        (unsigned long long)s1.records);
  CHECK(plain.kernels == truth_kernels && plain.bad == truth_bad && plain.hash == truth_hash,
        "%s: through raw: the %llu kernels and %llu malformed ones written, in order among the calls", what,
        (unsigned long long)truth_kernels, (unsigned long long)truth_bad);
  CHECK(runs.kernels == truth_kernels && runs.bad == truth_bad && runs.hash == truth_hash,
        "%s: through kernels: the same (%llu kernels in %llu runs; the malformed one through raw: %llu)", what,
        (unsigned long long)runs.kernels, (unsigned long long)runs.runs, (unsigned long long)runs.bad);
  CHECK(m_runs.hash == truth_hash && m_plain.hash == truth_hash && m_runs.bad == truth_bad && m_plain.bad == truth_bad,
        "%s: in a mux, the receiver with kernels and the one with raw only both see it all in order", what);
  /* a column chunk's runs come without stored bodies (the mux rebuilt them for the raw-only
   * receiver above); a row chunk's always with them */
  CHECK(want_columns ? runs.bare > 0 && m_runs.bare > 0 : runs.bare == 0 && m_runs.bare == 0,
        "%s: %llu runs without stored bodies (%s)", what, (unsigned long long)runs.bare,
        want_columns ? "a column chunk's" : "none: rows");
  /* columns: a run ends with its block of values (NCS_COLR_BLOCK) or before another record */
  CHECK(runs.longest <= NCS_KERNEL_RUN && runs.longest >= (want_columns ? 128u : NCS_KERNEL_RUN),
        "%s: runs of at most %d kernels (longest %llu)", what, NCS_KERNEL_RUN, (unsigned long long)runs.longest);
  /* a stop inside a run: the read ends after it */
  rx_init(&runs);
  runs.stop_after = 1000;
  struct ncs_read_status s4;
  v2.ctx = &runs;
  ncs_trace_read(path, &v2, &s4);
  CHECK(s4.stopped && runs.kernels >= 1000 && runs.kernels < truth_kernels && s4.records < s2.records,
        "%s: a stop asked inside a run ends the read (%llu kernels seen of %llu)", what,
        (unsigned long long)runs.kernels, (unsigned long long)truth_kernels);
}

int main(void) {
  (void)tw_golden_rank; /* the shared writer's fixture, not used here */
  struct ncs_kernel k;
  struct ncs_rbuf b;
  CHECK(ncs_dec_kernel(ncs_rbuf_on(&b, bad_body, sizeof bad_body), &k) != 0, "the malformed KERNEL body does not decode");
  char dir[] = "/tmp/ncs-kruns.XXXXXX";
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  char rows[600], cols[600];
  snprintf(rows, sizeof rows, "%s/rows.ncs", dir);
  snprintf(cols, sizeof cols, "%s/cols.ncs", dir);
  /* rows: chunks over NCS_CHUNK_COLUMNS_MAX (1 MiB); columns: 2,000 records a chunk */
  CHECK(write_trace(rows, 20000, 1000000) == 0, "write a trace of large row chunks");
  check_file(rows, "row chunks", 0);
  CHECK(write_trace(cols, 3000, 2000) == 0, "write a trace of column chunks");
  check_file(cols, "column chunks", 1);
  unlink(rows);
  unlink(cols);
  rmdir(dir);
  return check_done();
}
