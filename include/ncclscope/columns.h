/* columns.h — the column layout of a chunk payload (docs/FORMAT.md, "Column payload",
 * format 2.0; "Keyed columns", 3.0), both directions. Header-only.
 *
 * Contract: a chunk's records are built as rows (type, length, body: the same bytes as a 1.x
 * payload, and the bytes the rings file keeps); ncs_columns_pack() turns those rows into a
 * column payload and ncs_columns_unpack() turns a column payload back into exactly the same
 * rows. The trace reader does not rebuild the rows: ncs_columns_begin/next/end hand it each
 * record in row order, whole or as its field values (decoded a block at a time), and it
 * decodes CALL and GPU_TIME straight from those (encode.h's ncs_decv_<name>). The transform is lossless for any row bytes: a record whose type's fields are
 * all varints (records.h kinds U32, I32, U64, DELTA, SPAN) and whose body is exactly its
 * field list is stored as one value per field in that field's column; every other record is
 * stored whole. Columns are told apart by (type, field), so a reader needs no field list of
 * its own: it learns a type's field count from the columns present. A field column may be
 * keyed (3.0): predicted by the last value of the same key (other fields of its record) and
 * after an end field; the writer's candidates are ncs_col_key_candidate's, the reader's
 * inverse ncs_col_unkey.
 *   - ncs_columns_pack: `raw` (n bytes of whole records) into out[0, cap); uses the end of
 *     `out` as scratch (NCS_COLUMNS_BOUND(n) bytes always suffice for the common case);
 *     returns the payload size, or 0 when the rows do not parse or do not fit (the caller
 *     then writes a row chunk). Allocates nothing; `cctx` compresses each column.
 *   - ncs_columns_unpack: a payload of psz bytes into exactly rsz bytes of rows at `out`;
 *     `scratch` holds the decompressed columns (*need tells how many bytes it must have:
 *     call again with at least that). Returns 0, -1 damaged (*why says what, *where the
 *     payload offset), -2 scratch too small. Never reads or writes outside its buffers.
 *   - ncs_columns_begin/next/end: the same payload record by record (see below).
 * The reader gathers byte planes 16 values at a time with SSE2 where the compiler targets it
 * (every x86-64), else with the portable loop; both give the same values (test_col_simd). */
#ifndef NCCLSCOPE_COLUMNS_H
#define NCCLSCOPE_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* the reader's plane gather (ncs_col_loop16): baseline on every x86-64 */
#endif
#include "format.h"
#include "records.h"

/* Column ids: 0 record types, 1 lengths of whole records, 2 their bodies; a field column is
 * type * 64 + field index (type 1..63, field 0..63). */
#define NCS_COL_TYPES 0u
#define NCS_COL_LENGTHS 1u
#define NCS_COL_BODIES 2u
#define NCS_COL_FIELD(t, j) ((uint32_t)(t) * 64u + (uint32_t)(j))
#define NCS_COL_MAX_TYPE 63u
#define NCS_COL_MAX_FIELDS 64u
#define NCS_COL_ID_LIMIT (64u * 64u)
/* column flags */
#define NCS_COLF_SIGNED 1u  /* the row stores the field as a zigzag varint */
#define NCS_COLF_DELTA 2u   /* values are changes from the previous value of the column */
#define NCS_COLF_ZSTD 4u    /* the column's bytes are one zstd frame (else stored as they are) */
#define NCS_COLF_SHIFT(f) (((f) >> 3) & 63u) /* values were divided by 2^shift */
#define NCS_COLF_KEYED 512u /* 3.0: values are predicted per key ("Keyed columns" in FORMAT.md) */
#define NCS_COLF_KNOWN 1023u
/* Keyed columns (format 3.0): at most this many key fields, keyed columns per chunk, and the
 * key table's slots (direct-mapped by the top 8 bits of the key's hash). */
#define NCS_COLK_MAX_KEYS 4u
#define NCS_COLK_MAX_COLS 64u
#define NCS_COLK_SLOTS 256u
#define NCS_COLK_MUL 0x9E3779B97F4A7C15ull
/* Scratch the writer needs beyond the compressed payload, and the most a reader accepts for
 * the decompressed columns: 4 bytes per row byte, plus 64 KiB. */
#define NCS_COLUMNS_SCRATCH(n) (4 * (size_t)(n) + 65536)
#define NCS_COLUMNS_BOUND(n) (ZSTD_COMPRESSBOUND(n) + NCS_COLUMNS_SCRATCH(n) + NCS_COLUMNS_TABLES)

/* Field kinds of a record type, from records.h: "u" unsigned varint, "s" zigzag varint, "x"
 * anything else (such a record is never split into columns). NULL for unknown types. */
#define NCS_CK_U32 "u"
#define NCS_CK_I32 "s"
#define NCS_CK_U64 "u"
#define NCS_CK_DELTA "s"
#define NCS_CK_SPAN "s"
#define NCS_CK_FIX64 "x"
#define NCS_CK_STR "x"
#define NCS_CK_STRN "x"
#define NCS_CK_CHARS "x"
#define NCS_CK_ARRAY "x"
#define NCS_CK_(K, f, a) NCS_CK_##K
#define NCS_CKIND_(T, name, st, rd) case NCS_REC_##T: return "" NCS_FIELDS_##name(NCS_CK_);
static inline const char *ncs_col_kinds(uint64_t type) {
  switch (type) {
  NCS_RECORDS(NCS_CKIND_)
  default: return NULL;
  }
}

static inline unsigned ncs_col_varint_len(uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}
static inline unsigned ncs_col_bits(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }
static inline unsigned ncs_col_bytes(uint64_t v) { return (ncs_col_bits(v) + 7) / 8; }

/* ---- keyed columns (format 3.0), both directions ---- */

/* One slot of a keyed column's key table: a key's hash (with bit 0 set: 0 is an empty slot)
 * and the last value g seen with it. */
struct ncs_colkey { uint64_t h, g; };
/* The key's hash: its fields' absolute values in field order. */
static inline uint64_t ncs_colk_hash(uint64_t h, uint64_t a) { return (h ^ a) * NCS_COLK_MUL; }

/* Field indexes of the records whose columns the writer keys (names from records.h). */
#define NCS_FI_CALL_(K, f, a) NCS_FI_call_##f,
#define NCS_FI_GPU_(K, f, a) NCS_FI_gpu_##f,
#define NCS_FI_KERNEL_(K, f, a) NCS_FI_kernel_##f,
#define NCS_FI_PROFID_(K, f, a) NCS_FI_profid_##f,
enum { NCS_FIELDS_call(NCS_FI_CALL_) NCS_FI_call_n };
enum { NCS_FIELDS_gpu_time(NCS_FI_GPU_) NCS_FI_gpu_n };
enum { NCS_FIELDS_kernel(NCS_FI_KERNEL_) NCS_FI_kernel_n };
enum { NCS_FIELDS_profile_id(NCS_FI_PROFID_) NCS_FI_profid_n };
#undef NCS_FI_CALL_
#undef NCS_FI_GPU_
#undef NCS_FI_KERNEL_
#undef NCS_FI_PROFID_
#define NCS_FBIT(f) (1ull << (f))

/* The writer's keyed candidates: field j of `type` predicted per key (mask of key fields) and
 * after an end field (*end = 1 + its index, or 0). What each saves, on the DDP-shaped job:
 * BENCHMARKS.md "Trace size". The packer keys a candidate only when its sample says it is
 * clearly smaller (ncs_col_choose). Returns 1 for a candidate. */
static inline int ncs_col_key_candidate(uint64_t type, uint32_t j, uint64_t *mask, uint32_t *end) {
  const uint64_t op_comm = NCS_FBIT(NCS_FI_call_op) | NCS_FBIT(NCS_FI_call_comm);
  *mask = 0;
  *end = 0;
  switch (type) {
  case NCS_REC_CALL:
    if (j == NCS_FI_call_seq) *mask = op_comm; /* the counter, per (op, communicator) */
    else if (j == NCS_FI_call_group) *mask = NCS_FBIT(NCS_FI_call_op) | NCS_FBIT(NCS_FI_call_depth); /* 0, or the group's GroupStart tcall: against the last group */
    else if (j == NCS_FI_call_t_exit) *mask = op_comm | NCS_FBIT(NCS_FI_call_count); /* the duration */
    else if (j == NCS_FI_call_t_enter) { /* the gap after the previous call, against the last one */
      *mask = op_comm | NCS_FBIT(NCS_FI_call_count);
      *end = 1 + NCS_FI_call_t_exit;
    } else return 0;
    return 1;
  case NCS_REC_GPU_TIME: /* the gap after the previous GPU end */
    if (j != NCS_FI_gpu_gpu_start) return 0;
    *end = 1 + NCS_FI_gpu_gpu_end;
    return 1;
  case NCS_REC_KERNEL: /* the gap after the previous kernel's end */
    if (j != NCS_FI_kernel_start) return 0;
    *end = 1 + NCS_FI_kernel_duration;
    return 1;
  case NCS_REC_PROFILE_ID: /* NCCL's counter, per (communicator, function) */
    if (j != NCS_FI_profid_seq) return 0;
    *mask = NCS_FBIT(NCS_FI_profid_comm_hash) | NCS_FBIT(NCS_FI_profid_func);
    return 1;
  default: return 0;
  }
}

/* ---- writer ---- */

/* What the writer knows of one column while packing. */
struct ncs_colw {
  uint32_t id, count, fill;
  uint8_t sign, delta, shift, width;
  uint8_t keyed, kend;              /* keyed: 0 no, 1 a candidate (sampling), 2 yes; kend: 1 + end field */
  uint64_t kmask;                   /* key fields */
  uint64_t prev, first, or_y, or_z; /* first value; OR of the values and of their zigzags */
  uint64_t bits[4];                 /* sample: bits of the values without / with delta, keyed: 2, 3 */
  uint64_t s_or_y[4], s_or_z[4];    /* sample: OR of the values and zigzags (as bits[]) */
  uint64_t aprev, kprev, glast;     /* absolute value at the type's previous record; keyed: the
                                       previous value, the previous g */
  uint32_t krec;                    /* keyed: records seen */
  struct ncs_colkey *tab;           /* a candidate's key table */
  size_t off, size;                 /* its bytes in the scratch area */
};

/* A record's values x[] (as the packers see them: unzigzagged when signed) of a type with
 * keyed columns: each keyed column's value in kx[] (FORMAT.md "Keyed columns"), and every
 * column's absolute value kept for the next record. */
static inline void ncs_col_key_record(struct ncs_colw *c, size_t nf, const uint64_t *x, uint64_t *kx) {
  uint64_t a[NCS_COL_MAX_FIELDS];
  for (size_t j = 0; j < nf; j++) a[j] = c[j].sign ? c[j].aprev + x[j] : x[j];
  for (size_t j = 0; j < nf; j++) {
    if (!c[j].keyed) continue;
    int first = c[j].kend && !c[j].krec++; /* after an end field, the first record: gap 0 */
    uint64_t g = !c[j].kend ? a[j] : first ? 0 : a[j] - (c[j].aprev + c[c[j].kend - 1].aprev), p = 0;
    if (c[j].kmask) {
      uint64_t h = 0;
      for (uint64_t m = c[j].kmask; m; m &= m - 1) h = ncs_colk_hash(h, a[__builtin_ctzll(m)]);
      struct ncs_colkey *e = &c[j].tab[h >> 56];
      p = e->h == (h | 1) ? e->g : c[j].glast; /* a key not in the table: against the last value */
      e->h = h | 1;
      e->g = g;
    }
    kx[j] = first ? a[j] : g - p;
    c[j].glast = g;
  }
  for (size_t j = 0; j < nf; j++) c[j].aprev = a[j];
}

