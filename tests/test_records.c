/* test_records.c — every record of include/ncclscope/records.h through the coders encode.h
 * expands from it, generated from the same lists: a record added there is tested here with no
 * edit. Per record: random values of every width (extremes included) round trip, in a
 * sequence sharing one chunk's delta state; every prefix of a body decodes (a cut inside a
 * field is an error, nothing is read past the body: ASan builds check); a body cut at a field
 * boundary reads the missing fields as their declared defaults; bytes appended after the
 * known fields are ignored. Then the column layout (columns.h): a chunk of every record type
 * (random values, cut and lengthened bodies, long varints, unknown types) packs into columns
 * and unpacks to exactly the same rows; damaged column payloads are refused, never overrun. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mix.h"
#include "check.h"
static int key_always; /* columns.h: every keyed candidate keyed (the edge cases below) */
static int key_general; /* columns.h: every keyed column unkeyed by its shape's general copy (any sign pattern) */
#define NCS_COLK_ALWAYS key_always
#define NCS_COLK_GENERAL key_general
#include "ncclscope/columns.h"
#include "ncclscope/encode.h"

static uint64_t rng_state = 42;
static uint64_t rnd(void) { /* splitmix64: the step, then base/mix.h's finaliser */
  return ncs_mix64(rng_state += 0x9e3779b97f4a7c15ull);
}
static uint64_t rnd_val(void) { /* every varint length, and the extremes */
  uint64_t r = rnd();
  switch (r % 5) {
  case 0: return r >> 60;
  case 1: return r >> 40;
  case 2: return r;
  case 3: return UINT64_MAX - (r >> 62);
  default: return (r >> 33) & 0x7f;
  }
}

/* One random edit of a column payload at pos: a flipped bit, 0xff, a random byte, or the
 * payload cut after pos. Returns the payload's length after the edit. */
static size_t damage_at(uint8_t *mut, size_t mn, size_t pos) {
  switch (rnd() % 4) {
  case 0: mut[pos] ^= (uint8_t)(1u << (rnd() % 8)); break;
  case 1: mut[pos] = 0xff; break;
  case 2: mut[pos] = (uint8_t)rnd(); break;
  default: mn = pos + 1; break;
  }
  return mn;
}

/* Unpacks a damaged payload of n row bytes into back, growing the scratch *sc on -2. 0 when
 * it unpacked, or was refused with a reason and an offset inside it (counted in *refused);
 * 1 for any other answer (a refusal without a reason or offset, a scratch need over 64 MiB). */
static int unpack_damaged(ZSTD_DCtx *dc, const uint8_t *mut, size_t mn, uint8_t *back, size_t n,
                          uint8_t **sc, size_t *got, int *refused) {
  size_t need = 0, where = 0;
  const char *why = "";
  int rc = 0;
  for (int k = 0; k < 2; k++) {
    rc = ncs_columns_unpack(dc, mut, mn, back, n, *sc, *got, &need, &why, &where);
    if (rc != -2) break;
    if (need > (64u << 20)) return 1;
    free(*sc);
    *sc = malloc(need);
    *got = need;
  }
  if (rc == -1) {
    (*refused)++;
    return !why[0] || where > mn;
  }
  return rc != 0;
}

/* Strings live in a pool that outlives the record being filled. */
static char pool[1 << 16];
static size_t pool_used;
static const char *rnd_str(size_t *len, int with_nul) {
  size_t n = rnd() % 40;
  if (pool_used + n + 1 > sizeof pool) pool_used = 0;
  char *s = pool + pool_used;
  for (size_t i = 0; i < n; i++) s[i] = (char)(with_nul && i == n / 2 ? 0 : 'a' + (int)(rnd() % 26));
  s[n] = 0;
  pool_used += n + 1;
  if (len) *len = n;
  return s;
}

/* Elements of arrays, per element type. */
#define NELEM 4
static struct ncs_kv elems_kv[NELEM];
static struct ncs_frame elems_frame[NELEM];

/* ---- fill, compare and default-check, expanded per field kind ---- */
#define FILL_(K, f, a) FILL_##K(f, a)
#define FILL_U32(f, a) x->f = (uint32_t)rnd_val();
#define FILL_I32(f, a) x->f = (int32_t)rnd_val();
#define FILL_U64(f, a) x->f = rnd_val();
#define FILL_FIX64(f, a) x->f = rnd_val();
#define FILL_DELTA(f, a) x->f = rnd_val();
#define FILL_SPAN(f, a) x->f = x->a + rnd_val();
#define FILL_STR(f, a) x->f = rnd_str(NULL, 0);
#define FILL_STRN(f, a) x->f = rnd_str(&x->a, 1);
#define FILL_CHARS(f, a) snprintf(x->f, sizeof x->f, "%s", rnd_str(NULL, 0));
#define FILL_ARRAY(f, a) \
  x->n##f = (uint32_t)(rnd() % (NELEM + 1)); \
  for (uint32_t i_ = 0; i_ < x->n##f; i_++) fill_##a(&elems_##a[i_]); \
  x->f = elems_##a;

#define SAME_(K, f, a) SAME_##K(f, a)
#define SAME_U32(f, a) ok &= x->f == y->f;
#define SAME_I32(f, a) ok &= x->f == y->f;
#define SAME_U64(f, a) ok &= x->f == y->f;
#define SAME_FIX64(f, a) ok &= x->f == y->f;
#define SAME_DELTA(f, a) ok &= x->f == y->f;
#define SAME_SPAN(f, a) ok &= x->f == y->f;
#define SAME_STR(f, a) ok &= !strcmp(x->f, y->f);
#define SAME_STRN(f, a) ok &= x->a == y->a && !memcmp(x->f, y->f, x->a) && y->f[y->a] == 0;
#define SAME_CHARS(f, a) ok &= !strcmp(x->f, y->f);
#define SAME_ARRAY(f, a) \
  ok &= x->n##f == y->n##f; \
  for (uint32_t i_ = 0; ok && i_ < x->n##f; i_++) ok &= same_##a(&x->f[i_], &y->f[i_]);

/* a field not present in the body: its declared default (DELTA/SPAN: no change) */
#define DEFAULT_(K, f, a) DEFAULT_##K(f, a)
#define DEFAULT_U32(f, a) ok &= y->f == (uint32_t)(a);
#define DEFAULT_I32(f, a) ok &= y->f == (int32_t)(a);
#define DEFAULT_U64(f, a) ok &= y->f == (uint64_t)(a);
#define DEFAULT_FIX64(f, a) ok &= y->f == (uint64_t)(a);
#define DEFAULT_DELTA(f, a)
#define DEFAULT_SPAN(f, a)
#define DEFAULT_STR(f, a) ok &= y->f[0] == 0;
#define DEFAULT_STRN(f, a) ok &= y->a == 0 && y->f[0] == 0;
#define DEFAULT_CHARS(f, a) ok &= y->f[0] == 0;
#define DEFAULT_ARRAY(f, a) ok &= y->n##f == 0;

#define HELPERS_(T, name, st, rd) \
  static void fill_##name(struct ncs_##name *x) { NCS_FIELDS_##name(FILL_) } \
  static int same_##name(const struct ncs_##name *x, const struct ncs_##name *y) { \
    int ok = 1; \
    NCS_FIELDS_##name(SAME_) \
    return ok; \
  } \
  static inline int defaults_##name(const struct ncs_##name *y) { \
    int ok = 1; \
    NCS_FIELDS_##name(DEFAULT_) \
    return ok; \
  }
