/* cuda_double.h — the subset of the CUDA runtime API (libcudart.so.13) that the CPU double
 * implements, with CUDA 13.0's types, values and prototypes, plus a few double-only extras.
 *
 * Contract: every cuda* declaration here has the same name, prototype and enum values as
 * /usr/local/cuda/include/cuda_runtime_api.h and driver_types.h, so code compiled against
 * this header runs against the real runtime and vice versa. Extras are named cudaDouble*
 * and exist only in the double. What is modelled is described in docs/DOUBLES.md. */
#ifndef NCCL_DOUBLE_CUDA_DOUBLE_H
#define NCCL_DOUBLE_CUDA_DOUBLE_H
#include <stddef.h>
#include <stdint.h>

#include "cuda_double_prop.h"

#ifndef __DRIVER_TYPES_H__  /* the real driver_types.h include guard */
typedef enum cudaError {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3, cudaErrorInvalidDeviceFunction = 98, cudaErrorNoDevice = 100, cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400, cudaErrorIllegalState = 401, cudaErrorNotReady = 600,
  cudaErrorStreamCaptureUnsupported = 900, cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureMerge = 902, cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureUnjoined = 904, cudaErrorStreamCaptureIsolation = 905,
  cudaErrorStreamCaptureImplicit = 906, cudaErrorCapturedEvent = 907,
  cudaErrorStreamCaptureWrongThread = 908
} cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef void (*cudaHostFn_t)(void *userData);
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
                      cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
                      cudaMemcpyDefault = 4 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1,
                               cudaStreamCaptureStatusInvalidated = 2 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1,
                             cudaStreamCaptureModeRelaxed = 2 };
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
typedef struct CUkern_st *cudaKernel_t;
typedef struct CUuuid_st { char bytes[16]; } cudaUUID_t;
#define CUDA_DOUBLE_PROP_F_(type, name) type name;
#define CUDA_DOUBLE_PROP_A_(type, name, n) type name[n];
struct cudaDeviceProp { CUDA_DOUBLE_PROP_FIELDS(CUDA_DOUBLE_PROP_F_, CUDA_DOUBLE_PROP_A_) };
#undef CUDA_DOUBLE_PROP_F_
#undef CUDA_DOUBLE_PROP_A_
/* the attributes the double answers with its device's values (others in range give 0) */
#define CUDA_DOUBLE_ATTR_(name, value) cudaDevAttr##name = value,
enum cudaDeviceAttr { CUDA_DOUBLE_ATTRS(CUDA_DOUBLE_ATTR_) };
#undef CUDA_DOUBLE_ATTR_
#endif
#ifndef __VECTOR_TYPES_H__  /* the real vector_types.h include guard */
typedef struct uint3 { unsigned int x, y, z; } uint3;
typedef struct dim3 { unsigned int x, y, z; } dim3;
#endif

#ifdef __cplusplus
extern "C" {
#endif
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamCreate(cudaStream_t *pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
cudaError_t cudaDriverGetVersion(int *driverVersion);
/* devices, host memory (cuda_device.c) */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
cudaError_t cudaDeviceReset(void);
/* kernels (cuda_kernels.c): what nvcc's generated host code calls to register and launch */
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream);
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);

/* ---- Double-only extras (not in the real runtime) ---- */

/* Runs fn(arg) on the stream's worker, in order with the stream's other work; when the item
 * is retired (after it ran, or when a graph holding it is destroyed) release(arg) is called
 * if release is non-NULL. Under capture the item is recorded into the graph and runs at each
 * replay. Returns cudaSuccess, or the error the real runtime would give for a bad stream. */
cudaError_t cudaDoubleEnqueue(cudaStream_t stream, void (*fn)(void *arg), void *arg,
                              void (*release)(void *arg));
/* Models a compute kernel of `ns` nanoseconds of device time: it starts when its stream and its
 * launch allow and ends `ns` later on the device clock (docs/DOUBLES.md; nothing sleeps).
 * Captured like any kernel. */
cudaError_t cudaDoubleCompute(cudaStream_t stream, uint64_t ns);
/* Models a named compute kernel of `ns` nanoseconds (a cudaLaunchKernel stand-in: the double
 * cannot run device code). `name` must stay valid for the process (a string literal): it is
 * what kernel activity reports. cudaDoubleCompute is this with "cudaDoubleCompute_kernel". */
cudaError_t cudaDoubleLaunchKernel(cudaStream_t stream, const char *name, uint64_t ns);
/* cudaDoubleEnqueue for work that is a kernel on a real GPU (the NCCL double's collectives):
 * reported to the activity hook under `name` (static storage). */
cudaError_t cudaDoubleEnqueueKernel(cudaStream_t stream, const char *name, void (*fn)(void *arg),
                                    void *arg, void (*release)(void *arg));
/* Activity of the double's "GPU": one report per kernel, async copy and async set, made on the
 * stream's worker right after the item ran, with its device start and end (CLOCK_MONOTONIC
 * domain; the end may still lie ahead of the wall clock when reported). The CUPTI
 * double (tests/doubles/cupti/) sets the hook; NULL turns reports off. One hook per process. */
enum cudaDoubleActivityKind { cudaDoubleActivityNone = 0, cudaDoubleActivityMemcpy = 1,
                              cudaDoubleActivityMemset = 2, cudaDoubleActivityKernel = 3 };
struct cudaDoubleActivity {
  enum cudaDoubleActivityKind kind;
  const char *name;          /* kernels */
  uint64_t start_ns, end_ns; /* device time, CLOCK_MONOTONIC domain */
  int device;
  uint32_t stream_id, correlation_id;
  uint64_t bytes;            /* copies and sets */
  int copy_kind;             /* enum cudaMemcpyKind of a copy */
};
void cudaDoubleSetActivityHook(void (*hook)(const struct cudaDoubleActivity *));
/* A second observer of the same activity, for a test job's own truth: called on the worker with
 * the very start and end the activity hook gets (so a job can compare what ran against what a
 * tool made of it, whatever the load). Independent of the activity hook; NULL turns it off. */
void cudaDoubleSetTruthHook(void (*hook)(const struct cudaDoubleActivity *));
/* CLOCK_MONOTONIC nanoseconds: host time, and the domain of the device clock. */
uint64_t cudaDoubleNowNs(void);
/* Sleeps the calling thread until CLOCK_MONOTONIC reaches deadline_ns. */
void cudaDoubleSleepUntil(uint64_t deadline_ns);
/* 1 while the calling thread is a stream worker (work runs "on the GPU"), else 0. */
int cudaDoubleOnWorker(void);
/* On a stream worker, inside the item it runs (a kernel's fn or a host function): the device
 * time, in the cudaDoubleNowNs domain, at which the item started; 0 elsewhere. */
uint64_t cudaDoubleItemStartNs(void);
/* On a stream worker, inside a kernel item: declares the item's device end (no earlier than its
 * start); without it a kernel item lasts 0. The NCCL double's collectives use it to say how
 * long their modelled kernel lasts. Inside a host function (cudaLaunchHostFunc) it replaces
 * the default end, the wall time at which the function returns (tests/jobs/job_util.h's start
 * line). */
void cudaDoubleItemEndAt(uint64_t end_ns);
/* On a stream worker, inside an item: its device end as declared so far (its start if none). */
uint64_t cudaDoubleItemEndNs(void);
#ifdef __cplusplus
}
#endif
#endif
