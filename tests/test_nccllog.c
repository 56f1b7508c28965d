/* test_nccllog.c — the NCCL debug-log parser (decoder/io/nccllog.c) on every real log in
 * tests/fixtures/nccl-logs/ (tests/fixtures/README.md gives the source of each file) and on edge cases.
 *
 * Per file: the number of transport lines by class must equal what a plain `grep ' via P2P/'`
 * (etc.) counts in that file (numbers below were taken with grep, not with the parser), every
 * line must parse without crashing, and non-transport lines must not become transports.
 * Then specific lines are checked field by field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/nccllog.h"
#include "model/transport.h"

struct expect { const char *file; int via, p2p, shm, net, versions, warns; };
/* via/p2p/shm/net: grep -c ' via ', ' via P2P/', ' via (SHM/|direct shared)', ' via NET/';
 * versions: lines "NCCL version 2.x" that are NCCL's own (not inside an application error);
 * warns: "NCCL WARN" lines. */
static const struct expect files[] = {
  {"01-2.3-2.4-4node-ring-p2p-ipc.log", 19, 19, 0, 0, 0, 0},
  {"03-2.3-2.4-tensorflow-coll-allreduce-opcount.log", 0, 0, 0, 0, 0, 0},
  {"05-2.4.x-64rank-ec2-socket-trees-init-complete.log", 11, 0, 0, 11, 0, 0},
  {"06-2.4.8-p3dn-efa-ofi-2node-init-complete.log", 0, 0, 0, 0, 1, 0},
  {"07-2.5.6-mpi-prefix-ib-not-found-socket-lo.log", 0, 0, 0, 0, 1, 0},
  {"10-2.6.4-2gpu-nvlink-graph-search-tuning-table.log", 0, 0, 0, 0, 0, 0},
  {"11-2.7.8-ray-2gpu-p2p-ipc-peer-access-not-supported-warn.log", 1, 1, 0, 0, 0, 1},
  {"12-2.8.3-p4d-efa-2node-mpi-prefix-full-run.log", 320, 256, 0, 64, 1, 0},
  {"13-2.8.3-2.11-2node-direct-pointer-ib-gdrdma-init-complete.log", 6, 3, 0, 3, 0, 0},
  {"15-2.8.3-2.11-2node-a100-ib-gdrdma-ipc-read.log", 11, 7, 0, 4, 0, 0},
  {"17-2.14-2.18.1-p4d-ipc-read-connindex-busid.log", 10, 10, 0, 0, 0, 0},
  {"19-2.17-2.18.1-nvls-not-available-rings-trees.log", 0, 0, 0, 0, 0, 0},
  {"20-2.14-2.18.1-2node-socket-ipc-read-same-hostname.log", 12, 9, 0, 3, 0, 0},
  {"21-2.18.3-2.22-16rank-ib-plugin-no-device-socket-ipc-read.log", 16, 14, 0, 2, 0, 0},
  {"22-2.18.5-8x-a6000-deepspeed-ib-none.log", 0, 0, 0, 0, 1, 0},
  {"23-2.18.3-2.19-h800-single-process-nvls-zero-channels.log", 2, 2, 0, 0, 0, 0},
  {"25-2.18.3-2.23-4x-consumer-gpu-patched-p2p-direct-pointer.log", 6, 6, 0, 0, 0, 0},
  {"26-2.19.3-single-gpu-gcp-ib-not-found-socket.log", 0, 0, 0, 0, 1, 0},
  {"27-2.19.3-dgx-h100-roce-2node-bootstrap.log", 0, 0, 0, 0, 1, 0},
  {"29-2.20.5-8x-l20-no-ibverbs-socket.log", 0, 0, 0, 0, 1, 0},
  {"30-2.20-2.22-2gpu-cross-numa-graph-ring-tree-direct-pointer.log", 1, 1, 0, 0, 0, 0},
  {"31-2.20-2.22-2node-ib-without-gdr-direct-pointer-read.log", 14, 10, 0, 4, 0, 0},
  {"32-2.20plus-h20-2node-pxn-disabled-cumem-ib-gdrdma-graph.log", 14, 5, 0, 9, 0, 0},
  {"33-2.22.3-8gpu-nvswitch-roce-ibext-v8-nvls-available-cumem.log", 11, 11, 0, 0, 0, 0},
  {"34-2.22.3-nvls-head-graph-lines.log", 0, 0, 0, 0, 0, 0},
  {"36-2.24.3-nvls-sharp-prefix-stripped.log", 0, 0, 0, 0, 1, 0},
  {"37-2.24.3-nvls-available-mnnvl-fully-stripped.log", 0, 0, 0, 0, 1, 0},
  {"38-2.25.1-2x-rtx5090-p2p-disable-ib-none-socket.log", 0, 0, 0, 0, 2, 0},
  {"39-2.26.2-h100-nvls-cuda-failure-timestamped-warn.log", 0, 0, 0, 0, 0, 1},
  {"41-2.27-preview-2node-mpi-prefix-proxy-threads.log", 0, 0, 0, 0, 0, 0},
  {"42-2.27.3-g6e-l40s-1pod-4proc-shm.log", 28, 0, 28, 0, 4, 0},
  {"43-2.27.3-g6e-l40s-4pod-efa-libfabric-no-gdr.log", 24, 0, 0, 24, 1, 0},
  {"44-2.27.3-p4d-a100-1pod-4proc-cumem-read.log", 192, 192, 0, 0, 0, 0},
  {"47-2.28.9-p5-efa-gin-error-propagation.log", 0, 0, 0, 0, 0, 0},
  {"49-x-pdsh-style-host-prefix-ibext-sharp.log", 0, 0, 0, 0, 0, 0},
  {"51-x-coll-send-recv-opcount-nil-buffers.log", 0, 0, 0, 0, 0, 0},
  {"52-x-coll-allgather-reducescatter-allreduce.log", 0, 0, 0, 0, 0, 0},
};

