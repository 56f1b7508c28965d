/* rules.c — the shared definitions of sizes and bandwidth (rules.h). */
#include "model/rules.h"
#include "io/nccllog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

const char *ncs_rule_dtype_name(uint32_t dt) {
  static const char *const n[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
                                  "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
  if (dt == 255u) return "-";
  return dt < sizeof n / sizeof *n ? n[dt] : "?";
}

const char *ncs_rule_redop_name(uint32_t op) {
  static const char *const n[] = {"sum", "prod", "max", "min", "avg"};
  if (op == 255u) return "-";
  return op < sizeof n / sizeof *n ? n[op] : "premulsum"; /* NCCL's created ops follow the built-in five */
}

double ncs_rule_busbw_factor(unsigned op, int n) {
  if (n < 1) n = 1;
  switch (ncs_op_bw(op)) {
  case NCS_BW_ALLREDUCE: return 2.0 * (n - 1) / n;
  case NCS_BW_NTIMES: return (double)(n - 1) / n;
  case NCS_BW_ONE: return 1.0;
  default: return 0.0;
  }
}

double ncs_rule_busbytes(unsigned op, uint64_t count, uint32_t datatype, int nranks) {
  double f = ncs_rule_busbw_factor(op, nranks);
  return f > 0 ? ncs_rule_S(op, count, datatype, nranks) * f : 0;
}

int ncs_rule_log2(double bytes) {
  if (!(bytes >= 1)) return -1;
  if (bytes < 9223372036854775808.0) return 63 - __builtin_clzll((unsigned long long)bytes);
  return (int)floor(log2(bytes));
}

double ncs_rule_steps(unsigned op, int n) {
  if (n < 2) n = 2;
  switch (ncs_op_bw(op)) {
  case NCS_BW_ALLREDUCE: return 2.0 * (n - 1);
  case NCS_BW_NTIMES: return (double)(n - 1);
  case NCS_BW_ONE: return ncs_op_kind(op) == NCS_KIND_P2P ? 1.0 : (double)(n - 1);
  default: return 0.0;
  }
}

void ncs_rule_ops(struct ncs_rule_op *t, int nranks) {
  for (unsigned op = 0; op < NCS_OP_LIMIT; op++) t[op] = (struct ncs_rule_op){ncs_rule_busbw_factor(op, nranks), ncs_rule_steps(op, nranks)};
}

const char *ncs_rule_why_host_timed(const char *timing, const char *gpu_timing_env) {
  if (gpu_timing_env && !strcmp(gpu_timing_env, "0")) return "NCCLSCOPE_GPU_TIMING=0";
  if (timing && !strcmp(timing, "host")) return "no CUDA runtime or device in the job";
  return "no GPU_TIME records in the trace";
}

const char *ncs_rule_nccl_version(int code, char *buf, size_t n) {
  if (!n) return buf;
  buf[0] = 0;
  if (code <= 0) return buf;
  /* NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before */
  int x = code >= 10000 ? code / 10000 : code / 1000, y = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  snprintf(buf, n, "%d.%d.%d", x, y, code % 100);
  return buf;
}