/* A split record's field values in xs (signed fields unzigzagged) and, for a type with keyed
 * columns, each keyed column's value in kx (ncs_col_key_record). */
static inline void ncs_col_values(struct ncs_colw *c0, size_t nf, int haskey, const uint64_t *v, uint64_t *xs,
                                  uint64_t *kx) {
  for (size_t j = 0; j < nf; j++) xs[j] = c0[j].sign ? (uint64_t)ncs_unzigzag(v[j]) : v[j];
  if (haskey) ncs_col_key_record(c0, nf, xs, kx);
}

/* What column c stores for value x (kx when keyed): the value, or its delta from the previous
 * one when the column is a delta column; c->prev moves on. */
static inline uint64_t ncs_col_step(struct ncs_colw *c, uint64_t x, uint64_t kx) {
  if (c->keyed) x = kx;
  uint64_t y = c->delta ? x - c->prev : x;
  c->prev = x;
  return y;
}
/* Before a pass over the rows: every column's key state empty. */
static inline void ncs_col_key_reset(struct ncs_colw *col, uint32_t ncol) {
  for (uint32_t i = 3; i < ncol; i++) {
    col[i].aprev = col[i].kprev = col[i].glast = 0;
    col[i].krec = 0;
    if (col[i].tab) memset(col[i].tab, 0, NCS_COLK_SLOTS * sizeof *col[i].tab);
  }
}
/* After the sample: which of plain and plain delta has the fewest bits, or keyed (delta or
 * not) when it has at most 11/12 of those and those are not 0: a keyed column costs the reader a hash and a table
 * slot per value (~15 % of its records/s on a trace of two keyed CALL columns), so a keyed
 * column must save more than the sample's noise (BENCHMARKS.md "Trace size"). */
static inline int ncs_col_choose(struct ncs_colw *c) {
  int m = c->bits[1] < c->bits[0];
  int k = c->bits[3] < c->bits[2] ? 3 : 2;
  if (c->keyed && c->bits[m] > 0 && c->bits[k] * 12 <= c->bits[m] * 11) m = k; /* a free column stays plain */
#ifdef NCS_COLK_ALWAYS /* tests: every candidate keyed, whatever the sample says */
  if (c->keyed && NCS_COLK_ALWAYS) m = 2 + (c->bits[3] < c->bits[2]);
#endif
  c->keyed = m >= 2 ? 2 : 0;
  c->delta = (uint8_t)(m & 1);
  return m;
}

/* Parses a record at *pp: its type and body; -1 when the bytes end first, its type or
 * length is not in the shortest varint form (unpacking writes the shortest form), or it is a
 * CALL_RUN (5.0: its calls refer to the row before it, so it lives in row chunks only). */
static inline int ncs_col_record(const uint8_t **pp, const uint8_t *e, uint64_t *type, const uint8_t **body,
                                 uint64_t *len) {
  const uint8_t *s = *pp;
  if (ncs_get_varint(pp, e, type) != 0) return -1;
  if (*pp - s > 1 && (*pp)[-1] == 0) return -1; /* long form */
  s = *pp;
  if (ncs_get_varint(pp, e, len) != 0) return -1;
  if (*pp - s > 1 && (*pp)[-1] == 0) return -1;
  if (*len > (uint64_t)(e - *pp) || *type == NCS_REC_CALL_RUN) return -1;
  *body = *pp;
  *pp += *len;
  return 0;
}
/* The body as exactly nf shortest-form varints into v[]: 0, or -1 (then the record is
 * stored whole, so that unpacking gives back the same bytes). */
static inline int ncs_col_split(const uint8_t *b, uint64_t len, size_t nf, uint64_t *v) {
  const uint8_t *e = b + len;
  for (size_t j = 0; j < nf; j++) {
    if (b < e && *b < 0x80) { v[j] = *b++; continue; }
    if (ncs_get_varint(&b, e, &v[j]) != 0 || b[-1] == 0) return -1; /* a last byte 0: long form */
  }
  return b == e ? 0 : -1;
}
/* zigzag of (y >> shift), y divisible by 2^shift */
static inline uint64_t ncs_col_code(uint64_t y, unsigned shift) { return ncs_zigzag((int64_t)y >> shift); }

/* Columns of nanosecond times (host enter and duration, GPU start and duration, kernel start and
 * duration, the profiler's time). Their byte planes differ: the high ones repeat, the low ones
 * are noise, so each plane is a zstd block of its own (ZSTD_e_flush after it): zstd then
 * chooses literal coding per plane (raw where Huffman would not pay, which is also cheaper to
 * read) instead of one Huffman table over all of them. On the DDP-shaped job's traces 4.4 %
 * fewer bytes for 1-2 % more packing instructions, reading unchanged; on `ncclscope synth`'s
 * 5 % fewer bytes and 27 % fewer zstd instructions to read (BENCHMARKS.md "Trace size"). */
static inline int ncs_col_time(uint32_t id) {
  switch (id) {
  case NCS_COL_FIELD(NCS_REC_CALL, NCS_FI_call_t_enter):
  case NCS_COL_FIELD(NCS_REC_CALL, NCS_FI_call_t_exit):
  case NCS_COL_FIELD(NCS_REC_GPU_TIME, NCS_FI_gpu_gpu_start):
  case NCS_COL_FIELD(NCS_REC_GPU_TIME, NCS_FI_gpu_gpu_end):
  case NCS_COL_FIELD(NCS_REC_KERNEL, NCS_FI_kernel_start):
  case NCS_COL_FIELD(NCS_REC_KERNEL, NCS_FI_kernel_duration):
  case NCS_COL_FIELD(NCS_REC_PROFILE_ID, NCS_FI_profid_t): return 1;
  default: return 0;
  }
}
/* One column's zstd frame at `level` into dst[0, cap): `width` byte planes of n / width bytes,
 * a block per plane for a time column (ncs_col_time), else one ZSTD_compressCCtx. Its size; n
 * when it did not fit (so the column is stored); or a zstd error. */
static inline size_t ncs_col_zstd(ZSTD_CCtx *cctx, int level, uint32_t id, unsigned width, void *dst, size_t cap,
                                  const void *src, size_t n) {
  if (width < 2 || !ncs_col_time(id)) return ZSTD_compressCCtx(cctx, dst, cap, src, n, level);
  size_t r = ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setPledgedSrcSize(cctx, n);
  if (!ZSTD_isError(r)) r = 0;
  ZSTD_outBuffer out = {dst, cap, 0};
  ZSTD_inBuffer in = {src, 0, 0};
  for (unsigned b = 1; r == 0 && b <= width; b++) { /* r: an error, or bytes left to flush (out full) */
    in.size = b == width ? n : n / width * b;
    r = ZSTD_compressStream2(cctx, &out, &in, b == width ? ZSTD_e_end : ZSTD_e_flush);
  }
  if (r == 0) return out.pos;
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
  return ZSTD_isError(r) ? r : n;
}

/* The end of packing: each column compressed (or stored) after room for the directory, then
 * the directory written and the columns moved up against it. Returns the payload size or 0. */
static inline size_t ncs_col_finish(ZSTD_CCtx *cctx, int level, uint8_t *out, struct ncs_colw *col, uint32_t ncol,
                                    uint8_t *data, size_t dir_max) {
  /* compress each column after the room for the directory, then write the directory */
  uint8_t *w = out + dir_max;
  for (uint32_t i = 0; i < ncol; i++) {
    struct ncs_colw *c = &col[i];
    uint8_t *src = data + c->off;
    size_t room = (size_t)(data - w), z = 0;
    if (c->size >= 32) {
      z = ncs_col_zstd(cctx, level, c->id, c->width, w, room, src, c->size);
      if (ZSTD_isError(z)) z = 0;
    }
    if (z && z < c->size) {
      c->fill = (uint32_t)z; /* now: stored bytes */
      c->delta |= 4;         /* compressed (NCS_COLF_ZSTD, kept with the delta bit) */
    } else {
      if (c->size > room) return 0;
      memmove(w, src, c->size);
      c->fill = (uint32_t)c->size;
    }
    w += c->fill;
  }
  size_t data_len = (size_t)(w - (out + dir_max));
  uint8_t *d = out;
  d += ncs_put_varint(d, ncol);
  for (uint32_t i = 0; i < ncol; i++) {
    struct ncs_colw *c = &col[i];
    uint32_t fl = (c->delta & 4) ? NCS_COLF_ZSTD : 0;
    uint64_t first = 0;
    if (i >= 3) {
      fl |= (c->sign ? NCS_COLF_SIGNED : 0) | ((c->delta & 1) ? NCS_COLF_DELTA : 0) | ((uint32_t)c->shift << 3);
      fl |= c->keyed == 2 ? NCS_COLF_KEYED : 0;
      first = c->count ? ncs_col_code(c->first, c->shift) : 0;
    }
    d += ncs_put_varint(d, c->id);
    d += ncs_put_varint(d, fl);
    d += ncs_put_varint(d, i < 3 ? c->size : c->count);
    d += ncs_put_varint(d, first);
    d += ncs_put_varint(d, c->width);
    d += ncs_put_varint(d, c->fill);
    if (fl & NCS_COLF_KEYED) {
      d += ncs_put_varint(d, c->kmask);
      d += ncs_put_varint(d, c->kend);
    }
  }
  memmove(d, out + dir_max, data_len);
  return (size_t)(d - out) + data_len;
}

/* The writer's key tables, after its column table: at most 8 keyed candidates per chunk. */
#define NCS_COL_KEYED_MAX 8u
#define NCS_COL_KEYTABS (NCS_COL_KEYED_MAX * NCS_COLK_SLOTS * sizeof(struct ncs_colkey))
/* The most field columns a packer makes (8 split types per chunk: the rest whole), and the
 * room its tables take at the end of out (in NCS_COLUMNS_BOUND). */
#define NCS_COL_WMAX (3u + 64u * 8u)
#define NCS_COLUMNS_TABLES (1024 + NCS_COL_WMAX * sizeof(struct ncs_colw) + NCS_COL_KEYTABS + 16)
/* Both packers' scratch at the end of out: where the table of maxcol columns starts (16-byte
 * aligned); the columns' bytes are built just below it. */
static inline uint8_t *ncs_col_table_at(uint8_t *out, size_t cap, uint32_t maxcol) {
  uint8_t *at = out + cap - (maxcol * sizeof(struct ncs_colw) + NCS_COL_KEYTABS + 16);
  return at + ((16 - ((uintptr_t)at & 15)) & 15);
}

