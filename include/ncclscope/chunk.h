/* chunk.h — the one chunk writer: the file header, and whole records in, one framed chunk
 * out (docs/FORMAT.md: file header, chunk header, one zstd frame per chunk). Header-only.
 *
 * Contract: ncs_chunk_pack() is the only place a chunk is compressed and framed; the shim's
 * writer, `ncclscope synth`, the tests' trace writers and the trace fuzzer all call it (except
 * the shim's chunks over NCS_CHUNK_COLUMNS_MAX, rows by the rule below, whose zstd frame is
 * streamed as they fill, shim/rowzip.c, then framed with ncs_chunk_header; their KERNEL records,
 * left out of that frame, go through ncs_chunk_pack_upto: columns at any size). It
 * compresses `raw` (n bytes of whole records, `records` of them) with the caller's reused
 * zstd context into a column payload (columns.h; flag NCS_CHUNK_F_COLUMNS) at
 * out + NCS_CHUNK_HEADER_SIZE, or, when the rows do not split, into one zstd frame of the
 * rows (flag clear), writes the chunk
 * header (checksum included) at out, and returns the chunk's size (header + payload), or 0
 * when it could not (no room: NCS_CHUNK_BOUND(n) bytes always suffice; zstd error). It
 * allocates nothing itself (zstd may, once, inside a fresh context), writes nothing outside
 * out[0, cap), and does no I/O: the caller writes the chunk where it wants. Same input, same
 * level, same bytes. Column payloads use at least level NCS_CHUNK_COLUMNS_LEVEL. */
#ifndef NCCLSCOPE_CHUNK_H
#define NCCLSCOPE_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>
#include "columns.h"
#include "format.h"

/* Room for the chunk of n raw bytes. */
#define NCS_CHUNK_BOUND(n) (NCS_CHUNK_HEADER_SIZE + ZSTD_COMPRESSBOUND(n) + NCS_COLUMNS_BOUND(n))
/* Chunks of up to this many raw bytes are also compressed as rows; the smaller payload wins. */
#define NCS_CHUNK_ROWS_TRIED 65536u
/* Chunks under this many raw bytes are rows only: each column's frame and table costs more than
 * its values save. In 427 chunks of the DDP-shaped job's traces (2 ranks, host and GPU timing,
 * flush periods 5 to 500 ms) the columns were never smaller below 2 KiB (110 chunks) and won
 * 5 of 151 between 2 and 4 KiB (2.7 % of those bytes); skipping them spares the writer a second
 * compression and the column scratch's pages at every small flush (a short or idle job's). */
#define NCS_CHUNK_COLUMNS_MIN 2048u
/* Chunks over this many raw bytes are written as rows: a chunk that fills this much before
 * its flush period comes from a call rate where the writer's CPU per call (rows: ~20 ns,
 * columns: ~50 ns more) decides whether calls are dropped; size matters less than that. */
#define NCS_CHUNK_COLUMNS_MAX (1u << 20)
/* Column payloads are compressed at least at this zstd level: they come from chunks of at most
 * NCS_CHUNK_COLUMNS_MAX, so from call rates where the writer has CPU to spare; level 5 makes
 * the DDP-shaped job's column chunks 0.15-0.3 bytes per call smaller than level 3 for about
 * 30 % more packing CPU (BENCHMARKS.md "Trace size"). */
#define NCS_CHUNK_COLUMNS_LEVEL 5
static inline int ncs_chunk_columns_level(int level) {
  return level > NCS_CHUNK_COLUMNS_LEVEL ? level : NCS_CHUNK_COLUMNS_LEVEL;
}

/* The 64-byte file header (format NCS_FORMAT_MAJOR.NCS_FORMAT_MINOR). */
static inline void ncs_encode_file_header(uint8_t out[NCS_FILE_HEADER_SIZE], uint64_t realtime_ns,
                                          uint32_t pid) {
  memset(out, 0, NCS_FILE_HEADER_SIZE);
  memcpy(out + NCS_FH_MAGIC, NCS_FILE_MAGIC, 8);
  ncs_put_u16(out + NCS_FH_MAJOR, NCS_FORMAT_MAJOR);
  ncs_put_u16(out + NCS_FH_MINOR, NCS_FORMAT_MINOR);
  ncs_put_u32(out + NCS_FH_SIZE, NCS_FILE_HEADER_SIZE);
  ncs_put_u64(out + NCS_FH_REALTIME, realtime_ns);
  ncs_put_u32(out + NCS_FH_PID, pid);
}

