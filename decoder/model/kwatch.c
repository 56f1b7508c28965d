/* kwatch.c — whether a trace file holds kernel activity (kwatch.h). */
#include "model/kwatch.h"

#include <string.h>

#include "ncclscope/encode.h"
#include "ncclscope/format.h"

void ncs_kwatch_raw(struct ncs_kwatch *w, const struct ncs_raw *r) {
  if (w->on) return;
  if (r->type == NCS_REC_KERNEL) { w->on = 1; return; }
  if (r->type != NCS_REC_KERNEL_STATUS) return;
  struct ncs_kernel_status s;
  struct ncs_rbuf b;
  if (ncs_dec_kernel_status(ncs_rbuf_on(&b, r->body, r->len), &s) != 0) return;
  if (s.state == NCS_KSTATE_ON) w->on = 1;
  else w->off = 1;
}

void ncs_kwatch_process(struct ncs_kwatch *w, const struct ncs_process *p) {
  const char *v = p ? ncs_process_get(p, "format_version") : NULL;
  if (v && !strcmp(v, "1.0") && !w->on) w->off = 1;
}
