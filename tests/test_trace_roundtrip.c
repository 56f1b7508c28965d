/* test_trace_roundtrip.c — varint, CALL and record round trips through encode.h, real files
 * and the reader (decoder/io/trace.c); JSON escaping. With `--write DIR` it instead writes the
 * golden fixture traces used by tests/test_decoder_cli.sh (rank0.ncs, rank1.ncs final;
 * cut.ncs without a final chunk; hostile.ncs with control bytes in its strings). For
 * scripts/bench-decoder*.sh: `--bench-write FILE N [PER_CHUNK]` writes a steady DDP-like trace
 * of N CALL records (PER_CHUNK per chunk, default 65536: 1.3 MB of rows, over chunk.h's column
 * limit, so row chunks; 16384 gives column chunks) and `--bench-read PATH...` (files, or
 * directories of *.ncs) reads every record, printing records/s, ns/record and peak RSS. */
#include <math.h>
#include <sys/resource.h>
#include <time.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mix.h"
#include "check.h"
#include "base/json.h"
#include "test_trace_writer.h"
#include "io/trace.h"

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64: the step, then base/mix.h's finaliser */
  return ncs_mix64(rng_state += 0x9e3779b97f4a7c15ull);
}
/* values with every byte length, extremes included */
static uint64_t rnd_val(void) {
  uint64_t r = rnd();
  switch (r % 5) {
  case 0: return r >> (r % 64);
  case 1: return UINT64_MAX - (r % 3);
  case 2: return r % 300;
  default: return r;
  }
}

static void random_call(struct ncs_call *c) {
  c->op = (uint32_t)rnd_val(); c->thread = (uint32_t)rnd_val(); c->comm = (uint32_t)rnd_val();
  c->datatype = (uint32_t)rnd_val(); c->redop = (uint32_t)rnd_val(); c->depth = (uint32_t)rnd_val();
  c->callsite = (uint32_t)rnd_val(); c->flags = (uint32_t)rnd_val();
  c->root = (int32_t)rnd_val(); c->rc = (int32_t)rnd_val();
  c->tcall = rnd_val(); c->seq = rnd_val(); c->count = rnd_val(); c->stream = rnd_val();
  c->t_enter = rnd_val(); c->t_exit = rnd_val(); c->group = rnd_val();
}

static void test_varint(void) {
  uint8_t b[16];
  int ok = 1;
  static const uint64_t v[] = {0, 1, 127, 128, 16383, 16384, (1ull << 35) - 1, 1ull << 63, UINT64_MAX};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    size_t n = ncs_put_varint(b, v[i]);
    const uint8_t *p = b;
    uint64_t out;
    if (ncs_get_varint(&p, b + n, &out) || out != v[i] || p != b + n) ok = 0;
    p = b;
    if (n > 1 && ncs_get_varint(&p, b + n - 1, &out) == 0) ok = 0; /* cut short */
  }
  CHECK(ok, "varint round trip and cut-short detection");
  CHECK(ncs_put_varint(b, UINT64_MAX) == 10, "varint of 2^64-1 takes 10 bytes");
  memset(b, 0x80, 11); b[10] = 0;
  const uint8_t *p = b; uint64_t out;
  CHECK(ncs_get_varint(&p, b + 11, &out) == -1, "an 11-byte varint is refused");
  ok = 1;
  static const int64_t z[] = {0, -1, 1, INT64_MIN, INT64_MAX, -123456789};
  for (size_t i = 0; i < sizeof z / sizeof *z; i++) if (ncs_unzigzag(ncs_zigzag(z[i])) != z[i]) ok = 0;
  CHECK(ok && ncs_zigzag(-1) == 1 && ncs_zigzag(1) == 2, "zigzag round trip");
}

static void test_call_codec(void) {
  uint8_t buf[NCS_CALL_MAX];
  struct ncs_call_delta de, dd;
  struct ncs_rbuf r;
  ncs_call_delta_reset(&de); ncs_call_delta_reset(&dd);
  int ok = 1; size_t maxn = 0;
  for (int i = 0; i < 200000; i++) {
    struct ncs_call c, o;
    random_call(&c);
    size_t n = ncs_encode_call(buf, &de, &c);
    if (n > maxn) maxn = n;
    if (buf[0] != NCS_REC_CALL || buf[1] != n - 2 || ncs_dec_call(ncs_rbuf_on(&r, buf + 2, buf[1]), &dd, &o) ||
        memcmp(&o, &c, sizeof c) != 0) { ok = 0; break; }
  }
  CHECK(ok, "200000 random CALL records encode and decode identically (delta state kept)");
  CHECK(maxn <= NCS_CALL_MAX, "CALL record at most NCS_CALL_MAX bytes (largest seen %zu)", maxn);
  /* a steady loop: deltas make each call small */
  ncs_call_delta_reset(&de);
  struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .comm = 1, .datatype = 7, .redop = 0,
                       .root = -1, .count = 1 << 20, .stream = 0x7f00deadbeef, .t_enter = 5000000000ull};
  size_t n = 0;
  for (int i = 0; i < 100; i++) {
    c.tcall++; c.seq++; c.t_enter += 1000000; c.t_exit = c.t_enter + 5000;
    n = ncs_encode_call(buf, &de, &c);
  }
  CHECK(n <= 24, "steady-loop CALL record is small (%zu bytes before compression)", n);
  /* a short body: missing trailing fields read as 0 */
  uint8_t body[3] = {NCS_OP_Send, 2, ncs_zigzag(5)};
  struct ncs_call o;
  ncs_call_delta_reset(&dd);
  CHECK(ncs_dec_call(ncs_rbuf_on(&r, body, 3), &dd, &o) == 0 && o.op == NCS_OP_Send && o.thread == 2 && o.tcall == 5 &&
        o.count == 0 && o.root == 0 && o.flags == 0, "CALL body cut after 3 fields: the rest read as 0");
  uint8_t bad[2] = {5, 0x80};
  CHECK(ncs_dec_call(ncs_rbuf_on(&r, bad, 2), &dd, &o) == -1, "CALL body whose varint runs past the end is refused");
}

