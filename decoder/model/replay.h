/* replay.h — CUDA-graph replays of one traced process, from its records alone (docs/METRICS.md,
 * "Graph replays"): which NCCL kernels ran calls captured into a graph, and as which call.
 *
 * Rule: a call made while its stream was capturing (CALL flag captured) launches nothing then;
 * each launch of its graph runs its kernel. Every other NCCL kernel belongs to an uncaptured
 * call, and lies inside that call's GPU interval (the shim's events bracket the launch on the
 * call's stream), so each GPU_TIME of a call (or of a group: one per stream it used, NCCL
 * launching one kernel per stream of a group) claims the kernel it overlaps most. The NCCL kernels no GPU_TIME claims, starting after
 * the first captured call, are replays: per kernel operation (the name's, model/knames.h) they
 * take the captured calls of that operation of the latest capture (a run of captured calls of
 * one thread no uncaptured collective of it interrupts) begun before the kernel started on the
 * kernel's device (a captured call's: its communicator's; a graph replays on the device it was
 * captured on, so threads and graphs on other devices are told apart), in
 * capture order, cycling (what a graph replayed N times gives; a captured group's calls on one
 * communicator are one element, every member replayed with its kernel). Sizes are exact when
 * an operation's captured calls all have one shape, and when each graph is replayed before the
 * next is captured (nccl-tests -G); graphs captured first and replayed in a mix later (vLLM)
 * cannot be told apart without graph launches recorded (`sizes_exact` 0 says sizes differ).
 *
 * Needs kernel activity and GPU timing: without either, nothing is counted and `why_not` says
 * why. Contract: feed a file's records in file order (calls, GPU times, communicators, raw
 * KERNEL / KERNEL_NAME / KERNEL_STATUS), then ncs_replay_solve once, then the walks. Memory:
 * until the first captured call, the last 4096..8192 GPU intervals (16 bytes each) and NCCL
 * kernels (32 bytes each), each in a ring; after it, every one; the captured calls (72 bytes each) and one
 * element (40 bytes) per captured call or group. Not thread-safe; one per file. */
#ifndef NCS_REPLAY_H
#define NCS_REPLAY_H
#include <stddef.h>
#include <stdint.h>
#include "io/trace.h"

#define NCS_REPLAY_OPS 12
/* A captured call as its replays repeat it. */
struct ncs_replay_call {
  uint32_t op, comm, datatype, n;  /* n: ranks of its communicator */
  uint64_t count, bytes;           /* bytes: count x datatype size, as passed */
  double S;                        /* nccl-tests' S (model/rules.h) */
  uint32_t redop, flags;           /* as the captured CALL record has them (NCS_CALL_F_*) */
  uint32_t thread, members;        /* members: calls its kernel runs (its element's), set by solve */
  uint64_t tcall;                  /* with thread: which captured CALL record it is */
};
struct ncs_replay_op {             /* per kernel operation ("AllReduce", "SendRecv", ...) */
  char name[24];
  uint64_t captured;               /* captured calls of it (members of captured groups too) */
  uint64_t elements;               /* graph body elements: captured calls, a captured group one */
  uint64_t kernels;                /* its replayed kernels */
  uint64_t calls;                  /* replayed calls (a group's kernel replays each member) */
  int whole;                       /* kernels are a whole number of body cycles */
  int sizes_exact;                 /* its captured calls all have one shape */
};
struct ncs_replay_sum {
  int counted;                     /* replays were looked for (kernel activity and GPU timing) */
  const char *why_not;             /* when not counted and calls were captured: why */
  uint64_t captured, kernels, calls; /* captured calls; replayed kernels and calls */
  uint64_t unexplained;            /* NCCL kernels after the first capture that nothing explains */
  int nops;
  struct ncs_replay_op op[NCS_REPLAY_OPS];
};

struct ncs_replay;
struct ncs_replay *ncs_replay_new(void);  /* NULL when out of memory */
void ncs_replay_free(struct ncs_replay *r);
/* Returns 1 once a capture was opened (every call matters from then on: an uncaptured collective
 * ends its thread's capture); 0 before: until then a caller may hand it captured calls only. */
int ncs_replay_calls(struct ncs_replay *r, const struct ncs_call *x, size_t n);
void ncs_replay_gpu_times(struct ncs_replay *r, const struct ncs_gpu_time *g, size_t n);
/* A communicator: its ranks and CUDA device (-1 not known). */
void ncs_replay_comm(struct ncs_replay *r, uint32_t comm, int32_t nranks, int32_t device);
/* Takes KERNEL, KERNEL_NAME and KERNEL_STATUS records (returns 1), ignores others (0). */
int ncs_replay_add_raw(struct ncs_replay *r, const struct ncs_raw *x);
/* KERNEL records decoded already (a reader's `kernels` run), as ncs_replay_add_raw takes them. */
void ncs_replay_add_kernels(struct ncs_replay *r, const struct ncs_kernel *k, size_t n);
/* Pairs kernels and calls; fills *out. Returns 0, -1 when out of memory (nothing counted). */
int ncs_replay_solve(struct ncs_replay *r, struct ncs_replay_sum *out);
/* After solve: what it filled *out with (for a reader of a model another module solved). */
void ncs_replay_sum_of(const struct ncs_replay *r, struct ncs_replay_sum *out);
/* After solve: each replayed call whose kernel starts at or after `from`, in kernel start
 * order: fn(ctx, call, kernel start, kernel end). */
void ncs_replay_each(const struct ncs_replay *r, uint64_t from,
                     void (*fn)(void *ctx, const struct ncs_replay_call *c, uint64_t s, uint64_t e), void *ctx);
/* After solve: the parts of the union of those replayed kernels that no GPU_TIME interval of the
 * file covers, disjoint, in order: fn(ctx, start, end). What replays add to a union of the
 * calls' GPU intervals. */
void ncs_replay_extra(const struct ncs_replay *r, uint64_t from, void (*fn)(void *ctx, uint64_t s, uint64_t e), void *ctx);
#endif
