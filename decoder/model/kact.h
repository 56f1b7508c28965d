/* kact.h — kernel activity of one traced process (KERNEL, KERNEL_NAME, KERNEL_STATUS records,
 * include/ncclscope/records.h) turned into GPU-time figures: busy, compute-only,
 * overlapped, exposed communication and idle, and exposed communication per NCCL operation and
 * message size (docs/METRICS.md, "GPU time").
 *
 * Contract: feed records with ncs_kact_add_raw (any record: others are ignored; KERNEL records
 * decoded already, as a reader's `kernels` run gives them, with ncs_kact_add_kernels) and CALL
 * records with ncs_kact_add_calls, in file order, then ncs_kact_figures once. Memory grows with
 * the kernels in the file (24 bytes each, in a model/kstore.h store: its own, or one shared
 * with other readers of the file's kernels, ncs_kact_share) and the collective calls (a compact
 * log, about 4 bytes each; none once an operation's calls cannot pair one to one with
 * kernels). Name ids at or above NCS_KS_NAME_MAX name no kernel. All times
 * are the trace's CLOCK_MONOTONIC ns. Step windows are host times (the boundary calls' entries)
 * applied to the GPU's timeline: a window holds one iteration's GPU work shifted by how far the
 * GPU runs behind the host. A damaged body is counted (bad_records), never fatal. */
#ifndef NCS_KACT_H
#define NCS_KACT_H
#include <stddef.h>
#include <stdint.h>
#include "model/devcomm.h"
#include "ncclscope/ops.h"

#define NCS_KACT_BUCKETS 48 /* size buckets: b holds S in [2^(b-1), 2^b) bytes, 0 for S < 1 */
#define NCS_KACT_POS 32     /* positions in a step: the op's 1st, 2nd, ... call of the step (last: that and later) */
struct ncs_kact_op {        /* one NCCL operation, as the kernels' names say (AllReduce, SendRecv, ...) */
  char name[24];
  uint64_t kernels, time_ns, exposed_ns;
  int sized;                /* its kernels matched its calls one to one: by_size below is valid */
  uint64_t size_kernels[NCS_KACT_BUCKETS], size_time_ns[NCS_KACT_BUCKETS], size_exposed_ns[NCS_KACT_BUCKETS];
  /* by position in the step (sized and steps given): the k-th call of this op after a step's
   * boundary, e.g. DDP's k-th gradient bucket: which buckets are not hidden */
  int npos;                 /* positions seen (0: none) */
  uint64_t pos_kernels[NCS_KACT_POS], pos_time_ns[NCS_KACT_POS], pos_exposed_ns[NCS_KACT_POS];
  uint64_t pos_bytes_min[NCS_KACT_POS], pos_bytes_max[NCS_KACT_POS];
};
/* GPU time in one step window [start, start + len): its four parts add up to len. */
struct ncs_kact_step { uint64_t start_ns, len_ns, compute_only_ns, overlapped_ns, exposed_ns, idle_ns; };
#define NCS_KACT_MAX_OPS 12
struct ncs_kact_fig {
  int have;                 /* 1 when the file had kernel activity (KERNEL records) */
  int state;                /* last KERNEL_STATUS state (enum ncs_kernel_state), -1 when none */
  char reason[160];         /* its reason */
  uint64_t kernels, nccl_kernels, copies, bad_records;
  uint64_t first_ns, span_ns; /* first kernel start; span: first start to last end */
  uint64_t busy_ns;         /* union of every kernel, copy and set */
  uint64_t compute_ns;      /* union of non-NCCL work (kernels, copies, sets) */
  uint64_t comm_ns;         /* union of NCCL kernels */
  uint64_t compute_only_ns, overlapped_ns, exposed_ns, idle_ns; /* partition of span_ns */
  int nops;
  struct ncs_kact_op op[NCS_KACT_MAX_OPS];
  /* device API (DEVCOMM records, model/devcomm.h): compute kernels (not NCCL's, not copies or
   * sets) whose GPU start lies in a device communicator's life, "possibly communicating"; they
   * stay in compute_ns and the partition above, and are stated beside them */
  struct ncs_devcomms dev;
  uint64_t devapi_kernels, devapi_ns; /* how many, the sum of their durations */
};

/* The device API over a job's processes, summed once for every reader (the headline, the
 * doctor): processes with a device communicator, the device communicators they kept, the
 * kernels launched while one existed and the sum of their GPU time. */
