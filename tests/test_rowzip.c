/* test_rowzip.c — the shim's compression helper (shim/rowzip.c, compiled in here): a frame
 * begun over a buffer that keeps growing while the helper compresses it, fed in steps and ended,
 * decompresses to exactly the bytes of the buffer; the same after an end without any feed, over
 * several chunks in a row, after stop (a new helper), and in a forked child (atfork). Whatever
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
static int one_chunk(uint8_t *raw, size_t n, size_t step, uint8_t *out, size_t cap, unsigned seed) {
  memset(raw, 0, n);
  if (ncs_rowzip_begin(raw, out, cap, 3) != 0) return 0;
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

int main(void) {
  size_t n = 5u << 20, cap = ZSTD_compressBound(n);
  uint8_t *raw = malloc(n), *out = malloc(cap);
  if (!raw || !out) return 1;
  CHECK(one_chunk(raw, n, 20000, out, cap, 1), "rowzip: a 5 MiB chunk fed in 20 KB steps decompresses to its bytes");
  CHECK(one_chunk(raw, n, 0, out, cap, 2), "rowzip: a chunk ended without any feed (the writer compresses it all)");
  int all = 1;
  for (unsigned i = 0; i < 8; i++) all &= one_chunk(raw, (1u << 20) + i * 300000u + i, 4096 + i * 70000u, out, cap, 3 + i);
  CHECK(all, "rowzip: 8 chunks in a row, sizes and steps varied, each decompresses to its bytes");
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