/* Both packers, at a chunk's first record of `type` (1..63): gives the type its field columns
 * from col[ncol] on (base[type], nfield[type]) and returns the new column count, or marks it
 * never split (base 0xffff: a field that is not a varint, or no room left under maxcol).
 * Keyed candidates get a key table from the ones after col[maxcol] while they last;
 * haskey[type] says the type has one. */
static inline uint32_t ncs_col_claim(uint64_t type, uint16_t *base, uint8_t *nfield, uint8_t *haskey,
                                     struct ncs_colw *col, uint32_t ncol, uint32_t maxcol) {
  const char *k = ncs_col_kinds(type);
  size_t nf = k ? strlen(k) : 0;
  if (!nf || nf > NCS_COL_MAX_FIELDS || strchr(k, 'x') || ncol + nf > maxcol) {
    base[type] = 0xffff;
    return ncol;
  }
  base[type] = (uint16_t)ncol;
  nfield[type] = (uint8_t)nf;
  haskey[type] = 0;
  struct ncs_colkey *tabs = (struct ncs_colkey *)(col + maxcol);
  uint32_t ntab = 0;
  for (uint32_t i = 3; i < ncol; i++) ntab += col[i].tab != NULL;
  for (size_t j = 0; j < nf; j++) {
    struct ncs_colw *c = &col[ncol + j];
    uint64_t mask;
    uint32_t end;
    memset(c, 0, sizeof *c);
    c->id = NCS_COL_FIELD(type, j);
    c->sign = k[j] == 's';
    if (ncs_col_key_candidate(type, (uint32_t)j, &mask, &end) && (!mask || ntab < NCS_COL_KEYED_MAX)) {
      c->keyed = 1;
      c->kmask = mask;
      c->kend = (uint8_t)end;
      if (mask) {
        c->tab = tabs + (size_t)NCS_COLK_SLOTS * ntab++;
        memset(c->tab, 0, NCS_COLK_SLOTS * sizeof *c->tab);
      }
      haskey[type] = 1;
    }
  }
  return ncol + (uint32_t)nf;
}

/* Whether a record of this type is stored split into its type's field columns (its type has
 * columns, and its body parses into their nfield values, left in v). */
static inline int ncs_col_splits(uint64_t type, const uint16_t *base, const uint8_t *nfield, const uint8_t *body,
                                 uint64_t len, uint64_t *v) {
  return type >= 1 && type <= NCS_COL_MAX_TYPE && base[type] && base[type] != 0xffff &&
         ncs_col_split(body, len, nfield[type], v) == 0;
}

/* The general packer: two passes over the rows (what each column holds, then its bytes). */
static inline size_t ncs_columns_pack_exact(ZSTD_CCtx *cctx, int level, uint8_t *out, size_t cap, const void *raw,
                                      size_t n) {
  enum { MAXCOL = NCS_COL_WMAX, SAMPLE = 512 };
  const uint8_t *p, *e = (const uint8_t *)raw + n, *body = NULL;
  uint64_t type = 0, len = 0, v[NCS_COL_MAX_FIELDS], xs[NCS_COL_MAX_FIELDS], kx[NCS_COL_MAX_FIELDS];
  if (!cctx || cap < NCS_COLUMNS_TABLES) return 0;
  uint8_t *tab_at = ncs_col_table_at(out, cap, MAXCOL); /* the columns' bytes go below it */
  struct ncs_colw *col = (struct ncs_colw *)tab_at;
  uint32_t ncol = 3;
  uint16_t base[NCS_COL_MAX_TYPE + 1]; /* first column of a split type, 0 = none yet */
  uint8_t nfield[NCS_COL_MAX_TYPE + 1], haskey[NCS_COL_MAX_TYPE + 1];
  memset(base, 0, sizeof base);
  memset(col, 0, 3 * sizeof *col);
  for (uint32_t i = 0; i < 3; i++) col[i].id = i;
  /* pass 0, the first SAMPLE records of each type: which columns are smaller as deltas */
  for (p = (const uint8_t *)raw; p < e;) {
    if (ncs_col_record(&p, e, &type, &body, &len) != 0) return 0;
    if (type < 1 || type > NCS_COL_MAX_TYPE) continue;
    if (!base[type]) ncol = ncs_col_claim(type, base, nfield, haskey, col, ncol, MAXCOL);
    if (base[type] == 0xffff || col[base[type]].count >= SAMPLE || ncs_col_split(body, len, nfield[type], v) != 0)
      continue;
    struct ncs_colw *c0 = &col[base[type]];
    ncs_col_values(c0, nfield[type], haskey[type], v, xs, kx);
    for (size_t j = 0; j < nfield[type]; j++) {
      struct ncs_colw *c = &c0[j];
      uint64_t x = xs[j];
      if (c->count++) {
        c->bits[0] += ncs_col_bits(ncs_zigzag((int64_t)x));
        c->bits[1] += ncs_col_bits(ncs_zigzag((int64_t)(x - c->prev)));
        if (c->keyed) {
          c->bits[2] += ncs_col_bits(ncs_zigzag((int64_t)kx[j]));
          c->bits[3] += ncs_col_bits(ncs_zigzag((int64_t)(kx[j] - c->kprev)));
        }
      }
      c->prev = x;
      if (c->keyed) c->kprev = kx[j];
    }
  }
  for (uint32_t i = 3; i < ncol; i++) {
    (void)ncs_col_choose(&col[i]);
    col[i].count = 0;
    col[i].prev = 0;
  }
  ncs_col_key_reset(col, ncol);
  /* pass 1: what every column holds */
  for (p = (const uint8_t *)raw; p < e;) {
    (void)ncs_col_record(&p, e, &type, &body, &len);
    int split = ncs_col_splits(type, base, nfield, body, len, v);
    col[0].size += ncs_col_varint_len(type << 1 | (uint64_t)split);
    col[0].count++;
    if (!split) {
      col[1].size += ncs_col_varint_len(len);
      col[2].size += len;
      continue;
    }
    struct ncs_colw *c0 = &col[base[type]];
    ncs_col_values(c0, nfield[type], haskey[type], v, xs, kx);
    for (size_t j = 0; j < nfield[type]; j++) {
      struct ncs_colw *c = &c0[j];
      uint64_t y = ncs_col_step(c, xs[j], kx[j]);
      c->or_y |= y;
      if (c->count++) c->or_z |= ncs_zigzag((int64_t)y);
      else c->first = y;
    }
  }
  ncs_col_key_reset(col, ncol);
  /* each field column: shift and width */
  size_t need = 0;
  for (uint32_t i = 0; i < ncol; i++) {
    struct ncs_colw *c = &col[i];
    if (i >= 3) {
      c->shift = c->or_y ? (uint8_t)__builtin_ctzll(c->or_y) : 0;
      c->width = (uint8_t)ncs_col_bytes(c->or_z >> c->shift); /* checked while filling */
      c->size = c->count > 1 ? (size_t)(c->count - 1) * c->width : 0;
      c->prev = 0;
    }
    c->off = need;
    need += c->size;
  }
  size_t dir_max = 10 + (size_t)ncol * 80;
  if (need > (size_t)(tab_at - out) || (size_t)(tab_at - out) - need < dir_max + 64) return 0;
  uint8_t *data = tab_at - need; /* the columns' bytes, just below the table */
  /* pass 2: fill the columns */
  uint8_t *t0 = data + col[0].off, *t1 = data + col[1].off, *t2 = data + col[2].off;
  for (p = (const uint8_t *)raw; p < e;) {
    (void)ncs_col_record(&p, e, &type, &body, &len);
    int split = ncs_col_splits(type, base, nfield, body, len, v);
    t0 += ncs_put_varint(t0, type << 1 | (uint64_t)split);
    if (!split) {
      t1 += ncs_put_varint(t1, len);
      if (len) memcpy(t2, body, len);
      t2 += len;
      continue;
    }
    struct ncs_colw *c0 = &col[base[type]];
    ncs_col_values(c0, nfield[type], haskey[type], v, xs, kx);
    for (size_t j = 0; j < nfield[type]; j++) {
      struct ncs_colw *c = &c0[j];
      uint64_t y = ncs_col_step(c, xs[j], kx[j]);
      if (c->fill++ == 0) continue; /* the first value goes in the directory */
      uint64_t z = ncs_col_code(y, c->shift);
      uint8_t *d = data + c->off + (c->fill - 2);
      size_t stride = c->count - 1;
      switch (c->width) {
      case 0: break;
      case 1: d[0] = (uint8_t)z; break;
      case 2: d[0] = (uint8_t)z; d[stride] = (uint8_t)(z >> 8); break;
      default:
        for (unsigned b = 0; b < c->width; b++) d[(size_t)b * stride] = (uint8_t)(z >> (8 * b));
      }
      if (c->width < 8 && (z >> (8 * c->width))) return 0; /* cannot happen: width holds every code */
    }
  }
  return ncs_col_finish(cctx, level, out, col, ncol, data, dir_max);
}

/* The common case in one pass over the values: each column's delta, shift and width are
 * chosen from the first SAMPLE records of its type; a value they cannot hold, or a record of
 * a split type that does not split, makes it return 0 (then the two-pass packer runs). */
