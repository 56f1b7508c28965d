/* synth.c — writes synthetic traces in the real format (see synth.h for the contract).
 *
 * Model. True time g (ns since the epoch) is the same everywhere. Collective k starts at
 * base[k]; rank r enters at base[k] + jitter(r,k) (+ the straggler's delay on the collectives
 * it hits), and every rank's GPU interval ends at end[k] = base[k] + jitter + delay + transfer,
 * where transfer = latency + bus bytes / bandwidth of the transport. Host h reads
 * monotonic = (g - boot_h) * (1 + drift_h) and realtime = g + ntp_h; CLOCK pairs are written at
 * the start and at the end of every chunk, as the shim does at each flush. Random numbers are
 * hashes of (seed, what, rank, k), so ranks can be generated in any order, in parallel. */
#include "io/synth.h"
#include "base/mix.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "ncclscope/chunk.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define SYN_EPOCH_NS 1764000000000000000ull /* 2025-11-24, a plausible run date */

static uint64_t mix64(uint64_t x) { return ncs_mix64(x + 0x9e3779b97f4a7c15ull); } /* splitmix64's step */
/* Uniform in [0,1) from (seed, tag, a, b). */
static double urand(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b) {
  uint64_t h = mix64(seed ^ mix64(tag ^ mix64(a ^ mix64(b))));
  return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

void ncs_synth_defaults(struct ncs_synth_cfg *c) {
  memset(c, 0, sizeof *c);
  c->ranks = 8; c->hosts = 2; c->calls = 1000; c->seed = 1;
  c->gap_us = 200; c->jitter_us = 5; c->drift_ppm = 20; c->ntp_us = 10;
  c->straggler = -1; c->straggler_us = 0; c->straggler_frac = 0;
  c->missing_rank = -1; c->mismatch_rank = -1; c->slow_host = -1;
  c->gpu = 1; c->transport = "P2P"; c->host_prefix = "node"; c->cmdline = "python3 train.py";
  c->chunk_calls = 4096; c->threads = 2;
}

/* ---- the call pattern: a DDP-like step of gradient buckets plus an all-gather and a bcast ---- */
struct pat { int op; uint64_t count; int dtype; };
static const struct pat PATTERN[] = {
  {NCS_OP_AllReduce, 6553600, ncclFloat32},  /* 25 MiB bucket */
  {NCS_OP_AllReduce, 6553600, ncclFloat32},
  {NCS_OP_AllReduce, 1048576, ncclFloat32},  /* 4 MiB */
  {NCS_OP_AllReduce, 262144, ncclBfloat16},  /* 512 KiB */
  {NCS_OP_AllGather, 131072, ncclFloat32},   /* 512 KiB per rank */
  {NCS_OP_AllReduce, 16384, ncclFloat32},    /* 64 KiB */
  {NCS_OP_AllReduce, 256, ncclFloat32},      /* 1 KiB */
  {NCS_OP_Broadcast, 1024, ncclInt64},       /* 8 KiB */
};
#define NPAT ((long)(sizeof PATTERN / sizeof PATTERN[0]))

static double bw_gbps(const char *t) { /* per-rank bus bandwidth the synthetic link gives */
  if (!strcmp(t, "SHM")) return 20;
  if (!strcmp(t, "NET")) return 10;
  return 200;
}

struct model {
  const struct ncs_synth_cfg *c;
  uint64_t *base, *end;       /* per collective, true ns */
  int per_host;
};

static int straggles(const struct ncs_synth_cfg *c, long k) {
  return c->straggler >= 0 && urand(c->seed, 7, 0, (uint64_t)k) < c->straggler_frac;
}
static uint64_t enter_at(const struct model *m, int r, long k) {
  const struct ncs_synth_cfg *c = m->c;
  double j = urand(c->seed, 3, (uint64_t)r, (uint64_t)k) * c->jitter_us * 1e3;
  if (r == c->straggler && straggles(c, k)) j += c->straggler_us * 1e3;
  return m->base[k] + (uint64_t)j;
}
static uint64_t bytes_of(const struct pat *p) { return p->count * ncclscope_datatype_size(p->dtype); }

static int model_build(struct model *m, const struct ncs_synth_cfg *c) {
  m->c = c;
  m->per_host = (c->ranks + c->hosts - 1) / c->hosts;
  m->base = malloc(sizeof(uint64_t) * (size_t)(c->calls + 1));
  m->end = malloc(sizeof(uint64_t) * (size_t)(c->calls + 1));
  if (!m->base || !m->end) return -1;
  const char *xport = c->hosts > 1 ? "NET" : c->transport;
  double bw = bw_gbps(xport) / (1.0 + c->slow_pct / 100.0);
  uint64_t t = SYN_EPOCH_NS + 50000000ull; /* 50 ms after start: init done */
  int n = c->ranks;
  for (long k = 0; k < c->calls; k++) {
    const struct pat *p = &PATTERN[k % NPAT];
    double busbytes = (double)bytes_of(p);
    if (p->op == NCS_OP_AllReduce) busbytes *= 2.0 * (n - 1) / n;
    else if (p->op == NCS_OP_AllGather) busbytes *= (n - 1);
    double xfer = 8000.0 + busbytes / bw; /* ns: 8 us latency + bytes / (GB/s) */
    xfer *= 1.0 + (urand(c->seed, 23, 0, (uint64_t)k) * 2 - 1) * c->noise_pct / 100.0;
    double late = c->jitter_us * 1e3 + (straggles(c, k) ? c->straggler_us * 1e3 : 0);
    m->base[k] = t;
    m->end[k] = t + (uint64_t)(late + xfer);
    t = m->end[k] + (uint64_t)(c->gap_us * 1e3 * (k % NPAT == NPAT - 1 ? 4 : 1));
  }
  m->base[c->calls] = m->end[c->calls] = t;
  return 0;
}

uint64_t ncs_synth_true_enter(const struct ncs_synth_cfg *c, int rank, long k) {
  struct model m;
  memset(&m, 0, sizeof m);
  uint64_t v = 0;
  if (model_build(&m, c) == 0) v = enter_at(&m, rank, k);
  free(m.base); free(m.end);
  return v;
}

/* ---- host clocks ---- */
struct hclock { uint64_t boot; double drift; int64_t ntp; };
static struct hclock host_clock(const struct ncs_synth_cfg *c, int h) {
  struct hclock hc;
  hc.boot = SYN_EPOCH_NS - (uint64_t)(1000 + 37 * h) * 1000000000ull;
  hc.drift = (urand(c->seed, 11, (uint64_t)h, 0) * 2 - 1) * c->drift_ppm * 1e-6;
  hc.ntp = (int64_t)((urand(c->seed, 13, (uint64_t)h, 0) * 2 - 1) * c->ntp_us * 1e3);
  return hc;
}
int64_t ncs_synth_host_ntp_ns(const struct ncs_synth_cfg *c, int host) { return host_clock(c, host).ntp; }

static uint64_t mono(const struct hclock *hc, uint64_t g) {
  long double d = (long double)(g - hc->boot);
  return (uint64_t)llroundl(d * (1.0L + hc->drift));
}
static uint64_t real(const struct hclock *hc, uint64_t g) { return (uint64_t)((int64_t)g + hc->ntp); }

/* ---- a chunk writer over encode.h ---- */
struct wr {
  FILE *f;
  uint8_t *raw; size_t len, cap;
  uint32_t nrec;
  uint64_t chunk;
  void *zbuf; size_t zcap;
  ZSTD_CCtx *cctx;
  struct ncs_call_delta delta;
  int err;
};
static uint8_t *need(struct wr *w, size_t n) {
  if (w->len + n > w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 1 << 16;
    while (nc < w->len + n) nc *= 2;
    uint8_t *p = realloc(w->raw, nc);
    if (!p) { w->err = 1; return NULL; }
    w->raw = p; w->cap = nc;
  }
  return w->raw + w->len;
}
/* Appends the record encoded in `b` (a whole record from an ncs_enc_* function). */
static void put(struct wr *w, const struct ncs_wbuf *b) {
  if (b->overflow) { w->err = 1; return; }
  uint8_t *p = need(w, b->len);
  if (!p) return;
  memcpy(p, b->buf, b->len);
  w->len += b->len;
  w->nrec++;
}
#define WBUF(name) uint8_t name##_mem_[2048]; struct ncs_wbuf name; ncs_wbuf_init(&name, name##_mem_, sizeof name##_mem_)

static void flush(struct wr *w, int final) {
  if (w->err || (!w->nrec && !final)) return;
  size_t bound = NCS_CHUNK_BOUND(w->len);
  if (bound > w->zcap) {
    free(w->zbuf);
    w->zbuf = malloc(bound); w->zcap = bound;
    if (!w->zbuf) { w->err = 1; return; }
  }
  size_t z = ncs_chunk_pack(w->cctx, 1, w->zbuf, w->zcap, w->raw, w->len, w->nrec, w->chunk++, 0,
                            final ? NCS_CHUNK_F_FINAL : 0);
  if (!z || fwrite(w->zbuf, 1, z, w->f) != z) w->err = 1;
  w->len = 0; w->nrec = 0;
  ncs_call_delta_reset(&w->delta);
}

static void rec_clock(struct wr *w, const struct hclock *hc, uint64_t g) {
  WBUF(b);
  struct ncs_clock ck = {.realtime_ns = real(hc, g), .monotonic_ns = mono(hc, g), .uncertainty_ns = 40};
  ncs_enc_clock(&b, &ck);
  put(w, &b);
}
static void rec_call(struct wr *w, const struct ncs_call *c) {
  uint8_t *p = need(w, NCS_CALL_MAX);
  if (!p) return;
  w->len += ncs_encode_call(p, &w->delta, c);
  w->nrec++;
}

static void sanitize(char *s) {
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.')) *s = '_';
}

static int write_rank(const struct model *m, const char *dir, int r, char *err, int errlen) {
  const struct ncs_synth_cfg *c = m->c;
  int h = r / m->per_host, local = r % m->per_host;
  struct hclock hc = host_clock(c, h);
  char host[256], fname[300], path[4096];
  snprintf(host, sizeof host, "%s%03d", c->host_prefix, h);
  uint32_t pid = 10000u + (uint32_t)r;
  snprintf(fname, sizeof fname, "%s-%u.ncs", host, pid);
  sanitize(fname);
  snprintf(path, sizeof path, "%s/synth-r%05d-%s", dir, r, fname);
  struct wr w;
  memset(&w, 0, sizeof w);
  w.f = fopen(path, "wb");
  w.cctx = ZSTD_createCCtx();
  if (!w.f || !w.cctx) {
    snprintf(err, (size_t)errlen, "%.400s: %s", path, strerror(errno));
    if (w.f) fclose(w.f);
    ZSTD_freeCCtx(w.cctx);
    return -1;
  }
  uint64_t g0 = SYN_EPOCH_NS;
  uint8_t fh[NCS_FILE_HEADER_SIZE];
  ncs_encode_file_header(fh, real(&hc, g0), pid);
  if (fwrite(fh, 1, sizeof fh, w.f) != sizeof fh) w.err = 1;

  { /* PROCESS */
    char cmd[512], vpid[24], vrt[24], vmo[24], vr[16], vn[16], vl[16];
    snprintf(cmd, sizeof cmd, "%s", c->cmdline ? c->cmdline : "");
    size_t cmdlen = strlen(cmd);
    for (size_t i = 0; i < cmdlen; i++) if (cmd[i] == ' ') cmd[i] = 0; /* NUL-separated args */
    snprintf(vpid, sizeof vpid, "%u", pid);
    snprintf(vrt, sizeof vrt, "%llu", (unsigned long long)real(&hc, g0));
    snprintf(vmo, sizeof vmo, "%llu", (unsigned long long)mono(&hc, g0));
    snprintf(vr, sizeof vr, "%d", r);
    snprintf(vn, sizeof vn, "%d", c->ranks);
    snprintf(vl, sizeof vl, "%d", local);
#define KV(k, v) {k, v, strlen(v)}
    struct ncs_kv kv[] = {
      KV("host", host), KV("pid", vpid), KV("ppid", "9999"), {"cmdline", cmd, cmdlen},
      KV("shim_version", "synth"), KV("format_version", "1.0"), KV("nccl_version", "22809"),
      KV("clock_realtime_ns", vrt), KV("clock_monotonic_ns", vmo), KV("env.RANK", vr),
      KV("env.WORLD_SIZE", vn), KV("env.LOCAL_RANK", vl), KV("callsite_depth", "0"),
    };
#undef KV
    WBUF(b);
    ncs_enc_process(&b, kv, sizeof kv / sizeof kv[0]);
    put(&w, &b);
  }
  {
    WBUF(b);
    struct ncs_thread t = {.thread = 1, .tid = pid + 1, .name = "main"};
    ncs_enc_thread(&b, &t);
    put(&w, &b);
  }
  rec_clock(&w, &hc, g0);
  /* the host's GPUs as NVML shows them: an NVSwitch box (NV18 between every pair) when the
   * intra-host transport is P2P, else PCIe only (two sockets: NODE within, SYS across) */
  {
    int ngpu = m->per_host, nv = !strcmp(c->transport, "P2P");
    for (int gi = 0; gi < ngpu && gi < 64; gi++) {
      struct ncs_topo_gpu g;
      memset(&g, 0, sizeof g);
      g.index = (uint32_t)gi;
      snprintf(g.name, sizeof g.name, "%s", nv ? "NVIDIA H100 80GB HBM3" : "NVIDIA L40S");
      snprintf(g.bus_id, sizeof g.bus_id, "00000000:%02X:00.0", 0x18 + 0x10 * gi);
      snprintf(g.uuid, sizeof g.uuid, "GPU-synth-%d-%d", h, gi);
      g.pcie_gen = g.pcie_gen_max = nv ? 5 : 4;
      g.pcie_width = g.pcie_width_max = 16;
      g.nvlinks = nv ? 18 : 0;
      WBUF(b);
      ncs_enc_topo_gpu(&b, &g);
      put(&w, &b);
    }
    for (int a = 0; a < ngpu && a < 64; a++)
      for (int bb = a + 1; bb < ngpu && bb < 64; bb++) {
        struct ncs_topo_link l = {.a = (uint32_t)a, .b = (uint32_t)bb, .nvlinks = nv ? 18 : 0,
                                  .pcie = (a < ngpu / 2) == (bb < ngpu / 2) ? NCS_REL_NODE : NCS_REL_SYS,
                                  .p2p_read = 0, .p2p_nvlink = nv ? 0 : 255};
        WBUF(b);
        ncs_enc_topo_link(&b, &l);
        put(&w, &b);
      }
  }
  uint64_t comm_id = mix64(c->seed ^ 0x636f6d6dull);
  uint64_t tinit = g0 + 1000000ull + (uint64_t)r * 1000ull;
  {
    WBUF(b);
    struct ncs_comm cm = {.comm = 1, .comm_id = comm_id, .handle = 0x7f0000001000ull + (uint64_t)r * 64,
                          .rank = r, .nranks = c->ranks, .device = local, .init_op = NCS_OP_CommInitRank,
                          .t_enter = mono(&hc, tinit), .t_exit = mono(&hc, tinit + 30000000ull), .thread = 1};
    ncs_enc_comm(&b, &cm);
    put(&w, &b);
  }
  /* optional second communicator: the ranks of this host (a CommSplit by host) */
  int host_n = c->ranks - h * m->per_host < m->per_host ? c->ranks - h * m->per_host : m->per_host;
  uint64_t host_comm_id = mix64(c->seed ^ 0x686f7374ull ^ mix64((uint64_t)h + 1));
  if (c->host_comms) {
    WBUF(b);
    struct ncs_comm cm = {.comm = 2, .comm_id = host_comm_id, .handle = 0x7f0000002000ull + (uint64_t)r * 64,
                          .rank = local, .nranks = host_n, .device = local, .init_op = NCS_OP_CommSplit,
                          .parent_id = comm_id, .t_enter = mono(&hc, tinit + 31000000ull),
                          .t_exit = mono(&hc, tinit + 32000000ull), .thread = 1};
    ncs_enc_comm(&b, &cm);
    put(&w, &b);
  }
  /* transport lines, as NCCL prints them (ring neighbour; another host via the network) */
  if (c->ranks > 1) {
    int peer = (r + 1) % c->ranks, ph = peer / m->per_host;
    char line[512];
    for (int ch = 0; ch < 2; ch++) {
      const char *via = ph != h ? "NET/IB/0/GDRDMA" : !strcmp(c->transport, "SHM") ? "SHM/direct/direct"
                        : !strcmp(c->transport, "NET") ? "NET/Socket/0" : "P2P/CUMEM/read";
      int n = snprintf(line, sizeof line, "%s:%u:%u [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via %s",
                       host, pid, pid + 1, local, ch, r, local, peer, peer % m->per_host, via);
      if (n < 0) n = 0;
      if (n >= (int)sizeof line) n = (int)sizeof line - 1;
      WBUF(b);
      struct ncs_log_line ll = {.t = mono(&hc, tinit + 20000000ull), .line = line, .len = (size_t)n};
      ncs_enc_log_line(&b, &ll);
      put(&w, &b);
    }
  }
  long stop = c->calls;
  int hang = 0;
  if (c->missing_rank >= 0 && c->missing_seq >= 1 && c->missing_seq <= c->calls) {
    hang = 1;
    stop = r == c->missing_rank ? c->missing_seq - 1 : c->missing_seq;
  }
  int inchunk = 0;
  uint64_t stream = 0x7f00a0000000ull + (uint64_t)local * 0x1000;
  uint64_t tcall = 0, seq2 = 0;
  for (long k = 0; k < stop && !w.err; k++) {
    const struct pat *p = &PATTERN[k % NPAT];
    uint64_t e = enter_at(m, r, k);
    uint64_t dur = 3000 + (uint64_t)(urand(c->seed, 17, (uint64_t)r, (uint64_t)k) * 2000);
    struct ncs_call call = {
      .op = (uint32_t)p->op, .thread = 1, .comm = 1, .datatype = (uint32_t)p->dtype,
      .redop = p->op == NCS_OP_AllReduce ? ncclSum : 255, .root = p->op == NCS_OP_Broadcast ? 0 : -1,
      .tcall = ++tcall, .seq = (uint64_t)k + 1, .count = p->count, .stream = stream,
      .t_enter = mono(&hc, e)};
    call.t_exit = mono(&hc, e + dur);
    if (r == c->mismatch_rank && k + 1 == c->mismatch_seq) call.count *= 2;
    rec_call(&w, &call);
    int done = !(hang && k + 1 == stop && r != c->missing_rank); /* a hung collective never ends */
    if (c->gpu && done) {
      uint64_t gs = e + dur + 2000, ge = m->end[k] + (uint64_t)(urand(c->seed, 19, (uint64_t)r, (uint64_t)k) * 1000);
      if (ge <= gs) ge = gs + 1000;
      if (h == c->slow_host) ge = gs + (uint64_t)((double)(ge - gs) * (1.0 + c->slow_host_pct / 100.0)); /* a slow link */
      WBUF(b);
      struct ncs_gpu_time gt = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = call.tcall,
                                .gpu_start = mono(&hc, gs), .gpu_end = mono(&hc, ge)};
      ncs_enc_gpu_time(&b, &w.delta, &gt);
      put(&w, &b);
    }
    if (c->host_comms && done && k % NPAT == NPAT - 1) { /* a small all-reduce among the host's ranks */
      uint64_t base = m->end[k] + 10000, he = base + (uint64_t)(urand(c->seed, 29, (uint64_t)r, (uint64_t)k) * 5000);
      struct ncs_call hc2 = {.op = NCS_OP_AllReduce, .thread = 1, .comm = 2, .datatype = ncclFloat32, .redop = ncclSum,
                             .root = -1, .tcall = ++tcall, .seq = ++seq2, .count = 16384, .stream = stream,
                             .t_enter = mono(&hc, he), .t_exit = mono(&hc, he + 3000)};
      rec_call(&w, &hc2);
      if (c->gpu) {
        WBUF(b);
        struct ncs_gpu_time gt = {.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = hc2.tcall,
                                  .gpu_start = mono(&hc, he + 5000), .gpu_end = mono(&hc, base + 30000)};
        ncs_enc_gpu_time(&b, &w.delta, &gt);
        put(&w, &b);
      }
    }
    if (++inchunk >= c->chunk_calls) {
      rec_clock(&w, &hc, m->end[k] + 5000);
      flush(&w, 0);
      inchunk = 0;
    }
  }
  uint64_t gend = stop > 0 ? m->end[stop - 1] + 100000 : g0 + 60000000ull;
  if (!hang) {
    WBUF(b);
    struct ncs_comm_end ce = {.comm = 1, .op = NCS_OP_CommDestroy, .thread = 1,
                              .t_enter = mono(&hc, gend), .t_exit = mono(&hc, gend + 200000)};
    ncs_enc_comm_end(&b, &ce);
    put(&w, &b);
    if (c->host_comms) {
      WBUF(b2);
      struct ncs_comm_end ce2 = {.comm = 2, .op = NCS_OP_CommDestroy, .thread = 1,
                                 .t_enter = mono(&hc, gend - 50000), .t_exit = mono(&hc, gend - 40000)};
      ncs_enc_comm_end(&b2, &ce2);
      put(&w, &b2);
    }
  }
  rec_clock(&w, &hc, gend + 300000);
  flush(&w, !hang); /* a hung job was killed: its last chunk lacks the FINAL flag */
  int rc = w.err ? -1 : 0;
  if (fclose(w.f) != 0) rc = -1;
  if (rc) snprintf(err, (size_t)errlen, "%.400s: write failed", path);
  free(w.raw); free(w.zbuf); ZSTD_freeCCtx(w.cctx);
  return rc;
}

