/* knames.c — kernel names of one trace and the operation an NCCL kernel runs (contract in knames.h). */
#include "model/knames.h"

#include <stdlib.h>
#include <string.h>

#include "ncclscope/cupti_abi.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/ops.h"

int ncs_knames_add_raw(struct ncs_knames *t, const struct ncs_raw *r) {
  if (r->type != NCS_REC_KERNEL_NAME) return 0;
  struct ncs_kernel_name x;
  struct ncs_rbuf rb;
  if (ncs_dec_kernel_name(ncs_rbuf_on(&rb, r->body, r->len), &x) != 0 || x.id >= NCS_KNAMES_MAX) return 1;
  if (x.id >= t->n) {
    uint32_t n = t->n ? t->n : 64;
    while (n <= x.id) n *= 2;
    char **p = realloc(t->name, n * sizeof *p);
    if (!p) return 1;
    memset(p + t->n, 0, (n - t->n) * sizeof *p);
    t->name = p; t->n = n;
  }
  x.name[sizeof x.name - 1] = 0;
  if (t->name[x.id] && !strcmp(t->name[x.id], x.name)) return 1; /* written again after a lost chunk */
  char *s = strdup(x.name);
  if (!s) return 1;
  free(t->name[x.id]);
  t->name[x.id] = s;
  return 1;
}

const char *ncs_knames_get(const struct ncs_knames *t, uint32_t id) { return id < t->n ? t->name[id] : NULL; }

void ncs_knames_free(struct ncs_knames *t) {
  for (uint32_t i = 0; i < t->n; i++) free(t->name[i]);
  free(t->name);
  t->name = NULL; t->n = 0;
}

const char *ncs_kernel_op(const char *name, size_t *len) {
  name = ncs_kernel_ident(name); /* a mangled name's identifier */
  const char *p = name ? strchr(name, '_') : NULL;
  if (!p) return NULL;
  p++;
  *len = strcspn(p, "_(<");
  return *len ? p : NULL;
}

const char *ncs_kernel_op_of_call(unsigned op) {
  switch (op) {
  case NCS_OP_AllReduce: return "AllReduce";
  case NCS_OP_Broadcast: case NCS_OP_Bcast: return "Broadcast";
  case NCS_OP_Reduce: return "Reduce";
  case NCS_OP_AllGather: return "AllGather";
  case NCS_OP_ReduceScatter: return "ReduceScatter";
  case NCS_OP_Send: case NCS_OP_Recv: case NCS_OP_AlltoAll: case NCS_OP_Gather: case NCS_OP_Scatter:
    return "SendRecv";
  default: return NULL;
  }
}
