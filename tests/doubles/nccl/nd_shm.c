/* nd_shm.c — the shared-memory meeting place of a communicator's ranks: creating/joining the
 * segment, the barriers, the staging slots, the point-to-point rings and their doorbells.
 *
 * Contract: nd_seg_join() blocks until all nranks ranks joined (as ncclCommInitRank does),
 * then unlinks the name so nothing is left in /dev/shm (also when it gives up waiting for the
 * others: an aborted or timed-out init). Every wait here gives up with -1
 * when the communicator was aborted/revoked, or a peer process died, so CommAbort and a dead
 * rank never leave a thread stuck forever. Waits sleep on futexes, never spin for long. */
#include "nd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../include/cuda_double.h"

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}
static void futex_wake_all(_Atomic uint32_t *addr) { futex(addr, FUTEX_WAKE, INT32_MAX, NULL); }
static void futex_wait_ms(_Atomic uint32_t *addr, uint32_t val, long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  futex(addr, FUTEX_WAIT, val, &ts);
}

uint64_t nd_hash(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  if (!h) h = 14695981039346656037ull; /* FNV-1a 64 */
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

uint64_t nd_name_tag(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? nd_hash(t, strlen(t), 0) : 0;
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

int nd_is_aborted(struct ncclComm *c) {
  return atomic_load(&c->aborted) || atomic_load(&c->revoked) ||
         (c->seg && atomic_load(&c->seg->aborted));
}

/* A peer process that died leaves the communicator unusable: mark it aborted. */
static int peers_alive(struct ncclComm *c) {
  struct nd_seg *s = c->seg;
  for (uint32_t r = 0; r < s->nranks; r++) {
    int32_t pid = s->ranks[r].pid;
    if (pid > 0 && pid != c->pid && kill(pid, 0) != 0 && errno == ESRCH) {
      atomic_store(&s->aborted, 1);
      return 0;
    }
  }
  return 1;
}

/* Sleeps on *word while it equals val; returns -1 if the comm was aborted meanwhile. */
static int wait_change(struct ncclComm *c, _Atomic uint32_t *word, uint32_t val) {
  for (int i = 0; i < 64; i++) {
    if (atomic_load(word) != val) return 0;
    __builtin_ia32_pause();
  }
  unsigned rounds = 0;
  while (atomic_load(word) == val) {
    if (nd_is_aborted(c)) return -1;
    if ((++rounds & 15) == 0 && !peers_alive(c)) return -1;
    futex_wait_ms(word, val, 50);
  }
  return 0;
}

int nd_barrier_wait(struct ncclComm *c, struct nd_barrier *b) {
  if (c->nranks == 1) return nd_is_aborted(c) ? -1 : 0;
  uint32_t g = atomic_load(&b->gen);
  if (atomic_fetch_add(&b->count, 1) == (uint32_t)c->nranks - 1) {
    atomic_store(&b->count, 0);
    atomic_fetch_add(&b->gen, 1);
    futex_wake_all(&b->gen);
    return 0;
  }
  return wait_change(c, &b->gen, g);
}

unsigned char *nd_slot(struct ncclComm *c, int rank) {
  return (unsigned char *)c->seg + c->seg->slots_off + ((size_t)rank * 2 + (size_t)c->parity) * c->seg->slot_bytes;
}

struct nd_chan *nd_chan_at(struct ncclComm *c, int src, int dst) {
  size_t stride = sizeof(struct nd_chan) + c->seg->chan_bytes;
  return (struct nd_chan *)((unsigned char *)c->seg + c->seg->chans_off +
                            ((size_t)src * c->nranks + (size_t)dst) * stride);
}

unsigned char *nd_chan_buf(struct ncclComm *c, struct nd_chan *ch) {
  return (unsigned char *)(ch + 1);
}

void nd_doorbell_ring(struct ncclComm *c, int rank) {
  _Atomic uint32_t *db = &c->seg->ranks[rank].doorbell;
  atomic_fetch_add(db, 1);
  futex_wake_all(db);
}

int nd_doorbell_wait(struct ncclComm *c, uint32_t seen) {
  return wait_change(c, &c->seg->ranks[c->rank].doorbell, seen);
}

static void layout(int n, uint64_t *slot, uint64_t *chan, uint64_t *slots_off,
                   uint64_t *chans_off, uint64_t *size) {
  *slot = n <= 16 ? (1u << 20) : (256u << 10);
  uint64_t cb = (4u << 20) / (uint64_t)n;
  if (cb > (256u << 10)) cb = 256u << 10;
  if (cb < (16u << 10)) cb = 16u << 10;
  *chan = round_up(cb, 4096);
  *slots_off = round_up(sizeof(struct nd_seg) + (size_t)n * sizeof(struct nd_rank_info), 4096);
  *chans_off = *slots_off + (uint64_t)n * 2 * *slot;
  *size = *chans_off + (uint64_t)n * n * (sizeof(struct nd_chan) + *chan);
}

static int init_timeout_s(void) {
  const char *v = getenv("NCCLDOUBLE_INIT_TIMEOUT_S");
  return v && *v ? atoi(v) : 600;
}

int nd_seg_join(struct ncclComm *c, const char *name, int nranks, int rank) {
  uint64_t slot, chan, soff, coff, size;
  layout(nranks, &slot, &chan, &soff, &coff, &size);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ncclSystemError;
  struct stat st;
  if (fstat(fd, &st) != 0 || ((uint64_t)st.st_size < size && ftruncate(fd, (off_t)size) != 0)) {
    close(fd);
    return ncclSystemError;
  }
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != size) { /* another nranks made it */
    close(fd);
    return ncclInvalidUsage;
  }
  void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return ncclSystemError;
  struct nd_seg *s = m;
  uint32_t zero = 0;
  if (atomic_compare_exchange_strong(&s->state, &zero, 1)) {
    s->magic = ND_SEG_MAGIC;
    s->nranks = (uint32_t)nranks;
    s->slot_bytes = slot;
    s->chan_bytes = chan;
    s->slots_off = soff;
    s->chans_off = coff;
    s->size = size;
    atomic_store(&s->state, 2);
    futex_wake_all(&s->state);
  }
  while (atomic_load(&s->state) != 2) futex_wait_ms(&s->state, 1, 10);
  if (s->magic != ND_SEG_MAGIC || s->nranks != (uint32_t)nranks) {
    munmap(m, size);
    return ncclInvalidUsage;
  }
  int32_t unclaimed = 0;
  if (!atomic_compare_exchange_strong(&s->ranks[rank].claimed, &unclaimed, 1)) {
    munmap(m, size); /* two processes claimed the same rank */
    return ncclInvalidUsage;
  }
  c->seg = s;
  c->map_len = size;
  s->ranks[rank].pid = c->pid;
  s->ranks[rank].dev = c->nvml_dev;
  s->ranks[rank].node = c->node;
  uint32_t j = atomic_fetch_add(&s->joined, 1) + 1;
  if (j == (uint32_t)nranks) {
    shm_unlink(name); /* everyone has it mapped now */
    futex_wake_all(&s->joined);
  }
  uint64_t deadline = cudaDoubleNowNs() + (uint64_t)init_timeout_s() * 1000000000ull;
  while ((j = atomic_load(&s->joined)) < (uint32_t)nranks) {
    if (atomic_load(&c->aborted) || cudaDoubleNowNs() > deadline) {
      /* given up before every rank joined: the name goes, as NCCL's creator unlinks its
       * segment when it closes it before every peer attached (shmutils.cc, ncclShmClose);
       * a rank still to come makes a new segment and fails the same way */
      shm_unlink(name);
      c->seg = NULL;
      munmap(m, size);
      return ncclSystemError;
    }
    futex_wait_ms(&s->joined, j, 50);
  }
  return ncclSuccess;
}

void nd_seg_leave(struct ncclComm *c) {
  if (c->seg) munmap(c->seg, c->map_len);
  c->seg = NULL;
}
