/* topo.c — the shim's NVML topology collector (the "topo" collector of hooks.h).
 *
 * Contract: runs once per trace file on the writer thread (its first poll, right after the file is open), never on the
 * per-call hot path. Loads libnvidia-ml.so.1 privately (dlopen RTLD_LOCAL|RTLD_NOW, so its
 * symbols never reach the process's global scope), reads every GPU NVML reports (name, bus id,
 * UUID, PCIe generation and width, active NVLinks) and every pair's link (NVLink count, PCIe
 * common ancestor, P2P status), and emits TOPO_GPU / TOPO_LINK records (docs/FORMAT-TOPO.md).
 * No NVML, a failing nvmlInit or a missing symbol: emits nothing and returns. Calls
 * nvmlShutdown; keeps the library loaded (unloading a driver library is not worth the risk).
 * Bounded work: at most NCS_TOPO_MAX_GPUS GPUs and 18 links per GPU. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ncclscope/encode.h"
#include "hooks.h"

#define NCS_TOPO_MAX_GPUS 64
#define NVML_LINKS 18 /* NVML_NVLINK_MAX_LINKS */

/* The NVML ABI (nvml.h): only what is used here. */
typedef int nvmlReturn_t;                 /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;                          /* nvmlPciInfo_t as used by the _v3 / _v2 calls */
enum { NVML_FEATURE_ENABLED = 1 };
enum { NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_NVLINK = 2 };

struct nvml {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  nvmlReturn_t (*count)(unsigned *);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
  nvmlReturn_t (*gen)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*width)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*gen_max)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*width_max)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int *);
  nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
  nvmlReturn_t (*ancestor)(nvmlDevice_t, nvmlDevice_t, int *);
  nvmlReturn_t (*p2p)(nvmlDevice_t, nvmlDevice_t, int, int *);
};

