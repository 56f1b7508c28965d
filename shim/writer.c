/* writer.c — the writer thread: drains the per-thread rings and the record queue, encodes
 * (ncclscope/encode.h), compresses and appends one chunk per flush to the process's file.
 *
 * Contract:
 *   - Started at activation (the first recorded NCCL call), never by the constructor. Runs
 *     with every signal blocked (so a SIGXFSZ from write(2) stays pending on it and write
 *     returns EFBIG). Creates `<dir>/<host>-<pid>.ncs` with O_CREAT|O_EXCL|O_NOFOLLOW, mode
 *     0600 (suffix -1, -2, ... when the name exists); the directory, if created, 0700.
 *   - It sleeps until a ring reaches an eighth of its size or its wake_at (internal.h), a record
 *     that must not wait (COMM, COMM_END, a queue an eighth full), a request (sync, stop, exec)
 *     or the next flush; it comes back within 1 ms while a ring was found over a quarter full,
 *     10 ms while a collector holds work (GPU events pending). Each pass moves ring records into
 *     the chunk being built; every flush period
 *     (NCCLSCOPE_FLUSH_MS, default 500 ms) or when the chunk passes 4 MiB raw, it writes the
 *     chunk through ncs_chunk_pack (chunk.h: a column payload, or one zstd frame of the rows;
 *     one reused ZSTD_CCtx, level 3) behind its header (a chunk past NCS_CHUNK_COLUMNS_MAX,
 *     written as rows, holds its runs of like calls as CALL_RUN records, each closed within
 *     the batch that opened it, and is compressed while it fills by rowzip.c's helper thread
 *     at level 1 instead; its KERNEL records are left out of that frame and follow it, in the
 *     same write, as a column chunk of their own flagged `kernels`, format 5.7: kernels_apart),
 *     appended with pwrite at the end of the last good chunk, so a failed or short write is
 *     overwritten by the next chunk and the file stays a sequence of whole chunks.
 *   - A chunk that cannot be written (EIO, ENOSPC, EFBIG, no file) counts its records as
 *     dropped (reason 3; its calls also as reason 7 when the file system was full); the job
 *     never sees the error. The file keeps RESERVE bytes allocated past its end (fallocate,
 *     FALLOC_FL_KEEP_SIZE): a chunk is written only once its bytes and the reserve are
 *     allocated, so a full disk fails there, never halfway, and the final chunk, or when it does
 *     not fit a short one with the drop counts, always has room: every call the job made is in
 *     the trace or counted as lost. The reserve is released after the final chunk.
 *   - ncs_emit() copies a record into a mutex-protected queue (capped at 4 MiB; beyond that it
 *     drops and counts, reason 4). Queue records go before the ring records of the same drain,
 *     split over chunks at the flush size like them (a CUPTI poll's kernels can be megabytes).
 *   - ncs_writer_sync() writes a chunk now and returns when it is written (bounded wait); the
 *     writer carries on. At CommDestroy/CommAbort (a process may leave with _exit() right
 *     after) it first collects GPU times (waiting at most 100 ms); at exit (atexit, while CUDA
 *     is still up) at most 500 ms, and then turns GPU timing off.
 *   - ncs_writer_stop() (the destructor) asks for a final chunk with the FINAL flag and waits at most
 *     the given time. Memory: the queue cap, a 6 MiB raw buffer and its compression bound, and
 *     a 6 MiB mapping where a row chunk's KERNEL records are gathered (touched only as far as
 *     they fill it, made at the first such chunk).
 *   - Idle (format.h NCS_IDLE_BEAT_MS): after a chunk that is a heartbeat alone (a CLOCK: no
 *     call, no record, nothing in flight), the next heartbeat comes NCS_IDLE_BEAT_MS (2 s) later;
 *     meanwhile the first push on any ring (ncs_rings_arm) and any record (ncs_emit) wake the
 *     writer, and what they brought is written within a flush period. A process stuck inside
 *     a call keeps the flush period (its INFLIGHT records make the chunk no heartbeat alone).
 *     Such a heartbeat, written on the writer's own time (no sync, stop or exec waits for it),
 *     is posted to the file thread (fileio.h ncs_fio_post_pwrite_if) and the writer sleeps at
 *     once; the answer is taken first thing at its next pass (settle_beat), which finishes the
 *     chunk as a synchronous write does: one wake-up of the writer per heartbeat, not two.
 *   - Each pass makes the rings' next pages present (ncs_rings_tend) before it drains them; the
 *     thread asks the kernel for the shortest time slice (writer_short_slice), so that it runs
 *     soon after a wake-up on a busy machine, its CPU share unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "fileio.h"
#include "hooks.h"
#include "ncclscope/chunk.h"
#include "internal.h"

const char *ncs_host_name(void);

#define RAW_CAP (6u << 20)
#define RAW_FLUSH (4u << 20)
#define RAW_FLUSH_MIN (128u << 10) /* bounded mode's smallest (above the writer's 64 KiB of room) */
#define RAW_SLACK (64u << 10) /* kept writable above a chunk's flush point: the small records
                                 (clock, drops, in flight, thread) written past it */
#define QUEUE_CAP (4u << 20)
#define GPU_POLL_MS 10 /* while GPU events are pending */
#define EXEC_GPU_DRAIN_MS 100 /* before an exec: GPU times collected for at most this long */
#define ZSTD_LEVEL 3
/* the large row chunks of high call rates (rowzip.c): mostly CALL_RUN times, which level 1
 * packs nearly as small as level 3 (3 % more bytes) for a quarter less CPU (BENCHMARKS.md,
 * `levels`) */
#define ROWZIP_LEVEL 1
#define DEFS_CAP (2u << 20)
#define RING_BATCH 1024u /* ring records encoded between two publications of the tail */
#define PREFETCH_AHEAD 8u /* ring slots read ahead of the one being encoded */
#define SEG_MAX 64 /* segments kept at most (bounded mode): about 5 are, a segment being a quarter of the bound */
#define STICKY_CAP (2u << 20)
#define RESERVE (16u << 10) /* kept allocated past the file's end for the final chunk (a short one: about 0.5 KiB, PROCESS included) */
#define RESERVE_AHEAD (64u << 10) /* allocated beyond that at a time (unbounded traces) */
#define QP_MAX 1024u /* queue pieces of a chunk looked at for KERNEL records (more: left in the rows) */
#define KR_MAX 1024u /* runs of KERNEL records a row chunk sets apart (more: left in the rows) */

/* ---- the record queue (ncs_emit) ---- */
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int w_idle; /* the writer sleeps a heartbeat period (NCS_IDLE_BEAT_MS): every record wakes it */
static uint8_t *q_buf;
static size_t q_len, q_cap;
static uint32_t q_records;
static int q_urgent;      /* the queue holds a COMM/COMM_END record or is 1/8 full */

/* drops that belong to no ring, by reason (index = enum ncs_drop_reason) */
static _Atomic uint64_t loose_drops[NCS_DROP_REASON_LIMIT];
static uint64_t loose_reported[NCS_DROP_REASON_LIMIT];

void ncs_writer_count_drop(unsigned reason, uint64_t n) {
  if (reason < NCS_DROP_REASON_LIMIT) atomic_fetch_add_explicit(&loose_drops[reason], n, memory_order_relaxed);
}

int ncs_emit(uint32_t type, const void *body, size_t len) {
  uint8_t hdr[20];
  size_t h = ncs_put_varint(hdr, type);
  h += ncs_put_varint(hdr + h, len);
  int rc = -1, wake = 0;
  pthread_mutex_lock(&q_mu);
  size_t need = q_len + h + len;
  /* wake the writer for a busy producer (PROFILE) and for the records that give calls their
   * meaning (not left in process memory for long), and for any record while it sleeps a
   * heartbeat period (w_idle): a queue record waits no longer than a flush period */
  wake = (q_len < QUEUE_CAP / 8 && need >= QUEUE_CAP / 8) || type == NCS_REC_COMM || type == NCS_REC_COMM_END ||
         atomic_load_explicit(&w_idle, memory_order_seq_cst);
  if (need <= QUEUE_CAP) {
    if (need > q_cap) {
      size_t nc = q_cap ? q_cap : 65536;
      while (nc < need) nc *= 2;
      if (nc > QUEUE_CAP) nc = QUEUE_CAP;
      uint8_t *nb = realloc(q_buf, nc);
      if (nb) { q_buf = nb; q_cap = nc; }
    }
    if (need <= q_cap) {
      memcpy(q_buf + q_len, hdr, h);
      if (len) memcpy(q_buf + q_len + h, body, len);
      q_len = need;
      q_records++;
      q_urgent |= wake;
      rc = 0;
    }
  }
  pthread_mutex_unlock(&q_mu);
  if (rc) ncs_writer_count_drop(NCS_DROP_NO_MEMORY, 1);
  if (rc == 0 && wake && atomic_load_explicit(&ncs_writer_sleeping, memory_order_seq_cst))
    ncs_writer_wake();
  return rc;
}

