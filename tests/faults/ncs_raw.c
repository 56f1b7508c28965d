/* ncs_raw.c — writes the decompressed payload of every chunk of a trace to stdout (the raw
 * record bytes; a column payload is turned back into its rows), so a test can grep what the
 * shim really stored, not what the decoder shows.
 * Stops quietly at the first chunk that is cut or does not decompress. Exit 0, 2 on usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "ncclscope/columns.h"
#include "ncclscope/format.h"

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: ncs_raw FILE\n"); return 2; }
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 2; }
  uint8_t fh[NCS_FILE_HEADER_SIZE], h[NCS_CHUNK_HEADER_SIZE];
  if (fread(fh, 1, sizeof fh, f) != sizeof fh) return 0;
  if (fseek(f, (long)ncs_get_u32(fh + NCS_FH_SIZE), SEEK_SET)) return 0;
  while (fread(h, 1, sizeof h, f) == sizeof h) {
    uint32_t pay = ncs_get_u32(h + NCS_CH_PAYLOAD), raw = ncs_get_u32(h + NCS_CH_RAW);
    if (pay > NCS_CHUNK_MAX_PAYLOAD || raw > NCS_CHUNK_MAX_RAW) break;
    uint8_t *z = malloc(pay ? pay : 1), *r = malloc(raw ? raw : 1);
    if (!z || !r || fread(z, 1, pay, f) != pay) { free(z); free(r); break; }
    size_t n;
    if (ncs_get_u32(h + NCS_CH_FLAGS) & NCS_CHUNK_F_COLUMNS) {
      size_t need = 0, where = 0;
      const char *why;
      ZSTD_DCtx *dc = ZSTD_createDCtx();
      int rc = ncs_columns_unpack(dc, z, pay, r, raw, NULL, 0, &need, &why, &where);
      uint8_t *sc = rc == -2 ? malloc(need) : NULL;
      if (sc) rc = ncs_columns_unpack(dc, z, pay, r, raw, sc, need, &need, &why, &where);
      n = rc == 0 ? raw : (size_t)-1; /* an error code to ZSTD_isError */
      free(sc);
      ZSTD_freeDCtx(dc);
    } else {
      n = ZSTD_decompress(r, raw, z, pay);
    }
    if (!ZSTD_isError(n)) fwrite(r, 1, n, stdout);
    free(z); free(r);
    if (ZSTD_isError(n)) break;
  }
  fclose(f);
  return 0;
}
