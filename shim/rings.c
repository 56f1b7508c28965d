/* rings.c — where the thread rings and the writer's chunk buffer live: one shared, file-backed
 * mapping per process, `<trace>.ncs.rings` (layout: include/ncclscope/rings.h, docs/FORMAT.md),
 * so that what threads recorded survives the process's sudden death (kill -9): the kernel
 * keeps the pages, and the decoder recovers them when the trace was cut.
 *
 * Contract:
 *   - ncs_rings_attach() runs on the writer thread right after it created the trace file
 *     (activation waits for that): the first time it creates the rings file next to it
 *     (O_CREAT|O_EXCL|O_NOFOLLOW, 0600, descriptor moved high like the trace's), reserves its
 *     blocks with fallocate (so a full disk fails here, never later as SIGBUS) and maps
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
 *     shim's fixed cost per process).
 *   - No page fault on the owner's thread where the writer keeps up: ncs_rings_tend() (writer
 *     thread, after every drain) makes the pages a ring's head is about to reach present and
 *     writable (MADV_POPULATE_WRITE: 1-3 us a page, against 13-16 us for a fault taken by the
 *     owner on this VM), a window ahead of the head as long as what the ring has taken (1024
 *     records at first, at most half the ring), every pass over the
 *     ring: a writeback that write-protected the pages (a file mapping's pages are made
 *     read-only again when the kernel writes them back) is undone there too, except inside
 *     the window at that moment. The owner wakes the writer half-way through the window
 *     (wake_at, internal.h ncs_ring_push), so a first pass does not outrun it where the
 *     writer gets the CPU. The first thread's ring is made, reserved and its first window
 *     populated by the writer at attach (`spare`); a later thread's ring is made on its own
 *     thread (claim, fallocate, mmap, its first window populated there: 24 pages, a fifth of
 *     what taking their faults costs) and the writer makes the next one ahead of time from
 *     then on. A ring whose owner has recorded nothing for 1 s keeps only
 *     its header page and 1/8 of the ring ahead of its head mapped (MADV_DONTNEED of a shared file mapping drops the
 *     mappings, never data: a record stored meanwhile stays in the page cache and the file).
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

#include "fileio.h" /* the descriptor lives in the file thread's table */
#include "hooks.h"
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

/* A ring made (in the file, its first window populated) before a thread asked for one. */
static struct ncs_ring *_Atomic spare;
static _Atomic int spare_wanted; /* a thread had to make its own ring: keep one ready from now on */

/* Writer thread only: per ring slot, how far its pages are populated and since when it is idle. */
static struct {
  const struct ncs_ring *ring;
  uint64_t populated; /* records [.., populated) have their pages made present this pass */
  uint64_t head;      /* the head at the last look */
  uint64_t since;     /* when `head` last moved (ns) */
  int trimmed;        /* idle: only the header page and the window stay mapped */
} tended[NCS_MAX_THREADS];
static int populate_unsupported; /* the kernel has no MADV_POPULATE_WRITE (before 5.14) */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define IDLE_TRIM_NS 1000000000ull
/* Ahead of a recording thread's head: half its ring (the owner wakes the writer at an eighth,
 * so a writer kept off the CPU for up to 3/8 of the ring's time is still back before the owner
 * passes the window: with a quarter, 4 tight-looping threads on 2 busy cores still took 2/3 of
 * their first pass's faults); an idle ring keeps an eighth (1.5 MiB of the default ring). */
#define WINDOW_DIV 2
/* A new ring's first window (96 KiB): populating 1.5 MiB for every process, most of whose
 * threads make a few calls, was 8 ms of its fixed CPU cost on the development VM */
#define FIRST_WINDOW 1024u
static void make_spare(void);

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
  return R.fd >= 0 && ncs_fio_fstat(R.fd, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino;
}