/* ---- the writer's state ---- */
struct writer {
  pthread_t th;
  int started;
  int fd;                  /* the trace file, moved high; -1: none (or no longer ours: never touched) */
  char path[768];          /* its name, to reopen it when the descriptor is taken from us */
  int reopened;            /* the next chunk goes through a reopened descriptor: flag it */
  unsigned fd_lost;        /* times the descriptor stopped being the trace's */
  off_t good_off;          /* end of the last whole chunk */
  off_t high_off;          /* end of the furthest bytes ever written (a partial chunk) */
  off_t reserved_end;      /* blocks allocated up to here (reserve(); 0 when not known) */
  uint64_t chunk_index, dropped_total;
  uint64_t calls;          /* calls in the chunk being built (ring slots encoded) */
  int quiet;               /* the last chunk flushed was a heartbeat alone: a CLOCK, nothing in flight */
  size_t beat_out;         /* bytes of a heartbeat whose write is posted, not collected (0: none; settle_beat) */
  uint64_t chunk_drops[NCS_DROP_REASON_LIMIT]; /* what the chunk's DROP records count, by reason */
  uint64_t carry[NCS_DROP_REASON_LIMIT]; /* drops to write again: the DROP records of lost chunks,
                                            and the lost chunks themselves (3: records, 7: calls) */
  int disk_full;           /* the last chunk was lost to a full file system */
  int process_written;
  int defs_lost;           /* a lost chunk held definitions: write them all again */
  struct ncs_wbuf raw;
  uint32_t records;
  struct ncs_call_delta delta;
  struct ncs_call_run run;  /* the last CALL, for a run of like calls (encode.h) */
  uint8_t *cbuf;
  size_t ccap;
  ZSTD_CCtx *cctx;
  int raw_mapped;           /* raw.buf is the rings file's chunk buffer (else its own mapping) */
  int raw_stuck;            /* the rings file's buffer could not grow: not tried again this chunk */
  /* raw.cap is the ONE bound of every write into raw.buf: RAW_CAP in process memory or on a
   * disk; on /dev/shm what the rings file has reserved (a store past it could SIGBUS the job
   * on a full tmpfs), grown by raw_fits() as the chunk fills */
  int zipping;              /* the chunk is large: rowzip.c compresses it as it grows */
  /* A row chunk's KERNEL records go into a column chunk of their own, written right after it
   * (kernels_apart): the queue's pieces in the chunk buffer, and the runs of KERNEL records
   * left out of the rows' frame (offsets in the chunk buffer) */
  struct ncs_wpiece { uint32_t off, len; } qp[QP_MAX];
  unsigned nqp, qp_seen;
  struct ncs_wkrun { uint32_t off, len, records; } kr[KR_MAX];
  unsigned nkr;
  size_t kr_bytes;
  uint32_t kr_records;
  uint8_t *kbuf;            /* those runs gathered (RAW_CAP, mapped at the first use) */
  int kernels_seen;         /* a row chunk held KERNEL records: the next ones' frames are begun
                               in pieces (rowzip.c; before, read in place: a process without
                               kernel activity, the stub-NCCL bench, keeps that) */
  uint8_t *qspare;          /* swapped with q_buf at each drain */
  size_t qspare_cap;
  /* bounded mode (NCCLSCOPE_KEEP): the file's segments still kept, oldest first */
  struct { off_t off; uint64_t t0, t_last; } seg[SEG_MAX];
  unsigned nseg;
  off_t first_kept;         /* where the kept chunks start (the header's FIRST_KEPT) */
  uint64_t last_chunk;      /* bytes of the last chunk written: what the next may add */
  off_t prev_off;           /* where it starts */
  uint64_t seg_chunk;       /* bytes of the last SEGMENT chunk */
  size_t raw_flush;         /* a chunk is written once its rows pass this: RAW_FLUSH, or an eighth
                               of NCCLSCOPE_KEEP's size when less, at least RAW_FLUSH_MIN */
  int keep_stuck;           /* the file system cannot punch holes: chunks past the bound are lost */
  uint64_t cum_drops[NCS_DROP_REASON_LIMIT]; /* every drop so far, by reason (a segment's DROP records) */
};
static struct writer *W;
static struct writer *self; /* the writer thread's own (ncs_writer_put_*) */
static const struct ncs_collector_table *collectors; /* handed over by state.c before start */

void ncs_writer_set_collectors(const struct ncs_collector_table *t) { collectors = t; }

/* What producers hand over for the file as a whole: the PROCESS record (state.c, at
 * activation, before the writer starts) and the definitions later records refer to (writer
 * thread only), kept to be written again after a lost chunk. */
static uint8_t *process_rec;
static size_t process_len;
static struct { uint8_t *buf; size_t len, cap; uint32_t records; } defs;
/* Bounded mode: the queue records every segment repeats (COMM, COMM_END, NCCL_LOG, TOPO_*,
 * KERNEL_NAME, KERNEL_STATUS), up to STICKY_CAP; writer thread only. */
static struct { uint8_t *buf; size_t len, cap; uint32_t records; uint64_t lost; } sticky;
static uint8_t *segbuf; /* a segment chunk's rows (RAW_CAP), built apart from the chunk buffer */
static int keeping(void) { return ncs_cfg.keep_ns || ncs_cfg.keep_bytes; }

void ncs_writer_set_process(const void *rec, size_t len) {
  uint8_t *p = malloc(len ? len : 1);
  if (!p) return;
  memcpy(p, rec, len);
  free(process_rec);
  process_rec = p;
  process_len = len;
}

/* The trace file's identity, for other threads (ncs_is_trace_file); 0 before it exists. */
static _Atomic uint64_t trace_dev, trace_ino;
int ncs_is_trace_file(const struct stat *st) {
  uint64_t ino = atomic_load(&trace_ino);
  return ino && (uint64_t)st->st_ino == ino && (uint64_t)st->st_dev == atomic_load(&trace_dev);
}
static pthread_mutex_t w_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_done_cv = PTHREAD_COND_INITIALIZER;
static int w_stop, w_done, w_kick;
static int w_file_tried;                  /* the writer's first attempt at its file is over */
static unsigned w_sync_req, w_sync_done; /* ncs_writer_sync() requests and completions */
static unsigned w_sync_drain_ms;         /* the longest GPU drain a pending request asked for */
static int w_sync_gpu_off;                /* a pending request ends GPU timing (exit) */
/* exec (ncs_writer_exec): lock-free, so that a thread that execs from a signal handler, or while
 * another holds w_mu, never waits on a lock. x_req: requests; x_done: the last one written (a
 * futex word the requester sleeps on); x_released: the last one whose exec failed. The writer
 * holds (writes nothing) from the exec chunk it wrote until that request is released. */
static _Atomic uint32_t x_req, x_done, x_released;
static uint32_t x_seen, x_held;           /* writer thread: the last request served, the one it holds for */
static _Atomic int w_pid;                 /* the process the writer belongs to (a vfork child is not it) */

/* Waking the writer: a futex word bumped by every waker. The writer reads it, checks for
 * work, and sleeps on it only if it has not changed (no lost wake-up); `sleeping` lets a
 * waker skip the system call while the writer is awake. Async-signal-safe. */
