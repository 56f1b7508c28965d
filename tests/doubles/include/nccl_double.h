/* nccl_double.h — what the NCCL double and the test jobs must agree on: the link model.
 *
 * Contract: an operation on the double takes at least ndbl_model_ns() on its stream when
 * NCCLDOUBLE_LAT_US / NCCLDOUBLE_BW_GBPS are set (docs/DOUBLES.md). The time is
 * lat + S·factor/bw, with S and factor as nccl-tests defines them
 * (docs/REFERENCE-FIGURES.md), so busbw measured over the operation gives bw back when
 * lat is 0. A group of point-to-point operations on one stream takes
 * lat + max(bytes sent, bytes received)/bw in total. No libm needed. */
#ifndef NCCL_DOUBLE_MODEL_H
#define NCCL_DOUBLE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum ndbl_rule { NDBL_RULE_ALLREDUCE, NDBL_RULE_ONE, NDBL_RULE_NTIMES };

/* Nanoseconds modelled for one operation moving count elements of dtsize bytes on n ranks
 * under rule; lat_us and bw_gbps (1e9 bytes/s, bus bandwidth) as read from the environment;
 * bw_gbps <= 0 means no bandwidth term. */
static inline uint64_t ndbl_model_ns(enum ndbl_rule rule, size_t count, size_t dtsize, int n,
                                     double lat_us, double bw_gbps) {
  double s = (double)count * (double)dtsize, factor = 1.0;
  if (rule == NDBL_RULE_ALLREDUCE) factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  if (rule == NDBL_RULE_NTIMES) { s *= n; factor = n > 1 ? (double)(n - 1) / n : 0.0; }
  double ns = lat_us * 1e3;
  if (bw_gbps > 0) ns += s * factor / bw_gbps; /* bytes / (GB/s) = ns */
  return ns > 0 ? (uint64_t)(ns + 0.5) : 0;
}

/* The link model's parameters from NCCLDOUBLE_LAT_US and NCCLDOUBLE_BW_GBPS (0 when unset). */
static inline void ndbl_model_env(double *lat_us, double *bw_gbps) {
  const char *l = getenv("NCCLDOUBLE_LAT_US"), *b = getenv("NCCLDOUBLE_BW_GBPS");
  *lat_us = l && *l ? strtod(l, NULL) : 0.0;
  *bw_gbps = b && *b ? strtod(b, NULL) : 0.0;
  if (*lat_us < 0) *lat_us = 0;
}
#endif
