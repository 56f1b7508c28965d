/* callsite.c — call-site ids: a short stack of return addresses hashed into an id.
 *
 * Contract:
 *   - The unwinder is libunwind's unw_backtrace, loaded privately at activation with
 *     dlopen("libunwind.so.8", RTLD_LOCAL | RTLD_LAZY): its _Unwind_* exports never enter the
 *     process's global scope (a C++ program keeps libgcc_s's unwinder). Without libunwind,
 *     glibc's backtrace() is used.
 *   - libunwind's own pages: its imports of mmap and munmap go to unwmem.c (a thread's first
 *     unw_backtrace builds a 256 KiB trace cache: mapped in one call, reused after a thread
 *     exits). With the memo, a stack's first unwind walks libunwind's cursor instead (which
 *     the memo needs anyway): a thread whose stacks the memo keeps never builds that cache.
 *   - libunwind's own descriptors: it keeps a pipe to test addresses before reading them (when
 *     it walks a frame without unwind information it reads a byte from the pipe and writes the
 *     address's byte into it; a read that fails closes both numbers and opens a new pipe).
 *     Opened at its first unwind, the pipe would take the job's lowest free numbers, and a job
 *     that closes every descriptor and opens its own files there would have libunwind read,
 *     write and close them. The shim exports pipe2: a call made from libunwind's text gets both
 *     ends moved high (ncs_fd_move_high), like every descriptor of the shim; every other
 *     caller gets the next pipe2 in the lookup order (libc's, or a later preload's: a tool that
 *     interposes pipe2 after the shim still sees the job's calls), found by the constructor.
 *   - ncs_callsite_capture() runs on the hot path: unwinds up to NCCLSCOPE_CALLSITE_DEPTH
 *     frames starting at the wrapper's caller, hashes them (a multiply per address, folded to
 *     32 bits, never 0) and looks the id up in a fixed, lock-free open-addressing
 *     table. The first thread to see an id stores its frames there (claim by CAS, then a
 *     release store of `ready`). No allocation, no lock. A full table gives id 0.
 *   - The memo (x86-64, libunwind): a stack once unwound is remembered with where each of its
 *     return addresses sat, as distances from the caller's stack pointer; a later call from the
 *     same return address whose stack holds the same addresses at the same distances gets the
 *     same id without an unwind (docs/SHIM.md, "Call sites": the rule, why it gives what an
 *     unwind gives, and its residual risk). Its loads stay inside the parts of the thread's
 *     stacks that full unwinds of that thread have read; anything else unwinds in full, as
 *     without the memo. NCCLSCOPE_DEBUG=1 says at exit how many captures unwound.
 *   - The "callsites" collector (hooks.h) defines each id once per file, on the writer thread:
 *     its prepare hook runs after the writer has seen the rings' heads and before it writes
 *     those calls, and hands the writer (ncs_writer_put_definition) a MODULE record for every
 *     object not yet named (its path, load address and GNU build id, read from its notes in
 *     memory), then the CALLSITE record with module index, offset and nearest
 *     dynamic symbol (what dladdr answers, looked up for up to BATCH sites at once: ask_all) of
 *     every id claimed so far: each id is defined before the first CALL that uses it. The
 *     writer writes definitions again when a chunk holding them is lost.
 * Ids are only meaningful within one file; two stacks with the same 32-bit hash share an id. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <execinfo.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks.h"
#include "internal.h"

#define SLOTS 2048
#define MAXF 32
struct site {
  _Atomic uint32_t id;
  _Atomic int ready;
  uint32_t nframes;
  int emitted;              /* writer only: defined in the current file */
  uintptr_t frames[MAXF];
};
static struct site sites[SLOTS];
static _Atomic uint32_t claimed; /* ids claimed so far (capture) */
/* order[k]: 1 + the slot of the k-th id claimed (0: not yet published), so that the writer
 * visits the claimed slots only (scanning all of `sites` touched its 136 pages, ~2 ms of the
 * shim's fixed cost per process on the development VM) */
static _Atomic uint16_t order[SLOTS];
static uint32_t defined;          /* writer only: ids defined in the current file */

typedef int (*bt_fn)(void **, int);
static bt_fn unwinder;

/* ---- the memo (x86-64): a stack recognised by where its return addresses sit ----
 * A call pushes its return address just below the caller's stack pointer: frame i's address
 * (i >= 1) sits at sp_i - 8, sp_i being frame i's stack pointer. An entry keeps a stack's
 * addresses and, for each, that slot's distance from frame 0's stack pointer (the wrapper's
 * caller's at the call). A later call from the same return address whose stack holds every
 * address at its distance is that stack: frame i's address fixes frame i's function and the
 * point in it, and with them (for a frame of fixed size) where its return address is, so each
 * slot checked is the real one (docs/SHIM.md, "Call sites"). */
