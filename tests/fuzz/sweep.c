/* sweep.c — every small damage of real traces through the trace reader, in one process: the
 * deterministic companion of the libFuzzer run (scripts/fuzz.sh), for the audit loops of
 * docs/RELIABILITY.md ("The decoder under hostile input").
 *
 * Usage: sweep [-s STRIDE] FILE...   (build: see docs/RELIABILITY.md; with ASan + UBSan)
 * For each trace FILE (read whole), through ncs_trace_read on an in-memory file (memfd):
 *   cut      the file cut at every STRIDE-th length (default 1): never "damaged" — a cut file
 *            is read as cut (rc 0, truncated, when past the file header; rc 2 inside it), or
 *            as complete when it ends at a chunk boundary after every communicator ended;
 *   flip     every byte xor 0x5a, then set to 0xff, with each chunk's checksum recomputed
 *            (ncs_chunk_header: whatever the current checksum is) so the damage reaches the
 *            payload decoders; and once more with the checksums left as they are;
 *   concat   the file twice in a row, and the file followed by its first half.
 * Every read must return 0, 1 or 2; every damaged (1) or unreadable (2) read, and every cut
 * one, must say why in a message that starts with the file's name, and (1, cut) carries
 * "offset N". Prints per file the reads and their outcomes; exit 1 on the first breach (with
 * the damage that caused it), 0 otherwise. A crash or sanitizer report ends the process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ncclscope/chunk.h"
#include "ncclscope/format.h"
#include "io/trace.h"

static volatile uint64_t sink;
static int on_call(void *c, const struct ncs_call *k) { sink += k->op + k->count + k->t_enter; return 0; }
static int on_gpu(void *c, const struct ncs_gpu_time *g) { sink += g->gpu_end; return 0; }
static int on_raw(void *c, const struct ncs_raw *r) {
  for (size_t i = 0; i < r->len; i++) sink += r->body[i];
  return 0;
}

static long reads, outcome[3], cut_reads;

/* Reads buf[0, n) as a file; 0 when the outcome keeps the reader's contract, else 1 (printed). */
static int judge(const char *what, size_t where, const uint8_t *buf, size_t n, int expect_cut) {
  int fd = memfd_create("sweep", MFD_CLOEXEC);
  if (fd < 0) { perror("memfd_create"); exit(2); }
  for (size_t o = 0; o < n;) {
    ssize_t w = write(fd, buf + o, n - o);
    if (w <= 0) { perror("write"); exit(2); }
    o += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  struct ncs_visitor v;
  memset(&v, 0, sizeof v);
  v.call = on_call;
  v.gpu_time = on_gpu;
  v.raw = on_raw;
  struct ncs_read_status st;
  memset(&st, 0, sizeof st);
  int rc = ncs_trace_read(path, &v, &st);
  close(fd);
  reads++;
  const char *bad = NULL;
  if (rc < 0 || rc > 2) bad = "return value outside 0..2";
  else {
    outcome[rc]++;
    int said = memchr(st.error, 0, sizeof st.error) && strncmp(st.error, path, strlen(path)) == 0;
    if (rc != 0 && !said) bad = "no message starting with the file's name";
    else if ((rc == 1 || (rc == 0 && st.truncated)) && !(said && strstr(st.error, "offset ")))
      bad = "message without an offset";
    else if (expect_cut && rc == 1) bad = "a cut file read as damaged";
    else if (expect_cut && rc == 0 && !st.truncated && !st.comms_closed) bad = "a cut file read as complete";
    if (rc == 0 && st.truncated) cut_reads++;
  }
  if (!bad) return 0;
  printf("BREACH: %s at %zu (%zu bytes): rc %d truncated %d: %s: [%.*s]\n", what, where, n, rc,
         st.truncated, bad, (int)sizeof st.error, st.error);
  return 1;
}

/* Recomputes every chunk header's checksum whose chunk lies inside buf. */
static void refit(uint8_t *buf, size_t n) {
  if (n < NCS_FILE_HEADER_SIZE) return;
  size_t off = ncs_get_u32(buf + NCS_FH_SIZE);
  while (off >= NCS_FILE_HEADER_SIZE && off + NCS_CHUNK_HEADER_SIZE <= n) {
    uint8_t *h = buf + off;
    uint32_t pay = ncs_get_u32(h + NCS_CH_PAYLOAD);
    if (pay > n - off - NCS_CHUNK_HEADER_SIZE || ncs_get_u32(h + NCS_CH_MAGIC) != NCS_CHUNK_MAGIC) return;
    ncs_chunk_header(h, h + NCS_CHUNK_HEADER_SIZE, pay, ncs_get_u32(h + NCS_CH_RAW), ncs_get_u32(h + NCS_CH_RECORDS),
                     ncs_get_u64(h + NCS_CH_INDEX), ncs_get_u64(h + NCS_CH_DROPPED), ncs_get_u32(h + NCS_CH_FLAGS));
    off += NCS_CHUNK_HEADER_SIZE + pay;
  }
}

int main(int argc, char **argv) {
  size_t stride = 1;
  int a = 1, breaches = 0;
  if (a + 1 < argc && strcmp(argv[a], "-s") == 0) { stride = strtoul(argv[a + 1], NULL, 10); a += 2; }
  if (!stride) stride = 1;
  for (; a < argc; a++) {
    FILE *f = fopen(argv[a], "rb");
    if (!f) { perror(argv[a]); return 2; }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    rewind(f);
    uint8_t *orig = malloc(2 * n + 1), *b = malloc(2 * n + 1);
    if (!orig || !b || fread(orig, 1, n, f) != n) { fprintf(stderr, "%s: read failed\n", argv[a]); return 2; }
    fclose(f);
    long r0 = reads, o0[3] = {outcome[0], outcome[1], outcome[2]}, c0 = cut_reads;
    int whole_ok = judge("whole", 0, orig, n, 0) == 0;
    for (size_t len = 0; len < n && breaches < 20; len += stride) breaches += judge("cut", len, orig, len, 1);
    for (size_t i = 0; i < n && breaches < 20; i++) {
      static const int how[3] = {0x5a, 0xff, -1};
      for (int k = 0; k < 3; k++) {
        memcpy(b, orig, n);
        if (how[k] == 0xff) b[i] = 0xff;
        else b[i] ^= 0x5a;
        if (how[k] != -1) refit(b, n);
        breaches += judge(how[k] == -1 ? "flip (checksums as they are)" : how[k] == 0xff ? "0xff (checksums refit)" : "flip (checksums refit)", i, b, n, 0);
      }
    }
    memcpy(b, orig, n); memcpy(b + n, orig, n);
    breaches += judge("concat twice", n, b, 2 * n, 0);
    memcpy(b + n, orig, n / 2);
    breaches += judge("concat with its first half", n, b, n + n / 2, 0);
    printf("sweep %s: %zu bytes, whole read %s, %ld reads: %ld rc 0 (%ld of them cut), %ld rc 1, %ld rc 2\n", argv[a], n,
           whole_ok ? "ok" : "NOT ok", reads - r0, outcome[0] - o0[0], cut_reads - c0, outcome[1] - o0[1], outcome[2] - o0[2]);
    free(orig);
    free(b);
  }
  printf("sweep: %ld reads, %d breaches\n", reads, breaches);
  return breaches ? 1 : 0;
}