static _Atomic uint32_t w_wake_seq;
_Atomic int ncs_writer_sleeping;
void ncs_writer_wake(void) {
  atomic_fetch_add(&w_wake_seq, 1);
  syscall(SYS_futex, &w_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void ms_from_now(struct timespec *ts, unsigned ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

/* ---- the file ---- */

static void mkdir_p(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(path, 0700);
    *p = '/';
  }
  mkdir(path, 0700);
}

/* Writes the file header into a new, still unnamed file (O_TMPFILE) and only then gives it
 * its name with linkat, which, like O_EXCL, never follows or replaces an existing name: a
 * trace file never exists without its header. Where O_TMPFILE is not supported, the file is
 * created with O_CREAT|O_EXCL|O_NOFOLLOW and the header written right after. */
static int create_named(const char *dir, const char *path, const uint8_t *hdr, size_t n) {
  /* Each descriptor goes high the moment open returns, and everything after works on the high
   * one, so a number the application closes and reuses meanwhile is never written. A new
   * unnamed file has no link and no byte: anything else behind the number is not ours. */
  struct stat st;
  int fd = ncs_fio_open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0 && (ncs_fio_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0)) {
    ncs_fio_close(fd); /* our duplicate of someone else's file */
    errno = EBADF;
    return -2;
  }
  if (fd >= 0) {
    if (ncs_fio_pwrite(fd, hdr, n, 0) != (ssize_t)n) { int e = errno; ncs_fio_close(fd); errno = e; return -2; }
    if (ncs_fio_link(fd, path) == 0) return fd;
    int e = errno;
    ncs_fio_close(fd);
    errno = e;
    if (e == EEXIST) return -1;
    /* no /proc, or the filesystem refuses: fall through to the plain way */
  }
  fd = ncs_fio_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  struct stat by_name;
  if (ncs_fio_fstat(fd, &st) != 0 || stat(path, &by_name) != 0 || st.st_ino != by_name.st_ino || st.st_dev != by_name.st_dev ||
      st.st_size != 0) {
    ncs_fio_close(fd); /* our duplicate of what is behind the number now: leave that, and the name, alone */
    errno = EBADF;
    return -2;
  }
  if (ncs_fio_pwrite(fd, hdr, n, 0) != (ssize_t)n) {
    int e = errno;
    ncs_fio_close(fd);
    unlink(path);
    errno = e;
    return -2;
  }
  return fd;
}

/* The trace file's identity as created: device, inode and birth time (statx; a file system
 * reuses the inode number of a deleted file at once, the birth time tells them apart). */
static struct ncs_fio_ident ident;
static int have_ident;

static void remember_identity(int fd) { have_ident = ncs_fio_identify(fd, &ident) == 0; }

/* What the trace file must be before the writer touches it again: the file it created, with
 * exactly the bytes the writer put there (size), still linked. */
static struct ncs_fio_ident expected(const struct writer *w) {
  struct ncs_fio_ident e = ident;
  e.size = (uint64_t)w->high_off;
  return e;
}

/* 1 when fd is still the trace file (fileio.h, ncs_fio_same_file: device, inode and birth
 * time where the file system keeps one) with want_size bytes; *linked says whether it still
 * has a name. An application that closes every descriptor (daemonising code) and opens its
 * own files may get the number back, even the inode number of a trace it deleted. */
static int fd_is_ours(int fd, uint64_t want_size, int *linked) {
  struct ncs_fio_ident id;
  if (fd < 0 || !have_ident || ncs_fio_identify(fd, &id) != 0) return 0;
  if (linked) *linked = id.nlink > 0;
  return ncs_fio_same_file(&id, &ident) && id.size == want_size;
}

/* Makes sure n + extra bytes past the file's last whole chunk are allocated
 * (FALLOC_FL_KEEP_SIZE: the size stays the bytes written). Returns 0, or -1 with errno ENOSPC or
 * EDQUOT when the file system is full; any other failure (no fallocate on this file system)
 * returns 0: the write then goes ahead unguarded, as before. */
static int reserve(struct writer *w, size_t n, size_t extra) {
  if (w->fd < 0) return 0;
  off_t want = w->good_off + (off_t)(n + extra);
  if (want <= w->reserved_end) return 0; /* allocated already */
  /* unbounded: RESERVE_AHEAD more at a time, so an idle process's heartbeats (70 bytes) need
   * a visit of the file thread for their write alone; a file system that has not that much
   * left is asked for the exact need */
  off_t ahead = keeping() ? 0 : RESERVE_AHEAD;
  for (;; ahead = 0) {
    int rc;
    do rc = ncs_fio_fallocate(w->fd, FALLOC_FL_KEEP_SIZE, w->good_off, (off_t)(n + extra) + ahead);
    while (rc != 0 && errno == EINTR);
    if (rc == 0) {
      w->reserved_end = want + ahead;
      return 0;
    }
    if (errno != ENOSPC && errno != EDQUOT) return 0;
    if (!ahead) return -1;
  }
}

/* After a failed write: the bytes past the last whole chunk are cut (with any blocks
 * allocated past them). */
static void cut_to_good(struct writer *w) {
  if (w->high_off > w->good_off && ncs_fio_ftruncate(w->fd, w->good_off) == 0) w->high_off = w->reserved_end = w->good_off;
}

struct create_ask {
  struct writer *w;
  const char *host;
  const uint8_t *hdr;
  struct timespec rt;
};

/* The trace file made, named and reserved, and the rings file beside it: open_file's system
 * calls, run in one visit of the file thread (ncs_fio_run: ~20 requests at a visit each
 * before). 0, or -1 with errno. */
static int create_file(void *arg) {
  struct create_ask *a = arg;
  struct writer *w = a->w;
  const uint8_t *hdr = a->hdr;
  char path[768];
  for (int n = 0; n < 1000; n++) {
    if (n == 0) snprintf(path, sizeof path, "%s/%s-%d.ncs", ncs_cfg.dir, a->host, (int)getpid());
    else snprintf(path, sizeof path, "%s/%s-%d-%d.ncs", ncs_cfg.dir, a->host, (int)getpid(), n);
    int fd = create_named(ncs_cfg.dir, path, hdr, NCS_FILE_HEADER_SIZE);
    if (fd >= 0) {
      w->fd = fd;
      snprintf(w->path, sizeof w->path, "%s", path);
      remember_identity(fd);
      struct stat st;
      if (ncs_fio_fstat(fd, &st) == 0) {
        atomic_store(&trace_dev, (uint64_t)st.st_dev);
        atomic_store(&trace_ino, (uint64_t)st.st_ino);
      }
      w->good_off = w->high_off = NCS_FILE_HEADER_SIZE;
      w->reserved_end = 0;
      w->first_kept = NCS_FILE_HEADER_SIZE;
      w->nseg = 1;
      w->seg[0].off = NCS_FILE_HEADER_SIZE;
      w->seg[0].t0 = w->seg[0].t_last = ncs_now_ns();
      reserve(w, 0, RESERVE); /* best effort: the room for the final chunk */
      /* the rings file follows the trace's name (a new file after a lost descriptor: renamed) */
      ncs_rings_attach(path, (uint32_t)getpid(), (uint64_t)a->rt.tv_sec * 1000000000ull + (uint64_t)a->rt.tv_nsec, RAW_CAP);
      return 0;
    }
    if (fd == -2 || errno != EEXIST) break;
  }
  return -1;
}

static int open_file(struct writer *w) {
  char host[128];
  const char *h = ncs_host_name();
  size_t i = 0;
  for (; h[i] && i < sizeof host - 1; i++) {
    char c = h[i];
    host[i] = (c == '/' || c == '\\' || (unsigned char)c < 32) ? '_' : c;
  }
  host[i] = 0;
  mkdir_p(ncs_cfg.dir);
  uint8_t hdr[NCS_FILE_HEADER_SIZE];
  struct create_ask a = {w, host, hdr, {0, 0}};
  clock_gettime(CLOCK_REALTIME, &a.rt);
  ncs_encode_file_header(hdr, (uint64_t)a.rt.tv_sec * 1000000000ull + (uint64_t)a.rt.tv_nsec, (uint32_t)getpid());
  if (keeping()) ncs_put_u32(hdr + NCS_FH_FLAGS, NCS_FILE_F_BOUNDED);
  if (ncs_fio_run(create_file, &a) == 0) {
    ncs_debug("writing %s", w->path);
    return 0;
  }
  int e = errno;
  ncs_debug("cannot create a trace file in %s: %s", ncs_cfg.dir, strerror(e));
  errno = e; /* ENOSPC/EDQUOT: the chunk's calls are lost to a full disk (flush_chunk) */
  return -1;
}

/* Checked before every chunk: a descriptor that is no longer the trace's is dropped (never
 * written, truncated or closed again). The trace is reopened by its name when that still names
 * the same file, unchanged since our last write; else the next chunk starts a new file (suffix
 * -1, -2, ...) with everything defined again, and this chunk's records count as dropped. Either
 * way the next chunk written carries NCS_CHUNK_F_REOPENED. Returns 0 when w->fd may be written. */
static int keep_own_fd(struct writer *w) {
  if (w->fd < 0) return 0;
  int linked = 1;
  if (fd_is_ours(w->fd, (uint64_t)w->high_off, &linked)) {
    if (linked) return 0;
    /* ours, but deleted (a clean-up of the directory): what is written there is lost; since the
     * job cannot take a private descriptor, this is how a deleted trace is seen */
    ncs_fio_close(w->fd);
  }
  w->fd = -1;
  w->fd_lost++;
  w->reopened = 1;
  int fd = ncs_fio_open(w->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd_is_ours(fd, (uint64_t)w->high_off, NULL)) {
    w->fd = fd;
    ncs_debug("the trace's descriptor was closed or reused by the application: %s reopened", w->path);
    return 0;
  }
  if (fd >= 0) ncs_fio_close(fd); /* ours (just opened, moved high), and not the trace */
  ncs_debug("the trace's descriptor was closed or reused by the application and %s cannot be reopened: a new file follows", w->path);
  w->chunk_index = 0;    /* a new file: PROCESS, THREAD, CALLSITE, MODULE again */
  w->process_written = 0;
  return -1;
}

/* The answer of a write made earlier (a heartbeat's, posted: settle_beat). */
struct answer { ssize_t ret; int err; };

/* Writes a whole chunk at the end of the last one (good_off), its first write only while the
 * file is still the trace as the writer left it (fileio.h, ncs_fio_pwrite_if: checked in the
 * write's own visit of the file thread); high_off tracks the furthest byte written, even on
 * failure. `posted`: that first write was made already (its answer), else NULL. Returns 0, or
 * -1 with errno (ESTALE: not the trace's file any more, nothing written). */
static int write_all(struct writer *w, const uint8_t *p, size_t n, const struct answer *posted) {
  off_t off = w->good_off;
  struct ncs_fio_ident want = expected(w);
  int first = 1;
  while (n) {
    ssize_t k;
    if (posted) {
      k = posted->ret;
      errno = posted->err;
      posted = NULL;
    } else {
      k = first ? ncs_fio_pwrite_if(w->fd, p, n, off, &want) : ncs_fio_pwrite(w->fd, p, n, off);
    }
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    first = 0;
    p += k; n -= (size_t)k; off += k;
    if (off > w->high_off) w->high_off = off;
  }
  return 0;
}

/* ---- building chunks ---- */

static void clock_pair(struct ncs_clock *c) {
  struct timespec a, r, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &b);
  uint64_t ma = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
  uint64_t mb = (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
  *c = (struct ncs_clock){.realtime_ns = (uint64_t)r.tv_sec * 1000000000ull + (uint64_t)r.tv_nsec,
                          .monotonic_ns = ma + (mb - ma) / 2, .uncertainty_ns = mb - ma};
}

static void add_clock(struct writer *w) {
  struct ncs_clock c;
  clock_pair(&c);
  size_t before = w->raw.len;
  ncs_enc_clock(&w->raw, &c);
  if (w->raw.len != before) w->records++;
}

static void add_drop(struct writer *w, unsigned reason, uint64_t n, uint32_t thread) {
  struct ncs_drop d = {.reason = reason, .records = n, .thread = thread};
  size_t before = w->raw.len;
  ncs_enc_drop(&w->raw, &d);
  if (w->raw.len != before) w->records++;
  if (reason < NCS_DROP_REASON_LIMIT) w->chunk_drops[reason] += n;
}
/* A chunk's DROP records start with what lost chunks did not get written. */
static void add_carried_drops(struct writer *w) {
  memset(w->chunk_drops, 0, sizeof w->chunk_drops);
  for (unsigned r = 1; r < NCS_DROP_REASON_LIMIT; r++)
    if (w->carry[r]) { add_drop(w, r, w->carry[r], 0); w->carry[r] = 0; }
}

/* The ring owner's call in flight, if any, as an INFLIGHT record (see struct ncs_current). */
static int current_read(struct ncs_ring *r, struct ncs_inflight *f) {
  struct ncs_current *k = &r->cur;
  uint64_t t = atomic_load_explicit(&k->tcall, memory_order_acquire);
  if (!t) return 0;
  uint64_t t_enter = atomic_load_explicit(&k->t_enter, memory_order_relaxed);
  uint64_t seq = atomic_load_explicit(&k->seq, memory_order_relaxed);
  uint64_t count = atomic_load_explicit(&k->count, memory_order_relaxed);
  uint64_t key = atomic_load_explicit(&k->key, memory_order_relaxed);
  uint64_t odc = atomic_load_explicit(&k->op_dtype_comm, memory_order_relaxed);
  uint64_t rn = atomic_load_explicit(&k->root_nranks, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&k->tcall, memory_order_relaxed) != t) return 0; /* it returned meanwhile */
  *f = (struct ncs_inflight){.kind = NCS_INFLIGHT_HOST, .thread = r->thread, .tcall = t,
                             .op = (uint32_t)(odc & 0xff), .datatype = (uint32_t)(odc >> 8 & 0xff),
                             .comm = (uint32_t)(odc >> 32), .seq = seq, .count = count, .key = key,
                             .root = (int32_t)(uint32_t)rn, .nranks = (int32_t)(uint32_t)(rn >> 32),
                             .t_enter = t_enter};
  return 1;
}

/* Every chunk ends with the calls in flight when it was written: one INFLIGHT record per
 * thread inside an NCCL call, and per call whose GPU work has not finished. */
static void add_inflight(struct writer *w) {
  uint64_t now = ncs_now_ns();
  ncs_collectors_seen_inflight(collectors, NULL); /* observers: a new chunk's calls in flight */
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    struct ncs_inflight f;
    if (!r || !current_read(r, &f)) continue;
    f.t_seen = now;
    ncs_collectors_seen_inflight(collectors, &f);
    size_t before = w->raw.len;
    ncs_enc_inflight(&w->raw, &f);
    if (w->raw.len != before) w->records++;
  }
  ncs_collectors_inflight(collectors, now); /* GPU work not finished (gputime.c) */
}
/* 1 when `need` more bytes fit the chunk buffer, its reservation in the rings file grown
 * (doubling, up to RAW_CAP) when they did not; 0 when it cannot grow (a full /dev/shm): the
 * caller flushes the chunk or drops, counted, as when a chunk is full. */
static int raw_fits(struct writer *w, size_t need) {
  while (w->raw.len + need > w->raw.cap && w->raw.cap < RAW_CAP && !w->raw_stuck) {
    size_t want = w->raw.len + need > 2 * w->raw.cap ? w->raw.len + need : 2 * w->raw.cap;
    size_t got = ncs_rings_buf_grow(want < RAW_CAP ? want : RAW_CAP);
    if (got <= w->raw.cap) w->raw_stuck = 1;
    else w->raw.cap = got < RAW_CAP ? got : RAW_CAP;
  }
  return w->raw.len + need <= w->raw.cap;
}