static inline size_t ncs_columns_pack_fast(ZSTD_CCtx *cctx, int level, uint8_t *out, size_t cap, const void *raw,
                                           size_t n) {
  enum { MAXCOL = NCS_COL_WMAX, SAMPLE = 512 };
  const uint8_t *p, *e = (const uint8_t *)raw + n, *body = NULL;
  uint64_t type = 0, len = 0, v[NCS_COL_MAX_FIELDS], xs[NCS_COL_MAX_FIELDS], kx[NCS_COL_MAX_FIELDS];
  if (!cctx || cap < NCS_COLUMNS_TABLES) return 0;
  uint8_t *tab_at = ncs_col_table_at(out, cap, MAXCOL); /* the columns' bytes go below it */
  struct ncs_colw *col = (struct ncs_colw *)tab_at;
  uint32_t ncol = 3, nrec[NCS_COL_MAX_TYPE + 1];
  uint16_t base[NCS_COL_MAX_TYPE + 1];
  uint8_t nfield[NCS_COL_MAX_TYPE + 1], haskey[NCS_COL_MAX_TYPE + 1];
  memset(base, 0, sizeof base);
  memset(nrec, 0, sizeof nrec);
  memset(col, 0, 3 * sizeof *col);
  for (uint32_t i = 0; i < 3; i++) col[i].id = i;
  /* pass 0: records per type, sizes of the whole records, the sample */
  for (p = (const uint8_t *)raw; p < e;) {
    if (ncs_col_record(&p, e, &type, &body, &len) != 0) return 0;
    col[0].size += ncs_col_varint_len(type << 1);
    col[0].count++;
    if (type >= 1 && type <= NCS_COL_MAX_TYPE && !base[type])
      ncol = ncs_col_claim(type, base, nfield, haskey, col, ncol, MAXCOL);
    if (type < 1 || type > NCS_COL_MAX_TYPE || base[type] == 0xffff) {
      col[1].size += ncs_col_varint_len(len);
      col[2].size += len;
      continue;
    }
    if (nrec[type]++ >= SAMPLE) continue;
    if (ncs_col_split(body, len, nfield[type], v) != 0) return 0;
    struct ncs_colw *c0 = &col[base[type]];
    ncs_col_values(c0, nfield[type], haskey[type], v, xs, kx);
    for (size_t j = 0; j < nfield[type]; j++) {
      struct ncs_colw *c = &c0[j];
      uint64_t x = xs[j];
      uint64_t y[4] = {x, x - c->prev, c->keyed ? kx[j] : 0, c->keyed ? kx[j] - c->kprev : 0};
      c->prev = x;
      if (c->keyed) c->kprev = kx[j];
      for (int m = 0; m < (c->keyed ? 4 : 2); m++) {
        c->s_or_y[m] |= y[m];
        if (c->count) { uint64_t z = ncs_zigzag((int64_t)y[m]); c->s_or_z[m] |= z; c->bits[m] += ncs_col_bits(z); }
      }
      c->count++;
    }
  }
  ncs_col_key_reset(col, ncol);
  size_t need = 0, inter = 0;
  for (uint32_t i = 0; i < ncol; i++) {
    struct ncs_colw *c = &col[i];
    if (i >= 3) {
      int m = ncs_col_choose(c);
      c->shift = c->s_or_y[m] ? (uint8_t)__builtin_ctzll(c->s_or_y[m]) : 0;
      c->width = (uint8_t)ncs_col_bytes(c->s_or_z[m] >> c->shift);
      /* keyed: a byte to spare, for a key first seen after the sample (a plane of zeros costs
       * a few bytes once compressed; running out costs the two-pass packer) */
      if (c->keyed && c->width < 8) c->width++;
      c->count = nrec[c->id / 64];
      c->size = c->count > 1 ? (size_t)(c->count - 1) * c->width : 0;
      c->prev = 0;
      /* while filling: bits[0] = the codes' mask of bits beyond width, bits[1] = delta mask */
      c->bits[0] = c->width >= 8 ? 0 : ~0ull << (8 * c->width);
      c->bits[1] = (m & 1) ? ~0ull : 0;
      inter += c->size + 8; /* 8: room for the last code's whole 8 bytes */
    }
    c->off = need;
    need += c->size;
  }
  size_t dir_max = 10 + (size_t)ncol * 80;
  /* the codes are first written whole (8 bytes each, width apart) after the columns' room, then
   * split into byte planes in place of their column */
  size_t room = (size_t)(tab_at - out);
  if (need + inter > room || room - need - inter < dir_max + 64) return 0;
  uint8_t *data = tab_at - need - inter, *codes = data + need;
  for (uint32_t i = 3, at = 0; i < ncol; i++) { col[i].s_or_y[0] = at; at += (uint32_t)col[i].size + 8; }
  /* the one pass over the values */
  uint8_t *t0 = data + col[0].off, *t1 = data + col[1].off, *t2 = data + col[2].off;
  for (p = (const uint8_t *)raw; p < e;) {
    (void)ncs_col_record(&p, e, &type, &body, &len);
    if (type < 1 || type > NCS_COL_MAX_TYPE || base[type] == 0xffff) {
      t0 += ncs_put_varint(t0, type << 1);
      t1 += ncs_put_varint(t1, len);
      if (len) memcpy(t2, body, len);
      t2 += len;
      continue;
    }
    if (ncs_col_split(body, len, nfield[type], v) != 0) return 0;
    t0 += ncs_put_varint(t0, type << 1 | 1);
    struct ncs_colw *c = &col[base[type]];
    if (haskey[type]) { /* keyed values in place of the plain ones */
      for (size_t j = 0; j < nfield[type]; j++) xs[j] = (v[j] >> c[j].sign) ^ (0 - (v[j] & c[j].sign));
      ncs_col_key_record(c, nfield[type], xs, kx);
      for (size_t j = 0; j < nfield[type]; j++) v[j] = c[j].keyed ? kx[j] : v[j];
    }
    for (size_t j = 0; j < nfield[type]; j++, c++) {
      uint64_t x = c->keyed ? v[j] : (v[j] >> c->sign) ^ (0 - (v[j] & c->sign));
      uint64_t y = x - (c->prev & c->bits[1]);
      c->prev = x;
      c->or_y |= y;
      uint64_t z = ncs_col_code(y, c->shift);
      if (c->fill++ == 0) { c->first = y; continue; }
      if (z & c->bits[0]) return 0;
      uint8_t *d = codes + c->s_or_y[0];
      memcpy(d, &z, 8); /* little-endian hosts only (format.h: the shim's platforms) */
      c->s_or_y[0] += c->width;
    }
  }
  for (uint32_t i = 3; i < ncol; i++) {
    struct ncs_colw *c = &col[i];
    if (c->shift && (c->or_y & ((1ull << c->shift) - 1))) return 0; /* not a multiple */
    /* byte planes: byte b of code k to data[off + b * (count - 1) + k] */
    const uint8_t *src = codes + c->s_or_y[0] - c->size;
    uint8_t *dst = data + c->off;
    size_t cnt = c->count > 1 ? c->count - 1 : 0, w = c->width;
    if (w == 1) { memcpy(dst, src, cnt); continue; }
    for (size_t k = 0; k < cnt; k++, src += w)
      for (size_t b = 0; b < w; b++) dst[b * cnt + k] = src[b];
  }
  return ncs_col_finish(cctx, level, out, col, ncol, data, dir_max);
}

/* Rows into a column payload: the one-pass packer, else the two-pass one. */
static inline size_t ncs_columns_pack(ZSTD_CCtx *cctx, int level, uint8_t *out, size_t cap, const void *raw,
                                      size_t n) {
  size_t z = ncs_columns_pack_fast(cctx, level, out, cap, raw, n);
  return z ? z : ncs_columns_pack_exact(cctx, level, out, cap, raw, n);
}

/* ---- reader ---- */

/* the length of x's varint, without a branch: 1 + (bits - 1) / 7, as ((bits - 1) * 9 + 73) >> 6
 * (bits - 1: the highest set bit's index, one bsr) */
static inline unsigned ncs_col_vlen(uint64_t x) { return ((63u ^ (unsigned)__builtin_clzll(x | 1)) * 9u + 73u) >> 6; }

struct ncs_colr {
  uint32_t id, flags, count, width, pos;
  uint64_t first, size, stored, prev;
  const uint8_t *bytes; /* its decompressed bytes */
  uint64_t *vals;       /* field columns: a block of values as the rows' varints hold them, but
                           a signed column's as the signed values (ncs_col_row_value) */
  uint64_t q, vprev;    /* the next value to decode, and the last decoded */
  uint64_t vor, vand;   /* the OR and the AND of the block's rows' varints' values (equal: all the same) */
  uint64_t vfill;       /* vals[0 .. vfilled) all hold vfill (a block of one value repeated */
  uint64_t vfilled;     /* is then not written again) */
  /* keyed (3.0): key fields, end field + 1; the fields it reads (key fields, then the end
   * field) and their absolute values; its own last absolute value; its key table */
  uint64_t kmask;
  uint32_t kend, nref, kpass; /* kpass: 1 reads plain columns only, 2 keyed ones of pass 1 too */
  uint8_t kref[NCS_COLK_MAX_KEYS + 1];
  uint64_t kacc[NCS_COLK_MAX_KEYS + 1], aprev, glast;
  uint64_t krec;
  uint64_t vlens; /* keyed: the sum of its block's varint lengths (ncs_col_unkey) */
  struct ncs_colkey *tab;
};

/* What the row's varint holds for value x of column k: x, or its zigzag for a signed column. */
static inline uint64_t ncs_col_row_value(const struct ncs_colr *k, uint64_t x) {
  return (k->flags & NCS_COLF_SIGNED) ? ncs_zigzag((int64_t)x) : x;
}

/* ncs_col_unkey's loop over values q .. n-1, for nkey key fields and an end field (end 1) or
 * not (0), and sgn: bit r set when field kref[r] is signed; all three constants in each copy
 * (the loops over the fields unrolled, their running values in registers, an unsigned field's
 * value taken as it is): acc[r] is field kref[r]'s absolute value (a signed field's running
 * sum; else the value itself) at the record before q. It writes the values (a signed
 * column's signed, as ncs_col_decode); the rows' varints' values are ORed into *any, ANDed
 * into *all, and their lengths added to *vl (the reader's row-length accounting,
 * ncs_columns_next, done here while each value is in a register). */
static inline __attribute__((always_inline)) void ncs_col_unkey_loop(uint64_t *x, const uint64_t *const *v, uint32_t sgn,
                                                                     uint64_t *acc, uint64_t q, uint64_t n, uint32_t nkey,
                                                                     uint32_t end, uint64_t sg, struct ncs_colkey *tab,
                                                                     uint64_t *aprev, uint64_t *glast, uint64_t *any,
                                                                     uint64_t *all, uint64_t *vl) {
  enum { R = NCS_COLK_MAX_KEYS + 1 };
  uint64_t ac[R] = {0}, ap = *aprev, gl = *glast, o = *any, a_ = *all, l = *vl;
  const uint64_t *vr[R] = {0};
  for (uint32_t r = 0; r < nkey + end; r++) { ac[r] = acc[r]; vr[r] = v[r]; }
  for (; q < n; q++) {
    uint64_t eprev = end ? ac[nkey] : 0, h = 0, g = x[q];
    for (uint32_t r = 0; r < nkey + end; r++) { /* signed: the running sum; else the value */
      uint64_t w = vr[r][q];
      ac[r] = (sgn >> r & 1) ? ac[r] + w : w;
    }
    if (nkey) {
      for (uint32_t r = 0; r < nkey; r++) h = ncs_colk_hash(h, ac[r]);
      struct ncs_colkey *e = &tab[h >> 56];
      g += e->h == (h | 1) ? e->g : gl;
      e->h = h | 1;
      e->g = g;
    }
    uint64_t a = end ? g + ap + eprev : g;
    gl = g;
    uint64_t y = sg ? a - ap : a, z = sg ? ncs_zigzag((int64_t)y) : y; /* the value, the row's varint */
    x[q] = y;
    o |= z;
    a_ &= z;
    l += ncs_col_vlen(z);
    ap = a;
  }
  for (uint32_t r = 0; r < nkey + end; r++) acc[r] = ac[r];
  *aprev = ap;
  *glast = gl;
  *any = o;
  *all = a_;
  *vl = l;
}

#ifndef NCS_COLK_GENERAL
#define NCS_COLK_GENERAL 0 /* tests: nonzero takes every keyed column through its shape's general copy */
#endif
/* A keyed column's block of n decoded values (ncs_col_decode left them unsigned, before the
 * key) turned into the rows' values (signed ones as ncs_col_decode leaves a plain signed
 * column's); fc[j] is field j's column of the type, every one of them decoded for the same
 * block. FORMAT.md "Keyed columns". Sets k->vor and k->vand to the OR and the AND of the
 * block's rows' varints' values, as ncs_col_decode does for a plain column, and k->vlens to
 * the sum of their varints' lengths. */
