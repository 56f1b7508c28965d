/* test_col_simd.c — the column reader's SSE2 plane gather (columns.h ncs_col_loop16) against
 * its portable loop and against the format's own definition of a field column (FORMAT.md
 * "Column payload": code i is byte i of each plane, the value is the running sum of the
 * unzigzagged codes times 2^shift for a delta column, else each one alone; the reader hands a
 * signed column's values over as they are, not zigzagged again). Random columns of every width 1..8, delta or not, signed or not,
 * shifted or not, keyed (decoded unsigned), codes that wrap, planes of every length (tails
 * not a multiple of 16), planes all 0 in some blocks (the reader narrows those), decoded in
 * blocks of random lengths: both paths give the definition's values and the same cursor state.
 * Then chunks of CALL and GPU_TIME rows from the shim's encoders through the packer and back
 * through the reader, each path: the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mix.h"
#include "check.h"
static int col_simd = 1; /* columns.h: 0 takes ncs_col_decode through its portable loop only */
#define NCS_COL_SIMD col_simd
#include "ncclscope/columns.h"
#include "ncclscope/encode.h"

static uint64_t rng_state = 7;
static uint64_t rnd(void) { /* splitmix64: the step, then base/mix.h's finaliser */
  return ncs_mix64(rng_state += 0x9e3779b97f4a7c15ull);
}

/* The definition: value i of the column (0 .. count). */
static void truth(const struct ncs_colr *k, uint64_t *out) {
  unsigned sh = NCS_COLF_SHIFT(k->flags);
  int delta = (k->flags & NCS_COLF_DELTA) != 0;
  uint64_t stride = k->count - 1, x = 0;
  for (uint64_t i = 0; i < k->count; i++) {
    uint64_t z = k->first;
    if (i) {
      z = 0;
      for (uint32_t b = 0; b < k->width; b++) z |= (uint64_t)k->bytes[b * stride + i - 1] << (8 * b);
    }
    uint64_t u = (uint64_t)ncs_unzigzag(z) << sh;
    x = delta && i ? x + u : u;
    out[i] = x;
  }
}

static int same_state(const struct ncs_colr *a, const struct ncs_colr *b) {
  return a->q == b->q && a->vprev == b->vprev && a->vor == b->vor && a->vand == b->vand && a->vfill == b->vfill &&
         a->vfilled == b->vfilled;
}

