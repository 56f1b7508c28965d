/* rowzip.c — compresses a large chunk of rows on a thread of its own while the writer is still
 * appending records to it, so that the writer spends its share of the CPU draining the rings
 * and the zstd half of the work per record runs beside it (on a loaded machine each runnable
 * thread gets a share: two threads get two).
 *
 * Contract (every function is called by the writer thread only):
 *   - ncs_rowzip_begin(raw, out, cap, level, pieces): opens one zstd frame over raw (the chunk being
 *     built, which has passed NCS_CHUNK_COLUMNS_MAX raw bytes and so is written as rows: chunk.h)
 *     whose bytes go to out[0, cap). 0, or -1 when there is no helper (the writer then
 *     compresses at flush, as without this module). The helper thread and its zstd context are
 *     created at the first begin: a process that never builds a large chunk never has them.
 *   - ncs_rowzip_feed(len): raw[0, len) is final; the helper compresses it in the background
 *     (pieces of at most ZIP_PIECE bytes, woken once ZIP_MIN bytes wait). Never waits.
 *   - ncs_rowzip_end(len): raw[0, len) is the whole chunk: waits for the helper's piece in
 *     progress, if any, then ends the frame on the calling thread and returns its size (the
 *     frame is complete in out), or 0 when it failed (the frame is dropped; the caller
 *     compresses the chunk itself). Every begin is followed by one end before the next begin.
 *   - ncs_rowzip_skip(off, len): raw[off, off + len) is left out of the frame (the writer's
 *     KERNEL records, written as a column chunk of their own: writer.c). Only in a frame begun
 *     with `pieces` (zstd then copies its input into its window as it goes, about 3 ns a call
 *     more on the stub-NCCL paced-4 bench; without, it reads raw in place, as before), declared
 *     before any feed reaches off, in increasing order, at most ZIP_SKIPS per frame: 0, or -1
 *     when not taken (those bytes stay in the frame). The frame is then the bytes of
 *     raw[0, len) outside the skipped ranges, in order.
 *   - Between begin and end, raw[0, len) never changes (the writer only appends) and out is
 *     the helper's. Nothing here touches the rings file, the trace file or the records: what a
 *     kill -9 leaves is exactly what it left without this module.
 *   - ncs_rowzip_stop() ends the helper thread (writer exit); ncs_rowzip_atfork_child() forgets
 *     it (the child has no helper; its context stays in the pages the child inherited).
 * The frame has no content size in its header (it is streamed); readers take the raw size from
 * the chunk header (docs/FORMAT.md). */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_stableInBuffer / stableOutBuffer (libzstd.a is linked in) */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include "internal.h"

#define ZIP_MIN (256u << 10)   /* wake the helper once this much waits */
#define ZIP_PIECE (512u << 10) /* the most the helper takes at once: what end may wait for */
#define ZIP_SKIPS 1024u        /* ranges left out of one frame at most */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t work; /* the helper waits: bytes to compress, or stop */
  pthread_cond_t idle; /* the writer waits: the helper's piece is done */
  pthread_t th;
  int started, failed_start, stop;
  ZSTD_CCtx *cctx;
  const uint8_t *raw; /* the chunk buffer */
  size_t done;      /* raw[0, done) is in the frame or skipped (the helper's while busy) */
  ZSTD_outBuffer out;
  size_t target;    /* raw bytes final so far */
  struct { size_t off, end; } skip[ZIP_SKIPS]; /* appended only, above target: read by the helper unlocked */
  unsigned nskip;   /* ranges declared */
  unsigned si;      /* the first range that may end after `done` (whoever compresses) */
  int pieces;       /* the frame's input is not stable: ranges may be skipped */
  int open;         /* a frame is open and the helper may work on it */
  int busy;         /* the helper is inside zstd (outside the mutex) */
  int bad;          /* zstd failed on this frame */
} Z = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

/* raw[Z.done, upto) but the skipped ranges (the first nskip) into the frame; Z.done = upto.
 * 0, or -1 when zstd failed. */
static int zip_upto(size_t upto, unsigned nskip) {
  size_t a = Z.done;
  if (!Z.pieces) { /* stable input: raw itself, pos where the last call left it */
    ZSTD_inBuffer in = {Z.raw, upto, a};
    if (a < upto && (ZSTD_isError(ZSTD_compressStream2(Z.cctx, &Z.out, &in, ZSTD_e_continue)) || in.pos != upto))
      return -1;
    Z.done = upto;
    return 0;
  }
  while (a < upto) {
    while (Z.si < nskip && Z.skip[Z.si].end <= a) Z.si++;
    size_t e = upto;
    if (Z.si < nskip && Z.skip[Z.si].off <= a) { /* inside a skipped range: past it */
      a = Z.skip[Z.si].end < upto ? Z.skip[Z.si].end : upto;
      continue;
    }
    if (Z.si < nskip && Z.skip[Z.si].off < e) e = Z.skip[Z.si].off;
    ZSTD_inBuffer in = {Z.raw + a, e - a, 0};
    while (in.pos < in.size) { /* all of it, the output having room for the frame's bound */
      size_t was = in.pos;
      if (ZSTD_isError(ZSTD_compressStream2(Z.cctx, &Z.out, &in, ZSTD_e_continue)) || in.pos == was) return -1;
    }
    a = e;
  }
  Z.done = upto;
  return 0;
}

