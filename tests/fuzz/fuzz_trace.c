/* fuzz_trace.c — libFuzzer entry point for the trace reader (decoder/io/trace.h).
 *
 * Contract: feeds one input to ncs_trace_read() as a file (an in-memory memfd, no disk I/O)
 * with every visitor callback set; callbacks read every byte of every string and frame they
 * are handed, so a pointer past the reader's buffers shows up under ASan. Checks the reader's
 * own contract: a return of 0, 1 or 2, and a non-empty error naming the file whenever it
 * reports damage. The first input byte picks how the rest is used, so the fuzzer gets past the
 * checksums and the compression to the record parsers:
 *   0x00..0x7f  the rest is a whole file; chunk checksums are recomputed first (so mutations
 *               of headers and payloads are not all stopped by the checksum);
 *   0x80..0xbf  the rest is a whole file, read as it is;
 *   0xc0..0xff  the rest is the decompressed payload of one chunk: a valid file header and a
 *               FINAL chunk (zstd level 1, right sizes and checksum) are built around it.
 * Built with clang -fsanitize=fuzzer,address (scripts/fuzz.sh) or with plain
 * cc and tests/fuzz/replay.c (the regression replay in make test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zstd.h>

#include "ncclscope/format.h"
#include "io/trace.h"

static volatile unsigned sink;
static void touch(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) sink += c[i];
}
static void touch_str(const char *s) { if (s) touch(s, strlen(s) + 1); }

static int on_process(void *c, const struct ncs_process *p) {
  touch_str(p->path);
  for (size_t i = 0; i < p->nkv; i++) { touch_str(p->kv[i].key); touch(p->kv[i].value, p->kv[i].value_len); }
  touch_str(ncs_process_get(p, "host"));
  return 0;
}
static int on_thread(void *c, const struct ncs_thread *t) { touch_str(t->name); return 0; }
static int on_comm(void *c, const struct ncs_comm *m) { sink += (unsigned)m->rank; return 0; }
static int on_comm_end(void *c, const struct ncs_comm_end *e) { sink += e->op; return 0; }
static int on_call(void *c, const struct ncs_call *k) { sink += k->op + (unsigned)k->count; return 0; }
static int on_callsite(void *c, const struct ncs_callsite *s) {
  for (uint32_t i = 0; i < s->nframes; i++) { touch_str(s->frames[i].symbol); sink += (unsigned)s->frames[i].offset; }
  return 0;
}
static int on_module(void *c, const struct ncs_module *m) { touch_str(m->path); return 0; }
static int on_drop(void *c, const struct ncs_drop *d) { sink += (unsigned)d->records; return 0; }
static int on_clock(void *c, const struct ncs_clock *k) { sink += (unsigned)k->uncertainty_ns; return 0; }
static int on_gpu(void *c, const struct ncs_gpu_time *g) { sink += (unsigned)g->gpu_end; return 0; }
static int on_log(void *c, const struct ncs_log_line *l) { touch(l->line, l->len); return 0; }
static int on_raw(void *c, const struct ncs_raw *r) { touch(r->body, r->len); return 0; }
static int on_chunk(void *c, uint64_t i, uint64_t d, uint32_t f, uint64_t o) { sink += (unsigned)i; return 0; }

/* Recomputes the checksum of every chunk whose header and payload lie inside buf. */
static void fix_checksums(uint8_t *buf, size_t n) {
  if (n < NCS_FILE_HEADER_SIZE) return;
  size_t off = ncs_get_u32(buf + NCS_FH_SIZE);
  while (off >= NCS_FILE_HEADER_SIZE && off + NCS_CHUNK_HEADER_SIZE <= n) {
    uint8_t *h = buf + off;
    size_t pay = ncs_get_u32(h + NCS_CH_PAYLOAD);
    if (pay > n - off - NCS_CHUNK_HEADER_SIZE) return;
    uint32_t sum = ncs_fnv1a(ncs_fnv1a(NCS_FNV_INIT, h, 32), h + NCS_CHUNK_HEADER_SIZE, pay);
    ncs_put_u32(h + NCS_CH_CHECKSUM, sum);
    off += NCS_CHUNK_HEADER_SIZE + pay;
  }
}

/* A file holding `raw` as the payload of one FINAL chunk; *n gets its size. */
static uint8_t *wrap_payload(const uint8_t *raw, size_t rn, size_t *n) {
  size_t cap = NCS_FILE_HEADER_SIZE + NCS_CHUNK_HEADER_SIZE + ZSTD_compressBound(rn);
  uint8_t *f = calloc(1, cap);
  if (!f) return NULL;
  memcpy(f, NCS_FILE_MAGIC, 8);
  ncs_put_u16(f + NCS_FH_MAJOR, NCS_FORMAT_MAJOR);
  ncs_put_u16(f + NCS_FH_MINOR, NCS_FORMAT_MINOR);
  ncs_put_u32(f + NCS_FH_SIZE, NCS_FILE_HEADER_SIZE);
  ncs_put_u32(f + NCS_FH_PID, 1);
  uint8_t *h = f + NCS_FILE_HEADER_SIZE, *z = h + NCS_CHUNK_HEADER_SIZE;
  size_t zn = ZSTD_compress(z, ZSTD_compressBound(rn), raw, rn, 1);
  if (ZSTD_isError(zn)) { free(f); return NULL; }
  ncs_put_u32(h + NCS_CH_MAGIC, NCS_CHUNK_MAGIC);
  ncs_put_u32(h + NCS_CH_PAYLOAD, (uint32_t)zn);
  ncs_put_u32(h + NCS_CH_RAW, (uint32_t)rn);
  ncs_put_u32(h + NCS_CH_RECORDS, 0);
  ncs_put_u32(h + NCS_CH_FLAGS, NCS_CHUNK_F_FINAL);
  ncs_put_u32(h + NCS_CH_CHECKSUM, ncs_fnv1a(ncs_fnv1a(NCS_FNV_INIT, h, 32), z, zn));
  *n = NCS_FILE_HEADER_SIZE + NCS_CHUNK_HEADER_SIZE + zn;
  return f;
}

static int read_file_bytes(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  uint8_t *buf = NULL;
  size_t n = size - 1;
  if (mode < 0x80) {
    buf = malloc(n ? n : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, n);
    fix_checksums(buf, n);
  } else if (mode >= 0xc0) {
    buf = wrap_payload(data + 1, n, &n);
    if (!buf) return 0;
  }
  read_file_bytes(buf ? buf : data + 1, n);
  free(buf);
  return 0;
}

static int read_file_bytes(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) { close(fd); return 0; }
    off += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  struct ncs_visitor v = {NULL, on_process, on_thread, on_comm, on_comm_end, on_call, on_callsite,
                          on_module, on_drop, on_clock, on_gpu, on_log, on_raw, on_chunk};
  struct ncs_read_status st;
  memset(&st, 0, sizeof st);
  int rc = ncs_trace_read(path, &v, &st);
  close(fd);
  if (rc < 0 || rc > 2) { fprintf(stderr, "ncs_trace_read returned %d\n", rc); abort(); }
  if (rc != 0 && (!memchr(st.error, 0, sizeof st.error) || !strstr(st.error, path))) {
    fprintf(stderr, "ncs_trace_read returned %d without an error naming the file: [%.*s]\n", rc,
            (int)sizeof st.error, st.error);
    abort();
  }
  return 0;
}
