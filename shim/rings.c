/* rings.c — where the thread rings and the writer's chunk buffer live: one shared file mapping
 * per process (layout: include/ncclscope/rings.h, docs/FORMAT.md "Rings file"), so that what
 * threads recorded survives the process's sudden death (kill -9): the kernel keeps the pages,
 * and the decoder recovers them when the trace was cut.
 *
 * Where: on /dev/shm when it is a tmpfs with room to spare (after this file's reservation at
 * least SHM_FREE_MIN and half of it stay free: NCCL's own shared-memory transport lives there,
 * and a container's default 64 MiB /dev/shm is never used), as
 * `ncclscope-<uid>-<pid>-<16 hex>.rings`, with a symbolic link `<trace>.rings` next to the
 * trace naming it; else (no tmpfs there, not enough room, the link cannot be made, or the
 * trace is itself on a tmpfs) the file `<trace>.rings` itself. Why: a tmpfs page is never
 * written back, so never write-protected again; a file on a disk's file system is written
 * back every dirty_expire (30 s), which made the owner take a page fault on every page of its
 * ring again (1,600-4,200 faults a minute at 1 M calls/s; BENCHMARKS.md).
 *
 * Contract:
 *   - ncs_rings_attach() runs on the writer thread right after it created the trace file
 *     (activation waits for that): the first time it creates the rings file (O_CREAT|O_EXCL|
 *     O_NOFOLLOW, 0600, descriptor in the file thread's table; a name made of numbers only),
 *     reserves its blocks with fallocate (so a full file system fails here, never later as
 *     SIGBUS) and maps the header and the chunk buffer (on /dev/shm only BUF_FIRST of the
 *     buffer reserved; ncs_rings_buf_grow() reserves more, and the writer writes only what
 *     is reserved); when the writer had to start a new
 *     trace file (its descriptor was taken by the application) it renames the link (or the
 *     file) after the new one. Any failure leaves the process on process memory.
 *   - ncs_rings_new_ring() (a thread's first recorded call; never on the hot path) claims the
 *     next ring in the file, reserves and maps it; when the file is missing, full, no longer
 *     ours (device+inode checked before every change), or /dev/shm would keep less free than
 *     above, the ring is anonymous memory and carries NCS_RING_F_MEMORY (counted: the writer
 *     reports it in the THREAD record).
 *   - Every mapping is MADV_DONTFORK: a forked child never sees, let alone writes, its
 *     parent's rings; ncs_rings_atfork_child() forgets them (the child makes its own file).
 *   - Every mapping is MADV_RANDOM: a first touch must not read the neighbouring pages into
 *     the page cache (that read-around, zeroing pages no ring had reached, was most of the
 *     shim's fixed cost per process).
 *   - No page fault on the owner's thread where the writer keeps up: ncs_rings_tend() (writer
 *     thread, before every drain) makes the pages a ring's head is about to reach present and
 *     writable (MADV_POPULATE_WRITE), a window ahead of the head of 1024 records at first, then
 *     16 times what the ring has taken, at most half the ring; on a disk's file system it does so
 *     every pass, to undo a writeback's write protection (except inside the window at that
 *     moment: those pages the owner faults again). The owner wakes the writer half-way through
 *     the window (wake_at, internal.h ncs_ring_push), so a first pass does not outrun it where
 *     the writer gets the CPU. The first thread's ring is made, reserved and its first window
 *     populated by the writer at attach (`spare`); a later thread's ring is made on its own
 *     thread (claim, fallocate, mmap, its first window populated there) and the writer makes
 *     the next one ahead of time from then on, once the process has recorded for 1 s.
 *   - A new ring on /dev/shm has only its first window reserved (its `limit` there) and, in
 *     `grow_to`, the whole ring to grow to (room checked for its first quarter when it is made,
 *     for each step past it when the step is taken). While it grows, every page below its limit
 *     is present (MADV_POPULATE_WRITE: a page made present holds its block, or the call fails
 *     instead of raising SIGBUS when the tmpfs is full) and no fallocate runs for it: the
 *     limit rises GROW_STEP records (48 pages) at a time, made present by the pagers (two
 *     threads of the shim's, started by the writer when a growing ring's owner first passes
 *     half its first window: signals blocked, 64 KiB stacks, no descriptor, no system call but
 *     madvise, statfs and futex; they step the ring whose owner is nearest its limit first,
 *     until every growing ring has its window, look again while an owner records (1 ms after a
 *     look that made a step, twice as long after one with nothing to do, up to 64 ms), and
 *     sleep otherwise, woken by the writer), so neither the owner (a page fault
 *     is ~1.6 us of its CPU) nor the writer (whose drains would wait) makes them; by the owner
 *     itself, one step, when it reaches the limit first (ncs_rings_grow), then it records on: a
 *     thread never drops a call while its ring has room, whether a pager got the CPU or not,
 *     unless /dev/shm has no room (counted). Never on the per-call path: only a push that found
 *     the head at the limit (at most ring / GROW_STEP, 64 pushes of the default ring). Once
 *     every page is present, no limit. A growing ring whose owner, past its first window, has
 *     been idle for 1 s is reserved whole by the writer (fallocate; a per-ring lock keeps the
 *     pagers off it meanwhile), then trimmed as below. Where no pager can start, the writer
 *     reserves a growing ring whole once its owner has made FIRST_WINDOW calls and populates
 *     it as any other. A fork child has no pagers (and none of the parent's rings).
 *   - An idle ring gives its memory back: once its owner has recorded nothing for 1 s and the
 *     writer has drained it, the writer lowers its `limit` to the end of 1/8 of the ring ahead
 *     of the head (the owner records only below it: internal.h) and drops the mappings of
 *     every page but the header's and that window's; one pass later (at least 100 ms), when
 *     the head has still not moved, it punches those pages out of the file (their records
 *     were all written: they are below the tail). No push can write past the lowered limit
 *     once the owner has seen it, and one that read the old limit writes the slot at the head,
 *     which is kept; so no store ever reaches a page without memory (no SIGBUS on a full
 *     file system). When the head moves again (the owner wakes the writer half-way through
 *     the window) the writer reserves the whole ring again and lifts the limit; while it
 *     cannot (the file system filled meanwhile) the owner drops what passes the window,
 *     counted. Resident: the header page and 1/8 of the ring (1.5 MiB of the default ring).
 *   - An idle writer (writer.c: a heartbeat every 2 s) arms the rings before it sleeps
 *     (ncs_rings_arm: each drained ring's wake_at moved to its head + 1, so the owner's next push
 *     wakes it, at no cost per call) and puts back the wake-ups it replaced when it wakes
 *     (ncs_rings_disarm, before the next tend), unless the owner set another meanwhile.
 *   - ncs_rings_remove() (after the final chunk is written) unlinks the file and its link:
 *     nothing is left to recover. A killed process leaves them for the decoder, which reads
 *     the file through the link. A killed process's file on /dev/shm is moved back next to
 *     its trace by the next process that records on the host for 10 s (same user, same pid
 *     namespace; its writer thread, then every minute): copied (holes kept) over the link when the link
 *     still names it, deleted when the link is gone (the trace was moved or deleted: nothing
 *     could find the file any more, and it holds memory). No syscall per recorded call. The
 *     copy is an unnamed file (O_TMPFILE) in the trace's directory, named `<link>.<pid>.tmp`
 *     only once whole, then renamed over the link: a process that ends (ncs_rings_remove) or
 *     is killed in the middle of a copy leaves nothing beside the trace, and the file stays on
 *     /dev/shm, linked, for the next one. Where the trace's file system has no O_TMPFILE the
 *     copy is that named file from the start (one that ends deletes it); a named copy whose
 *     process is gone (killed mid-copy there, or between the naming and the rename) is deleted
 *     by the next process that gives that file back, before it copies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h" /* the descriptor lives in the file thread's table */
