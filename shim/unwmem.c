/* unwmem.c — the pages libunwind maps for itself, made cheap for the traced process.
 *
 * Contract:
 *   - ncs_unwmem_install(handle) points the imports of mmap and munmap of libunwind (the
 *     shim's private copy, callsite.c) at the two functions here (gotpatch.c): no other object
 *     of the process sees them. Called before libunwind's first unwind, and only when the
 *     shim's dlopen loaded it (not when the job had already loaded libunwind.so.8: the same
 *     object would be the job's; a job that dlopens it later shares the shim's copy, whose
 *     mmap gives what mmap gives, below).
 *   - An anonymous, private, read-write mapping that libunwind asks for, up to 1 MiB (its
 *     per-thread trace cache: 256 KiB that it fills entry by entry at a thread's first unwind;
 *     its memory pools), is made with MAP_POPULATE: one system call maps the pages in instead
 *     of a page fault per page (64 for a trace cache, ~15 us each on a virtual machine).
 *   - When libunwind unmaps a whole mapping made that way (a thread that unwound exits and its
 *     trace cache goes), up to KEEP of them stay mapped and are handed, zeroed, to a later
 *     request of the same length (the next thread's first unwind then takes no page fault).
 *     libunwind gets what mmap gives: a private, zero-filled, read-write mapping of that length.
 *   - Lock-free (one word per slot: address | length in pages, claimed by compare-and-swap):
 *     safe from any thread, a thread's exit included; a forked child inherits the kept mappings
 *     with the rest of its memory. Any other request goes to mmap / munmap unchanged. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define KEEP 4       /* mappings kept after libunwind unmapped them (1 MiB of trace caches) */
#define TRACKED 64   /* mappings made here that libunwind still holds */
#define MAX_LEN (1u << 20)

static _Atomic uintptr_t kept[KEEP], held[TRACKED];
static uintptr_t page_size;

/* address | pages, or 0 when the mapping cannot be described in one word */
static uintptr_t word_of(void *p, size_t len) {
  uintptr_t pages = len / page_size;
  if (!len || len % page_size || pages >= page_size || ((uintptr_t)p & (page_size - 1))) return 0;
  return (uintptr_t)p | pages;
}

/* stores w in a free slot; 0 when all n are taken */
static int put(_Atomic uintptr_t *slots, int n, uintptr_t w) {
  for (int i = 0; i < n; i++) {
    uintptr_t expect = 0;
    if (atomic_compare_exchange_strong(&slots[i], &expect, w)) return 1;
  }
  return 0;
}

/* takes the slot holding exactly w (or, with any_address, any mapping of w's length) */
static uintptr_t take(_Atomic uintptr_t *slots, int n, uintptr_t w, int any_address) {
  uintptr_t mask = page_size - 1;
  for (int i = 0; i < n; i++) {
    uintptr_t v = atomic_load_explicit(&slots[i], memory_order_acquire);
    if (!v || (any_address ? (v & mask) != (w & mask) : v != w)) continue;
    if (atomic_compare_exchange_strong(&slots[i], &v, 0)) return v;
  }
  return 0;
}

static void *unw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (addr || fd != -1 || off || prot != (PROT_READ | PROT_WRITE) || len > MAX_LEN ||
      flags != (MAP_PRIVATE | MAP_ANONYMOUS))
    return mmap(addr, len, prot, flags, fd, off);
  size_t whole = (len + page_size - 1) & ~(page_size - 1);
  uintptr_t w = word_of((void *)page_size, whole), v = w ? take(kept, KEEP, w, 1) : 0;
  void *p;
  if (v) {
    p = (void *)(v & ~(page_size - 1));
    memset(p, 0, whole); /* resident already: no page fault */
  } else {
    p = mmap(NULL, len, prot, flags | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return p;
  }
  if (w) put(held, TRACKED, word_of(p, whole));
  return p;
}

static int unw_munmap(void *addr, size_t len) {
  size_t whole = (len + page_size - 1) & ~(page_size - 1);
  uintptr_t w = word_of(addr, whole);
  if (w && take(held, TRACKED, w, 0) && put(kept, KEEP, w)) return 0;
  return munmap(addr, len);
}

void ncs_unwmem_install(void *handle) {
  long pg = sysconf(_SC_PAGESIZE);
  page_size = pg > 0 ? (uintptr_t)pg : 4096;
  int saved = errno;
  if (ncs_got_patch(handle, "mmap", (void *)unw_mmap) > 0) ncs_got_patch(handle, "munmap", (void *)unw_munmap);
  errno = saved;
}