#if defined(__x86_64__)
#include <ucontext.h>
#define MEMO 1
#define MEMO_SLOTS 1024
#define MEMO_WAYS 16  /* entries looked at per return address */
#define MEMO_MAXF 16  /* deeper stacks are not remembered */
struct __attribute__((aligned(64))) memo {
  _Atomic uintptr_t ra;   /* frame 0's address, the key; 0: free (claimed by CAS) */
  _Atomic uint32_t id;    /* stored last, with release; 0 while being written */
  uint16_t nf;            /* frames; 0: the marker (a stack through ra that did not check out) */
  uint16_t reach;         /* 8-byte words from the stack pointer to the end of the last slot */
  uint16_t at[MEMO_MAXF]; /* frame i's slot (i >= 1): 8-byte words above the stack pointer */
  uintptr_t ip[MEMO_MAXF];
};
static struct memo memo[MEMO_SLOTS];
/* parts of the calling thread's stacks known to be mapped, each from lo to hi: a full unwind of
 * this thread read it; [0] the one extended last, [1] the one before (a thread that runs on two
 * stacks, its own and a coroutine's, keeps both) */
struct span { uintptr_t lo, hi; };
static __thread struct span known[2] __attribute__((tls_model("initial-exec")));
/* libunwind's cursor interface (libunwind.h's unw_getcontext, unw_init_local, unw_step,
 * unw_get_reg, unw_is_signal_frame for x86-64); the cursor is 127 words in libunwind 1.x */
#define UNW_CURSOR_WORDS 256
#define UNW_X86_64_RSP 7
#define UNW_X86_64_RIP 16
static struct {
  int (*getcontext)(ucontext_t *);
  int (*init_local)(void *, ucontext_t *);
  int (*step)(void *);
  int (*get_reg)(void *, int, uint64_t *);
  int (*is_signal_frame)(void *);
} cursor;
static int memo_on; /* set once at start, before the first capture */

static void memo_start(void *libunwind) {
  cursor.getcontext = (int (*)(ucontext_t *))dlsym(libunwind, "_Ux86_64_getcontext");
  cursor.init_local = (int (*)(void *, ucontext_t *))dlsym(libunwind, "_ULx86_64_init_local");
  cursor.step = (int (*)(void *))dlsym(libunwind, "_ULx86_64_step");
  cursor.get_reg = (int (*)(void *, int, uint64_t *))dlsym(libunwind, "_ULx86_64_get_reg");
  cursor.is_signal_frame = (int (*)(void *))dlsym(libunwind, "_ULx86_64_is_signal_frame");
  memo_on = cursor.getcontext && cursor.init_local && cursor.step && cursor.get_reg && cursor.is_signal_frame &&
            ncs_cfg.callsite_depth <= MEMO_MAXF;
}

/* libunwind's first use on this thread (its set-up, which may allocate), through the cursor:
 * no trace cache. */
static void memo_warm(void) {
  ucontext_t uc;
  struct { uint64_t w[UNW_CURSOR_WORDS]; } c;
  if (cursor.getcontext(&uc) >= 0 && cursor.init_local(&c, &uc) >= 0) cursor.step(&c);
}
#endif

static int glibc_bt(void **buf, int n) { return backtrace(buf, n); }

static _Atomic uintptr_t unw_lo, unw_hi; /* libunwind's text; 0 until loaded */

typedef int (*pipe2_fn)(int[2], int);
static pipe2_fn next_pipe2; /* the pipe2 after the shim's (libc's, or another preload's) */

void ncs_pipe2_resolve(void) { /* constructor: never from pipe2 itself, which a signal handler may call */
  next_pipe2 = (pipe2_fn)dlsym(RTLD_NEXT, "pipe2"); /* as the job's own reference binds: an unversioned
                                                      * interposer too (dlvsym would skip it) */
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags) {
  pipe2_fn next = next_pipe2; /* NULL only before the shim's constructor: the plain system call */
  if ((next ? next(fds, flags) : (int)syscall(SYS_pipe2, fds, flags)) != 0) return -1; /* errno set, as libc's */
  uintptr_t ra = (uintptr_t)__builtin_return_address(0), lo = atomic_load_explicit(&unw_lo, memory_order_acquire);
  if (NCS_UNLIKELY(lo && ra >= lo && ra < atomic_load_explicit(&unw_hi, memory_order_relaxed))) {
    int saved = errno;
    fds[0] = ncs_fd_move_high(fds[0]);
    fds[1] = ncs_fd_move_high(fds[1]);
    errno = saved;
  }
  return 0;
}

