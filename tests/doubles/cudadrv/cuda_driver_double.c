/* cuda_driver_double.c — a CPU double of the CUDA driver library (libcuda.so.1), as far as the
 * tools ncclscope runs beside need it: NVIDIA's NCCL Inspector profiler plugin dlopens
 * "libcuda.so" / "libcuda.so.1" and looks up cuGetErrorString, cuDeviceGet and cuDeviceGetUuid
 * (plugins/profiler/inspector/inspector_cudawrap.cc) to name the GPU of each communicator.
 *
 * Contract: CUDA 13.0's prototypes and result codes (cuda.h); every function exported here also
 * exists in the real driver (checked against CUDA's stub library in tests/test_doubles_symbols.sh).
 * - Devices: the entries of CUDA_VISIBLE_DEVICES (empty: none), else NCCLDOUBLE_NGPUS, else 8,
 *   as the CUDA runtime double counts them; a device handle is its ordinal.
 * - cuDeviceGetUuid (and _v2) gives the 16 bytes of the UUID the NVML double prints for the
 *   same physical device (the ordinal's CUDA_VISIBLE_DEVICES entry), as the real driver and
 *   NVML agree on a GPU's UUID.
 * - cuInit is accepted and not required first: in a process with a CUDA runtime (every NCCL
 *   job) the runtime has initialised the driver before any tool asks it.
 * Not modelled: contexts, memory, modules, launches (nothing else is exported). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
typedef int CUresult;
typedef int CUdevice;
typedef struct CUuuid_st { char bytes[16]; } CUuuid;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101 };

static int device_count(void) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  if (v) {
    int n = 0;
    for (const char *p = v; *p; p++) if (*p != ',' && *p != ' ' && (p == v || p[-1] == ',')) n++;
    return n;
  }
  const char *g = getenv("NCCLDOUBLE_NGPUS");
  int n = g && *g ? atoi(g) : 8;
  return n > 0 ? n : 0;
}
/* The physical (NVML) index of ordinal `dev`: its CUDA_VISIBLE_DEVICES entry when a number. */
static int physical(int dev) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  for (int i = 0; v && *v; i++) {
    while (*v == ' ' || *v == ',') v++;
    char *end;
    long x = strtol(v, &end, 10);
    if (i == dev) return end != v && x >= 0 ? (int)x : dev;
    v = strchr(v, ',');
  }
  return dev;
}

EXPORT CUresult cuInit(unsigned int flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  return device_count() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
EXPORT CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = device_count();
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
/* GPU-%08x-0000-4000-8000-%012x of tests/doubles/nvml/nvml_double.c, as bytes */
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
  if (!u) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  unsigned p = (unsigned)physical(d), a = 0x6e63730u + p;
  unsigned char b[16] = {a >> 24, a >> 16, a >> 8, a, 0, 0, 0x40, 0, 0x80, 0,
                         0, 0, p >> 24, p >> 16, p >> 8, p};
  memcpy(u->bytes, b, 16);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) { return cuDeviceGetUuid_v2(u, d); }

static const char *const k_names[][2] = {
  {"CUDA_SUCCESS", "no error"},
  {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
};
static int name_index(CUresult e) {
  switch (e) {
  case CUDA_SUCCESS: return 0;
  case CUDA_ERROR_INVALID_VALUE: return 1;
  case CUDA_ERROR_NOT_INITIALIZED: return 2;
  case CUDA_ERROR_NO_DEVICE: return 3;
  case CUDA_ERROR_INVALID_DEVICE: return 4;
  default: return -1;
  }
}
EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  int i = name_index(e);
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  if (i < 0) { *s = NULL; return CUDA_ERROR_INVALID_VALUE; }
  *s = k_names[i][1];
  return CUDA_SUCCESS;
}
EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
  int i = name_index(e);
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  if (i < 0) { *s = NULL; return CUDA_ERROR_INVALID_VALUE; }
  *s = k_names[i][0];
  return CUDA_SUCCESS;
}