#define HELPERS_E_(name) HELPERS_(-, name, PLAIN, -)
NCS_ELEMENTS(HELPERS_E_)
NCS_RECORDS(HELPERS_)

#define ARG_PLAIN(d)
#define ARG_DELTA(d) d,

/* Round trips and cuts for one record type. */
#define TEST_(T, name, st, rd) \
  { \
    struct ncs_call_delta de, dd; \
    ncs_call_delta_reset(&de); \
    ncs_call_delta_reset(&dd); \
    int rt = 1, cuts = 1, dflt = 1, trail = 1; \
    for (int i = 0; i < 2000 && rt; i++) { \
      struct ncs_##name x, y; \
      memset(&x, 0, sizeof x); \
      fill_##name(&x); \
      struct ncs_wbuf w; \
      ncs_wbuf_init(&w, body, sizeof body - 8); \
      ncs_enc_##name##_body(&w, ARG_##st(&de) & x); \
      if (w.overflow) { rt = 0; break; } \
      rows_add(NCS_REC_##T, body, w.len, i); \
      struct ncs_rbuf r; \
      ncs_rbuf_init(&r, body, w.len, scratch, sizeof scratch); \
      struct ncs_call_delta keep = dd; \
      rt &= ncs_dec_##name(&r, ARG_##st(&dd) & y) == 0 && same_##name(&x, &y); \
      /* the same body with bytes after its known fields */ \
      memcpy(body + w.len, "\x01\x02\x7f", 3); \
      struct ncs_call_delta d2 = keep; \
      ncs_rbuf_init(&r, body, w.len + 3, scratch, sizeof scratch); \
      trail &= ncs_dec_##name(&r, ARG_##st(&d2) & y) == 0 && same_##name(&x, &y); \
      (void)d2; \
      if (i % 50) continue; \
      for (size_t k = 0; k < w.len; k++) { /* every prefix, in a buffer of exactly k bytes */ \
        uint8_t *cut = malloc(k ? k : 1); \
        memcpy(cut, body, k); \
        d2 = keep; \
        ncs_rbuf_init(&r, cut, k, scratch, sizeof scratch); \
        int e = ncs_dec_##name(&r, ARG_##st(&d2) & y); \
        cuts &= e == 0 || e == -1; \
        if (k == 0) dflt &= e == 0 && defaults_##name(&y); \
        free(cut); \
      } \
    } \
    CHECK(rt, #T ": 2000 random records (every varint width) round trip, one delta state"); \
    CHECK(trail, #T ": bytes after the known fields are ignored"); \
    CHECK(cuts, #T ": every prefix of a body decodes or is refused, nothing read past it"); \
    CHECK(dflt, #T ": an empty body reads every field as its declared default"); \
  }

static uint8_t body[1 << 14];
static uint8_t scratch[1 << 16];

/* A chunk's rows of every type: each record whole; every 7th with a body cut at a random
 * length or lengthened by a byte, every 11th preceded by an unknown type, every 13th with
 * a field written in a long (non-shortest) varint form. */
static uint8_t rows[1 << 24];
static size_t nrows;
static void rows_add(uint32_t type, const uint8_t *b, size_t len, int i) {
  if (nrows + len + 64 > sizeof rows) return;
  if (i % 11 == 3) { rows[nrows++] = 60; rows[nrows++] = 2; rows[nrows++] = 0x81; rows[nrows++] = 0x01; }
  if (i % 7 == 5 && len) len = rnd() % len;
  int longer = i % 7 == 6;
  int longform = i % 13 == 4 && len && b[0] < 0x80;
  nrows += ncs_put_varint(rows + nrows, type);
  nrows += ncs_put_varint(rows + nrows, len + (size_t)longer + (size_t)longform);
  if (longform) { rows[nrows++] = (uint8_t)(b[0] | 0x80); rows[nrows++] = 0; b++; len--; }
  memcpy(rows + nrows, b, len);
  nrows += len;
  if (longer) rows[nrows++] = 0x05;
}

/* zstd blocks in a column's frame, read from zstd's frame format itself (RFC 8878: frame
 * header, then 3-byte block headers); -1 when the bytes are not one frame. */
static int zstd_blocks(const uint8_t *f, size_t n) {
  if (n < 6 || ncs_get_u32(f) != 0xFD2FB528u) return -1;
  unsigned fhd = f[4], fcs = fhd >> 6, single = (fhd >> 5) & 1, did = fhd & 3;
  size_t at = 5 + (single ? 0 : 1) + (size_t)(did == 3 ? 4 : did) + (size_t)(fcs ? 1u << fcs : single);
  for (int blocks = 1; at + 3 <= n; blocks++) {
    uint32_t h = f[at] | (uint32_t)f[at + 1] << 8 | (uint32_t)f[at + 2] << 16;
    at += 3 + ((h >> 1 & 3) == 1 ? 1 : h >> 3); /* an RLE block holds one byte */
    if (h & 1) return at + ((fhd >> 2 & 1) ? 4 : 0) == n ? blocks : -1;
  }
  return -1;
}
/* The payload's zstd field columns: *time_ok 1 when every column of times (ncs_col_time) of
 * width w >= 2 has w blocks (a block per byte plane) and every other one block; returns how
 * many columns of times had planes, -1 when the directory or a frame does not parse. */
static int plane_blocks(const uint8_t *pay, size_t n, int *time_ok) {
  const uint8_t *p = pay, *e = pay + n;
  uint64_t ncol = 0, v[8];
  uint64_t id[256], fl[256], wd[256], st[256];
  int planed = 0;
  *time_ok = 1;
  if (ncs_get_varint(&p, e, &ncol) || ncol > 256) return -1;
  for (uint64_t i = 0; i < ncol; i++) {
    for (int j = 0; j < 6; j++)
      if (ncs_get_varint(&p, e, &v[j])) return -1;
    if ((v[1] & NCS_COLF_KEYED) && (ncs_get_varint(&p, e, &v[6]) || ncs_get_varint(&p, e, &v[7]))) return -1;
    id[i] = v[0], fl[i] = v[1], wd[i] = v[4], st[i] = v[5];
  }
  for (uint64_t i = 0; i < ncol; i++) {
    if ((size_t)(e - p) < st[i]) return -1;
    if (fl[i] & NCS_COLF_ZSTD) {
      int b = zstd_blocks(p, st[i]), planes = id[i] >= 3 && wd[i] >= 2 && ncs_col_time((uint32_t)id[i]);
      if (b < 0) return -1;
      if (b != (planes ? (int)wd[i] : 1)) *time_ok = 0;
      planed += planes;
    }
    p += st[i];
  }
  return planed;
}

static void test_columns(void) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  size_t cap = NCS_COLUMNS_BOUND(nrows), need = 0, where = 0, got = 0;
  uint8_t *pay = malloc(cap), *back = malloc(nrows + 1), *sc = NULL;
  const char *why = "";
  size_t psz = ncs_columns_pack(cc, 3, pay, cap, rows, nrows);
  int rc = -2;
  for (int k = 0; k < 2 && rc == -2; k++) {
    rc = ncs_columns_unpack(dc, pay, psz, back, nrows, sc, got, &need, &why, &where);
    if (rc == -2) { free(sc); sc = malloc(need); got = need; }
  }
  CHECK(psz > 0 && rc == 0 && !memcmp(back, rows, nrows),
        "columns: %zu bytes of rows of every record type (cut, lengthened, unknown, long varints) pack (%zu bytes) and unpack to the same bytes (%s)",
        nrows, psz, why);
  /* a steady loop's CALLs (the common case: the one-pass packer takes it) */
  {
    static uint8_t loop[1 << 20];
    size_t ln = 0;
    struct ncs_call_delta dl;
    ncs_call_delta_reset(&dl);
    uint64_t t = 1000000000000ull;
    for (unsigned i = 0; ln + NCS_CALL_MAX < sizeof loop; i++) {
      struct ncs_call c = {.op = 24 + i % 3, .thread = 1, .tcall = i + 1, .comm = 1, .seq = i + 1, .count = 1024u << (i % 4),
                           .datatype = 7, .root = -1, .stream = 0x5604bbdc8e20ull, .callsite = 77 + i % 3};
      t += 80 + rnd() % 400; c.t_enter = t; c.t_exit = t + 20 + rnd() % 50;
      ln += ncs_encode_call(loop + ln, &dl, &c);
    }
    size_t lcap = NCS_COLUMNS_BOUND(ln), lneed = 0, lwhere = 0;
    uint8_t *lp = malloc(lcap), *lb = malloc(ln), *ls = NULL;
    size_t fz = ncs_columns_pack_fast(cc, 3, lp, lcap, loop, ln);
    int lrc = ncs_columns_unpack(dc, lp, fz, lb, ln, NULL, 0, &lneed, &why, &lwhere);
    if (lrc == -2 && (ls = malloc(lneed))) lrc = ncs_columns_unpack(dc, lp, fz, lb, ln, ls, lneed, &lneed, &why, &lwhere);
    CHECK(fz > 0 && lrc == 0 && !memcmp(lb, loop, ln), "columns: a steady loop's CALLs take the one-pass packer (%zu of %zu bytes) and unpack to the same bytes (%s)", fz, ln, why);
    size_t ez = ncs_columns_pack_exact(cc, 3, lp, lcap, loop, ln);
    lrc = ls ? ncs_columns_unpack(dc, lp, ez, lb, ln, ls, lneed, &lneed, &why, &lwhere) : -1;
    CHECK(ez > 0 && lrc == 0 && !memcmp(lb, loop, ln), "columns: the two-pass packer gives the same rows back too (%zu bytes)", ez);
    { /* a column of times in too little room: stored (n), nothing past cap; the context then works */
      static uint8_t col[4 * 4096], zb[sizeof col + 1024];
      for (size_t i = 0; i < sizeof col; i++) col[i] = i < sizeof col / 2 ? (uint8_t)(i / 64) : (uint8_t)rnd();
      uint32_t tid = NCS_COL_FIELD(NCS_REC_CALL, NCS_FI_call_t_enter);
      memset(zb, 0xA5, sizeof zb);
      size_t small_z = ncs_col_zstd(cc, 5, tid, 4, zb, 1000, col, sizeof col);
      int past = 0;
      for (size_t i = 1000; i < sizeof zb; i++) past |= zb[i] != 0xA5;
      size_t full = ncs_col_zstd(cc, 5, tid, 4, zb, sizeof zb, col, sizeof col);
      static uint8_t cb[sizeof col];
      size_t got2 = ZSTD_isError(full) ? 0 : ZSTD_decompressDCtx(dc, cb, sizeof cb, zb, full);
      CHECK(small_z == sizeof col && !past && !ZSTD_isError(full) && full < sizeof col && got2 == sizeof col &&
                !memcmp(cb, col, sizeof col) && zstd_blocks(zb, full) == 4,
            "columns: a column of times in too little room comes back as its own size (stored), nothing written past the room; the next one is 4 blocks (%zu bytes) that decompress to it",
            ZSTD_isError(full) ? 0 : full);
    }
    int tok = 0, planed = plane_blocks(lp, ez, &tok);
    CHECK(planed >= 1 && tok, "columns: the loop's columns of times of 2 bytes or more (t_enter; t_exit's durations fit a byte) are a zstd block per byte plane, every other zstd column one block (%d with planes)", planed);
    free(lp); free(lb); free(ls);
  }
  /* a small chunk too, and one record alone */
  size_t one = 0;
  { const uint8_t *p = rows; uint64_t t = 0, l = 0; (void)ncs_get_varint(&p, rows + nrows, &t); (void)ncs_get_varint(&p, rows + nrows, &l); one = (size_t)(p - rows) + (size_t)l; }
  size_t p1 = ncs_columns_pack(cc, 3, pay, cap, rows, one);
  rc = ncs_columns_unpack(dc, pay, p1, back, one, sc, got, &need, &why, &where);
  CHECK(p1 && rc == 0 && !memcmp(back, rows, one), "columns: one record alone round trips");
  /* rows that do not parse are not packed (the chunk is then written as rows) */
  CHECK(ncs_columns_pack(cc, 3, pay, cap, rows, one - 1) == 0, "columns: rows cut inside a record are refused");
  CHECK(ncs_columns_pack(cc, 3, pay, 4096, rows, nrows) == 0, "columns: too little room: 0, nothing written past cap");
  uint8_t longtype[] = {0x85, 0x00, 0x00}; /* type 5 in a two-byte varint, empty body */
  CHECK(ncs_columns_pack(cc, 3, pay, cap, longtype, 3) == 0, "columns: a record type or length in a long varint form is refused (rows keep their bytes)");
  { /* 5.0: CALL_RUN refers to the row before it: rows holding one stay rows, by both packers */
    uint8_t *withrun = malloc(one + 4);
    memcpy(withrun, rows, one);
    memcpy(withrun + one, (const uint8_t[]){NCS_REC_CALL_RUN, 2, 2, 4}, 4);
    CHECK(withrun && ncs_columns_pack(cc, 3, pay, cap, withrun, one + 4) == 0 &&
              ncs_columns_pack_exact(cc, 3, pay, cap, withrun, one + 4) == 0 && ncs_columns_pack_fast(cc, 3, pay, cap, withrun, one + 4) == 0,
          "columns: rows with a CALL_RUN record are refused (a CALL_RUN lives in row chunks only)");
    free(withrun);
  }
  /* damage: every answer 0 or -1 (with a reason) or -2, never a crash or an overrun */
  size_t small = nrows < 20000 ? nrows : 20000; /* records boundary found below */
  { const uint8_t *p = rows, *e = rows + nrows; uint64_t t = 0, l = 0;
    while (p < e && (size_t)(p - rows) < 20000) { (void)ncs_get_varint(&p, e, &t); (void)ncs_get_varint(&p, e, &l); p += l; }
    small = (size_t)(p - rows); }
  size_t ps = ncs_columns_pack(cc, 3, pay, cap, rows, small);
  uint8_t *mut = malloc(ps);
  int bad = 0, refused = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(mut, pay, ps);
    size_t mn = ps;
    int edits = 1 + (int)(rnd() % 3);
    for (int e = 0; e < edits; e++) mn = damage_at(mut, mn, rnd() % mn);
    bad |= unpack_damaged(dc, mut, mn, back, small, &sc, &got, &refused);
  }
  CHECK(!bad && refused > 0, "columns: 3000 damaged payloads: each unpacked or refused with a reason and an offset inside it (%d refused)", refused);
  free(mut); free(pay); free(back); free(sc);
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
}

/* Keyed columns (format 3.0): how many field columns of a payload carry NCS_COLF_KEYED. */
static char keyed_ids[256];
static int keyed_columns(const uint8_t *pay, size_t n) {
  const uint8_t *p = pay, *e = pay + n;
  uint64_t ncol = 0, v[6], km, ke;
  int keyed = 0;
  keyed_ids[0] = 0;
  if (ncs_get_varint(&p, e, &ncol)) return -1;
  for (uint64_t i = 0; i < ncol; i++) {
    for (int j = 0; j < 6; j++)
      if (ncs_get_varint(&p, e, &v[j])) return -1;
    if (v[1] & NCS_COLF_KEYED) {
      size_t l = strlen(keyed_ids);
      if (l < sizeof keyed_ids - 16) snprintf(keyed_ids + l, sizeof keyed_ids - l, " %u.%u", (unsigned)(v[0] / 64), (unsigned)(v[0] % 64));
      keyed++;
      if (ncs_get_varint(&p, e, &km) || ncs_get_varint(&p, e, &ke)) return -1;
    }
  }
  return keyed;
}

/* Packs rows with both packers and unpacks them: 1 when each gives back exactly the rows;
 * *keyed: keyed columns in the one-pass packer's payload (or the two-pass one's). */
static int keyed_round_trip(ZSTD_CCtx *cc, ZSTD_DCtx *dc, const uint8_t *rows_in, size_t n, int *keyed,
                            const char **why) {
  size_t cap = NCS_COLUMNS_BOUND(n), need = 0, where = 0;
  uint8_t *pay = malloc(cap), *back = malloc(n + 1), *sc = NULL;
  int ok = pay && back;
  *keyed = -1;
  for (int exact = 0; ok && exact < 2; exact++) {
    size_t z = exact ? ncs_columns_pack_exact(cc, 3, pay, cap, rows_in, n) : ncs_columns_pack(cc, 3, pay, cap, rows_in, n);
    if (!z) { ok = 0; *why = "not packed"; break; }
    if (*keyed < 0) *keyed = keyed_columns(pay, z);
    int rc = ncs_columns_unpack(dc, pay, z, back, n, NULL, 0, &need, why, &where);
    if (rc == -2) { free(sc); sc = malloc(need); rc = sc ? ncs_columns_unpack(dc, pay, z, back, n, sc, need, &need, why, &where) : -1; }
    ok = rc == 0 && !memcmp(back, rows_in, n);
  }
  free(pay); free(back); free(sc);
  return ok;
}

/* Keyed columns: CALL seq, t_enter and duration, GPU_TIME gpu_start, KERNEL start, coded per
 * key and after the previous end, give back the same rows in every case the coding has. */
static void test_keyed_columns(void) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  static uint8_t buf[1 << 21];
  const char *why = "";
  int keyed = 0;
  enum { STEADY, FIRST_LATE, OVERFLOW, WRAP, BACKWARDS, RANDOM, NCASES };
  static const char *what[NCASES] = {
      "a steady DDP-like loop (3 communicators, buckets, a group of sends)",
      "keys first seen after the packer's sample (a new communicator after 2000 calls)",
      "key table overflow: 5000 distinct (op, comm, count) keys, more than its 256 slots",
      "wrap-around: times and durations near 2^64, counters past 2^64",
      "negative deltas: times, durations and counters going backwards",
      "random values of every width in every field"};
  for (int cs = 0; cs < NCASES; cs++) {
    size_t n = 0;
    struct ncs_call_delta d;
    ncs_call_delta_reset(&d);
    uint64_t t = cs == WRAP ? UINT64_MAX - 5000000 : 1000000000000ull, gend = t, kend = t, seq[4] = {0, 0, 0, 0};
    for (unsigned i = 0; i < 6000; i++) {
      struct ncs_wbuf w;
      struct ncs_call c;
      unsigned comm = 1 + i % 3;
      if (cs == FIRST_LATE && i >= 2000) comm = 3 + (i % 2); /* 4 appears only now */
      memset(&c, 0, sizeof c);
      c.op = i % 11 < 8 ? 24 : 33 + i % 2;
      c.thread = 1;
      c.tcall = i + 1;
      c.comm = comm;
      c.seq = ++seq[comm % 4];
      c.count = 1024u << (i % 4);
      c.datatype = 7;
      c.root = -1;
      c.stream = 0x5604bbdc8e20ull;
      c.group = i % 11 >= 8 ? i - i % 11 + 8 : 0;
      c.callsite = 77;
      if (cs == OVERFLOW) c.count = 4096 + i % 5000, c.op = 24 + i % 7;
      uint64_t gap = 80 + rnd() % 400, dur = 20 + rnd() % 50;
      if (cs == BACKWARDS) { t -= gap; c.seq = 1000000 - i; c.t_enter = t; c.t_exit = t + (i % 7 == 0 ? 0 : dur); }
      else { t += gap; c.t_enter = t; c.t_exit = t + dur; }
      if (cs == WRAP) c.seq = UINT64_MAX - 3 + i, c.t_exit = c.t_enter + (i % 2 ? UINT64_MAX - dur : dur);
      if (cs == RANDOM) fill_call(&c);
      ncs_wbuf_init(&w, buf + n, sizeof buf - n);
      ncs_enc_call(&w, &d, &c);
      n += w.len;
      if (i % 2 == 0) { /* its GPU time, and two kernels */
        struct ncs_gpu_time g = {.kind = 0, .thread = 1, .ref = c.tcall, .gpu_start = gend + rnd() % 3000 * 256,
                                 .flags = 0};
        if (cs == BACKWARDS) g.gpu_start = gend - rnd() % 3000 * 256;
        g.gpu_end = g.gpu_start + 256 * (1 + rnd() % 900);
        if (cs == RANDOM) fill_gpu_time(&g);
        gend = g.gpu_end;
        ncs_wbuf_init(&w, buf + n, sizeof buf - n);
        ncs_enc_gpu_time(&w, &d, &g);
        n += w.len;
        for (int k = 0; k < 2; k++) {
          struct ncs_kernel kr = {.kclass = 1 + k, .device = 0, .stream = 7 + k, .start = kend + rnd() % 100 * 32,
                                  .duration = 32 * (1 + rnd() % 2000), .name = 3 + k, .correlation = i};
          if (cs == BACKWARDS) kr.start = kend - rnd() % 100 * 32;
          if (cs == WRAP && k) kr.start = UINT64_MAX - rnd() % 1000; /* its end wraps past 0 */
          if (cs == RANDOM) fill_kernel(&kr);
          kend = kr.start + kr.duration;
          ncs_wbuf_init(&w, buf + n, sizeof buf - n);
          ncs_enc_kernel(&w, &kr);
          n += w.len;
        }
      }
    }
    int ok = keyed_round_trip(cc, dc, buf, n, &keyed, &why);
    CHECK(ok && (cs == RANDOM || keyed > 0), "keyed columns: %s: %zu bytes of rows, both packers, %d keyed columns as the packer chose (%s): the same rows back (%s)",
          what[cs], n, keyed, keyed_ids, why);
    key_always = 1;
    ok = keyed_round_trip(cc, dc, buf, n, &keyed, &why);
    key_always = 0;
    CHECK(ok && keyed == 6, "keyed columns: %s: all 6 candidates keyed (CALL seq, group, t_enter, duration; GPU_TIME start; KERNEL start) (%s): the same rows back (%s)", what[cs], keyed_ids, why);
    key_always = key_general = 1; /* the reader's loop copies for the writer's sign patterns left out */
    ok = keyed_round_trip(cc, dc, buf, n, &keyed, &why);
    key_always = key_general = 0;
    CHECK(ok && keyed == 6, "keyed columns: %s: all 6 keyed, each unkeyed by its shape's general copy: the same rows back (%s)", what[cs], why);
    /* the first record of every key in a chunk: every prefix is a chunk of its own */
    if (cs == STEADY) {
      int all = 1;
      const uint8_t *p = buf, *e = buf + n;
      key_always = 1;
      for (int r = 0; r < 400 && p < e && all; r++) {
        uint64_t ty = 0, ln = 0;
        (void)ncs_get_varint(&p, e, &ty);
        (void)ncs_get_varint(&p, e, &ln);
        p += ln;
        all &= keyed_round_trip(cc, dc, buf, (size_t)(p - buf), &keyed, &why);
      }
      key_always = 0;
      CHECK(all, "keyed columns: chunks of the first 1 .. 400 records (each key's first record in its chunk) round trip (%s)", why);
      /* damaged keyed payloads: unpacked or refused with a reason, never an overrun */
      size_t small = (size_t)(p - buf), cap = NCS_COLUMNS_BOUND(small), got = 0;
      uint8_t *pay = malloc(cap), *mut = malloc(cap), *back = malloc(small), *sc = NULL;
      key_always = 1;
      size_t ps = pay ? ncs_columns_pack(cc, 3, pay, cap, buf, small) : 0;
      key_always = 0;
      int bad = !ps || !mut || !back || keyed_columns(pay, ps) != 6, refused = 0;
      for (int it = 0; it < 3000 && !bad; it++) {
        memcpy(mut, pay, ps);
        size_t mn = ps, pos = rnd() % 60; /* mostly the directory, where the keys are */
        if (it % 2) pos = rnd() % mn;
        mn = damage_at(mut, mn, pos);
        bad |= unpack_damaged(dc, mut, mn, back, small, &sc, &got, &refused);
      }
      CHECK(!bad && refused > 0, "keyed columns: 3000 damaged payloads with 6 keyed columns: each unpacked or refused with a reason and an offset inside it (%d refused)", refused);
      free(pay); free(mut); free(back); free(sc);
    }
  }
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
}

/* PROFILE_ID (format 3.1): every listed name and the empty one go to an id and back; a name
 * not listed and an id not listed are refused; a chunk of PROFILE_IDs as the shim writes them
 * (four functions, NCCL's counter per communicator and function) packs with its seq column
 * keyed and unpacks to the same rows, by both packers. */
static void test_profile_id(void) {
  int names = 0, back_ok = 1;
  for (uint32_t id = 0; ncs_profile_name(id); id++, names++) {
    struct ncs_profile p = {.comm_hash = 7, .rank = 1, .nranks = 2, .seq = 9, .count = 4096, .root = -1, .t = 123456789, .version = 5};
    const char *n = ncs_profile_name(id);
    snprintf(p.func, sizeof p.func, "%s", n);
    snprintf(p.algo, sizeof p.algo, "%s", n);
    snprintf(p.proto, sizeof p.proto, "%s", n);
    snprintf(p.datatype, sizeof p.datatype, "%s", n);
    struct ncs_profile_id x;
    struct ncs_profile q;
    back_ok &= strlen(n) < NCS_PROF_STR && ncs_profile_to_id(&p, &x) == 0 && x.func == id && x.datatype == id &&
               ncs_profile_from_id(&x, &q) == 0 && !memcmp(&p, &q, sizeof p);
  }
  CHECK(names > 30 && back_ok, "PROFILE_ID: the empty name and the %d listed names go to their id and back to the same PROFILE", names - 1);
  struct ncs_profile u = {0};
  struct ncs_profile_id ux = {0};
  snprintf(u.func, sizeof u.func, "AllReduce");
  snprintf(u.algo, sizeof u.algo, "MyAlgo");
  CHECK(ncs_profile_to_id(&u, &ux) == -1, "PROFILE_ID: a name not listed is refused (the shim writes a PROFILE)");
  ux.func = 1;
  ux.proto = 100000;
  struct ncs_profile uq;
  CHECK(ncs_profile_from_id(&ux, &uq) == -1, "PROFILE_ID: an id not listed is refused (the reader counts the record bad)");
  /* a chunk of them, as the shim writes them */
  static uint8_t rows[1 << 17];
  size_t n = 0;
  uint64_t seq[4] = {0, 0, 0, 0}, t = 5000000000ull;
  static const char *const funcs[4] = {"AllReduce", "AllGather", "Broadcast", "ReduceScatter"};
  for (unsigned i = 0; n + 128 < sizeof rows; i++) {
    unsigned f = i % 7 < 4 ? 0 : i % 7 - 3;
    struct ncs_profile p = {.comm_hash = 0x17c5e1f2a3b4c5d6ull, .rank = 1, .nranks = 2, .seq = seq[f]++, .nchannels = 2,
                            .nwarps = 16, .count = 4096u << (i % 4), .root = 0, .version = 5};
    snprintf(p.func, sizeof p.func, "%s", funcs[f]);
    snprintf(p.algo, sizeof p.algo, "Ring");
    snprintf(p.proto, sizeof p.proto, "LL");
    snprintf(p.datatype, sizeof p.datatype, "ncclFloat32");
    t += 20000 + rnd() % 300000;
    p.t = t;
    struct ncs_profile_id x;
    if (ncs_profile_to_id(&p, &x) != 0) break;
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, rows + n, sizeof rows - n);
    ncs_enc_profile_id(&w, &x);
    n += w.len;
  }
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  size_t cap = NCS_COLUMNS_BOUND(n), need = 0, where = 0;
  uint8_t *pay = malloc(cap), *back = malloc(n), *sc = NULL;
  const char *why = "";
  for (int pass = 0; pass < 2; pass++) {
    size_t psz = pass ? ncs_columns_pack_exact(cc, 5, pay, cap, rows, n) : ncs_columns_pack_fast(cc, 5, pay, cap, rows, n);
    int keyed = 0;
    const uint8_t *q = pay, *e = pay + psz;
    uint64_t ncol, v[8];
    if (psz && ncs_get_varint(&q, e, &ncol) == 0)
      for (uint64_t i = 0; i < ncol; i++) {
        for (int k = 0; k < 6; k++) ncs_get_varint(&q, e, &v[k]);
        if (v[1] & NCS_COLF_KEYED) {
          ncs_get_varint(&q, e, &v[6]);
          ncs_get_varint(&q, e, &v[7]);
          keyed |= v[0] == NCS_COL_FIELD(NCS_REC_PROFILE_ID, NCS_FI_profid_seq);
        }
      }
    int rc = ncs_columns_unpack(dc, pay, psz, back, n, NULL, 0, &need, &why, &where);
    if (rc == -2 && (sc = realloc(sc, need))) rc = ncs_columns_unpack(dc, pay, psz, back, n, sc, need, &need, &why, &where);
    CHECK(psz > 0 && keyed && rc == 0 && !memcmp(back, rows, n),
          "PROFILE_ID: %zu bytes of the shim's records pack (%s packer, %zu bytes, seq keyed by communicator and function: %d) and unpack to the same rows (%s)",
          n, pass ? "two-pass" : "one-pass", psz, keyed, why);
  }
  free(pay); free(back); free(sc);
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
}

/* ncs_encode_call_run (the writer's encoder for runs of like calls) against ncs_encode_call:
 * runs of like calls (counters stepping, times moving by small, large, negative and wrapping
 * amounts), broken by one field changed (value or step), by random calls, by another thread's
 * run, and by resets of the delta state (a new chunk): the same bytes every time. */
static void test_call_run(void) {
  struct ncs_call_delta d1, d2;
  struct ncs_call_run m;
  ncs_call_delta_reset(&d1);
  ncs_call_delta_reset(&d2);
  ncs_call_run_reset(&m);
  struct ncs_call c = {.op = 3, .thread = 1, .comm = 2, .datatype = 7, .redop = 0, .root = -1, .count = 8, .tcall = 1,
                       .seq = 1, .t_enter = 1000, .t_exit = 1070};
  uint64_t tstep = 1000;
  int same = 1, like = 0;
  for (int i = 0; i < 200000 && same; i++) {
    unsigned r = (unsigned)(rnd() % 1000);
    c.tcall++;
    c.seq++;
    if (r < 5) fill_call(&c);                                     /* anything at all */
    else if (r < 20) c.count += rnd() % 3;                         /* a step changes */
    else if (r < 30) c.flags ^= 1u << (rnd() % 4);                 /* a value changes */
    else if (r < 35) c.thread = 1 + (uint32_t)(rnd() % 3);         /* another thread's run */
    else if (r < 40) c.rc = (int32_t)(rnd() % 9) - 4;
    else if (r < 45) { c.group += 1 + rnd() % 2; c.depth = (uint32_t)(rnd() % 2); }
    else if (r < 50) c.stream = rnd() % 4 ? c.stream + 64 : rnd();
    else if (r < 52) c.callsite = (uint32_t)rnd();                 /* a long value: no memo */
    else if (r < 54) { ncs_call_delta_reset(&d1); ncs_call_delta_reset(&d2); ncs_call_run_reset(&m); }
    else if (r < 74) { /* one field alone, any of them */
      unsigned k = (unsigned)(rnd() % 9), v = (unsigned)(rnd() % 3);
      if (k == 0) c.op = v; else if (k == 1) c.comm = v; else if (k == 2) c.datatype = v;
      else if (k == 3) c.redop = v; else if (k == 4) c.root = (int32_t)v - 1; else if (k == 5) c.seq += v;
      else if (k == 6) c.tcall += v; else if (k == 7) c.count += v; else c.group += v;
    } else like++;
    if (r % 7 == 0) tstep = r % 3 ? 1 + rnd() % 200000 : (uint64_t)0 - rnd() % 5000; /* backwards too */
    c.t_enter += tstep;
    c.t_exit = c.t_enter + (r % 11 == 0 ? rnd() : rnd() % 300); /* an exit before the enter, too */
    uint8_t a[NCS_CALL_MAX], b[NCS_CALL_MAX];
    size_t na = ncs_encode_call(a, &d1, &c), nb = ncs_encode_call_run(b, &d2, &m, &c);
    same &= na == nb && !memcmp(a, b, na) && !memcmp(&d1, &d2, sizeof d1);
  }
  CHECK(same && like > 100000, "CALL: ncs_encode_call_run writes ncs_encode_call's bytes and delta state over 200000 calls (%d like the last)", like);
}

/* The chunk checksum is part of the format: docs/FORMAT.md's test vectors (header bytes 0..31 =
 * 0, 1, ..., 31; payload byte i = 7 i + 1), for both algorithms, and every single-bit flip of a
 * 4,000-byte payload or of the header changes the 4.0 sum. */
static void test_chunk_sum(void) {
  uint8_t h[32], p[4000];
  for (int i = 0; i < 32; i++) h[i] = (uint8_t)i;
  for (int i = 0; i < 4000; i++) p[i] = (uint8_t)(i * 7 + 1);
  static const struct { size_t n; uint32_t lanes, fnv; } kv[] = {
      {0, 0xa78e3b93u, 0x0913ad65u},  {1, 0x9a5c14a9u, 0xadf9f46cu},  {31, 0x952dfe91u, 0x4dc24cfdu},
      {32, 0x16c6e771u, 0x8fdde165u}, {33, 0xc0eb47e4u, 0xfe4a02ccu}, {100, 0xd6d86665u, 0xbbfada1du}};
  for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++) {
    uint32_t l = ncs_chunk_sum(4, h, p, kv[k].n), f = ncs_chunk_sum(3, h, p, kv[k].n);
    CHECK(l == kv[k].lanes && f == kv[k].fnv, "chunk sum of %zu payload bytes: 4.0 0x%08x (want 0x%08x), 3.x 0x%08x (want 0x%08x)",
          kv[k].n, l, kv[k].lanes, f, kv[k].fnv);
  }
  uint32_t base = ncs_chunk_sum(4, h, p, sizeof p);
  unsigned missed = 0;
  for (size_t i = 0; i < 8 * (sizeof p + sizeof h); i++) {
    uint8_t *b = i < 8 * sizeof h ? h + i / 8 : p + (i / 8 - sizeof h);
    *b ^= (uint8_t)(1u << (i % 8));
    missed += ncs_chunk_sum(4, h, p, sizeof p) == base;
    *b ^= (uint8_t)(1u << (i % 8));
  }
  CHECK(missed == 0, "chunk sum 4.0: each of the %zu single-bit flips of header and payload changes it (%u missed)",
        8 * (sizeof p + sizeof h), missed);
}