static char logdir[1024];

static FILE *open_log(const char *name) {
  char p[1400];
  snprintf(p, sizeof p, "%s/%s", logdir, name);
  return fopen(p, "rb");
}

/* Finds the first line of `file` containing `needle` and parses it into r. */
static int parse_first(const char *file, const char *needle, struct ncs_nl_rec *r) {
  FILE *f = open_log(file);
  if (!f) return -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int k = -1;
  while ((n = getline(&line, &cap, f)) >= 0)
    if (strstr(line, needle)) { k = ncs_nl_parse(line, (size_t)n, r); break; }
  free(line);
  fclose(f);
  return k;
}

static int P(const char *s, struct ncs_nl_rec *r) { return ncs_nl_parse(s, strlen(s), r); }

static void per_file_counts(void) {
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    const struct expect *e = &files[i];
    FILE *f = open_log(e->file);
    if (!f) { CHECK(0, "%s: readable", e->file); continue; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int via = 0, p2p = 0, shm = 0, net = 0, vers = 0, warns = 0, unknown = 0, wrong_dir = 0, lines = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
      struct ncs_nl_rec r;
      lines++;
      int k = ncs_nl_parse(line, (size_t)n, &r);
      if (k == NCS_NL_TRANSPORT) {
        via++;
        p2p += r.u.t.tclass == NCS_TC_P2P;
        shm += r.u.t.tclass == NCS_TC_SHM;
        net += r.u.t.tclass == NCS_TC_NET;
        unknown += r.u.t.tclass == NCS_TC_UNKNOWN;
        /* NET lines always carry [send]/[receive] in these versions; P2P/SHM never do */
        if ((r.u.t.tclass == NCS_TC_NET) != (r.u.t.dir != NCS_DIR_NONE)) wrong_dir++;
        if (!strstr(line, " via ")) wrong_dir++;
      }
      vers += k == NCS_NL_VERSION;
      warns += k == NCS_NL_WARN;
    }
    free(line);
    fclose(f);
    CHECK(via == e->via && p2p == e->p2p && shm == e->shm && net == e->net && unknown == 0,
          "%s: %d transport lines (P2P %d SHM %d NET %d), expected %d (%d/%d/%d)", e->file, via, p2p, shm, net,
          e->via, e->p2p, e->shm, e->net);
    CHECK(wrong_dir == 0, "%s: direction only on NET lines", e->file);
    CHECK(vers == e->versions, "%s: %d version lines (expected %d)", e->file, vers, e->versions);
    CHECK(warns == e->warns, "%s: %d WARN lines (expected %d)", e->file, warns, e->warns);
  }
}