/* Where an object stands in the loader's list (dl_iterate_phdr's order: each new object is
 * appended to the main namespace's list): `at`, the index of the object loaded at `addr` (-1:
 * not seen), and `n`, how many objects were listed. */
struct obj_pos { uintptr_t addr; int n, at; };
static int obj_pos_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct obj_pos *q = arg;
  if (q->at < 0 && q->addr && info->dlpi_addr == q->addr) q->at = q->n;
  q->n++;
  return 0;
}

/* 1 when dlopen handed back an object listed among the first n_before, i.e. one the job had
 * loaded before the shim's dlopen (a RTLD_NOLOAD probe by name was a second search of the
 * library path and of ld.so.cache, whose mapping is unmapped again: ~10 system calls and a TLB
 * flush on every CPU the job ran on, at every activation). An object listed in another
 * namespace can make a fresh copy look like the job's: its pages are then left as libunwind
 * maps them (slower, never wrong). */
static int loaded_before(void *h, int n_before) {
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return 1;
  struct obj_pos q = {(uintptr_t)lm->l_addr, 0, -1};
  dl_iterate_phdr(obj_pos_cb, &q);
  return q.at < 0 || q.at < n_before;
}

static void callsite_start(void) {
  if (!ncs_cfg.callsite_depth || unwinder) return;
  ncs_gate_enter();
  struct obj_pos before = {0, 0, -1};
  dl_iterate_phdr(obj_pos_cb, &before);
  void *h = dlopen("libunwind.so.8", RTLD_LOCAL | RTLD_LAZY);
  int theirs = h && loaded_before(h, before.n); /* the job's own copy */
  bt_fn f = h ? (bt_fn)dlsym(h, "unw_backtrace") : NULL;
  /* its pages: populated at once, trace caches kept (unwmem.c); never in a libunwind the job
   * loaded itself (dlopen handed us the job's object then) */
  if (f && !theirs) ncs_unwmem_install(h);
#ifdef MEMO
  if (f) memo_start(h);
#endif
  uintptr_t lo, hi;
  if (f && ncs_text_range((const void *)f, &lo, &hi) == 0) { /* before its first unwind opens the pipe */
    atomic_store_explicit(&unw_hi, hi, memory_order_relaxed);
    atomic_store_explicit(&unw_lo, lo, memory_order_release);
  }
  if (!f) f = glibc_bt;
  void *warm[4];
#ifdef MEMO
  if (memo_on) memo_warm(); /* the memo learns through the cursor: no trace cache here */
  else
#endif
    f(warm, 4); /* first call may allocate (glibc loads libgcc_s, libunwind sets up caches) */
  ncs_gate_leave();
  if (f == glibc_bt) ncs_debug("libunwind.so.8 not available: call sites use glibc backtrace()");
  unwinder = f;
}

/* A 64-bit hash of n return addresses, a multiply per address (byte-wise FNV-1a over them was
 * a chain of 8 multiplies per address, most of the capture's time after the unwinding). */
static uint64_t frames_hash(void *const *f, int n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    uint64_t x = (uint64_t)(uintptr_t)f[i] * 0xbf58476d1ce4e5b9ull;
    h = (h ^ x ^ (x >> 31)) * 0x94d049bb133111ebull;
  }
  return h ^ (h >> 29);
}

/* The id of a stack of nf frames: from the table, or claimed there for it. */
static uint32_t site_id(void *const *fr, int nf) {
  uint64_t h = frames_hash(fr, nf);
  uint32_t id = (uint32_t)(h ^ (h >> 32));
  if (!id) id = 1;
  for (uint32_t i = id & (SLOTS - 1), k = 0; k < SLOTS; k++, i = (i + 1) & (SLOTS - 1)) {
    uint32_t cur = atomic_load_explicit(&sites[i].id, memory_order_acquire);
    if (cur == id) return id;
    if (cur != 0) continue;
    uint32_t expect = 0;
    if (atomic_compare_exchange_strong(&sites[i].id, &expect, id)) {
      for (int f = 0; f < nf; f++) sites[i].frames[f] = (uintptr_t)fr[f];
      sites[i].nframes = (uint32_t)nf;
      atomic_store_explicit(&sites[i].ready, 1, memory_order_release);
      uint32_t k = atomic_fetch_add_explicit(&claimed, 1, memory_order_release);
      if (k < SLOTS) atomic_store_explicit(&order[k], (uint16_t)(i + 1), memory_order_release);
      return id;
    }
    if (expect == id) return id;
  }
  return 0;
}

#ifdef MEMO
/* Where the entries for return address ra start. */
static inline uint32_t memo_index(uintptr_t ra) {
  return (uint32_t)((ra * 0x9E3779B97F4A7C15ull) >> 40) & (MEMO_SLOTS - 1);
}

