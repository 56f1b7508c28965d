/* nd_model.c — the NCCL double's link model: how long an operation's kernel lasts on the device
 * clock (docs/DOUBLES.md, "The link model").
 *
 * Contract: nd_model_comm() prices a communicator once, at the end of its init, from the
 * slowest hop of its ring (transport.c: the transport NCCL chose on the NVML topology) with the
 * figures of nccl_double.h (ndbl_link_price), or flat from NCCLDOUBLE_LAT_US /
 * NCCLDOUBLE_BW_GBPS when either is set; every rank of a communicator gets the same figures.
 * nd_op_model_ns() and nd_p2p_model_ns() are pure functions of an operation and those figures:
 * latency (base + ring steps x per step) plus S x busbw factor / busbw. */
#include "nd_internal.h"

#include "../include/nccl_double.h"

static enum ndbl_rule rule_of(enum nd_kind k) {
  switch (k) {
  case ND_ALLREDUCE: return NDBL_RULE_ALLREDUCE;
  case ND_BROADCAST: case ND_REDUCE: case ND_SEND: case ND_RECV: return NDBL_RULE_ONE;
  default: return NDBL_RULE_NTIMES;
  }
}

void nd_model_comm(struct ncclComm *c, const struct ncclD_comm_view *v) {
  struct nd_model *m = &c->model;
  double lat, bw;
  if (ndbl_model_env(&lat, &bw)) {
    *m = (struct nd_model){.bw_gbps = bw, .lat_base_us = lat, .lat_step_us = 0, .link = -1};
    return;
  }
  struct ndbl_hop h;
  ncclD_ring_link(v, &h);
  ndbl_link_price(&h, &m->bw_gbps, &m->lat_base_us, &m->lat_step_us);
  m->link = (int)h.link;
}

uint64_t nd_op_model_ns(const struct nd_op *op) {
  const struct nd_model *m = &op->comm->model;
  enum ndbl_rule rule = rule_of(op->kind);
  int n = op->comm->nranks;
  double lat = m->lat_base_us + m->lat_step_us * ndbl_ring_steps(rule, n, 0);
  return ndbl_model_ns(rule, op->count, ncclscope_datatype_size(op->dt), n, lat, m->bw_gbps);
}

uint64_t nd_p2p_model_ns(const struct ncclComm *c, size_t bytes) {
  const struct nd_model *m = &c->model;
  double lat = m->lat_base_us + m->lat_step_us * ndbl_ring_steps(NDBL_RULE_ONE, 2, 1);
  return ndbl_model_ns(NDBL_RULE_ONE, bytes, 1, 2, lat, m->bw_gbps);
}
