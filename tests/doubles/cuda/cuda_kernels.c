/* cuda_kernels.c — the CUDA double's side of nvcc-compiled programs: fat binary and kernel
 * registration (what nvcc's generated host code calls at load time), the <<<...>>> call
 * configuration, and kernel launches.
 *
 * Contract: the double cannot run device code. A launch of a registered kernel becomes one
 * kernel item on its stream, cudaDoubleLaunchKernel(stream, name, KERNEL_NS): in order with the
 * stream's other work, captured like any kernel, reported to kernel activity under the device
 * function's registered name (the mangled name, as CUPTI's kernel records name it), lasting
 * KERNEL_NS; the kernel's arguments and the memory they point to are left untouched. A launch of
 * a function never registered gives cudaErrorInvalidDeviceFunction. Registration lives until
 * __cudaUnregisterFatBinary of its module. Thread-safe (one mutex; the per-thread call
 * configuration stack needs none). */
#include "../include/cuda_double.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
#define KERNEL_NS 2000u /* a launched kernel's stated duration: 2 µs */
#define NBUCKETS 1024u
#define CONFIG_DEPTH 16

struct module { int unused; };

struct kernel { /* one registered device function; its address is the cudaKernel_t handle */
  const void *host_fun;
  const char *name;
  struct module *mod;
  struct kernel *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kernel *g_buckets[NBUCKETS];

struct call_config { dim3 grid, block; size_t shmem; void *stream; };
static _Thread_local struct call_config t_config[CONFIG_DEPTH];
static _Thread_local int t_depth;

/* cuda_double.c: records e as the thread's last error (as every failing runtime call does) */
__attribute__((visibility("hidden"))) cudaError_t cuda_double_fail(cudaError_t e);

static unsigned bucket_of(const void *p) {
  uintptr_t x = (uintptr_t)p;
  return (unsigned)((x >> 4) ^ (x >> 14)) % NBUCKETS;
}

static struct kernel *lookup(const void *host_fun) {
  pthread_mutex_lock(&g_mu);
  struct kernel *k = g_buckets[bucket_of(host_fun)];
  while (k && k->host_fun != host_fun) k = k->next;
  pthread_mutex_unlock(&g_mu);
  return k;
}

EXPORT void **__cudaRegisterFatBinary(void *fatCubin) {
  struct module *m = calloc(1, sizeof *m);
  return (void **)m; /* an opaque handle; NULL only when out of memory */
}

EXPORT void __cudaRegisterFatBinaryEnd(void **handle) {}

EXPORT void __cudaUnregisterFatBinary(void **handle) {
  struct module *m = (struct module *)handle;
  if (!m) return;
  pthread_mutex_lock(&g_mu);
  for (unsigned b = 0; b < NBUCKETS; b++)
    for (struct kernel **pp = &g_buckets[b]; *pp;) {
      struct kernel *k = *pp;
      if (k->mod == m) { *pp = k->next; free(k); }
      else pp = &k->next;
    }
  pthread_mutex_unlock(&g_mu);
  free(m);
}

EXPORT void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                   dim3 *bDim, dim3 *gDim, int *wSize) {
  if (!handle || !hostFun) return;
  struct kernel *k = malloc(sizeof *k);
  if (!k) return;
  *k = (struct kernel){hostFun, deviceName ? deviceName : deviceFun, (struct module *)handle, NULL};
  unsigned b = bucket_of(hostFun);
  pthread_mutex_lock(&g_mu);
  k->next = g_buckets[b];
  g_buckets[b] = k;
  pthread_mutex_unlock(&g_mu);
}

/* __device__ variables: the host shadow is all the double has; nothing to register. */
EXPORT void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName,
                              int ext, size_t size, int constant, int global) {}

EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream) {
  if (t_depth == CONFIG_DEPTH) return 1; /* nonzero: the launch expression is skipped */
  t_config[t_depth++] = (struct call_config){grid, block, shmem, stream};
  return 0;
}

EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream) {
  if (t_depth == 0) return cuda_double_fail(cudaErrorInvalidValue);
  struct call_config c = t_config[--t_depth];
  if (grid) *grid = c.grid;
  if (block) *block = c.block;
  if (shmem) *shmem = c.shmem;
  if (stream) *(void **)stream = c.stream;
  return cudaSuccess;
}

EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun) {
  if (!kernel) return cuda_double_fail(cudaErrorInvalidValue);
  struct kernel *k = lookup(hostFun);
  *kernel = (cudaKernel_t)k;
  return k ? cudaSuccess : cuda_double_fail(cudaErrorInvalidDeviceFunction);
}

static cudaError_t launch(const struct kernel *k, dim3 grid, dim3 block, cudaStream_t stream) {
  if (!k) return cuda_double_fail(cudaErrorInvalidDeviceFunction);
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return cuda_double_fail(cudaErrorInvalidValue);
  return cudaDoubleLaunchKernel(stream, k->name, KERNEL_NS);
}

EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                      size_t shmem, cudaStream_t stream) {
  return launch((const struct kernel *)kernel, grid, block, stream);
}

EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                           size_t shmem, cudaStream_t stream) {
  return launch((const struct kernel *)kernel, grid, block, stream ? stream : cudaStreamPerThread);
}

EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                                    size_t shmem, cudaStream_t stream) {
  return launch(lookup(func), grid, block, stream);
}
