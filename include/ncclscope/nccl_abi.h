/* nccl_abi.h — the few NCCL types and prototypes ncclscope needs, declared here so the
 * project builds without CUDA or NCCL installed.
 *
 * Contract: every declaration matches NCCL's public nccl.h (checked against NCCL 2.28.9 by
 * tests/test_nccl_abi.c, which includes both this file's values and the real header).
 * Only what the shim, the doubles and the test jobs use is declared. If the real <nccl.h>
 * was already included, this header declares nothing that would clash. */
#ifndef NCCLSCOPE_NCCL_ABI_H
#define NCCLSCOPE_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifndef NCCL_H_  /* the real header's include guard */
typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct CUstream_st *cudaStream_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

typedef enum {
  ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
  ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4,
               ncclNumOps = 5, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0, ncclChar = 0, ncclUint8 = 1, ncclInt32 = 2, ncclInt = 2, ncclUint32 = 3,
  ncclInt64 = 4, ncclUint64 = 5, ncclFloat16 = 6, ncclHalf = 6, ncclFloat32 = 7,
  ncclFloat = 7, ncclFloat64 = 8, ncclDouble = 8, ncclBfloat16 = 9, ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11, ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* ncclConfig_t: NCCL versions the struct by its `size` and `version` fields; the shim only
 * reads `size`, `version` and `blocking`, and only when size covers them. */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_CONFIG_UNDEF_INT ((int)0x80000000)
#endif /* NCCL_H_ */

/* The device API's host calls (nccl_device/core.h, 2.28+) take these by pointer only. What
 * shim/devcomm.c reads of struct ncclDevCommRequirements, per NCCL version (the names of
 * nccl_device/core.h; tests/test_nccl_abi.c checks the 2.28.9 layout against the real one): */
struct ncclDevComm;
struct ncclDevCommRequirements;
/* the list entries of 2.28 (2.29+ append after ginCounterCount / outMultimemHandle) */
struct ncs_devres_v228 { const struct ncs_devres_v228 *next; size_t bufferSize, bufferAlign; void *outBufferHandle;
                         int ginSignalCount, ginCounterCount; };
struct ncs_devteam_v228 { const struct ncs_devteam_v228 *next; int nRanks, rank, stride; _Bool multimem;
                          void *outMultimemHandle; };
/* 2.28.0 to 2.28.6 */
struct ncs_devreqs_v22803 { const struct ncs_devres_v228 *resourceRequirementsList;
                            const struct ncs_devteam_v228 *teamRequirementsList; _Bool lsaMultimem; int lsaBarrierCount; };
/* 2.28.7 to 2.28.9 */
struct ncs_devreqs_v22807 {
  const struct ncs_devres_v228 *resourceRequirementsList;
  const struct ncs_devteam_v228 *teamRequirementsList;
  _Bool lsaMultimem;
  int barrierCount, lsaBarrierCount, railGinBarrierCount, lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  _Bool ginForceEnable;
  int ginContextCount, ginSignalCount, ginCounterCount;
};
/* 2.29 on: a size / magic / version header, then 2.28.7's fields (more follow) */
struct ncs_devreqs_v22900 { size_t size; unsigned int magic, version; struct ncs_devreqs_v22807 f; };

/* Prototype list: one line per entry point, as X(ret, name, params, args).
 * Used to declare the entry points, the pnccl* twins and the function-pointer types. */
#define NCCLSCOPE_PROTOTYPES(X) \
  X(ncclResult_t, GetVersion, (int *version), (version)) \
  X(ncclResult_t, GetUniqueId, (ncclUniqueId *uniqueId), (uniqueId)) \
  X(ncclResult_t, CommInitRank, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank), (comm, nranks, commId, rank)) \
  X(ncclResult_t, CommInitAll, (ncclComm_t *comm, int ndev, const int *devlist), (comm, ndev, devlist)) \
  X(ncclResult_t, CommInitRankConfig, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config), (comm, nranks, commId, rank, config)) \
  X(ncclResult_t, CommInitRankScalable, (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config), (newcomm, nranks, myrank, nId, commIds, config)) \
  X(ncclResult_t, CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config), (comm, color, key, newcomm, config)) \
  X(ncclResult_t, CommShrink, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags), (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags)) \
  X(ncclResult_t, CommFinalize, (ncclComm_t comm), (comm)) \
  X(ncclResult_t, CommDestroy, (ncclComm_t comm), (comm)) \
  X(ncclResult_t, CommAbort, (ncclComm_t comm), (comm)) \
  X(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags)) \
  X(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError), (comm, asyncError)) \
  X(ncclResult_t, CommCount, (const ncclComm_t comm, int *count), (comm, count)) \
  X(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int *device), (comm, device)) \
  X(ncclResult_t, CommUserRank, (const ncclComm_t comm, int *rank), (comm, rank)) \
  X(ncclResult_t, CommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle), (comm, buff, size, handle)) \
  X(ncclResult_t, CommDeregister, (const ncclComm_t comm, void *handle), (comm, handle)) \
  X(ncclResult_t, CommWindowRegister, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags), (comm, buff, size, win, winFlags)) \
  X(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win)) \
  X(ncclResult_t, MemAlloc, (void **ptr, size_t size), (ptr, size)) \
  X(ncclResult_t, MemFree, (void *ptr), (ptr)) \
  X(ncclResult_t, RedOpCreatePreMulSum, (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm), (op, scalar, datatype, residence, comm)) \
  X(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm)) \
  X(ncclResult_t, GroupStart, (void), ()) \
  X(ncclResult_t, GroupEnd, (void), ()) \
  X(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t *simInfo), (simInfo)) \
  X(ncclResult_t, AllReduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, comm, stream)) \
  X(ncclResult_t, Broadcast, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream)) \
  X(ncclResult_t, Bcast, (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (buff, count, datatype, root, comm, stream)) \
  X(ncclResult_t, Reduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, op, root, comm, stream)) \
  X(ncclResult_t, AllGather, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, sendcount, datatype, comm, stream)) \
  X(ncclResult_t, ReduceScatter, (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)) \
  X(ncclResult_t, AlltoAll, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, comm, stream)) \
  X(ncclResult_t, Gather, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream)) \
  X(ncclResult_t, Scatter, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), (sendbuff, recvbuff, count, datatype, root, comm, stream)) \
  X(ncclResult_t, Send, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (sendbuff, count, datatype, peer, comm, stream)) \
  X(ncclResult_t, Recv, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), (recvbuff, count, datatype, peer, comm, stream)) \
  X(const char *, GetErrorString, (ncclResult_t result), (result)) \
  X(const char *, GetLastError, (ncclComm_t comm), (comm)) \
  X(void, ResetDebugInit, (void), ()) \
  X(ncclResult_t, DevCommCreate, (ncclComm_t comm, const struct ncclDevCommRequirements *reqs, struct ncclDevComm *outDevComm), (comm, reqs, outDevComm)) \
  X(ncclResult_t, DevCommDestroy, (ncclComm_t comm, const struct ncclDevComm *devComm), (comm, devComm))

/* Size in bytes of one element of an ncclDataType_t; 0 for an unknown type. */
static inline size_t ncclscope_datatype_size(int datatype) {
  static const unsigned char sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (datatype >= 0 && datatype < (int)sizeof sizes) ? sizes[datatype] : 0;
}

#endif