/* Where the chunk is written out: its flush size, or lower while the buffer cannot hold
 * `need` more bytes and RAW_SLACK beyond them. */
static size_t flush_at(struct writer *w, size_t need) {
  raw_fits(w, need + RAW_SLACK);
  size_t lim = w->raw.cap - RAW_SLACK; /* raw.cap >= 256 KiB (rings.c) */
  return lim < w->raw_flush ? lim : w->raw_flush;
}

/* The chunk buffer's length as the rings file shows it (the decoder recovers that much). */
static void publish(struct writer *w) { ncs_rings_buf_publish(w->raw.len); }

/* An empty chunk buffer, with the rings file's copy and the CALL encoders' state reset. */
static void reset_chunk(struct writer *w) {
  ncs_rings_buf_reset(w->chunk_index);
  ncs_wbuf_init(&w->raw, w->raw.buf, w->raw.cap);
  w->raw_stuck = 0;
  w->records = 0;
  w->calls = 0;
  w->nqp = w->qp_seen = w->nkr = 0;
  w->kr_bytes = 0;
  w->kr_records = 0;
  ncs_call_delta_reset(&w->delta);
  ncs_call_run_reset(&w->run);
}

static void begin_chunk(struct writer *w) {
  reset_chunk(w);
  if (!w->process_written) {
    if (process_rec && process_len <= RAW_CAP / 2 && raw_fits(w, process_len)) {
      memcpy(w->raw.buf, process_rec, process_len);
      w->raw.len = process_len;
      w->records++;
    }
    add_clock(w);
    w->process_written = 1;
  }
  if (w->defs_lost) {
    if (defs.len && w->raw.len + defs.len <= RAW_FLUSH && raw_fits(w, defs.len)) {
      memcpy(w->raw.buf + w->raw.len, defs.buf, defs.len);
      w->raw.len += defs.len;
      w->records += defs.records;
    }
    w->defs_lost = 0;
  }
  add_carried_drops(w);
  publish(w);
}

/* The final chunk when the full one could not be written (a full disk): only what says what
 * was lost (the drop counts, a CLOCK, PROCESS when the file has no chunk yet), into the room
 * kept past the file's end (RESERVE). Returns 0 when written. */
static int short_final(struct writer *w) {
  if (!w->cbuf || !w->cctx) return -1;
  reset_chunk(w);
  if (w->chunk_index == 0 && process_rec && process_len <= RESERVE / 2 && raw_fits(w, process_len)) {
    memcpy(w->raw.buf, process_rec, process_len);
    w->raw.len = process_len;
    w->records++;
  }
  add_clock(w);
  uint64_t carried[NCS_DROP_REASON_LIMIT];
  memcpy(carried, w->carry, sizeof carried);
  add_carried_drops(w);
  add_clock(w);
  uint32_t flags = NCS_CHUNK_F_FINAL | (w->reopened ? NCS_CHUNK_F_REOPENED : 0);
  size_t c = ncs_chunk_pack(w->cctx, ZSTD_LEVEL, w->cbuf, w->ccap, w->raw.buf, w->raw.len, w->records,
                            w->chunk_index, w->dropped_total, flags);
  if (!c || c > RESERVE || reserve(w, c, 0) != 0 || write_all(w, w->cbuf, c, NULL) != 0) {
    cut_to_good(w);
    memcpy(w->carry, carried, sizeof carried);
    return -1;
  }
  w->good_off += (off_t)c;
  w->chunk_index++;
  w->reopened = 0;
  ncs_rings_remove();
  return 0;
}

/* ---- bounded mode (NCCLSCOPE_KEEP; docs/FORMAT.md "Bounded files") ---- */

/* Keeps the queue records a segment repeats (writer thread, at each drain). */
static void sticky_take(const uint8_t *q, size_t len) {
  const uint8_t *p = q, *end = q + len;
  while (p < end) {
    const uint8_t *at = p;
    uint64_t type, n;
    if (ncs_get_varint(&p, end, &type) || ncs_get_varint(&p, end, &n) || n > (size_t)(end - p)) return;
    p += n;
    if (type != NCS_REC_COMM && type != NCS_REC_COMM_END && type != NCS_REC_NCCL_LOG && type != NCS_REC_TOPO_GPU &&
        type != NCS_REC_TOPO_LINK && type != NCS_REC_KERNEL_NAME && type != NCS_REC_KERNEL_STATUS)
      continue;
    size_t k = (size_t)(p - at);
    if (sticky.len + k > STICKY_CAP) { sticky.lost++; continue; }
    if (sticky.len + k > sticky.cap) {
      size_t nc = sticky.cap ? sticky.cap : 65536;
      while (nc < sticky.len + k) nc *= 2;
      uint8_t *nb = realloc(sticky.buf, nc);
      if (!nb) { sticky.lost++; continue; }
      sticky.buf = nb;
      sticky.cap = nc;
    }
    memcpy(sticky.buf + sticky.len, at, k);
    sticky.len += k;
    sticky.records++;
  }
}

/* Writes a SEGMENT chunk at the file's end: PROCESS, a CLOCK, the threads announced so far,
 * the definitions, the repeated queue records, every drop so far by reason and the
 * aggregates of every call encoded so far. Built apart from the chunk buffer, which the rings
 * file shows (a kill -9 recovers the chunk being built, never this one). 0 when written. */
static int write_segment(struct writer *w) {
  if (!segbuf && !(segbuf = malloc(RAW_CAP))) return -1;
  struct ncs_wbuf b;
  ncs_wbuf_init(&b, segbuf, RAW_CAP);
  uint32_t nrec = 0;
  if (process_rec) { ncs_w_bytes(&b, process_rec, process_len); nrec++; }
  struct ncs_clock c;
  clock_pair(&c);
  ncs_enc_clock(&b, &c);
  nrec++;
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!r || !r->announced) continue;
    struct ncs_thread th = {.thread = r->thread, .tid = (uint64_t)r->tid, .name = r->name,
                            .flags = r->flags & NCS_RING_F_MEMORY ? NCS_THREAD_F_NOT_CRASH_SAFE : 0};
    ncs_enc_thread(&b, &th);
    nrec++;
  }
  ncs_w_bytes(&b, defs.buf, defs.len);
  nrec += defs.records;
  ncs_w_bytes(&b, sticky.buf, sticky.len);
  nrec += sticky.records;
  for (unsigned r = 1; r < NCS_DROP_REASON_LIMIT; r++) {
    if (!w->cum_drops[r]) continue;
    struct ncs_drop d = {.reason = r, .records = w->cum_drops[r], .thread = 0};
    ncs_enc_drop(&b, &d);
    nrec++;
  }
  ncs_agg_encode(&b, &nrec);
  if (b.overflow) return -1;
  size_t n = ncs_chunk_pack(w->cctx, ZSTD_LEVEL, w->cbuf, w->ccap, segbuf, b.len, nrec, w->chunk_index,
                            w->dropped_total, NCS_CHUNK_F_SEGMENT);
  if (!n || reserve(w, n, RESERVE) != 0) return -1;
  if (write_all(w, w->cbuf, n, NULL) != 0) {
    cut_to_good(w);
    return -1;
  }
  w->good_off += (off_t)n;
  w->seg_chunk = n;
  memset(w->carry, 0, sizeof w->carry); /* its DROP records count them: not written again */
  w->chunk_index++;
  return 0;
}

/* Frees the oldest segments but the current one (the header's FIRST_KEPT moved first, then a
 * hole punched) while the kept bytes, `need` more and the file's fixed overhead would pass the
 * size bound, or while their last chunk is older than the time bound; all of them when forced
 * (a full file system). The overhead: the header's block, the partial blocks before the first
 * kept chunk and at the end, a block of the file system's own (ext4's extent tree, once the
 * holes make the file many extents) and the reserve past the end. */
static void drop_old(struct writer *w, uint64_t now, uint64_t need, int force) {
  unsigned k = 0;
  while (k + 1 < w->nseg) {
    uint64_t kept = (uint64_t)(w->good_off - w->seg[k].off);
    int over = ncs_cfg.keep_bytes && kept + need + 4 * 4096 + RESERVE > ncs_cfg.keep_bytes;
    int old = ncs_cfg.keep_ns && w->seg[k].t_last + ncs_cfg.keep_ns < now;
    if (!over && !old && !force) break;
    k++;
  }
  if (!k) return;
  off_t from = w->first_kept, to = w->seg[k].off;
  uint8_t v[8];
  ncs_put_u64(v, (uint64_t)to);
  if (ncs_fio_pwrite(w->fd, v, sizeof v, NCS_FH_FIRST_KEPT) == (ssize_t)sizeof v) {
    w->first_kept = to;
    memmove(&w->seg[0], &w->seg[k], (w->nseg - k) * sizeof w->seg[0]);
    w->nseg -= k;
    /* from the start of from's block: the bytes before `from` there are freed chunks, and a
     * block a punch only zeroes (a partial one) would stay allocated at every rotation */
    struct stat st;
    off_t bs = ncs_fio_fstat(w->fd, &st) == 0 && st.st_blksize > 0 ? (off_t)st.st_blksize : 4096;
    from = from / bs * bs;
    if (from < NCS_FILE_HEADER_SIZE) from = NCS_FILE_HEADER_SIZE;
    if (ncs_fio_fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, from, to - from) != 0 && errno != EINTR) {
      if (!w->keep_stuck)
        ncs_debug("cannot free the trace's oldest segments (%s): chunks past NCCLSCOPE_KEEP's size are lost", strerror(errno));
      w->keep_stuck = 1;
    }
  }
}

/* After each chunk written: when the current segment has reached a quarter of the size bound
 * or of the time bound, frees the oldest segments (the header's FIRST_KEPT moved first, then
 * a hole punched) while the kept bytes and a new segment's would pass the size bound, or when
 * their last chunk is older than the time bound, then starts a new segment. */
static void keep_after_chunk(struct writer *w, int force) {
  if (!w->nseg || w->fd < 0) return;
  uint64_t now = ncs_now_ns();
  uint64_t S = ncs_cfg.keep_bytes / 4, T = ncs_cfg.keep_ns / 4;
  w->seg[w->nseg - 1].t_last = now;
  w->last_chunk = (uint64_t)(w->good_off - w->prev_off);
  off_t cur = w->good_off - w->seg[w->nseg - 1].off;
  if (!force && !((S && (uint64_t)cur >= S) || (T && now - w->seg[w->nseg - 1].t0 >= T))) return;
  /* first the oldest segments go (not the current one, which starts with what a reader needs):
   * room for a segment as large as this one; a full file system: all of them */
  drop_old(w, now, S + w->last_chunk + w->seg_chunk, force);
  off_t at = w->good_off;
  if (write_segment(w) != 0) return; /* tried again after the next chunk */
  if (w->nseg == SEG_MAX) { /* never with a quarter of the bound a segment: only the oldest goes */
    memmove(&w->seg[0], &w->seg[1], (SEG_MAX - 1) * sizeof w->seg[0]);
    w->nseg--;
  }
  w->seg[w->nseg].off = at;
  w->seg[w->nseg].t0 = w->seg[w->nseg].t_last = now;
  w->nseg++;
  /* after a chunk lost to a full file system the new segment's DROP records count it, and
   * the carried ones are not written again: no reader may start before it */
  if (force) drop_old(w, now, 0, 1);
}

