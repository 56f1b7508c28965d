/* devcomm.c — the device-API shape: ncclDevCommCreate and ncclDevCommDestroy (NCCL 2.28+,
 * nccl_device/core.h), recorded as a CALL and a DEVCOMM record (docs/FORMAT.md "22 DEVCOMM").
 *
 * Contract: devcomm_before / devcomm_after wrap the real call as every recorded shape does
 * (call.h); nothing of the job's is changed: the arguments go through as given, the return
 * and errno come back as NCCL left them. After a create that returned ncclSuccess the
 * requirements are read, per the loaded NCCL's layout of struct ncclDevCommRequirements
 * (NCCL read them itself, so they are readable): 2.28.0-2.28.6 (lsaMultimem, lsaBarrierCount),
 * 2.28.7-2.28.x (no header), 2.29+ (size / magic / version header: only the fields its size
 * covers). Another version, or a failed create, records the call and its result without them.
 * The lists (resources, teams) are walked at most 1024 entries each. Off the hot path: a device
 * communicator is made a few times per job; the DEVCOMM record goes through ncs_emit. The
 * layouts are declared in include/ncclscope/nccl_abi.h. */
#include <stdbool.h>
#include <stddef.h>

#include "call.h"
#include "ncclscope/encode.h"

#define LIST_MAX 1024

static _Atomic int nccl_version = -2; /* -2: not asked yet, -1: unknown */

static int loaded_version(void) {
  int v = atomic_load_explicit(&nccl_version, memory_order_relaxed);
  if (v != -2) return v;
  ncs_fn_GetVersion_t gv = NCS_REAL(GetVersion);
  int got = -1;
  if (!gv || gv(&got) != ncclSuccess) got = -1;
  atomic_store_explicit(&nccl_version, got, memory_order_relaxed);
  return got;
}

static void read_lists(struct ncs_devcomm *d, const struct ncs_devres_v228 *res, const struct ncs_devteam_v228 *team) {
  for (int i = 0; res; res = res->next, i++) {
    if (i == LIST_MAX) { d->flags |= NCS_DEVCOMM_F_LIST_CUT; break; }
    d->resources++;
    d->resource_bytes += res->bufferSize;
  }
  for (int i = 0; team; team = team->next, i++) {
    if (i == LIST_MAX) { d->flags |= NCS_DEVCOMM_F_LIST_CUT; break; }
    d->teams++;
    d->multimem_teams += team->multimem;
  }
}

static void read_v22807(struct ncs_devcomm *d, const struct ncs_devreqs_v22807 *q, size_t have) {
#define COVERED(m) (offsetof(struct ncs_devreqs_v22807, m) + sizeof q->m <= have)
  if (COVERED(teamRequirementsList)) read_lists(d, q->resourceRequirementsList, q->teamRequirementsList);
  if (COVERED(lsaMultimem)) d->lsa_multimem = q->lsaMultimem;
  if (COVERED(barrierCount)) d->barrier_count = (uint32_t)q->barrierCount;
  if (COVERED(lsaBarrierCount)) d->lsa_barrier_count = (uint32_t)q->lsaBarrierCount;
  if (COVERED(railGinBarrierCount)) d->rail_gin_barrier_count = (uint32_t)q->railGinBarrierCount;
  if (COVERED(lsaLLA2ABlockCount)) d->lsa_lla2a_block_count = (uint32_t)q->lsaLLA2ABlockCount;
  if (COVERED(lsaLLA2ASlotCount)) d->lsa_lla2a_slot_count = (uint32_t)q->lsaLLA2ASlotCount;
  if (COVERED(ginForceEnable)) d->gin_force_enable = q->ginForceEnable;
  if (COVERED(ginContextCount)) d->gin_context_count = (uint32_t)q->ginContextCount;
  if (COVERED(ginSignalCount)) d->gin_signal_count = (uint32_t)q->ginSignalCount;
  if (COVERED(ginCounterCount)) d->gin_counter_count = (uint32_t)q->ginCounterCount;
#undef COVERED
}

/* The requirements of a create that succeeded, per the loaded NCCL's layout. */
static void read_reqs(struct ncs_devcomm *d, const struct ncclDevCommRequirements *reqs) {
  int v = loaded_version();
  if (!reqs || v < 22800) return;
  if (v < 22807) {
    const struct ncs_devreqs_v22803 *q = (const void *)reqs;
    read_lists(d, q->resourceRequirementsList, q->teamRequirementsList);
    d->lsa_multimem = q->lsaMultimem;
    d->lsa_barrier_count = (uint32_t)q->lsaBarrierCount;
  } else if (v < 22900) {
    read_v22807(d, (const void *)reqs, sizeof(struct ncs_devreqs_v22807));
  } else {
    const struct ncs_devreqs_v22900 *q = (const void *)reqs;
    size_t head = offsetof(struct ncs_devreqs_v22900, f);
    if (q->size <= head) return;
    read_v22807(d, &q->f, q->size - head);
  }
  d->flags |= NCS_DEVCOMM_F_REQS;
}

void devcomm_before(struct rec *r, unsigned op, const struct devcomm_args *a, void *const *ra_at) {
  REC_NO_FIELDS(r);
  rec_begin(r, op, a->comm, ra_at);
  rec_go(r);
}

void devcomm_after(struct rec *r, const struct devcomm_args *a, ncclResult_t rc) {
  rec_ret(r, rc);
  if (r->on) {
    struct ncs_devcomm d = {.comm = r->c.comm, .op = r->c.op, .thread = r->c.thread, .rc = (int32_t)rc,
                            .handle = (uint64_t)(uintptr_t)a->devcomm, .t_enter = r->c.t_enter,
                            .t_exit = r->c.t_exit};
    if (r->c.op == NCS_OP_DevCommCreate && rc == ncclSuccess) read_reqs(&d, a->reqs);
    uint8_t body[256]; /* 22 varints: at most 200 bytes */
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, body, sizeof body);
    ncs_enc_devcomm_body(&w, &d);
    ncs_emit(NCS_REC_DEVCOMM, w.buf, w.len);
  }
  rec_end(r);
}