/* MEMO_LEARN, or the id of the remembered stack that the stack above sp (the caller's stack
 * pointer) holds: 0 when none does, MEMO_LEARN when none does and a stack through ra may still
 * be remembered (a free entry for it, no marker). */
#define MEMO_LEARN (1ull << 32)
static inline uint64_t memo_find(uintptr_t ra, const uintptr_t *sp) {
  uintptr_t s = (uintptr_t)sp, hi = 0; /* the end of the known part sp is in, 0: none */
  if (s >= known[0].lo && s <= known[0].hi) hi = known[0].hi;
  else if (s >= known[1].lo && s <= known[1].hi) hi = known[1].hi;
  for (uint32_t i = memo_index(ra), k = 0; k < MEMO_WAYS; k++, i = (i + 1) & (MEMO_SLOTS - 1)) {
    const struct memo *m = &memo[i];
    uintptr_t key = atomic_load_explicit(&m->ra, memory_order_relaxed);
    if (!key) return MEMO_LEARN; /* entries are claimed in probe order: none after a free one */
    if (key != ra) continue;
    uint32_t id = atomic_load_explicit(&m->id, memory_order_acquire);
    uint32_t nf = m->nf;
    if (!id) continue;      /* being written */
    if (!nf) return 0;      /* the marker */
    if (s + 8u * m->reach > hi) continue;
    /* in order, stopping at the first that differs: each slot read after a match is in a frame
     * that is on the stack now (for frames of fixed size) */
    uint32_t f = 1;
    while (f < nf && sp[m->at[f]] == m->ip[f]) f++;
    if (f == nf) return id;
  }
  return 0;
}

/* Stores e (its id last, with release) into the first free entry for e->ra, unless an equal
 * entry is there already, or the return address's entries are full. */
static void memo_store(const struct memo *e) {
  uintptr_t ra = atomic_load_explicit(&e->ra, memory_order_relaxed);
  for (uint32_t i = memo_index(ra), k = 0; k < MEMO_WAYS; k++, i = (i + 1) & (MEMO_SLOTS - 1)) {
    struct memo *m = &memo[i];
    uintptr_t expect = 0;
    if (atomic_compare_exchange_strong_explicit(&m->ra, &expect, ra, memory_order_relaxed, memory_order_relaxed)) {
      m->nf = e->nf;
      m->reach = e->reach;
      memcpy(m->at, e->at, sizeof m->at);
      memcpy(m->ip, e->ip, sizeof m->ip);
      atomic_store_explicit(&m->id, atomic_load_explicit(&e->id, memory_order_relaxed), memory_order_release);
      return;
    }
    if (expect != ra || !atomic_load_explicit(&m->id, memory_order_acquire)) continue;
    if (m->nf == e->nf && m->reach == e->reach && !memcmp(m->at, e->at, sizeof m->at) &&
        !memcmp(m->ip, e->ip, sizeof m->ip))
      return; /* another thread remembered the same stack */
  }
}

/* [lo, hi] was read by a full unwind: joined to the known part it overlaps (one stack: each part
 * lies in one mapping), else the newest part, the oldest forgotten. */
static void known_extend(uintptr_t lo, uintptr_t hi) {
  struct span x = {lo, hi};
  for (int j = 0; j < 2; j++) {
    struct span k = known[j];
    if (k.hi && lo <= k.hi && k.lo <= hi) {
      x.lo = lo < k.lo ? lo : k.lo;
      x.hi = hi > k.hi ? hi : k.hi;
      if (j == 0) { known[0] = x; return; }
      break;
    }
  }
  known[1] = known[0];
  known[0] = x;
}

/* Unwinds with libunwind's cursor (it gives each frame's stack pointer) from the frame
 * returning to ra_at's address on, up to the depth: the addresses into fr, and into e the
 * stack's memo entry (all but its id). The number of frames, or 0 when a frame does not check
 * out: each frame i >= 1 has its address in the word just below its stack pointer, the stack
 * pointers rise, no frame is a signal frame, and the walk ends at the depth or at the stack's
 * end (not in an error). Extends the thread's known stack by what the walk read. Under the
 * fork gate (the caller's). Its first unwind on a thread is the only one there for a stack
 * the memo then remembers: unw_backtrace (and its 256 KiB trace cache per thread, ~0.4 ms of
 * a short process's CPU for each calling thread) only for stacks the memo cannot keep. */