static inline void ncs_col_unkey(struct ncs_colr *k, struct ncs_colr *const *fc, uint64_t n) {
  enum { R = NCS_COLK_MAX_KEYS + 1 };
  uint64_t *x = k->vals, acc[R] = {0}, sgm[R] = {0}, aprev = k->aprev, glast = k->glast;
  uint64_t any = 0, all = ~0ull, vl = 0;
  const uint64_t *v[R] = {0};
  uint32_t nref = k->nref, end = k->kend != 0, nkey = nref - end, sgn = 0;
  uint64_t sg = (k->flags & NCS_COLF_SIGNED) != 0, q = 0;
  struct ncs_colkey *tab = k->tab;
  for (uint32_t r = 0; r < nref; r++) { /* what it reads, hoisted out of the loop */
    v[r] = fc[k->kref[r]]->vals;
    sgm[r] = (fc[k->kref[r]]->flags & NCS_COLF_SIGNED) ? ~0ull : 0;
    sgn |= (uint32_t)(sgm[r] & 1) << r;
    acc[r] = k->kacc[r];
  }
  if (end && k->krec == 0 && n) { /* after an end field, the chunk's first record: gap 0, its value as is */
    uint64_t h = 0;
    for (uint32_t r = 0; r < nref; r++) acc[r] = ((acc[r] + v[r][0]) & sgm[r]) | (v[r][0] & ~sgm[r]);
    if (nkey) {
      for (uint32_t r = 0; r < nkey; r++) h = ncs_colk_hash(h, acc[r]);
      tab[h >> 56] = (struct ncs_colkey){h | 1, 0};
    }
    uint64_t a = x[0];
    glast = 0;
    x[0] = sg ? a - aprev : a;
    any = all = sg ? ncs_zigzag((int64_t)x[0]) : x[0];
    vl = ncs_col_vlen(any);
    aprev = a;
    q = 1;
  }
  k->krec += n;
  /* one copy per (keys, end field) shape, with the signed fields of the shim's keyed columns
   * (FORMAT.md "Keyed columns": CALL t_enter reads op, comm, count and t_exit, the last two
   * signed; t_exit op, comm and count; GPU_TIME gpu_start its gpu_end) and the column's own
   * sign (signed, as all of those are) constant in a copy of their own; fields all unsigned
   * (KERNEL start's duration) in one with the column's sign as it comes; other sign patterns in
   * the shape's general copy (every one there when NCS_COLK_GENERAL: tests) */
#define NCS_UNKEY_L_(K, E, S, G) ncs_col_unkey_loop(x, v, S, acc, q, n, K, E, G, tab, &aprev, &glast, &any, &all, &vl)
  switch (nkey * 2 + end) { /* nref = nkey + end <= NCS_COLK_MAX_KEYS + 1 (ncs_columns_begin) */
#define NCS_UNKEY_(K, E) \
  case K * 2 + E: \
    if (!NCS_COLK_GENERAL && sg && sgn == 0) NCS_UNKEY_L_(K, E, 0, 1); \
    else if (!NCS_COLK_GENERAL && sgn == 0) NCS_UNKEY_L_(K, E, 0, sg); \
    else NCS_UNKEY_L_(K, E, sgn, sg); \
    break;
#define NCS_UNKEY_S_(K, E, S) \
  case K * 2 + E: \
    if (!NCS_COLK_GENERAL && sg && sgn == (S)) NCS_UNKEY_L_(K, E, S, 1); \
    else if (!NCS_COLK_GENERAL && sgn == 0) NCS_UNKEY_L_(K, E, 0, sg); \
    else NCS_UNKEY_L_(K, E, sgn, sg); \
    break;
    NCS_UNKEY_S_(0, 1, 1u) NCS_UNKEY_(1, 0) NCS_UNKEY_(1, 1) NCS_UNKEY_(2, 0) NCS_UNKEY_(2, 1)
    NCS_UNKEY_S_(3, 0, 4u) NCS_UNKEY_S_(3, 1, 12u) NCS_UNKEY_(4, 0) NCS_UNKEY_(4, 1)
#undef NCS_UNKEY_
#undef NCS_UNKEY_S_
#undef NCS_UNKEY_L_
  default: break; /* (no key and no end field: refused by ncs_columns_begin) */
  }
  for (uint32_t r = 0; r < nref; r++) k->kacc[r] = acc[r];
  k->aprev = aprev;
  k->glast = glast;
  k->vor = any;
  k->vand = n ? all : 0;
  k->vlens = vl;
}

#ifndef NCS_COL_SIMD
#define NCS_COL_SIMD 1 /* tests: 0 takes ncs_col_decode through its portable loop only */
#endif
#if defined(__SSE2__)
/* ncs_col_loop's SSE2 part (x86-64's baseline): its values i .. i+16k-1 while 16 are left,
 * the same arithmetic two 64-bit lanes at a time (a signed column's values stored as they are,
 * their zigzags ORed and ANDed). The 16 codes of the w planes at pl[b] + i
 * are turned into 8 pairs of codes by byte, word and dword interleaves (planes w .. 7 are 0);
 * a delta column's running value crosses lanes by a shift of 8 bytes and a broadcast. *p, the
 * OR and the AND move on as the portable loop moves them; returns the first value not done. */
static inline __attribute__((always_inline)) uint64_t ncs_col_loop16(const uint8_t *const *pl, uint64_t *out,
                                                                     uint64_t n, unsigned sh, uint32_t w, uint64_t dm,
                                                                     uint64_t sg, int same, uint64_t *p,
                                                                     uint64_t *any, uint64_t *all) {
  const __m128i zero = _mm_setzero_si128(), one = _mm_set1_epi64x(1), shc = _mm_cvtsi32_si128((int)sh);
  __m128i vp = _mm_set1_epi64x((long long)*p), vor = zero, vand = _mm_set1_epi32(-1);
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i b[8], a[8], c[8], z[8];
    for (uint32_t k = 0; k < 8; k++) b[k] = k < w ? _mm_loadu_si128((const __m128i *)(const void *)(pl[k] + i)) : zero;
    /* bytes: a[2m] codes 0-7 of planes 2m, 2m+1 as 16-bit pairs, a[2m+1] codes 8-15 */
    for (uint32_t m = 0; m < 4; m++) {
      a[2 * m] = 2 * m < w ? _mm_unpacklo_epi8(b[2 * m], b[2 * m + 1]) : zero;
      a[2 * m + 1] = 2 * m < w ? _mm_unpackhi_epi8(b[2 * m], b[2 * m + 1]) : zero;
    }
    /* words: c[4h + r] codes 4r .. 4r+3 of planes 4h .. 4h+3 */
    for (uint32_t h = 0; h < 2; h++) {
      const __m128i *s = a + 4 * h;
      int on = 4 * h < w;
      c[4 * h + 0] = on ? _mm_unpacklo_epi16(s[0], s[2]) : zero;
      c[4 * h + 1] = on ? _mm_unpackhi_epi16(s[0], s[2]) : zero;
      c[4 * h + 2] = on ? _mm_unpacklo_epi16(s[1], s[3]) : zero;
      c[4 * h + 3] = on ? _mm_unpackhi_epi16(s[1], s[3]) : zero;
    }
    /* dwords: z[2r] codes 4r, 4r+1, z[2r+1] codes 4r+2, 4r+3 */
    for (uint32_t r = 0; r < 4; r++) {
      z[2 * r] = _mm_unpacklo_epi32(c[r], c[4 + r]);
      z[2 * r + 1] = _mm_unpackhi_epi32(c[r], c[4 + r]);
    }
    for (uint32_t k = 0; k < 8; k++) {
      __m128i v = z[k]; /* the codes; then the rows' varints' values (v) and the values (x) */
      __m128i x = _mm_xor_si128(_mm_srli_epi64(v, 1), _mm_sub_epi64(zero, _mm_and_si128(v, one))); /* unzigzag */
      if (!same) {
        x = _mm_sll_epi64(x, shc);
        if (dm) x = _mm_add_epi64(_mm_add_epi64(x, _mm_slli_si128(x, 8)), vp); /* running sums */
        vp = _mm_shuffle_epi32(x, 0xEE);                                        /* the last, in both lanes */
        v = sg ? _mm_xor_si128(_mm_slli_epi64(x, 1), _mm_shuffle_epi32(_mm_srai_epi32(x, 31), 0xF5)) : x; /* zigzag */
      }
      _mm_storeu_si128((__m128i *)(void *)(out + i + 2 * k), sg ? x : v);
      vor = _mm_or_si128(vor, v);
      vand = _mm_and_si128(vand, v);
    }
  }
  if (i) {
    uint64_t o[2], a2[2];
    _mm_storeu_si128((__m128i *)(void *)o, vor);
    _mm_storeu_si128((__m128i *)(void *)a2, vand);
    *any |= o[0] | o[1];
    *all &= a2[0] & a2[1];
    if (!same) _mm_storel_epi64((__m128i *)(void *)p, vp);
  }
  return i;
}
#endif

/* ncs_col_decode's loop over codes q .. end-1 of a column of w (1..8) byte planes of
 * `stride` codes each, delta (dm ~0) or not (0), stored signed (sg 1) or not (0); `same`: the
 * code is the row's varint (signed, not delta, no shift: zigzag(unzigzag(z)) is z). Constants
 * in each copy; each plane read through its own pointer; on x86-64, 16 values at a time by
 * ncs_col_loop16 first (NCS_COL_SIMD), the rest here. Stores the values (ncs_col_decode);
 * returns the OR of the rows' varints' values and ANDs them into *all. */
static inline __attribute__((always_inline)) uint64_t ncs_col_loop(const uint8_t *d, uint64_t stride, uint64_t *vals,
                                                                   uint64_t q, uint64_t end, unsigned sh, uint32_t w,
                                                                   uint64_t dm, uint64_t sg, int same,
                                                                   uint64_t *prev, uint64_t *all) {
  uint64_t p = *prev, any = 0, a = ~0ull, n = end - q, z = 0, i = 0;
  const uint8_t *pl[8];
  uint64_t *out = vals + q;
  for (uint32_t b = 0; b < w; b++) pl[b] = d + (size_t)b * stride + q - 1; /* code q - 1 of plane b */
#if defined(__SSE2__)
  if (NCS_COL_SIMD) i = ncs_col_loop16(pl, out, n, sh, w, dm, sg, same, &p, &any, &a);
#endif
  for (; i < n; i++) {
    z = 0;
    for (uint32_t b = 0; b < w; b++) z |= (uint64_t)pl[b][i] << (8 * b);
    uint64_t v = z, x = (uint64_t)ncs_unzigzag(z); /* the row's varint's value, the value */
    if (!same) {
      x = (p & dm) + (x << sh);
      p = x;
      v = (x << sg) ^ (0 - ((x >> 63) & sg)); /* zigzag when signed */
    }
    out[i] = sg ? x : v;
    any |= v;
    a &= v;
  }
  if (same && n) p = out[n - 1]; /* (the last value) */
  *prev = p;
  *all &= a;
  return any;
}

