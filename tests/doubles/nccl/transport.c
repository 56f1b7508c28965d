/* transport.c — what real NCCL 2.28 would choose per connection, and the lines it prints
 * (double_log.h: ncclD_log_init, ncclD_log_connect).
 *
 * Contract: the topology comes from NVML, loaded with dlopen like real NCCL (the NVML double
 * when NVMLDOUBLE_TOPO names a topology; without NVML every pair is PHB and no GPU has
 * NVLink). Per ordered pair (me -> next on the ring), in NCCL's order of preference:
 *   different node                      NET: "NET/IB/0/GDRDMA", or "NET/Socket/0" when
 *                                       NCCL_IB_DISABLE=1, NCCL_NET=Socket or the node has no
 *                                       IB (NCCLDOUBLE_IB=0; then "NET/IB : No device found.")
 *   NVLink between the GPUs             P2P (unless NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=LOC):
 *                                       "P2P/CUMEM" on Hopper-like GPUs, else "P2P/CUMEM/read"
 *   PCIe path <= P2P level              P2P: "P2P/CUMEM" (level: NCCL_P2P_LEVEL, default PXB)
 *   otherwise                           "SHM/direct/direct", or NET when NCCL_SHM_DISABLE=1
 * GPUs are named by nvmlDev in brackets (NCCL >= 2.18.3): the peers' NVML indexes. Rings: channel c visits ranks 0..n-1 in order. NVLS is available when
 * every local GPU pair is NVLinked, there are more than 2 local GPUs, the GPUs are Hopper or
 * newer and NCCL_NVLS_ENABLE is not 0. ncclD_ring_link gives the slowest hop of the ring, with
 * its link facts (NVLink count and generation, PCIe generation and width), for the link model
 * (nccl_double.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "double_log.h"
#include "../include/nccl_double.h"

#define MAXG 64
enum { REL_PIX = 10, REL_PXB = 20, REL_PHB = 30, REL_NODE = 40, REL_SYS = 50 };

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ngpus;
static int g_nv[MAXG][MAXG], g_rel[MAXG][MAXG];
static char g_name[MAXG][96];
static char g_bus[MAXG][32];
static unsigned g_pgen[MAXG], g_pwidth[MAXG]; /* PCIe link generation and width (0: unknown) */

typedef int (*fn_v)(void);
typedef int (*fn_u)(unsigned *);
typedef int (*fn_h)(unsigned, void **);
typedef int (*fn_s)(void *, char *, unsigned);
typedef int (*fn_anc)(void *, void *, int *);
typedef int (*fn_p2p)(void *, void *, int, int *);
typedef struct { char legacy[16]; unsigned domain, bus, device, id, sub; char busId[32]; } pci_t;
typedef int (*fn_pci)(void *, pci_t *);

