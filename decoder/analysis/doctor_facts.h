/* doctor_facts.h — per-process facts the transport/topology checks need, gathered from one
 * trace file in one pass: host, NCCL_* environment, NCCL version, communicators, the NCCL log
 * lines (transport model), the NVML topology, and the calls' communication share and bus
 * bandwidth of large collectives.
 *
 * Contract: ncs_dfacts_attach() adds a visitor whose callbacks feed `f` to one file's read;
 * ncs_dfacts_finish() finishes the sums after the read. Memory is bounded: the transport model grows with distinct
 * connections, busbw samples are capped at NCS_DF_MAX_SAMPLES per file (held during the read only; none with
 * busbw_unused), pending calls waiting
 * for their GPU time at NCS_DF_PENDING direct-mapped slots (a call whose GPU time comes after
 * a later call took its slot gives no GPU sample; its host sample stays). ncs_dfacts_free()
 * releases everything. */
#ifndef NCS_DOCTOR_FACTS_H
#define NCS_DOCTOR_FACTS_H
#include <stdint.h>
#include "model/topo.h"
#include "io/mux.h"
#include "io/trace.h"
#include "model/transport.h"
#include "model/kact.h"
#include "model/ivunion.h"
#include "model/replay.h"

#define NCS_DF_MAX_ENV 48
#define NCS_DF_MAX_COMMS 32
#define NCS_DF_MAX_SAMPLES 4096
#define NCS_DF_PENDING 4096 /* slots of large collectives awaiting their GPU time (power of 2) */
#define NCS_DF_BIG_BYTES (8ull << 20) /* collectives at least this large are bandwidth samples */

struct ncs_dcomm { uint64_t comm_id; uint32_t comm; int rank, nranks, device; };
struct ncs_dpending { uint32_t thread; uint64_t tcall; double bytes_bus, steps; int used; };
/* Slot of a call (thread, per-thread call number): direct-mapped, so a GPU_TIME record finds
 * its call in one probe; consecutive calls of a thread take consecutive slots. */
#define NCS_DF_SLOT(thread, tcall) ((unsigned)((tcall) + (uint64_t)(thread) * 2654435761u) & (NCS_DF_PENDING - 1))

