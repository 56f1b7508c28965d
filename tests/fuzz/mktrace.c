/* mktrace.c — writes small ncclscope traces, valid or damaged in one chosen way, straight from
 * docs/FORMAT.md (an independent writer: it shares only format.h with the shim), for the
 * golden corrupt inputs (tests/corrupt-golden/) and the fuzz seed corpus (tests/fuzz/).
 *
 * Usage: mktrace OUT VARIANT    (mktrace --list prints every variant, one a line, with the
 * outcome a reader must report: ok, truncated, damaged or notrace, and the byte offset where
 * the damage starts, or -1).
 * The valid trace has three chunks: chunk 0 (PROCESS, CLOCK, THREAD, COMM, 20 CALLs), chunk 1
 * (20 CALLs, DROP of 3), chunk 2 (COMM_END, CLOCK, FINAL flag). The columns* variants write
 * chunk 1 as a column payload (FORMAT.md "Column payload", format 2.0): CALL and DROP records
 * split into field columns (no delta, no shift; the CALL t_enter column zstd-compressed, the
 * others stored), everything else whole. Build: cc -Iinclude ... -lzstd */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "ncclscope/format.h"
#include "ncclscope/ops.h"

struct buf { uint8_t *p; size_t n, cap; };

static void put(struct buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 256;
    b->p = realloc(b->p, b->cap);
    if (!b->p) { perror("realloc"); exit(1); }
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void vu(struct buf *b, uint64_t v) { uint8_t t[10]; put(b, t, ncs_put_varint(t, v)); }
static void vs(struct buf *b, int64_t v) { vu(b, ncs_zigzag(v)); }
static void u64(struct buf *b, uint64_t v) { uint8_t t[8]; ncs_put_u64(t, v); put(b, t, 8); }
static void str(struct buf *b, const char *s, size_t n) { vu(b, n); put(b, s, n); }
static void cstr(struct buf *b, const char *s) { str(b, s, strlen(s)); }
static void rec(struct buf *out, uint64_t type, const struct buf *body) {
  vu(out, type); vu(out, body->n); put(out, body->p, body->n);
}

static const char *variant;
static int is(const char *v) { return !strcmp(variant, v); }

static void kv(struct buf *b, const char *k, const char *v) { cstr(b, k); cstr(b, v); }

static void rec_process(struct buf *out) {
  struct buf b = {0};
  static const char *const keys[][2] = {
    {"host", "golden-host"}, {"pid", "4242"}, {"ppid", "1"}, {"shim_version", "0.1.0"},
    {"format_version", "1.0"}, {"nccl_version", "22809"},
    {"clock_realtime_ns", "1764460800000000000"}, {"clock_monotonic_ns", "1000000000"},
    {"callsite_depth", "8"}, {"buffer_bytes", "65536"}, {"env.RANK", "0"},
    {"env.WORLD_SIZE", "1"}, {"env.NCCL_DEBUG", "INFO"}};
  size_t n = sizeof keys / sizeof keys[0];
  vu(&b, is("process-huge-count") ? (1ull << 60) : n + 1);
  for (size_t i = 0; i < n; i++) {
    if (is("hostile-strings") && !strcmp(keys[i][0], "host"))
      kv(&b, "host", "evil\x1b[2J\x1b]0;pwned\x07<b>host</b>\"'&\xc3\x28");
    else if (is("hostile-strings") && !strcmp(keys[i][0], "env.NCCL_DEBUG"))
      kv(&b, "env.NCCL_DEBUG", "</script><script>alert('env')</script>\r\n\\u0000");
    else kv(&b, keys[i][0], keys[i][1]);
  }
  cstr(&b, "cmdline");
  if (is("process-huge-string")) vu(&b, 1ull << 40); else str(&b, "fault_job\0" "10", 12);
  rec(out, NCS_REC_PROCESS, &b);
  free(b.p);
}

static void rec_thread(struct buf *out) {
  struct buf b = {0};
  vu(&b, 1); vu(&b, 4242); cstr(&b, is("hostile-strings") ? "\x1b[31mred\x1b]0;title\x07<script>alert(1)</script>\"\\" : "main");
  rec(out, NCS_REC_THREAD, &b);
  free(b.p);
}

static void rec_clock(struct buf *out, uint64_t rt, uint64_t mono) {
  struct buf b = {0};
  vu(&b, rt); vu(&b, mono); vu(&b, 120);
  rec(out, NCS_REC_CLOCK, &b);
  free(b.p);
}

static void rec_comm(struct buf *out) {
  struct buf b = {0};
  vu(&b, 1); u64(&b, 0x1234567890abcdefull); vu(&b, 0x55550000ull); vs(&b, 0); vs(&b, 1);
  vs(&b, 0); vu(&b, NCS_OP_CommInitRank); u64(&b, 0); vu(&b, 0); vs(&b, 0);
  vu(&b, 1000100000); vu(&b, 1000200000); vu(&b, 1);
  rec(out, NCS_REC_COMM, &b);
  free(b.p);
}

static void rec_module_callsite(struct buf *out) {
  struct buf b = {0};
  vu(&b, 1); vu(&b, 0x400000);
  cstr(&b, is("hostile-strings") ? "/tmp/\x1b[2J<img src=x onerror=alert(1)>\xff\xfe.so" : "/usr/bin/fault_job");
  rec(out, NCS_REC_MODULE, &b);
  free(b.p); b = (struct buf){0};
  vu(&b, 77); vu(&b, is("callsite-huge-frames") ? (1ull << 62) : 2);
  vu(&b, 1); vu(&b, 0x1234); cstr(&b, is("hostile-strings") ? "main\"},{\"x\":\x01" : "run_steps"); vu(&b, 0x34);
  vu(&b, 1); vu(&b, 0x2000); cstr(&b, "main"); vu(&b, 0x10);
  rec(out, NCS_REC_CALLSITE, &b);
  free(b.p);
}

/* CALL records with Δ fields against the previous CALL in the chunk. */
struct prev { uint64_t tcall, seq, count, stream, t_enter, dur, group; };
static void rec_call(struct buf *out, struct prev *p, uint64_t tcall, uint64_t seq, uint64_t t) {
  struct buf b = {0};
  uint64_t count = 1024, stream = 0, dur = 5000, group = 0;
  vu(&b, NCS_OP_AllReduce); vu(&b, 1);
  vs(&b, (int64_t)(tcall - p->tcall)); vu(&b, 1);
  vs(&b, (int64_t)(seq - p->seq)); vs(&b, (int64_t)(count - p->count));
  vu(&b, 7 /* ncclFloat32 */); vu(&b, 0 /* ncclSum */); vs(&b, -1);
  vs(&b, (int64_t)(stream - p->stream)); vs(&b, (int64_t)(t - p->t_enter));
  vs(&b, (int64_t)(dur - p->dur)); vs(&b, 0); vu(&b, 0); vs(&b, (int64_t)(group - p->group));
  vu(&b, 77); vu(&b, 0);
  *p = (struct prev){tcall, seq, count, stream, t, dur, group};
  rec(out, NCS_REC_CALL, &b);
  free(b.p);
}

/* A column payload of raw (whole rows), written from FORMAT.md. */
static void columns(struct buf *out, const struct buf *raw) {
  struct buf types = {0}, lens = {0}, bodies = {0};
  uint64_t v[2][17][64]; /* [CALL, DROP][field][record] */
  size_t nf[2] = {17, 3}, nr[2] = {0, 0};
  const uint8_t *p = raw->p, *e = raw->p + raw->n;
  while (p < e) {
    uint64_t ty, len;
    ncs_get_varint(&p, e, &ty); ncs_get_varint(&p, e, &len);
    int k = ty == NCS_REC_CALL ? 0 : ty == NCS_REC_DROP ? 1 : -1;
    const uint8_t *q = p, *qe = p + len;
    size_t j = 0;
    if (k >= 0 && nr[k] < 64)
      for (; j < nf[k] && q < qe; j++) ncs_get_varint(&q, qe, &v[k][j][nr[k]]);
    if (k >= 0 && nr[k] < 64 && j == nf[k] && q == qe) { /* our writer's varints are shortest */
      vu(&types, ty * 2 + 1);
      nr[k]++;
    } else {
      vu(&types, ty * 2); vu(&lens, len); put(&bodies, p, (size_t)len);
    }
    p += len;
  }
  size_t ncols = 3 + (nr[0] ? nf[0] : 0) + (nr[1] ? nf[1] : 0);
  if (is("columns-bad-id")) ncols++; /* a column of id 5 */
  struct buf dir = {0}, data = {0};
  vu(&dir, ncols);
  const struct buf *bs[3] = {&types, &lens, &bodies};
  for (int i = 0; i < 3; i++) {
    vu(&dir, (uint64_t)i); vu(&dir, 0); vu(&dir, bs[i]->n); vu(&dir, 0); vu(&dir, 0); vu(&dir, bs[i]->n);
    put(&data, bs[i]->p, bs[i]->n);
  }
  for (int k = 0; k < 2; k++) {
    if (!nr[k]) continue;
    uint64_t type = k ? NCS_REC_DROP : NCS_REC_CALL;
    for (size_t j = 0; j < nf[k]; j++) {
      size_t count = nr[k] + (is("columns-value-left") && k == 0 && j == 3 ? 1 : 0);
      /* codes: zigzag of the field as the row holds it (signed fields: unzigzag first) */
      int sign = k == 0 && (j == 2 || j == 4 || j == 5 || j == 8 || j == 9 || j == 10 || j == 11 || j == 12 || j == 14);
      uint64_t code[65];
      for (size_t i = 0; i < count; i++) {
        uint64_t x = v[k][j][i < nr[k] ? i : 0];
        if (sign) x = (uint64_t)ncs_unzigzag(x);
        code[i] = ncs_zigzag((int64_t)x);
      }
      unsigned width = 0;
      for (size_t i = 1; i < count; i++) while (width < 8 && (code[i] >> (8 * width))) width++;
      struct buf planes = {0};
      for (unsigned b = 0; b < width; b++)
        for (size_t i = 1; i < count; i++) { uint8_t x = (uint8_t)(code[i] >> (8 * b)); put(&planes, &x, 1); }
      int z = k == 0 && j == 10 && planes.n;
      struct buf st = {0};
      if (z) {
        st.cap = ZSTD_compressBound(planes.n); st.p = malloc(st.cap);
        st.n = ZSTD_compress(st.p, st.cap, planes.p, planes.n, 3);
      } else put(&st, planes.p ? planes.p : (const uint8_t *)"", planes.n);
      vu(&dir, type * 64 + j); vu(&dir, (sign ? 1u : 0u) | (z ? 4u : 0u)); vu(&dir, count);
      vu(&dir, count ? code[0] : 0); vu(&dir, width); vu(&dir, st.n);
      put(&data, st.p ? st.p : (const uint8_t *)"", st.n);
      free(planes.p); free(st.p);
    }
  }
  if (is("columns-bad-id")) { vu(&dir, 5); vu(&dir, 0); vu(&dir, 0); vu(&dir, 0); vu(&dir, 0); vu(&dir, 0); }
  put(out, dir.p, dir.n);
  put(out, data.p, data.n);
  free(dir.p); free(data.p); free(types.p); free(lens.p); free(bodies.p);
}

/* Appends one chunk (header + zstd frame of raw, or columns) to file; returns its offset. */
static size_t chunk(struct buf *file, const struct buf *raw, uint32_t nrec, uint64_t index,
                    uint64_t dropped, uint32_t flags, int damage_compression) {
  size_t cap = ZSTD_compressBound(raw->n);
  uint8_t *z = malloc(cap + 1);
  size_t zn = ZSTD_compress(z, cap, raw->p, raw->n, 3);
  if (ZSTD_isError(zn)) { fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(zn)); exit(1); }
  if (index == 1 && !strncmp(variant, "columns", 7)) {
    struct buf c = {0};
    columns(&c, raw);
    free(z);
    z = malloc(c.n);
    memcpy(z, c.p, c.n);
    zn = c.n;
    free(c.p);
    flags |= NCS_CHUNK_F_COLUMNS;
  }
  if (damage_compression) for (size_t i = zn / 2; i < zn; i++) z[i] ^= 0x5a;
  uint8_t h[NCS_CHUNK_HEADER_SIZE] = {0};
  uint32_t raw_n = (uint32_t)raw->n;
  if (index == 1 && is("raw-size-mismatch")) raw_n += 10;
  if (index == 1 && is("raw-size-huge")) raw_n = 0xfffffff0u;
  if (index == 1 && is("raw-size-limit")) raw_n = NCS_CHUNK_MAX_RAW; /* allowed, but wrong */
  ncs_put_u32(h + NCS_CH_MAGIC, (index == 1 && is("chunk-bad-magic")) ? 0xdeadbeefu : NCS_CHUNK_MAGIC);
  ncs_put_u32(h + NCS_CH_PAYLOAD, (index == 1 && is("payload-size-huge")) ? 0xfffffff0u : (uint32_t)zn);
  ncs_put_u32(h + NCS_CH_RAW, raw_n);
  ncs_put_u32(h + NCS_CH_RECORDS, (index == 1 && is("record-count-huge")) ? 0xffffffffu : nrec);
  ncs_put_u64(h + NCS_CH_INDEX, index);
  ncs_put_u64(h + NCS_CH_DROPPED, dropped);
  uint32_t sum = ncs_chunk_sum(NCS_FORMAT_MAJOR, h, z, zn);
  if (index == 1 && is("bad-checksum")) sum ^= 1;
  ncs_put_u32(h + NCS_CH_CHECKSUM, sum);
  ncs_put_u32(h + NCS_CH_FLAGS, flags);
  size_t off = file->n;
  put(file, h, sizeof h);
  put(file, z, zn);
  free(z);
  return off;
}

