/* rings.c — where the thread rings and the writer's chunk buffer live: one shared, file-backed
 * mapping per process, `<trace>.ncs.rings` (layout: include/ncclscope/rings.h, docs/FORMAT.md),
 * so that what threads recorded survives the process's sudden death (kill -9): the kernel
 * keeps the pages, and the decoder recovers them when the trace was cut.
 *
 * Contract:
 *   - ncs_rings_attach() runs on the writer thread right after it created the trace file
 *     (activation waits for that): the first time it creates the rings file next to it
 *     (O_CREAT|O_EXCL|O_NOFOLLOW, 0600, descriptor moved high like the trace's), reserves its
 *     blocks with posix_fallocate (so a full disk fails here, never later as SIGBUS) and maps
 *     the header and the chunk buffer; when the writer had to start a new trace file (its
 *     descriptor was taken by the application) it renames the rings file after the new one.
 *     Any failure leaves the process on process memory.
 *   - ncs_rings_new_ring() (a thread's first recorded call; never on the hot path) claims the
 *     next ring in the file, reserves and maps it; when the file is missing, full, or no
 *     longer ours (device+inode checked before every change), the ring is anonymous memory
 *     and carries NCS_RING_F_MEMORY (counted: the writer reports it in the THREAD record).
 *   - Every mapping is MADV_DONTFORK: a forked child never sees, let alone writes, its
 *     parent's rings; ncs_rings_atfork_child() forgets them (the child makes its own file).
 *   - Every mapping is MADV_RANDOM: a first touch must not read the neighbouring pages into
 *     the page cache (that read-around, zeroing pages no ring had reached, was most of the
 *     shim's fixed cost per process). Pages cost only as a ring reaches them; the owner takes
 *     the page faults of its first pass over its ring (a few microseconds per 4 KiB page on a
 *     file mapping: ~20 ms of one thread's CPU over its first 131072 calls, once).
 *   - ncs_rings_remove() (after the final chunk is written) unlinks the file: nothing is left
 *     to recover. A killed process leaves it for the decoder. No syscall per recorded call. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hooks.h" /* ncs_fd_move_high */
#include "internal.h"
#include "ncclscope/rings.h"

static struct {
  int fd;                         /* the rings file, -1 when none */
  dev_t dev;
  ino_t ino;
  char path[800];
  struct ncs_rings_header *_Atomic hdr; /* mapping of header + chunk buffer (published last) */
  size_t hdr_map;
} R = {.fd = -1};

static _Atomic uint64_t memory_rings; /* rings that had to live in process memory */

static size_t page_round(size_t n) {
  long ps = sysconf(_SC_PAGESIZE);
  size_t p = ps > 0 ? (size_t)ps : 4096;
  return (n + p - 1) / p * p;
}

/* One ring's bytes: its header and ring_records slots, page-rounded (file or memory alike). */
static size_t ring_size(void) {
  return page_round(offsetof(struct ncs_ring, rec) + (size_t)ncs_cfg.ring_records * sizeof(struct ncs_call));
}

/* 1 when R.fd is still the file this process created (an application may close or reuse
 * descriptor numbers it does not own). */
static int fd_still_ours(void) {
  struct stat st;
  return R.fd >= 0 && fstat(R.fd, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino;
}

static void *map_shared(uint64_t off, size_t len) {
  if (!fd_still_ours()) return NULL;
  /* past RLIMIT_FSIZE, fallocate would raise SIGXFSZ on the application's thread */
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || (rl.rlim_cur != RLIM_INFINITY && off + len > (uint64_t)rl.rlim_cur))
    return NULL;
  if (posix_fallocate(R.fd, (off_t)off, (off_t)len) != 0) return NULL;
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, R.fd, (off_t)off);
  if (p == MAP_FAILED) return NULL;
  madvise(p, len, MADV_DONTFORK);
  /* no read-around: a first touch must not read (and zero) the neighbouring pages into the
   * page cache; the pages of a ring cost only when the ring reaches them */
  madvise(p, len, MADV_RANDOM);
  return p;
}