struct ncs_dfacts {
  char path[512];
  char host[64];
  char node[96];                          /* host, plus the launcher's node index when set
                                             (GROUP_RANK, NODE_RANK, SLURM_NODEID): one per node */
  long pid;
  int have_process;
  char version_code[16];                  /* PROCESS nccl_version, "" when absent */
  char env[NCS_DF_MAX_ENV][2][128];       /* NCCL_* and *_VISIBLE_DEVICES (name, value) */
  int nenv;
  struct ncs_tmodel log;
  struct ncs_dcomm comms[NCS_DF_MAX_COMMS];
  int ncomms;
  struct ncs_topo *topo;                  /* NULL when the trace has no TOPO records */
  int topo_damaged;
  /* calls */
  uint64_t t_first, t_last;               /* host window of traced calls */
  double comm_ns;                         /* union of communication intervals (host or GPU) of
                                             all the process's ranks: an instant counts once */
  uint64_t comm_late, comm_late_ns;       /* intervals that came after the union was committed
                                             past their start, and the most comm_ns can lack for
                                             them (model/ivunion.h) */
  int timing_gpu;                         /* 1 when GPU_TIME records gave the intervals */
  char timing[8], gpu_timing_env[8];      /* PROCESS timing and env.NCCLSCOPE_GPU_TIMING, "" absent */
  uint64_t ncalls;
  /* internal state: the unions of host and GPU intervals (several threads' calls interleave);
   * the host one only until the first GPU time (comm_ns is then the GPU union) */
  struct ncs_ivu host_u, gpu_u;
  uint64_t gpu_first, gpu_last;
  struct ncs_dpending *pending;           /* [NCS_DF_PENDING] while reading; freed by done */
  double *samples;                        /* busbw GB/s of large collectives, GPU-timed, and */
  double *host_samples;                   /* host-timed: NCS_DF_MAX_SAMPLES each, made at the first
                                             large collective, freed by finish once their median is
                                             taken (kept, they were most of report's memory) */
  int nsamples;
  int nhost_samples;
  double busbw_median;                    /* their median (ncs_dfacts_busbw), set by finish */
  double sample_bus[2], sample_steps[2];  /* [0] host, [1] GPU samples: summed bus bytes and
                                             algorithm steps (ncs_rule_steps), what their expected
                                             busbw is priced on (model/linkref.h) */
  /* kernel activity (GPU time), figures after ncs_dfacts_finish: the partition of the GPU span
   * only (busy, compute-only, overlapped, exposed, idle); calls are not fed to it, so its
   * per-operation sizes are not filled (analysis/gputime.c has them). kact_elsewhere, set
   * before the read: no kact is fed here, the caller puts figures made from the same records
   * in `gpu` (report: gputime's, model/stages.h; one copy of the kernels, decoded once less) */
  struct ncs_kact *kact;
  struct ncs_kact_fig gpu;
  int kact_elsewhere;
  /* set before the read: no bandwidth samples are taken (ncs_dfacts_busbw is 0, the expected
   * busbw unknown), for a caller that states neither (compare: its share and step figures) */
  int busbw_unused;
  /* CUDA-graph replays (model/replay.h), counted into ncalls, comm_ns, the GPU window and the
   * busbw samples by ncs_dfacts_finish */
  struct ncs_replay *replay;
  int replay_open;                        /* a capture was opened: replay takes every call (before:
                                             captured ones only, ncs_replay_calls) */
  int keep_replay;                        /* set before the read: ncs_dfacts_finish leaves the
                                             solved model in `replay` for the caller to take */
  struct ncs_replay_sum replays;
  double replay_ns;                       /* the replayed calls' kernel time (a sum) */
  double replay_extra_ns;                 /* what their kernels add to the GPU intervals' union */
  /* read outcome */
  int read_rc;
  char error[1024];
};

/* Allocates zeroed facts for `path`; NULL when out of memory. */
struct ncs_dfacts *ncs_dfacts_new(const char *path);
void ncs_dfacts_free(struct ncs_dfacts *f);
/* A plug-in of the loader (model/jobload.h): ncs_dfacts_attach() appends f's visitor to the
 * file's visitors; ncs_dfacts_finish() settles f after the read (outcome in f->read_rc and
 * f->error). Facts of different files are independent: files may be read in parallel. */
void ncs_dfacts_attach(struct ncs_dfacts *f, struct ncs_mux *m);
void ncs_dfacts_finish(struct ncs_dfacts *f, int read_rc, const struct ncs_read_status *st);

const char *ncs_dfacts_env(const struct ncs_dfacts *f, const char *name);
/* This process's rank and ranks in its primary communicator (the largest; ties: the lowest
 * comm_id); -1 / 0 when none. A process holding several of its ranks (a rank per thread):
 * the lowest. */
int ncs_dfacts_rank(const struct ncs_dfacts *f, int *nranks, uint64_t *comm_id);
/* The ranks it holds in that communicator as text ("3", "0-3", "?") into buf; returns how many. */
int ncs_dfacts_label(const struct ncs_dfacts *f, char *buf, size_t n);
/* 1 when it holds `rank` of that communicator (its CUDA device into *device), else 0. */
int ncs_dfacts_holds(const struct ncs_dfacts *f, int rank, int *device);
/* Median busbw of large collectives (GPU timing when present, else host), 0 when none;
 * computed once, by ncs_dfacts_finish. */
double ncs_dfacts_busbw(const struct ncs_dfacts *f, int *nsamples, int *gpu);
/* The busbw those samples are expected to reach over link l (the α-β reference, model/linkref.h),
 * GB/s; 0 when unknown. */
struct ncs_link;
double ncs_dfacts_busbw_expected(const struct ncs_dfacts *f, const struct ncs_link *l);
#endif