static void *helper_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "ncclscope-zip");
  pthread_mutex_lock(&Z.mu);
  for (;;) {
    while (!Z.stop && !(Z.open && !Z.bad && Z.target - Z.done >= ZIP_MIN)) pthread_cond_wait(&Z.work, &Z.mu);
    if (Z.stop) break;
    size_t upto = Z.target - Z.done > ZIP_PIECE ? Z.done + ZIP_PIECE : Z.target;
    unsigned nskip = Z.nskip;
    Z.busy = 1;
    pthread_mutex_unlock(&Z.mu);
    int bad = zip_upto(upto, nskip);
    pthread_mutex_lock(&Z.mu);
    Z.busy = 0;
    if (bad) Z.bad = 1;
    pthread_cond_broadcast(&Z.idle);
  }
  pthread_mutex_unlock(&Z.mu);
  return NULL;
}

static int start_helper(void) {
  if (Z.started) return 0;
  if (Z.failed_start) return -1;
  Z.cctx = ZSTD_createCCtx();
  /* the output is stable (the chunk buffer's bound); the input is when no range is skipped */
  if (!Z.cctx || ZSTD_isError(ZSTD_CCtx_setParameter(Z.cctx, ZSTD_c_stableOutBuffer, 1)))
    goto fail;
  Z.stop = 0;
  /* the writer runs with every signal blocked: so does the helper it creates */
  if (pthread_create(&Z.th, NULL, helper_main, NULL) != 0) goto fail;
  Z.started = 1;
  return 0;
fail:
  ncs_debug("no compression helper thread: the writer compresses every chunk itself");
  if (Z.cctx) ZSTD_freeCCtx(Z.cctx);
  Z.cctx = NULL;
  Z.failed_start = 1;
  return -1;
}

int ncs_rowzip_begin(const uint8_t *raw, uint8_t *out, size_t cap, int level, int pieces) {
  if (start_helper() != 0) return -1;
  pthread_mutex_lock(&Z.mu);
  while (Z.busy) pthread_cond_wait(&Z.idle, &Z.mu); /* not after an end; kept for safety */
  ZSTD_CCtx_reset(Z.cctx, ZSTD_reset_session_only);
  int rc = ZSTD_isError(ZSTD_CCtx_setParameter(Z.cctx, ZSTD_c_compressionLevel, level)) ||
                   ZSTD_isError(ZSTD_CCtx_setParameter(Z.cctx, ZSTD_c_stableInBuffer, !pieces))
               ? -1
               : 0;
  Z.pieces = pieces;
  Z.raw = raw;
  Z.done = 0;
  Z.out = (ZSTD_outBuffer){out, cap, 0};
  Z.target = 0;
  Z.nskip = Z.si = 0;
  Z.bad = 0;
  Z.open = rc == 0;
  pthread_mutex_unlock(&Z.mu);
  return rc;
}

int ncs_rowzip_skip(size_t off, size_t len) {
  int rc = -1;
  pthread_mutex_lock(&Z.mu);
  if (Z.open && Z.pieces && len && off >= Z.target && Z.nskip < ZIP_SKIPS && (!Z.nskip || off >= Z.skip[Z.nskip - 1].end)) {
    Z.skip[Z.nskip].off = off;
    Z.skip[Z.nskip].end = off + len;
    Z.nskip++;
    rc = 0;
  }
  pthread_mutex_unlock(&Z.mu);
  return rc;
}

void ncs_rowzip_feed(size_t len) {
  pthread_mutex_lock(&Z.mu);
  if (Z.open && len > Z.target) {
    Z.target = len;
    if (!Z.busy && len - Z.done >= ZIP_MIN) pthread_cond_signal(&Z.work);
  }
  pthread_mutex_unlock(&Z.mu);
}

size_t ncs_rowzip_end(size_t len) {
  pthread_mutex_lock(&Z.mu);
  while (Z.busy) pthread_cond_wait(&Z.idle, &Z.mu);
  int ok = Z.open && !Z.bad && len >= Z.done;
  unsigned nskip = Z.nskip;
  Z.open = 0; /* the helper leaves the context alone from now on */
  pthread_mutex_unlock(&Z.mu);
  size_t r = 1;
  if (ok && zip_upto(len, nskip) == 0) {
    ZSTD_inBuffer in = Z.pieces ? (ZSTD_inBuffer){NULL, 0, 0} : (ZSTD_inBuffer){Z.raw, len, len}; /* stable: as last left */
    r = ZSTD_compressStream2(Z.cctx, &Z.out, &in, ZSTD_e_end);
  }
  if (!ok || r != 0) { /* an error, or no room to end it (never with NCS_CHUNK_BOUND) */
    ZSTD_CCtx_reset(Z.cctx, ZSTD_reset_session_only);
    return 0;
  }
  return Z.out.pos;
}

void ncs_rowzip_stop(void) {
  if (!Z.started) return;
  pthread_mutex_lock(&Z.mu);
  Z.stop = 1;
  pthread_cond_broadcast(&Z.work);
  pthread_mutex_unlock(&Z.mu);
  pthread_join(Z.th, NULL);
  ZSTD_freeCCtx(Z.cctx);
  Z.cctx = NULL;
  Z.started = 0;
  Z.open = 0;
}

void ncs_rowzip_atfork_child(void) {
  /* no helper thread here; its context may be mid-frame: left unused, never freed (freeing
   * would only copy the parent's pages) */
  pthread_mutex_init(&Z.mu, NULL);
  pthread_cond_init(&Z.work, NULL);
  pthread_cond_init(&Z.idle, NULL);
  Z.cctx = NULL;
  Z.started = Z.failed_start = Z.stop = 0;
  Z.open = Z.busy = Z.bad = 0;
  Z.target = Z.done = 0;
  Z.nskip = Z.si = 0;
  Z.pieces = 0;
}
