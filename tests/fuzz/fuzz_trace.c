/* fuzz_trace.c — libFuzzer entry point for the trace reader (decoder/io/trace.h).
 *
 * Contract: feeds one input to ncs_trace_read() as a file (an in-memory memfd, no disk I/O)
 * with every visitor callback set; callbacks read every byte of every string and frame they
 * are handed (TOPO_*, PROFILE and PROFILE_ID bodies decoded as their analyses do), so a
 * pointer past the reader's buffers shows up under ASan. Checks the reader's
 * own contract: a return of 0, 1 or 2, and a non-empty error naming the file whenever it
 * reports damage. The first input byte picks how the rest is used, so the fuzzer gets past the
 * checksums and the compression to the record parsers:
 *   0x00..0x7f  the rest is a whole file; chunk checksums are recomputed first (so mutations
 *               of headers and payloads are not all stopped by the checksum);
 *   0x80..0xbf  the rest is a whole file, read as it is;
 *   0xc0..0xff  the rest is the decompressed payload of one chunk: a valid file header and a
 *               FINAL chunk (zstd level 1, right sizes, record count and checksum; built by
 *               ncclscope/chunk.h) are built around it.
 * Built with clang -fsanitize=fuzzer,address (scripts/fuzz.sh) or with plain
 * cc and tests/fuzz/replay.c (the regression replay in make test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zstd.h>

#include "ncclscope/chunk.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "io/trace.h"
#include "refit.h"

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
/* the CALL and GPU_TIME records a read delivered, as a hash in delivery order (c: NULL, or the
 * uint64_t it goes to) */
static void mix(void *c, uint64_t v) { if (c) *(uint64_t *)c = (*(uint64_t *)c ^ v) * 1099511628211ull; }
static int on_call(void *c, const struct ncs_call *k) {
  sink += k->op + (unsigned)k->count;
  mix(c, 1); mix(c, k->tcall); mix(c, k->t_enter); mix(c, k->count);
  return 0;
}
static int on_callsite(void *c, const struct ncs_callsite *s) {
  for (uint32_t i = 0; i < s->nframes; i++) { touch_str(s->frames[i].symbol); sink += (unsigned)s->frames[i].offset; }
  return 0;
}
static int on_module(void *c, const struct ncs_module *m) { touch_str(m->path); return 0; }
static int on_drop(void *c, const struct ncs_drop *d) { sink += (unsigned)d->records; return 0; }
static int on_clock(void *c, const struct ncs_clock *k) { sink += (unsigned)k->uncertainty_ns; return 0; }
static int on_gpu(void *c, const struct ncs_gpu_time *g) {
  sink += (unsigned)g->gpu_end;
  mix(c, 2); mix(c, g->ref); mix(c, g->gpu_end);
  return 0;
}
static int on_calls(void *c, const struct ncs_call *x, size_t n) { for (size_t i = 0; i < n; i++) on_call(c, &x[i]); return 0; }
static int on_gpus(void *c, const struct ncs_gpu_time *x, size_t n) { for (size_t i = 0; i < n; i++) on_gpu(c, &x[i]); return 0; }
/* a stretch (trace.h): its order[] must hold nc zeros and ng ones, at most a block of each;
 * replayed in file order */
static int on_stretch(void *c, const struct ncs_stretch *s) {
  size_t zeros = 0;
  for (size_t i = 0; i < s->nc + s->ng; i++) {
    if (s->order[i] > 1) { fprintf(stderr, "stretch order[%zu] = %u\n", i, s->order[i]); abort(); }
    zeros += !s->order[i];
  }
  if (zeros != s->nc || !(s->nc + s->ng) || s->nc > 256 || s->ng > 256) {
    fprintf(stderr, "bad stretch: %zu calls, %zu GPU times, %zu zeros\n", s->nc, s->ng, zeros);
    abort();
  }
  return ncs_stretch_in_order(s, c, on_calls, on_gpus);
}
static int on_log(void *c, const struct ncs_log_line *l) { touch(l->line, l->len); return 0; }
/* TOPO_* and PROFILE bodies are decoded by their analyses, through the same shared reader */
static int on_raw(void *c, const struct ncs_raw *r) {
  struct ncs_rbuf rb;
  union { struct ncs_topo_gpu g; struct ncs_topo_link l; struct ncs_profile p; } u;
  touch(r->body, r->len);
  if (r->type == NCS_REC_TOPO_GPU && ncs_dec_topo_gpu(ncs_rbuf_on(&rb, r->body, r->len), &u.g) == 0) touch_str(u.g.uuid);
  if (r->type == NCS_REC_TOPO_LINK && ncs_dec_topo_link(ncs_rbuf_on(&rb, r->body, r->len), &u.l) == 0) sink += u.l.pcie;
  if (r->type == NCS_REC_PROFILE && ncs_dec_profile(ncs_rbuf_on(&rb, r->body, r->len), &u.p) == 0) touch_str(u.p.datatype);
  struct ncs_profile_id pid; /* format 3.1: names as ids, rebuilt as the profile analysis does */
  if (r->type == NCS_REC_PROFILE_ID && ncs_dec_profile_id(ncs_rbuf_on(&rb, r->body, r->len), &pid) == 0 &&
      ncs_profile_from_id(&pid, &u.p) == 0) {
    touch_str(u.p.func); touch_str(u.p.algo); touch_str(u.p.proto); touch_str(u.p.datatype);
  }
  return 0;
}
static int on_chunk(void *c, uint64_t i, uint64_t d, uint32_t f, uint64_t o) { sink += (unsigned)i; return 0; }

