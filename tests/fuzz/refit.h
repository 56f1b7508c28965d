/* refit.h — for the fuzz target and the damage sweep: recompute the checksum of every chunk
 * whose header and payload lie inside a buffer, with the checksum of the file header's format
 * (ncs_chunk_sum), so a damaged payload reaches the decoder past the checksum.
 * Stops at the first header that does not fit or has a damaged magic. */
#ifndef NCS_FUZZ_REFIT_H
#define NCS_FUZZ_REFIT_H

#include <stddef.h>
#include <stdint.h>

#include "ncclscope/format.h"

static void ncs_refit_checksums(uint8_t *buf, size_t n) {
  if (n < NCS_FILE_HEADER_SIZE) return;
  size_t off = ncs_get_u32(buf + NCS_FH_SIZE);
  unsigned major = ncs_get_u16(buf + NCS_FH_MAJOR);
  while (off >= NCS_FILE_HEADER_SIZE && off + NCS_CHUNK_HEADER_SIZE <= n) {
    uint8_t *h = buf + off;
    uint32_t pay = ncs_get_u32(h + NCS_CH_PAYLOAD);
    if (pay > n - off - NCS_CHUNK_HEADER_SIZE || ncs_get_u32(h + NCS_CH_MAGIC) != NCS_CHUNK_MAGIC) return;
    ncs_put_u32(h + NCS_CH_CHECKSUM, ncs_chunk_sum(major, h, h + NCS_CHUNK_HEADER_SIZE, pay));
    off += NCS_CHUNK_HEADER_SIZE + pay;
  }
}

#endif