static int memo_walk(void *const *ra_at, void **fr, struct memo *e) {
  memset(e, 0, sizeof *e);
  atomic_init(&e->ra, (uintptr_t)*ra_at);
  ucontext_t uc;
  struct { uint64_t w[UNW_CURSOR_WORDS]; } c;
  uintptr_t sp0 = (uintptr_t)(ra_at + 1), sp = 0, prev = 0;
  int got = 0, skipped = 0, step = 1, depth = (int)ncs_cfg.callsite_depth;
  if (cursor.getcontext(&uc) < 0 || cursor.init_local(&c, &uc) < 0) return 0;
  while (got < depth && (step = cursor.step(&c)) > 0) {
    uint64_t ip, rsp;
    if (cursor.get_reg(&c, UNW_X86_64_RIP, &ip) < 0 || cursor.get_reg(&c, UNW_X86_64_RSP, &rsp) < 0) return 0;
    if (got == 0 && (uintptr_t)ip != (uintptr_t)*ra_at) { /* the shim's own frames */
      if (++skipped > 8) return 0;
      continue;
    }
    sp = (uintptr_t)rsp;
    if (cursor.is_signal_frame(&c) > 0) return 0;
    if (got == 0 ? sp != sp0 : sp <= prev || *(const uintptr_t *)(sp - 8) != (uintptr_t)ip) return 0;
    if (got > 0) {
      if ((sp - sp0) / 8 > UINT16_MAX) return 0;
      e->at[got] = (uint16_t)((sp - 8 - sp0) / 8);
    }
    fr[got] = (void *)(uintptr_t)ip;
    e->ip[got++] = (uintptr_t)ip;
    prev = sp;
  }
  if (step < 0 || got == 0 || (sp - sp0) / 8 > UINT16_MAX) return 0;
  e->nf = (uint16_t)got;
  e->reach = (uint16_t)((sp - sp0) / 8);
  known_extend(sp0, sp);
  return got;
}

#endif

static _Atomic uint64_t unwinds; /* captures that unwound (NCCLSCOPE_DEBUG=1 says how many at exit) */

/* The capture without the memo's answer: unwinds with unw_backtrace (or glibc's backtrace). */
static __attribute__((noinline)) uint32_t capture_unwind(void *const *ra_at) {
  unsigned depth = ncs_cfg.callsite_depth;
  bt_fn bt = unwinder;
  if (!depth || !bt) return 0;
  atomic_fetch_add_explicit(&unwinds, 1, memory_order_relaxed);
  if (depth > MAXF) depth = MAXF;
  void *ra = *ra_at, *buf[MAXF + 6];
  ncs_gate_enter(); /* the unwinder reads the loader's lists under its lock (dl_iterate_phdr) */
  int n = bt(buf, (int)depth + 6);
  ncs_gate_leave();
  int start = 0;
  while (start < n && buf[start] != ra) start++;
  if (start == n) start = n > 2 ? 2 : 0; /* the caller's address was not seen: best effort */
  int nf = n - start;
  if (nf > (int)depth) nf = (int)depth;
  if (nf <= 0) return 0;
  return site_id(&buf[start], nf);
}

#ifdef MEMO
/* The capture of a stack the memo may remember: the cursor's walk (memo_walk), its id, and the
 * stack remembered; a stack that does not check out leaves a marker (no stack through that
 * return address is remembered then) and is unwound by capture_unwind. */
static __attribute__((noinline)) uint32_t capture_learn(void *const *ra_at) {
  struct memo e;
  void *fr[MEMO_MAXF];
  ncs_gate_enter(); /* libunwind reads the loader's lists under its lock */
  int nf = memo_walk(ra_at, fr, &e);
  ncs_gate_leave();
  if (nf <= 0) {
    memset(&e, 0, sizeof e);
    atomic_init(&e.ra, (uintptr_t)*ra_at);
    atomic_init(&e.id, 1); /* nf 0: the marker */
    memo_store(&e);
    return capture_unwind(ra_at);
  }
  atomic_fetch_add_explicit(&unwinds, 1, memory_order_relaxed);
  uint32_t id = site_id(fr, nf);
  if (id) {
    atomic_store_explicit(&e.id, id, memory_order_relaxed);
    memo_store(&e);
  }
  return id;
}
#endif

uint32_t ncs_callsite_capture(void *const *ra_at) {
#ifdef MEMO
  if (memo_on) {
    uint64_t got = memo_find((uintptr_t)*ra_at, (const uintptr_t *)(ra_at + 1));
    if ((uint32_t)got) return (uint32_t)got;
    return got == MEMO_LEARN ? capture_learn(ra_at) : capture_unwind(ra_at);
  }
#endif
  return capture_unwind(ra_at);
}

/* ---- writer side ---- */

#define MAXMOD 512
/* Module indexes are stable for the life of a file. */
static struct { uintptr_t base; } mods[MAXMOD];
static uint32_t nmods;

