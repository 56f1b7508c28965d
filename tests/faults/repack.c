/* repack.c — rewrites a trace's chunks with this tree's chunk writer (include/ncclscope/chunk.h,
 * the shim's zstd level 3): the same records, this tree's coding (a PROFILE whose names are
 * listed becomes the PROFILE_ID this tree's shim writes for it, format 3.1; the record count
 * stays). scripts/bench-trace-size.sh
 * uses it to size another shim's records in this layout, free of the run-to-run jitter that
 * two runs' timestamps carry. Stops at the first chunk it cannot read (a cut or damaged
 * trace). Exit 0, 1 on a chunk it cannot rebuild or write, 2 on usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "ncclscope/chunk.h"
#include "ncclscope/encode.h"

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: repack IN OUT\n"); return 2; }
  FILE *f = fopen(argv[1], "rb"), *o = fopen(argv[2], "wb");
  if (!f || !o) { perror(f ? argv[2] : argv[1]); return 2; }
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  uint8_t fh[NCS_FILE_HEADER_SIZE], h[NCS_CHUNK_HEADER_SIZE];
  int rc = 0;
  if (fread(fh, 1, sizeof fh, f) != sizeof fh || fseek(f, (long)ncs_get_u32(fh + NCS_FH_SIZE), SEEK_SET)) return 0;
  ncs_put_u16(fh + NCS_FH_MAJOR, NCS_FORMAT_MAJOR);
  ncs_put_u16(fh + NCS_FH_MINOR, NCS_FORMAT_MINOR);
  ncs_put_u32(fh + NCS_FH_SIZE, NCS_FILE_HEADER_SIZE);
  if (fwrite(fh, 1, sizeof fh, o) != sizeof fh) rc = 1;
  while (!rc && fread(h, 1, sizeof h, f) == sizeof h) {
    uint32_t pay = ncs_get_u32(h + NCS_CH_PAYLOAD), raw = ncs_get_u32(h + NCS_CH_RAW);
    uint32_t flags = ncs_get_u32(h + NCS_CH_FLAGS);
    if (pay > NCS_CHUNK_MAX_PAYLOAD || raw > NCS_CHUNK_MAX_RAW) break;
    uint8_t *z = malloc(pay + 1), *r = malloc(raw + 1), *sc = NULL, *c = NULL;
    size_t n = 0, need = 0, where = 0, cap = NCS_CHUNK_BOUND(raw);
    const char *why = "";
    if (!z || !r || fread(z, 1, pay, f) != pay) { free(z); free(r); break; }
    if (flags & NCS_CHUNK_F_COLUMNS) {
      int k = ncs_columns_unpack(dc, z, pay, r, raw, NULL, 0, &need, &why, &where);
      if (k == -2 && (sc = malloc(need))) k = ncs_columns_unpack(dc, z, pay, r, raw, sc, need, &need, &why, &where);
      n = k == 0 ? raw : 0;
    } else {
      n = ZSTD_decompressDCtx(dc, r, raw, z, pay);
      if (ZSTD_isError(n)) n = 0;
    }
    uint8_t *r2 = n == raw ? malloc(raw + 1) : NULL;
    if (r2) { /* PROFILE records as this tree's shim writes them (a PROFILE_ID is never longer) */
      const uint8_t *p = r, *e = r + raw, *body;
      uint64_t type, len;
      size_t m = 0;
      while (p < e && ncs_col_record(&p, e, &type, &body, &len) == 0) {
        struct ncs_profile pr;
        struct ncs_profile_id pi;
        struct ncs_rbuf rb;
        uint8_t rec[256];
        struct ncs_wbuf w;
        ncs_wbuf_init(&w, rec, sizeof rec);
        if (type == NCS_REC_PROFILE && ncs_dec_profile(ncs_rbuf_on(&rb, body, len), &pr) == 0 && pr.func[0] &&
            ncs_profile_to_id(&pr, &pi) == 0)
          ncs_enc_profile_id(&w, &pi);
        if (w.len && !w.overflow && w.len <= (size_t)(p - body) + 2) {
          memcpy(r2 + m, rec, w.len);
          m += w.len;
          continue;
        }
        m += ncs_put_varint(r2 + m, type);
        m += ncs_put_varint(r2 + m, len);
        memcpy(r2 + m, body, len);
        m += len;
      }
      free(r);
      r = r2;
      raw = (uint32_t)m;
      n = raw;
    }
    if (n == raw && (c = malloc(cap))) {
      size_t w = ncs_chunk_pack(cc, 3, c, cap, r, raw, ncs_get_u32(h + NCS_CH_RECORDS), ncs_get_u64(h + NCS_CH_INDEX),
                                ncs_get_u64(h + NCS_CH_DROPPED), flags & ~(uint32_t)NCS_CHUNK_F_COLUMNS);
      if (!w || fwrite(c, 1, w, o) != w) rc = 1;
    } else if (raw) {
      fprintf(stderr, "repack: %s: a chunk does not rebuild (%s)\n", argv[1], why);
      rc = 1;
    }
    free(z); free(r); free(sc); free(c);
  }
  ZSTD_freeDCtx(dc);
  ZSTD_freeCCtx(cc);
  if (fclose(o)) rc = 1;
  fclose(f);
  return rc;
}
