/* cuda_device.c — the CUDA double's devices as a program sees them: properties, attributes,
 * memory information, page-locked host memory, device reset.
 *
 * Contract: every device is an H100 SXM5 80 GB (compute capability 9.0, 132 SMs; the other
 * figures are that GPU's published ones), and agrees with the NVML double: its name, PCI bus id
 * and UUID are those the NVML double gives the same physical GPU (the CUDA_VISIBLE_DEVICES entry
 * of the device) from the NVMLDOUBLE_TOPO file; without one, NVML's defaults for a file without
 * directives, under the name "NVIDIA H100 80GB HBM3". cudaMemGetInfo reports the whole memory
 * free (the double's device memory is host memory and is not counted). Page-locked host memory
 * is ordinary aligned host memory; its device pointer is the host pointer. cudaDeviceReset
 * waits for the device's work and keeps everything else. */
#include "../include/cuda_double.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nvml/topo_text.h"

#define EXPORT __attribute__((visibility("default")))
#define H100_NAME "NVIDIA H100 80GB HBM3"
#define H100_MEM (81559ull << 20) /* 81559 MiB, as nvidia-smi shows an H100 80GB HBM3 */
#define H100_PCI_PRODUCT 0x233010deu /* the NVML double's pciDeviceId */

__attribute__((visibility("hidden"))) cudaError_t cuda_double_fail(cudaError_t e);

static pthread_once_t g_topo_once = PTHREAD_ONCE_INIT;
static struct ncsd_machine g_topo;
static int g_have_topo;

static void topo_load(void) {
  const char *path = getenv("NVMLDOUBLE_TOPO");
  char why[128];
  g_have_topo = path && *path && ncsd_topo_load(path, &g_topo, why, sizeof why) == 0;
}

/* The physical (NVML) index of CUDA device `dev`: its CUDA_VISIBLE_DEVICES entry when that is
 * a number, else dev. */
static int physical_index(int dev) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return dev;
  for (int i = 0; *v; i++) {
    while (*v == ' ' || *v == ',') v++;
    char *end;
    long x = strtol(v, &end, 10);
    if (i == dev) return end != v && x >= 0 ? (int)x : dev;
    v = strchr(v, ',');
    if (!v) break;
  }
  return dev;
}

static int device_ok(int dev) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && dev >= 0 && dev < n;
}