/* ---- file round trip: every record type, several chunks ---- */
enum { NREC = 5000 };
struct expect { int n, bad; uint64_t seed; char kind[16]; int chunks; };

static void gen_thread(struct ncs_thread *t, char *name) {
  t->thread = (uint32_t)rnd(); t->tid = rnd_val();
  size_t l = rnd() % 20;
  for (size_t i = 0; i < l; i++) name[i] = (char)(1 + rnd() % 255);
  name[l] = 0; t->name = name;
}
/* Record i of the sequence: its type, filled in the matching struct. */
struct any { int type; struct ncs_call call; struct ncs_thread th; struct ncs_comm cm; struct ncs_comm_end ce;
             struct ncs_drop dr; struct ncs_clock ck; struct ncs_gpu_time gt; struct ncs_log_line ll;
             struct ncs_module md; struct ncs_callsite cs; struct ncs_frame fr[4]; char s[4][32]; };
static void gen_any(struct any *a) {
  static const int types[] = {NCS_REC_CALL, NCS_REC_CALL, NCS_REC_CALL, NCS_REC_THREAD, NCS_REC_COMM,
                              NCS_REC_COMM_END, NCS_REC_DROP, NCS_REC_CLOCK, NCS_REC_GPU_TIME,
                              NCS_REC_NCCL_LOG, NCS_REC_MODULE, NCS_REC_CALLSITE};
  memset(a, 0, sizeof *a);
  a->type = types[rnd() % (sizeof types / sizeof *types)];
  switch (a->type) {
  case NCS_REC_CALL: random_call(&a->call); break;
  case NCS_REC_THREAD: gen_thread(&a->th, a->s[0]); break;
  case NCS_REC_COMM:
    a->cm.comm = (uint32_t)rnd(); a->cm.init_op = (uint32_t)rnd_val(); a->cm.flags = (uint32_t)rnd();
    a->cm.thread = (uint32_t)rnd(); a->cm.comm_id = rnd(); a->cm.handle = rnd_val(); a->cm.parent_id = rnd();
    a->cm.t_enter = rnd_val(); a->cm.t_exit = rnd_val(); a->cm.rank = (int32_t)rnd();
    a->cm.nranks = (int32_t)rnd(); a->cm.device = (int32_t)rnd(); a->cm.rc = (int32_t)rnd();
    { struct ncs_thread t; gen_thread(&t, a->cm.name); } /* 5.3: name and color */
    a->cm.color = (int32_t)rnd();
    break;
  case NCS_REC_COMM_END:
    a->ce.comm = (uint32_t)rnd(); a->ce.op = (uint32_t)rnd(); a->ce.thread = (uint32_t)rnd();
    a->ce.rc = (int32_t)rnd(); a->ce.t_enter = rnd_val(); a->ce.t_exit = rnd_val();
    break;
  case NCS_REC_DROP: a->dr.reason = (uint32_t)rnd(); a->dr.thread = (uint32_t)rnd(); a->dr.records = rnd_val(); break;
  case NCS_REC_CLOCK: a->ck.realtime_ns = rnd_val(); a->ck.monotonic_ns = rnd_val(); a->ck.uncertainty_ns = rnd_val(); break;
  case NCS_REC_GPU_TIME:
    a->gt.kind = (uint32_t)rnd(); a->gt.thread = (uint32_t)rnd(); a->gt.flags = (uint32_t)rnd();
    a->gt.ref = rnd_val(); a->gt.gpu_start = rnd_val(); a->gt.gpu_end = rnd_val();
    break;
  case NCS_REC_NCCL_LOG: {
    size_t l = rnd() % 31;
    for (size_t i = 0; i < l; i++) a->s[0][i] = (char)(rnd() % 256); /* NULs included */
    a->ll.t = rnd_val(); a->ll.line = a->s[0]; a->ll.len = l;
    break;
  }
  case NCS_REC_MODULE: { struct ncs_thread t; gen_thread(&t, a->s[0]); a->md.module = t.thread; a->md.base = t.tid; a->md.path = a->s[0];
    snprintf(a->md.build_id, sizeof a->md.build_id, "%016llx", (unsigned long long)rnd_val()); break; }
  case NCS_REC_CALLSITE: {
    a->cs.id = (uint32_t)rnd(); a->cs.nframes = (uint32_t)(rnd() % 5);
    for (uint32_t i = 0; i < a->cs.nframes; i++) {
      struct ncs_thread t; gen_thread(&t, a->s[i]);
      a->fr[i].module = t.thread; a->fr[i].offset = t.tid; a->fr[i].symbol = a->s[i]; a->fr[i].symbol_offset = rnd_val();
    }
    a->cs.frames = a->fr;
    break;
  }
  }
}

struct rt { int i, bad, chunks, process_ok, raw_seen, col_chunks; };
static struct any cur;
static int next_is(struct rt *r, int type) {
  gen_any(&cur);
  r->i++;
  if (cur.type != type) { r->bad++; return 0; }
  return 1;
}
static int streq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }
static int v_call(void *c, const struct ncs_call *x) { struct rt *r = c; if (next_is(r, NCS_REC_CALL) && memcmp(x, &cur.call, sizeof *x)) r->bad++; return 0; }
static int v_thread(void *c, const struct ncs_thread *x) { struct rt *r = c; if (next_is(r, NCS_REC_THREAD) && (x->thread != cur.th.thread || x->tid != cur.th.tid || !streq(x->name, cur.th.name))) r->bad++; return 0; }
/* field by field past rc: name is NUL-ended (the bytes after it are not the writer's) and the
 * struct has padding after color */