/* one random column decoded both ways; returns 0 when both match the definition throughout */
static int one_column(int *simd_blocks, int *longer_blocks, int *plane_blocks) {
  uint32_t w = 1 + (uint32_t)(rnd() % 8);
  uint64_t r = rnd();
  uint64_t count = r % 7 == 0 ? 1 + rnd() % 40 : 1 + rnd() % 1200; /* stride count - 1: any length */
  uint32_t flags = 0;
  if (rnd() & 1) flags |= NCS_COLF_DELTA;
  if (rnd() & 1) flags |= NCS_COLF_SIGNED;
  if (rnd() % 4 == 0) flags |= NCS_COLF_KEYED;
  if (rnd() % 3 == 0) flags |= (uint32_t)(rnd() % 64) << 3;
  uint64_t stride = count - 1;
  uint8_t *bytes = malloc(w * stride + 1);
  for (uint32_t b = 0; b < w; b++) {
    int style = (int)(rnd() % 5);
    for (uint64_t i = 0; i < stride; i++) {
      uint8_t v = (uint8_t)rnd();
      if (style == 1) v = 0;                                /* a plane of zeros */
      if (style == 2) v = (i / 97) % 2 ? 0 : v;             /* zeros in some blocks */
      if (style == 3) v = 0xff;                             /* every code near the top: sums wrap */
      if (style == 4 && b == w - 1) v = (i % 300) < 256 ? 0 : v; /* the top plane 0 in most blocks */
      bytes[b * stride + i] = v;
    }
  }
  uint64_t *want = malloc(count * sizeof *want), va[NCS_COLR_BLOCK], vb[NCS_COLR_BLOCK];
  struct ncs_colr a;
  memset(&a, 0, sizeof a);
  a.id = NCS_COL_FIELD(NCS_REC_CALL, 5);
  a.flags = flags;
  a.count = (uint32_t)count;
  a.width = w;
  a.first = rnd() % 3 ? rnd() : rnd() >> (rnd() % 64);
  a.bytes = bytes;
  struct ncs_colr b = a;
  a.vals = va;
  b.vals = vb;
  truth(&a, want);
  int bad = 0;
  for (uint64_t q = 0; q < count && !bad;) {
    uint64_t left = count - q, n = rnd() % 3 ? NCS_COLR_BLOCK : 1 + rnd() % NCS_COLR_BLOCK;
    if (n > left) n = left;
    col_simd = 0;
    uint64_t ra = ncs_col_decode(&a, n);
    col_simd = 1;
    uint64_t rb = ncs_col_decode(&b, n);
    *simd_blocks += n >= 17;
    bad |= ra != rb || !same_state(&a, &b) || memcmp(va, want + q, n * sizeof *va) || memcmp(vb, want + q, n * sizeof *vb);
    /* the rows' varints' bytes beyond the shortest: from the byte planes (a signed column not
     * delta) or from the values, each path, against the values one at a time */
    unsigned lo = ncs_col_vlen(a.vand), hi = ncs_col_vlen(a.vor);
    if (hi > lo && !(flags & NCS_COLF_KEYED)) {
      size_t extra = 0;
      for (uint64_t i = 0; i < n; i++) extra += ncs_col_vlen(ncs_col_row_value(&a, va[i])) - lo;
      col_simd = 0;
      size_t ea = ncs_col_longer(&a, n, lo, hi);
      col_simd = 1;
      size_t eb = ncs_col_longer(&a, n, lo, hi);
      bad |= ea != extra || eb != extra;
      *longer_blocks += 1;
      *plane_blocks += (flags & (NCS_COLF_SIGNED | NCS_COLF_DELTA)) == NCS_COLF_SIGNED && 8 * w + NCS_COLF_SHIFT(flags) <= 62;
    }
    q += n;
  }
  free(bytes);
  free(want);
  return bad;
}

/* rows of n records: CALL and GPU_TIME (gpu) interleaved, values of every size; the shim's encoders */
static size_t make_rows(uint8_t *out, size_t n, int gpu, int wild) {
  struct ncs_call_delta d;
  ncs_call_delta_reset(&d);
  struct ncs_wbuf wb;
  size_t o = 0;
  uint64_t t = 1000000000000ull, g = 2000000000000ull;
  for (size_t i = 0; i < n; i++) {
    if (gpu && rnd() % 3 == 0) {
      struct ncs_gpu_time x = {.kind = 1, .thread = 1, .ref = i, .flags = 0};
      g += wild ? rnd() >> (rnd() % 64) : 100 + rnd() % 5000;
      x.gpu_start = g;
      x.gpu_end = g + (wild ? rnd() >> (rnd() % 64) : 10 + rnd() % 100000);
      ncs_wbuf_init(&wb, out + o, 4096);
      ncs_enc_gpu_time(&wb, &d, &x);
      o += wb.len;
      continue;
    }
    struct ncs_call c = {.op = (uint32_t)(rnd() % 9), .thread = 1, .tcall = i + 1, .comm = 1 + (uint32_t)(rnd() % 3),
                         .seq = i + 1, .count = wild ? rnd() >> (rnd() % 64) : 1024u << (rnd() % 12), .datatype = 7,
                         .root = wild ? (int32_t)rnd() : -1, .stream = 0x5604bbdc8e20ull};
    t += wild ? rnd() >> (rnd() % 64) : 80 + rnd() % 4000;
    c.t_enter = t;
    c.t_exit = t + (wild ? rnd() >> (rnd() % 64) : 20 + rnd() % 500);
    o += ncs_encode_call(out + o, &d, &c);
  }
  return o;
}

/* Sets bit 0 (SIGNED) of the flags of the payload's columns of `type` whose bit j of `flip`
 * is set to its opposite (the flags varint keeps its length); returns how many it flipped. */
