/* knames.h — the kernel names of one trace (KERNEL_NAME records, docs/FORMAT.md) and what an NCCL
 * kernel's name says: the operation it runs ("ncclDevKernel_AllReduce_Sum_f32_RING_LL" ->
 * "AllReduce"), and which kernel operation an NCCL call launches.
 *
 * Contract: feed a file's raw records in file order (others are ignored); a KERNEL record's
 * name id is then looked up. Ids are the shim's small sequential numbers: kept in an array
 * indexed by id, ids above NCS_KNAMES_MAX are not kept (looked up as unknown). Memory: the
 * names seen (at most 256 bytes each). Not thread-safe; one table per file. */
#ifndef NCS_KNAMES_H
#define NCS_KNAMES_H
#include <stddef.h>
#include <stdint.h>
#include "io/trace.h"

#define NCS_KNAMES_MAX 65536
struct ncs_knames { char **name; uint32_t n; }; /* name[id], NULL when unknown */

/* Takes a KERNEL_NAME record (returns 1), ignores any other (returns 0). */
int ncs_knames_add_raw(struct ncs_knames *t, const struct ncs_raw *r);
/* The name of id, or NULL. */
const char *ncs_knames_get(const struct ncs_knames *t, uint32_t id);
void ncs_knames_free(struct ncs_knames *t);

/* The operation part of an NCCL kernel name (the word after the first '_' of its identifier,
 * mangled or not: "AllReduce", "SendRecv"; "ncclSymkDevKernel_AllGather_ST" -> "AllGather"), with
 * its length in *len; NULL when there is none. Which names are NCCL's: ncs_is_nccl_kernel
 * (ncclscope/cupti_abi.h), which the decoder applies to every kernel name, whatever class the
 * shim that wrote the trace gave it (a shim before 2026-12 filed 2.27/2.28's symmetric kernels
 * as compute). */
const char *ncs_kernel_op(const char *name, size_t *len);
/* The kernel operation an NCCL call (ops.h) launches (NCCL 2.19+ kernel names): "AllReduce",
 * "Broadcast", "Reduce", "AllGather", "ReduceScatter", "SendRecv"; NULL for calls that launch
 * no kernel of their own. */
const char *ncs_kernel_op_of_call(unsigned op);
#endif
