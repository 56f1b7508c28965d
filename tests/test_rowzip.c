/* test_rowzip.c — the shim's compression helper (shim/rowzip.c, compiled in here): a frame
 * begun over a buffer that keeps growing while the helper compresses it, fed in steps and ended,
 * decompresses to exactly the bytes of the buffer; the same after an end without any feed, over
 * several chunks in a row, after stop (a new helper), and in a forked child (atfork); with
 * ranges left out (ncs_rowzip_skip: the writer's KERNEL records), the bytes outside them, in
 * order, and a range the helper may already have taken is refused. Whatever
 * part the helper did before the end (a race), the frame must be the same bytes' frame: only
 * the outcome is checked, never who compressed what. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../shim/rowzip.c"
#include "check.h"

void ncs_debug(const char *fmt, ...) { (void)fmt; }

/* Fills raw with record-like rows: a constant part and a few changing bytes, as CALL rows are. */
static void fill_rows(uint8_t *raw, size_t n, unsigned seed) {
  uint64_t t = seed;
  for (size_t i = 0; i < n; i++) {
    if (i % 19 == 0) t += 80 + (t * 2654435761u >> 7) % 60;
    raw[i] = (i % 19 < 3) ? (uint8_t)(t >> (8 * (i % 19))) : (uint8_t)(i % 19 + seed);
  }
}

/* One chunk of n bytes fed in steps of `step` (0: no feed), then ended; 1 when the frame
 * decompresses to exactly raw[0, n). */
static int pieces; /* one_chunk's frames: begun in pieces (the input copied as it goes), else read in place */
static int one_chunk(uint8_t *raw, size_t n, size_t step, uint8_t *out, size_t cap, unsigned seed) {
  memset(raw, 0, n);
  if (ncs_rowzip_begin(raw, out, cap, 3, pieces) != 0) return 0;
  size_t have = 0;
  while (have < n) { /* the writer appends, then says the bytes are final */
    size_t k = step && n - have > step ? step : n - have;
    fill_rows(raw + have, k, seed + (unsigned)have);
    have += k;
    if (step) ncs_rowzip_feed(have);
  }
  size_t z = ncs_rowzip_end(n);
  if (!z) return 0;
  uint8_t *back = malloc(n + 1);
  size_t got = back ? ZSTD_decompress(back, n + 1, out, z) : 0;
  int ok = back && !ZSTD_isError(got) && got == n && memcmp(back, raw, n) == 0;
  free(back);
  return ok;
}

/* One chunk of n bytes fed in steps of `step`, with `nskip` ranges left out, declared as the
 * writer does (each before the feed that reaches it; some adjacent, one at the start, one at the
 * end, some over a piece's boundary); 1 when the frame decompresses to exactly the bytes outside
 * them, in order, and every range was taken. */
static int skip_chunk(uint8_t *raw, size_t n, size_t step, uint8_t *out, size_t cap, unsigned seed, unsigned nskip) {
  size_t off[64], len[64];
  if (nskip > 64) return 0;
  uint64_t x = seed;
  size_t at = 0;
  for (unsigned i = 0; i < nskip; i++) { /* increasing, non-overlapping, within [0, n) */
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    size_t gap = i == 0 ? 0 : (x >> 33) % 3 == 0 ? 0 : (size_t)(x >> 20) % (n / nskip / 2);
    size_t l = 1 + (size_t)(x >> 40) % (n / nskip / 2);
    if (i == nskip - 1) { gap = at < n ? (n - at) / 2 : 0; l = n - at - gap; } /* the last one ends the chunk */
    off[i] = at + gap;
    len[i] = l;
    at = off[i] + l;
  }
  if (at > n) return 0;
  memset(raw, 0, n);
  if (ncs_rowzip_begin(raw, out, cap, 3, 1) != 0) return 0;
  size_t have = 0;
  unsigned next = 0, taken = 0;
  while (have < n) {
    size_t k = n - have > step ? step : n - have;
    fill_rows(raw + have, k, seed + (unsigned)have);
    for (; next < nskip && off[next] < have + k; next++) taken += ncs_rowzip_skip(off[next], len[next]) == 0;
    have += k;
    ncs_rowzip_feed(have);
  }
  size_t z = ncs_rowzip_end(n);
  if (!z || taken != nskip) return 0;
  uint8_t *want = malloc(n), *back = malloc(n + 1);
  size_t w = 0, from = 0;
  for (unsigned i = 0; want && i < nskip; i++) {
    memcpy(want + w, raw + from, off[i] - from);
    w += off[i] - from;
    from = off[i] + len[i];
  }
  if (want) { memcpy(want + w, raw + from, n - from); w += n - from; }
  size_t got = back ? ZSTD_decompress(back, n + 1, out, z) : 0;
  int ok = want && back && !ZSTD_isError(got) && got == w && memcmp(back, want, w) == 0;
  free(want);
  free(back);
  return ok;
}