static int flip_signs(uint8_t *pay, size_t psz, uint64_t type, uint64_t flip) {
  const uint8_t *p = pay, *e = pay + psz;
  uint64_t ncol, id, fl, x;
  int n = 0;
  if (ncs_get_varint(&p, e, &ncol)) return 0;
  for (uint64_t i = 0; i < ncol; i++) {
    if (ncs_get_varint(&p, e, &id)) return n;
    uint8_t *flp = pay + (p - pay);
    if (ncs_get_varint(&p, e, &fl)) return n;
    for (int k = 0; k < 4; k++) (void)ncs_get_varint(&p, e, &x); /* count, first, width, stored */
    if (fl & NCS_COLF_KEYED) { (void)ncs_get_varint(&p, e, &x); (void)ncs_get_varint(&p, e, &x); }
    if (id >= 3 && id / 64 == type && (flip >> (id % 64) & 1)) { *flp ^= NCS_COLF_SIGNED; n++; }
  }
  return n;
}

/* A column payload read as the trace reader reads it (ncs_decv_call / ncs_decv_gpu_time from
 * the columns' values, a block at a time, one memo across payloads) against its rows rebuilt by
 * ncs_columns_body and decoded by ncs_dec_call / ncs_dec_gpu_time: the number of records that
 * differ, or -1 when the payload does not read as rsz bytes of rows (*got: how many it holds). */
static long decv_vs_rows(ZSTD_DCtx *dc, const uint8_t *pay, size_t psz, size_t rsz, struct ncs_decv_memo *mc,
                         struct ncs_decv_memo *mg, size_t *got) {
  static struct ncs_colrd rd;
  static struct ncs_call calls[NCS_COLR_BLOCK];
  static struct ncs_gpu_time gts[NCS_COLR_BLOCK];
  size_t need = 0, where = 0;
  const char *why = "";
  uint8_t *sc = NULL;
  int rc = ncs_columns_begin(&rd, dc, pay, psz, rsz, NULL, 0, &need, &why, &where);
  if (rc == -2 && (sc = malloc(need))) rc = ncs_columns_begin(&rd, dc, pay, psz, rsz, sc, need, &need, &why, &where);
  struct ncs_call_delta dv, dr;
  ncs_call_delta_reset(&dv);
  ncs_call_delta_reset(&dr);
  long bad = 0;
  uint64_t type;
  const uint8_t *body;
  size_t len;
  while (rc == 0 && (rc = ncs_columns_next(&rd, &type, &body, &len, &why)) == 1) {
    rc = 0;
    uint8_t row[NCS_COL_MAX_FIELDS * 10];
    struct ncs_rbuf rb;
    if (body) continue;
    ncs_rbuf_init(&rb, row, ncs_columns_body(&rd, row), NULL, 0);
    if (type == NCS_REC_CALL) {
      struct ncs_call c;
      if (rd.at == 0) ncs_decv_call(rd.vp, rd.nv, rd.vsame, rd.vsigned, rd.nblock, mc, &dv, calls);
      bad += ncs_dec_call(&rb, &dr, &c) != 0 || memcmp(&c, &calls[rd.at], sizeof c) != 0;
    } else if (type == NCS_REC_GPU_TIME) {
      struct ncs_gpu_time g;
      memset(&g, 0, sizeof g);
      if (rd.at == 0) ncs_decv_gpu_time(rd.vp, rd.nv, rd.vsame, rd.vsigned, rd.nblock, mg, &dv, gts);
      bad += ncs_dec_gpu_time(&rb, &dr, &g) != 0 || g.kind != gts[rd.at].kind || g.thread != gts[rd.at].thread ||
             g.ref != gts[rd.at].ref || g.gpu_start != gts[rd.at].gpu_start || g.gpu_end != gts[rd.at].gpu_end ||
             g.flags != gts[rd.at].flags;
    }
  }
  *got = rd.o;
  if (rc == 0) rc = ncs_columns_end(&rd, &why);
  free(sc);
  return rc == 0 ? bad : -1;
}

