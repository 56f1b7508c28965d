/* test_cuda_prop_abi.c — the CUDA double's struct cudaDeviceProp, enum cudaDeviceAttr, dim3 and
 * the prototypes of tests/doubles/cuda/cuda_device.c and cuda_kernels.c against CUDA 13.0's real
 * headers (/usr/local/cuda/include): a program compiled against the real runtime (nccl-tests
 * reads prop.name, prop.pciBusID, prop.totalGlobalMem) must read the double's values at the same
 * offsets. The checks are _Static_asserts: any drift fails to compile, which the suite reports
 * as a failure; the program then prints one PASS line per group. SKIP without the real headers.
 *
 * The double's header declares the same names as the real one, so it is not included: the field
 * and attribute lists it is made from (cuda_double_prop.h) are expanded here into a mirror
 * struct and compared with the real struct field by field. */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "../tests/doubles/include/cuda_double_prop.h"

#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#define HAVE_REAL_CUDART 1
#endif
#endif

#ifdef HAVE_REAL_CUDART
#include <cuda_runtime_api.h>

#define MIRROR_F(type, name) type name;
#define MIRROR_A(type, name, n) type name[n];
struct double_prop { CUDA_DOUBLE_PROP_FIELDS(MIRROR_F, MIRROR_A) };

#define SAME_F(type, name) \
  _Static_assert(offsetof(struct double_prop, name) == offsetof(struct cudaDeviceProp, name), "cudaDeviceProp." #name " offset"); \
  _Static_assert(sizeof(((struct double_prop *)0)->name) == sizeof(((struct cudaDeviceProp *)0)->name), "cudaDeviceProp." #name " size");
#define SAME_A(type, name, n) SAME_F(type, name)
CUDA_DOUBLE_PROP_FIELDS(SAME_F, SAME_A)
_Static_assert(sizeof(struct double_prop) == sizeof(struct cudaDeviceProp), "cudaDeviceProp size");
_Static_assert(sizeof(cudaUUID_t) == 16, "cudaUUID_t size");

#define SAME_ATTR(name, value) _Static_assert(cudaDevAttr##name == value, "cudaDevAttr" #name " value");
CUDA_DOUBLE_ATTRS(SAME_ATTR)

/* values the double's header spells out (cuda_double.h) */
_Static_assert(cudaErrorInvalidDeviceFunction == 98, "cudaErrorInvalidDeviceFunction");
_Static_assert(cudaHostAllocDefault == 0 && cudaHostAllocPortable == 1 && cudaHostAllocMapped == 2 &&
               cudaHostAllocWriteCombined == 4, "cudaHostAlloc flags");
struct double_dim3 { unsigned int x, y, z; };
_Static_assert(sizeof(dim3) == sizeof(struct double_dim3) && offsetof(dim3, z) == offsetof(struct double_dim3, z), "dim3");

/* the prototypes cuda_double.h declares for these functions, as the real header declares them */
#define SAME_PROTO(fn, type) _Static_assert(_Generic(&fn, type: 1, default: 0), #fn " prototype");
SAME_PROTO(cudaGetDeviceProperties, cudaError_t (*)(struct cudaDeviceProp *, int))
SAME_PROTO(cudaDeviceGetAttribute, cudaError_t (*)(int *, enum cudaDeviceAttr, int))
SAME_PROTO(cudaMemGetInfo, cudaError_t (*)(size_t *, size_t *))
SAME_PROTO(cudaHostAlloc, cudaError_t (*)(void **, size_t, unsigned int))
SAME_PROTO(cudaMallocHost, cudaError_t (*)(void **, size_t))
SAME_PROTO(cudaFreeHost, cudaError_t (*)(void *))
SAME_PROTO(cudaHostGetDevicePointer, cudaError_t (*)(void **, void *, unsigned int))
SAME_PROTO(cudaDeviceReset, cudaError_t (*)(void))
SAME_PROTO(cudaLaunchKernel, cudaError_t (*)(const void *, dim3, dim3, void **, size_t, cudaStream_t))

int main(void) {
  int nfields = 0, nattrs = 0;
#define COUNT_F(type, name) nfields++;
#define COUNT_A(type, name, n) nfields++;
#define COUNT_X(name, value) nattrs++;
  CUDA_DOUBLE_PROP_FIELDS(COUNT_F, COUNT_A)
  CUDA_DOUBLE_ATTRS(COUNT_X)
  CHECK(nfields > 90, "cudaDeviceProp: %d fields, offsets and sizes as CUDA 13.0's, struct size %zu",
        nfields, sizeof(struct cudaDeviceProp));
  CHECK(nattrs > 40, "cudaDeviceAttr: %d values as CUDA 13.0's", nattrs);
  CHECK(1, "dim3, cudaHostAlloc flags, cudaErrorInvalidDeviceFunction and 9 prototypes as CUDA 13.0's");
  return check_done();
}
#else
int main(void) {
  printf("SKIP: cudaDeviceProp ABI: cuda_runtime_api.h not found (CUDA toolkit absent)\n");
  return 0;
}
#endif
