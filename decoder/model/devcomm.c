/* devcomm.c — device communicators' lives from DEVCOMM records (contract in devcomm.h). */
#include "model/devcomm.h"

#include "ncclscope/encode.h"
#include "ncclscope/ops.h"

int ncs_devcomms_add(struct ncs_devcomms *s, const uint8_t *body, size_t len) {
  struct ncs_devcomm x;
  struct ncs_rbuf r;
  if (ncs_dec_devcomm(ncs_rbuf_on(&r, body, len), &x) != 0) { s->bad++; return -1; }
  if (x.op == NCS_OP_DevCommCreate) {
    if (s->n == NCS_DEVCOMMS_MAX) { s->more++; return 0; }
    s->d[s->n++] = (struct ncs_devcomm_life){.create = x};
    return 0;
  }
  if (x.op != NCS_OP_DevCommDestroy) { s->bad++; return -1; }
  struct ncs_devcomm_life *hit = NULL;
  for (int pass = 0; pass < 2 && !hit; pass++) /* same pointer first, then any of the communicator */
    for (int i = 0; i < s->n && !hit; i++) {
      struct ncs_devcomm_life *l = &s->d[i];
      if (l->destroyed || l->create.rc != 0 || l->create.comm != x.comm) continue;
      if (pass == 0 && l->create.handle != x.handle) continue;
      hit = l;
    }
  if (!hit) { s->unmatched_destroys++; return 0; }
  hit->destroyed = 1;
  hit->destroy_rc = x.rc;
  hit->destroy_enter = x.t_enter;
  hit->destroy_exit = x.t_exit;
  return 0;
}

int ncs_devcomms_cover(const struct ncs_devcomms *s, uint64_t t) {
  for (int i = 0; i < s->n; i++) {
    const struct ncs_devcomm_life *l = &s->d[i];
    if (l->create.rc == 0 && t >= l->create.t_exit && (!l->destroyed || t < l->destroy_exit)) return 1;
  }
  return 0;
}

int ncs_devcomms_created(const struct ncs_devcomms *s) {
  int n = 0;
  for (int i = 0; i < s->n; i++) n += s->d[i].create.rc == 0;
  return n;
}