struct job { const struct model *m; const char *dir; int next, failed; pthread_mutex_t mu; char err[512]; };
static void *worker(void *arg) {
  struct job *j = arg;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    int r = j->failed ? j->m->c->ranks : j->next++;
    pthread_mutex_unlock(&j->mu);
    if (r >= j->m->c->ranks) return NULL;
    char err[512];
    if (write_rank(j->m, j->dir, r, err, sizeof err)) {
      pthread_mutex_lock(&j->mu);
      if (!j->failed) snprintf(j->err, sizeof j->err, "%s", err);
      j->failed = 1;
      pthread_mutex_unlock(&j->mu);
    }
  }
}

int ncs_synth_write(const struct ncs_synth_cfg *c, const char *dir, char *err, int errlen) {
  if (c->ranks < 1 || c->hosts < 1 || c->hosts > c->ranks || c->calls < 0 || c->chunk_calls < 1) {
    snprintf(err, (size_t)errlen, "synth: bad configuration (ranks %d, hosts %d, calls %ld)", c->ranks, c->hosts, c->calls);
    return -1;
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, (size_t)errlen, "%s: %s", dir, strerror(errno));
    return -1;
  }
  struct model m;
  memset(&m, 0, sizeof m);
  if (model_build(&m, c)) { snprintf(err, (size_t)errlen, "synth: out of memory"); free(m.base); free(m.end); return -1; }
  struct job j = {.m = &m, .dir = dir};
  pthread_mutex_init(&j.mu, NULL);
  int nt = c->threads < 1 ? 1 : c->threads > 64 ? 64 : c->threads;
  pthread_t th[64];
  int started = 0;
  for (int i = 0; i < nt; i++)
    if (pthread_create(&th[i], NULL, worker, &j) == 0) started++; else break;
  if (!started) worker(&j);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&j.mu);
  free(m.base); free(m.end);
  if (j.failed) { snprintf(err, (size_t)errlen, "%s", j.err); return -1; }
  return 0;
}