int ncs_rings_attach(const char *trace_path, uint32_t pid, uint64_t realtime_ns, size_t buf_cap) {
  struct ncs_rings_header *old = atomic_load(&R.hdr);
  if (old) { /* a new trace file: the rings follow its name, or stop being recoverable */
    char np[sizeof R.path];
    struct stat st;
    if (snprintf(np, sizeof np, "%s%s", trace_path, NCS_RINGS_SUFFIX) < (int)sizeof np && R.path[0] &&
        lstat(R.path, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino && rename(R.path, np) == 0) {
      snprintf(R.path, sizeof R.path, "%s", np);
      old->trace_realtime_ns = realtime_ns;
      return 0;
    }
    old->pid = 0; /* matches no trace: nothing is recovered from it */
    return -1;
  }
  if (R.fd >= 0) return -1;
  if (snprintf(R.path, sizeof R.path, "%s%s", trace_path, NCS_RINGS_SUFFIX) >= (int)sizeof R.path) goto fail;
  R.fd = ncs_fd_move_high(open(R.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (R.fd < 0) { R.path[0] = 0; goto fail; }
  struct stat st;
  if (fstat(R.fd, &st) != 0) goto fail;
  R.dev = st.st_dev;
  R.ino = st.st_ino;
  size_t buf_off = NCS_RINGS_HEADER_SIZE;
  R.hdr_map = page_round(buf_off + buf_cap);
  struct ncs_rings_header *h = map_shared(0, R.hdr_map);
  if (!h) goto fail;
  memcpy(h->magic, NCS_RINGS_MAGIC, 8);
  h->version = NCS_RINGS_VERSION;
  h->header_size = NCS_RINGS_HEADER_SIZE;
  h->call_size = sizeof(struct ncs_call);
  h->pid = pid;
  h->trace_realtime_ns = realtime_ns;
  h->buf_offset = buf_off;
  h->buf_cap = R.hdr_map - buf_off;
  h->ring_offset = R.hdr_map;
  h->ring_bytes = ring_size();
  h->ring_records = ncs_cfg.ring_records;
  atomic_store(&h->buf_chunk, 0);
  atomic_store(&h->buf_len, 0);
  atomic_store_explicit(&h->rings, 0, memory_order_release);
  atomic_store_explicit(&R.hdr, h, memory_order_release); /* app threads claim rings from now */
  ncs_debug("rings in %s", R.path);
  return 0;
fail:
  ncs_debug("no rings file (%s): rings stay in process memory, lost on kill -9", strerror(errno));
  if (R.fd >= 0) {
    close(R.fd);
    if (R.path[0]) unlink(R.path);
  }
  R.fd = -1;
  R.path[0] = 0;
  return -1;
}

uint8_t *ncs_rings_buf(size_t *cap) {
  struct ncs_rings_header *h = atomic_load(&R.hdr);
  if (!h) return NULL;
  *cap = h->buf_cap;
  return (uint8_t *)h + h->buf_offset;
}

void ncs_rings_buf_reset(uint64_t chunk) {
  struct ncs_rings_header *h = atomic_load_explicit(&R.hdr, memory_order_relaxed);
  if (!h) return;
  atomic_store_explicit(&h->buf_len, 0, memory_order_release);
  atomic_store_explicit(&h->buf_chunk, chunk, memory_order_release);
}

void ncs_rings_buf_publish(size_t len) {
  struct ncs_rings_header *h = atomic_load_explicit(&R.hdr, memory_order_relaxed);
  if (h) atomic_store_explicit(&h->buf_len, len, memory_order_release);
}

struct ncs_ring *ncs_rings_new_ring(void) {
  size_t bytes = 0;
  struct ncs_ring *r = NULL;
  struct ncs_rings_header *h = atomic_load_explicit(&R.hdr, memory_order_acquire);
  if (h) { /* the header's sizes: written before it was published */
    bytes = (size_t)h->ring_bytes;
    uint64_t i = atomic_fetch_add(&h->rings, 1);
    if (i < NCS_MAX_THREADS) r = map_shared(h->ring_offset + i * bytes, bytes);
  }
  if (!r) {
    bytes = ring_size();
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, bytes, MADV_DONTFORK);
    r = p;
    r->flags = NCS_RING_F_MEMORY;
    atomic_fetch_add(&memory_rings, 1);
  }
  r->mask = ncs_cfg.ring_records - 1;
  return r;
}

uint64_t ncs_rings_in_memory(void) { return atomic_load(&memory_rings); }

void ncs_rings_remove(void) {
  struct stat st;
  /* by name: the name must still lead to the file this process created (the application may
   * have closed our descriptor; the mapping keeps the file alive either way) */
  if (R.path[0] && lstat(R.path, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino)
    unlink(R.path);
  R.path[0] = 0;
}

void ncs_rings_atfork_child(void) {
  /* the mappings are not in this process (MADV_DONTFORK); the descriptor is the parent's file */
  if (R.fd >= 0 && fd_still_ours()) close(R.fd);
  R.fd = -1;
  atomic_store(&R.hdr, NULL);
  R.path[0] = 0;
  atomic_store(&memory_rings, 0);
}