#include "hooks.h"
#include "internal.h"
#include "ncclscope/rings.h"

static struct {
  int fd;                         /* the rings file, -1 when none */
  dev_t dev;
  ino_t ino;
  char path[800];                 /* the file */
  char link[800];                 /* `<trace>.rings`, a link to `path` on /dev/shm; "" when the file is there */
  int shm;                        /* the file is on /dev/shm */
  struct ncs_rings_header *_Atomic hdr; /* mapping of header + chunk buffer (published last) */
  size_t hdr_map;
  size_t buf_end;                 /* the file's bytes [0, buf_end) are reserved (header + chunk buffer) */
  uint64_t attached_ns;           /* when the file was made (writer's clock) */
} R = {.fd = -1};

static _Atomic uint64_t memory_rings; /* rings that had to live in process memory */

/* A ring made (in the file, its first window populated) before a thread asked for one. */
static struct ncs_ring *_Atomic spare;
static _Atomic int spare_wanted; /* a thread had to make its own ring: keep one ready (after SPARE_AFTER_NS) */

/* Writer thread only: per ring slot, how far its pages are populated and since when it is idle. */
static struct {
  const struct ncs_ring *ring;
  uint64_t populated; /* records [.., populated) have their pages made present this pass */
  uint64_t head;      /* the head at the last look */
  uint64_t since;     /* when `head` last moved (ns) */
  uint64_t trim_at;   /* when it was trimmed (ns) */
  uint64_t base;      /* the head when populating began (first use, or the end of a trim) */
  uint64_t keep;      /* trimmed: the slots from the head that keep their pages */
  int trimmed;        /* idle: 1 limit lowered, only the header page and the window mapped;
                       * 2 the other pages punched out of the file too */
} tended[NCS_MAX_THREADS];
#define PUNCH_AFTER_NS 100000000ull
/* /dev/shm is used only when, after a reservation, this much and half of it stay free */
#define SHM_FREE_MIN (1ull << 30)
/* on /dev/shm the chunk buffer is reserved this much at first, the rest as the writer fills it */
#define BUF_FIRST (256u << 10)
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
/* Past its first window, a thread's window is this many times what its ring has taken (up to
 * half the ring, from 4,096 calls on): with 1 (the window as long as the head, half the ring
 * from 65,536 calls) a thread in a tight loop outran a late writer at each doubling of its
 * first pass (BENCHMARKS.md, "Page faults and ring memory") */
#define WINDOW_MUL 16u
/* A growing ring's pages are made present this many records at a time (48 pages) */
#define GROW_STEP 2048u
/* A new ring's first reservation on /dev/shm, a fraction of the ring (3 MiB of the default
 * one): see file_ring() */
#define SHM_FIRST_RESERVE_DIV 4u
/* The writer keeps a spare ring ready (once a thread had to make its own) only in a process
 * that has recorded this long: a short one, whose threads are all there by then, never pays
 * for a ring no thread takes (its first quarter, 3 MiB a tmpfs zeroes at once) */
#define SPARE_AFTER_NS 1000000000ull
/* Dead processes' files on /dev/shm are looked for once this process has recorded this long */
#define LEFTOVERS_AFTER_NS 10000000000ull
#define LEFTOVERS_EVERY_NS 60000000000ull /* and again this often (children that _exit leave theirs) */
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

/* 1 when dir is a tmpfs that keeps at least SHM_FREE_MIN and half its size free after `need`
 * more bytes are taken from it. */
static int shm_room(const char *dir, uint64_t need) {
  struct statfs sf;
  struct statvfs sv;
  if (statfs(dir, &sf) != 0 || sf.f_type != 0x01021994 /* TMPFS_MAGIC */ || statvfs(dir, &sv) != 0) return 0;
  uint64_t size = (uint64_t)sv.f_blocks * sv.f_frsize, avail = (uint64_t)sv.f_bavail * sv.f_frsize;
  return avail >= need && avail - need >= SHM_FREE_MIN && avail - need >= size / 2;
}

/* Maps len bytes of the file at off, of which the first `reserve` (and the last page, which
 * makes the file that long) have their blocks reserved; NULL when the file system cannot, or
 * when /dev/shm would not keep its free share after `room` (>= reserve) more bytes. */
static void *map_shared(uint64_t off, size_t len, size_t reserve, size_t room) {
  size_t pg = page_round(1);
  if (!fd_still_ours()) return NULL;
  if (R.shm && !shm_room(NCS_RINGS_SHM_DIR, room + pg)) return NULL; /* leave /dev/shm to the job */
  /* past RLIMIT_FSIZE, fallocate would raise SIGXFSZ on the application's thread */
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || (rl.rlim_cur != RLIM_INFINITY && off + len > (uint64_t)rl.rlim_cur))
    return NULL;
  if (ncs_fio_fallocate(R.fd, 0, (off_t)off, (off_t)reserve) != 0 ||
      (reserve < len && ncs_fio_fallocate(R.fd, 0, (off_t)(off + len - pg), (off_t)pg) != 0))
    return NULL;
  void *p = ncs_fio_mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, R.fd, (off_t)off);
  if (p == MAP_FAILED) return NULL;
  madvise(p, len, MADV_DONTFORK);
  /* no read-around: a first touch must not read (and zero) the neighbouring pages into the
   * page cache; the pages of a ring cost only when the ring reaches them */
  madvise(p, len, MADV_RANDOM);
  return p;
}

/* Reserves the file's blocks [off, off + len) of a mapping made before; 0, or -1 when the file
 * is no longer ours, /dev/shm would keep too little free, or the file system refuses. */
static int reserve(uint64_t off, size_t len) {
  if (!fd_still_ours() || (R.shm && !shm_room(NCS_RINGS_SHM_DIR, len))) return -1;
  return ncs_fio_fallocate(R.fd, 0, (off_t)off, (off_t)len);
}

