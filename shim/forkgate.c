/* forkgate.c — no fork while the shim is inside code whose locks or half-done work a forked
 * child would inherit (issue 9: a child died in the dynamic loader its parent's writer thread
 * was in the middle of).
 *
 * Contract:
 *   - Shim code that enters the dynamic loader (dlopen, dlsym, dladdr, dl_iterate_phdr), the
 *     unwinder (libunwind, glibc backtrace) or a foreign library with locks of its own (CUDA,
 *     NVML) brackets that work with ncs_gate_enter() / ncs_gate_leave(), on any thread. The
 *     brackets nest. They never wait, except while a fork is being prepared (below).
 *   - The shim's pthread_atfork prepare handler (state.c) calls ncs_gate_close(): it marks a
 *     fork as pending, then waits until no thread is inside a bracket, at most 2 s (a bracket
 *     is microseconds; the longest, the writer's NVML topology read, milliseconds). A thread
 *     that reaches ncs_gate_enter() meanwhile waits for the fork to be done. The forking thread
 *     itself passes (another library's fork handler may call NCCL). ncs_gate_open() (parent)
 *     and ncs_gate_reset_child() (child: the other threads are gone) end the fork.
 *   - A bracket whose thread is gone (cancelled or exited inside it: its counter can never
 *     come down) is not waited for: each of the first 256 threads' counters carries its
 *     thread's id, asked of the kernel (tgkill with signal 0) only while a fork waits.
 *   - If the wait runs out (a bracket stuck in a driver call), the fork proceeds and the
 *     number is counted: ncs_gate_timeouts(). A fork never waits for ever.
 *   - Cost on the per-call hot path (call-site capture): the calling thread's own counter,
 *     one sequentially consistent store and one load; no shared cache line, no lock. Threads
 *     get one of 256 counters on their first bracket; later threads share one more. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define GATE_SLOTS 256
#define GATE_WAIT_NS 2000000000ull

/* in: the thread's bracket depth; owner: its thread id (0 in the shared last one) */
static struct { _Atomic int in; _Atomic int owner; char pad[56]; } slots[GATE_SLOTS + 1]; /* the last one is shared */
/* initial-exec, like ncs_tls: read on the hot path (call sites), where the default model's
 * __tls_get_addr was 4 calls per recorded call */
static __thread int my_slot __attribute__((tls_model("initial-exec"))) = -1; /* this thread's counter, -1 until its first bracket */
static __thread int forking __attribute__((tls_model("initial-exec")));      /* this thread runs the fork handlers */
static _Atomic int fork_pending;
static _Atomic unsigned long timeouts;
static _Atomic int next_free;

static _Atomic int *my_counter(void) {
  if (my_slot < 0) {
    int i = atomic_fetch_add(&next_free, 1);
    my_slot = i < GATE_SLOTS ? i : GATE_SLOTS;
    if (i < GATE_SLOTS) atomic_store(&slots[i].owner, (int)syscall(SYS_gettid));
  }
  return &slots[my_slot].in;
}

static void pause_briefly(void) { struct timespec t = {0, 50000}; nanosleep(&t, NULL); }

void ncs_gate_enter(void) {
  _Atomic int *c = my_counter();
  if (forking) { atomic_fetch_add(c, 1); return; }
  for (;;) {
    atomic_fetch_add(c, 1); /* seq_cst: ordered before the load of fork_pending */
    if (!atomic_load(&fork_pending)) return;
    atomic_fetch_sub(c, 1);
    while (atomic_load(&fork_pending)) pause_briefly();
  }
}

void ncs_gate_leave(void) { atomic_fetch_sub_explicit(my_counter(), 1, memory_order_release); }

/* a slot's thread is gone: no thread of this process has its id any more */
static int owner_gone(int i) {
  int tid = atomic_load(&slots[i].owner), saved = errno, gone;
  if (tid <= 0) return 0;
  gone = syscall(SYS_tgkill, (int)getpid(), tid, 0) != 0 && errno == ESRCH;
  errno = saved;
  return gone;
}

static int anyone_inside(void) {
  for (int i = 0; i <= GATE_SLOTS; i++)
    if (atomic_load(&slots[i].in) > 0) {
      if (i == my_slot && forking) continue; /* the forking thread's own (a handler's NCCL call) */
      if (owner_gone(i)) continue;           /* cancelled or exited inside a bracket */
      return 1;
    }
  return 0;
}

void ncs_gate_close(void) {
  forking = 1;
  atomic_store(&fork_pending, 1); /* seq_cst: ordered before the loads of the counters */
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (anyone_inside()) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t ns = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec - (uint64_t)t0.tv_nsec;
    if (ns > GATE_WAIT_NS) { atomic_fetch_add(&timeouts, 1); break; }
    sched_yield();
  }
}

void ncs_gate_open(void) {
  atomic_store(&fork_pending, 0);
  forking = 0;
}

void ncs_gate_reset_child(void) {
  /* the other threads are gone; this one may be inside a bracket of its own (a handler's call) */
  int mine = my_slot >= 0 ? atomic_load(&slots[my_slot].in) : 0;
  for (int i = 0; i <= GATE_SLOTS; i++) atomic_store(&slots[i].in, 0);
  if (my_slot >= 0) atomic_store(&slots[my_slot].in, mine);
  atomic_store(&fork_pending, 0);
  forking = 0;
}

unsigned long ncs_gate_timeouts(void) { return atomic_load(&timeouts); }