/* nonzero when one of the n bytes at p is */
static inline uint64_t ncs_col_nonzero(const uint8_t *p, uint64_t n) {
  uint64_t acc = 0, w, i = 0;
  for (; i + 32 <= n && !acc; i += 32)
    for (int k = 0; k < 4; k++) { memcpy(&w, p + i + 8 * k, 8); acc |= w; }
  for (; i < n && !acc; i++) acc = p[i];
  return acc;
}

enum { NCS_COLR_BLOCK = 256 }; /* values decoded at a time per column (cache-sized) */
/* Decodes values q .. q+n-1 of field column k into k->vals[0..n) (a signed column's as the
 * signed values, not their zigzags: ncs_col_row_value gives the rows' varints); sets k->vor
 * and k->vand to the OR and the AND of the rows' varints' values (the reader's row-length
 * accounting; equal when they are all one value) and returns the OR. A block of one value (width 0, or every code 0) that vals already
 * holds from the column's previous block is not written again (not for keyed columns:
 * ncs_col_unkey rewrites their vals). */
static inline uint64_t ncs_col_decode(struct ncs_colr *k, uint64_t n) {
  uint64_t cnt = k->count, stride = cnt ? cnt - 1 : 0, prev = k->vprev, q0 = k->q, any = 0, all = ~0ull;
  unsigned sh = NCS_COLF_SHIFT(k->flags);
  uint64_t dm = (k->flags & NCS_COLF_DELTA) ? ~0ull : 0;
  uint64_t sg = (k->flags & (NCS_COLF_SIGNED | NCS_COLF_KEYED)) == NCS_COLF_SIGNED; /* keyed: ncs_col_unkey */
  const uint8_t *d = k->bytes;
  uint64_t *vals = k->vals - q0; /* vals[q] for q in [q0, q0 + n) */
  uint32_t w = k->width;
  uint64_t q = q0, end = q0 + n;
  if (q == 0 && q < end) {
    uint64_t x = (uint64_t)ncs_unzigzag(k->first) << sh;
    prev = x;
    vals[0] = x;
    any = all = (x << sg) ^ (0 - ((x >> 63) & sg));
    q = 1;
  }
  /* the block's width: its planes up to the last one with a code byte not 0 (a block whose
   * codes are all 0 is decoded as width 0; one large code, e.g. a chunk's first delta, widens
   * the column but not its other blocks) */
  while (w && q < end && !ncs_col_nonzero(d + (size_t)(w - 1) * stride + q - 1, end - q)) w--;
  if (w == 0) { /* every code 0: each value the previous one (delta) or 0 */
    if (q < end) {
      uint64_t x = prev & dm, v = (x << sg) ^ (0 - ((x >> 63) & sg));
      prev = x;
      any |= v;
      all &= v;
      if (q > q0 || k->vfilled < n || k->vfill != x || (k->flags & NCS_COLF_KEYED))
        for (; q < end; q++) vals[q] = x;
    }
  }
  else if (q < end) { /* one loop per width, delta or not, signed or not */
#define NCS_COLR_W(W) \
  (dm ? (sg ? ncs_col_loop(d, stride, vals, q, end, sh, W, ~0ull, 1, 0, &prev, &all) \
            : ncs_col_loop(d, stride, vals, q, end, sh, W, ~0ull, 0, 0, &prev, &all)) \
      : (sg ? (sh ? ncs_col_loop(d, stride, vals, q, end, sh, W, 0, 1, 0, &prev, &all) \
                  : ncs_col_loop(d, stride, vals, q, end, 0, W, 0, 1, 1, &prev, &all)) \
            : ncs_col_loop(d, stride, vals, q, end, sh, W, 0, 0, 0, &prev, &all)))
    switch (w) {
    case 1: any |= NCS_COLR_W(1); break;
    case 2: any |= NCS_COLR_W(2); break;
    case 3: any |= NCS_COLR_W(3); break;
    case 4: any |= NCS_COLR_W(4); break;
    case 5: any |= NCS_COLR_W(5); break;
    case 6: any |= NCS_COLR_W(6); break;
    case 7: any |= NCS_COLR_W(7); break;
    default: any |= NCS_COLR_W(8); break; /* ncs_columns_begin: width <= 8 */
    }
#undef NCS_COLR_W
  }
  k->vprev = prev;
  k->q = end;
  k->vor = any;
  k->vand = n ? all : 0;
  k->vfill = n ? vals[end - 1] : 0;
  k->vfilled = any == k->vand ? n : 0;
  return any;
}

/* A column payload read back one record at a time, in row order, without rebuilding the rows:
 *   - ncs_columns_begin: reads the directory and decompresses the columns into `scratch`
 *     (ncs_columns_unpack's arguments and returns, less `out`); on 0, `rd` is ready;
 *   - ncs_columns_next: the next record: 1 with its type and either its whole body (*body,
 *     *len) or, *body NULL, a split record: its values are rd->vp[j][rd->at] for fields
 *     j < rd->nv (as the row's varints hold them, but when bit j of rd->vsigned is set, the
 *     column is signed and they are the varints' unzigzags: ncs_col_row_value), in a block of
 *     rd->nblock records of its type decoded together (rd->at == 0: a new block,
 *     rd->vp[j][0 .. nblock) all ready; bit j of rd->vsame set: field j's values in the block
 *     are all rd->vp[j][0]);
 *     0 after the last record; -1 damaged (*why). The rows the records stand for are counted
 *     against the chunk's raw size as they are read (a split record's with its block);
 *   - ncs_columns_run: after a split record, takes the records that follow it while they are
 *     split records of its type in its block (at most `max`) and returns how many: they are
 *     rd->vp[j][rd->at + 1 .. rd->at + that many] (a caller's loop over a block without a call
 *     of ncs_columns_next per record);
 *   - ncs_columns_next_run: the records ncs_columns_next and ncs_columns_run would take, when
 *     they are split records of a block already decoded, without the cursor's other fields;
 *   - ncs_columns_end: after the last record, 0 when the columns held exactly the rows of
 *     rsz bytes, else -1 (*why);
 *   - ncs_columns_body: a split record's row body (its values as shortest varints).
 * rd lives on the caller's side (about 66 KiB); the columns stay in scratch until the end. */
#define NCS_COLRD_MAXCOL (3u + 64u * 64u)
struct ncs_colrd {
  const uint8_t *tp, *te, *lp, *le, *bp, *be; /* types, lengths, whole bodies */
  size_t rsz, o;                              /* the chunk's raw size; row bytes counted */
  const uint64_t *const *vp;                  /* the last split record: its type's values */
  uint32_t nv, at, nblock, vt;                /* fields, index in the block, block length, type */
  uint64_t vsame;                             /* the fields j whose values in the block are all rd->vp[j][0] */
  uint64_t vsigned;                           /* the fields j whose column is signed */
  uint64_t tsame[NCS_COL_MAX_TYPE + 1];       /* (and of each type's block) */
  uint64_t tsigned[NCS_COL_MAX_TYPE + 1];     /* (and of each type) */
  uint8_t nf[NCS_COL_MAX_TYPE + 1];           /* fields of each split type (0: not split) */
  uint8_t tkeyed[NCS_COL_MAX_TYPE + 1];       /* it has keyed columns (3.0) */
  uint16_t first_col[NCS_COL_MAX_TYPE + 1];   /* its first column in colof */
  uint64_t tpos[NCS_COL_MAX_TYPE + 1], tcount[NCS_COL_MAX_TYPE + 1], tlim[NCS_COL_MAX_TYPE + 1],
      tbase[NCS_COL_MAX_TYPE + 1];            /* values used, held, decoded up to, block start */
  struct ncs_colr *colof[NCS_COLRD_MAXCOL];   /* each split type's columns in field order */
  const uint64_t *colvals[NCS_COLRD_MAXCOL];  /* and their blocks of values */
  uint16_t rowlen[NCS_COLR_BLOCK];            /* a block's row bodies' lengths */
};

/* The bytes that the varints of the rows' values of x[0 .. n) have beyond lo each, all of
 * them at most hi bytes long (lo < hi): a byte for each at or over 2^(7 l), for l in [lo, hi);
 * up to three such levels in one pass. sg: x holds signed values (ncs_col_decode), the rows
 * their zigzags: zigzag(v) >= 2^k exactly when m = v ^ (v >> 63) (v's bits, or their
 * complement when v < 0) >= 2^(k-1), so m is compared with each bound halved. */
static inline __attribute__((always_inline)) size_t ncs_col_longer_(const uint64_t *x, uint64_t n, unsigned lo,
                                                                    unsigned hi, unsigned sg) {
#define NCS_COLL_M_(i) (sg ? x[i] ^ (uint64_t)((int64_t)x[i] >> 63) : x[i])
  size_t extra = 0;
  uint64_t m1 = ((1ull << (7 * lo)) - 1) >> sg;
  if (hi - lo == 1) {
    for (uint64_t i = 0; i < n; i++) extra += NCS_COLL_M_(i) > m1;
    return extra;
  }
  uint64_t m2 = ((1ull << (7 * (lo + 1))) - 1) >> sg; /* hi <= 10: every shift under 64 */
  if (hi - lo == 2) {
    for (uint64_t i = 0; i < n; i++) { uint64_t m = NCS_COLL_M_(i); extra += (size_t)(m > m1) + (m > m2); }
    return extra;
  }
  uint64_t m3 = ((1ull << (7 * (lo + 2))) - 1) >> sg;
  for (uint64_t i = 0; i < n; i++) { uint64_t m = NCS_COLL_M_(i); extra += (size_t)(m > m1) + (m > m2) + (m > m3); }
  for (unsigned l = lo + 3; l < hi; l++) /* values of more than lo + 3 bytes */
    for (uint64_t i = 0, at = (1ull << (7 * l)) >> sg; i < n; i++) extra += NCS_COLL_M_(i) >= at;
#undef NCS_COLL_M_
  return extra;
}
/* ncs_col_longer from the codes of a signed column that is not delta (nor keyed), read in its
 * byte planes, for one of w planes and shift sh with 8 w + sh <= 62: code z != 0 is the zigzag
 * of v, the value is v * 2^sh, and the row's varint, its zigzag, is z * 2^sh plus at most
 * 2^sh - 1: z's bits and sh more. So a value's varint is over l bytes exactly when
 * z >> (7 l - sh) (or z itself when 7 l <= sh) is not 0: for each level, the codes whose
 * bytes from that bit up are not all 0, counted 16 at a time on x86-64. m codes from plane
 * offset `at`. */
static inline size_t ncs_col_longer_planes(const uint8_t *d, uint64_t stride, uint64_t at, uint64_t m, uint32_t w,
                                           unsigned sh, unsigned lo, unsigned hi) {
  size_t extra = 0;
  for (unsigned l = lo; l < hi; l++) {
    unsigned bit = 7 * l > sh ? 7 * l - sh : 0, b0 = bit / 8;
    uint8_t low = (uint8_t)(0xffu << (bit % 8)); /* plane b0's bits from `bit` up */
    const uint8_t *p = d + at;
    uint64_t i = 0;
    if (b0 >= w) continue; /* (no code that long: not reached, hi bounds the values) */
#if defined(__SSE2__)
    if (NCS_COL_SIMD) {
      const __m128i zero = _mm_setzero_si128(), lowv = _mm_set1_epi8((char)low);
      __m128i zeros = zero; /* 255 per code that is 0 from `bit` up, summed per half */
      for (; i + 16 <= m; i += 16) {
        __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + (size_t)b0 * stride + i)), lowv);
        for (uint32_t b = b0 + 1; b < w; b++) a = _mm_or_si128(a, _mm_loadu_si128((const __m128i *)(const void *)(p + (size_t)b * stride + i)));
        zeros = _mm_add_epi64(zeros, _mm_sad_epu8(_mm_cmpeq_epi8(a, zero), zero));
      }
      uint64_t z2[2];
      _mm_storeu_si128((__m128i *)(void *)z2, zeros);
      extra += i - (z2[0] + z2[1]) / 255;
    }