int main(void) {
#if defined(__SSE2__)
  int simd_blocks = 0, fails = 0, cols = 3000, longer_blocks = 0, plane_blocks = 0;
  for (int i = 0; i < cols; i++) fails += one_column(&simd_blocks, &longer_blocks, &plane_blocks);
  CHECK(fails == 0 && simd_blocks > 1000 && plane_blocks > 300,
        "columns: %d random field columns (widths 1-8, delta, signed, shifted, keyed, wrapping codes, any plane length) decoded in random blocks: the SSE2 gather and the portable loop both give the format's values and the same cursor, and the rows' varints' lengths beyond the shortest (ncs_col_longer; %d blocks, %d from the byte planes) (%d failed; %d blocks with 16 or more values)",
        cols, longer_blocks, plane_blocks, fails, simd_blocks);
#else
  printf("SKIP: columns: the SSE2 plane gather: not an SSE2 build\n");
#endif
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  static const size_t ns[] = {1, 2, 15, 16, 17, 33, 255, 256, 257, 1000, 8193};
  int trips = 0, good = 0;
  for (int wild = 0; wild < 2; wild++)
    for (int gpu = 0; gpu < 2; gpu++)
      for (size_t s = 0; s < sizeof ns / sizeof *ns; s++) {
        size_t n = ns[s], cap = n * 200 + 4096;
        uint8_t *rows = malloc(cap);
        size_t rsz = make_rows(rows, n, gpu, wild), pcap = NCS_COLUMNS_BOUND(rsz), need = 0, where = 0;
        uint8_t *pay = malloc(pcap), *back = malloc(rsz + 1), *sc = NULL;
        const char *why = "";
        size_t psz = ncs_columns_pack(cc, 3, pay, pcap, rows, rsz);
        int ok = psz > 0;
        for (int simd = 0; simd < 2 && ok; simd++) {
          col_simd = simd;
          int rc = ncs_columns_unpack(dc, pay, psz, back, rsz, sc, 0, &need, &why, &where);
          if (rc == -2 && (sc = realloc(sc, need))) rc = ncs_columns_unpack(dc, pay, psz, back, rsz, sc, need, &need, &why, &where);
          ok = rc == 0 && !memcmp(back, rows, rsz);
        }
        trips++;
        good += ok;
        if (!ok) printf("   (%zu records, gpu %d, wild %d: %s)\n", n, gpu, wild, why);
        free(rows); free(pay); free(back); free(sc);
      }
  col_simd = 1;
  /* columns whose sign is not their field's (no writer of ours makes them): signed fields in
   * unsigned columns and unsigned fields in signed ones, in chunks read one after another with
   * one memo, between chunks as written */
  struct ncs_decv_memo mc, mg;
  memset(&mc, 0, sizeof mc);
  memset(&mg, 0, sizeof mg);
  int fchunks = 0, fgood = 0, flipped = 0;
  for (int i = 0; i < 24; i++) {
    size_t n = i % 3 == 2 ? 700 : 300, cap = n * 200 + 4096;
    uint8_t *rows = malloc(cap);
    size_t rsz = make_rows(rows, n, i & 1, i % 5 == 4), pcap = NCS_COLUMNS_BOUND(rsz);
    uint8_t *pay = malloc(pcap);
    size_t psz = ncs_columns_pack(cc, 3, pay, pcap, rows, rsz);
    size_t fsz = rsz; /* the rows' size once flipped: learnt by a first read */
    struct ncs_decv_memo m1 = mc, m2 = mg;
    if (i % 4) {
      flipped += flip_signs(pay, psz, NCS_REC_CALL, rnd()) + flip_signs(pay, psz, NCS_REC_GPU_TIME, rnd());
      (void)decv_vs_rows(dc, pay, psz, 4 * rsz, &m1, &m2, &fsz);
    }
    fchunks++;
    fgood += psz > 0 && decv_vs_rows(dc, pay, psz, fsz, &mc, &mg, &fsz) == 0;
    free(rows);
    free(pay);
  }
  CHECK(fgood == fchunks && flipped > 100,
        "columns: %d chunks, %d of their CALL and GPU_TIME columns' signs flipped: the structs decoded from the columns' values are those of the rows they stand for (%d were)",
        fchunks, flipped, fgood);
  CHECK(good == trips, "columns: %d chunks of CALL (and GPU_TIME) rows from the shim's encoders, 1 to 8193 records, steady and wild values, pack and unpack to the same bytes through each path (%d did)",
        trips, good);
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
  return check_done();
}