static const struct { const char *name, *outcome; } variants[] = {
  {"valid", "ok"},                    /* three chunks, FINAL flag */
  {"hostile-strings", "ok"},          /* terminal escapes, markup, quotes, invalid UTF-8 */
  {"unknown-record", "ok"},           /* a record of type 99 that readers must skip */
  {"trailing-fields", "ok"},          /* extra bytes at the end of a CALL body */
  {"call-run", "ok"},                 /* chunk 1: a CALL_RUN of 5 calls after its 8th CALL (5.0) */
  {"call-run-orphan", "damaged"},     /* chunk 1 opens with a CALL_RUN: no CALL before it */
  {"no-final", "truncated"},          /* the last chunk lacks the FINAL flag */
  {"empty", "notrace"},               /* 0 bytes */
  {"cut-file-header", "notrace"},     /* 30 bytes of the header */
  {"bad-file-magic", "notrace"},
  {"major-99", "notrace"},
  {"header-size-huge", "notrace"},    /* header size field 0xffffffff */
  {"header-only", "truncated"},       /* 64 bytes, no chunk */
  {"cut-chunk-header", "truncated"},  /* ends 20 bytes into chunk 0's header */
  {"cut-payload-0", "truncated"},     /* ends inside chunk 0's payload */
  {"cut-payload-2", "truncated"},     /* ends inside the last chunk's payload */
  {"cut-chunk-header-1", "truncated"},/* ends inside chunk 1's header */
  {"chunk-bad-magic", "damaged"},     /* chunk 1 */
  {"payload-size-huge", "damaged"},   /* chunk 1 says 0xfffffff0 payload bytes */
  {"raw-size-huge", "damaged"},       /* chunk 1 says 0xfffffff0 raw bytes */
  {"raw-size-limit", "damaged"},      /* chunk 1 says 64 MiB raw: within limits, but wrong */
  {"raw-size-mismatch", "damaged"},   /* chunk 1 raw size 10 more than the frame holds */
  {"record-count-huge", "damaged"},   /* chunk 1 says 2^32-1 records */
  {"bad-checksum", "damaged"},        /* chunk 1 */
  {"bad-compression", "damaged"},     /* chunk 1's frame garbled, checksum recomputed */
  {"record-len-overrun", "damaged"},  /* a record in chunk 1 claims more bytes than remain */
  {"record-varint-overlong", "damaged"}, /* an 11-byte varint as record type in chunk 1 */
  {"process-huge-count", "damaged"},  /* PROCESS says 2^60 pairs */
  {"process-huge-string", "damaged"}, /* a PROCESS string says 2^40 bytes */
  {"callsite-huge-frames", "damaged"},/* CALLSITE says 2^62 frames */
  {"trailing-garbage", "damaged"},    /* 100 bytes of garbage after the FINAL chunk */
  {"columns", "ok"},                  /* chunk 1 as a column payload (format 2.0) */
  {"columns-value-left", "damaged"},  /* chunk 1: a CALL field column holds one value too many */
  {"columns-bad-id", "damaged"},      /* chunk 1: a column of id 5 (ids 3..63 do not exist) */
};