static void load_topology(void) {
  for (int a = 0; a < MAXG; a++)
    for (int b = 0; b < MAXG; b++) g_rel[a][b] = REL_PHB;
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  fn_v init = (fn_v)dlsym(h, "nvmlInit_v2"), shut = (fn_v)dlsym(h, "nvmlShutdown");
  fn_u count = (fn_u)dlsym(h, "nvmlDeviceGetCount_v2");
  fn_h handle = (fn_h)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  fn_s name = (fn_s)dlsym(h, "nvmlDeviceGetName");
  fn_anc anc = (fn_anc)dlsym(h, "nvmlDeviceGetTopologyCommonAncestor");
  fn_p2p p2p = (fn_p2p)dlsym(h, "nvmlDeviceGetP2PStatus");
  fn_pci pci = (fn_pci)dlsym(h, "nvmlDeviceGetPciInfo_v3");
  typedef int (*fn_hu)(void *, unsigned *);
  fn_hu pgen = (fn_hu)dlsym(h, "nvmlDeviceGetCurrPcieLinkGeneration");
  fn_hu pwidth = (fn_hu)dlsym(h, "nvmlDeviceGetCurrPcieLinkWidth");
  typedef int (*fn_ls)(void *, unsigned, int *);
  typedef int (*fn_lr)(void *, unsigned, pci_t *);
  fn_ls lstate = (fn_ls)dlsym(h, "nvmlDeviceGetNvLinkState");
  fn_lr lremote = (fn_lr)dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  if (!init || !shut || !count || !handle || init() != 0) return;
  unsigned n = 0;
  void *dev[MAXG];
  int nlinks[MAXG] = {0};
  if (count(&n) == 0) {
    if (n > MAXG) n = MAXG;
    for (unsigned i = 0; i < n; i++) {
      if (handle(i, &dev[i]) != 0) { n = i; break; }
      if (name) name(dev[i], g_name[i], sizeof g_name[i]);
      pci_t p;
      if (pci && pci(dev[i], &p) == 0) snprintf(g_bus[i], sizeof g_bus[i], "%s", p.busId);
      if (pgen && pgen(dev[i], &g_pgen[i]) != 0) g_pgen[i] = 0;
      if (pwidth && pwidth(dev[i], &g_pwidth[i]) != 0) g_pwidth[i] = 0;
    }
    for (unsigned i = 0; i < n; i++)
      for (unsigned l = 0; lstate && l < 18; l++) {
        int act = 0;
        if (lstate(dev[i], l, &act) != 0) break;
        if (!act) continue;
        nlinks[i]++;
        pci_t r;
        if (lremote && lremote(dev[i], l, &r) == 0)
          for (unsigned j = 0; j < n; j++)
            if (j != i && !strcasecmp(r.busId, g_bus[j])) g_nv[i][j]++;
      }
    for (unsigned a = 0; a < n; a++)
      for (unsigned b = 0; b < n; b++) {
        if (a == b) continue;
        int lvl;
        if (anc && anc(dev[a], dev[b], &lvl) == 0) g_rel[a][b] = lvl;
        int st;
        if (!g_nv[a][b] && p2p && p2p(dev[a], dev[b], 2, &st) == 0 && st == 0) /* NVSwitch */
          g_nv[a][b] = nlinks[a] < nlinks[b] ? nlinks[a] : nlinks[b];
      }
    g_ngpus = (int)n;
  }
  shut();
}

/* The NCCL double's core gives each peer its NVML (physical) index (nd_api.c), as NCCL's
 * nvmlDev; the CUDA index, printed as cudaDev and in the line prefix, is the current device. */
int cudaGetDevice(int *device);
static int cuda_dev(void) {
  int d = 0;
  if (cudaGetDevice(&d) != 0) d = 0;
  return d;
}
#define nvml_dev(d) (d)

static int env_is(const char *name, const char *val) {
  ncclD_init_env();
  const char *v = getenv(name);
  return v && !strcasecmp(v, val);
}
static int env_on(const char *name) {
  ncclD_init_env();
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0");
}

/* NCCL_P2P_LEVEL as a path level; default PXB. -1 = P2P disabled (LOC). */
static int p2p_level(void) {
  ncclD_init_env();
  const char *v = getenv("NCCL_P2P_LEVEL");
  if (!v || !*v) return REL_PXB;
  if (!strcasecmp(v, "LOC")) return -1;
  if (!strcasecmp(v, "NVL")) return 0;
  if (!strcasecmp(v, "PIX")) return REL_PIX;
  if (!strcasecmp(v, "PXB")) return REL_PXB;
  if (!strcasecmp(v, "PHB")) return REL_PHB;
  if (!strcasecmp(v, "NODE")) return REL_NODE;
  if (!strcasecmp(v, "SYS")) return REL_SYS;
  return REL_PXB;
}

static int hopper_like(int g) {
  const char *n = g >= 0 && g < g_ngpus ? g_name[g] : "";
  return strstr(n, "H100") || strstr(n, "H200") || strstr(n, "H20") || strstr(n, "H800") || strstr(n, "B200") ||
         strstr(n, "GB200");
}

static int ib_present(void) {
  const char *v = getenv("NCCLDOUBLE_IB");
  return !(v && !strcmp(v, "0"));
}

