/* double_log.h — the seam between the NCCL double's core (communicators, collectives:
 * nccl_double*.c) and its debug log and transport selection (debug.c, transport.c).
 *
 * Contract: the log side reproduces real NCCL's NCCL_DEBUG behaviour and line formats
 * (NCCL 2.28: "host:pid:tid [dev] NCCL INFO msg"; WARN lines preceded by a blank line and
 * carrying "file.cc:line NCCL WARN"; destination stdout or NCCL_DEBUG_FILE with %h/%p;
 * NCCL_DEBUG_SUBSYS filtering), read from the environment once, at the first log call.
 * The transport side decides, per connection, what real NCCL would pick for the scenario
 * (NVML topology from the NVML double, NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_P2P_LEVEL,
 * NCCL_IB_DISABLE, NCCL_NET, the double's node layout) and prints the "via" lines. */
#ifndef NCCL_DOUBLE_LOG_H
#define NCCL_DOUBLE_LOG_H
#include <stdint.h>

/* NCCL's subsystem bits (src/include/nccl_common.h). */
enum {
  NCCLD_INIT = 0x1, NCCLD_COLL = 0x2, NCCLD_P2P = 0x4, NCCLD_SHM = 0x8, NCCLD_NET = 0x10,
  NCCLD_GRAPH = 0x20, NCCLD_TUNING = 0x40, NCCLD_ENV = 0x80, NCCLD_ALLOC = 0x100,
  NCCLD_CALL = 0x200, NCCLD_PROXY = 0x400, NCCLD_NVLS = 0x800, NCCLD_BOOTSTRAP = 0x1000,
  NCCLD_REG = 0x2000, NCCLD_ALL = ~0
};

/* NCCL's own environment setup, once per process before it reads any NCCL_* variable (as its
 * ncclGetEnv does, src/misc/param.cc): the lines NAME=VALUE of $NCCL_CONF_FILE (else
 * ~/.nccl.conf) and then /etc/nccl.conf are set with setenv(NAME, VALUE, 0) ('#' lines skipped):
 * the process's environment wins over the files. Every NCCL_* read of the double calls it, and
 * so do ncclGetUniqueId and ncclCommInitRank* on their calling thread (NCCL 2.28's ncclInitEnv
 * there), so the setenv is done before any thread of the double starts. */
void ncclD_init_env(void);

/* INFO line for subsystem mask `subsys` on CUDA device `dev` (-1 prints as the current one). */
void ncclD_info(unsigned subsys, int dev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* WARN line as NCCL prints it, with the given source file and line. */
void ncclD_warn(const char *file, int line, int dev, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The version banner, once per process (as NCCL 2.28 prints it at NCCL_DEBUG=INFO/VERSION). */
void ncclD_version_banner(int version_code);

/* What one rank of a communicator needs to describe its connections. */
struct ncclD_peer { int rank, dev, node; /* node: index of the (simulated) host */ };
struct ncclD_comm_view {
  int nranks, rank, nchannels;
  uint64_t comm_ptr;             /* this rank's ncclComm_t value, for "comm 0x..." */
  uint64_t comm_hash;            /* printed as commId */
  const struct ncclD_peer *peers; /* nranks entries, indexed by rank */
  const char *api;               /* "ncclCommInitRank", "ncclCommSplit", ... as NCCL names the caller */
  uint64_t parent_ptr;           /* split/shrink: the parent's ncclComm_t (init lines say "parent"), else 0 */
  int split_count, color, key;
};
/* Called at the end of a successful init: prints the init lines (Init START/COMPLETE, ring
 * list, trees, channel summary, NVLS availability) the way NCCL 2.28 does. */
void ncclD_log_init(const struct ncclD_comm_view *v);
/* Called at the first collective or point-to-point on the communicator (NCCL >= 2.22 connects
 * at runtime): chooses and prints each ring connection ("Channel 00/0 : 0[0] -> 1[1] via ...")
 * and "Connected all rings ..." lines. */
void ncclD_log_connect(const struct ncclD_comm_view *v);
/* The slowest hop of the communicator's ring (rank r -> r+1, as the channels run), the same for
 * every rank: the transport the hops above would print and the link it runs over, for the link
 * model (nccl_double.h). A 1-rank communicator gets an NVLink 4 hop (its latency base only). */
struct ndbl_hop;
void ncclD_ring_link(const struct ncclD_comm_view *v, struct ndbl_hop *slowest);
/* 1 when the transport the double chooses for me -> peer is NET (IB or Socket): the hops that
 * have a proxy (nd_proxy.c). */
int ncclD_hop_is_net(const struct ncclD_comm_view *v, int me, int peer);
#endif
