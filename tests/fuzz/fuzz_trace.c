/* fuzz_trace.c — libFuzzer entry point for the trace reader (decoder/trace.h).
 *
 * Contract: feeds one input to ncs_trace_read() as a file (an in-memory memfd, no disk I/O)
 * with every visitor callback set; callbacks read every byte of every string and frame they
 * are handed, so a pointer past the reader's buffers shows up under ASan. Checks the reader's
 * own contract: a return of 0, 1 or 2, and a non-empty error naming the file whenever it
 * reports damage. Built with clang -fsanitize=fuzzer,address (scripts/fuzz.sh) or with plain
 * cc and tests/fuzz/replay.c (the regression replay in make test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
