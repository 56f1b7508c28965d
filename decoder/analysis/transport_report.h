/* transport_report.h — what report's `transport` analysis (transport_report.c) found, as data:
 * per communicator the connections every file gave it, the connections of files with no
 * communicator, per host the NVML topology with the transports NCCL chose between its GPUs,
 * and each file's own log model. Built in the analysis' finish(); render/transport_render.c
 * prints it as text and JSON. Valid until the analysis' destroy(). */
#ifndef NCS_TRANSPORT_REPORT_H
#define NCS_TRANSPORT_REPORT_H
#include <stdint.h>
#include "model/topo.h"
#include "model/transport.h"

struct ncs_transport_comm {
  uint64_t comm_id;
  int nranks;
  struct ncs_tmodel conns;     /* every file's connections of this communicator, merged */
};
struct ncs_transport_host {
  const char *host;
  const struct ncs_topo *topo;
  unsigned *chosen;            /* [topo->ngpus^2]: bit NCS_TC_<class> set at [a*ngpus+b] when NCCL
                                  connected GPUs a and b (either way) with that transport
                                  (P2P, SHM, ...: not NET, COLLNET) */
};
struct ncs_transport_result {
  int recorded;                /* a file has connections or a topology: else nothing to say */
  struct ncs_transport_comm *comms; int ncomms; /* with connections, first seen first */
  struct ncs_tmodel no_comm;   /* connections of files that recorded no communicator */
  uint64_t unattributed;       /* connection lines no communicator could be given */
  struct ncs_transport_host *hosts; int nhosts; /* hosts with a topology, first file's first */
  int nfiles;
  const struct ncs_tmodel **file_log; /* [nfiles]: each file's connection lines and versions */
};
#endif
