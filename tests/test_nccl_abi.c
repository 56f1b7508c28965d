/* test_nccl_abi.c — include/ncclscope/nccl_abi.h against NCCL's real nccl.h (2.28.9 in
 * /usr/local/cuda): enum values, struct sizes and field offsets, and every prototype of
 * NCCLSCOPE_PROTOTYPES (both ncclX and pncclX, via __builtin_types_compatible_p). The checks
 * are _Static_asserts: any drift fails to compile, which the suite reports as a failure; the
 * program then prints one PASS line per group. SKIP when nccl.h is absent.
 *
 * Both headers declare the same names, so ours is included first with each name renamed to
 * ours_<name>; the renames are then dropped and the real header is included. The prototype
 * list (a macro) is expanded only afterwards, so its parameter types are NCCL's real ones. */
#include <stddef.h>
#include <stdio.h>

#include "check.h"

#if defined(__has_include)
#if __has_include(<nccl.h>) && __has_include(<cuda_runtime.h>)
#define HAVE_REAL_NCCL 1
#endif
#endif

#ifdef HAVE_REAL_NCCL
/* ---- ours, renamed ---- */
#define ncclComm_t ours_ncclComm_t
#define ncclComm ours_ncclComm
#define ncclWindow_t ours_ncclWindow_t
#define ncclWindow_vidmem ours_ncclWindow_vidmem
#define cudaStream_t ours_cudaStream_t
#define CUstream_st ours_CUstream_st
#define ncclUniqueId ours_ncclUniqueId
#define ncclResult_t ours_ncclResult_t
#define ncclRedOp_t ours_ncclRedOp_t
#define ncclDataType_t ours_ncclDataType_t
#define ncclScalarResidence_t ours_ncclScalarResidence_t
#define ncclConfig_t ours_ncclConfig_t
#define ncclConfig_v22800 ours_ncclConfig_v22800
#define ncclSimInfo_t ours_ncclSimInfo_t
#define ncclSimInfo_v22200 ours_ncclSimInfo_v22200
#define ncclSuccess ours_ncclSuccess
#define ncclUnhandledCudaError ours_ncclUnhandledCudaError
#define ncclSystemError ours_ncclSystemError
#define ncclInternalError ours_ncclInternalError
#define ncclInvalidArgument ours_ncclInvalidArgument
#define ncclInvalidUsage ours_ncclInvalidUsage
#define ncclRemoteError ours_ncclRemoteError
#define ncclInProgress ours_ncclInProgress
#define ncclNumResults ours_ncclNumResults
#define ncclSum ours_ncclSum
#define ncclProd ours_ncclProd
#define ncclMax ours_ncclMax
#define ncclMin ours_ncclMin
#define ncclAvg ours_ncclAvg
#define ncclNumOps ours_ncclNumOps
#define ncclMaxRedOp ours_ncclMaxRedOp
#define ncclInt8 ours_ncclInt8
#define ncclChar ours_ncclChar
#define ncclUint8 ours_ncclUint8
#define ncclInt32 ours_ncclInt32
#define ncclInt ours_ncclInt
#define ncclUint32 ours_ncclUint32
#define ncclInt64 ours_ncclInt64
#define ncclUint64 ours_ncclUint64
#define ncclFloat16 ours_ncclFloat16
#define ncclHalf ours_ncclHalf
#define ncclFloat32 ours_ncclFloat32
#define ncclFloat ours_ncclFloat
#define ncclFloat64 ours_ncclFloat64
#define ncclDouble ours_ncclDouble
#define ncclBfloat16 ours_ncclBfloat16
#define ncclFloat8e4m3 ours_ncclFloat8e4m3
#define ncclFloat8e5m2 ours_ncclFloat8e5m2
#define ncclNumTypes ours_ncclNumTypes
#define ncclScalarDevice ours_ncclScalarDevice
#define ncclScalarHostImmediate ours_ncclScalarHostImmediate
#include "ncclscope/nccl_abi.h"
enum { ours_unique_id_bytes = NCCL_UNIQUE_ID_BYTES, ours_config_undef_int = NCCL_CONFIG_UNDEF_INT };
#undef ncclComm_t
#undef ncclComm
#undef ncclWindow_t
#undef ncclWindow_vidmem
#undef cudaStream_t
#undef CUstream_st
#undef ncclUniqueId
#undef ncclResult_t
#undef ncclRedOp_t
#undef ncclDataType_t
#undef ncclScalarResidence_t
#undef ncclConfig_t
#undef ncclConfig_v22800
#undef ncclSimInfo_t
#undef ncclSimInfo_v22200
#undef ncclSuccess
#undef ncclUnhandledCudaError
#undef ncclSystemError
#undef ncclInternalError
#undef ncclInvalidArgument
#undef ncclInvalidUsage
#undef ncclRemoteError
#undef ncclInProgress
#undef ncclNumResults
#undef ncclSum
#undef ncclProd
#undef ncclMax
#undef ncclMin
#undef ncclAvg
#undef ncclNumOps
#undef ncclMaxRedOp
#undef ncclInt8
#undef ncclChar
#undef ncclUint8
#undef ncclInt32
#undef ncclInt
#undef ncclUint32
#undef ncclInt64
#undef ncclUint64
#undef ncclFloat16
#undef ncclHalf
#undef ncclFloat32
#undef ncclFloat
#undef ncclFloat64
#undef ncclDouble
#undef ncclBfloat16
#undef ncclFloat8e4m3
#undef ncclFloat8e5m2
#undef ncclNumTypes
#undef ncclScalarDevice
#undef ncclScalarHostImmediate
#undef NCCL_UNIQUE_ID_BYTES
#undef NCCL_CONFIG_UNDEF_INT