/* Records in a decompressed payload, as far as their framing reads (the rest is the reader's
 * to judge): the chunk header states this many, so the reader reaches the record bodies. */
static uint32_t count_records(const uint8_t *p, size_t n) {
  const uint8_t *e = p + n;
  uint32_t k = 0;
  uint64_t type, len;
  while (p < e && ncs_get_varint(&p, e, &type) == 0 && ncs_get_varint(&p, e, &len) == 0 &&
         len <= (uint64_t)(e - p)) {
    p += len;
    k++;
  }
  return k;
}

/* A file holding `raw` as the payload of one FINAL chunk; *n gets its size. */
static ZSTD_CCtx *cctx;
static uint8_t *wrap_payload(const uint8_t *raw, size_t rn, size_t *n) {
  size_t cap = NCS_FILE_HEADER_SIZE + NCS_CHUNK_BOUND(rn);
  uint8_t *f = calloc(1, cap);
  if (!f) return NULL;
  ncs_encode_file_header(f, 0, 1);
  if (!cctx) cctx = ZSTD_createCCtx(); /* kept for the whole run */
  size_t zn = ncs_chunk_pack(cctx, 1, f + NCS_FILE_HEADER_SIZE, cap - NCS_FILE_HEADER_SIZE, raw, rn,
                             count_records(raw, rn), 0, 0, NCS_CHUNK_F_FINAL);
  if (!zn) { free(f); return NULL; }
  *n = NCS_FILE_HEADER_SIZE + zn;
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
    ncs_refit_checksums(buf, n);
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
  uint64_t h1 = 0, h2 = 0;
  struct ncs_visitor v = {.process = on_process, .thread = on_thread, .comm = on_comm, .comm_end = on_comm_end,
                          .call = on_call, .callsite = on_callsite, .module = on_module, .drop = on_drop,
                          .clock = on_clock, .gpu_time = on_gpu, .log_line = on_log, .raw = on_raw,
                          .chunk = on_chunk, .ctx = &h1};
  struct ncs_read_status st, st2;
  memset(&st, 0, sizeof st);
  int rc = ncs_trace_read(path, &v, &st);
  /* again with stretches (column chunks' CALL and GPU_TIME records taken a block at a time):
   * the same records in the same order once replayed, the same end */
  v.ctx = &h2;
  v.stretch = on_stretch;
  int rc2 = ncs_trace_read(path, &v, &st2);
  close(fd);
  if (rc2 != rc || h2 != h1 || st2.records != st.records || strcmp(st2.error, st.error) != 0) {
    fprintf(stderr, "read with stretches differs: rc %d/%d, records %llu/%llu, hash %d, error [%s] / [%s]\n", rc, rc2,
            (unsigned long long)st.records, (unsigned long long)st2.records, h1 == h2, st.error, st2.error);
    abort();
  }
  if (rc < 0 || rc > 2) { fprintf(stderr, "ncs_trace_read returned %d\n", rc); abort(); }
  if (rc != 0 && (!memchr(st.error, 0, sizeof st.error) || !strstr(st.error, path))) {
    fprintf(stderr, "ncs_trace_read returned %d without an error naming the file: [%.*s]\n", rc,
            (int)sizeof st.error, st.error);
    abort();
  }
  return 0;
}