static void kernels_apart(struct writer *w);

/* The KERNEL records a row chunk set apart (kernels_apart), gathered and packed as the chunk
 * after it (index + 1, column payload at any size) at out[0, cap): its size, or 0 (no memory
 * for the gathering, or it did not pack: the caller packs the whole chunk as rows instead). */
static size_t kernels_chunk(struct writer *w, uint8_t *out, size_t cap, uint32_t flags) {
  if (!w->kbuf) {
    void *m = mmap(NULL, RAW_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    w->kbuf = m;
  }
  size_t n = 0;
  for (unsigned i = 0; i < w->nkr; i++) {
    memcpy(w->kbuf + n, w->raw.buf + w->kr[i].off, w->kr[i].len);
    n += w->kr[i].len;
  }
  return ncs_chunk_pack_upto(w->cctx, ZSTD_LEVEL, out, cap, w->kbuf, n, w->kr_records, w->chunk_index + 1,
                             w->dropped_total, flags, NCS_CHUNK_MAX_RAW);
}

/* Writes the chunk, even one without calls: its CLOCK and INFLIGHT records are the process's
 * heartbeat (a reader tells a stuck rank from one whose calls are not flushed yet). A chunk
 * that is a heartbeat alone (no record before its CLOCK: no call, nothing in flight) sets
 * w->quiet: the next comes a heartbeat period later (format.h NCS_IDLE_BEAT_MS, 2 s), or
 * within a flush period of the next push or record, which wake the writer then (writer_sleep:
 * an idle process costs one wake-up and one file-thread request per 2 s, not per 500 ms). */
static void finish_chunk(struct writer *w, size_t c, unsigned chunks, int final, int exec, int full,
                         const struct answer *posted);
static void flush(struct writer *w, uint32_t end, int may_post) {
  int final = (end & NCS_CHUNK_F_FINAL) != 0, exec = (end & NCS_CHUNK_F_EXEC) != 0;
  add_inflight(w);
  w->quiet = w->records == 0; /* no record, no call in flight (host or GPU) */
  add_clock(w);
  size_t zipped = 0; /* the rows' frame, already in w->cbuf after its header */
  if (w->zipping) {
    kernels_apart(w); /* the pieces since the last feed */
    zipped = ncs_rowzip_end(w->raw.len);
    w->zipping = 0;
  }
  int full = 0;
  size_t c = 0;
  unsigned chunks = 1; /* in w->cbuf[0, c): the chunk, or the rows' chunk then its KERNEL records' */
  int fresh = w->fd < 0 && w->cbuf && open_file(w) == 0; /* this chunk starts a file */
  if (w->fd < 0 && !fresh) full = errno == ENOSPC || errno == EDQUOT; /* no file: it could not be made */
  /* a descriptor in the job's table (unshare refused) may have become one of the job's files:
   * checked before anything touches it; a private one cannot, and whether its file was deleted
   * or changed is checked by the chunk's write (write_all) */
  if (!fresh && !ncs_fio_private() && keep_own_fd(w) != 0) {
    /* no way to write this chunk (it does not start with what a new file needs): lost, counted */
  } else if (w->fd >= 0 && w->cbuf && w->cctx && (!fresh || w->chunk_index == 0)) {
    uint32_t flags = end | (w->reopened ? NCS_CHUNK_F_REOPENED : 0) | (w->quiet && !final && !exec ? NCS_CHUNK_F_IDLE : 0);
    if (zipped && zipped <= NCS_CHUNK_MAX_PAYLOAD) {
      ncs_chunk_header(w->cbuf, w->cbuf + NCS_CHUNK_HEADER_SIZE, (uint32_t)zipped, (uint32_t)(w->raw.len - w->kr_bytes),
                       w->records - w->kr_records, w->chunk_index, w->dropped_total, flags);
      c = NCS_CHUNK_HEADER_SIZE + zipped;
      if (w->nkr) {
        /* flagged `kernels` (5.7): read as the end of the rows' chunk; its final or exec flag
         * too (the file's last chunk says how it ended) */
        size_t k = kernels_chunk(w, w->cbuf + c, w->ccap - c,
                                 NCS_CHUNK_F_KERNELS | (flags & (NCS_CHUNK_F_FINAL | NCS_CHUNK_F_EXEC)));
        if (k) {
          c += k;
          chunks = 2;
        } else { /* the rows whole, their KERNEL records in them, as without a helper */
          zipped = 0;
        }
      }
    }
    if (!zipped || zipped > NCS_CHUNK_MAX_PAYLOAD) {
      c = ncs_chunk_pack(w->cctx, ZSTD_LEVEL, w->cbuf, w->ccap, w->raw.buf, w->raw.len, w->records,
                         w->chunk_index, w->dropped_total, flags);
    }
    /* its bytes and the reserve allocated first (the final chunk may use the reserve): a full
     * file system loses this chunk whole, and leaves room for the final accounting */
    if (c && reserve(w, c, final ? 0 : RESERVE) != 0) { full = 1; c = 0; }
    /* bounded: older segments go first when this chunk would pass the size bound */
    if (c && ncs_cfg.keep_bytes && w->nseg > 1) drop_old(w, ncs_now_ns(), c + w->seg_chunk, 0);
    /* bounded, on a file system that cannot free its oldest segments: the size bound holds */
    if (c && w->keep_stuck && ncs_cfg.keep_bytes && (uint64_t)w->good_off + c > ncs_cfg.keep_bytes) c = 0;
    /* a heartbeat alone on the writer's own time (nobody waits for it): its write is posted and
     * its answer taken at the writer's next pass (settle_beat), so the writer does not wake a
     * second time, for the file thread's answer, in every heartbeat period */
    if (c && may_post && (flags & NCS_CHUNK_F_IDLE)) {
      struct ncs_fio_ident want = expected(w);
      if (ncs_fio_post_pwrite_if(w->fd, w->cbuf, c, w->good_off, &want) == 0) {
        w->beat_out = c;
        return;
      }
    }
  }
  finish_chunk(w, c, chunks, final, exec, full, NULL);
}
static void flush_chunk(struct writer *w, uint32_t end) { flush(w, end, 0); }

/* Writes the packed chunk (c bytes of w->cbuf; 0: it cannot be; `chunks` of them: a row chunk
 * and its `kernels` chunk are one write), or counts its records lost;
 * then the next chunk begins. posted: the answer of its first write, made already (a heartbeat
 * posted), else NULL. */
static void finish_chunk(struct writer *w, size_t c, unsigned chunks, int final, int exec, int full,
                         const struct answer *posted) {
  int ok = 0;
  if (c) {
    /* a failed write is tried once more (a disk may have freed space); bytes of a partial
     * chunk beyond the good end would read as damage: they are cut */
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
      errno = 0;
      if (write_all(w, w->cbuf, c, attempt ? NULL : posted) == 0) {
        w->prev_off = w->good_off;
        w->good_off += (off_t)c;
        w->chunk_index += chunks;
        w->reopened = 0;
        ok = 1;
        if (final || exec) ncs_rings_remove(); /* a complete trace: nothing left to recover */
        else if (keeping()) keep_after_chunk(w, 0);
      } else if (errno == ENOSPC || errno == EDQUOT) {
        full = 1;
      } else if (errno == ESTALE && (keep_own_fd(w) != 0 || w->fd < 0)) {
        break; /* not the trace's file any more, and a new one follows: this chunk is lost */
      }
      cut_to_good(w);
    }
  }
  if (!ok) {
    /* the records are lost: count them (its calls apart when the disk was full); what the file
     * must define again is written again */
    w->dropped_total += w->records;
    for (unsigned r = 1; r < NCS_DROP_REASON_LIMIT; r++) w->carry[r] += w->chunk_drops[r];
    w->carry[NCS_DROP_WRITE_FAILED] += w->records;
    w->cum_drops[NCS_DROP_WRITE_FAILED] += w->records;
    if (full) w->carry[NCS_DROP_DISK_FULL] += w->calls;
    if (full) w->cum_drops[NCS_DROP_DISK_FULL] += w->calls;
    /* bounded: a full file system frees the oldest segments now (the file does not grow) */
    if (full && !final && !exec && keeping() && w->fd >= 0) keep_after_chunk(w, 1);
    if (w->chunk_index == 0) w->process_written = 0;
    w->defs_lost = 1;
    for (int i = 0; i < NCS_MAX_THREADS; i++) {
      struct ncs_ring *r = atomic_load(&ncs_rings[i]);
      if (r) r->announced = 0;
    }
    if (final && w->fd >= 0 && short_final(w) == 0) ok = 1;
  }
  if (ok && final && w->fd >= 0) { /* the reserve past the end is not needed any more */
    if (ncs_fio_fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, w->good_off, RESERVE + (off_t)RAW_CAP) != 0 && errno == EINTR) {}
  }
  begin_chunk(w);
}

/* The heartbeat posted at the last pass (flush): its answer taken (as a rule long there: no
 * system call), and the chunk finished as a written one is (a failed write tried again, or
 * its record counted lost). First thing in every pass: nothing touches the file, the chunk
 * buffer or the chunk's counts before. */
static void settle_beat(struct writer *w) {
  if (!w->beat_out) return;
  size_t c = w->beat_out;
  w->beat_out = 0;
  struct answer a;
  a.ret = ncs_fio_collect();
  a.err = errno;
  finish_chunk(w, c, 1, 0, 0, 0, &a);
}

/* Makes room for `need` bytes in the chunk, writing it out first when needed. */
static void ensure_room(struct writer *w, size_t need) {
  if (w->raw.len + need > flush_at(w, need)) flush_chunk(w, 0);
}

/* Records that cannot be had in a chunk: lost, counted. */
static void lose(struct writer *w, uint32_t records) {
  w->dropped_total += records;
  add_drop(w, NCS_DROP_NO_MEMORY, records, 0);
  w->cum_drops[NCS_DROP_NO_MEMORY] += records;
}

