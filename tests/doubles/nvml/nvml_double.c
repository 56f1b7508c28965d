/* nvml_double.c — a CPU stand-in for libnvidia-ml.so.1 with the real NVML ABI for the calls
 * ncclscope and the NCCL double use. The machine comes from the file named by NVMLDOUBLE_TOPO
 * (`nvidia-smi topo -m` text, topo_text.h). Without NVMLDOUBLE_TOPO, nvmlInit_v2 fails with
 * NVML_ERROR_DRIVER_NOT_LOADED, as on a machine without the NVIDIA driver.
 *
 * NVLink model: a GPU whose NVLink peers need more than NVML_NVLINK_MAX_LINKS (18) links in
 * total is behind an NVSwitch: it has max(NV#) links, all reaching a switch (remote PCI bus id
 * 00000000:F0:00.0 + link), and P2P over NVLink is OK towards every NV# peer. Otherwise links
 * go directly to the peer GPU (remote PCI info = that GPU's bus id), NV# links per peer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_text.h"

#define EXPORT __attribute__((visibility("default")))
#define NVML_NVLINK_MAX_LINKS 18

typedef enum {
  NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_TIMEOUT = 10, NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;
typedef enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;
typedef enum {
  NVML_TOPOLOGY_INTERNAL = 0, NVML_TOPOLOGY_SINGLE = 10, NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30, NVML_TOPOLOGY_NODE = 40, NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;
typedef enum {
  NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_WRITE, NVML_P2P_CAPS_INDEX_NVLINK,
  NVML_P2P_CAPS_INDEX_ATOMICS, NVML_P2P_CAPS_INDEX_PROP, NVML_P2P_CAPS_INDEX_UNKNOWN
} nvmlGpuP2PCapsIndex_t;
typedef enum {
  NVML_P2P_STATUS_OK = 0, NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED, NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
  NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED, NVML_P2P_STATUS_DISABLED_BY_REGKEY,
  NVML_P2P_STATUS_NOT_SUPPORTED, NVML_P2P_STATUS_UNKNOWN
} nvmlGpuP2PStatus_t;
typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
struct nvmlDevice_st { int index; };
typedef struct nvmlDevice_st *nvmlDevice_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int refcount;
static struct ncsd_machine machine;
static struct nvmlDevice_st handles[NCSD_MAX_GPUS];
static int nlinks[NCSD_MAX_GPUS];                 /* links per GPU */
static int link_peer[NCSD_MAX_GPUS][NVML_NVLINK_MAX_LINKS]; /* peer GPU, or -1 - switch */
static int switched[NCSD_MAX_GPUS];

static void build_links(void) {
  for (int a = 0; a < machine.ngpus; a++) {
    int total = 0, maxnv = 0;
    for (int b = 0; b < machine.ngpus; b++) {
      if (a == b) continue;
      total += machine.nv[a][b];
      if (machine.nv[a][b] > maxnv) maxnv = machine.nv[a][b];
    }
    nlinks[a] = 0;
    switched[a] = total > NVML_NVLINK_MAX_LINKS;
    if (switched[a]) {
      nlinks[a] = maxnv > NVML_NVLINK_MAX_LINKS ? NVML_NVLINK_MAX_LINKS : maxnv;
      for (int l = 0; l < nlinks[a]; l++) link_peer[a][l] = -1 - l;
    } else {
      for (int b = 0; b < machine.ngpus; b++)
        for (int k = 0; k < machine.nv[a][b] && nlinks[a] < NVML_NVLINK_MAX_LINKS; k++) link_peer[a][nlinks[a]++] = b;
    }
  }
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&lock);
  nvmlReturn_t rc = NVML_SUCCESS;
  if (__atomic_load_n(&refcount, __ATOMIC_ACQUIRE) == 0) {
    const char *path = getenv("NVMLDOUBLE_TOPO");
    char why[256];
    if (!path || !*path) rc = NVML_ERROR_DRIVER_NOT_LOADED;
    else if (ncsd_topo_load(path, &machine, why, sizeof why) != 0) {
      fprintf(stderr, "nvml double: NVMLDOUBLE_TOPO=%s: %s\n", path, why);
      rc = NVML_ERROR_UNKNOWN;
    } else {
      for (int i = 0; i < machine.ngpus; i++) handles[i].index = i;
      build_links();
    }
  }
  if (rc == NVML_SUCCESS) __atomic_add_fetch(&refcount, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return rc;
}
EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&lock);
  int cur = __atomic_load_n(&refcount, __ATOMIC_ACQUIRE);
  nvmlReturn_t rc = cur ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
  if (cur) __atomic_sub_fetch(&refcount, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return rc;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}