/* The 40-byte chunk header for `payload` (one complete zstd frame of payload_size bytes that
 * decompresses to raw_size bytes holding `records` records), checksum included. (Use
 * ncs_chunk_pack, which compresses too; this is its second half.) */
static inline void ncs_chunk_header(uint8_t out[NCS_CHUNK_HEADER_SIZE], const void *payload,
                                   uint32_t payload_size, uint32_t raw_size, uint32_t records,
                                   uint64_t index, uint64_t dropped_total, uint32_t flags) {
  ncs_put_u32(out + NCS_CH_MAGIC, NCS_CHUNK_MAGIC);
  ncs_put_u32(out + NCS_CH_PAYLOAD, payload_size);
  ncs_put_u32(out + NCS_CH_RAW, raw_size);
  ncs_put_u32(out + NCS_CH_RECORDS, records);
  ncs_put_u64(out + NCS_CH_INDEX, index);
  ncs_put_u64(out + NCS_CH_DROPPED, dropped_total);
  ncs_put_u32(out + NCS_CH_CHECKSUM, ncs_chunk_sum(NCS_FORMAT_MAJOR, out, payload, payload_size));
  ncs_put_u32(out + NCS_CH_FLAGS, flags);
}

/* ncs_chunk_pack with columns tried up to cols_max raw bytes instead of NCS_CHUNK_COLUMNS_MAX:
 * the shim's chunks of KERNEL records alone (writer.c), columns at any size. */
static inline size_t ncs_chunk_pack_upto(ZSTD_CCtx *cctx, int level, uint8_t *out, size_t cap, const void *raw,
                                         size_t n, uint32_t records, uint64_t index, uint64_t dropped_total,
                                         uint32_t flags, size_t cols_max) {
  if (!cctx || cap < NCS_CHUNK_HEADER_SIZE || n > NCS_CHUNK_MAX_RAW) return 0;
  uint8_t *payload = out + NCS_CHUNK_HEADER_SIZE;
  size_t room = cap - NCS_CHUNK_HEADER_SIZE, z = 0;
  if (n <= NCS_CHUNK_ROWS_TRIED) { /* small: the rows' frame when it is smaller */
    z = ZSTD_compressCCtx(cctx, payload, room, raw, n, level);
    if (ZSTD_isError(z)) return 0;
    if (n >= NCS_CHUNK_COLUMNS_MIN && room - z > NCS_COLUMNS_BOUND(n)) {
      size_t c = ncs_columns_pack(cctx, ncs_chunk_columns_level(level), payload + z, room - z, raw, n);
      if (c && c < z) {
        memmove(payload, payload + z, c);
        z = c;
        flags |= NCS_CHUNK_F_COLUMNS;
      }
    }
  } else if (n <= cols_max &&
             (z = ncs_columns_pack(cctx, ncs_chunk_columns_level(level), payload, room, raw, n)) != 0) {
    flags |= NCS_CHUNK_F_COLUMNS;
  } else { /* rows that do not parse, or no room for the columns: one zstd frame of rows */
    z = ZSTD_compressCCtx(cctx, payload, room, raw, n, level);
    if (ZSTD_isError(z)) return 0;
  }
  if (z > NCS_CHUNK_MAX_PAYLOAD) return 0;
  ncs_chunk_header(out, payload, (uint32_t)z, (uint32_t)n, records, index, dropped_total, flags);
  return NCS_CHUNK_HEADER_SIZE + z;
}

static inline size_t ncs_chunk_pack(ZSTD_CCtx *cctx, int level, uint8_t *out, size_t cap, const void *raw,
                                    size_t n, uint32_t records, uint64_t index, uint64_t dropped_total,
                                    uint32_t flags) {
  return ncs_chunk_pack_upto(cctx, level, out, cap, raw, n, records, index, dropped_total, flags, NCS_CHUNK_COLUMNS_MAX);
}

#endif