/* The GNU build id of the object loaded at `base`, read from its PT_NOTE segments in memory
 * (never from its file), as hex into hex[41]: the decoder checks it against the file it finds
 * after the run. "" when the object has none. Writer thread, under the gate (the loader's lock). */
struct build_id_ask { uintptr_t base; char *hex; int main_program; };
static int build_id_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct build_id_ask *q = arg;
  uintptr_t lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_vaddr < lo) lo = info->dlpi_phdr[i].p_vaddr;
  if (lo == UINTPTR_MAX || info->dlpi_addr + (lo & ~(uintptr_t)0xfff) != q->base) return 0;
  q->main_program = !info->dlpi_name || !info->dlpi_name[0];
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *e = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= e) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      const uint8_t *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
      const uint8_t *next = desc + ((n->n_descsz + 3) & ~3u);
      if (next > e || next <= p) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        uint32_t k = n->n_descsz < 20 ? n->n_descsz : 20;
        for (uint32_t j = 0; j < k; j++) {
          q->hex[2 * j] = digits[desc[j] >> 4];
          q->hex[2 * j + 1] = digits[desc[j] & 15];
        }
        q->hex[2 * k] = 0;
        return 1;
      }
      p = next;
    }
  }
  return 1; /* the object, without a build id */
}

static uint32_t module_of(struct ncs_wbuf *w, const Dl_info *di, uint32_t *records) {
  uintptr_t base = (uintptr_t)di->dli_fbase;
  uint32_t i = 0;
  while (i < nmods && mods[i].base != base) i++;
  if (i == MAXMOD) return 0;
  if (i < nmods) return i + 1;
  struct ncs_module m = {.module = i + 1, .base = base, .path = di->dli_fname};
  struct build_id_ask q = {base, m.build_id, 0};
  dl_iterate_phdr(build_id_cb, &q);
  /* the loader names the program as it was run ("./train"): its absolute path instead, so the
   * decoder finds it from another directory */
  static char exe[4096]; /* writer thread only */
  ssize_t n;
  if (q.main_program && (!m.path || m.path[0] != '/') && (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    exe[n] = 0;
    m.path = exe;
  }
  size_t before = w->len;
  ncs_enc_module(w, &m);
  if (w->overflow || w->len == before) return 0;
  (*records)++;
  mods[i].base = base;
  nmods++;
  return i + 1;
}

/* ---- what dladdr answers, for a batch of addresses at once ----
 * dladdr scans every dynamic symbol of the object for each address it is asked (libc's ~3,000:
 * ~47,000 instructions a lookup, a third of a 10-call process's instructions in the shim). Here
 * the frames of up to BATCH sites are looked up together: one dl_iterate_phdr, and one scan
 * per object over its GNU hash table's symbols, in dladdr's order and with its rule (glibc
 * elf/dl-addr.c: the symbol whose [value, value + size) holds the address, or equals it when
 * its size is 0, the highest such value winning, the first found among equal ones; no
 * undefined symbol of value 0, no absolute or TLS symbol). An object without a GNU hash
 * table gets dladdr itself. Answers are remembered (the frames of thread starts and of the
 * program's main loop recur in every site) until the loader adds or removes an object. */
#define BATCH 64
#define ANSWERED_SLOTS 512
static struct { uintptr_t addr; Dl_info di; } answered[ANSWERED_SLOTS]; /* writer thread only */
static unsigned long long answered_adds, answered_subs;
static struct ask {
  uintptr_t addr;          /* the return address - 1 */
  Dl_info di;              /* dli_fbase NULL: in no object */
  const ElfW(Sym) *best;
} asks[BATCH * MAXF];      /* writer thread only */
static uint32_t nasks;

/* A dynamic-section address: relocated in place by the loader, except in a read-only dynamic
 * section (the vDSO's), where it is still relative to the load address. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) p) {
  return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static void scan_symbols(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn, uint32_t *here, uint32_t nhere) {
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gnu = NULL;
  size_t strsz = 0;
  for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)dyn_addr(info, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRTAB) strtab = (const char *)dyn_addr(info, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRSZ) strsz = d->d_un.d_val;
    else if (d->d_tag == DT_GNU_HASH) gnu = (const uint32_t *)dyn_addr(info, d->d_un.d_ptr);
  }
  uintptr_t base = info->dlpi_addr, lo = UINTPTR_MAX, hi = 0;
  for (uint32_t j = 0; j < nhere; j++) {
    if (asks[here[j]].addr < lo) lo = asks[here[j]].addr;
    if (asks[here[j]].addr > hi) hi = asks[here[j]].addr;
  }
  if (!symtab || !strtab || !gnu) { /* dladdr's own answer */
    for (uint32_t j = 0; j < nhere; j++) {
      Dl_info di;
      struct ask *q = &asks[here[j]];
      if (dladdr((void *)q->addr, &di) && di.dli_fbase == q->di.dli_fbase) q->di = di;
    }
    return;
  }
  uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
  const uint32_t *buckets = gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4), *chain0 = buckets + nbuckets - symoffset;
  for (uint32_t b = 0; b < nbuckets; b++) {
    uint32_t i = buckets[b];
    if (!i) continue;
    const uint32_t *h = &chain0[i];
    do {
      const ElfW(Sym) *sym = &symtab[i];
      uintptr_t v = base + sym->st_value;
      if (v <= hi && (sym->st_shndx != SHN_UNDEF || sym->st_value != 0) && sym->st_shndx != SHN_ABS &&
          ELF64_ST_TYPE(sym->st_info) != STT_TLS && sym->st_name < strsz && v + sym->st_size > lo - (sym->st_size == 0))
        for (uint32_t j = 0; j < nhere; j++) {
          struct ask *q = &asks[here[j]];
          if (q->addr < v) continue;
          int in = ((sym->st_shndx == SHN_UNDEF || sym->st_size == 0) && q->addr == v) || q->addr < v + sym->st_size;
          if (in && (!q->best || q->best->st_value < sym->st_value)) q->best = sym;
        }
      i++;
    } while ((*h++ & 1u) == 0);
  }
  for (uint32_t j = 0; j < nhere; j++) {
    struct ask *q = &asks[here[j]];
    if (q->best) {
      q->di.dli_sname = strtab + q->best->st_name;
      q->di.dli_saddr = (void *)(base + q->best->st_value);
    }
  }
}

