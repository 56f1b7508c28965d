/* nccllog.h — one line of an NCCL debug log (any NCCL 2.3 .. 2.28 format) to a typed record.
 *
 * Contract: ncs_nl_parse() looks at one line (with or without its newline/CR), strips the
 * wrappers launchers and posters add (timestamps "[2025-07-21 19:05:29] ", Open MPI
 * "[1,N]<stdout>:", global rank "[N] ", Ray "(pid=N) " / "(Worker pid=N, ip=...) ", pdsh
 * "host: "), then NCCL's own "host:pid:tid [dev] NCCL INFO|WARN" prefix when present (it may
 * have been stripped by the poster), and classifies what is left. It never allocates, never
 * fails on any byte sequence, and fills `out` even for lines it ignores (kind NCS_NL_NONE).
 * Strings in `out` are copies, truncated to their buffers and NUL-terminated.
 * The same parser serves `ncclscope nccl-log` and the NCCL_LOG records of traces. */
#ifndef NCS_NCCLLOG_H
#define NCS_NCCLLOG_H
#include <stddef.h>
#include <stdint.h>

enum ncs_nl_kind {
  NCS_NL_NONE = 0,     /* not a line we use (still may carry a prefix) */
  NCS_NL_TRANSPORT,    /* "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" and older forms */
  NCS_NL_VERSION,      /* "NCCL version 2.28.9+cuda13.0" */
  NCS_NL_INIT,         /* "comm 0x.. rank R nranks N cudaDev D ... - Init START|COMPLETE" */
  NCS_NL_COMMINFO,     /* "comm 0x.. rank R nRanks N nNodes K localRanks L localRank l MNNVL m" */
  NCS_NL_RING,         /* ring order "Channel 00/08 :    0   5   4 ..." */
  NCS_NL_TREE,         /* "Trees [0] 1/-1/-1->0->-1 [1] ..." (text kept) */
  NCS_NL_NVLS,         /* "NVLS multicast support is [not ]available on dev N" */
  NCS_NL_CHANNELS,     /* "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p ..." */
  NCS_NL_ALGO,         /* "1048576 Bytes -> Algo 1 proto 2 time 31.4" (TUNING/COLL) */
  NCS_NL_COLL,         /* "AllReduce: opCount 1a sendbuff ... count N datatype D op O root R comm 0x.. [nranks=N] stream 0x.." */
  NCS_NL_NETUSE,       /* "Using network IB" / "NET/IB : No device found." / "NET/Socket : Using ..." */
  NCS_NL_WARN          /* any "NCCL WARN" line */
};

enum ncs_tclass {
  NCS_TC_UNKNOWN = 0, NCS_TC_P2P, NCS_TC_SHM, NCS_TC_NET, NCS_TC_COLLNET, NCS_TC_NVLS
};
/* "P2P", "SHM", "NET", "COLLNET", "NVLS", "?" */
const char *ncs_tclass_name(int tclass);

enum ncs_nl_dir { NCS_DIR_NONE = 0, NCS_DIR_SEND = 1, NCS_DIR_RECV = 2 };

/* Transport flags (NCS_TF_*) */
#define NCS_TF_READ 1u     /* P2P ".../read" */
#define NCS_TF_CE 2u       /* copy engine ".../CE" (P2P or SHM) */
#define NCS_TF_GDR 4u      /* NET ".../GDRDMA" */
#define NCS_TF_GDR_PCI 8u  /* NET "/GDRDMA(PCI)" */
#define NCS_TF_SHARED 16u  /* NET "/Shared" */
#define NCS_TF_PXN 32u     /* NET "/dev(proxy)": relayed through another local rank */

struct ncs_nl_transport {
  int channel, conn;        /* conn: the "/N" connIndex, -1 when not printed */
  int from, to;             /* ranks; `from` is -1 in the one-rank CollNet form */
  char from_tag[24], to_tag[24]; /* text in brackets after the rank (cudaDev, busId or nvmlDev), "" if none */
  int dir;                  /* NCS_DIR_* */
  int tclass;               /* NCS_TC_* */
  char detail[96];          /* everything after "CLASS/": "CUMEM/read", "IB/0/GDRDMA", "direct/direct" */
  char mode[48];            /* P2P: "CUMEM", "IPC", "direct pointer", "MNNVL", ...; SHM: "direct/direct";
                               NET/COLLNET: network name ("IB", "Socket", "AWS Libfabric", ...) */
  int net_dev, proxy;       /* NET/COLLNET device and PXN proxy rank, -1 when none */
  unsigned flags;           /* NCS_TF_* */
};

struct ncs_nl_init {
  int start;                /* 1 "Init START", 0 "Init COMPLETE" (or the COMMINFO line) */
  uint64_t comm_ptr, comm_id;
  int rank, nranks, cuda_dev, nvml_dev; /* -1 when absent */
  char bus_id[24];
  char api[32];             /* "ncclCommInitRank" etc. when printed (2.23.4+) */
  int nnodes, local_ranks, local_rank; /* COMMINFO line, else -1 */
};

#define NCS_NL_MAX_RING 256
struct ncs_nl_ring { int channel, nchannels, nranks_listed; int ranks[NCS_NL_MAX_RING]; };

struct ncs_nl_rec {
  int kind;                 /* NCS_NL_* */
  /* The NCCL prefix, when present (has_prefix). Wrappers removed before it: */
  int has_prefix;
  char host[64];
  long pid, tid;            /* -1 when absent */
  int dev;                  /* "[dev]" of the prefix, -1 when absent */
  int wrapper_rank;         /* from "[1,N]<stdout>:" or "[N] ", -1 when none */
  const char *msg;          /* points into the caller's line: the message after "NCCL INFO " */
  size_t msg_len;
  union {
    struct ncs_nl_transport t;
    struct { char text[32]; int code; } version; /* "2.28.9+cuda13.0", code 22809 */
    struct ncs_nl_init init;
    struct ncs_nl_ring ring;
    struct { char text[200]; } tree;
    struct { int available, dev; } nvls;
    struct { int coll, collnet, nvls, p2p, p2p_per_peer; } channels; /* -1 when absent */
    struct { long long bytes; int algo, proto; double time_us; } algo;
    struct { char op[24]; unsigned long long op_count, count; int datatype, redop, root, nranks;
             uint64_t comm_ptr; } coll;
    struct { char name[48]; int ib_missing; } netuse; /* name "" when the line says no device */
    struct { char where[64]; char text[200]; } warn;
  } u;
};

/* Parses one line (len bytes; need not be NUL-terminated). Returns out->kind. */
int ncs_nl_parse(const char *line, size_t len, struct ncs_nl_rec *out);

/* Version code from "2.28.9" (22809; 2.8.3 -> 2803 as NCCL < 2.9 numbered them), 0 if none. */
int ncs_nl_version_code(const char *text);
#endif
