/* recover.c — reading a killed process's rings file back into records (recover.h).
 *
 * Contract: see recover.h. Opens only a regular file (io/regfile.h; `<trace>.rings` may be a
 * link to it on /dev/shm, followed), reads with pread only; every offset and count from the file is
 * checked against the file's size and the header's own limits before use; memory is bounded
 * by the chunk buffer plus one ring at a time (and the records built). */
#include "io/readcount.h"
#include "io/recover.h"
#include "io/regfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/rings.h"

#define MAX_RINGS 4096                 /* far above the shim's thread slots */
#define MAX_THREAD_INDEX (1u << 20)

static int pread_all(int fd, void *buf, size_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n) {
    ssize_t k = pread(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k; n -= (size_t)k; off += (uint64_t)k;
  }
  return 0;
}

/* The highest call number seen per thread in the chunk buffer (calls also in a ring are
 * skipped there: the writer had encoded them but not yet moved the ring's tail). */
struct seen { uint64_t *tcall; uint32_t n; };
static void seen_note(struct seen *s, uint32_t thread, uint64_t tcall) {
  if (thread >= MAX_THREAD_INDEX) return;
  if (thread >= s->n) {
    uint32_t nn = s->n ? s->n : 64;
    while (nn <= thread) nn *= 2;
    uint64_t *t = realloc(s->tcall, nn * sizeof *t);
    if (!t) return;
    memset(t + s->n, 0, (nn - s->n) * sizeof *t);
    s->tcall = t;
    s->n = nn;
  }
  if (tcall > s->tcall[thread]) s->tcall[thread] = tcall;
}
static uint64_t seen_get(const struct seen *s, uint32_t thread) { return thread < s->n ? s->tcall[thread] : 0; }

/* Walks the chunk buffer's records: counts them, notes the calls, and cuts it at the first
 * record that is not whole (returns the length kept). */
static size_t scan_chunk(const uint8_t *buf, size_t len, uint32_t *records, uint64_t *calls, struct seen *s) {
  const uint8_t *p = buf, *end = buf + len;
  struct ncs_call_delta d;
  ncs_call_delta_reset(&d);
  struct ncs_call_tmpl tmpl = {.valid = 0}; /* the last CALL's, for CALL_RUN records (encode.h) */
  *records = 0;
  while (p < end) {
    const uint8_t *rec = p;
    uint64_t type, blen;
    if (ncs_get_varint(&p, end, &type) || ncs_get_varint(&p, end, &blen) || blen > (uint64_t)(end - p))
      return (size_t)(rec - buf);
    if (type == NCS_REC_CALL) {
      struct ncs_call c;
      struct ncs_rbuf rb;
      ncs_rbuf_init(&rb, p, (size_t)blen, NULL, 0);
      if (ncs_dec_call(&rb, &d, &c) || ncs_call_tmpl_set(&tmpl, p, (size_t)blen)) return (size_t)(rec - buf);
      seen_note(s, c.thread, c.tcall);
      (*calls)++;
    } else if (type == NCS_REC_CALL_RUN) {
      const uint8_t *q = p;
      struct ncs_call c[64];
      long n;
      do { /* at least once: an empty body is damage */
        if ((n = ncs_dec_call_run(&q, p + blen, &tmpl, &d, c, 64)) < 0) return (size_t)(rec - buf);
        for (long i = 0; i < n; i++) seen_note(s, c[i].thread, c[i].tcall);
        *calls += (uint64_t)n;
      } while (q < p + blen);
    }
    p += blen;
    (*records)++;
  }
  return len;
}