void ncs_writer_put_definition(const void *recs, size_t len, uint32_t records) {
  struct writer *w = self;
  if (!w || len > RAW_FLUSH / 4) return;
  ensure_room(w, len);
  if (!raw_fits(w, len)) {
    lose(w, records);
    return;
  }
  memcpy(w->raw.buf + w->raw.len, recs, len);
  w->raw.len += len;
  w->records += records;
  if (defs.len + len > defs.cap && defs.len + len <= DEFS_CAP) {
    size_t nc = defs.cap ? defs.cap : 65536;
    while (nc < defs.len + len) nc *= 2;
    uint8_t *nb = realloc(defs.buf, nc);
    if (nb) { defs.buf = nb; defs.cap = nc; }
  }
  if (defs.len + len <= defs.cap) { /* else: not written again after a lost chunk */
    memcpy(defs.buf + defs.len, recs, len);
    defs.len += len;
    defs.records += records;
  }
}

int ncs_writer_put_inflight(const struct ncs_inflight *f) {
  struct writer *w = self;
  if (!w || !raw_fits(w, 128)) return -1;
  ncs_collectors_seen_inflight(collectors, f);
  size_t before = w->raw.len;
  ncs_enc_inflight(&w->raw, f);
  if (w->raw.len != before) w->records++;
  return 0;
}

int ncs_writer_put_gpu_time(const struct ncs_gpu_time *g) {
  struct writer *w = self;
  if (!w || !raw_fits(w, 64)) return -1;
  /* the chunk reached its flush size: the collector stops its pass (the rest stays pending),
   * leaves the fork gate, has the chunk written (ncs_writer_flush_full) and goes on */
  if (w->raw.len + 64 > flush_at(w, 64)) return -1;
  if (keeping()) ncs_agg_gpu(g);
  ncs_collectors_seen_gpu_time(collectors, g); /* observers (live metrics) */
  size_t before = w->raw.len;
  ncs_enc_gpu_time(&w->raw, &w->delta, g);
  if (w->raw.len != before) w->records++;
  return 0;
}

void ncs_writer_flush_full(void) {
  struct writer *w = self;
  if (w && w->raw.len + 64 > flush_at(w, 64)) flush_chunk(w, 0);
}

uint64_t ncs_writer_dropped(void) { return self ? self->dropped_total : 0; }

static void report_drops(struct writer *w, struct ncs_ring *r) {
  uint64_t d = atomic_load_explicit(&r->dropped, memory_order_acquire); /* then r->thread */
  if (d == r->dropped_reported) return;
  ensure_room(w, 64);
  add_drop(w, NCS_DROP_BUFFER_FULL, d - r->dropped_reported, r->thread);
  w->cum_drops[NCS_DROP_BUFFER_FULL] += d - r->dropped_reported;
  w->dropped_total += d - r->dropped_reported;
  r->dropped_reported = d;
}

/* Frees the ring's slots before t for its owner, once the rings file shows the chunk buffer
 * holding them (the order that makes a kill -9 lose nothing: rings.h). */
static void publish_tail(struct writer *w, struct ncs_ring *r, uint64_t t) {
  publish(w);
  atomic_store_explicit(&r->tail, t, memory_order_release);
}

/* A run of KERNEL records at raw[off, off + len) left out of the rows' frame (rowzip.c), to be
 * written as a column chunk of their own; one it refuses stays in the rows. */
static void kernels_run(struct writer *w, size_t off, size_t len, uint32_t records) {
  if (w->nkr == KR_MAX || ncs_rowzip_skip(off, len) != 0) return;
  w->kr[w->nkr++] = (struct ncs_wkrun){(uint32_t)off, (uint32_t)len, records};
  w->kr_bytes += len;
  w->kr_records += records;
}

/* A row chunk's KERNEL records (kernel activity: a poll's are megabytes at high call rates)
 * are written as a column chunk after it, where the reader takes them straight from their
 * columns, not from zstd-coded rows. The queue's pieces added since the last look, walked for
 * their runs of KERNEL records; called while the chunk is compressed as it grows, before each
 * feed (what the helper has been given cannot be left out any more). */
static void kernels_apart(struct writer *w) {
  for (; w->qp_seen < w->nqp; w->qp_seen++) {
    const uint8_t *p = w->raw.buf + w->qp[w->qp_seen].off, *end = p + w->qp[w->qp_seen].len;
    const uint8_t *run = NULL, *at = p;
    uint32_t n = 0;
    while (at < end) {
      uint64_t type, k;
      p = at;
      if (ncs_get_varint(&p, end, &type) || ncs_get_varint(&p, end, &k) || k > (size_t)(end - p)) break; /* never */
      if (type == NCS_REC_KERNEL) {
        w->kernels_seen = 1;
        if (!n++) run = at;
      } else if (n) {
        kernels_run(w, (size_t)(run - w->raw.buf), (size_t)(at - run), n);
        n = 0;
      }
      at = p + k;
    }
    if (n) kernels_run(w, (size_t)(run - w->raw.buf), (size_t)(at - run), n);
  }
}

/* A chunk past NCS_CHUNK_COLUMNS_MAX raw bytes is written as rows (chunk.h): from then on the
 * helper thread compresses what it holds while the writer goes on filling it (rowzip.c). */
static void zip_feed(struct writer *w) {
  if (w->raw.len <= NCS_CHUNK_COLUMNS_MAX || !w->cbuf) return;
  if (!w->zipping)
    w->zipping = ncs_rowzip_begin(w->raw.buf, w->cbuf + NCS_CHUNK_HEADER_SIZE, w->ccap - NCS_CHUNK_HEADER_SIZE,
                                  ROWZIP_LEVEL, w->kernels_seen) == 0;
  if (w->zipping) {
    kernels_apart(w);
    ncs_rowzip_feed(w->raw.len);
  }
}

/* Moves the queue's records into the chunk, in order. They go whole when they fit the chunk's
 * flush size; else record by record, a chunk written whenever the next would pass it (the
 * kernel activity of a poll can be megabytes: in one chunk it would outgrow a bounded file's
 * segment). Bounded mode keeps the records a segment repeats only once they are in a chunk,
 * so a segment written between two of these chunks never repeats a record not yet written. */
static void keep_part(struct writer *w, const uint8_t *p, size_t len, uint32_t records) {
  if (!len) return;
  if (!raw_fits(w, len) && w->records && len <= w->raw_flush) flush_chunk(w, 0); /* a full /dev/shm */
  if (!raw_fits(w, len)) { /* a record larger than a chunk: lost, counted */
    lose(w, records);
    return;
  }
  if (w->nqp < QP_MAX) w->qp[w->nqp++] = (struct ncs_wpiece){(uint32_t)w->raw.len, (uint32_t)len};
  memcpy(w->raw.buf + w->raw.len, p, len);
  w->raw.len += len;
  w->records += records;
  if (keeping()) {
    sticky_take(p, len);
    ncs_agg_queue(p, len); /* kernel activity: the whole run's exposed communication */
  }
}

static void take_queue(struct writer *w, const uint8_t *q, size_t len, uint32_t records) {
  if (w->raw.len + len <= flush_at(w, len)) {
    keep_part(w, q, len, records);
    return;
  }
  const uint8_t *p = q, *end = q + len, *from = q;
  uint32_t n = 0; /* records from `from` on */
  while (p < end) {
    const uint8_t *at = p;
    uint64_t type, k;
    if (ncs_get_varint(&p, end, &type) || ncs_get_varint(&p, end, &k) || k > (size_t)(end - p))
      break; /* not a record (never: ncs_emit wrote them): the rest goes as it is */
    p += k;
    if (w->raw.len + (size_t)(p - from) > flush_at(w, (size_t)(p - from)) && (n || w->records)) { /* write what is before `at` */
      keep_part(w, from, (size_t)(at - from), n);
      records -= n;
      flush_chunk(w, 0);
      from = at;
      n = 0;
    }
    n++;
  }
  keep_part(w, from, (size_t)(end - from), records);
}

