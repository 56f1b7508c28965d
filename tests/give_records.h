/* give_records.h — unit tests' records handed to a visitor as the reader hands them (raw
 * bodies encoded with the writer's own encoders): give_name, a KERNEL_NAME record. */
#ifndef NCS_GIVE_RECORDS_H
#define NCS_GIVE_RECORDS_H
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "ncclscope/encode.h"

/* A KERNEL_NAME record: kernel name id `id` of class `kclass` is `name`. */
static inline void give_name(struct ncs_visitor *v, uint32_t id, uint32_t kclass, const char *name) {
  uint8_t b[512];
  struct ncs_wbuf wb;
  ncs_wbuf_init(&wb, b, sizeof b);
  struct ncs_kernel_name kn = {.id = id, .kclass = kclass};
  snprintf(kn.name, sizeof kn.name, "%s", name);
  ncs_enc_kernel_name_body(&wb, &kn);
  v->raw(v->ctx, &(struct ncs_raw){NCS_REC_KERNEL_NAME, b, wb.len});
}
#endif