static int v_comm(void *c, const struct ncs_comm *x) {
  struct rt *r = c;
  if (next_is(r, NCS_REC_COMM) && (memcmp(x, &cur.cm, offsetof(struct ncs_comm, name)) ||
                                   !streq(x->name, cur.cm.name) || x->color != cur.cm.color)) r->bad++;
  return 0;
}
static int v_comm_end(void *c, const struct ncs_comm_end *x) { struct rt *r = c; if (next_is(r, NCS_REC_COMM_END) && memcmp(x, &cur.ce, sizeof *x)) r->bad++; return 0; }
static int v_drop(void *c, const struct ncs_drop *x) { struct rt *r = c; if (next_is(r, NCS_REC_DROP) && memcmp(x, &cur.dr, sizeof *x)) r->bad++; return 0; }
static int v_clock(void *c, const struct ncs_clock *x) { struct rt *r = c; if (next_is(r, NCS_REC_CLOCK) && memcmp(x, &cur.ck, sizeof *x)) r->bad++; return 0; }
static int v_gpu(void *c, const struct ncs_gpu_time *x) { struct rt *r = c; if (next_is(r, NCS_REC_GPU_TIME) && (x->kind != cur.gt.kind || x->thread != cur.gt.thread || x->flags != cur.gt.flags || x->ref != cur.gt.ref || x->gpu_start != cur.gt.gpu_start || x->gpu_end != cur.gt.gpu_end)) r->bad++; return 0; }
static int v_log(void *c, const struct ncs_log_line *x) { struct rt *r = c; if (next_is(r, NCS_REC_NCCL_LOG) && (x->t != cur.ll.t || x->len != cur.ll.len || memcmp(x->line, cur.ll.line, x->len) || x->line[x->len])) r->bad++; return 0; }
static int v_module(void *c, const struct ncs_module *x) { struct rt *r = c; if (next_is(r, NCS_REC_MODULE) && (x->module != cur.md.module || x->base != cur.md.base || !streq(x->path, cur.md.path) || !streq(x->build_id, cur.md.build_id))) r->bad++; return 0; }
static int v_callsite(void *c, const struct ncs_callsite *x) {
  struct rt *r = c;
  if (!next_is(r, NCS_REC_CALLSITE)) return 0;
  if (x->id != cur.cs.id || x->nframes != cur.cs.nframes) { r->bad++; return 0; }
  for (uint32_t i = 0; i < x->nframes; i++)
    if (x->frames[i].module != cur.fr[i].module || x->frames[i].offset != cur.fr[i].offset ||
        x->frames[i].symbol_offset != cur.fr[i].symbol_offset || !streq(x->frames[i].symbol, cur.fr[i].symbol)) r->bad++;
  return 0;
}
static int v_process(void *c, const struct ncs_process *p) {
  struct rt *r = c;
  const char *cmd = ncs_process_get(p, "cmdline");
  r->process_ok = p->pid == 4321 && p->major == NCS_FORMAT_MAJOR && p->nkv == 2 && streq(ncs_process_get(p, "host"), "h") &&
                  cmd && p->kv[1].value_len == 5 && memcmp(cmd, "a\0b\0c", 6) == 0 && !ncs_process_get(p, "nope");
  return 0;
}
static int v_raw(void *c, const struct ncs_raw *x) { struct rt *r = c; r->raw_seen += (x->type == 99 && x->len == 3 && memcmp(x->body, "xyz", 3) == 0); return 0; }
static int v_chunk(void *c, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) { struct rt *r = c; if (index != (uint64_t)r->chunks) r->bad++; r->chunks++; r->col_chunks += (flags & NCS_CHUNK_F_COLUMNS) != 0; return 0; }

/* Random records of every type, flushed every `per_chunk` records: 700 gives small chunks (rows
 * or columns, whichever is smaller), 3000 chunks over 64 KiB, always columns (chunk.h), read
 * back without rows (io/trace.c: CALL and GPU_TIME a block at a time, several blocks and a
 * partial one per chunk; the other split records through their row body). */
static void test_file_roundtrip(const char *dir, int per_chunk) {
  char path[512];
  snprintf(path, sizeof path, "%s/rt%d.ncs", dir, per_chunk);
  struct tw t;
  CHECK(tw_open(&t, path, 4321, 42) == 0, "open round-trip file");
  struct ncs_kv kv[2] = {{"host", "h", 1}, {"cmdline", "a\0b\0c", 5}};
  tw_kv(&t, kv, 2);
  uint8_t unk[16]; struct ncs_wbuf w; ncs_wbuf_init(&w, unk, sizeof unk);
  ncs_enc_record(&w, 99, "xyz", 3);
  ncs_w_bytes(&t.w, unk, w.len); t.nrec++; /* an unknown record type: skipped by length */
  rng_state = 7;
  int chunks = 1;
  for (int i = 0; i < NREC; i++) {
    struct any a; gen_any(&a);
    switch (a.type) {
    case NCS_REC_CALL: tw_call(&t, &a.call); break;
    case NCS_REC_THREAD: tw_thread(&t, &a.th); break;
    case NCS_REC_COMM: tw_comm(&t, &a.cm); break;
    case NCS_REC_COMM_END: tw_comm_end(&t, &a.ce); break;
    case NCS_REC_DROP: tw_drop(&t, &a.dr); break;
    case NCS_REC_CLOCK: tw_clock(&t, &a.ck); break;
    case NCS_REC_GPU_TIME: tw_gpu_time(&t, &a.gt); break;
    case NCS_REC_NCCL_LOG: tw_log_line(&t, &a.ll); break;
    case NCS_REC_MODULE: tw_module(&t, &a.md); break;
    case NCS_REC_CALLSITE: tw_callsite(&t, &a.cs); break;
    }
    if (i % per_chunk == per_chunk - 1) { tw_flush(&t, 0); chunks++; }
  }
  CHECK(!t.w.overflow && tw_close(&t, 1) == 0, "write %d random records of every type", NREC);
  struct rt r = {0};
  struct ncs_visitor v = {.ctx = &r, .process = v_process, .thread = v_thread, .comm = v_comm,
                          .comm_end = v_comm_end, .call = v_call, .callsite = v_callsite, .module = v_module,
                          .drop = v_drop, .clock = v_clock, .gpu_time = v_gpu, .log_line = v_log,
                          .raw = v_raw, .chunk = v_chunk};
  struct ncs_read_status st;
  rng_state = 7;
  int rc = ncs_trace_read(path, &v, &st);
  CHECK(rc == 0 && !st.truncated && !st.damaged && st.final_seen && !st.error[0], "round-trip file reads whole (rc %d: %s)", rc, st.error);
  CHECK(r.i == NREC && r.bad == 0, "every record read back identical, in order (%d read, %d differ)", r.i, r.bad);
  CHECK(r.chunks == chunks && st.chunks == (uint64_t)chunks && st.records == NREC + 2, "chunk callbacks in index order (%d chunks)", r.chunks);
  CHECK(r.process_ok, "PROCESS pairs and file header (cmdline with NULs, missing key -> NULL)");
  CHECK(r.raw_seen == 1, "an unknown record type reaches the raw callback and is skipped by length");
  if (per_chunk >= 3000)
    CHECK(r.col_chunks >= NREC / per_chunk, "chunks over 64 KiB were written as columns (%d of %d chunks)", r.col_chunks,
          r.chunks);
}

