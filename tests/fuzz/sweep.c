/* sweep.c — every small damage of real traces through the trace reader, in one process: the
 * deterministic companion of the libFuzzer run (scripts/fuzz.sh), for the audit loops of
 * docs/RELIABILITY.md ("The decoder under hostile input").
 *
 * Usage: sweep [-s STRIDE] FILE...   (build: see docs/RELIABILITY.md; with ASan + UBSan)
 * For each trace FILE (read whole), through ncs_trace_read on an in-memory file (memfd):
 *   cut      the file cut at every STRIDE-th length (default 1): never "damaged" — a cut file
 *            is read as cut (rc 0, truncated, when past the file header; rc 2 inside it), or
 *            as complete when it ends at a chunk boundary after every communicator ended;
 *   flip     every STRIDE-th byte xor 0x5a, then set to 0xff, with each chunk's checksum recomputed
 *            (ncs_chunk_header: whatever the current checksum is) so the damage reaches the
 *            payload decoders; and once more with the checksums left as they are;
 *   concat   the file twice in a row, and the file followed by its first half.
 * All reads share one set of reader buffers (as a decoding thread of the loader does), and after
 * each one the intact file is read again on them: it must deliver exactly the records (every
 * field of every CALL and GPU_TIME, every byte of the others) a read with fresh buffers did.
 * Reads alternate between taking CALL / GPU_TIME one record at a time and a run at a time (the
 * visitor's calls / gpu_times); each intact reread takes the other way, and no run may be empty.
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
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "io/trace.h"
#include "refit.h"

/* every field of every CALL and GPU_TIME delivered, and every byte of other records, hashed
 * in order: two reads of one file agree exactly when they delivered the same records */
static uint64_t hash;
static void mix(uint64_t x) { hash = (hash ^ x) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull; }
#define HASH_FIELD_(K, f, a) mix((uint64_t)k->f);
static int on_call(void *c, const struct ncs_call *k) { mix(5); NCS_FIELDS_call(HASH_FIELD_) return 0; }
static int on_gpu(void *c, const struct ncs_gpu_time *k) { mix(10); NCS_FIELDS_gpu_time(HASH_FIELD_) return 0; }
/* the same records taken a run at a time (the visitor's calls / gpu_times, as report's
 * analyses take them): every other read goes this way, so damage meets both delivery paths and
 * the intact file's hash must not depend on which one delivered it */
static int use_runs;
static long empty_runs;
static int on_calls(void *c, const struct ncs_call *x, size_t n) {
  if (!n) empty_runs++;
  for (size_t i = 0; i < n; i++) on_call(c, &x[i]);
  return 0;
}
static int on_gpus(void *c, const struct ncs_gpu_time *x, size_t n) {
  if (!n) empty_runs++;
  for (size_t i = 0; i < n; i++) on_gpu(c, &x[i]);
  return 0;
}
static int on_raw(void *c, const struct ncs_raw *r) {
  mix(r->type);
  for (size_t i = 0; i < r->len; i++) mix(r->body[i]);
  struct ncs_rbuf rb;
  struct ncs_profile_id pid;
  struct ncs_profile p;
  if (r->type == NCS_REC_PROFILE_ID && ncs_dec_profile_id(ncs_rbuf_on(&rb, r->body, r->len), &pid) == 0 &&
      ncs_profile_from_id(&pid, &p) == 0) /* as the profile analysis rebuilds it */
    for (const char *s = p.func; *s; s++) mix((uint8_t)*s);
  return 0;
}

/* One set of reader buffers for every read (as a decoding thread of the loader keeps its set
 * over many files, decoder/model/jobload.c): what a damaged read leaves in it must not change
 * the next file's records. */