static const char *net_choice(void) {
  if (env_on("NCCL_IB_DISABLE") || env_is("NCCL_NET", "Socket") || !ib_present()) return "Socket/0";
  return "IB/0/GDRDMA";
}

/* NVLink generation and per-link bandwidth (GB/s per direction) of GPU g, from its name. */
static void nvlink_of(int g, int *gen, double *gbps) {
  const char *n = g >= 0 && g < g_ngpus ? g_name[g] : "";
  *gen = 3; *gbps = 25;
  if (strstr(n, "B200") || strstr(n, "B100") || strstr(n, "GB200")) { *gen = 5; *gbps = 50; }
  else if (hopper_like(g)) *gen = 4;
  else if (strstr(n, "A6000") || strstr(n, "A5000") || strstr(n, "A40") || strstr(n, "3090")) *gbps = 56.25 / 4;
}

/* Writes the transport for me -> peer into buf (and, when hop is not NULL, what it runs over);
 * returns 1 when it is NET. */
static int choose(const struct ncclD_comm_view *v, int me, int peer, char *buf, size_t cap,
                  struct ndbl_hop *hop) {
  const struct ncclD_peer *a = &v->peers[me], *b = &v->peers[peer];
  struct ndbl_hop h = {0};
  int net = 0;
  int ga = nvml_dev(a->dev), gb = nvml_dev(b->dev);
  int known = ga >= 0 && gb >= 0 && ga < MAXG && gb < MAXG;
  int nv = known ? g_nv[ga][gb] : 0;
  int rel = known ? g_rel[ga][gb] : REL_PHB;
  if (known) {
    unsigned wa = g_pwidth[ga], wb = g_pwidth[gb], pa = g_pgen[ga], pb = g_pgen[gb];
    h.pcie_gen = (int)(pa && pb ? (pa < pb ? pa : pb) : pa ? pa : pb);
    h.pcie_width = (int)(wa && wb ? (wa < wb ? wa : wb) : wa ? wa : wb);
  }
  int lvl = p2p_level();
  int p2p_ok = !env_on("NCCL_P2P_DISABLE") && lvl >= 0 && (nv > 0 || (lvl > 0 && rel <= lvl));
  if (ga == gb) p2p_ok = !env_on("NCCL_P2P_DISABLE"); /* same GPU: P2P within the device */
  if (a->node != b->node) {
    snprintf(buf, cap, "NET/%s", net_choice());
    net = 1;
  } else if (p2p_ok) {
    snprintf(buf, cap, "%s", nv > 0 && !hopper_like(ga) ? "P2P/CUMEM/read" : "P2P/CUMEM");
    h.link = nv > 0 || ga == gb ? NDBL_LINK_NVLINK : NDBL_LINK_PCIE_P2P;
    h.nvlinks = ga == gb ? 18 : nv; /* within one GPU: priced as a full NVLink 4 set */
    nvlink_of(ga, &h.nvlink_gen, &h.nvlink_gbps);
  } else if (!env_on("NCCL_SHM_DISABLE")) {
    snprintf(buf, cap, "SHM/direct/direct");
    h.link = NDBL_LINK_SHM;
  } else {
    snprintf(buf, cap, "NET/%s", net_choice());
    net = 1;
  }
  if (net) h.link = strstr(net_choice(), "Socket") ? NDBL_LINK_NET_SOCKET : NDBL_LINK_NET_IB;
  if (hop) *hop = h;
  return net;
}

void ncclD_ring_link(const struct ncclD_comm_view *v, struct ndbl_hop *slowest) {
  pthread_once(&g_once, load_topology);
  double best_bw = -1, best_lat = 0;
  char via[64];
  *slowest = (struct ndbl_hop){.link = NDBL_LINK_NVLINK, .nvlinks = 18, .nvlink_gen = 4, .nvlink_gbps = 25};
  for (int r = 0; r < v->nranks && v->nranks > 1; r++) {
    struct ndbl_hop h;
    choose(v, r, (r + 1) % v->nranks, via, sizeof via, &h);
    double bw, base, step;
    ndbl_link_price(&h, &bw, &base, &step);
    if (best_bw < 0 || bw < best_bw || (bw == best_bw && base + step > best_lat)) {
      best_bw = bw;
      best_lat = base + step;
      *slowest = h;
    }
  }
}

