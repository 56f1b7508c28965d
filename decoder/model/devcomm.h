/* devcomm.h — the device communicators of one traced process (DEVCOMM records, format 5.3:
 * ncclDevCommCreate / ncclDevCommDestroy, NCCL 2.28+): each create with the requirements the
 * job passed and its result, paired with its destroy, and whether a GPU time lies inside one's
 * life (docs/METRICS.md, "Device-API kernels").
 *
 * Rule: a create that returned ncclSuccess opens a life at its return (t_exit); the first later
 * destroy of the same communicator passing the same ncclDevComm_t pointer (else of the same
 * communicator) closes it at its return; a life no destroy closes runs to the end of the trace.
 * A failed create is listed with its result and opens nothing. Contract: feed DEVCOMM bodies in
 * file order (ncs_devcomms_add); a damaged body is counted (bad), never fatal. At most
 * NCS_DEVCOMMS_MAX are kept; later creates are counted (`more`) and open no life, so a kernel
 * inside only such a life is not counted as possibly communicating. Plain data: copied with
 * the file's GPU-time figures (model/kact.h). */
#ifndef NCS_DEVCOMM_H
#define NCS_DEVCOMM_H
#include <stddef.h>
#include <stdint.h>
#include "ncclscope/records.h"

#define NCS_DEVCOMMS_MAX 16
struct ncs_devcomm_life {
  struct ncs_devcomm create;  /* the create's record: communicator, pointer, rc, times, requirements */
  int destroyed;              /* a destroy closed it */
  int32_t destroy_rc;
  uint64_t destroy_enter, destroy_exit;
};
struct ncs_devcomms {
  int n;                      /* creates kept, failed ones included */
  uint64_t more, bad, unmatched_destroys;
  struct ncs_devcomm_life d[NCS_DEVCOMMS_MAX];
};

/* Takes one DEVCOMM body. Returns 0, or -1 when it does not decode (counted in bad). */
int ncs_devcomms_add(struct ncs_devcomms *s, const uint8_t *body, size_t len);
/* 1 when t (the trace's CLOCK_MONOTONIC ns) lies in the life of a device communicator that
 * was created: [create's return, destroy's return), open-ended when never destroyed. */
int ncs_devcomms_cover(const struct ncs_devcomms *s, uint64_t t);
/* Device communicators created successfully. */
int ncs_devcomms_created(const struct ncs_devcomms *s);
#endif