int main(void) {
  size_t n = 5u << 20, cap = ZSTD_compressBound(n);
  uint8_t *raw = malloc(n), *out = malloc(cap);
  if (!raw || !out) return 1;
  for (pieces = 0; pieces < 2; pieces++) {
    const char *how = pieces ? "in pieces" : "in place";
    CHECK(one_chunk(raw, n, 20000, out, cap, 1), "rowzip (%s): a 5 MiB chunk fed in 20 KB steps decompresses to its bytes", how);
    CHECK(one_chunk(raw, n, 0, out, cap, 2), "rowzip (%s): a chunk ended without any feed (the writer compresses it all)", how);
    int all = 1;
    for (unsigned i = 0; i < 8; i++) all &= one_chunk(raw, (1u << 20) + i * 300000u + i, 4096 + i * 70000u, out, cap, 3 + i);
    CHECK(all, "rowzip (%s): 8 chunks in a row, sizes and steps varied, each decompresses to its bytes", how);
  }
  pieces = 0;
  /* a frame read in place leaves nothing out */
  int kept = ncs_rowzip_begin(raw, out, cap, 3, 0) == 0 && ncs_rowzip_skip(1000, 500) != 0;
  ncs_rowzip_feed(1u << 20);
  size_t z0 = ncs_rowzip_end(1u << 20);
  uint8_t *back0 = malloc((1u << 20) + 1);
  size_t got0 = back0 && z0 ? ZSTD_decompress(back0, (1u << 20) + 1, out, z0) : 0;
  kept &= back0 && z0 && !ZSTD_isError(got0) && got0 == (1u << 20) && memcmp(back0, raw, 1u << 20) == 0;
  free(back0);
  CHECK(kept, "rowzip: a frame read in place refuses a range and keeps every byte");
  int skips = 1;
  for (unsigned i = 0; i < 6; i++)
    skips &= skip_chunk(raw, (2u << 20) + i * 123457u, 30000u + i * 90000u, out, cap, 50 + i, 1 + i * 12);
  CHECK(skips, "rowzip: 6 chunks with 1 to 61 ranges left out: each frame is exactly the bytes outside them");
  /* refused: a range the feed has reached, one before the last, an empty one; the frame keeps them */
  memset(raw, 0, 4u << 20);
  fill_rows(raw, 4u << 20, 60);
  int refused = ncs_rowzip_begin(raw, out, cap, 3, 1) == 0 && ncs_rowzip_skip(1000, 500) == 0;
  ncs_rowzip_feed(2u << 20);
  refused &= ncs_rowzip_skip((2u << 20) - 10, 100) != 0 && ncs_rowzip_skip(3u << 20, 0) != 0 &&
             ncs_rowzip_skip(3u << 20, 100) == 0 && ncs_rowzip_skip((3u << 20) + 50, 10) != 0;
  size_t z4 = ncs_rowzip_end(4u << 20);
  uint8_t *back4 = malloc((4u << 20) + 1);
  size_t got4 = back4 && z4 ? ZSTD_decompress(back4, (4u << 20) + 1, out, z4) : 0;
  refused &= back4 && z4 && !ZSTD_isError(got4) && got4 == (4u << 20) - 600 && memcmp(back4, raw, 1000) == 0 &&
             memcmp(back4 + 1000, raw + 1500, (3u << 20) - 1500) == 0 &&
             memcmp(back4 + (3u << 20) - 500, raw + (3u << 20) + 100, (1u << 20) - 100) == 0;
  free(back4);
  CHECK(refused, "rowzip: a range the feed reached, out of order or empty is refused and stays in the frame");
  ncs_rowzip_stop();
  CHECK(one_chunk(raw, 3u << 20, 65536, out, cap, 20), "rowzip: after stop, the next begin starts a new helper");
  const char *san = getenv("NCS_SANITIZER");
  if (san && !strcmp(san, "tsan")) { /* docs/RELIABILITY.md "Sanitizers" */
    printf("SKIP: rowzip: in a forked child: TSan cannot run a forked child of a threaded process that starts threads\n");
    ncs_rowzip_stop();
    free(raw);
    free(out);
    return check_done();
  }
  pid_t pid = fork();
  if (pid == 0) { /* the child has no helper thread: atfork forgets it, and a new one serves */
    ncs_rowzip_atfork_child();
    _exit(one_chunk(raw, 2u << 20, 30000, out, cap, 30) ? 0 : 1);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "rowzip: in a forked child (atfork_child, then a chunk) the frame decompresses to its bytes");
  CHECK(one_chunk(raw, 2u << 20, 100000, out, cap, 40), "rowzip: the parent's helper still serves after the fork");
  ncs_rowzip_stop();
  free(raw);
  free(out);
  return check_done();
}
