/* cupti_abi.h — the subset of CUPTI's activity API (libcupti.so.13, CUDA 13.0) that ncclscope
 * uses, declared without CUPTI's headers so the shim builds without CUDA.
 *
 * Contract: every value, function type and field offset here equals the real one in
 * cupti_activity.h / cupti_callbacks.h / cupti_result.h; tests/test_cupti_abi.c proves it
 * against the headers in /usr/local/cuda with _Static_assert. The record structs are prefixes:
 * the fields up to `name` (kernel) or `correlationId` (memcpy, memset) have kept their offsets
 * since CUpti_ActivityKernel4 / Memcpy / Memset, so reading a record through them works for
 * every record version a CUPTI of CUDA 11 to 13 produces. Walk a buffer with
 * cuptiActivityGetNextRecord (the library knows the real sizes), never with sizeof. The shim
 * (shim/kernels.c) and the CUPTI double (tests/doubles/cupti/) share these declarations. */
#ifndef NCCLSCOPE_CUPTI_ABI_H
#define NCCLSCOPE_CUPTI_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef int ncs_cupti_result;       /* CUptiResult */
typedef uint32_t ncs_cupti_kind;     /* CUpti_ActivityKind */
#define NCS_CUPTI_SUCCESS 0
#define NCS_CUPTI_ERROR_INVALID_PARAMETER 1
#define NCS_CUPTI_ERROR_INVALID_OPERATION 7
#define NCS_CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define NCS_CUPTI_ERROR_NOT_INITIALIZED 15
#define NCS_CUPTI_ERROR_INVALID_KIND 21
#define NCS_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED 39
#define NCS_CUPTI_ERROR_UNKNOWN 999

/* CUpti_ActivityKind values */
#define NCS_CUPTI_KIND_MEMCPY 1
#define NCS_CUPTI_KIND_MEMSET 2
#define NCS_CUPTI_KIND_KERNEL 3
#define NCS_CUPTI_KIND_CONCURRENT_KERNEL 10
/* CUpti_ActivityFlag: cuptiActivityFlushAll also hands over buffers with incomplete records */
#define NCS_CUPTI_FLUSH_FORCED 1u

/* CUpti_Activity: every record starts with its kind; records are 8-byte aligned */
typedef struct __attribute__((aligned(8))) ncs_cupti_activity { uint32_t kind; } ncs_cupti_activity_t;

/* CUpti_ActivityKernel4..10 up to `name` */
struct ncs_cupti_kernel {
  uint32_t kind;
  uint8_t cache_config, shared_memory_config;
  uint16_t registers_per_thread;
  uint32_t partitioned_requested, partitioned_executed;
  uint64_t start, end, completed;
  uint32_t device_id, context_id, stream_id;
  int32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
  int32_t static_shared, dynamic_shared;
  uint32_t local_per_thread, local_total;
  uint32_t correlation_id;
  int64_t grid_id;
  const char *name;
};
/* sizeof(CUpti_ActivityKernel10): the record the double writes for a kernel */
#define NCS_CUPTI_KERNEL10_SIZE 216

/* CUpti_ActivityMemcpy..6 up to correlationId */
struct ncs_cupti_memcpy {
  uint32_t kind;
  uint8_t copy_kind, src_kind, dst_kind, flags;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id;
};
#define NCS_CUPTI_MEMCPY6_SIZE 96

/* CUpti_ActivityMemset..4 up to correlationId */
struct ncs_cupti_memset {
  uint32_t kind, value;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id;
};
#define NCS_CUPTI_MEMSET4_SIZE 88

typedef struct CUctx_st *ncs_cupti_context;
typedef struct CUpti_Subscriber_st *ncs_cupti_subscriber;
typedef int ncs_cupti_domain;        /* CUpti_CallbackDomain */
typedef void (*ncs_cupti_callback_fn)(void *userdata, ncs_cupti_domain domain, uint32_t cbid, const void *cbdata);
typedef void (*ncs_cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*ncs_cupti_buffer_completed_fn)(ncs_cupti_context ctx, uint32_t stream_id, uint8_t *buffer,
                                              size_t size, size_t valid_size);

/* The entry points, as X(return, name, parameters): the shim resolves each with dlsym. */
#define NCCLSCOPE_CUPTI_PROTOTYPES(X)                                                                \
  X(ncs_cupti_result, cuptiActivityEnable, (ncs_cupti_kind kind))                                          \
  X(ncs_cupti_result, cuptiActivityDisable, (ncs_cupti_kind kind))                                         \
  X(ncs_cupti_result, cuptiActivityRegisterCallbacks,                                                \
    (ncs_cupti_buffer_requested_fn requested, ncs_cupti_buffer_completed_fn completed))               \
  X(ncs_cupti_result, cuptiActivityFlushAll, (uint32_t flag))                                        \
  X(ncs_cupti_result, cuptiActivityGetNextRecord,                                                    \
    (uint8_t *buffer, size_t valid_size, ncs_cupti_activity_t **record))                        \
  X(ncs_cupti_result, cuptiActivityGetNumDroppedRecords,                                             \
    (ncs_cupti_context ctx, uint32_t stream_id, size_t *dropped))                                    \
  X(ncs_cupti_result, cuptiGetTimestamp, (uint64_t *timestamp))                                      \
  X(ncs_cupti_result, cuptiSubscribe,                                                                \
    (ncs_cupti_subscriber *subscriber, ncs_cupti_callback_fn callback, void *userdata))              \
  X(ncs_cupti_result, cuptiUnsubscribe, (ncs_cupti_subscriber subscriber))

/* A kernel name's own identifier: past an Itanium-mangled prefix ("_Z", "_ZN", then the
 * identifier's length), as CUPTI reports NCCL's kernels (C++ functions), else the name. */
static inline const char *ncs_kernel_ident(const char *name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return name;
  const char *p = name + 2;
  if (*p == 'N') p++;
  while (*p >= '0' && *p <= '9') p++;
  return p;
}
/* 1 for a kernel NCCL launches: its kernels are all communication. NCCL names them
 * ncclKernel_* (up to 2.18), ncclDevKernel_* (2.19 on), ncclSymDevKernel_* (2.27's symmetric
 * kernels), ncclSymkDevKernel_* (2.28's; src/device/symmetric/generate.py): the family
 * nccl<word>Kernel_*. Plus its one-rank reduction, oneRankReduce<...> (src/device/onerank.cu,
 * an anonymous namespace). Mangled or not. Everything else a job launches counts as compute. */
static inline int ncs_is_nccl_kernel(const char *name) {
  if (!name) return 0;
  const char *s = ncs_kernel_ident(name), *u = s;
  if (s[0] == 'n' && s[1] == 'c' && s[2] == 'c' && s[3] == 'l') {
    while (*u && *u != '_') u++;
    if (*u == '_' && u - s >= 10 && u[-6] == 'K' && u[-5] == 'e' && u[-4] == 'r' && u[-3] == 'n' && u[-2] == 'e' &&
        u[-1] == 'l')
      return 1;
  }
  for (const char *p = name; *p; p++) { /* "oneRankReduce", anywhere (namespaces, templates) */
    const char *a = p, *b = "oneRankReduce";
    while (*b && *a == *b) { a++; b++; }
    if (!*b) return 1;
  }
  return 0;
}
#endif