int ncclD_hop_is_net(const struct ncclD_comm_view *v, int me, int peer) {
  pthread_once(&g_once, load_topology);
  char via[64];
  if (me < 0 || peer < 0 || me >= v->nranks || peer >= v->nranks || me == peer) return 0;
  return choose(v, me, peer, via, sizeof via, NULL);
}

static int local_gpus_all_nvlinked(const struct ncclD_comm_view *v, int *nlocal) {
  int me = v->rank, n = 0, ok = 1;
  for (int i = 0; i < v->nranks; i++) {
    if (v->peers[i].node != v->peers[me].node) continue;
    n++;
    for (int j = 0; j < v->nranks; j++) {
      if (i == j || v->peers[j].node != v->peers[me].node) continue;
      int gi = nvml_dev(v->peers[i].dev), gj = nvml_dev(v->peers[j].dev);
      if (gi == gj) continue;
      if (gi < 0 || gj < 0 || gi >= MAXG || gj >= MAXG || !g_nv[gi][gj]) ok = 0;
    }
  }
  *nlocal = n;
  return ok;
}

static unsigned long bus_int(int g) {
  if (g < 0 || g >= g_ngpus || !g_bus[g][0]) return 0x1000ul * (unsigned long)(g + 1);
  unsigned d = 0, b = 0, s = 0, f = 0;
  sscanf(g_bus[g], "%x:%x:%x.%x", &d, &b, &s, &f);
  return ((unsigned long)b << 12) | ((unsigned long)s << 4) | f;
}