static void specific_lines(void) {
  struct ncs_nl_rec r;
  /* 2.3/2.4 "Ring" form with cudaDev in brackets (file 01) */
  int k = parse_first("01-2.3-2.4-4node-ring-p2p-ipc.log", "26[2] -> 24[0]", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.channel == 0 && r.u.t.conn == -1 && r.u.t.from == 26 && r.u.t.to == 24 &&
        !strcmp(r.u.t.from_tag, "2") && !strcmp(r.u.t.to_tag, "0") && r.u.t.tclass == NCS_TC_P2P &&
        !strcmp(r.u.t.mode, "IPC") && !strcmp(r.host, "server4") && r.pid == 45888 && r.dev == 2,
        "01: Ring 00 : 26[2] -> 24[0] via P2P/IPC");
  /* 2.4 NET without brackets, with direction (file 05) */
  k = parse_first("05-2.4.x-64rank-ec2-socket-trees-init-complete.log", "34 -> 33 [send]", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.from == 34 && r.u.t.to == 33 && r.u.t.dir == NCS_DIR_SEND &&
        r.u.t.tclass == NCS_TC_NET && !strcmp(r.u.t.mode, "Socket") && r.u.t.net_dev == 0 && !r.u.t.from_tag[0],
        "05: Ring 00 : 34 -> 33 [send] via NET/Socket/0");
  /* 2.4 Init COMPLETE with nvmlDev, no busId (file 05) */
  k = parse_first("05-2.4.x-64rank-ec2-socket-trees-init-complete.log", "Init COMPLETE", &r);
  CHECK(k == NCS_NL_INIT && r.u.init.rank == 17 && r.u.init.nranks == 64 && r.u.init.cuda_dev == 0 &&
        r.u.init.nvml_dev == 0 && r.u.init.comm_ptr == 0x7f145c002250ull, "05: 2.4 Init COMPLETE fields");
  /* Open MPI prefix + bare version line (file 07) */
  k = parse_first("07-2.5.6-mpi-prefix-ib-not-found-socket-lo.log", "NCCL version", &r);
  CHECK(k == NCS_NL_VERSION && !strcmp(r.u.version.text, "2.5.6+cuda10.2") && r.u.version.code == 2506 &&
        r.wrapper_rank == 0, "07: [1,0]<stdout>:NCCL version 2.5.6+cuda10.2");
  k = parse_first("07-2.5.6-mpi-prefix-ib-not-found-socket-lo.log", "No device found", &r);
  CHECK(k == NCS_NL_NETUSE && r.u.netuse.ib_missing && !strcmp(r.host, "5873af64cf59"), "07: NET/IB : No device found");
  /* Ray prefix, P2P/IPC, then the WARN with its source position (file 11) */
  k = parse_first("11-2.7.8-ray-2gpu-p2p-ipc-peer-access-not-supported-warn.log", "via P2P/IPC", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.from_tag, "2d000") && !strcmp(r.host, "z-pc") && r.pid == 909608,
        "11: (pid=909608) Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC");
  k = parse_first("11-2.7.8-ray-2gpu-p2p-ipc-peer-access-not-supported-warn.log", "NCCL WARN", &r);
  CHECK(k == NCS_NL_WARN && !strcmp(r.u.warn.where, "transport/p2p.cc:238") &&
        strstr(r.u.warn.text, "peer access is not supported"), "11: WARN where and text");
  /* MPI prefix, plugin name with a space (file 12) */
  k = parse_first("12-2.8.3-p4d-efa-2node-mpi-prefix-full-run.log", "[receive] via NET/AWS Libfabric/3/GDRDMA", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.tclass == NCS_TC_NET && !strcmp(r.u.t.mode, "AWS Libfabric") &&
        r.u.t.net_dev == 3 && (r.u.t.flags & NCS_TF_GDR) && r.u.t.dir == NCS_DIR_RECV && r.wrapper_rank >= 0,
        "12: [receive] via NET/AWS Libfabric/3/GDRDMA");
  k = parse_first("12-2.8.3-p4d-efa-2node-mpi-prefix-full-run.log", "via P2P/IPC/read", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "IPC") && (r.u.t.flags & NCS_TF_READ) && !strcmp(r.u.t.detail, "IPC/read"),
        "12: via P2P/IPC/read");
  k = parse_first("12-2.8.3-p4d-efa-2node-mpi-prefix-full-run.log", "rank 14 nranks 16", &r);
  CHECK(k == NCS_NL_INIT && r.u.init.rank == 14 && r.u.init.nranks == 16 && r.u.init.cuda_dev == 6 &&
        !strcmp(r.u.init.bus_id, "a01c0") && r.u.init.nvml_dev == -1, "12: Init COMPLETE with busId a01c0");
  /* P2P/direct pointer (the mode holds a space) (file 13) */
  k = parse_first("13-2.8.3-2.11-2node-direct-pointer-ib-gdrdma-init-complete.log", "via P2P/direct pointer", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "direct pointer") && r.u.t.flags == 0, "13: via P2P/direct pointer");
  /* connIndex and busId brackets (file 17) */
  k = parse_first("17-2.14-2.18.1-p4d-ipc-read-connindex-busid.log", "Channel 23/0 : 2[201c0]", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.channel == 23 && r.u.t.conn == 0 && r.u.t.from == 2 && r.u.t.to == 3 &&
        !strcmp(r.u.t.to_tag, "201d0"), "17: Channel 23/0 : 2[201c0] -> 3[201d0] via P2P/IPC/read");
  /* ring order with %3d padding, 16 ranks (file 19) */
  k = parse_first("19-2.17-2.18.1-nvls-not-available-rings-trees.log", "Channel 00/02 :", &r);
  CHECK(k == NCS_NL_RING && r.u.ring.nchannels == 2 && r.u.ring.nranks_listed == 16 && r.u.ring.ranks[8] == 8 &&
        r.u.ring.ranks[9] == 15, "19: ring order Channel 00/02 : 0 1 .. 8 15 .. 9");
  k = parse_first("19-2.17-2.18.1-nvls-not-available-rings-trees.log", "NVLS multicast support is not available on dev 7", &r);
  CHECK(k == NCS_NL_NVLS && !r.u.nvls.available && r.u.nvls.dev == 7, "19: NVLS not available on dev 7");
  /* GRAPH "Ring 00 : 0 -> 1 -> 0" is a neighbour triple, not a connection (file 30) */
  k = parse_first("30-2.20-2.22-2gpu-cross-numa-graph-ring-tree-direct-pointer.log", "Ring 00 : 0 -> 1 -> 0", &r);
  CHECK(k == NCS_NL_NONE, "30: GRAPH ring line is not a transport");
  k = parse_first("30-2.20-2.22-2gpu-cross-numa-graph-ring-tree-direct-pointer.log", "nNodes 1", &r);
  CHECK(k == NCS_NL_COMMINFO && r.u.init.nranks == 2 && r.u.init.nnodes == 1 && r.u.init.local_ranks == 2,
        "30: comm .. nRanks 2 nNodes 1 localRanks 2");
  /* NET/IB without GDR (file 31) */
  k = parse_first("31-2.20-2.22-2node-ib-without-gdr-direct-pointer-read.log", "via NET/IB/3", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "IB") && r.u.t.net_dev == 3 && !(r.u.t.flags & NCS_TF_GDR),
        "31: via NET/IB/3 (no GDRDMA)");
  /* 2.18.3+ nvmlDev brackets and CUMEM (file 33) */
  k = parse_first("33-2.22.3-8gpu-nvswitch-roce-ibext-v8-nvls-available-cumem.log", "via P2P/CUMEM", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "CUMEM") && r.u.t.conn >= 0, "33: via P2P/CUMEM");
  /* fully stripped prefix: "NCCL version" alone, NVLS line alone (file 37) */
  k = parse_first("37-2.24.3-nvls-available-mnnvl-fully-stripped.log", "NCCL version", &r);
  CHECK(k == NCS_NL_VERSION && r.u.version.code == 22403 && !r.has_prefix, "37: stripped NCCL version 2.24.3");
  /* timestamped WARN (file 39) */
  k = parse_first("39-2.26.2-h100-nvls-cuda-failure-timestamped-warn.log", "NCCL WARN", &r);
  CHECK(k == NCS_NL_WARN && !strcmp(r.host, "node004") && r.dev == 1 && !strcmp(r.u.warn.where, "transport/nvls.cc:254"),
        "39: [timestamp] host:pid:tid [1] transport/nvls.cc:254 NCCL WARN");
  /* SHM/direct/direct (file 42) */
  k = parse_first("42-2.27.3-g6e-l40s-1pod-4proc-shm.log", "via SHM/direct/direct", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.tclass == NCS_TC_SHM && !strcmp(r.u.t.mode, "direct/direct") && r.u.t.conn == -1,
        "42: via SHM/direct/direct");
  /* pdsh prefix (file 49) */
  k = parse_first("49-x-pdsh-style-host-prefix-ibext-sharp.log", "Using network IBext", &r);
  CHECK(k == NCS_NL_NETUSE && !strcmp(r.u.netuse.name, "IBext") && !strcmp(r.host, "rdma-gpu-train-worker-0") &&
        r.pid == 19487, "49: pdsh 'host: ' prefix then Using network IBext");
  /* COLL line (file 51) */
  k = parse_first("51-x-coll-send-recv-opcount-nil-buffers.log", "Recv: opCount d60", &r);
  CHECK(k == NCS_NL_COLL && !strcmp(r.u.coll.op, "Recv") && r.u.coll.op_count == 0xd60 && r.u.coll.count == 2420736 &&
        r.u.coll.datatype == 7 && r.u.coll.root == 1 && r.u.coll.nranks == 2, "51: COLL Recv with (nil) sendbuff");
}