static void *map_shared(uint64_t off, size_t len) {
  if (!fd_still_ours()) return NULL;
  /* past RLIMIT_FSIZE, fallocate would raise SIGXFSZ on the application's thread */
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || (rl.rlim_cur != RLIM_INFINITY && off + len > (uint64_t)rl.rlim_cur))
    return NULL;
  if (ncs_fio_fallocate(R.fd, 0, (off_t)off, (off_t)len) != 0) return NULL;
  void *p = ncs_fio_mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, R.fd, (off_t)off);
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
  R.fd = ncs_fio_open(R.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (R.fd < 0) { R.path[0] = 0; goto fail; }
  struct stat st;
  if (ncs_fio_fstat(R.fd, &st) != 0) goto fail;
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
  make_spare(); /* the first calling thread's ring, made here on the writer thread */
  ncs_debug("rings in %s", R.path);
  return 0;
fail:
  ncs_debug("no rings file (%s): rings stay in process memory, lost on kill -9", strerror(errno));
  if (R.fd >= 0) {
    ncs_fio_close(R.fd);
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

/* The next ring of the file, reserved and mapped (no page touched), or NULL. */
static struct ncs_ring *file_ring(void) {
  struct ncs_rings_header *h = atomic_load_explicit(&R.hdr, memory_order_acquire);
  if (!h) return NULL;
  size_t bytes = (size_t)h->ring_bytes; /* the header's sizes: written before it was published */
  uint64_t i = atomic_fetch_add(&h->rings, 1);
  return i < NCS_MAX_THREADS ? map_shared(h->ring_offset + i * bytes, bytes) : NULL;
}

/* Makes the pages of ring r holding records [from, to) present and writable; -1 when the
 * kernel refused (then the owner takes its own page faults, as without this). */
static int populate(struct ncs_ring *r, uint64_t records, uint64_t from, uint64_t to) {
  if (populate_unsupported || to <= from) return 0;
  if (to - from > records) from = to - records;
  long ps = sysconf(_SC_PAGESIZE);
  size_t pg = ps > 0 ? (size_t)ps : 4096;
  while (from < to) {
    uint64_t at = from & (records - 1), n = to - from;
    if (n > records - at) n = records - at; /* up to the ring's end, then from its start */
    size_t a = (offsetof(struct ncs_ring, rec) + (size_t)at * sizeof(struct ncs_call)) / pg * pg;
    size_t b = page_round(offsetof(struct ncs_ring, rec) + (size_t)(at + n) * sizeof(struct ncs_call));
    if (madvise((char *)r + a, b - a, MADV_POPULATE_WRITE) != 0) {
      if (errno == EINVAL) populate_unsupported = 1;
      return -1;
    }
    from += n;
  }
  return 0;
}

/* The owner of r, whose pages up to record `end` are present, wakes the writer when its
 * head passes half-way from `head` to there (internal.h, ncs_ring_push): the writer then
 * makes the next ones present before the owner gets there. */
static void wake_half_way(struct ncs_ring *r, uint64_t head, uint64_t end) {
  atomic_store_explicit(&r->wake_at, head + (end - head) / 2, memory_order_relaxed);
}

/* A ring in the file with its first window populated, kept for the next thread (its mask
 * stays 0 until it is handed out: an unclaimed ring reads as never used). */
static void make_spare(void) {
  if (atomic_load_explicit(&spare, memory_order_relaxed)) return;
  struct ncs_ring *r = file_ring();
  if (!r) return;
  uint64_t records = ncs_cfg.ring_records;
  uint64_t first = records < FIRST_WINDOW ? records : FIRST_WINDOW;
  populate(r, records, 0, first);
  wake_half_way(r, 0, first);
  atomic_store_explicit(&spare, r, memory_order_release);
}

struct ncs_ring *ncs_rings_new_ring(void) {
  size_t bytes = 0;
  struct ncs_ring *r = atomic_exchange_explicit(&spare, NULL, memory_order_acquire);
  if (!r) {
    r = file_ring();
    if (atomic_load_explicit(&R.hdr, memory_order_relaxed)) atomic_store(&spare_wanted, 1);
    /* its first window, here: a page made present costs a fifth of a page fault taken by
     * this thread, which would otherwise run ahead of the writer through it */
    uint64_t first = ncs_cfg.ring_records < FIRST_WINDOW ? ncs_cfg.ring_records : FIRST_WINDOW;
    if (r && populate(r, ncs_cfg.ring_records, 0, first) == 0) wake_half_way(r, 0, first);
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

void ncs_rings_tend(uint64_t now_ns) {
  if (atomic_load_explicit(&spare_wanted, memory_order_relaxed)) make_spare();
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!r) continue;
    uint64_t records = (uint64_t)r->mask + 1, idle_win = records / NCS_WAKE_FRACTION;
    /* as many records ahead as the ring has taken (FIRST_WINDOW to half the ring): a thread
     * that makes few calls costs few pages */
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t win = head < FIRST_WINDOW ? FIRST_WINDOW : head > records / WINDOW_DIV ? records / WINDOW_DIV : head;
    if (tended[i].ring != r) { /* a ring new to this slot: its pages from the head on */
      tended[i].ring = r;
      tended[i].populated = head;
      tended[i].head = head;
      tended[i].since = now_ns;
      tended[i].trimmed = 0;
    }
    if (head != tended[i].head) {
      tended[i].head = head;
      tended[i].since = now_ns;
      tended[i].trimmed = 0;
    }
    /* every pass: a page populated last pass may have been written back (read-only) since */
    uint64_t from = tended[i].populated > head ? tended[i].populated : head;
    if (!tended[i].trimmed && head + win > from && populate(r, records, from, head + win) == 0) {
      tended[i].populated = head + win;
      wake_half_way(r, head, head + win);
    }
    if (!tended[i].trimmed && now_ns - tended[i].since >= IDLE_TRIM_NS && !(r->flags & NCS_RING_F_MEMORY) &&
        atomic_load_explicit(&r->tail, memory_order_relaxed) == head) {
      /* idle: drop the mappings of every page but the header's and the window's (their
       * contents stay in the file; a page the owner reaches again is populated again) */
      size_t pg = page_round(1), whole = page_round(offsetof(struct ncs_ring, rec) + (size_t)records * sizeof(struct ncs_call));
      madvise((char *)r + pg, whole - pg, MADV_DONTNEED);
      if (idle_win > win) idle_win = win;
      populate(r, records, head, head + idle_win);
      wake_half_way(r, head, head + idle_win);
      tended[i].populated = head + idle_win;
      tended[i].trimmed = 1;
    }
  }
}

void ncs_rings_remove(void) {
  struct stat st;
  /* by name: the name must still lead to the file this process created (the application may
   * have closed our descriptor; the mapping keeps the file alive either way) */
  if (R.path[0] && lstat(R.path, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino)
    unlink(R.path);
  R.path[0] = 0;
}

void ncs_rings_atfork_child(void) {
  /* the mappings are not in this process (MADV_DONTFORK); the descriptor is the parent's file
   * thread's (not here), or the parent's file in the table this child inherited */
  if (R.fd >= 0 && !ncs_fio_atfork_child() && fd_still_ours()) close(R.fd);
  R.fd = -1;
  atomic_store(&R.hdr, NULL);
  R.path[0] = 0;
  atomic_store(&memory_rings, 0);
  atomic_store(&spare, NULL);
  atomic_store(&spare_wanted, 0);
  memset(tended, 0, sizeof tended);
}