#endif
    for (; i < m; i++) {
      uint8_t a = p[(size_t)b0 * stride + i] & low;
      for (uint32_t b = b0 + 1; b < w; b++) a |= p[(size_t)b * stride + i];
      extra += a != 0;
    }
  }
  return extra;
}
/* The bytes that the rows' varints of the n values column k has just decoded (ncs_col_decode)
 * have beyond lo each, all of them at most hi bytes long (lo < hi). */
static inline size_t ncs_col_longer(const struct ncs_colr *k, uint64_t n, unsigned lo, unsigned hi) {
  unsigned sh = NCS_COLF_SHIFT(k->flags);
  if ((k->flags & (NCS_COLF_SIGNED | NCS_COLF_DELTA | NCS_COLF_KEYED)) == NCS_COLF_SIGNED && 8 * k->width + sh <= 62 && n) {
    uint64_t q = k->q - n, first = q == 0; /* value 0 of the chunk is in the directory */
    size_t extra = first ? ncs_col_vlen(ncs_zigzag((int64_t)k->vals[0])) - lo : 0;
    return extra + ncs_col_longer_planes(k->bytes, k->count - 1, q + first - 1, n - first, k->width, sh, lo, hi);
  }
  return (k->flags & NCS_COLF_SIGNED) ? ncs_col_longer_(k->vals, n, lo, hi, 1) : ncs_col_longer_(k->vals, n, lo, hi, 0);
}

static inline int ncs_columns_begin(struct ncs_colrd *rd, ZSTD_DCtx *dctx, const uint8_t *payload, size_t psz,
                                    size_t rsz, uint8_t *scratch, size_t scap, size_t *need, const char **why,
                                    size_t *where) {
  const uint8_t *p = payload, *e = payload + psz;
  uint64_t ncol;
  *why = "";
  *where = 0;
  *need = 0;
#define NCS_COLFAIL(msg) do { *why = (msg); *where = (size_t)(p - payload); return -1; } while (0)
  if (ncs_get_varint(&p, e, &ncol) != 0 || ncol < 3 || ncol > NCS_COLRD_MAXCOL) NCS_COLFAIL("bad column count");
  /* the table lives at the start of scratch, then the decompressed columns */
  size_t tab = (size_t)ncol * sizeof(struct ncs_colr) + 2 * NCS_COL_ID_LIMIT + 16;
  struct ncs_colr *c = NULL;
  uint16_t *slot = NULL;
  int sized = scap >= tab;
  if (sized) {
    uint8_t *a = scratch + ((16 - ((uintptr_t)scratch & 15)) & 15);
    sized = (size_t)(a - scratch) + tab <= scap;
    c = (struct ncs_colr *)a;
    slot = (uint16_t *)(a + (size_t)ncol * sizeof *c);
    if (sized) memset(slot, 0xff, 2 * NCS_COL_ID_LIMIT);
  }
  uint64_t total = 0, stored = 0, values = 0, blockvals = 0, nkeyed = 0;
  struct ncs_colr one;
  for (uint64_t i = 0; i < ncol; i++) {
    struct ncs_colr *k = sized ? &c[i] : &one;
    uint64_t id, fl, count, first, width, st;
    if (ncs_get_varint(&p, e, &id) || ncs_get_varint(&p, e, &fl) || ncs_get_varint(&p, e, &count) ||
        ncs_get_varint(&p, e, &first) || ncs_get_varint(&p, e, &width) || ncs_get_varint(&p, e, &st))
      NCS_COLFAIL("column directory cut short");
    if (id >= NCS_COL_ID_LIMIT || (id >= 3 && id < 64) || (id >= 3 && id % 64 >= NCS_COL_MAX_FIELDS) ||
        (i < 3) != (id < 3) || (i < 3 && id != i))
      NCS_COLFAIL("bad column id");
    if (fl & ~(uint64_t)NCS_COLF_KNOWN || count > rsz || width > 8 || st > psz || (id < 3 && (fl & ~4u || width)))
      NCS_COLFAIL("bad column description");
    k->id = (uint32_t)id; k->flags = (uint32_t)fl; k->count = (uint32_t)count; k->width = (uint32_t)width;
    k->first = first; k->stored = st; k->pos = 0; k->prev = 0;
    k->kmask = 0; k->kend = 0; k->nref = 0; k->aprev = 0; k->glast = 0; k->krec = 0; k->tab = NULL;
    k->vor = k->vand = k->vfill = k->vfilled = 0;
    if (fl & NCS_COLF_KEYED) {
      uint64_t km, ke;
      if (ncs_get_varint(&p, e, &km) || ncs_get_varint(&p, e, &ke)) NCS_COLFAIL("column directory cut short");
      if (id < 3 || (unsigned)__builtin_popcountll(km) > NCS_COLK_MAX_KEYS || (km >> (id % 64) & 1) ||
          ke > NCS_COL_MAX_FIELDS || ke == id % 64 + 1 || (!km && !ke) || ++nkeyed > NCS_COLK_MAX_COLS)
        NCS_COLFAIL("bad keyed column");
      k->kmask = km; k->kend = (uint32_t)ke;
      for (; km; km &= km - 1) { k->kref[k->nref] = (uint8_t)__builtin_ctzll(km); k->kacc[k->nref++] = 0; }
      if (ke) { k->kref[k->nref] = (uint8_t)(ke - 1); k->kacc[k->nref++] = 0; }
    }
    k->size = id < 3 ? count : (count ? (count - 1) * width : 0);
    if (!(fl & NCS_COLF_ZSTD) && st != k->size) NCS_COLFAIL("stored column size disagrees");
    if (sized) {
      if (slot[id] != 0xffff) NCS_COLFAIL("column listed twice");
      slot[id] = (uint16_t)i;
    }
    total += (fl & NCS_COLF_ZSTD) ? k->size : 0;
    stored += st;
    values += id >= 3 ? count : 0;
    blockvals += id >= 3 ? (count < NCS_COLR_BLOCK ? count : NCS_COLR_BLOCK) : 0;
  }
  if (total > NCS_COLUMNS_SCRATCH(rsz)) NCS_COLFAIL("columns larger than the format allows");
  if (stored != (uint64_t)(e - p)) NCS_COLFAIL("column bytes do not fill the payload");
  if (values > rsz) NCS_COLFAIL("more field values than the rows can hold"); /* a field is >= 1 byte */
  *need = tab + 32 + 8 * (size_t)blockvals + (size_t)nkeyed * NCS_COLK_SLOTS * sizeof(struct ncs_colkey) + (size_t)total;
  if (!sized || scap < *need) return -2;
  /* the columns' bytes */
  uint8_t *dst = scratch + (scap - (size_t)total);
  for (uint64_t i = 0; i < ncol; i++) {
    struct ncs_colr *k = &c[i];
    if (k->flags & NCS_COLF_ZSTD) {
      size_t got = ZSTD_decompressDCtx(dctx, dst, (size_t)k->size, p, (size_t)k->stored);
      if (ZSTD_isError(got) || got != k->size) NCS_COLFAIL("a column does not decompress to its size");
      k->bytes = dst;
      dst += k->size;
    } else {
      k->bytes = p;
    }
    p += k->stored;
  }
  p = payload; /* offsets of later errors: the payload's start */
  /* field counts of split types: every field 0..n-1 present, with one count */
  uint8_t *nf = rd->nf;
  memset(nf, 0, sizeof rd->nf);
  for (uint64_t i = 3; i < ncol; i++) {
    uint32_t t = c[i].id / 64, j = c[i].id % 64;
    if (j + 1 > nf[t]) nf[t] = (uint8_t)(j + 1);
  }
  for (uint32_t t = 1; t <= NCS_COL_MAX_TYPE; t++)
    for (uint32_t j = 0; j < nf[t]; j++)
      if (slot[NCS_COL_FIELD(t, j)] == 0xffff || c[slot[NCS_COL_FIELD(t, j)]].count != c[slot[NCS_COL_FIELD(t, 0)]].count)
        NCS_COLFAIL("a split record type lacks a field column");
  /* a block of values per field column; keyed columns: what they read is a plain column of
   * their type, and a key table each */
  uint64_t *vals = (uint64_t *)(((uintptr_t)slot + 2 * NCS_COL_ID_LIMIT + 15) & ~(uintptr_t)15);
  for (uint64_t i = 3; i < ncol; i++) {
    c[i].vals = vals;
    c[i].q = 0;
    c[i].vprev = 0;
    vals += c[i].count < NCS_COLR_BLOCK ? c[i].count : NCS_COLR_BLOCK;
  }
  uint8_t *tkeyed = rd->tkeyed;
  memset(tkeyed, 0, sizeof rd->tkeyed);
  for (uint64_t i = 3; i < ncol; i++) { /* what a keyed column reads: fields of its type */
    if (!(c[i].flags & NCS_COLF_KEYED)) continue;
    uint32_t t = c[i].id / 64;
    c[i].kpass = 1;
    for (uint32_t r = 0; r < c[i].nref; r++)
      if (c[i].kref[r] >= nf[t]) NCS_COLFAIL("bad keyed column");
  }
  for (uint64_t i = 3; i < ncol; i++) { /* keyed columns reading keyed ones: those read plain ones only */
    if (!(c[i].flags & NCS_COLF_KEYED)) continue;
    uint32_t t = c[i].id / 64;
    for (uint32_t r = 0; r < c[i].nref; r++) {
      const struct ncs_colr *f = &c[slot[NCS_COL_FIELD(t, c[i].kref[r])]];
      if (!(f->flags & NCS_COLF_KEYED)) continue;
      for (uint32_t r2 = 0; r2 < f->nref; r2++)
        if (c[slot[NCS_COL_FIELD(t, f->kref[r2])]].flags & NCS_COLF_KEYED) NCS_COLFAIL("keyed columns read each other too deep");
      c[i].kpass = 2;
    }
  }
  for (uint64_t i = 3; i < ncol; i++) {
    if (!(c[i].flags & NCS_COLF_KEYED)) continue;
    uint32_t t = c[i].id / 64;
    c[i].tab = (struct ncs_colkey *)vals;
    memset(c[i].tab, 0, NCS_COLK_SLOTS * sizeof *c[i].tab);
    vals += NCS_COLK_SLOTS * sizeof(struct ncs_colkey) / sizeof *vals;
    tkeyed[t] = 1;
  }
  /* each split type's columns in field order */
  uint32_t no = 0;
  for (uint32_t t = 1; t <= NCS_COL_MAX_TYPE; t++) {
    rd->first_col[t] = (uint16_t)no;
    rd->tpos[t] = rd->tlim[t] = rd->tbase[t] = rd->tsame[t] = 0;
    rd->tcount[t] = nf[t] ? c[slot[NCS_COL_FIELD(t, 0)]].count : 0;
    rd->tsigned[t] = 0;
    for (uint32_t j = 0; j < nf[t]; j++, no++) {
      rd->colof[no] = &c[slot[NCS_COL_FIELD(t, j)]];
      rd->colvals[no] = rd->colof[no]->vals;
      rd->tsigned[t] |= (uint64_t)((rd->colof[no]->flags & NCS_COLF_SIGNED) != 0) << j;
    }
  }
  rd->tp = c[0].bytes; rd->te = rd->tp + c[0].size;
  rd->lp = c[1].bytes; rd->le = rd->lp + c[1].size;
  rd->bp = c[2].bytes; rd->be = rd->bp + c[2].size;
  rd->rsz = rsz;
  rd->o = 0;
  rd->vp = NULL;
  rd->vsame = rd->vsigned = 0;
  rd->nv = rd->at = rd->nblock = rd->vt = 0;
#undef NCS_COLFAIL
  return 0;
}

