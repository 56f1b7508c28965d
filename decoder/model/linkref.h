/* linkref.h — the bus bandwidth a healthy collective reaches over a given link: an α-β model per
 * transport and link, the one reference `report`, `doctor` and `html` judge busbw against
 * (docs/REFERENCE-FIGURES.md "Expected bus bandwidth", figures there).
 *
 * Contract: ncs_linkref_of() describes the link that bounds a collective from what a trace
 * records: the transport class NCCL used and, from the host's NVML topology, the NVLink count
 * and generation of the slowest NVLinked GPU pair or the PCIe generation and width of the
 * slowest GPU; the network's speed is not recorded, so NET assumes one 400 Gb/s NIC (said in
 * `why`). Its α (latency of one algorithm step) and β (the busbw a healthy large message
 * reaches) come from the reference figures. A set of calls with summed bus bytes B (S x the
 * busbw factor) and summed steps K (ncs_rule_steps: 2(n-1) for an all-reduce ring, ...) is
 * expected to take K·α + B/β, so its expected busbw is B / (K·α + B/β): a latency-bound 16 KiB
 * all-reduce is judged against what its size can reach, an 8 MiB one against nearly β. Pure
 * functions, no allocation. */
#ifndef NCS_LINKREF_H
#define NCS_LINKREF_H
#include "model/topo.h"

struct ncs_link {
  int tclass;          /* NCS_TC_* (io/nccllog.h); 0 none */
  double peak_gbps;    /* the link's peak per direction, GB/s */
  double beta_gbps;    /* busbw of a healthy large message, GB/s */
  double alpha_us;     /* latency of one algorithm step, us */
  char why[192];       /* the link and the figures, in words */
};

/* The link of transport class tclass on a host of topology t (NULL: not recorded; an assumed
 * link is named in why). 0, or -1 for a class with no model (left zeroed). */
int ncs_linkref_of(int tclass, const struct ncs_topo *t, struct ncs_link *out);
/* Of two links, the slower (lower β) one: the one that bounds a ring through both. */
const struct ncs_link *ncs_linkref_slower(const struct ncs_link *a, const struct ncs_link *b);
/* Expected busbw (GB/s) of calls whose bus bytes sum to busbytes and algorithm steps to steps;
 * 0 when unknown (no link, no bytes). */
double ncs_linkref_busbw(const struct ncs_link *l, double busbytes, double steps);
#endif