static int ask_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uint32_t *left = arg;
  uintptr_t lo = UINTPTR_MAX;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && ph->p_vaddr < lo) lo = ph->p_vaddr;
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
  }
  if (lo == UINTPTR_MAX) return 0;
  long ps = sysconf(_SC_PAGESIZE);
  uintptr_t pg = ps > 0 ? (uintptr_t)ps : 4096;
  static uint32_t here[BATCH * MAXF];
  uint32_t nhere = 0;
  for (uint32_t k = 0; k < nasks; k++) {
    struct ask *q = &asks[k];
    int in = 0;
    if (q->di.dli_fbase) continue;
    for (int i = 0; i < info->dlpi_phnum && !in; i++) {
      const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
      uintptr_t rel = q->addr - info->dlpi_addr;
      in = ph->p_type == PT_LOAD && rel >= ph->p_vaddr && rel - ph->p_vaddr < ph->p_memsz;
    }
    if (!in) continue;
    here[nhere++] = k;
    (*left)--;
    /* as dladdr names them: the loader's name, the program as it was run */
    q->di.dli_fname = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : program_invocation_name;
    q->di.dli_fbase = (void *)(info->dlpi_addr + (lo & ~(pg - 1)));
  }
  if (nhere) scan_symbols(info, dyn, here, nhere);
  return *left == 0;
}

/* The loader's counts of objects added and removed (glibc's dl_phdr_info extension): the first
 * object's visit. */
static int counts_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  unsigned long long *c = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
  } else {
    c[0] = c[1] = ~0ull; /* unknown: nothing is remembered */
  }
  return 1;
}

static uint32_t answered_slot(uintptr_t a) { return (uint32_t)((a * 0x9E3779B97F4A7C15ull) >> 40) & (ANSWERED_SLOTS - 1); }

/* Looks up asks[0 .. nasks): dli_fbase NULL where no object holds the address. Writer thread. */
static void ask_all(void) {
  unsigned long long c[2] = {0, 0};
  ncs_gate_enter(); /* dl_iterate_phdr takes the loader's lock */
  dl_iterate_phdr(counts_cb, c);
  if (c[0] != answered_adds || c[1] != answered_subs || c[0] == ~0ull) { /* an object came or went */
    memset(answered, 0, sizeof answered);
    answered_adds = c[0];
    answered_subs = c[1];
  }
  uint32_t left = 0;
  for (uint32_t k = 0; k < nasks; k++) {
    uint32_t at = answered_slot(asks[k].addr);
    asks[k].best = NULL;
    if (answered[at].addr == asks[k].addr && answered[at].di.dli_fbase) {
      asks[k].di = answered[at].di;
      continue;
    }
    memset(&asks[k].di, 0, sizeof asks[k].di);
    left++;
  }
  if (left) dl_iterate_phdr(ask_cb, &left);
  ncs_gate_leave();
  if (c[0] == ~0ull) return;
  for (uint32_t k = 0; k < nasks; k++)
    if (asks[k].di.dli_fbase) {
      answered[answered_slot(asks[k].addr)].addr = asks[k].addr;
      answered[answered_slot(asks[k].addr)].di = asks[k].di;
    }
}