/* ncs_dec_call_fast (the reader's row walk) against ncs_dec_call on bodies a writer writes
 * (random calls, every varint width, one delta state) and on damaged ones (cut, lengthened,
 * bytes changed, varints of 10 and 11 bytes, random bytes), each followed by the
 * NCS_CALL_FAST_READ readable bytes it may read (random, continuation bits or not): where it
 * answers 0 it gives ncs_dec_call's call and delta state; where it answers -1 it left the
 * delta state as it was; every whole body it answers 0. */
static void test_call_fast(void) {
  struct ncs_call_delta de, ds, df;
  ncs_call_delta_reset(&de);
  ncs_call_delta_reset(&ds);
  ncs_call_delta_reset(&df);
  int whole = 1, agree = 1, kept = 1, fast_bad = 0, slow_bad = 0;
  static uint8_t buf[NCS_CALL_BODY_MAX + 16 + NCS_CALL_FAST_READ];
  for (int i = 0; i < 200000 && whole && agree && kept; i++) {
    struct ncs_call c;
    fill_call(&c);
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, body, sizeof body);
    ncs_enc_call_body(&w, &de, &c);
    size_t n = w.len;
    memcpy(buf, body, n);
    unsigned r = (unsigned)(rnd() % 8);
    if (r == 1 && n) n = rnd() % n;                                    /* cut */
    else if (r == 2) { buf[n] = (uint8_t)rnd(); n++; }                 /* lengthened */
    else if (r == 3 && n) buf[rnd() % n] = (uint8_t)rnd();             /* a byte changed */
    else if (r == 4 && n) buf[rnd() % n] |= 0x80;                      /* a varint runs on */
    else if (r == 5) { /* a field of 10 or 11 bytes */
      size_t at = rnd() % (n + 1), k = 10 + rnd() % 2;
      memmove(buf + at + k, buf + at, n - at);
      for (size_t j = 0; j < k; j++) buf[at + j] = (uint8_t)(j + 1 < k ? 0x80 | rnd() : rnd() % 4);
      n += k;
    } else if (r == 6) { n = rnd() % 40; for (size_t j = 0; j < n; j++) buf[j] = (uint8_t)rnd(); }
    for (size_t j = n; j < sizeof buf; j++) buf[j] = (uint8_t)(rnd() % 2 ? rnd() | 0x80 : rnd());
    struct ncs_call xs, xf;
    struct ncs_rbuf rb;
    struct ncs_call_delta before = df;
    int es = ncs_dec_call(ncs_rbuf_on(&rb, buf, n), &ds, &xs);
    int ef = ncs_dec_call_fast(buf, buf + n, &df, &xf);
    if (r == 0 || r == 7) whole &= ef == 0;
    if (ef == 0) agree &= es == 0 && same_call(&xs, &xf) && !memcmp(&ds, &df, sizeof ds);
    else { kept &= !memcmp(&before, &df, sizeof df); fast_bad++; }
    if (es) slow_bad++;
    if (es) ds = df = before; /* on to the next record from one state */
    else df = ds;
    if (rnd() % 500 == 0) { ncs_call_delta_reset(&de); ncs_call_delta_reset(&ds); ncs_call_delta_reset(&df); }
  }
  CHECK(whole && agree && kept && slow_bad > 1000 && fast_bad > slow_bad,
        "CALL: ncs_dec_call_fast answers every whole body, and what ncs_dec_call does wherever it answers; "
        "elsewhere (%d of 200000, %d of them refused by ncs_dec_call) it leaves the delta state", fast_bad, slow_bad);
}

int main(void) {
  NCS_RECORDS(TEST_)
  test_chunk_sum();
  /* the hot-path CALL encoder writes the same bytes as the bounded one */
  struct ncs_call_delta d1, d2;
  ncs_call_delta_reset(&d1);
  ncs_call_delta_reset(&d2);
  int same = 1;
  for (int i = 0; i < 2000 && same; i++) {
    struct ncs_call c;
    fill_call(&c);
    uint8_t hot[NCS_CALL_MAX];
    size_t n = ncs_encode_call(hot, &d1, &c);
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, body, sizeof body);
    ncs_enc_call(&w, &d2, &c);
    same &= !w.overflow && w.len == n && !memcmp(hot, body, n) && n <= NCS_CALL_MAX;
  }
  CHECK(same, "CALL: ncs_encode_call (hot path) and ncs_enc_call write the same bytes, at most NCS_CALL_MAX");
  test_call_run();
  test_call_fast();
  test_columns();
  test_keyed_columns();
  test_profile_id();
  return check_done();
}