/* CALL_RUN (format 5.0, encode.h): the same calls written as CALL rows (ncs_enc_call) and by
 * the shim writer's encoder (ncs_encode_call_or_run: runs of like calls as CALL_RUN records),
 * with THREAD and GPU_TIME records between them and chunks cut at random, read back through
 * both of the reader's row walks (calls one at a time; gathered runs): the same calls in the
 * same order, and the GPU_TIME records' own delta state untouched. */
struct runs_rd { struct ncs_call *c; size_t n, cap; uint64_t other; };
static int runs_call(void *ctx, const struct ncs_call *x) {
  struct runs_rd *r = ctx;
  if (r->n == r->cap) return 1;
  r->c[r->n++] = *x;
  return 0;
}
static int runs_calls(void *ctx, const struct ncs_call *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (runs_call(ctx, &x[i])) return 1;
  return 0;
}
static int runs_gpu(void *ctx, const struct ncs_gpu_time *x) { ((struct runs_rd *)ctx)->other += x->gpu_start + x->kind; return 0; }
static int runs_thread(void *ctx, const struct ncs_thread *x) { ((struct runs_rd *)ctx)->other += x->tid; return 0; }
static void test_call_runs(const char *dir) {
  enum { N = 300000 };
  char pa[512], pb[512];
  snprintf(pa, sizeof pa, "%s/rows.ncs", dir);
  snprintf(pb, sizeof pb, "%s/runs.ncs", dir);
  struct tw a, b;
  CHECK(tw_open(&a, pa, 11, 1) == 0 && tw_open(&b, pb, 11, 1) == 0, "CALL_RUN: open two files");
  struct ncs_call_run m;
  ncs_call_run_reset(&m);
  uint8_t *open = NULL;
  struct ncs_call c = {.op = 3, .thread = 1, .comm = 2, .datatype = 7, .root = -1, .count = 8, .tcall = 1, .seq = 1,
                       .t_enter = 1000, .t_exit = 1070};
  uint64_t tstep = 1000, runs = 0;
  rng_state = 99;
#define RUNS_FLUSH_() { ncs_call_run_close(&open, b.raw + b.w.len); tw_flush(&a, 0); tw_flush(&b, 0); ncs_call_run_reset(&m); }
  for (int i = 0; i < N; i++) {
    unsigned r = (unsigned)(rnd() % 1000);
    c.tcall++;
    c.seq++;
    if (r < 1) random_call(&c); /* long values: no run until the call below */
    else if (r < 3) c = (struct ncs_call){.op = (uint32_t)(rnd() % 9), .thread = 1, .comm = (uint32_t)(rnd() % 4), .count = rnd() % 5000,
                                          .tcall = c.tcall, .seq = rnd() % 100, .t_enter = c.t_enter};
    else if (r < 15) c.count += rnd() % 3;
    else if (r < 25) c.flags ^= 1u << (rnd() % 4);
    else if (r < 30) c.thread = 1 + (uint32_t)(rnd() % 3);
    else if (r < 35) c.rc = (int32_t)(rnd() % 9) - 4;
    else if (r < 40) { c.group += 1 + rnd() % 2; c.depth = (uint32_t)(rnd() % 2); }
    else if (r < 44) c.stream = rnd() % 4 ? c.stream + 64 : rnd();
    else if (r < 46) c.callsite = (uint32_t)rnd();
    else if (r < 48) RUNS_FLUSH_()
    else if (r < 52) { /* another record between calls: the run is closed before it */
      ncs_call_run_close(&open, b.raw + b.w.len);
      if (r & 1) {
        struct ncs_thread th = {.thread = (uint32_t)r, .tid = rnd() % 100000, .name = "t"};
        tw_thread(&a, &th);
        tw_thread(&b, &th);
      } else {
        struct ncs_gpu_time g = {.kind = 1, .thread = 1, .ref = c.tcall, .gpu_start = c.t_enter + 5, .gpu_end = c.t_enter + 9};
        tw_gpu_time(&a, &g);
        tw_gpu_time(&b, &g);
      }
    }
    if (r % 7 == 0) tstep = r % 3 ? 1 + rnd() % 200000 : (uint64_t)0 - rnd() % 5000;
    c.t_enter += tstep;
    c.t_exit = c.t_enter + (r % 11 == 0 ? rnd() : rnd() % 300);
    tw_call(&a, &c);
    if (b.w.cap - b.w.len < NCS_CALL_MAX + 64) RUNS_FLUSH_()
    uint8_t *was = open;
    uint8_t *p = ncs_encode_call_or_run(b.raw + b.w.len, &open, &b.nrec, &b.d, &m, &c);
    runs += open && open != was;
    b.w.len = (size_t)(p - b.raw);
  }
  ncs_call_run_close(&open, b.raw + b.w.len);
#undef RUNS_FLUSH_
  long sa = ftell(a.f), sb = ftell(b.f);
  CHECK(tw_close(&a, 1) == 0 && tw_close(&b, 1) == 0 && runs > 1000, "CALL_RUN: %d calls written both ways (%llu CALL_RUN records)", N,
        (unsigned long long)runs);
  for (int gather = 0; gather < 2; gather++) {
    struct runs_rd ra = {calloc(N, sizeof(struct ncs_call)), 0, N, 0}, rb = {calloc(N, sizeof(struct ncs_call)), 0, N, 0};
    struct ncs_visitor va = {.ctx = &ra, .gpu_time = runs_gpu, .thread = runs_thread}, vb = va;
    vb.ctx = &rb;
    if (gather) va.calls = vb.calls = runs_calls;
    else va.call = vb.call = runs_call;
    struct ncs_read_status sta, stb;
    int rca = ncs_trace_read(pa, &va, &sta), rcb = ncs_trace_read(pb, &vb, &stb);
    CHECK(rca == 0 && rcb == 0 && !stb.damaged && stb.final_seen, "CALL_RUN file reads whole (%s: rc %d %s)",
          gather ? "gathered" : "one at a time", rcb, stb.error);
    CHECK(ra.n == N && rb.n == N && !memcmp(ra.c, rb.c, N * sizeof *ra.c) && ra.other == rb.other && sta.records == stb.records,
          "CALL_RUN: the same %d calls, in order, as from CALL rows (%s; %zu and %zu read; records %llu and %llu)", N,
          gather ? "gathered" : "one at a time", ra.n, rb.n, (unsigned long long)sta.records, (unsigned long long)stb.records);
    free(ra.c);
    free(rb.c);
  }
  (void)sa; (void)sb;
}