/* Encodes the MODULE records the site still needs and its CALLSITE record into w; its nf
 * frames were looked up as asks[a ..]. */
static void define(struct site *s, uint32_t nf, const struct ask *a, struct ncs_wbuf *w, uint32_t *records) {
  struct ncs_frame fr[MAXF];
  for (uint32_t f = 0; f < nf; f++) {
    const Dl_info *di = &a[f].di;
    uintptr_t ra = a[f].addr + 1;
    memset(&fr[f], 0, sizeof fr[f]);
    if (di->dli_fbase) {
      fr[f].module = module_of(w, di, records);
      fr[f].offset = ra - (uintptr_t)di->dli_fbase;
      fr[f].symbol = di->dli_sname;
      fr[f].symbol_offset = di->dli_saddr ? ra - (uintptr_t)di->dli_saddr : 0;
    } else {
      fr[f].offset = ra;
    }
  }
  struct ncs_callsite cs = {.id = atomic_load_explicit(&s->id, memory_order_relaxed), .nframes = nf, .frames = fr};
  size_t before = w->len;
  ncs_enc_callsite(w, &cs);
  if (!w->overflow && w->len != before) (*records)++;
}

/* prepare: defines every id claimed since the last time (the writer has already seen the
 * heads of the rings whose calls it is about to write, so their ids are among these), BATCH
 * sites' frames looked up at a time. */
static void callsite_prepare(void) {
  uint32_t now = atomic_load_explicit(&claimed, memory_order_acquire);
  if (now == defined) return;
  static uint8_t buf[65536]; /* writer thread only */
  static struct { struct site *s; uint32_t nf, at; } batch[BATCH];
  uint32_t k = 0;
  while (k < now && k < SLOTS) {
    uint32_t n = 0;
    nasks = 0;
    for (; k < now && k < SLOTS && n < BATCH; k++) {
      uint16_t at = atomic_load_explicit(&order[k], memory_order_acquire);
      if (!at) continue; /* claimed, not yet listed: its call is not in a ring yet */
      struct site *s = &sites[at - 1];
      if (s->emitted || !atomic_load_explicit(&s->id, memory_order_acquire)) continue;
      /* the claiming thread is copying a handful of addresses: wait for it, briefly */
      for (int spin = 0; !atomic_load_explicit(&s->ready, memory_order_acquire) && spin < 10000; spin++)
        sched_yield();
      uint32_t nf = atomic_load_explicit(&s->ready, memory_order_acquire) ? s->nframes : 0;
      batch[n].s = s;
      batch[n].nf = nf;
      batch[n].at = nasks;
      /* a return address may point one past a call at the end of a function: look up a - 1 */
      for (uint32_t f = 0; f < nf; f++) asks[nasks++].addr = s->frames[f] - 1;
      n++;
    }
    ask_all();
    for (uint32_t j = 0; j < n; j++) {
      struct ncs_wbuf w;
      uint32_t records = 0;
      ncs_wbuf_init(&w, buf, sizeof buf);
      ncs_gate_enter(); /* module_of walks the loaded objects (build ids) */
      define(batch[j].s, batch[j].nf, &asks[batch[j].at], &w, &records);
      ncs_gate_leave();
      if (w.overflow) continue;
      ncs_writer_put_definition(w.buf, w.len, records);
      batch[j].s->emitted = 1;
      defined++;
    }
  }
}

/* A forked child writes a new file: every id and module is defined again there. */
static void callsite_atfork_child(void) {
  uint32_t n = atomic_load_explicit(&claimed, memory_order_acquire);
  for (uint32_t k = 0; k < n && k < SLOTS; k++) {
    uint16_t at = atomic_load_explicit(&order[k], memory_order_acquire);
    if (at) sites[at - 1].emitted = 0;
  }
  nmods = 0;
  defined = 0;
}

static void callsite_stop(void) {
  if (!ncs_cfg.debug || !unwinder) return;
  uint32_t remembered = 0;
#ifdef MEMO
  for (uint32_t i = 0; i < MEMO_SLOTS; i++)
    remembered += atomic_load_explicit(&memo[i].id, memory_order_acquire) && memo[i].nf;
#endif
  ncs_debug("call sites: %llu captures unwound the stack, %u stacks remembered",
            (unsigned long long)atomic_load_explicit(&unwinds, memory_order_relaxed), remembered);
}

NCS_COLLECTOR ncs_callsite_collector = {
  .name = "callsites", .start = callsite_start, .prepare = callsite_prepare, .stop = callsite_stop,
  .atfork_child = callsite_atfork_child};