static void edge_cases(void) {
  struct ncs_nl_rec r;
  /* PXN proxy, GDRDMA(PCI), Shared, plugin name with spaces (format of 2.26 net.cc) */
  int k = P("h:1:2 [3] NCCL INFO Channel 02/1 : 3[3] -> 11[3] [send] via NET/NCCL RDMA Plugin v6/0(2)/GDRDMA(PCI)/Shared\r\n", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "NCCL RDMA Plugin v6") && r.u.t.net_dev == 0 && r.u.t.proxy == 2 &&
        (r.u.t.flags & NCS_TF_PXN) && (r.u.t.flags & NCS_TF_GDR_PCI) && (r.u.t.flags & NCS_TF_SHARED) &&
        r.u.t.channel == 2 && r.u.t.conn == 1, "PXN + GDRDMA(PCI) + Shared + CRLF");
  k = P("h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.tclass == NCS_TC_COLLNET && r.u.t.to == 0 && r.u.t.from == -1 &&
        !strcmp(r.u.t.mode, "SHARP") && r.u.t.net_dev == 1 && r.u.t.dir == NCS_DIR_RECV, "CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA");
  k = P("h:1:2 [0] NCCL INFO Ring 00 : 3[b0] -> 0[80] via direct shared memory", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.tclass == NCS_TC_SHM, "2.5 'via direct shared memory' is SHM");
  k = P("[155] h:1:2 [3] NCCL INFO Channel 00/0 : 155[3] -> 157[5] via P2P/CUMEM/read", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.wrapper_rank == 155 && r.dev == 3 && r.u.t.from == 155 && (r.u.t.flags & NCS_TF_READ),
        "[155] global-rank wrapper");
  k = P("(RayTrainWorker pid=77, ip=10.0.0.1) h:77:78 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL/CE", &r);
  CHECK(k == NCS_NL_TRANSPORT && !strcmp(r.u.t.mode, "MNNVL") && (r.u.t.flags & NCS_TF_CE) && r.pid == 77, "Ray worker prefix, P2P/MNNVL/CE");
  k = P("[0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.dev == 0 && !r.has_prefix, "host stripped, [dev] kept");
  k = P("Channel 01/0 : 0[0] -> 1[1] via SHM/CE/direct", &r);
  CHECK(k == NCS_NL_TRANSPORT && r.u.t.tclass == NCS_TC_SHM && (r.u.t.flags & NCS_TF_CE), "fully stripped SHM/CE/direct");
  k = P("h:1:2 [0] NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 31.500000", &r);
  CHECK(k == NCS_NL_ALGO && r.u.algo.bytes == 1048576 && r.u.algo.algo == 1 && r.u.algo.proto == 2, "TUNING algo line");
  k = P("h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x57a7 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 1a000 commId 0xdf55 - Init START", &r);
  CHECK(k == NCS_NL_INIT && r.u.init.start && !strcmp(r.u.init.api, "ncclCommInitRankConfig") && r.u.init.comm_id == 0xdf55 &&
        r.u.init.nranks == 8, "2.23+ Init START with API name and commId");
  /* NCCL 2.28 init.cc, a split child: parent/splitCount/color/key, no space before "- Init START" */
  k = P("h:1:2 [0] NCCL INFO ncclCommSplit comm 0x7f01 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2000 parent 0x7e00 splitCount 0 color 0 key 1- Init START", &r);
  CHECK(k == NCS_NL_INIT && r.u.init.start && !strcmp(r.u.init.api, "ncclCommSplit") && r.u.init.comm_ptr == 0x7f01 &&
        r.u.init.rank == 1 && r.u.init.nranks == 4 && r.tid == 2, "2.28 split Init START (no space before '-')");
  k = P("h:1:2 [0] NCCL INFO ncclCommSplit comm 0x7f01 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2000 parent 0x7e00 splitCount 0 color 0 key 1 - Init COMPLETE", &r);
  CHECK(k == NCS_NL_INIT && !r.u.init.start && r.u.init.comm_ptr == 0x7f01 && r.tid == 2, "2.28 split Init COMPLETE");
  k = P("h:1:2 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer", &r);
  CHECK(k == NCS_NL_CHANNELS && r.u.channels.coll == 24 && r.u.channels.collnet == 24 && r.u.channels.nvls == 0 &&
        r.u.channels.p2p == 32 && r.u.channels.p2p_per_peer == 32, "channel summary 2.20+");
  /* not transports */
  CHECK(P("h:1:2 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1", &r) == NCS_NL_NONE, "Connected all rings ignored");
  CHECK(P("RuntimeError: NCCL error ... NCCL version 2.7.8", &r) == NCS_NL_NONE, "version inside an application error ignored");
  CHECK(P("user text: Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM said someone", &r) == NCS_NL_NONE ||
        r.kind == NCS_NL_NONE, "transport text inside application output is not a connection");
  CHECK(P("", &r) == NCS_NL_NONE && P("\r\n", &r) == NCS_NL_NONE, "empty lines");
  /* no crash on hostile bytes: every prefix of every edge line, and random bytes */
  const char *lines[] = { "[1,2]<stdout>:h:1:2 [3] NCCL INFO Channel 02/1 : 3[3] -> 11[3] [send] via NET/IB/0(2)/GDRDMA",
                          "(pid=1) [9] h: h:1:2 [0] 1.2 f:1 NCCL TRACE x", "[2025-01-01 00:00:00] [1,0]<stderr>:" };
  int ok = 1;
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    for (size_t n = 0; n <= strlen(lines[i]); n++) {
      char *c = malloc(n ? n : 1);
      memcpy(c, lines[i], n);
      ncs_nl_parse(c, n, &r);
      if (r.msg && (r.msg < c || r.msg + r.msg_len > c + n)) ok = 0;
      free(c);
    }
  srand(7);
  for (int it = 0; it < 20000; it++) {
    char buf[96];
    size_t n = (size_t)(rand() % 96);
    for (size_t i = 0; i < n; i++) buf[i] = (char)(rand() % 4 ? " :[]/->0123456789abcviaPNETSHMChannel"[rand() % 37] : rand());
    ncs_nl_parse(buf, n, &r);
    if (r.msg && (r.msg < buf || r.msg + r.msg_len > buf + n)) ok = 0;
  }
  CHECK(ok, "every cut of edge lines and 20000 random lines parse inside their bounds");
}