/* 1 when R.link is still the link to R.path this process made. */
static int link_still_ours(void) {
  char to[sizeof R.path];
  struct stat st;
  if (!R.link[0] || lstat(R.link, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
  ssize_t n = readlink(R.link, to, sizeof to - 1);
  if (n < 0) return 0;
  to[n] = 0;
  return strcmp(to, R.path) == 0;
}

/* The inode of this process's pid namespace (0 when unknown). */
static uint64_t pid_namespace(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Creates the rings file as R.path: on /dev/shm with its link R.link when there is room for
 * `need` bytes there, else next to the trace. The descriptor, or -1. */
static int create_file(const char *trace_path, uint32_t pid, uint64_t need) {
  int fd = -1;
  struct statfs sf;
  R.shm = 0;
  R.link[0] = 0;
  if (snprintf(R.link, sizeof R.link, "%s%s", trace_path, NCS_RINGS_SUFFIX) >= (int)sizeof R.link) goto fail;
  /* a trace already on a tmpfs keeps its rings beside it */
  if (statfs(trace_path, &sf) == 0 && sf.f_type != 0x01021994 && shm_room(NCS_RINGS_SHM_DIR, need)) {
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) rnd = ncs_clock_ns() ^ (uint64_t)pid << 32;
    snprintf(R.path, sizeof R.path, "%s/%s%u-%u-%016llx%s", NCS_RINGS_SHM_DIR, NCS_RINGS_SHM_PREFIX, (unsigned)geteuid(),
             (unsigned)pid, (unsigned long long)rnd, NCS_RINGS_SUFFIX);
    fd = ncs_fio_open(R.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 && symlink(R.path, R.link) == 0) {
      R.shm = 1;
      return fd;
    }
    if (fd >= 0) {
      ncs_fio_close(fd);
      unlink(R.path);
    }
  }
  snprintf(R.path, sizeof R.path, "%s", R.link); /* fits: R.link did */
  R.link[0] = 0;
  fd = ncs_fio_open(R.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
fail:
  R.path[0] = R.link[0] = 0;
  return -1;
}

int ncs_rings_attach(const char *trace_path, uint32_t pid, uint64_t realtime_ns, size_t buf_cap) {
  struct ncs_rings_header *old = atomic_load(&R.hdr);
  if (old) { /* a new trace file: the rings follow its name, or stop being recoverable */
    char np[sizeof R.path];
    struct stat st;
    char *name = R.link[0] ? R.link : R.path; /* what sits next to the trace */
    int ours = R.link[0] ? link_still_ours() : R.path[0] && lstat(R.path, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino;
    if (snprintf(np, sizeof np, "%s%s", trace_path, NCS_RINGS_SUFFIX) < (int)sizeof np && ours && rename(name, np) == 0) {
      snprintf(name, sizeof R.path, "%s", np);
      old->trace_realtime_ns = realtime_ns;
      snprintf(old->trace, sizeof old->trace, "%s", trace_path);
      return 0;
    }
    old->pid = 0; /* matches no trace: nothing is recovered from it */
    return -1;
  }
  if (R.fd >= 0) return -1;
  size_t buf_off = NCS_RINGS_HEADER_SIZE;
  R.hdr_map = page_round(buf_off + buf_cap);
  R.fd = create_file(trace_path, pid, R.hdr_map + ring_size());
  if (R.fd < 0) goto fail;
  struct stat st;
  if (ncs_fio_fstat(R.fd, &st) != 0) goto fail;
  R.dev = st.st_dev;
  R.ino = st.st_ino;
  R.attached_ns = ncs_now_ns();
  /* on /dev/shm a reserved page is memory zeroed at once (6 MiB took ~1.1 ms): the chunk
   * buffer's first BUF_FIRST there, the rest by ncs_rings_buf_grow(); on a disk all of it */
  R.buf_end = R.shm && buf_cap > BUF_FIRST ? page_round(buf_off + BUF_FIRST) : R.hdr_map;
  struct ncs_rings_header *h = map_shared(0, R.hdr_map, R.buf_end, R.buf_end);
  if (!h) goto fail;
  /* a kernel without MADV_POPULATE_WRITE (before 5.14): new rings are reserved a quarter at once */
  if (madvise(h, page_round(1), MADV_POPULATE_WRITE) != 0 && errno == EINVAL) populate_unsupported = 1;
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
  h->pidns = pid_namespace();
  snprintf(h->trace, sizeof h->trace, "%s", trace_path);
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
    if (link_still_ours()) unlink(R.link);
    if (R.path[0]) unlink(R.path);
  }
  R.fd = -1;
  R.path[0] = R.link[0] = 0;
  return -1;
}

uint8_t *ncs_rings_buf(size_t *cap, size_t *reserved) {
  struct ncs_rings_header *h = atomic_load(&R.hdr);
  if (!h) return NULL;
  *cap = h->buf_cap;
  *reserved = R.buf_end - h->buf_offset;
  return (uint8_t *)h + h->buf_offset;
}

size_t ncs_rings_buf_grow(size_t want) {
  struct ncs_rings_header *h = atomic_load(&R.hdr);
  if (!h) return 0;
  size_t end = page_round(h->buf_offset + (want < h->buf_cap ? want : h->buf_cap));
  if (end > R.buf_end && reserve(R.buf_end, end - R.buf_end) == 0) R.buf_end = end;
  return R.buf_end - h->buf_offset;
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

/* The next ring of the file, mapped (no page touched), or NULL. On a disk's file system its
 * blocks are reserved whole (no memory is taken, and a thread's first pass never waits for
 * the writer); on /dev/shm a reserved block is a page of memory, zeroed at once (12 MiB took
 * 1.7-2.3 ms, most of a short process's fixed cost; its first quarter, 3 MiB, was still
 * 0.9 ms of a 10-call process's 2.9), so the ring gets its first window (FIRST_WINDOW
 * records, 96 KiB) there and `limit` at its end, and `grow_to` at its end (/dev/shm has room
 * for its first quarter now): the pagers make the next pages present ahead of the thread and
 * raise the limit (grow_step), and a thread that reaches the limit first makes the next ones
 * present itself (ncs_rings_grow) instead of dropping. Without MADV_POPULATE_WRITE the first
 * quarter is reserved at once, as before. */
static struct ncs_ring *file_ring(void) {
  struct ncs_rings_header *h = atomic_load_explicit(&R.hdr, memory_order_acquire);
  if (!h) return NULL;
  size_t bytes = (size_t)h->ring_bytes; /* the header's sizes: written before it was published */
  uint64_t records = h->ring_records, grow = R.shm && records >= 4096 ? records / SHM_FIRST_RESERVE_DIV : 0;
  uint64_t first = !grow ? records : populate_unsupported ? grow : FIRST_WINDOW;
  size_t reserve = first == records ? bytes : page_round(offsetof(struct ncs_ring, rec) + (size_t)first * sizeof(struct ncs_call));
  size_t room = grow ? page_round(offsetof(struct ncs_ring, rec) + (size_t)grow * sizeof(struct ncs_call)) : reserve;
  uint64_t i = atomic_fetch_add(&h->rings, 1);
  struct ncs_ring *r = i < NCS_MAX_THREADS ? map_shared(h->ring_offset + i * bytes, bytes, reserve, room) : NULL;
  if (!r) return NULL;
  r->file_offset = h->ring_offset + i * bytes;
  atomic_store_explicit(&r->grow_to, first < grow ? records : 0, memory_order_relaxed);
  atomic_store_explicit(&r->limit, first == records ? UINT64_MAX : first, memory_order_relaxed);
  return r;
}

int ncs_rings_grow(struct ncs_ring *r, uint64_t h) {
  uint64_t lim = atomic_load_explicit(&r->limit, memory_order_acquire);
  if (h < lim) return 1; /* raised meanwhile (a pager's step, or the writer reserved the ring) */
  uint64_t to = atomic_load_explicit(&r->grow_to, memory_order_acquire);
  /* not a new ring (grow_to 0), or the writer lifted the limit meanwhile (it clears grow_to
   * first) */
  if (to && lim == to) { /* every page of the ring present (this thread's growth): no limit */
    atomic_compare_exchange_strong_explicit(&r->limit, &lim, UINT64_MAX, memory_order_release, memory_order_acquire);
    return h < atomic_load_explicit(&r->limit, memory_order_acquire);
  }
  if (h >= to || lim > to) return h < atomic_load_explicit(&r->limit, memory_order_acquire);
  /* one step (GROW_STEP records, 48 pages): the pager takes the rest (doubling made an owner
   * that caught up with a late pager or writer populate up to half its ring itself) */
  uint64_t next = lim + GROW_STEP > h + 1 ? lim + GROW_STEP : h + 1;
  if (next > to) next = to;
  long ps = sysconf(_SC_PAGESIZE);
  size_t pg = ps > 0 ? (size_t)ps : 4096;
  size_t a = (offsetof(struct ncs_ring, rec) + (size_t)lim * sizeof(struct ncs_call)) / pg * pg,
         b = (offsetof(struct ncs_ring, rec) + (size_t)next * sizeof(struct ncs_call) + pg - 1) / pg * pg;
  int saved = errno;
  /* a page made present here has its block (memory) in the file, as one the writer reserved;
   * past the first quarter (the room file_ring checked) only while /dev/shm keeps its free
   * share (the job's own segments come first); when it has no block left the populate fails
   * (no SIGBUS); either way the call is dropped, counted */
  int rc = next > to / SHM_FIRST_RESERVE_DIV && !shm_room(NCS_RINGS_SHM_DIR, b - a) ? -1
           : madvise((char *)r + a, b - a, MADV_POPULATE_WRITE);
  errno = saved;
  if (rc != 0) return h < atomic_load_explicit(&r->limit, memory_order_acquire);
  /* this very push wakes the writer (internal.h ncs_ring_push: its head reaches wake_at), which
   * wakes the pagers (or, without them, reserves the rest of the ring); a writer busy at that
   * moment is woken by the next growth */
  if (atomic_compare_exchange_strong_explicit(&r->limit, &lim, next, memory_order_release, memory_order_acquire))
    atomic_store_explicit(&r->wake_at, h + 1, memory_order_relaxed);
  return h < atomic_load_explicit(&r->limit, memory_order_acquire);
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
    atomic_store_explicit(&r->limit, UINT64_MAX, memory_order_relaxed); /* every page has memory */
    atomic_fetch_add(&memory_rings, 1);
  }
  r->mask = ncs_cfg.ring_records - 1;
  return r;
}

uint64_t ncs_rings_in_memory(void) { return atomic_load(&memory_rings); }

/* Punches ring r's bytes [lo, hi) (page-aligned, within the ring) out of the file. */
static void punch(const struct ncs_ring *r, size_t lo, size_t hi) {
  if (hi > lo)
    ncs_fio_fallocate(R.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(r->file_offset + lo), (off_t)(hi - lo));
}

/* Idle ring r, trimmed to the slots [head, head + keep): gives every other page but the header's
 * back to the file system (the trimming's second step: see the contract). */
static void punch_idle(const struct ncs_ring *r, uint64_t records, uint64_t head, uint64_t keep) {
  size_t pg = page_round(1), whole = page_round(offsetof(struct ncs_ring, rec) + (size_t)records * sizeof(struct ncs_call));
  uint64_t a = head & (records - 1), b = a + keep; /* kept slots, b may pass the ring's end */
  size_t ka = (offsetof(struct ncs_ring, rec) + (size_t)a * sizeof(struct ncs_call)) / pg * pg;
  if (b <= records) {
    size_t kb = page_round(offsetof(struct ncs_ring, rec) + (size_t)b * sizeof(struct ncs_call));
    punch(r, pg, ka > pg ? ka : pg);
    punch(r, kb > pg ? kb : pg, whole);
  } else { /* kept: [ka, whole) and the start up to slot b - records */
    size_t kb = page_round(offsetof(struct ncs_ring, rec) + (size_t)(b - records) * sizeof(struct ncs_call));
    punch(r, kb > pg ? kb : pg, ka);
  }
}

/* Giving dead processes' files on /dev/shm back (writer thread): the names found by one scan,
 * then at most MOVE_STEP bytes copied per pass, so the writer's draining never waits long. */
#define MOVE_NAMES 16
#define MOVE_STEP (1u << 20)
static struct {
  int scanned;                     /* 0: not yet; 1: names[] holds what is left to look at */
  uint64_t scanned_ns;             /* when (a long process looks again every LEFTOVERS_EVERY_NS) */
  int full;                        /* that scan found MOVE_NAMES names: there may be more */
  int n;
  char names[MOVE_NAMES][64];
  unsigned long pids[MOVE_NAMES];
  int src, out;                    /* the file being copied and its copy, -1 when none */
  int unnamed;                     /* the copy is an O_TMPFILE file, named `tmp` only once whole */
  const uint8_t *map;
  uint64_t size, off;
  struct stat st;
  char path[sizeof R.path], link[NCS_RINGS_TRACE_MAX + 8], tmp[NCS_RINGS_TRACE_MAX + 32];
} M = {.src = -1, .out = -1};
/* An unnamed copy could not be given its name (no /proc): named copies from then on. */
static int unnamed_refused;

/* Ends the copy in progress; the source is deleted when `done` (copied) or `drop` (no link). A
 * whole unnamed copy gets the name `tmp` here (from then until the rename, the only moment a
 * kill leaves it beside the trace: move_sweep), a partial one vanishes with its descriptor. */
static void move_end(int done, int drop) {
  if (done && M.unnamed) {
    if (ncs_fio_link(M.out, M.tmp) == 0) M.unnamed = 0;
    else {
      if (errno != EEXIST) unnamed_refused = 1;
      done = 0;
    }
  }
  if (M.out >= 0) ncs_fio_close(M.out);
  if (done && rename(M.tmp, M.link) != 0) done = 0;
  if (!done && M.tmp[0] && !M.unnamed) unlink(M.tmp);
  struct stat now;
  if ((done || drop) && lstat(M.path, &now) == 0 && now.st_dev == M.st.st_dev && now.st_ino == M.st.st_ino) unlink(M.path);
  if (M.map) munmap((void *)M.map, (size_t)M.size);
  if (M.src >= 0) ncs_fio_close(M.src);
  M.src = M.out = -1;
  M.map = NULL;
  M.tmp[0] = 0;
  M.unnamed = 0;
}

/* Deletes the copies named `<link>.<pid>.tmp` beside the trace (this user's regular files) whose
 * process is gone or is this one (whose copy is not made yet): left by a kill between an
 * unnamed copy's naming and its rename, by a kill mid-copy where the trace's file system has
 * no O_TMPFILE, or by an earlier shim, which always copied into a named file. */
static void move_sweep(void) {
  char dir[sizeof M.link];
  const char *base = strrchr(M.link, '/') + 1; /* M.link is absolute */
  size_t blen = strlen(base);
  memcpy(dir, M.link, (size_t)(base - M.link));
  dir[base - M.link] = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *num = e->d_name + blen + 1;
    char *end;
    if (strncmp(e->d_name, base, blen) || e->d_name[blen] != '.' || *num < '0' || *num > '9') continue;
    unsigned long pid = strtoul(num, &end, 10);
    if (strcmp(end, ".tmp") || pid == 0 || pid > INT32_MAX) continue;
    if (pid != (unsigned long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* A new unnamed file (O_TMPFILE) in the trace's directory for the copy: nothing of it is seen
 * there until it is whole. -1 where the file system (or the kernel) has none. */
static int open_unnamed(void) {
  char dir[sizeof M.link];
  size_t n = (size_t)(strrchr(M.link, '/') + 1 - M.link);
  memcpy(dir, M.link, n);
  dir[n] = 0;
  int fd = ncs_fio_open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  struct stat st;
  /* anything but a new file (no link, no byte) behind the number is not ours */
  if (fd >= 0 && (ncs_fio_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0)) {
    ncs_fio_close(fd);
    fd = -1;
  }
  return fd;
}

/* The names of this user's rings files on /dev/shm whose process is gone. */
static void move_scan(void) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s%u-", NCS_RINGS_SHM_PREFIX, (unsigned)geteuid());
  size_t plen = strlen(prefix), slen = strlen(NCS_RINGS_SUFFIX);
  M.scanned = 1;
  M.scanned_ns = ncs_now_ns();
  M.n = 0;
  DIR *d = opendir(NCS_RINGS_SHM_DIR);
  if (!d) return;
  struct dirent *e;
  while (M.n < MOVE_NAMES && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    char *end;
    if (len >= sizeof M.names[0] || len <= plen + slen || strncmp(e->d_name, prefix, plen) ||
        strcmp(e->d_name + len - slen, NCS_RINGS_SUFFIX))
      continue;
    unsigned long pid = strtoul(e->d_name + plen, &end, 10);
    if (*end != '-' || pid == 0 || pid == (unsigned long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    M.pids[M.n] = pid;
    memcpy(M.names[M.n++], e->d_name, len + 1);
  }
  M.full = M.n == MOVE_NAMES;
  closedir(d);
}

/* Opens the next name: decides to delete it (its link is gone, or its process died before it
 * wrote the header: nothing in it to read), to copy it (M.src set), or to leave it (not this
 * user's, another pid namespace's, not a rings file). */
static void move_next(void) {
  const char *name = M.names[--M.n];
  uint64_t ns = pid_namespace();
  unsigned long pid = M.pids[M.n];
  snprintf(M.path, sizeof M.path, "%s/%s", NCS_RINGS_SHM_DIR, name);
  M.src = ncs_fio_open(M.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
  struct ncs_rings_header h;
  if (M.src < 0 || !ns || ncs_fio_fstat(M.src, &M.st) != 0 || !S_ISREG(M.st.st_mode) || M.st.st_uid != geteuid())
    goto leave;
  /* killed between creating it and writing its header (the name is ours, its pid gone) */
  if ((uint64_t)M.st.st_size < sizeof h) { move_end(0, 1); return; }
  M.size = (uint64_t)M.st.st_size;
  M.map = ncs_fio_mmap((size_t)M.size, PROT_READ, MAP_SHARED, M.src, 0);
  if (M.map == MAP_FAILED) { M.map = NULL; goto leave; }
  madvise((void *)M.map, (size_t)M.size, MADV_DONTFORK);
  memcpy(&h, M.map, sizeof h);
  h.trace[sizeof h.trace - 1] = 0;
  static const char unwritten[8];
  if (!memcmp(h.magic, unwritten, 8)) { move_end(0, 1); return; }
  if (memcmp(h.magic, NCS_RINGS_MAGIC, 8) || h.pid != pid || h.pidns != ns) goto leave;
  char to[sizeof R.path];
  ssize_t n = -1;
  if (h.trace[0] == '/' && snprintf(M.link, sizeof M.link, "%s%s", h.trace, NCS_RINGS_SUFFIX) < (int)sizeof M.link)
    n = readlink(M.link, to, sizeof to - 1);
  if (n >= 0) to[n] = 0;
  if (n < 0 || strcmp(to, M.path) != 0) { move_end(0, 1); return; } /* nothing leads here any more */
  if (snprintf(M.tmp, sizeof M.tmp, "%s.%u.tmp", M.link, (unsigned)getpid()) >= (int)sizeof M.tmp) {
    M.tmp[0] = 0;
    goto leave;
  }
  move_sweep();
  M.out = unnamed_refused ? -1 : open_unnamed();
  M.unnamed = M.out >= 0;
  if (M.out < 0 && (M.out = ncs_fio_open(M.tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
    M.tmp[0] = 0;
    goto leave;
  }
  M.off = 0;
  return;
leave:
  move_end(0, 0);
}

/* One step of giving dead processes' files back: at most MOVE_STEP bytes copied. */
static void move_leftovers(void) {
  if (!M.scanned) move_scan();
  if (M.src < 0) {
    if (M.n > 0) move_next();
    return;
  }
  static const uint8_t zero[65536];
  for (uint64_t end = M.off + MOVE_STEP; M.off < M.size && M.off < end; M.off += sizeof zero) {
    size_t n = M.size - M.off < sizeof zero ? (size_t)(M.size - M.off) : sizeof zero;
    if (memcmp(M.map + M.off, zero, n) != 0 && ncs_fio_pwrite(M.out, M.map + M.off, n, (off_t)M.off) != (ssize_t)n) {
      move_end(0, 0);
      return;
    }
  }
  if (M.off >= M.size) move_end(ncs_fio_ftruncate(M.out, (off_t)M.size) == 0, 0);
}

/* Reserves the blocks of ring r's slots [a, b), its header's page with slot 0's (before its
 * first wrap, or the whole ring); 0, or -1 when the file system cannot now. */
static int reserve_slots(const struct ncs_ring *r, uint64_t a, uint64_t b) {
  size_t pg = page_round(1), lo = (offsetof(struct ncs_ring, rec) + (size_t)a * sizeof(struct ncs_call)) / pg * pg,
         hi = page_round(offsetof(struct ncs_ring, rec) + (size_t)b * sizeof(struct ncs_call));
  return reserve(r->file_offset + lo, hi - lo);
}

/* How many records ahead of a ring's head its pages are made present: FIRST_WINDOW, then
 * WINDOW_MUL times what the ring has taken, at most half the ring; so a thread that makes few
 * calls costs few pages. */
static uint64_t window_ahead(uint64_t head, uint64_t records) {
  uint64_t w = head < FIRST_WINDOW ? FIRST_WINDOW : head * WINDOW_MUL;
  return w > records / WINDOW_DIV ? records / WINDOW_DIV : w;
}

/* A growing ring (a new ring on /dev/shm: file_ring) reserved whole: then no limit, and it is
 * tended (populated ahead of its head, trimmed when idle) as any other. 0, or -1 when the file
 * system cannot now. Writer thread, with P.mu held while the pager runs (a step of the pager's
 * must never raise a limit this lifted and a trim lowered since). */
static int reserve_whole(int i, struct ncs_ring *r, uint64_t records) {
  if (!atomic_load_explicit(&r->grow_to, memory_order_relaxed)) return 0;
  if (reserve_slots(r, 0, records) != 0) return -1;
  atomic_store_explicit(&r->grow_to, 0, memory_order_relaxed);
  atomic_store_explicit(&r->limit, UINT64_MAX, memory_order_release);
  /* the reservation took a while: pages from the head on */
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  if (tended[i].populated < head) tended[i].populated = head;
  tended[i].base = head;
  return 0;
}

/* Raises `limit` to `to` (never lowers it: the owner's own growth may have raised it). */
static void raise_limit(struct ncs_ring *r, uint64_t to) {
  uint64_t lim = atomic_load_explicit(&r->limit, memory_order_acquire);
  while (lim < to && !atomic_compare_exchange_weak_explicit(&r->limit, &lim, to, memory_order_release, memory_order_acquire)) {
  }
}

/* The pager: a thread of the shim's (every signal blocked, a 64 KiB stack, no descriptor: its
 * only system calls are madvise, statfs/statvfs and futex) that makes a growing ring's pages
 * present ahead of its owner, so that neither the owner (a page fault, ~1.6 us, or its own
 * populating) nor the writer (whose drains it would delay) does. Started by the writer the
 * first time a growing ring's owner passes half its first window (a process whose threads
 * make fewer calls never has one); where it cannot start, the writer reserves such a ring
 * whole at FIRST_WINDOW calls and populates ahead of it, as for any ring. */
static struct {
  pthread_mutex_t mu[NCS_MAX_THREADS]; /* per ring slot: held by a step, and by the writer's
                                        * reserve_whole of a growing ring */
  _Atomic uint32_t word;    /* futex word: bumped by the writer when a growing ring wants pages */
  _Atomic int waiting;      /* the pager sleeps on `word` */
  _Atomic int state;        /* 0 not started, 1 running, -1 could not start (this process) */
} P;
#define PAGER_STACK (64u << 10)
/* Two: a page costs its maker ~0.85 us of CPU, and on a busy machine each runnable thread gets
 * its share; one pager kept up with fewer of 4 tight-looping owners' pages (first4 at load 5-8:
 * 5,370 pages left to the owners in the median, against 2,920 with two: BENCHMARKS.md, 4343dbd) */
#define PAGERS 2
/* While a growing ring's owner records, the pager looks again PAGER_POLL_NS after a look that
 * made a step, and twice as long after one that found every window made, up to
 * PAGER_POLL_MAX_NS: an owner at 1 k calls/s has its window long before it needs it, and looks
 * at 1 kHz cost such a process 5-15 ms of CPU a second (2 threads, 1 k calls/s each, 5 s: the
 * writer's and pagers' CPU 36-86 ms against 9-10 ms without pagers) */
#define PAGER_POLL_NS 1000000L
#define PAGER_POLL_MAX_NS 64000000L

/* One step of growing ring r: the pages of slots [limit, limit + GROW_STEP) made present, then
 * the limit raised (the owner records into them at once); a page made present reserves its
 * block, or the populate fails (a full tmpfs) where a store would have raised SIGBUS; past the
 * first quarter only while /dev/shm keeps its free share. Once every page is present: no
 * limit. 0, or -1 when the step could not be made (not growing any more, no room). */
static int grow_step(int i, struct ncs_ring *r, uint64_t records) {
  int rc = -1;
  if (pthread_mutex_trylock(&P.mu[i]) != 0) return 1; /* the other pager's, or the writer's */
  uint64_t lim = atomic_load_explicit(&r->limit, memory_order_acquire);
  if (!atomic_load_explicit(&r->grow_to, memory_order_relaxed) || lim >= records) goto out;
  size_t pg = page_round(1);
  uint64_t next = lim + GROW_STEP < records ? lim + GROW_STEP : records;
  size_t a = (offsetof(struct ncs_ring, rec) + (size_t)lim * sizeof(struct ncs_call)) / pg * pg,
         b = page_round(offsetof(struct ncs_ring, rec) + (size_t)next * sizeof(struct ncs_call));
  if ((next > records / SHM_FIRST_RESERVE_DIV && !shm_room(NCS_RINGS_SHM_DIR, b - a)) ||
      madvise((char *)r + a, b - a, MADV_POPULATE_WRITE) != 0)
    goto out;
  raise_limit(r, next);
  if (next == records) { /* every page present: as if reserved whole */
    atomic_store_explicit(&r->grow_to, 0, memory_order_relaxed);
    atomic_store_explicit(&r->limit, UINT64_MAX, memory_order_release);
  }
  rc = 0;
out:
  pthread_mutex_unlock(&P.mu[i]);
  return rc;
}

/* The growing ring whose owner is nearest its limit among those whose window (window_ahead)
 * passes their limit (skip[i] set: a step failed since the last wake-up); NULL when none.
 * *moving: the head of a ring past half its first window, still growing, moved since the last
 * look (seen[], kept by the caller): its owner is recording. */
static struct ncs_ring *pager_pick(const char *skip, int *bi, int *moving, uint64_t *seen) {
  struct ncs_ring *best = NULL;
  uint64_t best_margin = UINT64_MAX;
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!r || !atomic_load_explicit(&r->grow_to, memory_order_relaxed)) continue;
    uint64_t records = (uint64_t)r->mask + 1, head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t limit = atomic_load_explicit(&r->limit, memory_order_relaxed);
    if (head < FIRST_WINDOW / 2 || limit >= records) continue;
    if (head != seen[i]) *moving = 1;
    seen[i] = head;
    if (skip[i] || head + window_ahead(head, records) <= limit) continue;
    uint64_t margin = limit > head ? limit - head : 0;
    if (margin < best_margin) {
      best = r;
      best_margin = margin;
      *bi = i;
    }
  }
  return best;
}

static void *pager_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "ncclscope-pg");
  uint64_t heads[NCS_MAX_THREADS] = {0};
  long poll = PAGER_POLL_NS;
  for (;;) {
    uint32_t seen = atomic_load_explicit(&P.word, memory_order_acquire);
    char skip[NCS_MAX_THREADS] = {0};
    int moving = 0, bi = -1, steps = 0;
    struct ncs_ring *r;
    while ((r = pager_pick(skip, &bi, &moving, heads)) != NULL) {
      int rc = grow_step(bi, r, (uint64_t)r->mask + 1);
      if (rc < 0) skip[bi] = 1;
      else if (rc > 0) skip[bi] = 2; /* another thread on it: the others first */
      else {
        steps++;
        for (int i = 0; i < NCS_MAX_THREADS; i++) skip[i] = skip[i] == 1;
      }
    }
    /* back in `poll` while a growing ring's owner records (PAGER_POLL_NS), else when the writer
     * calls (an idle process's pagers never wake) */
    poll = steps ? PAGER_POLL_NS : poll < PAGER_POLL_MAX_NS / 2 ? poll * 2 : PAGER_POLL_MAX_NS;
    struct timespec ts = {poll / 1000000000L, poll % 1000000000L};
    atomic_fetch_add(&P.waiting, 1);
    syscall(SYS_futex, &P.word, FUTEX_WAIT_PRIVATE, seen, moving ? &ts : NULL, NULL, 0);
    atomic_fetch_sub(&P.waiting, 1);
  }
  return NULL;
}

/* Writer thread: wakes the pager (starting it the first time); 0, or -1 when there is none. */
static int pager_kick(void) {
  int st = atomic_load(&P.state);
  if (st < 0) return -1;
  if (st == 0) {
    pthread_attr_t a;
    pthread_t th;
    sigset_t all, old;
    if (pthread_attr_init(&a) != 0) goto fail;
    for (int i = 0; i < NCS_MAX_THREADS; i++) pthread_mutex_init(&P.mu[i], NULL);
    pthread_attr_setstacksize(&a, PAGER_STACK);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&th, &a, pager_main, NULL);
    for (int k = 1; rc == 0 && k < PAGERS; k++) pthread_create(&th, &a, pager_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0) goto fail;
    atomic_store(&P.state, 1);
    return 0;
  }
  atomic_fetch_add_explicit(&P.word, 1, memory_order_seq_cst);
  if (atomic_load(&P.waiting)) syscall(SYS_futex, &P.word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
  return 0;
fail:
  ncs_debug("no pager thread: the writer makes the rings' pages present");
  atomic_store(&P.state, -1);
  return -1;
}

int ncs_rings_tend(uint64_t now_ns) {
  if (atomic_load_explicit(&spare_wanted, memory_order_relaxed) && now_ns - R.attached_ns >= SPARE_AFTER_NS) make_spare();
  /* off the activation path, and not in a short process (the scan of /dev/shm alone can be
   * a millisecond: a 10-call process's fixed cost) */
  if (R.shm && now_ns - R.attached_ns >= LEFTOVERS_AFTER_NS) {
    /* again at once when the last scan filled its names (more may be there), else a minute on */
    if (M.scanned && M.n == 0 && M.src < 0 && (M.full || now_ns - M.scanned_ns >= LEFTOVERS_EVERY_NS)) M.scanned = 0;
    if (!M.scanned || M.n > 0 || M.src >= 0) move_leftovers();
  }
  /* without a pager, every new ring's whole reservation before any ring's pages: it must not
   * wait behind another ring's window (a populate of up to half a ring) */
  for (int i = 0; i < NCS_MAX_THREADS && atomic_load(&P.state) < 0; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (r && atomic_load_explicit(&r->grow_to, memory_order_relaxed) &&
        atomic_load_explicit(&r->head, memory_order_acquire) >= FIRST_WINDOW)
      reserve_whole(i, r, (uint64_t)r->mask + 1);
  }
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!r) continue;
    uint64_t records = (uint64_t)r->mask + 1, idle_win = records / NCS_WAKE_FRACTION;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t limit = atomic_load_explicit(&r->limit, memory_order_relaxed);
    uint64_t win = window_ahead(head, records);
    /* a new ring on /dev/shm, reserved up to its limit only (file_ring) */
    uint64_t growing = atomic_load_explicit(&r->grow_to, memory_order_relaxed);
    if (tended[i].ring != r) { /* a ring new to this slot: its pages from the head on */
      tended[i].ring = r;
      tended[i].populated = tended[i].base = head;
      tended[i].head = head;
      tended[i].since = tended[i].trim_at = now_ns;
      /* a ring trimmed before (a slot used again), or reserved a quarter at first (a kernel
       * without MADV_POPULATE_WRITE) */
      tended[i].trimmed = limit != UINT64_MAX && !growing ? 2 : 0;
      /* a limit before the ring's first wrap (a ring growing from its start on /dev/shm, or
       * trimmed then) grows once its thread has made FIRST_WINDOW calls (a short-lived thread
       * never costs the whole ring, a busy one gets it at once); a later one when the head
       * passes half-way to it */
      tended[i].keep = limit == UINT64_MAX || limit <= head ? 0
                       : limit > records ? limit - head
                       : limit > FIRST_WINDOW ? 2 * (limit - FIRST_WINDOW) : limit;
    }
    if (tended[i].trimmed == 1 && head != tended[i].head) { /* active again, nothing punched yet */
      atomic_store_explicit(&r->limit, limit = UINT64_MAX, memory_order_relaxed);
      tended[i].trimmed = 0;
      tended[i].populated = tended[i].base = head;
    }
    /* past half its window: before the ring's first wrap four times as many slots reserved
     * (a ring growing on /dev/shm), else (or once that reaches the end) the whole ring's
     * blocks, then no limit (while the file system has no room, the owner drops what passes
     * the limit, counted) */
    if (tended[i].trimmed == 2 && head + tended[i].keep / 2 >= limit) {
      uint64_t next = limit <= records / 4 ? limit * 4 : records;
      if (next < records) {
        if (reserve_slots(r, limit, next) == 0) {
          atomic_store_explicit(&r->limit, limit = next, memory_order_relaxed);
          tended[i].keep = next;
        }
      } else if (reserve_slots(r, 0, records) == 0) {
        atomic_store_explicit(&r->limit, limit = UINT64_MAX, memory_order_relaxed);
        tended[i].trimmed = 0;
        /* the reservation took a while (a tmpfs zeroes what it reserves): the head has moved
         * on, and a wake-up set behind it would never come */
        head = atomic_load_explicit(&r->head, memory_order_acquire);
        win = window_ahead(head, records);
        if (tended[i].populated < head) tended[i].populated = head;
        tended[i].base = head;
      }
    }
    if (head != tended[i].head) {
      tended[i].head = head;
      tended[i].since = now_ns;
    }
    if (growing && atomic_load(&P.state) >= 0) {
      /* growing, its pages made present by the pager (every page below the limit is): the
       * owner wakes this thread half-way to the limit, which wakes the pager; idle for
       * IDLE_TRIM_NS past its first window, the whole ring reserved, so that it is
       * trimmed as any other */
      uint64_t got = atomic_load_explicit(&r->limit, memory_order_acquire);
      tended[i].populated = got < records ? got : records;
      tended[i].base = 0;
      if (head >= FIRST_WINDOW / 2) {
        if (head >= FIRST_WINDOW && now_ns - tended[i].since >= IDLE_TRIM_NS) {
          pthread_mutex_lock(&P.mu[i]);
          reserve_whole(i, r, records);
          pthread_mutex_unlock(&P.mu[i]);
        } else if (got < records && head + win > got && pager_kick() != 0) {
          continue; /* no pager: reserved whole at the next pass */
        }
      }
      if (atomic_load_explicit(&r->grow_to, memory_order_relaxed)) {
        if (got > head) wake_half_way(r, head, got);
        continue;
      }
      limit = atomic_load_explicit(&r->limit, memory_order_relaxed);
      growing = 0;
    }
    /* every pass over the ring: a page populated last pass may have been written back
     * (read-only) since; on a tmpfs, or in process memory, never: once every page is present,
     * nothing is left to do. Never past the limit (those pages may have no blocks). */
    uint64_t from = tended[i].populated > head ? tended[i].populated : head, to = head + win < limit ? head + win : limit;
    int kept_present = (R.shm || (r->flags & NCS_RING_F_MEMORY)) && tended[i].populated >= tended[i].base &&
                       tended[i].populated - tended[i].base >= records;
    if (tended[i].trimmed != 1 && !kept_present && to > from && populate(r, records, from, to) == 0) {
      tended[i].populated = to;
      wake_half_way(r, head, to);
    }
    if (tended[i].trimmed == 1 && now_ns - tended[i].trim_at >= PUNCH_AFTER_NS && fd_still_ours() &&
        atomic_load_explicit(&r->head, memory_order_seq_cst) == head) {
      punch_idle(r, records, head, tended[i].keep);
      tended[i].trimmed = 2;
    }
    if (!tended[i].trimmed && !growing && now_ns - tended[i].since >= IDLE_TRIM_NS && !(r->flags & NCS_RING_F_MEMORY) &&
        atomic_load_explicit(&r->tail, memory_order_relaxed) == head) {
      uint64_t keep = idle_win < win ? idle_win : win;
      /* the owner records no further than the window from now on, or the ring stays whole */
      atomic_store_explicit(&r->limit, head + keep, memory_order_seq_cst);
      if (atomic_load_explicit(&r->head, memory_order_seq_cst) != head) {
        atomic_store_explicit(&r->limit, UINT64_MAX, memory_order_relaxed);
        continue;
      }
      /* drop the mappings of every page but the header's and the window's (their contents stay
       * in the file until the punch; a page the owner reaches again is populated again) */
      size_t pg = page_round(1), whole = page_round(offsetof(struct ncs_ring, rec) + (size_t)records * sizeof(struct ncs_call));
      madvise((char *)r + pg, whole - pg, MADV_DONTNEED);
      populate(r, records, head, head + keep);
      wake_half_way(r, head, head + keep);
      tended[i].populated = head + keep;
      tended[i].keep = keep;
      tended[i].trimmed = 1;
      tended[i].trim_at = now_ns;
    }
  }
  return R.shm && (M.n > 0 || M.src >= 0); /* a move in progress: its next step */
}

/* The wake-ups ncs_rings_arm replaced, per ring slot: the value it stored (0: not armed) and
 * the one that was there. Writer thread only. */
static uint64_t armed_at[NCS_MAX_THREADS], armed_was[NCS_MAX_THREADS];

int ncs_rings_arm(void) {
  int rc = 0;
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!r || armed_at[i]) continue;
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (h != atomic_load_explicit(&r->tail, memory_order_relaxed)) { rc = -1; continue; }
    armed_was[i] = atomic_load_explicit(&r->wake_at, memory_order_relaxed);
    armed_at[i] = h + 1;
    atomic_store_explicit(&r->wake_at, h + 1, memory_order_seq_cst);
    /* a push between the two loads may not have seen the new wake_at: no long sleep (a push
     * whose store of the head this load misses while it read the old wake_at is not seen
     * either: its record waits for the heartbeat, in the ring, where a reader recovers it) */
    if (atomic_load_explicit(&r->head, memory_order_seq_cst) != h) rc = -1;
  }
  return rc;
}

void ncs_rings_disarm(void) {
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    if (!armed_at[i]) continue;
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    uint64_t want = armed_at[i];
    /* the replaced wake-up, when still ahead of the head and nobody set another since (the
     * owner's ncs_rings_grow) */
    if (r && armed_was[i] > atomic_load_explicit(&r->head, memory_order_acquire))
      atomic_compare_exchange_strong_explicit(&r->wake_at, &want, armed_was[i], memory_order_relaxed, memory_order_relaxed);
    armed_at[i] = 0;
  }
}

void ncs_rings_remove(void) {
  struct stat st;
  /* a dead process's file being given back: its partial copy goes (the next process starts
   * over; left, every process that ended mid-copy left one next to that trace) */
  if (M.src >= 0 || M.out >= 0) move_end(0, 0);
  /* by name: the name must still lead to the file this process created (the application may
   * have closed our descriptor; the mapping keeps the file alive either way) */
  if (link_still_ours()) unlink(R.link);
  if (R.path[0] && lstat(R.path, &st) == 0 && st.st_dev == R.dev && st.st_ino == R.ino)
    unlink(R.path);
  R.path[0] = R.link[0] = 0;
}

void ncs_rings_atfork_child(void) {
  /* the mappings are not in this process (MADV_DONTFORK); the descriptor is the parent's file
   * thread's (not here), or the parent's file in the table this child inherited */
  if (R.fd >= 0 && !ncs_fio_atfork_child() && fd_still_ours()) close(R.fd);
  R.fd = -1;
  atomic_store(&R.hdr, NULL);
  R.path[0] = R.link[0] = 0;
  R.shm = 0;
  memset(&M, 0, sizeof M); /* the parent's copy in progress is not this child's (never closed here) */
  M.src = M.out = -1;
  atomic_store(&memory_rings, 0);
  atomic_store(&spare, NULL);
  atomic_store(&spare_wanted, 0);
  memset(tended, 0, sizeof tended);
  memset(armed_at, 0, sizeof armed_at);
  /* the parent's pager is not in this process (its lock may have been held at the fork) */
  for (int i = 0; i < NCS_MAX_THREADS; i++) pthread_mutex_init(&P.mu[i], NULL);
  atomic_store(&P.word, 0);
  atomic_store(&P.waiting, 0);
  atomic_store(&P.state, 0);
}