static int load(void *h, struct nvml *n) {
#define SYM(field, name) *(void **)&n->field = dlsym(h, name)
  SYM(init, "nvmlInit_v2");
  SYM(shutdown, "nvmlShutdown");
  SYM(count, "nvmlDeviceGetCount_v2");
  SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
  SYM(name, "nvmlDeviceGetName");
  SYM(uuid, "nvmlDeviceGetUUID");
  SYM(pci, "nvmlDeviceGetPciInfo_v3");
  SYM(gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  SYM(width, "nvmlDeviceGetCurrPcieLinkWidth");
  SYM(gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  SYM(width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  SYM(link_state, "nvmlDeviceGetNvLinkState");
  SYM(link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  SYM(ancestor, "nvmlDeviceGetTopologyCommonAncestor");
  SYM(p2p, "nvmlDeviceGetP2PStatus");
#undef SYM
  /* the minimum: enumerate devices and read their bus ids */
  return n->init && n->shutdown && n->count && n->handle && n->pci ? 0 : -1;
}

/* Same PCI function, whatever the domain width or letter case. */
static int same_bus(const char *a, const char *b) {
  unsigned d1, b1, s1, f1, d2, b2, s2, f2;
  if (sscanf(a, "%x:%x:%x.%x", &d1, &b1, &s1, &f1) != 4 || sscanf(b, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) != 4) return 0;
  return d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}

struct gpu_info {
  nvmlDevice_t dev;
  struct ncs_topo_gpu g;
  char remote[NVML_LINKS][32]; /* remote bus id of each active link, "" when inactive */
};

static void emit_body(uint32_t type, struct ncs_wbuf *w) {
  if (!w->overflow) ncs_emit(type, w->buf, w->len);
}

/* NVML, loaded by the activating thread (topo_start): the writer thread never enters the
 * dynamic loader to load it (shim/forkgate.c, docs/SHIM.md "Fork"). */
static struct nvml nv;
static int nv_state; /* 0 not tried, 1 loaded, -1 unavailable */

static void topo_start(void) {
  if (nv_state) return;
  nv_state = -1;
  ncs_gate_enter();
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h && load(h, &nv) == 0) nv_state = 1;
  ncs_gate_leave();
}

static struct gpu_info gpus[NCS_TOPO_MAX_GPUS];                            /* writer thread only */
static struct ncs_topo_link links[NCS_TOPO_MAX_GPUS * (NCS_TOPO_MAX_GPUS - 1) / 2];

/* Reads the topology through NVML; every NVML call inside one fork-gate bracket (NVML's own
 * locks must not be held by this thread when the application forks). Returns the GPU count,
 * the links in links[0 .. *nlinks). */
static unsigned read_nvml(unsigned *nlinks) {
  struct nvml n = nv;
  unsigned ng = 0, count = 0;
  *nlinks = 0;
  if (n.init() != 0) return 0;
  if (n.count(&count) != 0) goto done;
  if (count > NCS_TOPO_MAX_GPUS) count = NCS_TOPO_MAX_GPUS;
  for (unsigned i = 0; i < count; i++) {
    struct gpu_info *gi = &gpus[ng];
    memset(gi, 0, sizeof *gi);
    if (n.handle(i, &gi->dev) != 0) continue;
    nvmlPciInfo_t pci;
    if (n.pci(gi->dev, &pci) != 0) continue;
    gi->g.index = i;
    snprintf(gi->g.bus_id, sizeof gi->g.bus_id, "%s", pci.busId);
    if (n.name) n.name(gi->dev, gi->g.name, sizeof gi->g.name);
    if (n.uuid) n.uuid(gi->dev, gi->g.uuid, sizeof gi->g.uuid);
    if (n.gen) n.gen(gi->dev, &gi->g.pcie_gen);
    if (n.width) n.width(gi->dev, &gi->g.pcie_width);
    if (n.gen_max) n.gen_max(gi->dev, &gi->g.pcie_gen_max);
    if (n.width_max) n.width_max(gi->dev, &gi->g.pcie_width_max);
    for (unsigned l = 0; n.link_state && l < NVML_LINKS; l++) {
      int active = 0;
      if (n.link_state(gi->dev, l, &active) != 0) break; /* no NVLink (or no more links) */
      if (active != NVML_FEATURE_ENABLED) continue;
      gi->g.nvlinks++;
      nvmlPciInfo_t r;
      if (n.link_remote && n.link_remote(gi->dev, l, &r) == 0) snprintf(gi->remote[l], sizeof gi->remote[l], "%s", r.busId);
    }
    ng++;
  }
  for (unsigned a = 0; a < ng; a++)
    for (unsigned b = a + 1; b < ng; b++) {
      struct ncs_topo_link lk = { gpus[a].g.index, gpus[b].g.index, 0, NCS_REL_UNKNOWN, 255, 255 };
      int direct = 0, to_gpu = 0;
      for (unsigned l = 0; l < NVML_LINKS; l++) {
        if (!gpus[a].remote[l][0]) continue;
        if (same_bus(gpus[a].remote[l], gpus[b].g.bus_id)) direct++;
        for (unsigned k = 0; k < ng; k++) to_gpu |= same_bus(gpus[a].remote[l], gpus[k].g.bus_id);
      }
      int st;
      if (n.p2p && n.p2p(gpus[a].dev, gpus[b].dev, NVML_P2P_CAPS_INDEX_READ, &st) == 0) lk.p2p_read = (uint32_t)st;
      if (n.p2p && n.p2p(gpus[a].dev, gpus[b].dev, NVML_P2P_CAPS_INDEX_NVLINK, &st) == 0) lk.p2p_nvlink = (uint32_t)st;
      if (direct) lk.nvlinks = (uint32_t)direct;
      else if (!to_gpu && lk.p2p_nvlink == 0) /* behind an NVSwitch */
        lk.nvlinks = gpus[a].g.nvlinks < gpus[b].g.nvlinks ? gpus[a].g.nvlinks : gpus[b].g.nvlinks;
      int lvl;
      if (n.ancestor && n.ancestor(gpus[a].dev, gpus[b].dev, &lvl) == 0) lk.pcie = (uint32_t)lvl;
      links[(*nlinks)++] = lk;
    }
done:
  n.shutdown();
  return ng;
}

/* Reads the topology (gated), then hands the records to the writer outside the bracket (ncs_emit
 * takes the writer's queue lock, which a fork's prepare handler holds while it waits). */
static void collect(void) {
  if (nv_state != 1) return;
  unsigned nlinks;
  ncs_gate_enter();
  unsigned ng = read_nvml(&nlinks);
  ncs_gate_leave();
  for (unsigned i = 0; i < ng; i++) {
    uint8_t buf[512];
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, buf, sizeof buf);
    ncs_enc_topo_gpu_body(&w, &gpus[i].g);
    emit_body(NCS_REC_TOPO_GPU, &w);
  }
  for (unsigned k = 0; k < nlinks; k++) {
    uint8_t buf[64];
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, buf, sizeof buf);
    ncs_enc_topo_link_body(&w, &links[k]);
    emit_body(NCS_REC_TOPO_LINK, &w);
  }
}

/* Collected once per trace file, at the writer's first poll (right after the file is open). */
static int collected;
static int topo_poll(unsigned wait_ms) {
  if (!collected) {
    collected = 1;
    collect();
  }
  return 0;
}
static void topo_atfork_child(void) { collected = 0; } /* the child writes its own file */

NCS_COLLECTOR ncs_topo_collector = {.name = "topo", .start = topo_start, .poll = topo_poll, .atfork_child = topo_atfork_child};