static struct ncs_trace_bufs *bufs;
static int read_fd(const char *path, struct ncs_read_status *st) {
  struct ncs_visitor v;
  memset(&v, 0, sizeof v);
  v.call = on_call;
  v.gpu_time = on_gpu;
  v.raw = on_raw;
  if (use_runs) { v.calls = on_calls; v.gpu_times = on_gpus; }
  memset(st, 0, sizeof *st);
  struct ncs_trace *t;
  int rc = ncs_trace_open(path, &v, st, &t);
  if (rc) return rc;
  while (ncs_trace_next(t, bufs)) {}
  return ncs_trace_close(t);
}
static int memfile(const uint8_t *buf, size_t n, char path[64]) {
  int fd = memfd_create("sweep", MFD_CLOEXEC);
  if (fd < 0) { perror("memfd_create"); exit(2); }
  for (size_t o = 0; o < n;) {
    ssize_t w = write(fd, buf + o, n - o);
    if (w <= 0) { perror("write"); exit(2); }
    o += (size_t)w;
  }
  snprintf(path, 64, "/proc/self/fd/%d", fd);
  return fd;
}
/* the intact file and what a read with fresh buffers delivered from it */
static const uint8_t *intact;
static size_t intact_n;
static uint64_t intact_hash;
static long stale;

static long reads, outcome[3], cut_reads;

/* Reads buf[0, n) as a file; 0 when the outcome keeps the reader's contract, else 1 (printed). */
static int judge(const char *what, size_t where, const uint8_t *buf, size_t n, int expect_cut) {
  char path[64];
  int fd = memfile(buf, n, path);
  struct ncs_read_status st;
  use_runs = (int)(reads & 1);
  int rc = read_fd(path, &st);
  close(fd);
  reads++;
  if (empty_runs) {
    printf("BREACH: %s at %zu: a run of 0 records delivered\n", what, where);
    empty_runs = 0;
    return 1;
  }
  if (intact) { /* then the intact file on the same buffers, by the other delivery path */
    use_runs = !use_runs;
    char p2[64];
    struct ncs_read_status st2;
    int fd2 = memfile(intact, intact_n, p2);
    hash = 0;
    read_fd(p2, &st2);
    close(fd2);
    if (hash != intact_hash) {
      stale++;
      printf("BREACH: %s at %zu: the intact file read next on the same buffers delivered other records\n", what, where);
      return 1;
    }
  }
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

int main(int argc, char **argv) {
  size_t stride = 1;
  int a = 1, breaches = 0;
  if (a + 1 < argc && strcmp(argv[a], "-s") == 0) { stride = strtoul(argv[a + 1], NULL, 10); a += 2; }
  if (!stride) stride = 1;
  if (!(bufs = ncs_trace_bufs_new())) return 2;
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
    struct ncs_read_status st0;
    hash = 0;
    if (ncs_trace_read(argv[a], &(struct ncs_visitor){.call = on_call, .gpu_time = on_gpu, .raw = on_raw}, &st0) != 0) {
      fprintf(stderr, "%s: not a whole trace: %s\n", argv[a], st0.error);
      return 2;
    }
    intact = orig;
    intact_n = n;
    intact_hash = hash;
    int whole_ok = judge("whole", 0, orig, n, 0) == 0;
    for (size_t len = 0; len < n && breaches < 20; len += stride) breaches += judge("cut", len, orig, len, 1);
    for (size_t i = 0; i < n && breaches < 20; i += stride) {
      static const int how[3] = {0x5a, 0xff, -1};
      for (int k = 0; k < 3; k++) {
        memcpy(b, orig, n);
        if (how[k] == 0xff) b[i] = 0xff;
        else b[i] ^= 0x5a;
        if (how[k] != -1) ncs_refit_checksums(b, n);
        breaches += judge(how[k] == -1 ? "flip (checksums as they are)" : how[k] == 0xff ? "0xff (checksums refit)" : "flip (checksums refit)", i, b, n, 0);
      }
    }
    memcpy(b, orig, n); memcpy(b + n, orig, n);
    breaches += judge("concat twice", n, b, 2 * n, 0);
    memcpy(b + n, orig, n / 2);
    breaches += judge("concat with its first half", n, b, n + n / 2, 0);
    printf("sweep %s: %zu bytes, whole read %s, %ld reads: %ld rc 0 (%ld of them cut), %ld rc 1, %ld rc 2\n", argv[a], n,
           whole_ok ? "ok" : "NOT ok", reads - r0, outcome[0] - o0[0], cut_reads - c0, outcome[1] - o0[1], outcome[2] - o0[2]);
    intact = NULL;
    free(orig);
    free(b);
  }
  ncs_trace_bufs_free(bufs);
  printf("sweep: %ld reads, %d breaches\n", reads, breaches);
  return breaches ? 1 : 0;
}