void ncclD_log_init(const struct ncclD_comm_view *v) {
  pthread_once(&g_once, load_topology);
  const struct ncclD_peer *me = &v->peers[v->rank];
  int g = nvml_dev(me->dev);
  int nnodes = 0, nlocal = 0, localrank = 0;
  for (int i = 0; i < v->nranks; i++) {
    int first = 1;
    for (int k = 0; k < i; k++) first &= v->peers[k].node != v->peers[i].node;
    nnodes += first;
    if (v->peers[i].node == me->node) { if (i < v->rank) localrank++; nlocal++; }
  }
  if (!ib_present() && nnodes > 1) ncclD_info(NCCLD_INIT | NCCLD_NET, -1, "NET/IB : No device found.");
  ncclD_info(NCCLD_INIT | NCCLD_NET, -1, "Using network %s",
             env_on("NCCL_IB_DISABLE") || env_is("NCCL_NET", "Socket") || !ib_present() ? "Socket" : "IB");
  const char *api = v->api ? v->api : "ncclCommInitRank";
  if (v->parent_ptr) /* NCCL 2.28 init.cc: a split names its parent, not a commId (and has no space before "-") */
    ncclD_info(NCCLD_INIT, -1, "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p splitCount %d color %d key %d- Init START",
               api, (void *)(uintptr_t)v->comm_ptr, v->rank, v->nranks, cuda_dev(), g, bus_int(g), (void *)(uintptr_t)v->parent_ptr,
               v->split_count, v->color, v->key);
  else
    ncclD_info(NCCLD_INIT, -1, "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init START",
               api, (void *)(uintptr_t)v->comm_ptr, v->rank, v->nranks, cuda_dev(), g, bus_int(g), (unsigned long long)v->comm_hash);
  ncclD_info(NCCLD_INIT, -1, "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0",
             (void *)(uintptr_t)v->comm_ptr, v->rank, v->nranks, nnodes, nlocal, localrank);
  int nl;
  int nvls = local_gpus_all_nvlinked(v, &nl) && nl > 2 && hopper_like(g) && !env_is("NCCL_NVLS_ENABLE", "0");
  if (nvls) ncclD_info(NCCLD_INIT | NCCLD_NVLS, -1, "NVLS multicast support is available on dev %d (NVLS_NCHANNELS 16)", cuda_dev());
  else ncclD_info(NCCLD_INIT | NCCLD_NVLS, -1, "NVLS multicast support is not available on dev %d (NVLS_NCHANNELS 0)", cuda_dev());
  if (v->rank == 0) {
    int width = 1;
    for (int x = v->nranks - 1; x >= 10; x /= 10) width++;
    for (int c = 0; c < v->nchannels; c++) {
      char line[4096];
      int o = snprintf(line, sizeof line, "Channel %02d/%02d :", c, v->nchannels);
      for (int r = 0; r < v->nranks && o < (int)sizeof line - 16; r++) o += snprintf(line + o, sizeof line - (size_t)o, " %*d", width, r);
      ncclD_info(NCCLD_INIT, -1, "%s", line);
    }
  }
  {
    char line[1024];
    int o = snprintf(line, sizeof line, "Trees");
    int up = v->rank == 0 ? -1 : v->rank - 1, down = v->rank + 1 < v->nranks ? v->rank + 1 : -1;
    for (int c = 0; c < v->nchannels && o < (int)sizeof line - 40; c++)
      o += snprintf(line + o, sizeof line - (size_t)o, " [%d] %d/-1/-1->%d->%d", c, down, v->rank, up);
    ncclD_info(NCCLD_INIT, -1, "%s", line);
  }
  ncclD_info(NCCLD_INIT, -1, "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels per peer",
             v->nchannels, 0, nvls ? 16 : 0, v->nchannels, v->nchannels);
  if (v->parent_ptr)
    ncclD_info(NCCLD_INIT, -1, "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p splitCount %d color %d key %d - Init COMPLETE",
               api, (void *)(uintptr_t)v->comm_ptr, v->rank, v->nranks, cuda_dev(), g, bus_int(g), (void *)(uintptr_t)v->parent_ptr,
               v->split_count, v->color, v->key);
  else
    ncclD_info(NCCLD_INIT, -1, "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE",
               api, (void *)(uintptr_t)v->comm_ptr, v->rank, v->nranks, cuda_dev(), g, bus_int(g), (unsigned long long)v->comm_hash);
}

void ncclD_log_connect(const struct ncclD_comm_view *v) {
  pthread_once(&g_once, load_topology);
  if (v->nranks < 2) return;
  int me = v->rank, next = (me + 1) % v->nranks, prev = (me + v->nranks - 1) % v->nranks;
  const struct ncclD_peer *pm = &v->peers[me], *pn = &v->peers[next], *pp = &v->peers[prev];
  int gm = nvml_dev(pm->dev), gn = nvml_dev(pn->dev), gp = nvml_dev(pp->dev);
  char via[64];
  for (int c = 0; c < v->nchannels; c++) {
    /* receive side first, as NCCL connects recv then send */
    char rvia[64];
    if (choose(v, prev, me, rvia, sizeof rvia, NULL))
      ncclD_info(NCCLD_INIT | NCCLD_NET, -1, "Channel %02d/0 : %d[%d] -> %d[%d] [receive] via %s", c, prev, gp, me, gm, rvia);
    if (choose(v, me, next, via, sizeof via, NULL))
      ncclD_info(NCCLD_INIT | NCCLD_NET, -1, "Channel %02d/0 : %d[%d] -> %d[%d] [send] via %s", c, me, gm, next, gn, via);
    else
      ncclD_info(NCCLD_INIT | (via[0] == 'S' ? NCCLD_SHM : NCCLD_P2P), -1, "Channel %02d/0 : %d[%d] -> %d[%d] via %s",
                 c, me, gm, next, gn, via);
  }
  ncclD_info(NCCLD_INIT, -1, "Connected all rings, use ring PXN 0 GDR %d", strstr(net_choice(), "GDRDMA") ? 1 : 0);
  ncclD_info(NCCLD_INIT, -1, "Connected all trees");
}