static void model_checks(void) {
  struct ncs_tmodel m;
  char p[1400];
  ncs_tmodel_init(&m);
  snprintf(p, sizeof p, "%s/%s", logdir, "44-2.27.3-p4d-a100-1pod-4proc-cumem-read.log");
  CHECK(ncs_tmodel_file(&m, p) == 0, "model reads file 44");
  /* file 44 prints each of its 96 connections twice (two runs of the same job) */
  CHECK(m.nconns == 96 && ncs_tmodel_count(&m, NCS_TC_P2P) == 96, "44: 192 via lines -> 96 distinct connections (%zu)", m.nconns);
  ncs_tmodel_free(&m);
  ncs_tmodel_init(&m);
  snprintf(p, sizeof p, "%s/%s", logdir, "42-2.27.3-g6e-l40s-1pod-4proc-shm.log");
  ncs_tmodel_file(&m, p);
  CHECK(ncs_tmodel_nversions(&m) == 1 && m.nvers == 4 && ncs_tmodel_version(&m) &&
        !strncmp(ncs_tmodel_version(&m), "2.27.3", 6), "42: 4 processes print NCCL 2.27.3 (one distinct version)");
  ncs_tmodel_free(&m);
  ncs_tmodel_init(&m);
  snprintf(p, sizeof p, "%s/%s", logdir, "31-2.20-2.22-2node-ib-without-gdr-direct-pointer-read.log");
  ncs_tmodel_file(&m, p);
  static const int ring1[16] = { 0, 5, 4, 7, 6, 3, 10, 9, 8, 13, 12, 15, 14, 11, 2, 1 };
  CHECK(m.rings == 5 && m.nring_list == 5 && m.ring_list[1].channel == 1 && m.ring_list[1].nchannels == 8 &&
        m.ring_list[1].n == 16 && !memcmp(m.ring_list[1].ranks, ring1, sizeof ring1),
        "31: 5 ring orders kept, channel 01/08 = 0 5 4 7 6 3 10 9 8 13 12 15 14 11 2 1");
  ncs_tmodel_free(&m);
  ncs_tmodel_init(&m);
  const char *algo = "h:1:2 [0] NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 31.500000";
  const char *chan = "h:1:2 [0] NCCL INFO 16 coll channels, 0 nvls channels, 16 p2p channels, 16 p2p channels per peer";
  ncs_tmodel_line(&m, algo, strlen(algo));
  ncs_tmodel_line(&m, chan, strlen(chan));
  CHECK(m.nalgo_list == 1 && m.algo_list[0].bytes == 1048576 && m.algo_list[0].algo == 1 && m.algo_list[0].proto == 2 &&
        m.chan_coll == 16 && m.chan_p2p == 16 && m.chan_nvls == 0, "model keeps algorithm/protocol and channel lines");
  ncs_tmodel_free(&m);
}

int main(void) {
  const char *root = getenv("ROOT");
  snprintf(logdir, sizeof logdir, "%s/tests/fixtures/nccl-logs", root ? root : ".");
  per_file_counts();
  specific_lines();
  model_checks();
  edge_cases();
  return check_done();
}