/* Returns the fullest ring's fill before the drain, in 1/256ths of its size. */
static unsigned drain(struct writer *w) {
  unsigned fullest = 0;
  uint64_t heads[NCS_MAX_THREADS];
  struct ncs_ring *rings[NCS_MAX_THREADS];
  int states[NCS_MAX_THREADS];
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    rings[i] = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (!rings[i]) continue;
    states[i] = atomic_load_explicit(&rings[i]->state, memory_order_acquire);
    heads[i] = atomic_load_explicit(&rings[i]->head, memory_order_acquire);
  }
  /* definitions the calls up to these heads refer to (call sites) */
  ncs_collectors_walk(collectors, offsetof(struct ncs_collector, prepare));
  /* queue records: anything queued before a ring record we are about to write is taken */
  pthread_mutex_lock(&q_mu);
  uint8_t *qb = q_buf;
  size_t ql = q_len, qcap = q_cap;
  uint32_t qr = q_records;
  q_buf = w->qspare; q_cap = w->qspare_cap; q_len = 0; q_records = 0; q_urgent = 0;
  pthread_mutex_unlock(&q_mu);
  w->qspare = qb;
  w->qspare_cap = qcap;
  ncs_collectors_seen_queue(collectors, qb, ql); /* observers (live metrics) */
  take_queue(w, qb, ql, qr);
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = rings[i];
    if (!r) continue;
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    unsigned fill = (unsigned)(((heads[i] - t) * 256) / ((uint64_t)r->mask + 1));
    if (fill > fullest) fullest = fill;
    while (t != heads[i]) {
      size_t bound = flush_at(w, RING_BATCH * NCS_CALL_MAX + 2048);
      if (w->raw.len + NCS_CALL_MAX + 2048 > bound) { /* the chunk is full: write it */
        publish_tail(w, r, t); /* the records before t are in the chunk, not only the ring */
        flush_chunk(w, 0);
        bound = flush_at(w, RING_BATCH * NCS_CALL_MAX + 2048);
        if (w->raw.len + NCS_CALL_MAX + 2048 > bound) break; /* no room even so: left in the ring */
      }
      if (!r->announced) {
        struct ncs_thread th = {.thread = r->thread, .tid = (uint64_t)r->tid, .name = r->name,
                                .flags = r->flags & NCS_RING_F_MEMORY ? NCS_THREAD_F_NOT_CRASH_SAFE : 0};
        ncs_enc_thread(&w->raw, &th);
        w->records++;
        r->announced = 1;
      }
      /* a batch: up to the next multiple of RING_BATCH, the head, and what the chunk holds
       * for sure; encoded through locals (the output's byte stores alias nothing then) */
      uint64_t n = RING_BATCH - (t & (RING_BATCH - 1));
      if (n > heads[i] - t) n = heads[i] - t;
      size_t fits = (bound - 2048 - w->raw.len) / NCS_CALL_MAX;
      if (n > fits) n = fits ? fits : 1;
      struct ncs_call_delta d = w->delta;
      struct ncs_call_run run = w->run;
      uint8_t *p = w->raw.buf + w->raw.len;
      const struct ncs_call *rec = r->rec;
      uint64_t mask = r->mask, end = t + n;
      uint32_t nrec = (uint32_t)n;
      ncs_collectors_seen_calls(collectors, rec, mask, t, end); /* observers (live metrics) */
      if (keeping()) ncs_agg_calls(rec, mask, t, end);          /* bounded mode's whole-run figures */
      /* the slots come from another core's cache or from memory: ask for the ones a few
       * records ahead (both lines of a 96-byte slot) while this one is encoded */
#define PREFETCH_SLOT_() \
  { \
    const char *ahead_ = (const char *)&rec[(t + PREFETCH_AHEAD) & mask]; \
    __builtin_prefetch(ahead_); \
    __builtin_prefetch(ahead_ + sizeof *rec - 1); \
  }
      if (w->raw.len <= NCS_CHUNK_COLUMNS_MAX) { /* the chunk may still become columns: CALL rows */
        for (; t != end; t++) {
          PREFETCH_SLOT_()
          p += ncs_encode_call_run(p, &d, &run, &rec[t & mask]);
        }
      } else { /* a row chunk for sure (chunk.h): like calls go into CALL_RUN records (encode.h),
                * each closed within the batch (what the rings file shows is whole records) */
        uint8_t *open = NULL; /* the CALL_RUN being filled */
        nrec = 0;
        for (; t != end; t++) {
          PREFETCH_SLOT_()
          p = ncs_encode_call_or_run(p, &open, &nrec, &d, &run, &rec[t & mask]);
        }
        ncs_call_run_close(&open, p);
      }
#undef PREFETCH_SLOT_
      w->delta = d;
      w->run = run;
      w->raw.len = (size_t)(p - w->raw.buf);
      w->records += nrec;
      w->calls += n;
      if ((t & (RING_BATCH - 1)) == 0) publish_tail(w, r, t);
      zip_feed(w);
    }
    publish_tail(w, r, t);
    report_drops(w, r);
    if (states[i] == NCS_SLOT_DEAD && atomic_load(&r->head) == t) {
      atomic_store_explicit(&r->dropped, 0, memory_order_relaxed);
      r->dropped_reported = 0;
      r->announced = 0; /* the next owner of the slot is a new thread */
      atomic_store_explicit(&r->state, NCS_SLOT_FREE, memory_order_release);
    }
  }
  for (unsigned reason = 1; reason < NCS_DROP_REASON_LIMIT; reason++) {
    uint64_t d = atomic_load_explicit(&loose_drops[reason], memory_order_relaxed);
    if (d == loose_reported[reason]) continue;
    ensure_room(w, 64);
    add_drop(w, reason, d - loose_reported[reason], 0);
    w->cum_drops[reason] += d - loose_reported[reason];
    w->dropped_total += d - loose_reported[reason];
    loose_reported[reason] = d;
  }
  publish(w);
  return fullest;
}

/* 1 when a ring is at least 1/NCS_WAKE_FRACTION full (its owner will not wake the writer). */
static int ring_needs_drain(void) {
  for (int i = 0; i < NCS_MAX_THREADS; i++) {
    struct ncs_ring *r = atomic_load_explicit(&ncs_rings[i], memory_order_acquire);
    if (r && atomic_load_explicit(&r->head, memory_order_seq_cst) - atomic_load_explicit(&r->tail, memory_order_relaxed) >=
                 ((uint64_t)r->mask + 1) / NCS_WAKE_FRACTION)
      return 1;
  }
  return 0;
}

/* Sleeps until woken (a ring reached its wake fill, a sync/stop/signal request, a COMM
 * record) or for wait_ns at most. Nothing else wakes a writer that sleeps a flush period.
 * idle: a heartbeat period (nothing to write, nothing in flight): every push (the rings armed,
 * ncs_rings_arm) and every record (w_idle) wakes it too; ncs_rings_disarm and w_idle cleared
 * at its next pass. */