static int ready(void) { return __atomic_load_n(&refcount, __ATOMIC_ACQUIRE) > 0; }
static int dev_index(nvmlDevice_t d) {
  if (!d || d < handles || d >= handles + machine.ngpus) return -1;
  return (int)(d - handles);
}
#define CHECK_DEV(d, i) \
  if (!ready()) return NVML_ERROR_UNINITIALIZED; \
  int i = dev_index(d); \
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)machine.ngpus;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (!dev || index >= (unsigned)machine.ngpus) return NVML_ERROR_INVALID_ARGUMENT;
  *dev = &handles[index];
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev) {
  return nvmlDeviceGetHandleByIndex_v2(index, dev);
}

static int same_bus(const char *a, const char *b) {
  /* compare ignoring case and leading domain zeros ("0000:1a:00.0" vs "00000000:1A:00.0") */
  unsigned d1, b1, s1, f1, d2, b2, s2, f2;
  if (sscanf(a, "%x:%x:%x.%x", &d1, &b1, &s1, &f1) != 4 || sscanf(b, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) != 4) return 0;
  return d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (!bus || !dev) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < machine.ngpus; i++)
    if (same_bus(bus, machine.gpu[i].bus_id)) { *dev = &handles[i]; return NVML_SUCCESS; }
  return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
  CHECK_DEV(d, i);
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  *index = (unsigned)i;
  return NVML_SUCCESS;
}

static nvmlReturn_t copy_out(char *dst, unsigned len, const char *src) {
  if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(src) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(dst, src, strlen(src) + 1);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
  CHECK_DEV(d, i);
  return copy_out(name, len, machine.gpu[i].name);
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
  CHECK_DEV(d, i);
  char u[80];
  snprintf(u, sizeof u, "GPU-%08x-0000-4000-8000-%012x", 0x6e63730u + (unsigned)i, (unsigned)i);
  return copy_out(uuid, len, u);
}

static void fill_pci(nvmlPciInfo_t *p, const char *bus) {
  memset(p, 0, sizeof *p);
  unsigned dom = 0, b = 0, dev = 0, fn = 0;
  sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn);
  p->domain = dom;
  p->bus = b;
  p->device = dev;
  p->pciDeviceId = 0x233010deu;
  snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", dom, b, dev, fn);
  snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffff, b, dev, fn);
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
  CHECK_DEV(d, i);
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  fill_pci(pci, machine.gpu[i].bus_id);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
  CHECK_DEV(d, i);
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = machine.gpu[i].gen;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
  CHECK_DEV(d, i);
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = machine.gpu[i].width;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
  CHECK_DEV(d, i);
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = machine.gpu[i].gen_max;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
  CHECK_DEV(d, i);
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = machine.gpu[i].width_max;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, nvmlEnableState_t *active) {
  CHECK_DEV(d, i);
  if (!active || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (nlinks[i] == 0) return NVML_ERROR_NOT_SUPPORTED; /* a GPU without NVLink */
  *active = (int)link < nlinks[i] ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *pci) {
  CHECK_DEV(d, i);
  if (!pci || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if ((int)link >= nlinks[i]) return NVML_ERROR_NOT_SUPPORTED;
  int p = link_peer[i][link];
  if (p >= 0) fill_pci(pci, machine.gpu[p].bus_id);
  else {
    char sw[32];
    snprintf(sw, sizeof sw, "00000000:%02X:00.0", 0xF0 + ((-1 - p) % 6)); /* NVSwitch bridges */
    fill_pci(pci, sw);
    pci->pciDeviceId = 0x22a310deu;
  }
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuTopologyLevel_t *lvl) {
  CHECK_DEV(a, i);
  int j = dev_index(b);
  if (j < 0 || !lvl) return NVML_ERROR_INVALID_ARGUMENT;
  *lvl = (nvmlGpuTopologyLevel_t)machine.rel[i][j];
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t idx, nvmlGpuP2PStatus_t *st) {
  CHECK_DEV(a, i);
  int j = dev_index(b);
  if (j < 0 || !st) return NVML_ERROR_INVALID_ARGUMENT;
  if (idx == NVML_P2P_CAPS_INDEX_NVLINK) {
    *st = machine.nv[i][j] > 0 ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
  } else if (idx == NVML_P2P_CAPS_INDEX_READ || idx == NVML_P2P_CAPS_INDEX_WRITE) {
    *st = (nvmlGpuP2PStatus_t)machine.p2p_read[i][j];
  } else {
    *st = NVML_P2P_STATUS_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  return copy_out(v, len, "580.00.00-double");
}
EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len) { return copy_out(v, len, "13.580.00-double"); }