/* (always inlined: it runs once a record, in the reader's loop) */
static inline __attribute__((always_inline)) int ncs_columns_next(struct ncs_colrd *rd, uint64_t *type, const uint8_t **body, size_t *len,
                                   const char **why) {
#define NCS_COLFAIL(msg) do { *why = (msg); return -1; } while (0)
  if (rd->tp >= rd->te) return 0;
  uint64_t tc, n;
  if (*rd->tp < 0x80) tc = *rd->tp++;
  else if (ncs_get_varint(&rd->tp, rd->te, &tc) != 0) NCS_COLFAIL("record types column cut short");
  uint64_t t = tc >> 1;
  *type = t;
  if (!(tc & 1)) { /* stored whole */
    if (ncs_get_varint(&rd->lp, rd->le, &n) != 0 || n > (uint64_t)(rd->be - rd->bp)) NCS_COLFAIL("whole records column cut short");
    *body = rd->bp;
    *len = (size_t)n;
    rd->bp += n;
    size_t row = ncs_col_varint_len(t) + ncs_col_varint_len(n) + (size_t)n;
    if (row > rd->rsz - rd->o) NCS_COLFAIL("rows longer than the chunk's raw size");
    rd->o += row;
    return 1;
  }
  if (t < 1 || t > NCS_COL_MAX_TYPE || !rd->nf[t]) NCS_COLFAIL("a split record without its columns");
  uint32_t nft = rd->nf[t];
  uint64_t at = rd->tpos[t]++;
  if (at >= rd->tcount[t]) NCS_COLFAIL("a field column ends early");
  if (at >= rd->tlim[t]) { /* the next block of this type's values, and the rows they make */
    uint64_t nb = rd->tcount[t] - at < NCS_COLR_BLOCK ? rd->tcount[t] - at : NCS_COLR_BLOCK;
    struct ncs_colr *const *cols = rd->colof + rd->first_col[t];
    size_t rows = 2 * (size_t)nb, most = 0; /* type and length bytes; the longest body possible */
    uint64_t same = 0;                        /* the fields whose values in the block are one value */
    for (uint32_t j = 0; j < nft; j++) (void)ncs_col_decode(cols[j], nb);
    for (uint32_t pass = 1; rd->tkeyed[t] && pass <= 2; pass++) /* keyed: after what they read */
      for (uint32_t j = 0; j < nft; j++)
        if ((cols[j]->flags & NCS_COLF_KEYED) && cols[j]->kpass == pass) ncs_col_unkey(cols[j], cols, nb);
    for (uint32_t j = 0; j < nft; j++) {
      uint64_t any = cols[j]->vor, all = cols[j]->vand; /* keyed: as ncs_col_unkey left them */
      unsigned lo = ncs_col_vlen(all), hi = ncs_col_vlen(any);
      most += hi;
      same |= (uint64_t)(any == all) << j;
      if (cols[j]->flags & NCS_COLF_KEYED) { rows += cols[j]->vlens; continue; } /* counted by ncs_col_unkey */
      rows += nb * lo; /* every value's varint at least as long as all's (all <= x <= any) */
      if (hi > lo) rows += ncs_col_longer(cols[j], nb, lo, hi);
    }
    rd->tsame[t] = same;
    if (most >= 128) { /* some bodies may need a two-byte length */
      uint16_t *rl = rd->rowlen;
      memset(rl, 0, (size_t)nb * sizeof *rl);
      for (uint32_t j = 0; j < nft; j++)
        for (uint64_t i = 0; i < nb; i++) rl[i] += (uint16_t)ncs_col_vlen(ncs_col_row_value(cols[j], cols[j]->vals[i]));
      for (uint64_t i = 0; i < nb; i++) rows += rl[i] >= 128;
    }
    if (rows > rd->rsz - rd->o) NCS_COLFAIL("rows longer than the chunk's raw size");
    rd->o += rows;
    rd->tbase[t] = at;
    rd->tlim[t] = at + nb;
  }
  rd->vp = rd->colvals + rd->first_col[t];
  rd->vsame = rd->tsame[t];
  rd->vsigned = rd->tsigned[t];
  rd->vt = (uint32_t)t;
  rd->nv = nft;
  rd->at = (uint32_t)(at - rd->tbase[t]);
  rd->nblock = (uint32_t)(rd->tlim[t] - rd->tbase[t]);
  *body = NULL;
  *len = 0;
  return 1;
#undef NCS_COLFAIL
}

/* ncs_columns_next for its most common case, the reader's fast path: when the next record is
 * a split record of type t1 or t2 (one-byte codes) whose block of values is decoded already,
 * takes it and the records right after it of its type in its block, at most max of them, and
 * returns how many (*t their type, *i the first one's index in the block); else returns 0 and
 * takes nothing (then call ncs_columns_next, which decodes the next block or reports the
 * damage). It leaves rd->vp, at, nv, vsame, vsigned, nblock and vt as they were: its caller decoded
 * the block's records at the block's first one. */
static inline __attribute__((always_inline)) uint32_t ncs_columns_next_run(struct ncs_colrd *rd, uint32_t t1, uint32_t t2,
                                                                          uint32_t max, uint32_t *t, uint32_t *i) {
  const uint8_t *p = rd->tp;
  if (p >= rd->te || !max) return 0;
  uint32_t tc = *p, ty = tc >> 1;
  if (tc != (t1 << 1 | 1) && tc != (t2 << 1 | 1)) return 0; /* another type, stored whole, a longer code */
  uint64_t at = rd->tpos[ty], lim = rd->tlim[ty];
  if (at >= lim) return 0; /* its block is used up (tlim <= tcount: none left is caught there) */
  uint64_t most = lim - at, left = (uint64_t)(rd->te - p);
  if (most > left) most = left;
  if (most > max) most = max;
  uint64_t m = 1;
  if (most > 1 && p[1] == tc) { /* a run: 8 codes at a time (little-endian hosts) */
    m = 2;
    for (uint64_t w, dif; m + 8 <= most; m += 8) {
      memcpy(&w, p + m, 8);
      if ((dif = w ^ (tc * 0x0101010101010101ull)) != 0) { m += (uint64_t)__builtin_ctzll(dif) / 8; goto took; }
    }
    while (m < most && p[m] == tc) m++;
  }
took:
  rd->tp = p + m;
  rd->tpos[ty] = at + m;
  *t = ty;
  *i = (uint32_t)(at - rd->tbase[ty]);
  return (uint32_t)m;
}

static inline uint32_t ncs_columns_took(struct ncs_colrd *rd, uint64_t t, uint32_t m) {
  rd->tp += m;
  rd->tpos[t] += m;
  return m;
}
static inline uint32_t ncs_columns_run(struct ncs_colrd *rd, uint32_t max) {
  uint64_t left = (uint64_t)(rd->te - rd->tp), t = rd->vt;
  uint32_t m = 0, most = rd->nblock - rd->at - 1; /* the block's records after this one */
  if (most > max) most = max;
  if (most > left) most = (uint32_t)left;
  const uint8_t *p = rd->tp, tc = (uint8_t)(t << 1 | 1); /* a split type's code: one byte */
  if (!most || p[0] != tc) return 0; /* the next record is of another type (interleaved CALL, GPU_TIME) */
  for (uint64_t w, dif; m + 8 <= most; m += 8) { /* 8 codes at a time (little-endian hosts) */
    memcpy(&w, p + m, 8);
    if ((dif = w ^ (tc * 0x0101010101010101ull)) != 0) return ncs_columns_took(rd, t, m + (uint32_t)__builtin_ctzll(dif) / 8);
  }
  while (m < most && p[m] == tc) m++;
  return ncs_columns_took(rd, t, m);
}

static inline int ncs_columns_end(const struct ncs_colrd *rd, const char **why) {
  if (rd->o != rd->rsz || rd->lp != rd->le || rd->bp != rd->be) { *why = "rows do not fill the chunk's raw size"; return -1; }
  for (uint32_t t = 1; t <= NCS_COL_MAX_TYPE; t++)
    if (rd->tpos[t] != rd->tcount[t]) { *why = "a field column has values left over"; return -1; }
  return 0;
}

/* A split record's body: its values as shortest varints at out (room for nv * 10 bytes);
 * returns its length. */
static inline size_t ncs_columns_body(const struct ncs_colrd *rd, uint8_t *out) {
  uint8_t *b = out;
  for (uint32_t j = 0; j < rd->nv; j++) {
    uint64_t x = rd->vp[j][rd->at];
    if (rd->vsigned >> j & 1) x = ncs_zigzag((int64_t)x);
    if (x < 0x80) *b++ = (uint8_t)x;
    else b += ncs_put_varint(b, x);
  }
  return (size_t)(b - out);
}

/* The rows back, through ncs_columns_begin/next/end (which count every row against rsz before
 * it is written here). */
static inline int ncs_columns_unpack(ZSTD_DCtx *dctx, const uint8_t *payload, size_t psz, uint8_t *out, size_t rsz,
                                     uint8_t *scratch, size_t scap, size_t *need, const char **why,
                                     size_t *where) {
  struct ncs_colrd rd;
  int rc = ncs_columns_begin(&rd, dctx, payload, psz, rsz, scratch, scap, need, why, where);
  if (rc) return rc;
  uint64_t type;
  const uint8_t *body;
  size_t len, o = 0;
  uint8_t split[NCS_COL_MAX_FIELDS * 10];
  while ((rc = ncs_columns_next(&rd, &type, &body, &len, why)) == 1) {
    if (!body) {
      len = ncs_columns_body(&rd, split);
      body = split;
    }
    o += ncs_put_varint(out + o, type);
    o += ncs_put_varint(out + o, len);
    if (len) memcpy(out + o, body, len);
    o += len;
  }
  if (rc == 0) rc = ncs_columns_end(&rd, why);
  return rc;
}

#endif