struct trail_ctx { struct ncs_comm_end *ce; struct ncs_drop *dr; };
static int trail_ce(void *c, const struct ncs_comm_end *x) { *((struct trail_ctx *)c)->ce = *x; return 0; }
static int trail_dr(void *c, const struct ncs_drop *x) { *((struct trail_ctx *)c)->dr = *x; return 0; }

static void test_trailing_fields(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/trail.ncs", dir);
  struct tw t;
  tw_open(&t, path, 1, 1);
  /* a COMM_END with two extra trailing fields (a newer writer), and a DROP with one field */
  size_t m = ncs_rec_begin(&t.w, NCS_REC_COMM_END);
  struct ncs_comm_end ce = {3, NCS_OP_CommAbort, 2, -1, 10, 20};
  ncs_enc_comm_end_body(&t.w, &ce);
  ncs_w_varint(&t.w, 12345); ncs_w_str(&t.w, "future");
  ncs_rec_end(&t.w, m); t.nrec++;
  m = ncs_rec_begin(&t.w, NCS_REC_DROP); ncs_w_varint(&t.w, 4); ncs_rec_end(&t.w, m); t.nrec++;
  tw_close(&t, 1);
  struct ncs_comm_end got_ce; struct ncs_drop got_dr;
  memset(&got_ce, 0xff, sizeof got_ce); memset(&got_dr, 0xff, sizeof got_dr);
  struct trail_ctx ctx = {&got_ce, &got_dr};
  struct ncs_visitor v = {0};
  v.ctx = &ctx;
  v.comm_end = trail_ce;
  v.drop = trail_dr;
  struct ncs_read_status st;
  int rc = ncs_trace_read(path, &v, &st);
  CHECK(rc == 0 && memcmp(&got_ce, &ce, sizeof ce) == 0, "trailing fields of a newer writer are ignored");
  CHECK(got_dr.reason == 4 && got_dr.records == 0 && got_dr.thread == 0, "missing trailing fields read as 0");
}
/* The closing pair told ahead (trace.h, struct ncs_stretch): on column chunks whose ends vary
 * (a CLOCK last after CALL, GPU_TIME and INFLIGHT records; another record between the last
 * stretch and the CLOCK; two CLOCK records of different pairs; a CLOCK stored whole, with a
 * newer writer's trailing field; no CLOCK last; another record inside the chunk), every stretch
 * told a pair is followed by exactly `after` CALL, GPU_TIME or INFLIGHT records, then a CLOCK
 * record of that pair, then the chunk's end; and every stretch so followed is told. */
