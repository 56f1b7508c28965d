/* test_col_simd.c — the column reader's SSE2 plane gather (columns.h ncs_col_loop16) against
 * its portable loop and against the format's own definition of a field column (FORMAT.md
 * "Column payload": code i is byte i of each plane, the value is the running sum of the
 * unzigzagged codes times 2^shift for a delta column, else each one alone, zigzagged again
 * when the field is signed). Random columns of every width 1..8, delta or not, signed or not,
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
  int sg = (k->flags & (NCS_COLF_SIGNED | NCS_COLF_KEYED)) == NCS_COLF_SIGNED; /* keyed: signed after unkey */
  uint64_t stride = k->count - 1, x = 0;
  for (uint64_t i = 0; i < k->count; i++) {
    uint64_t z = k->first;
    if (i) {
      z = 0;
      for (uint32_t b = 0; b < k->width; b++) z |= (uint64_t)k->bytes[b * stride + i - 1] << (8 * b);
    }
    uint64_t u = (uint64_t)ncs_unzigzag(z) << sh;
    x = delta && i ? x + u : u;
    out[i] = sg ? ncs_zigzag((int64_t)x) : x;
  }
}

static int same_state(const struct ncs_colr *a, const struct ncs_colr *b) {
  return a->q == b->q && a->vprev == b->vprev && a->vor == b->vor && a->vand == b->vand && a->vfill == b->vfill &&
         a->vfilled == b->vfilled;
}

/* one random column decoded both ways; returns 0 when both match the definition throughout */
static int one_column(int *simd_blocks) {
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

int main(void) {
#if defined(__SSE2__)
  int simd_blocks = 0, fails = 0, cols = 3000;
  for (int i = 0; i < cols; i++) fails += one_column(&simd_blocks);
  CHECK(fails == 0 && simd_blocks > 1000,
        "columns: %d random field columns (widths 1-8, delta, signed, shifted, keyed, wrapping codes, any plane length) decoded in random blocks: the SSE2 gather and the portable loop both give the format's values and the same cursor (%d failed; %d blocks with 16 or more values)",
        cols, fails, simd_blocks);
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
  CHECK(good == trips, "columns: %d chunks of CALL (and GPU_TIME) rows from the shim's encoders, 1 to 8193 records, steady and wild values, pack and unpack to the same bytes through each path (%d did)",
        trips, good);
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
  return check_done();
}