static void fill_props(struct cudaDeviceProp *p, int dev) {
  pthread_once(&g_topo_once, topo_load);
  int phys = physical_index(dev);
  unsigned dom = 0, bus = 0x10 + 0x10 * (unsigned)phys, slot = 0, fn = 0;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", H100_NAME);
  if (g_have_topo && phys < g_topo.ngpus) {
    const struct ncsd_gpu *g = &g_topo.gpu[phys];
    if (strcmp(g->name, "NVIDIA Test GPU") != 0) snprintf(p->name, sizeof p->name, "%s", g->name);
    sscanf(g->bus_id, "%x:%x:%x.%x", &dom, &bus, &slot, &fn);
  }
  /* the bytes of the NVML double's UUID of this GPU, GPU-%08x-0000-4000-8000-%012x */
  unsigned u = 0x6e63730u + (unsigned)phys;
  unsigned char id[16] = {u >> 24, u >> 16 & 0xff, u >> 8 & 0xff, u & 0xff, 0, 0, 0x40, 0, 0x80, 0,
                          0, 0, (unsigned)phys >> 24, (unsigned)phys >> 16 & 0xff, (unsigned)phys >> 8 & 0xff,
                          (unsigned)phys & 0xff};
  memcpy(p->uuid.bytes, id, sizeof id);
  p->totalGlobalMem = H100_MEM;
  p->sharedMemPerBlock = 49152;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = 1;
  p->surfaceAlignment = 512;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = (int)bus;
  p->pciDeviceID = (int)slot;
  p->pciDomainID = (int)dom;
  p->asyncEngineCount = 3;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 52428800;
  p->persistingL2CacheMaxSize = 82837504;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->canUseHostPointerForRegisteredMem = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = 232448;
  p->maxBlocksPerMultiProcessor = 32;
  p->accessPolicyMaxWindowSize = 134213632;
  p->reservedSharedMemPerBlock = 1024;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 1;
  p->gpuDirectRDMASupported = 1;
  p->clusterLaunch = 1;
  p->unifiedFunctionPointers = 1;
  p->deviceNumaId = -1;
  p->hostNumaId = -1;
  p->gpuPciDeviceID = H100_PCI_PRODUCT;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop) return cuda_double_fail(cudaErrorInvalidValue);
  if (!device_ok(device)) return cuda_double_fail(cudaErrorInvalidDevice);
  fill_props(prop, device);
  return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  if (!value || (int)attr < 1 || (int)attr >= (int)cudaDevAttrMax) return cuda_double_fail(cudaErrorInvalidValue);
  if (!device_ok(device)) return cuda_double_fail(cudaErrorInvalidDevice);
  struct cudaDeviceProp p;
  fill_props(&p, device);
  switch (attr) {
  case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
  case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
  case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
  case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
  case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
  case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
  case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
  case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
  case cudaDevAttrWarpSize: *value = p.warpSize; break;
  case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
  case cudaDevAttrClockRate: *value = 1980000; break;        /* kHz, the H100 SXM5 boost clock */
  case cudaDevAttrMemoryClockRate: *value = 2619000; break;  /* kHz */
  case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
  case cudaDevAttrIntegrated: *value = p.integrated; break;
  case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; break;
  case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
  case cudaDevAttrEccEnabled: *value = p.ECCEnabled; break;
  case cudaDevAttrPciBusId: *value = p.pciBusID; break;
  case cudaDevAttrPciDeviceId: *value = p.pciDeviceID; break;
  case cudaDevAttrPciDomainId: *value = p.pciDomainID; break;
  case cudaDevAttrTccDriver: *value = p.tccDriver; break;
  case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
  case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
  case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
  case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
  case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
  case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p.sharedMemPerMultiprocessor; break;
  case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
  case cudaDevAttrManagedMemory: *value = p.managedMemory; break;
  case cudaDevAttrIsMultiGpuBoard: *value = p.isMultiGpuBoard; break;
  case cudaDevAttrMultiGpuBoardGroupID: *value = p.multiGpuBoardGroupID; break;
  case cudaDevAttrHostNativeAtomicSupported: *value = p.hostNativeAtomicSupported; break;
  case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
  case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
  case cudaDevAttrMemoryPoolsSupported: *value = p.memoryPoolsSupported; break;
  case cudaDevAttrGPUDirectRDMASupported: *value = p.gpuDirectRDMASupported; break;
  case cudaDevAttrClusterLaunch: *value = p.clusterLaunch; break;
  default: *value = 0; break; /* a valid attribute the double does not model */
  }
  return cudaSuccess;
}

EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return cuda_double_fail(cudaErrorInvalidValue);
  *free_bytes = *total_bytes = H100_MEM;
  return cudaSuccess;
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags) {
  if (!p) return cuda_double_fail(cudaErrorInvalidValue);
  *p = NULL;
  if (flags & ~0xfu) return cuda_double_fail(cudaErrorInvalidValue);
  if (size == 0) return cudaSuccess;
  void *m = NULL;
  if (posix_memalign(&m, 4096, size) != 0) return cuda_double_fail(cudaErrorMemoryAllocation);
  *p = m;
  return cudaSuccess;
}

EXPORT cudaError_t cudaMallocHost(void **p, size_t size) { return cudaHostAlloc(p, size, cudaHostAllocDefault); }

EXPORT cudaError_t cudaFreeHost(void *p) {
  free(p);
  return cudaSuccess;
}

EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  if (!pDevice || !pHost || flags) return cuda_double_fail(cudaErrorInvalidValue);
  *pDevice = pHost;
  return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceReset(void) { return cudaDeviceSynchronize(); }