enum { CA_S, CA_C, CA_I, CA_O, CA_E };
struct ca_ev { int kind; size_t n, after; int told; struct ncs_clock k; };
struct ca_rd { struct ca_ev *e; size_t n, cap; int rows; };
static void ca_push(struct ca_rd *r, struct ca_ev e) { if (r->n < r->cap) r->e[r->n++] = e; }
static int ca_stretch(void *ctx, const struct ncs_stretch *s) {
  struct ca_ev e = {CA_S, s->nc + s->ng, s->after, s->closing != NULL, {0, 0, 0}};
  if (s->closing) e.k = *s->closing;
  ca_push(ctx, e);
  return 0;
}
static int ca_clock(void *ctx, const struct ncs_clock *k) { ca_push(ctx, (struct ca_ev){CA_C, 1, 0, 0, *k}); return 0; }
static int ca_inflight(void *ctx, const struct ncs_inflight *x) { (void)x; ca_push(ctx, (struct ca_ev){CA_I, 1, 0, 0, {0, 0, 0}}); return 0; }
static int ca_drop(void *ctx, const struct ncs_drop *x) { (void)x; ca_push(ctx, (struct ca_ev){CA_O, 1, 0, 0, {0, 0, 0}}); return 0; }
static int ca_calls(void *ctx, const struct ncs_call *x, size_t n) { (void)x; (void)n; ((struct ca_rd *)ctx)->rows++; return 0; }
static int ca_gpus(void *ctx, const struct ncs_gpu_time *x, size_t n) { (void)x; (void)n; ((struct ca_rd *)ctx)->rows++; return 0; }
static int ca_chunk(void *ctx, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t offset) {
  (void)index; (void)dropped; (void)flags; (void)offset;
  ca_push(ctx, (struct ca_ev){CA_E, 0, 0, 0, {0, 0, 0}});
  return 0;
}
static void test_closing_ahead(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/closing.ncs", dir);
  struct tw t;
  CHECK(tw_open(&t, path, 77, 1000) == 0, "open closing-pair file");
  rng_state = 11;
  uint64_t mono = 5000000, tcall = 1;
  int chunks = 24;
  for (int k = 0; k < chunks; k++) {
    int v = k % 6, n = 3000 + (int)(rnd() % 2000);
    struct ncs_drop dr = {1, 0, 3};
    for (int i = 0; i < n; i++) {
      mono += 1000 + rnd() % 1000;
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .comm = 1, .tcall = tcall, .seq = tcall, .count = 1024,
                           .t_enter = mono, .t_exit = mono + 300};
      struct ncs_gpu_time g = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = tcall++, .gpu_start = mono + 50, .gpu_end = mono + 900};
      tw_call(&t, &c);
      if (rnd() % 8) tw_gpu_time(&t, &g);
      if (v == 1 && i == n / 2) tw_drop(&t, &dr); /* another record inside the chunk */
      if (v == 3 && i == n / 3) { struct ncs_clock mid = {mono + 7000000, mono, 9}; tw_clock(&t, &mid); }
    }
    if (k % 2) /* calls in flight at the chunk's end */
      for (int j = 0; j < 3; j++) {
        struct ncs_inflight x = {.kind = 1, .thread = 1, .tcall = tcall - 1 - (uint64_t)j};
        ncs_enc_inflight(&t.w, &x);
        t.nrec++;
      }
    if (v == 2) tw_drop(&t, &dr); /* between the last stretch and the pair */
    struct ncs_clock end = {mono + 1000 + 5000000 + (uint64_t)k * 13, mono + 1000, 40 + (uint64_t)k};
    if (v == 4) { /* stored whole: a trailing field the reader does not know */
      size_t m = ncs_rec_begin(&t.w, NCS_REC_CLOCK);
      ncs_enc_clock_body(&t.w, &end);
      ncs_w_varint(&t.w, 99);
      ncs_rec_end(&t.w, m);
      t.nrec++;
    } else if (v != 5) {
      tw_clock(&t, &end);
    } else {
      tw_drop(&t, &dr); /* no CLOCK last */
    }
    tw_flush(&t, 0);
  }
  CHECK(!t.w.overflow && tw_close(&t, 1) == 0, "write %d chunks of calls with varied ends", chunks);
  struct ca_rd r = {calloc(200000, sizeof(struct ca_ev)), 0, 200000, 0};
  struct ncs_visitor vis = {.ctx = &r, .stretch = ca_stretch, .calls = ca_calls, .gpu_times = ca_gpus, .clock = ca_clock,
                            .inflight = ca_inflight, .drop = ca_drop, .chunk = ca_chunk};
  struct ncs_read_status st;
  int rc = ncs_trace_read(path, &vis, &st);
  int told = 0, missed = 0, wrong = 0, whole = 0;
  for (size_t i = 0; i < r.n; i++) {
    if (r.e[i].kind != CA_S) continue;
    size_t j = i + 1, after = 0;
    while (j < r.n && (r.e[j].kind == CA_S || r.e[j].kind == CA_I)) after += r.e[j++].n;
    int is = j + 1 < r.n && r.e[j].kind == CA_C && r.e[j + 1].kind == CA_E;
    if (!r.e[i].told) { missed += is; continue; }
    told++;
    const struct ncs_clock *a = &r.e[i].k, *b = &r.e[j].k;
    if (!is || r.e[i].after != after || a->realtime_ns != b->realtime_ns || a->monotonic_ns != b->monotonic_ns ||
        a->uncertainty_ns != b->uncertainty_ns)
      wrong++;
    whole += is && (b->uncertainty_ns - 40) % 6 == 4; /* (40 + k, k % 6 == 4: the chunks whose pair is stored whole) */
  }
  CHECK(rc == 0 && r.n < r.cap && r.rows == 0 && told > 0 && whole > 0 && wrong == 0 && missed == 0,
        "a column chunk's closing pair is told to each stretch that only CALL, GPU_TIME and INFLIGHT records follow "
        "before it, with their count, and to no other (rc %d, %d told, %d of them a pair stored whole, %d wrong, %d not told)",
        rc, told, whole, wrong, missed);
  free(r.e);
}