struct ncs_devapi_total { int procs, comms; uint64_t kernels, ns; };
static inline void ncs_devapi_add(struct ncs_devapi_total *t, const struct ncs_kact_fig *g) {
  if (!g->dev.n) return;
  t->procs++;
  t->comms += g->dev.n;
  t->kernels += g->devapi_kernels;
  t->ns += g->devapi_ns;
}

struct ncs_kact;
struct ncs_kact *ncs_kact_new(void);             /* NULL when out of memory */
void ncs_kact_free(struct ncs_kact *k);
/* Takes a record of type 15, 16, 17 or 22 (DEVCOMM); returns 1 when taken, 0 for other types. */
int ncs_kact_add_raw(struct ncs_kact *k, uint32_t type, const uint8_t *body, size_t len);
struct ncs_kernel;
struct ncs_kstore;
/* Keeps the kernels in ks (owned by the caller, alive until ncs_kact_figures returns) instead of
 * a store of its own: appended to it by ncs_kact_add_kernels / add_raw when `fill`, else
 * another reader of the file fills it. Call before any record; ks NULL: no change.
 * ncs_kact_figures sorts ks (model/kstore.h) and leaves it otherwise unchanged. */
void ncs_kact_share(struct ncs_kact *k, struct ncs_kstore *ks, int fill);
void ncs_kact_add_kernels(struct ncs_kact *k, const struct ncs_kernel *x, size_t n);
/* Takes CALL records x[0..n), in file order: collective and point-to-point calls are matched
 * to NCCL kernels for sizes and positions in the step. Memory: 4 bytes per such call when
 * calls are under 16.7 ms apart and have under 256 distinct sizes, 20 otherwise (kact.c,
 * "compact log"); none once the file said it has no kernel activity before any KERNEL record
 * came (model/kwatch.h: a KERNEL_STATUS that says off or stood aside, after which the shim
 * writes no KERNEL record, or a PROCESS of format 1.0, ncs_kact_process, which has none): the
 * log is freed and no call is logged (`ncclscope synth`'s traces); should a KERNEL come anyway,
 * no operation gets sizes or positions. */
struct ncs_call;
void ncs_kact_add_calls(struct ncs_kact *k, const struct ncs_call *x, size_t n);
/* Takes the file's PROCESS record (before its calls; p may be NULL): a file of format 1.0 keeps
 * no call (above). */
struct ncs_process;
void ncs_kact_process(struct ncs_kact *k, const struct ncs_process *p);
/* Computes the figures (after the last record). Returns 0, or -1 when out of memory.
 * With step starts (t[0..n), increasing: the boundary calls' entries, analysis/metrics.h), also
 * the GPU time of each step: step g is the window [t[g], t[g+1]) (the last start opens no
 * complete step; with n == 1 the one step runs to the last kernel's end), written to
 * steps[0..*nsteps) (steps must hold n entries), and each sized op's calls by position in
 * their step. t may be NULL (n 0); steps/nsteps may be NULL then. */
int ncs_kact_figures(struct ncs_kact *k, struct ncs_kact_fig *out, const uint64_t *t, size_t n,
                     struct ncs_kact_step *steps, size_t *nsteps);
/* The same, each step's figures handed to on_step(ctx, g, step) in step order as the sweep
 * completes it, instead of an array (memory: one open step, whatever the number of steps);
 * on_step NULL: no step figures. */
int ncs_kact_figures_each(struct ncs_kact *k, struct ncs_kact_fig *out, const uint64_t *t, size_t n,
                          void (*on_step)(void *ctx, size_t g, const struct ncs_kact_step *st), void *ctx);
/* The verdict on GPU time: "communication-bound" (exposed >= 50% of the span),
 * "gpu-idle" (idle >= 25% of the span), "communication-heavy" (exposed >= 25%), else
 * "compute-bound"; first that applies. */
const char *ncs_kact_verdict(const struct ncs_kact_fig *f);
/* The one compute-to-communication ratio of a rank (docs/METRICS.md "Compute to
 * communication"): with kernel activity (f->have and a span), compute / NCCL kernel time on GPU
 * time (*estimate 0); without, (wall - comm) / comm of its window and communication time, an
 * estimate that counts idle time as compute and hidden communication as exposed (*estimate 1).
 * NaN when the divisor is 0. f may be NULL. Every command states this figure. */
double ncs_kact_compute_to_comm(const struct ncs_kact_fig *f, double wall_ns, double comm_ns, int *estimate);
/* Why a process has no kernel activity, in words: the shim's KERNEL_STATUS reason, else why a
 * trace can lack KERNEL records. The one wording for report, doctor and html. */
const char *ncs_kact_why_none(const struct ncs_kact_fig *f);
#endif