/* ---- the real header ---- */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* ncclResetDebugInit */
#include <nccl.h>
/* the device API (nccl_device/core.h, C-compatible but for inline functions it only declares):
 * the prototypes, and the 2.28.9 layout shim/devcomm.c reads. pnccl* are exported by the real
 * library (nm -D) but declared by no header: typed like their ncclX here. */
#include <stdbool.h>
#define inline /* its host-device inline functions are declared, never defined, in C */
#include <nccl_device/core.h>
#undef inline
extern __typeof__(ncclDevCommCreate) pncclDevCommCreate;
extern __typeof__(ncclDevCommDestroy) pncclDevCommDestroy;
#define SAME_DEV(ours, real, f) \
  _Static_assert(offsetof(struct ours, f) == offsetof(struct real, f) && \
                 sizeof(((struct ours *)0)->f) == sizeof(((struct real *)0)->f), #real "." #f);
#define DEVREQ_FIELDS(X) X(resourceRequirementsList) X(teamRequirementsList) X(lsaMultimem) X(barrierCount) \
  X(lsaBarrierCount) X(railGinBarrierCount) X(lsaLLA2ABlockCount) X(lsaLLA2ASlotCount) X(ginForceEnable) \
  X(ginContextCount) X(ginSignalCount) X(ginCounterCount)
#define SAME_DEVREQ(f) SAME_DEV(ncs_devreqs_v22807, ncclDevCommRequirements, f)
DEVREQ_FIELDS(SAME_DEVREQ)
_Static_assert(sizeof(struct ncs_devreqs_v22807) == sizeof(struct ncclDevCommRequirements), "ncclDevCommRequirements size");

#define SAME_VALUE(name) \
  _Static_assert((long long)ours_##name == (long long)name, #name " differs from nccl.h");
SAME_VALUE(ncclSuccess)
SAME_VALUE(ncclUnhandledCudaError)
SAME_VALUE(ncclSystemError)
SAME_VALUE(ncclInternalError)
SAME_VALUE(ncclInvalidArgument)
SAME_VALUE(ncclInvalidUsage)
SAME_VALUE(ncclRemoteError)
SAME_VALUE(ncclInProgress)
SAME_VALUE(ncclNumResults)
SAME_VALUE(ncclSum)
SAME_VALUE(ncclProd)
SAME_VALUE(ncclMax)
SAME_VALUE(ncclMin)
SAME_VALUE(ncclAvg)
SAME_VALUE(ncclNumOps)
SAME_VALUE(ncclMaxRedOp)
SAME_VALUE(ncclInt8)
SAME_VALUE(ncclChar)
SAME_VALUE(ncclUint8)
SAME_VALUE(ncclInt32)
SAME_VALUE(ncclInt)
SAME_VALUE(ncclUint32)
SAME_VALUE(ncclInt64)
SAME_VALUE(ncclUint64)
SAME_VALUE(ncclFloat16)
SAME_VALUE(ncclHalf)
SAME_VALUE(ncclFloat32)
SAME_VALUE(ncclFloat)
SAME_VALUE(ncclFloat64)
SAME_VALUE(ncclDouble)
SAME_VALUE(ncclBfloat16)
SAME_VALUE(ncclFloat8e4m3)
SAME_VALUE(ncclFloat8e5m2)
SAME_VALUE(ncclNumTypes)
SAME_VALUE(ncclScalarDevice)
SAME_VALUE(ncclScalarHostImmediate)
_Static_assert(ours_unique_id_bytes == NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");
_Static_assert(ours_config_undef_int == NCCL_CONFIG_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");

#define SAME_SIZE(t) _Static_assert(sizeof(ours_##t) == sizeof(t), "sizeof " #t);
SAME_SIZE(ncclComm_t)
SAME_SIZE(ncclWindow_t)
SAME_SIZE(cudaStream_t)
SAME_SIZE(ncclUniqueId)
SAME_SIZE(ncclResult_t)
SAME_SIZE(ncclRedOp_t)
SAME_SIZE(ncclDataType_t)
SAME_SIZE(ncclScalarResidence_t)
SAME_SIZE(ncclConfig_t)
SAME_SIZE(ncclSimInfo_t)

#define SAME_FIELD(t, f) \
  _Static_assert(offsetof(ours_##t, f) == offsetof(t, f) && \
                 sizeof(((ours_##t *)0)->f) == sizeof(((t *)0)->f), #t "." #f);
SAME_FIELD(ncclConfig_t, size)
SAME_FIELD(ncclConfig_t, magic)
SAME_FIELD(ncclConfig_t, version)
SAME_FIELD(ncclConfig_t, blocking)
SAME_FIELD(ncclConfig_t, cgaClusterSize)
SAME_FIELD(ncclConfig_t, minCTAs)
SAME_FIELD(ncclConfig_t, maxCTAs)
SAME_FIELD(ncclConfig_t, netName)
SAME_FIELD(ncclConfig_t, splitShare)
SAME_FIELD(ncclConfig_t, trafficClass)
SAME_FIELD(ncclConfig_t, commName)
SAME_FIELD(ncclConfig_t, collnetEnable)
SAME_FIELD(ncclConfig_t, CTAPolicy)
SAME_FIELD(ncclConfig_t, shrinkShare)
SAME_FIELD(ncclConfig_t, nvlsCTAs)
SAME_FIELD(ncclConfig_t, nChannelsPerNetPeer)
SAME_FIELD(ncclConfig_t, nvlinkCentricSched)
SAME_FIELD(ncclSimInfo_t, size)
SAME_FIELD(ncclSimInfo_t, magic)
SAME_FIELD(ncclSimInfo_t, version)
SAME_FIELD(ncclSimInfo_t, estimatedTime)
SAME_FIELD(ncclUniqueId, internal)

/* every entry point: our parameter list, read with the real types, is the real prototype */
#define SAME_PROTO(ret, name, params, args) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&nccl##name), ret(*) params), "nccl" #name); \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&pnccl##name), ret(*) params), "pnccl" #name);
NCCLSCOPE_PROTOTYPES(SAME_PROTO)

static int count_protos(void) {
  int n = 0;
#define COUNT_(ret, name, params, args) n++;
  NCCLSCOPE_PROTOTYPES(COUNT_)
  return n;
}

SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, next)
SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, bufferSize)
SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, bufferAlign)
SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, outBufferHandle)
SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, ginSignalCount)
SAME_DEV(ncs_devres_v228, ncclDevResourceRequirements, ginCounterCount)
SAME_DEV(ncs_devteam_v228, ncclTeamRequirements, next)
SAME_DEV(ncs_devteam_v228, ncclTeamRequirements, multimem)
SAME_DEV(ncs_devteam_v228, ncclTeamRequirements, outMultimemHandle)
_Static_assert(offsetof(struct ncs_devteam_v228, nRanks) == offsetof(struct ncclTeamRequirements, team), "team");

int main(void) {
  CHECK(1, "nccl_abi: %d enum values equal nccl.h's", 36);
  CHECK(1, "nccl_abi: ncclDevCommRequirements (12 fields), ncclDevResourceRequirements, ncclTeamRequirements layouts equal nccl_device/core.h's (2.28.9)");
  CHECK(1, "nccl_abi: sizes of 10 types equal nccl.h's");
  CHECK(1, "nccl_abi: ncclConfig_t (%d fields), ncclSimInfo_t, ncclUniqueId layouts equal nccl.h's", 17);
  CHECK(count_protos() == 43, "nccl_abi: all %d prototypes (ncclX and pncclX) match nccl.h", count_protos());
  CHECK(1, "nccl_abi: NCCL_UNIQUE_ID_BYTES and NCCL_CONFIG_UNDEF_INT equal nccl.h's");
  return check_done();
}
#else
int main(void) {
  printf("SKIP: nccl_abi: no nccl.h / cuda_runtime.h on the include path\n");
  return 0;
}
#endif
