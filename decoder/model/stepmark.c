/* stepmark.c — which call marks a trace file's steps (stepmark.h). */
#include "model/stepmark.h"

#include <string.h>

#include "base/settings.h"
#include "ncclscope/ops.h"

int ncs_stepmark_timed(unsigned op) {
  int k = ncs_op_kind(op);
  return k == NCS_KIND_COLL || k == NCS_KIND_P2P;
}

struct ncs_stepsig *ncs_stepmark_slot(struct ncs_stepsig *sig, uint32_t *nsig, uint64_t key) {
  uint32_t i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 52) & (NCS_STEPMARK_SIGS - 1);
  for (uint32_t k = 0; k < NCS_STEPMARK_SIGS; k++, i = (i + 1) & (NCS_STEPMARK_SIGS - 1)) {
    if (sig[i].key == key) return &sig[i];
    if (!sig[i].key) {
      if (*nsig >= NCS_STEPMARK_SIGS * 3 / 4) return NULL; /* full: later signatures not counted */
      ++*nsig;
      sig[i].key = key;
      return &sig[i];
    }
  }
  return NULL;
}

uint32_t ncs_stepmark_op_by_name(const char *s) {
  if (!s) return 0;
  if (strncmp(s, "nccl", 4) == 0) s += 4;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++)
    if (ncs_op_name(op) && strcmp(ncs_op_name(op), s) == 0) return op;
  return 0;
}

uint32_t ncs_stepmark_named(uint32_t opt, const char *mark, const char **how) {
  uint32_t op = opt;
  *how = "--step-op";
  if (!op && mark && mark[0]) { op = ncs_stepmark_op_by_name(mark); *how = "NCCLSCOPE_STEP_MARK"; }
  if (!op && ncs_settings()->step_mark) { op = ncs_stepmark_op_by_name(ncs_settings()->step_mark); *how = "NCCLSCOPE_STEP_MARK"; }
  if (!op) *how = "detected";
  return op;
}

int ncs_stepmark_choose(const struct ncs_stepsig *sig, uint32_t named_op, int cut, uint64_t *key, uint32_t *op) {
  const struct ncs_stepsig *best = NULL;
  if (named_op) {
    for (uint32_t i = 0; i < NCS_STEPMARK_SIGS; i++)
      if (sig[i].key && sig[i].op == named_op && (!best || sig[i].first < best->first)) best = &sig[i];
  } else {
    /* mode of the counts (>= 2) over signatures */
    uint64_t mode = 0, mode_n = 0;
    for (uint32_t i = 0; i < NCS_STEPMARK_SIGS; i++) {
      uint64_t c = sig[i].count;
      if (!sig[i].key || c < 2) continue;
      uint64_t n = 0;
      for (uint32_t k = 0; k < NCS_STEPMARK_SIGS; k++) if (sig[k].key && sig[k].count == c) n++;
      if (n > mode_n || (n == mode_n && c > mode)) { mode = c; mode_n = n; }
    }
    for (uint32_t i = 0; mode && i < NCS_STEPMARK_SIGS; i++)
      if (sig[i].key && (sig[i].count == mode || (cut && sig[i].count == mode + 1)) && (!best || sig[i].first < best->first))
        best = &sig[i];
  }
  if (!best || best->count < 2) return 0;
  *key = best->key;
  *op = best->op;
  return 1;
}
