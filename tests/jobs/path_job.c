/* path_job — one NCCL call reached along known, changing call paths, with its own truth.
 *
 * Usage: path_job [--threads T] [--rounds R] [--truth FILE]
 * T threads (default 2), each with its own 1-rank communicator, run R rounds (default 4) of
 * the same sequence of AllReduce calls, every one of them issued from one line of issue() (one
 * return address for the shim's wrapper), reached along different paths:
 *   via_alpha -> issue          and  via_beta -> issue   (same caller, different outer frames)
 *   descend x (d + 1) -> issue  for the depths of DEPTHS (the same site at different stack
 *                               depths: recursion)
 *   coroutine -> via_alpha -> issue, coroutine -> descend x 4 -> issue: at the end of every
 *                               round, on a stack of its own (makecontext; mapped for the round,
 *                               unmapped after it)
 * Each thread's call loop sits below worker -> run_rounds. --truth FILE: one line per call of
 * a thread's sequence, in order: the job's own functions on the stack at that call, innermost
 * first, up to worker ("issue via_alpha run_rounds worker"). Every thread's calls follow it.
 * Uses host buffers and stream 0 (the doubles, or a stub NCCL). */
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "job_util.h"

/* no inlining, cloning or splitting: each function keeps its own frame and name */
#if defined(__clang__)
#define FRAME __attribute__((noinline))
#else
#define FRAME __attribute__((noipa))
#endif
/* after a call: keeps it from being a tail call (the caller's frame stays on the stack) */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static const int DEPTHS[] = {0, 9, 2, 7, 4, 12, 1, 5, 3, 8, 6, 0, 12};
#define NDEPTHS (int)(sizeof DEPTHS / sizeof DEPTHS[0])
static int rounds = 4;
static float bufs[64][8]; /* not on a stack: the double's stream thread reads them after the call */

struct ctx { ncclComm_t comm; float *buf; };

static FRAME void issue(const struct ctx *c) {
  NCCHK(ncclAllReduce(c->buf, c->buf, 8, ncclFloat32, ncclSum, c->comm, 0));
  KEEP_FRAME();
}
static FRAME void via_alpha(const struct ctx *c) { issue(c); KEEP_FRAME(); }
static FRAME void via_beta(const struct ctx *c) { issue(c); KEEP_FRAME(); }
static FRAME void descend(const struct ctx *c, int d) {
  if (d > 0) descend(c, d - 1);
  else issue(c);
  KEEP_FRAME();
}

/* a coroutine's calls, on its own stack; back to the round's context when done */
static __thread ucontext_t round_ctx, coro_ctx;
static __thread const struct ctx *coro_arg;
static FRAME void coroutine(void) {
  via_alpha(coro_arg);
  descend(coro_arg, 3);
  swapcontext(&coro_ctx, &round_ctx);
}

static FRAME void run_coroutine(const struct ctx *c) {
  size_t len = 256 << 10;
  void *stack = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  JOBCHK(stack != MAP_FAILED, "mmap");
  JOBCHK(getcontext(&coro_ctx) == 0, "getcontext");
  coro_ctx.uc_stack.ss_sp = stack;
  coro_ctx.uc_stack.ss_size = len;
  coro_ctx.uc_link = NULL;
  coro_arg = c;
  makecontext(&coro_ctx, coroutine, 0);
  JOBCHK(swapcontext(&round_ctx, &coro_ctx) == 0, "swapcontext");
  JOBCHK(munmap(stack, len) == 0, "munmap");
}

static FRAME void run_rounds(const struct ctx *c) {
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < NDEPTHS; k++) {
      via_alpha(c);
      via_beta(c);
      descend(c, DEPTHS[k]);
    }
    run_coroutine(c);
  }
  KEEP_FRAME();
}

static FRAME void *worker(void *arg) {
  struct ctx c = {NULL, bufs[(long)arg]};
  ncclUniqueId id;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&c.comm, 1, id, 0));
  run_rounds(&c);
  NCCHK(ncclCommDestroy(c.comm));
  KEEP_FRAME();
  return NULL;
}

static void write_truth(const char *path) {
  FILE *f = fopen(path, "w");
  JOBCHK(f, "cannot write %s", path);
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < NDEPTHS; k++) {
      fprintf(f, "issue via_alpha run_rounds worker\n");
      fprintf(f, "issue via_beta run_rounds worker\n");
      fprintf(f, "issue");
      for (int d = 0; d <= DEPTHS[k]; d++) fprintf(f, " descend");
      fprintf(f, " run_rounds worker\n");
    }
    fprintf(f, "issue via_alpha coroutine\n");
    fprintf(f, "issue descend descend descend descend coroutine\n");
  }
  JOBCHK(fclose(f) == 0, "cannot write %s", path);
}

int main(int argc, char **argv) {
  long threads = 2;
  const char *truth = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--threads")) { threads = atol(v); i++; }
    else if (!strcmp(a, "--rounds")) { rounds = atoi(v); i++; }
    else if (!strcmp(a, "--truth")) { truth = v; i++; }
    else { fprintf(stderr, "path_job: bad argument %s\n", a); return 2; }
  }
  JOBCHK(threads >= 1 && threads <= 64 && rounds >= 1, "bad arguments");
  if (truth) write_truth(truth);
  pthread_t th[64];
  for (long i = 0; i < threads; i++) JOBCHK(pthread_create(&th[i], NULL, worker, (void *)i) == 0, "pthread_create");
  for (long i = 0; i < threads; i++) pthread_join(th[i], NULL);
  return 0;
}