int main(int argc, char **argv) {
  size_t nv = sizeof variants / sizeof variants[0];
  if (argc == 2 && !strcmp(argv[1], "--list")) {
    for (size_t i = 0; i < nv; i++) printf("%s %s\n", variants[i].name, variants[i].outcome);
    return 0;
  }
  if (argc != 3) { fprintf(stderr, "usage: mktrace OUT VARIANT | --list\n"); return 2; }
  variant = argv[2];
  size_t vi;
  for (vi = 0; vi < nv && strcmp(variants[vi].name, variant); vi++) {}
  if (vi == nv) { fprintf(stderr, "mktrace: unknown variant %s\n", variant); return 2; }

  struct buf file = {0};
  uint8_t fh[NCS_FILE_HEADER_SIZE] = {0};
  memcpy(fh + NCS_FH_MAGIC, is("bad-file-magic") ? "NCSTRACX" : NCS_FILE_MAGIC, 8);
  ncs_put_u16(fh + NCS_FH_MAJOR, is("major-99") ? 99 : NCS_FORMAT_MAJOR);
  ncs_put_u16(fh + NCS_FH_MINOR, NCS_FORMAT_MINOR);
  ncs_put_u32(fh + NCS_FH_SIZE, is("header-size-huge") ? 0xffffffffu : NCS_FILE_HEADER_SIZE);
  ncs_put_u64(fh + NCS_FH_REALTIME, 1764460800000000000ull);
  ncs_put_u32(fh + NCS_FH_PID, 4242);
  put(&file, fh, sizeof fh);

  /* chunk 0 */
  struct buf raw = {0};
  struct prev p = {0};
  uint32_t nrec = 0;
  uint64_t tcall = 0, seq = 0, t = 1000300000;
  rec_process(&raw); nrec++;
  rec_clock(&raw, 1764460800000000000ull, 1000000000); nrec++;
  rec_thread(&raw); nrec++;
  rec_comm(&raw); nrec++;
  rec_module_callsite(&raw); nrec += 2;
  for (int i = 0; i < 20; i++, nrec++) rec_call(&raw, &p, ++tcall, ++seq, t += 100000);
  size_t c0 = chunk(&file, &raw, nrec, 0, 0, 0, 0);

  /* chunk 1 */
  raw.n = 0; nrec = 0; p = (struct prev){0};
  if (is("call-run-orphan")) { struct buf b = {0}; vs(&b, 100000); vs(&b, 0); rec(&raw, NCS_REC_CALL_RUN, &b); free(b.p); nrec++; }
  for (int i = 0; i < 20; i++, nrec++) {
    rec_call(&raw, &p, ++tcall, ++seq, t += 100000);
    if (i == 7 && is("call-run")) {
      /* 5 calls like the CALL just written (tcall and seq step by 1) but for their times:
       * t_enter 100000 ns apart, the duration of the template, then 10 ns longer each */
      struct buf b = {0};
      for (int k = 0; k < 5; k++) { vs(&b, 100000); vs(&b, k ? 10 : 0); }
      rec(&raw, NCS_REC_CALL_RUN, &b);
      free(b.p);
      nrec++;
      tcall += 5; seq += 5; t += 500000;
      p.tcall = tcall; p.seq = seq; p.t_enter = t; p.dur += 40;
    }
    if (i == 5 && is("unknown-record")) {
      struct buf b = {0}; cstr(&b, "future"); u64(&b, 42); rec(&raw, 99, &b); free(b.p); nrec++;
    }
    if (i == 6 && is("trailing-fields")) {
      /* same CALL fields followed by 5 bytes a newer writer appended */
      struct buf b = {0};
      rec_call(&b, &p, ++tcall, ++seq, t += 100000);
      /* b holds type, len, body: rewrite with a longer body */
      const uint8_t *q = b.p, *end = b.p + b.n;
      uint64_t ty, len;
      ncs_get_varint(&q, end, &ty); ncs_get_varint(&q, end, &len);
      struct buf body = {0};
      put(&body, q, (size_t)len); put(&body, "\x01\x02\x03\x04\x05", 5);
      rec(&raw, ty, &body);
      free(body.p); free(b.p); nrec++;
    }
  }
  if (is("record-len-overrun")) { vu(&raw, NCS_REC_CALL); vu(&raw, 1000); put(&raw, "\x18\x01", 2); nrec++; }
  if (is("record-varint-overlong")) { put(&raw, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00", 12); nrec++; }
  { struct buf b = {0}; vu(&b, NCS_DROP_BUFFER_FULL); vu(&b, 3); vu(&b, 1); rec(&raw, NCS_REC_DROP, &b); free(b.p); nrec++; }
  size_t c1 = chunk(&file, &raw, nrec, 1, 3, 0, is("bad-compression"));

  /* chunk 2: the clean end */
  raw.n = 0; nrec = 0;
  { struct buf b = {0}; vu(&b, 1); vu(&b, NCS_OP_CommDestroy); vs(&b, 0); vu(&b, t + 1000); vu(&b, t + 2000); vu(&b, 1);
    rec(&raw, NCS_REC_COMM_END, &b); free(b.p); nrec++; }
  rec_clock(&raw, 1764460800000000000ull + (t - 1000000000), t + 3000); nrec++;
  size_t c2 = chunk(&file, &raw, nrec, 2, 3, is("no-final") ? 0 : NCS_CHUNK_F_FINAL, 0);
  free(raw.p);

  size_t n = file.n;
  if (is("empty")) n = 0;
  else if (is("cut-file-header")) n = 30;
  else if (is("header-only")) n = NCS_FILE_HEADER_SIZE;
  else if (is("cut-chunk-header")) n = c0 + 20;
  else if (is("cut-payload-0")) n = c0 + NCS_CHUNK_HEADER_SIZE + (c1 - c0 - NCS_CHUNK_HEADER_SIZE) / 2;
  else if (is("cut-chunk-header-1")) n = c1 + 17;
  else if (is("cut-payload-2")) n = c2 + NCS_CHUNK_HEADER_SIZE + (file.n - c2 - NCS_CHUNK_HEADER_SIZE) / 2;
  else if (is("trailing-garbage")) { for (int i = 0; i < 100; i++) put(&file, "\xa5", 1); n = file.n; }

  FILE *f = fopen(argv[1], "wb");
  if (!f || fwrite(file.p, 1, n, f) != n || fclose(f)) { perror(argv[1]); return 1; }
  free(file.p);
  printf("%s %s %zu %zu %zu %zu\n", variant, variants[vi].outcome, n, c0, c1, c2);
  return 0;
}