static void test_json(void) {
  char *buf = NULL; size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  ncs_json_obj_begin(&j, NULL);
  ncs_json_strn(&j, "s\"k", "a\"\\\n\x01\x1b[31m\xff\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80z", 21);
  ncs_json_num(&j, "nan", 0.0 / 0.0);
  ncs_json_num(&j, "x", 1.5);
  ncs_json_int(&j, "i", -3);
  ncs_json_arr_begin(&j, "a");
  for (int i = 0; i < 70; i++) ncs_json_arr_begin(&j, NULL);
  ncs_json_uint(&j, NULL, 5);
  for (int i = 0; i < 70; i++) ncs_json_arr_end(&j);
  ncs_json_null(&j, NULL);
  ncs_json_arr_end(&j);
  ncs_json_obj_end(&j);
  ncs_json_done(&j);
  fclose(f);
  const char *want_prefix = "{\"s\\\"k\":\"a\\\"\\\\\\n\\u0001\\u001b[31m\\u00ff\xc3\xa9\\u00ed\\u00a0\\u0080\xf0\x9f\x98\x80z\",\"nan\":null,\"x\":1.5,\"i\":-3,\"a\":[[";
  CHECK(strncmp(buf, want_prefix, strlen(want_prefix)) == 0, "JSON escapes quotes, controls, ESC, invalid UTF-8 and surrogates; keeps valid UTF-8; NaN -> null (%s)", buf);
  int depth = 0, maxd = 0, balanced = 1;
  for (char *p = buf; *p; p++) {
    if (*p == '"') { for (p++; *p && *p != '"'; p++) if (*p == '\\') p++; continue; }
    if (*p == '[' || *p == '{') { if (++depth > maxd) maxd = depth; }
    if (*p == ']' || *p == '}') { if (--depth < 0) balanced = 0; }
  }
  CHECK(balanced && depth == 0 && maxd <= 64 && strstr(buf, ",null]}"), "JSON deeper than 64 levels stays balanced (max depth %d)", maxd);
  free(buf);
  buf = NULL;
  f = open_memstream(&buf, &len);
  ncs_text_escape(f, "ok \x1b]0;x\x07 \xc2\x9b \xc3\xa9\n", 16);
  fclose(f);
  CHECK(strcmp(buf, "ok \\x1b]0;x\\x07 \\xc2\\x9b \xc3\xa9\\x0a") == 0, "text escape neutralises ESC, BEL, C1 and newline (%s)", buf);
  free(buf);
  /* numbers: the writer's own digits are printf's (%lld, %llu, %.1f of an integral double) */
  static const int64_t iv[] = {0, 1, -1, 9, 10, -10, 123456789, INT64_MAX, INT64_MIN, INT64_MIN + 1};
  static const uint64_t uv[] = {0, 7, 10, 99999, UINT64_MAX, (uint64_t)INT64_MAX + 1};
  static const double dv[] = {0.0, -0.0, 1.0, -1.0, 10.0, 123.0, -4096.0, 999999999999999.0, -999999999999999.0,
                              1e15, 0.5, -2.25, 1e300};
  char want[4096], *w = want;
  buf = NULL;
  f = open_memstream(&buf, &len);
  ncs_json_init(&j, f, 1);
  ncs_json_arr_begin(&j, NULL);
  w += sprintf(w, "[");
  int first = 1;
  for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++, first = 0) { ncs_json_int(&j, NULL, iv[i]); w += sprintf(w, "%s\n  %lld", first ? "" : ",", (long long)iv[i]); }
  for (size_t i = 0; i < sizeof uv / sizeof uv[0]; i++) { ncs_json_uint(&j, NULL, uv[i]); w += sprintf(w, ",\n  %llu", (unsigned long long)uv[i]); }
  for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++) {
    ncs_json_num(&j, NULL, dv[i]);
    w += sprintf(w, dv[i] == floor(dv[i]) && fabs(dv[i]) < 1e15 ? ",\n  %.1f" : ",\n  %.12g", dv[i]);
  }
  ncs_json_arr_end(&j);
  w += sprintf(w, "\n]");
  fclose(f);
  CHECK(strcmp(buf, want) == 0, "JSON numbers and indentation as printf writes them (%s)", buf);
  free(buf);
}

static int write_fixtures(const char *dir) {
  char p[512];
  int rc = 0;
  snprintf(p, sizeof p, "%s/rank0.ncs", dir); rc |= tw_golden_rank(p, 0, 1);
  snprintf(p, sizeof p, "%s/rank1.ncs", dir); rc |= tw_golden_rank(p, 1, 1);
  snprintf(p, sizeof p, "%s/cut.ncs", dir); rc |= tw_golden_rank(p, 1, 0);
  struct tw t;
  snprintf(p, sizeof p, "%s/hostile.ncs", dir);
  rc |= tw_open(&t, p, 66, 1);
  struct ncs_kv kv[] = {{"host", "ev\x1b[2Jil\"<b>\n", 13}, {"env.RANK", "0", 1}};
  tw_kv(&t, kv, 2);
  struct ncs_thread th = {1, 1, "th\x1b]0;pwn\x07", 0};
  tw_thread(&t, &th);
  struct ncs_log_line ll = {1, "log \xff\x1b[31m</script>", 19};
  tw_log_line(&t, &ll);
  struct ncs_call c = {.op = 200, .thread = 1, .tcall = 1, .datatype = 99, .root = -1};
  tw_call(&t, &c);
  rc |= tw_close(&t, 1);
  return rc ? 1 : 0;
}

/* Column chunks whose field columns hold one value for a whole block (the reader then leaves
 * the structs' field as the previous block wrote it): runs of one value that change inside a
 * block, at a block's or a chunk's edge, and between two files read with the same buffers.
 * Record i of file f, its CALL and (every third) GPU_TIME. */