int ncs_rings_recover(const char *trace_path, uint32_t pid, uint64_t created_ns, uint64_t next_chunk,
                      struct ncs_recovered *out) {
  memset(out, 0, sizeof *out);
  char path[4096 + 8];
  if (snprintf(path, sizeof path, "%s%s", trace_path, NCS_RINGS_SUFFIX) >= (int)sizeof path) return 0;
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  FILE *f = ncs_fopen_regular(path, NULL, 0); /* never a FIFO or a device: never blocks */
  if (!f) {
    struct stat ls;
    char to[256];
    ssize_t n;
    /* a link to a file on /dev/shm that is gone (read on another host, after a reboot) */
    if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && (n = readlink(path, to, sizeof to - 1)) > 0) {
      to[n] = 0;
      snprintf(out->note, sizeof out->note, "%.70s links to %.120s, which is not here: nothing recovered", name, to);
    }
    return 0;
  }
  ncs_readcount_read(path);
  int fd = fileno(f);
  int ret = -1;
  struct seen seen = {0};
  struct ncs_ring *ring = NULL;
  struct stat st;
  struct ncs_rings_header h;
  if (fstat(fd, &st) != 0 || pread_all(fd, &h, sizeof h, 0) != 0 || memcmp(h.magic, NCS_RINGS_MAGIC, 8) != 0) {
    snprintf(out->note, sizeof out->note, "%.180s: offset 0: not a rings file", name);
    goto done;
  }
  uint64_t fsize = (uint64_t)st.st_size;
  if (h.version != NCS_RINGS_VERSION || h.call_size != sizeof(struct ncs_call)) {
    snprintf(out->note, sizeof out->note, "%.180s: offset 8: rings file version %u (record size %u), this reader reads %u",
             name, h.version, h.call_size, NCS_RINGS_VERSION);
    goto done;
  }
  if (h.pid != pid || h.trace_realtime_ns != created_ns) {
    snprintf(out->note, sizeof out->note, "%.180s: belongs to another process (pid %u), not used", name, h.pid);
    ret = 0;
    goto done;
  }
  uint64_t buf_chunk = atomic_load(&h.buf_chunk), buf_len = atomic_load(&h.buf_len);
  if (h.buf_offset < sizeof h || h.buf_cap > NCS_CHUNK_MAX_RAW || buf_len > h.buf_cap ||
      h.buf_offset + h.buf_cap > fsize) {
    snprintf(out->note, sizeof out->note, "%.180s: offset 32: chunk buffer out of bounds", name);
    goto done;
  }
  /* 1. the chunk being built, when it is the one the trace lacks */
  if (buf_chunk == next_chunk && buf_len > 0) {
    out->chunk = malloc(buf_len);
    if (!out->chunk || pread_all(fd, out->chunk, buf_len, h.buf_offset) != 0) {
      snprintf(out->note, sizeof out->note, "%.180s: offset %llu: cannot read the chunk buffer", name,
               (unsigned long long)h.buf_offset);
      goto done;
    }
    out->chunk_len = scan_chunk(out->chunk, buf_len, &out->chunk_records, &out->calls, &seen);
  }
  /* 2. the rings, past the writer's tail */
  uint64_t nrings = atomic_load(&h.rings);
  if (nrings > MAX_RINGS) nrings = MAX_RINGS;
  if (h.ring_records == 0 || (h.ring_records & (h.ring_records - 1)) || h.ring_records > (1ull << 26) ||
      h.ring_bytes < offsetof(struct ncs_ring, rec) + h.ring_records * sizeof(struct ncs_call)) {
    if (nrings) {
      snprintf(out->note, sizeof out->note, "%.180s: offset 48: bad ring geometry", name);
      goto done;
    }
  }
  struct ncs_wbuf w;
  size_t cap = 0;
  ncs_wbuf_init(&w, NULL, 0);
  for (uint64_t i = 0; i < nrings; i++) {
    uint64_t off = h.ring_offset + i * h.ring_bytes;
    if (off + h.ring_bytes > fsize) break; /* claimed but never given its blocks */
    if (!ring) ring = malloc(h.ring_bytes);
    if (!ring || pread_all(fd, ring, h.ring_bytes, off) != 0) {
      snprintf(out->note, sizeof out->note, "%.180s: offset %llu: cannot read ring %llu", name,
               (unsigned long long)off, (unsigned long long)i);
      goto done;
    }
    uint64_t head = atomic_load(&ring->head), tail = atomic_load(&ring->tail);
    uint64_t dropped = atomic_load(&ring->dropped), reported = ring->dropped_reported;
    if (ring->mask + 1 != h.ring_records || head < tail) continue; /* never used, or damaged */
    if (head - tail > h.ring_records) tail = head - h.ring_records;
    uint64_t n = head - tail;
    int drops = dropped > reported;
    if (!n && !drops) continue;
    size_t need = w.len + 256 + n * NCS_CALL_MAX;
    if (need > cap) {
      size_t nc = cap ? cap : 65536;
      while (nc < need) nc *= 2;
      uint8_t *nb = realloc(w.buf, nc);
      if (!nb) { snprintf(out->note, sizeof out->note, "%.180s: out of memory", name); free(w.buf); goto done; }
      w.buf = nb;
      w.cap = cap = nc;
    }
    char tname[17];
    memcpy(tname, ring->name, 16);
    tname[16] = 0;
    struct ncs_thread th = {.thread = ring->thread, .tid = (uint64_t)(uint32_t)ring->tid, .name = tname};
    ncs_enc_thread(&w, &th);
    out->rings_records++;
    struct ncs_call_delta d;
    ncs_call_delta_reset(&d);
    uint64_t after = seen_get(&seen, ring->thread);
    for (uint64_t t = tail; t != head; t++) {
      const struct ncs_call *c = &ring->rec[t & (h.ring_records - 1)];
      if (c->thread != ring->thread || (after && c->tcall <= after)) continue;
      w.len += ncs_encode_call(w.buf + w.len, &d, c);
      out->rings_records++;
      out->calls++;
    }
    if (drops) {
      struct ncs_drop dr = {.reason = NCS_DROP_BUFFER_FULL, .records = dropped - reported, .thread = ring->thread};
      ncs_enc_drop(&w, &dr);
      out->rings_records++;
    }
  }
  out->rings = w.buf;
  out->rings_len = w.len;
  snprintf(out->note, sizeof out->note, "%llu calls recovered from %.180s", (unsigned long long)out->calls, name);
  ret = out->chunk_records || out->rings_records ? 1 : 0;
done:
  free(ring);
  free(seen.tcall);
  fclose(f);
  if (ret < 0) ncs_recovered_free(out);
  return ret;
}

void ncs_recovered_free(struct ncs_recovered *r) {
  free(r->chunk);
  free(r->rings);
  r->chunk = r->rings = NULL;
  r->chunk_len = r->rings_len = 0;
  r->chunk_records = r->rings_records = 0;
}
