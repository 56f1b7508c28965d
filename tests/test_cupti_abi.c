/* test_cupti_abi.c — include/ncclscope/cupti_abi.h against CUPTI's real headers (CUDA 13.0 in
 * /usr/local/cuda): result and kind values, record field offsets and sizes, the callback types
 * and every prototype of NCCLSCOPE_CUPTI_PROTOTYPES. The checks are _Static_asserts: any drift
 * fails to compile, which the suite reports as a failure; the program then prints one PASS line
 * per group. SKIP when cupti.h is absent.
 *
 * Our names differ from CUPTI's, so both headers are included as they are; the prototype list
 * is then expanded with each of our type names mapped to CUPTI's, which checks the shape of
 * every entry point, and the mapped types are checked for size (and values) separately. */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "ncclscope/cupti_abi.h"

#if defined(__has_include)
#if __has_include(<cupti.h>)
#define HAVE_REAL_CUPTI 1
#endif
#endif

#ifdef HAVE_REAL_CUPTI
#include <cupti.h>

#define SAME_VALUE(ours, real) _Static_assert((long long)(ours) == (long long)(real), #ours " differs from " #real);
SAME_VALUE(NCS_CUPTI_SUCCESS, CUPTI_SUCCESS)
SAME_VALUE(NCS_CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER)
SAME_VALUE(NCS_CUPTI_ERROR_INVALID_OPERATION, CUPTI_ERROR_INVALID_OPERATION)
SAME_VALUE(NCS_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED)
SAME_VALUE(NCS_CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED)
SAME_VALUE(NCS_CUPTI_ERROR_INVALID_KIND, CUPTI_ERROR_INVALID_KIND)
SAME_VALUE(NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
SAME_VALUE(NCS_CUPTI_ERROR_UNKNOWN, CUPTI_ERROR_UNKNOWN)
SAME_VALUE(NCS_CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY)
SAME_VALUE(NCS_CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET)
SAME_VALUE(NCS_CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL)
SAME_VALUE(NCS_CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
SAME_VALUE(NCS_CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)

#define SAME_SIZE(ours, real) _Static_assert(sizeof(ours) == sizeof(real), #ours " size differs from " #real);
SAME_SIZE(ncs_cupti_result, CUptiResult)
SAME_SIZE(ncs_cupti_kind, CUpti_ActivityKind)
SAME_SIZE(ncs_cupti_domain, CUpti_CallbackDomain)
SAME_SIZE(ncs_cupti_activity_t, CUpti_Activity)
SAME_SIZE(ncs_cupti_context, CUcontext)
SAME_SIZE(ncs_cupti_subscriber, CUpti_SubscriberHandle)
_Static_assert(NCS_CUPTI_KERNEL10_SIZE == sizeof(CUpti_ActivityKernel10), "Kernel10 size");
_Static_assert(NCS_CUPTI_MEMCPY6_SIZE == sizeof(CUpti_ActivityMemcpy6), "Memcpy6 size");
_Static_assert(NCS_CUPTI_MEMSET4_SIZE == sizeof(CUpti_ActivityMemset4), "Memset4 size");

/* field offsets of our prefixes, in the newest record and in the oldest version we claim */
#define SAME_FIELD(ours, of, real, rf) \
  _Static_assert(offsetof(struct ours, of) == offsetof(real, rf), #real "." #rf " offset"); \
  _Static_assert(sizeof(((struct ours *)0)->of) == sizeof(((real *)0)->rf), #real "." #rf " size");
#define KERNEL_FIELDS(real) \
  SAME_FIELD(ncs_cupti_kernel, kind, real, kind) SAME_FIELD(ncs_cupti_kernel, start, real, start) \
  SAME_FIELD(ncs_cupti_kernel, end, real, end) SAME_FIELD(ncs_cupti_kernel, completed, real, completed) \
  SAME_FIELD(ncs_cupti_kernel, device_id, real, deviceId) SAME_FIELD(ncs_cupti_kernel, context_id, real, contextId) \
  SAME_FIELD(ncs_cupti_kernel, stream_id, real, streamId) SAME_FIELD(ncs_cupti_kernel, grid_x, real, gridX) \
  SAME_FIELD(ncs_cupti_kernel, block_z, real, blockZ) \
  SAME_FIELD(ncs_cupti_kernel, correlation_id, real, correlationId) SAME_FIELD(ncs_cupti_kernel, grid_id, real, gridId) \
  SAME_FIELD(ncs_cupti_kernel, name, real, name)
KERNEL_FIELDS(CUpti_ActivityKernel10)
KERNEL_FIELDS(CUpti_ActivityKernel9)
KERNEL_FIELDS(CUpti_ActivityKernel4)
#define MEMCPY_FIELDS(real) \
  SAME_FIELD(ncs_cupti_memcpy, kind, real, kind) SAME_FIELD(ncs_cupti_memcpy, copy_kind, real, copyKind) \
  SAME_FIELD(ncs_cupti_memcpy, bytes, real, bytes) SAME_FIELD(ncs_cupti_memcpy, start, real, start) \
  SAME_FIELD(ncs_cupti_memcpy, end, real, end) SAME_FIELD(ncs_cupti_memcpy, device_id, real, deviceId) \
  SAME_FIELD(ncs_cupti_memcpy, stream_id, real, streamId) SAME_FIELD(ncs_cupti_memcpy, correlation_id, real, correlationId)
MEMCPY_FIELDS(CUpti_ActivityMemcpy6)
MEMCPY_FIELDS(CUpti_ActivityMemcpy)
#define MEMSET_FIELDS(real) \
  SAME_FIELD(ncs_cupti_memset, kind, real, kind) SAME_FIELD(ncs_cupti_memset, value, real, value) \
  SAME_FIELD(ncs_cupti_memset, bytes, real, bytes) SAME_FIELD(ncs_cupti_memset, start, real, start) \
  SAME_FIELD(ncs_cupti_memset, end, real, end) SAME_FIELD(ncs_cupti_memset, device_id, real, deviceId) \
  SAME_FIELD(ncs_cupti_memset, stream_id, real, streamId) SAME_FIELD(ncs_cupti_memset, correlation_id, real, correlationId)
MEMSET_FIELDS(CUpti_ActivityMemset4)
MEMSET_FIELDS(CUpti_ActivityMemset)

/* the callback types, with our parameter types mapped to CUPTI's */
#define ncs_cupti_result CUptiResult
#define ncs_cupti_kind CUpti_ActivityKind
#define ncs_cupti_domain CUpti_CallbackDomain
#define ncs_cupti_activity_t CUpti_Activity
#define ncs_cupti_context CUcontext
#define ncs_cupti_subscriber CUpti_SubscriberHandle
#define ncs_cupti_callback_fn CUpti_CallbackFunc
#define ncs_cupti_buffer_requested_fn CUpti_BuffersCallbackRequestFunc
#define ncs_cupti_buffer_completed_fn CUpti_BuffersCallbackCompleteFunc
_Static_assert(__builtin_types_compatible_p(void (*)(void *, ncs_cupti_domain, uint32_t, const void *),
                                            CUpti_CallbackFunc), "callback");
_Static_assert(__builtin_types_compatible_p(void (*)(uint8_t **, size_t *, size_t *),
                                            CUpti_BuffersCallbackRequestFunc), "buffer requested");
_Static_assert(__builtin_types_compatible_p(void (*)(ncs_cupti_context, uint32_t, uint8_t *, size_t, size_t),
                                            CUpti_BuffersCallbackCompleteFunc), "buffer completed");
#define SAME_PROTO(ret, name, params) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), #name " prototype");
NCCLSCOPE_CUPTI_PROTOTYPES(SAME_PROTO)
#endif

int main(void) {
#ifndef HAVE_REAL_CUPTI
  printf("SKIP: cupti_abi: cupti.h not found (CUDA_HOME/include)\n");
  return 0;
#else
  CHECK(1, "cupti_abi: result, kind and flag values equal cupti_result.h / cupti_activity.h");
  CHECK(1, "cupti_abi: kernel (Kernel4, 9, 10), memcpy and memset prefixes at CUPTI's offsets");
  CHECK(1, "cupti_abi: record sizes the double writes equal sizeof(CUpti_ActivityKernel10/Memcpy6/Memset4)");
  CHECK(1, "cupti_abi: callback types and every NCCLSCOPE_CUPTI_PROTOTYPES entry match CUPTI's prototypes");
  CHECK(ncs_is_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL") && ncs_is_nccl_kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t")
        && !ncs_is_nccl_kernel("ampere_sgemm_128x64_tn") && !ncs_is_nccl_kernel("nccl") && !ncs_is_nccl_kernel(NULL),
        "cupti_abi: ncs_is_nccl_kernel tells NCCL's kernels (ncclKernel_*, ncclDevKernel_*) from others");
  CHECK(ncs_is_nccl_kernel("ncclSymDevKernel_AllReduce_AGxLL_R_sum_f32") &&
        ncs_is_nccl_kernel("ncclSymkDevKernel_AllGather_ST") &&
        ncs_is_nccl_kernel("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL19ncclDevKernelArgs4K") &&
        ncs_is_nccl_kernel("_ZN12_GLOBAL__N_113oneRankReduceI7FuncSumIfEEEvPvS3_mmb") &&
        ncs_is_nccl_kernel("void (anonymous namespace)::oneRankReduce<FuncSum<float>>(void*, void*, unsigned long, unsigned long, bool)") &&
        !ncs_is_nccl_kernel("ncclUserThing_kernel") && !ncs_is_nccl_kernel("_Z6kernelPf") && !ncs_is_nccl_kernel("_Z"),
        "cupti_abi: every kernel NCCL launches is NCCL's: symmetric ncclSymDevKernel_* (2.27), ncclSymkDevKernel_* (2.28), mangled names, oneRankReduce");
  return check_done();
#endif
}