static void const_call(int f, int i, struct ncs_call *c, struct ncs_gpu_time *g) {
  memset(c, 0, sizeof *c);
  c->op = 1 + (uint32_t)((i / 700) % 3);             /* runs across blocks (256) and chunks */
  c->thread = 1;
  c->tcall = (uint64_t)i + 1;
  c->comm = (uint32_t)(f + 1);                       /* one value per file */
  c->seq = (uint64_t)i / 2;
  c->count = i < 2000 ? 1024 : 4096;                 /* DELTA: one value, then another */
  c->datatype = (uint32_t)((i / 256) % 2) * 7;       /* changes at each block edge */
  c->root = i % 512 < 300 ? -1 : 3;                  /* changes inside a block */
  c->stream = 0x7f0000001000ull + (uint64_t)f * 64 + (uint64_t)(i >= 5000) * 16;
  c->t_enter = 1000000 + (uint64_t)i * 1000 + (uint64_t)(i % 3);
  c->t_exit = c->t_enter + 500 + (uint64_t)(f * 100);
  c->rc = i == 4321 ? 5 : 0;                         /* one record differs */
  /* not a delta column (its first 512 values say so): a block of 2s, then one of 0s */
  c->callsite = i >= 1024 && i < 1280 ? 2 : i >= 1280 && i < 1536 ? 0 : (uint32_t)(i % 2);
  memset(g, 0, sizeof *g);
  g->kind = NCS_GPU_KIND_CALL;
  g->thread = 1;
  g->ref = c->tcall;
  g->gpu_start = 2000000 + (uint64_t)i * 1024;
  g->gpu_end = g->gpu_start + 256 * (uint64_t)(1 + (i / 900) % 2);
  g->flags = (uint32_t)(f == 1 && i >= 3000);
}
struct const_rd { int f, i, gi, bad, col_chunks; };
static int const_v_call(void *p, const struct ncs_call *x) {
  struct const_rd *r = p;
  struct ncs_call c;
  struct ncs_gpu_time g;
  const_call(r->f, r->i++, &c, &g);
  if (memcmp(&c, x, sizeof c) != 0) r->bad++; /* no padding in struct ncs_call */
  return 0;
}
static int const_v_gpu(void *p, const struct ncs_gpu_time *x) {
  struct const_rd *r = p;
  struct ncs_call c;
  struct ncs_gpu_time g;
  const_call(r->f, r->gi, &c, &g);
  r->gi += 3;
  if (g.kind != x->kind || g.thread != x->thread || g.flags != x->flags || g.ref != x->ref ||
      g.gpu_start != x->gpu_start || g.gpu_end != x->gpu_end)
    r->bad++;
  return 0;
}
static int const_v_chunk(void *p, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  ((struct const_rd *)p)->col_chunks += (flags & NCS_CHUNK_F_COLUMNS) != 0;
  return 0;
}
static void test_constant_blocks(const char *dir) {
  enum { N = 7000, PER_CHUNK = 3000 };
  char path[2][512];
  int wrote = 1;
  for (int f = 0; f < 2; f++) {
    struct tw t;
    snprintf(path[f], sizeof path[f], "%s/const%d.ncs", dir, f);
    if (tw_open(&t, path[f], 1, 1)) { wrote = 0; continue; }
    for (int i = 0; i < N; i++) {
      struct ncs_call c;
      struct ncs_gpu_time g;
      const_call(f, i, &c, &g);
      tw_call(&t, &c);
      if (i % 3 == 0) tw_gpu_time(&t, &g);
      if (i % PER_CHUNK == PER_CHUNK - 1) tw_flush(&t, 0);
    }
    wrote &= !t.w.overflow && tw_close(&t, 1) == 0;
  }
  CHECK(wrote, "write two traces whose columns hold runs of one value");
  struct ncs_trace_bufs *b = ncs_trace_bufs_new();
  struct const_rd r = {0};
  int ok = b != NULL, col_chunks = 0;
  for (int f = 0; f < 2 && ok; f++) { /* the same buffers for both files, as a reader thread uses them */
    memset(&r, 0, sizeof r);
    r.f = f;
    struct ncs_visitor v = {0};
    v.ctx = &r;
    v.call = const_v_call;
    v.gpu_time = const_v_gpu;
    v.chunk = const_v_chunk;
    struct ncs_read_status st;
    struct ncs_trace *t;
    if (ncs_trace_open(path[f], &v, &st, &t) != 0) { ok = 0; break; }
    while (ncs_trace_next(t, b)) {}
    ok &= ncs_trace_close(t) == 0 && !st.damaged && r.i == N && r.gi == N + 2 && r.bad == 0;
    col_chunks += r.col_chunks;
  }
  ncs_trace_bufs_free(b);
  CHECK(ok, "runs of one value in column chunks read back identical, two files on one set of buffers (%d differ)", r.bad);
  CHECK(col_chunks >= 4, "those traces are column chunks (%d of 6)", col_chunks);
}

static int bench_write(const char *path, long n, long per_chunk) {
  struct tw t;
  rng_state = 1;
  if (tw_open(&t, path, 1, 1)) return 1;
  struct ncs_kv kv[] = {{"host", "bench", 5}};
  tw_kv(&t, kv, 1);
  static const uint64_t counts[] = {1 << 22, 1 << 22, 1 << 20, 1 << 18, 6815744, 1 << 22, 65536, 1 << 22};
  uint64_t now = 1000000000ull;
  for (long i = 0; i < n; i++) {
    struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i + 1, .comm = 1,
                         .seq = (uint64_t)i + 1, .count = counts[i % 8], .datatype = 9, .redop = 0,
                         .root = -1, .stream = 0x7f1234500000ull, .callsite = 0x1234 + (uint32_t)(i % 8)};
    now += 250000 + (uint64_t)(i % 8) * 1000 + rnd() % 20000; /* host jitter: real entropy */
    c.t_enter = now;
    c.t_exit = now + 4000 + rnd() % 2000;
    tw_call(&t, &c);
    if (t.nrec == per_chunk) tw_flush(&t, 0);
  }
  return tw_close(&t, 1) ? 1 : 0;
}
/* --bench-read: the reader alone, with the visitor of its earlier figures (BENCHMARKS.md):
 * each CALL record to a per-record callback that sums one field; other records are counted by
 * the reader only. */
static int bench_count(void *c, const struct ncs_call *x) { (*(uint64_t *)c) += x->count; return 0; }
static int bench_read(int npaths, char **paths) {
  uint64_t sum = 0, records = 0, bytes = 0;
  struct ncs_visitor v = {0};
  v.ctx = &sum;
  v.call = bench_count;
  char **files;
  int nf = ncs_paths_expand(npaths, paths, &files), rc = nf > 0 ? 0 : 2;
  struct timespec a, b, ca, cb;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
  for (int i = 0; i < nf; i++) {
    struct ncs_read_status st;
    int r = ncs_trace_read(files[i], &v, &st);
    if (r) { fprintf(stderr, "%s\n", st.error); rc = r; }
    records += st.records;
    bytes += st.bytes;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (nf > 0) ncs_paths_free(files, nf);
  double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  double cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) / 1e9;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("records %llu  bytes %llu  wall %.3f s  cpu %.3f s  records/cpu-s %.1f M  ns/record %.1f  "
         "bytes/record %.2f  peak_rss %ld KiB  files %d  (rc %d)\n",
         (unsigned long long)records, (unsigned long long)bytes, s, cpu, records / cpu / 1e6,
         cpu * 1e9 / (double)(records ? records : 1), (double)bytes / (double)(records ? records : 1), ru.ru_maxrss, nf, rc);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write") == 0) return write_fixtures(argv[2]);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "--bench-write") == 0)
    return bench_write(argv[2], atol(argv[3]), argc == 5 && atol(argv[4]) > 0 ? atol(argv[4]) : 65536);
  if (argc >= 3 && strcmp(argv[1], "--bench-read") == 0) return bench_read(argc - 2, argv + 2);
  char dir[] = "/tmp/ncs-rt.XXXXXX";
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  test_varint();
  test_call_codec();
  test_file_roundtrip(dir, 700);
  test_file_roundtrip(dir, 3000);
  test_call_runs(dir);
  test_trailing_fields(dir);
  test_constant_blocks(dir);
  test_closing_ahead(dir);
  test_json();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  return check_done();
}