static void writer_sleep(uint64_t wait_ns, int idle, uint64_t flush_ns) {
  uint32_t seq = atomic_load(&w_wake_seq);
  atomic_store(&ncs_writer_sleeping, 1);
  if (idle) atomic_store(&w_idle, 1);
  atomic_thread_fence(memory_order_seq_cst); /* `sleeping` set before the rings are looked at */
  pthread_mutex_lock(&w_mu);
  int asked = w_stop || w_kick || w_sync_req != w_sync_done;
  pthread_mutex_unlock(&w_mu);
  asked |= atomic_load(&x_req) != x_seen;
  pthread_mutex_lock(&q_mu);
  asked |= q_urgent || (idle && q_len);
  pthread_mutex_unlock(&q_mu);
  /* armed after `sleeping` is set: a push that sees its wake_at sees `sleeping`; a ring not
   * drained (a push since the drain, or a chunk buffer that cannot grow): a flush period */
  if (idle && !asked && ncs_rings_arm() != 0 && wait_ns > flush_ns) wait_ns = flush_ns;
  if (!asked && !ring_needs_drain()) {
    struct timespec ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
    syscall(SYS_futex, &w_wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
  }
  atomic_store(&ncs_writer_sleeping, 0);
}

/* 1 while the exec chunk written last is the file's end: its exec has not been released. */
static int exec_holding(void) {
  return x_held && (int32_t)(atomic_load_explicit(&x_released, memory_order_acquire) - x_held) < 0;
}
/* Held: sleeps until woken or for wait_ns (a full ring is not drained: the image is going). */
static void hold_sleep(uint64_t wait_ns) {
  uint32_t seq = atomic_load(&w_wake_seq);
  if (!exec_holding() || atomic_load(&x_req) != x_seen) return;
  struct timespec ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
  syscall(SYS_futex, &w_wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
}

/* The writer's time slice, the shortest the kernel takes (0.1 ms; Linux 6.12 and later, whose
 * EEVDF scheduler lets a thread ask for its slice; earlier kernels ignore it). Its CPU share is
 * unchanged; what changes is how soon it runs once woken on a busy machine: an earlier deadline,
 * so it takes a core from a longer-sliced thread at once instead of waiting up to a slice
 * (1.4 ms on 2 cores), and it gives the core back as soon. Woken half-way through the pages it
 * made present ahead of a thread's head, the writer must run before that thread reaches their
 * end, or the thread takes those page faults itself. Its nice value, policy and reset-on-fork
 * stay as they were (another policy than SCHED_OTHER: left alone); the file thread and the
 * compression helper, started from this thread, inherit it. */
static void writer_short_slice(void) {
  struct { /* the kernel's struct sched_attr (sched_setattr(2)); this glibc does not declare it */
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } a;
  memset(&a, 0, sizeof a);
  if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0 || a.policy != SCHED_OTHER) return;
  a.size = sizeof a;
  a.flags &= 1; /* SCHED_FLAG_RESET_ON_FORK kept; no utilisation clamp touched */
  a.runtime = 100000;
  syscall(SYS_sched_setattr, 0, &a, 0);
}

static void *writer_main(void *arg) {
  struct writer *w = arg;
  pthread_setname_np(pthread_self(), "ncclscope-wr");
  writer_short_slice();
  self = w;
  ncs_fio_start(); /* the file thread: every descriptor below lives in its table */
  open_file(w);
  /* the chunk being built lives in the rings file from now on (nothing is in it yet) */
  size_t mcap = 0, reserved = 0;
  uint8_t *mapped = ncs_rings_buf(&mcap, &reserved);
  if (mapped && mcap >= RAW_CAP && reserved >= RAW_FLUSH_MIN + RAW_SLACK) {
    munmap(w->raw.buf, RAW_CAP);
    w->raw.buf = mapped;
    w->raw.cap = reserved < RAW_CAP ? reserved : RAW_CAP;
    w->raw_mapped = 1;
  }
  pthread_mutex_lock(&w_mu);
  w_file_tried = 1;
  pthread_cond_broadcast(&w_done_cv);
  pthread_mutex_unlock(&w_mu);
  begin_chunk(w);
  ncs_collectors_poll(collectors, 0);
  uint64_t flush_ns = (uint64_t)ncs_cfg.flush_ms * 1000000ull;
  /* after a heartbeat alone, the next one a heartbeat period on (format.h NCS_IDLE_BEAT_MS: 2 s,
   * longer than any flush period, which state.c bounds at 1000 ms) */
  const uint64_t idle_ns = (uint64_t)NCS_IDLE_BEAT_MS * 1000000ull;
  uint64_t next_flush = ncs_now_ns() + flush_ns;
  for (;;) {
    settle_beat(w);
    if (atomic_load_explicit(&w_idle, memory_order_relaxed)) { /* awake after an idle sleep */
      atomic_store(&w_idle, 0);
      ncs_rings_disarm();
    }
    pthread_mutex_lock(&w_mu);
    int stop = w_stop;
    unsigned sync = w_sync_req, sync_drain = w_sync_drain_ms;
    int sync_gpu_off = w_sync_gpu_off;
    w_kick = 0;
    pthread_mutex_unlock(&w_mu);
    uint32_t xr = atomic_load_explicit(&x_req, memory_order_acquire);
    int exec = xr != x_seen;
    if (!stop && !exec && exec_holding()) { /* the exec chunk stays the file's last */
      pthread_mutex_lock(&w_mu);
      w_sync_done = w_sync_req; /* nobody waits for a chunk that will not come */
      w_sync_drain_ms = 0;
      w_sync_gpu_off = 0;
      pthread_cond_broadcast(&w_done_cv);
      pthread_mutex_unlock(&w_mu);
      hold_sleep(flush_ns);
      continue;
    }
    /* the pages the threads reach next, present (rings.c), before the drain: a record waits
     * in its ring at no cost, a page not present when its thread gets there costs that thread
     * a page fault (or its own populating) */
    int tending = ncs_rings_tend(ncs_now_ns());
    /* a ring found over a quarter full: come back in 1 ms (a tight loop is filling it); the
     * rings' work left for the next pass: within a flush period */
    uint64_t wait_ns = drain(w) > 64 ? 1000000ull : tending ? flush_ns : UINT64_MAX;
    ensure_room(w, 65536);
    int syncing = sync != w_sync_done;
    /* collectors holding work (GPU events pending): back within 10 ms, 1 ms when much */
    int busy = ncs_collectors_poll(collectors, stop ? 500 : syncing ? sync_drain : exec ? EXEC_GPU_DRAIN_MS : 0);
    publish(w);
    if (busy > 1) wait_ns = 1000000ull;
    else if (busy && wait_ns > GPU_POLL_MS * 1000000ull) wait_ns = GPU_POLL_MS * 1000000ull;
    if (syncing && sync_gpu_off) ncs_gpu_on = 0; /* exit: CUDA is about to go; time nothing more */
    uint64_t now = ncs_now_ns();
    if (stop || syncing || exec || now >= next_flush) {
      if (stop) ncs_collectors_walk(collectors, offsetof(struct ncs_collector, stop));
      drain(w);
      flush(w, stop ? NCS_CHUNK_F_FINAL : exec ? NCS_CHUNK_F_EXEC : 0, !stop && !syncing && !exec);
      /* a heartbeat alone: the next a whole heartbeat period after its CLOCK */
      next_flush = w->quiet && !busy ? ncs_now_ns() + idle_ns : now + flush_ns;
      if (stop || syncing) ncs_collectors_flushed(collectors, stop); /* observers: as of this chunk */
    }
    if (exec) { /* written (or lost, counted): the requester may exec now */
      x_seen = x_held = xr;
      atomic_store_explicit(&x_done, xr, memory_order_release);
      syscall(SYS_futex, &x_done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    }
    if (syncing) {
      pthread_mutex_lock(&w_mu);
      w_sync_done = sync;
      if (sync == w_sync_req) { w_sync_drain_ms = 0; w_sync_gpu_off = 0; }
      pthread_cond_broadcast(&w_done_cv);
      pthread_mutex_unlock(&w_mu);
    }
    if (stop) break;
    zip_feed(w); /* records the collectors added */
    now = ncs_now_ns();
    /* something to write (calls, records, drops): within a flush period of now, however long
     * the heartbeat period it woke from */
    if (w->records && !w->beat_out && next_flush > now + flush_ns) next_flush = now + flush_ns;
    uint64_t to_flush = next_flush > now ? next_flush - now : 0;
    writer_sleep(wait_ns < to_flush ? wait_ns : to_flush, wait_ns >= to_flush && to_flush > flush_ns, flush_ns);
  }
  ncs_rowzip_stop();
  pthread_mutex_lock(&w_mu);
  w_done = 1;
  pthread_cond_broadcast(&w_done_cv);
  pthread_mutex_unlock(&w_mu);
  return NULL;
}

static void writer_free(struct writer *w) {
  if (!w) return;
  if (!w->raw_mapped && w->raw.buf) munmap(w->raw.buf, RAW_CAP);
  if (w->kbuf) munmap(w->kbuf, RAW_CAP);
  free(w->cbuf);
  free(w->qspare);
  if (w->cctx) ZSTD_freeCCtx(w->cctx);
  free(w);
}

int ncs_writer_start(void) {
  struct writer *w = calloc(1, sizeof *w);
  if (!w) return -1;
  w->fd = -1;
  w->raw_flush = ncs_cfg.keep_bytes && ncs_cfg.keep_bytes / 8 < RAW_FLUSH ? (size_t)(ncs_cfg.keep_bytes / 8) : RAW_FLUSH;
  if (w->raw_flush < RAW_FLUSH_MIN) w->raw_flush = RAW_FLUSH_MIN;
  /* replaced by the rings file's chunk buffer once it exists: a mapping of its own, never
   * touched until then, so unmapping it costs no TLB flush (malloc would write its header) */
  w->raw.buf = mmap(NULL, RAW_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (w->raw.buf == MAP_FAILED) w->raw.buf = NULL;
  w->raw.cap = RAW_CAP;
  w->ccap = NCS_CHUNK_BOUND(RAW_CAP);
  w->cbuf = malloc(w->ccap);
  w->cctx = ZSTD_createCCtx();
  if (!w->raw.buf || !w->cbuf || !w->cctx) goto fail;
  pthread_mutex_lock(&w_mu);
  w_stop = w_done = w_kick = w_file_tried = 0;
  pthread_mutex_unlock(&w_mu);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w_done_cv, &ca);
  pthread_condattr_destroy(&ca);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&w->th, NULL, writer_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) goto fail;
  w->started = 1;
  atomic_store(&w_pid, (int)getpid());
  W = w;
  return 0;
fail:
  ncs_debug("cannot start the writer thread");
  writer_free(w);
  return -1;
}

void ncs_writer_stop(unsigned timeout_ms) {
  struct writer *w = W;
  if (!w || !w->started) return;
  struct timespec deadline;
  ms_from_now(&deadline, timeout_ms);
  pthread_mutex_lock(&w_mu);
  w_stop = 1;
  ncs_writer_wake();
  while (!w_done) {
    if (pthread_cond_timedwait(&w_done_cv, &w_mu, &deadline) == ETIMEDOUT) break;
  }
  int done = w_done;
  pthread_mutex_unlock(&w_mu);
  if (!done) ncs_debug("the final flush did not finish within %u ms: exiting without it", timeout_ms);
  if (done) {
    pthread_join(w->th, NULL);
    if (fd_is_ours(w->fd, (uint64_t)w->high_off, NULL)) ncs_fio_close(w->fd);
    if (w->fd_lost) ncs_debug("the trace's descriptor was taken by the application %u time(s)", w->fd_lost);
    w->fd = -1;
    w->started = 0;
  }
}

int ncs_writer_wait_file(unsigned timeout_ms) {
  struct timespec deadline;
  ms_from_now(&deadline, timeout_ms);
  pthread_mutex_lock(&w_mu);
  while (!w_file_tried && !w_done)
    if (pthread_cond_timedwait(&w_done_cv, &w_mu, &deadline) == ETIMEDOUT) break;
  int tried = w_file_tried;
  pthread_mutex_unlock(&w_mu);
  return tried ? 0 : -1;
}

int ncs_writer_sync(unsigned timeout_ms, unsigned gpu_drain_ms, int gpu_off) {
  struct writer *w = W;
  if (!w || !w->started) return 0;
  struct timespec deadline;
  ms_from_now(&deadline, timeout_ms);
  pthread_mutex_lock(&w_mu);
  if (gpu_drain_ms > w_sync_drain_ms) w_sync_drain_ms = gpu_drain_ms;
  if (gpu_off) w_sync_gpu_off = 1;
  unsigned want = ++w_sync_req;
  w_kick = 1; /* seen even if the writer is not waiting right now */
  ncs_writer_wake();
  while ((int)(w_sync_done - want) < 0 && !w_done) { /* a later request may finish first */
    if (pthread_cond_timedwait(&w_done_cv, &w_mu, &deadline) == ETIMEDOUT) break;
  }
  int done = (int)(w_sync_done - want) >= 0 || w_done;
  pthread_mutex_unlock(&w_mu);
  return done ? 0 : -1;
}

/* ---- exec (exec.c) ---- */
/* Async-signal-safe: atomics, the futex and clock_gettime only; nothing else of the process's
 * is touched, and nothing at all in a vfork child (another pid than the writer's). */
uint32_t ncs_writer_exec(unsigned timeout_ms) {
  struct writer *w = W;
  if (!w || !w->started || (int)syscall(SYS_getpid) != atomic_load(&w_pid)) return 0;
  uint32_t want = atomic_fetch_add(&x_req, 1) + 1;
  ncs_writer_wake();
  struct timespec now, end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  uint64_t end_ns = (uint64_t)end.tv_sec * 1000000000ull + (uint64_t)end.tv_nsec + (uint64_t)timeout_ms * 1000000ull;
  for (;;) {
    uint32_t d = atomic_load_explicit(&x_done, memory_order_acquire);
    if ((int32_t)(d - want) >= 0) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    if (t >= end_ns) break; /* the exec goes ahead: the trace is cut there, its rings file kept */
    struct timespec rel = {(time_t)((end_ns - t) / 1000000000ull), (long)((end_ns - t) % 1000000000ull)};
    syscall(SYS_futex, &x_done, FUTEX_WAIT_PRIVATE, d, &rel, NULL, 0);
  }
  return want;
}

void ncs_writer_exec_failed(uint32_t req) {
  if (!req) return;
  uint32_t r = atomic_load(&x_released);
  while ((int32_t)(req - r) > 0 && !atomic_compare_exchange_weak(&x_released, &r, req)) {}
  ncs_writer_wake();
}

/* ---- fork ---- */
void ncs_writer_atfork_prepare(void) {
  pthread_mutex_lock(&q_mu);
  pthread_mutex_lock(&w_mu);
}
void ncs_writer_atfork_parent(void) {
  pthread_mutex_unlock(&w_mu);
  pthread_mutex_unlock(&q_mu);
}
void ncs_writer_atfork_child(void) {
  /* no writer thread exists here: its buffers are ours to free, its file is the parent's */
  struct writer *w = W;
  W = NULL;
  /* the parent's descriptors were its file thread's (not in this process), or numbers of the
   * table this child inherited: closed only when still the parent's trace */
  int priv = ncs_fio_atfork_child();
  if (w) {
    if (!priv && fd_is_ours(w->fd, (uint64_t)w->high_off, NULL)) close(w->fd);
    writer_free(w);
  }
  ncs_rowzip_atfork_child();
  q_len = 0;
  q_records = 0;
  defs.len = 0; /* the child's file defines again what it uses */
  defs.records = 0;
  sticky.len = 0; /* the parent's communicators are not the child's */
  sticky.records = 0;
  sticky.lost = 0;
  ncs_agg_reset();
  q_urgent = 0;
  atomic_store(&w_idle, 0); /* the parent's writer may have been asleep for a heartbeat period */
  for (int i = 0; i < NCS_DROP_REASON_LIMIT; i++) { atomic_store(&loose_drops[i], 0); loose_reported[i] = 0; }
  w_stop = w_done = w_kick = 0;
  w_file_tried = 0;
  w_sync_req = w_sync_done = 0;
  w_sync_drain_ms = 0;
  w_sync_gpu_off = 0;
  atomic_store(&x_req, 0);
  atomic_store(&x_done, 0);
  atomic_store(&x_released, 0);
  x_seen = x_held = 0;
  atomic_store(&w_pid, 0);
  /* taken by this (the forking) thread in prepare: released as the parent does, so that a
   * checker that follows locks (TSan) sees the same history as the code means */
  pthread_mutex_unlock(&w_mu);
  pthread_mutex_unlock(&q_mu);
}

/* zstd's optional tracing hooks are weak references in libzstd.a; defining them here (hidden)
 * keeps them from becoming dynamic imports of the shim. */
unsigned long long ZSTD_trace_compress_begin(const void *cctx);
void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace);
unsigned long long ZSTD_trace_compress_begin(const void *cctx) { (void)cctx; return 0; }
void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace) { (void)ctx; (void)trace; }
