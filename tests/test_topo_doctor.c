/* test_topo_doctor.c — `ncclscope doctor` on traces written with include/ncclscope/encode.h
 * and ncclscope/records.h: every verdict has a scenario that makes it fire and one where it
 * must stay silent; exit codes 0 / 1 / 2 checked. Also the TOPO record round trip and the
 * topology matrix. Link peaks and thresholds: docs/REFERENCE-FIGURES.md, docs/DOCTOR.md.
 *
 * A scenario: N ranks over H hosts, one communicator, ring r -> r+1; every host has the same
 * GPU box (NVLink count between local GPUs, PCIe relationship); each rank's trace holds
 * PROCESS (host, NCCL version, NCCL_* env), COMM, TOPO_GPU/LINK, the NCCL log lines NCCL would
 * print for the chosen intra-node transport, and AllReduce calls of 64 MiB timed so that the
 * bus bandwidth and the communication share are what the scenario says. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "cmd/commands.h"
#include "ncclscope/chunk.h"
#include "ncclscope/encode.h"
#include "ncclscope/ops.h"
#include "model/topo.h"

struct scen {
  const char *name;
  int ranks, hosts;
  const char *gpu;          /* GPU name */
  int nv;                   /* NVLinks between every pair of local GPUs (0: PCIe only) */
  int rel;                  /* PCIe relationship between local GPUs */
  const char *intra;        /* "P2P/CUMEM/read", "SHM/direct/direct", ... */
  const char *inter;        /* "NET/IB/0/GDRDMA" or "NET/Socket/0" */
  const char *version;      /* "2.28.9" */
  const char *version_odd;  /* version of the last rank, NULL = same */
  const char *env;          /* "NAME=value;NAME=value" */
  double busbw;             /* GB/s of the AllReduce calls */
  double share;             /* communication share of the window */
  int ib_missing;           /* the log says NET/IB found no device */
  int no_topo;
};

static uint8_t raw[1 << 20];

static int vcode(const char *v) {
  int x = 0, y = 0, z = 0;
  sscanf(v, "%d.%d.%d", &x, &y, &z);
  return x * 10000 + y * 100 + z;
}

static void logline(struct ncs_wbuf *w, uint64_t t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logline(struct ncs_wbuf *w, uint64_t t, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  struct ncs_log_line l = { t, buf, strlen(buf) };
  ncs_enc_log_line(w, &l);
}

static int write_rank(const char *dir, const struct scen *s, int r) {
  int per = (s->ranks + s->hosts - 1) / s->hosts;
  int host = r / per, local = r % per;
  char hostname[32], path[1024];
  snprintf(hostname, sizeof hostname, "node%d", host);
  snprintf(path, sizeof path, "%s/%s-%d.ncs", dir, hostname, 1000 + r);
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, raw, sizeof raw);
  const char *ver = (s->version_odd && r == s->ranks - 1) ? s->version_odd : s->version;
  char code[16], pid[16];
  snprintf(code, sizeof code, "%d", vcode(ver));
  snprintf(pid, sizeof pid, "%d", 1000 + r);
  struct ncs_kv kv[16];
  char envbuf[512], names[8][64];
  int n = 0;
  kv[n++] = (struct ncs_kv){ "host", hostname, strlen(hostname) };
  kv[n++] = (struct ncs_kv){ "pid", pid, strlen(pid) };
  kv[n++] = (struct ncs_kv){ "nccl_version", code, strlen(code) };
  snprintf(envbuf, sizeof envbuf, "%s", s->env ? s->env : "");
  int ne = 0;
  for (char *tok = strtok(envbuf, ";"); tok && ne < 8; tok = strtok(NULL, ";")) {
    char *eq = strchr(tok, '=');
    if (!eq) continue;
    *eq = 0;
    snprintf(names[ne], sizeof names[ne], "env.%s", tok);
    kv[n++] = (struct ncs_kv){ names[ne], eq + 1, strlen(eq + 1) };
    ne++;
  }
  ncs_enc_process(&w, kv, (size_t)n);
  struct ncs_thread th = { 1, 4242, "main", 0 };
  ncs_enc_thread(&w, &th);
  struct ncs_comm c;
  memset(&c, 0, sizeof c);
  c.comm = 1; c.comm_id = 0xabcdef; c.handle = 0x5000 + (uint64_t)r; c.rank = r; c.nranks = s->ranks;
  c.device = local; c.init_op = NCS_OP_CommInitRank; c.t_enter = 1000; c.t_exit = 2000; c.thread = 1;
  ncs_enc_comm(&w, &c);
  if (!s->no_topo) {
    for (int g = 0; g < per; g++) {
      struct ncs_topo_gpu tg;
      memset(&tg, 0, sizeof tg);
      tg.index = (uint32_t)g;
      snprintf(tg.name, sizeof tg.name, "%s", s->gpu);
      snprintf(tg.bus_id, sizeof tg.bus_id, "00000000:%02X:00.0", 0x10 + g * 0x10);
      snprintf(tg.uuid, sizeof tg.uuid, "GPU-%d", g);
      tg.pcie_gen = tg.pcie_gen_max = 4;
      tg.pcie_width = tg.pcie_width_max = 16;
      tg.nvlinks = (uint32_t)(s->nv * (per > 1));
      ncs_enc_topo_gpu(&w, &tg);
    }
    for (int a = 0; a < per; a++)
      for (int b = a + 1; b < per; b++) {
        struct ncs_topo_link l = { (uint32_t)a, (uint32_t)b, (uint32_t)s->nv, (uint32_t)s->rel, 0, s->nv ? 0 : 255 };
        ncs_enc_topo_link(&w, &l);
      }
  }
  logline(&w, 3000, "%s:%d:%d [%d] NCCL INFO NCCL version %s+cuda13.0", hostname, 1000 + r, 1000 + r, local, ver);
  if (s->ib_missing) logline(&w, 3001, "%s:%d:%d [%d] NCCL INFO NET/IB : No device found.", hostname, 1000 + r, 1000 + r, local);
  logline(&w, 3002, "%s:%d:%d [%d] NCCL INFO ncclCommInitRank comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %x000 commId 0xabcdef - Init COMPLETE",
          hostname, 1000 + r, 1000 + r, local, 0x5000 + r, r, s->ranks, local, local, 0x10 + local * 0x10);
  int nx = (r + 1) % s->ranks, nx_host = nx / per, nx_local = nx % per;
  int pv = (r + s->ranks - 1) % s->ranks, pv_host = pv / per, pv_local = pv % per;
  for (int ch = 0; ch < 2; ch++) {
    if (nx_host == host)
      logline(&w, 4000, "%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via %s", hostname, 1000 + r, 1000 + r,
              local, ch, r, local, nx, nx_local, s->intra);
    else
      logline(&w, 4000, "%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via %s", hostname, 1000 + r,
              1000 + r, local, ch, r, local, nx, nx_local, s->inter);
    if (pv_host != host)
      logline(&w, 4000, "%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [receive] via %s", hostname, 1000 + r,
              1000 + r, local, ch, pv, pv_local, r, local, s->inter);
  }
  /* 20 AllReduce calls of 64 MiB (fp32): duration from busbw, gap from the share */
  double bytes = 64.0 * 1024 * 1024, nr = s->ranks;
  double dur = bytes * 2.0 * (nr - 1) / nr / s->busbw; /* ns: bytes / (GB/s) */
  double gap = dur * (1.0 / s->share - 1.0);
  struct ncs_call_delta d;
  ncs_call_delta_reset(&d);
  uint64_t t = 10000000;
  for (int i = 1; i <= 20; i++) {
    struct ncs_call call;
    memset(&call, 0, sizeof call);
    call.op = NCS_OP_AllReduce; call.thread = 1; call.tcall = (uint64_t)i; call.comm = 1; call.seq = (uint64_t)i;
    call.count = 16u << 20; call.datatype = 7; call.redop = 0; call.root = -1; call.stream = 0x77;
    call.t_enter = t; call.t_exit = t + 5000;
    ncs_enc_call(&w, &d, &call);
    struct ncs_gpu_time g = { NCS_GPU_KIND_CALL, 1, 0, (uint64_t)i, t + 6000, t + 6000 + (uint64_t)dur };
    ncs_enc_gpu_time(&w, &d, &g);
    t += (uint64_t)(dur + gap);
  }
  if (w.overflow) return -1;
  uint8_t fh[NCS_FILE_HEADER_SIZE];
  ncs_encode_file_header(fh, 1700000000000000000ull, (uint32_t)(1000 + r));
  uint32_t nrec = 0;
  { /* count records */
    const uint8_t *p = raw, *e = raw + w.len;
    while (p < e) { uint64_t ty = 0, ln = 0; ncs_get_varint(&p, e, &ty); ncs_get_varint(&p, e, &ln); p += ln; nrec++; }
  }
  size_t cap = NCS_CHUNK_BOUND(w.len);
  uint8_t *z = malloc(cap);
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  size_t zn = z ? ncs_chunk_pack(cctx, 3, z, cap, raw, w.len, nrec, 0, 0, NCS_CHUNK_F_FINAL) : 0;
  ZSTD_freeCCtx(cctx);
  FILE *f = zn ? fopen(path, "wb") : NULL;
  if (!f) { free(z); return -1; }
  fwrite(fh, 1, sizeof fh, f);
  fwrite(z, 1, zn, f);
  fclose(f);
  free(z);
  return 0;
}

static char tmpdir[256];
static char outbuf[1 << 18];

static int last_seq;

/* Runs a command function in-process with stdout captured into outbuf. */
static int capture(int (*fn)(int, char **), int argc, char **argv) {
  char outpath[600];
  snprintf(outpath, sizeof outpath, "%s/capture.out", tmpdir);
  fflush(stdout);
  int saved = dup(1);
  FILE *o = fopen(outpath, "w");
  dup2(fileno(o), 1);
  int rc = fn(argc, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  fclose(o);
  FILE *in = fopen(outpath, "r");
  size_t n = fread(outbuf, 1, sizeof outbuf - 1, in);
  outbuf[n] = 0;
  fclose(in);
  return rc;
}

/* Writes the scenario into a fresh directory, runs doctor on it, captures stdout. */
static int run_doctor(const struct scen *s, int json) {
  char dir[512];
  static int seq;
  last_seq = seq;
  snprintf(dir, sizeof dir, "%s/s%d", tmpdir, seq++);
  mkdir(dir, 0700);
  for (int r = 0; r < s->ranks; r++)
    if (write_rank(dir, s, r) != 0) return -1;
  char outpath[600];
  snprintf(outpath, sizeof outpath, "%s.out", dir);
  fflush(stdout);
  int saved = dup(1);
  FILE *o = fopen(outpath, "w");
  dup2(fileno(o), 1);
  char *argv[] = { "doctor", json ? "--json" : dir, json ? dir : NULL, NULL };
  int rc = cmd_doctor(json ? 3 : 2, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  fclose(o);
  FILE *in = fopen(outpath, "r");
  size_t n = fread(outbuf, 1, sizeof outbuf - 1, in);
  outbuf[n] = 0;
  fclose(in);
  return rc;
}

static int fired(const char *id) {
  if (getenv("NCS_DEBUG_DOCTOR")) fputs(outbuf, stderr);
  char pat[64];
  snprintf(pat, sizeof pat, "PROBLEM %s:", id);
  return strstr(outbuf, pat) != NULL;
}

/* A healthy 8-GPU NVSwitch box (H100, NV18, P2P/CUMEM at 370 GB/s busbw, docs/REFERENCE-FIGURES.md). */
static const struct scen healthy = { "healthy-nv18", 8, 1, "NVIDIA H100 80GB HBM3", 18, NCS_REL_SYS, "P2P/CUMEM", "NET/IB/0/GDRDMA",
                                     "2.28.9", NULL, NULL, 370.0, 0.3, 0, 0 };

static void verdicts(void) {
  struct scen s;
  int rc = run_doctor(&healthy, 0);
  CHECK(rc == 0 && strstr(outbuf, "healthy"), "healthy NVSwitch box: exit 0, no verdict (rc %d)", rc);
  if (rc != 0) fputs(outbuf, stdout);

  /* nvlink-unused: NV18 but SHM because NCCL_P2P_DISABLE=1 */
  s = healthy; s.intra = "SHM/direct/direct"; s.env = "NCCL_P2P_DISABLE=1"; s.busbw = 20;
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("nvlink-unused") && strstr(outbuf, "NCCL_P2P_DISABLE=1") && strstr(outbuf, "unset"),
        "NV18 + SHM with NCCL_P2P_DISABLE=1: nvlink-unused fires, names the variable");
  /* silent: PCIe-only box (NODE) where SHM is what NCCL picks */
  s = healthy; s.gpu = "NVIDIA L40S"; s.nv = 0; s.rel = NCS_REL_SYS; s.intra = "SHM/direct/direct"; s.busbw = 10; s.ranks = 4;
  rc = run_doctor(&s, 0);
  CHECK(rc == 0 && !fired("nvlink-unused") && !fired("no-nvlink"), "PCIe-only L40S box with SHM: silent (rc %d)", rc);

  /* no-nvlink: 8 H100 SXM reported without NVLink */
  s = healthy; s.nv = 0; s.rel = NCS_REL_NODE; s.intra = "P2P/CUMEM"; s.busbw = 20;
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("no-nvlink") && strstr(outbuf, "fabricmanager"), "H100 box with 0 NVLinks: no-nvlink fires");
  CHECK(!fired("nvlink-unused"), "no-nvlink box: nvlink-unused stays silent");
  s = healthy;
  run_doctor(&s, 0);
  CHECK(!fired("no-nvlink"), "NV18 box: no-nvlink silent");

  /* socket-not-ib: 2 hosts over NET/Socket with NCCL_IB_DISABLE=1 */
  s = healthy; s.ranks = 4; s.hosts = 2; s.inter = "NET/Socket/0"; s.env = "NCCL_IB_DISABLE=1"; s.busbw = 100;
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("socket-not-ib") && strstr(outbuf, "NCCL_IB_DISABLE"), "2 hosts over Socket with NCCL_IB_DISABLE=1: socket-not-ib fires");
  s = healthy; s.ranks = 4; s.hosts = 2; s.inter = "NET/Socket/0"; s.ib_missing = 1; s.busbw = 100;
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("socket-not-ib") && strstr(outbuf, "no device"), "Socket after 'NET/IB : No device found': fires");
  s = healthy; s.ranks = 4; s.hosts = 2; s.inter = "NET/IB/0/GDRDMA"; s.busbw = 100;
  rc = run_doctor(&s, 0);
  CHECK(rc == 0 && !fired("socket-not-ib"), "2 hosts over NET/IB: silent (rc %d)", rc);
  s = healthy; s.ranks = 4; s.hosts = 2; s.inter = "NET/Socket/0"; s.busbw = 100;
  rc = run_doctor(&s, 0);
  CHECK(!fired("socket-not-ib"), "Socket on a plain Ethernet cluster (no IB hint): silent");

  /* nccl-version-mismatch */
  s = healthy; s.version_odd = "2.27.3";
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("nccl-version-mismatch") && strstr(outbuf, "2.27.3") && strstr(outbuf, "2.28.9"),
        "one rank on 2.27.3: nccl-version-mismatch fires with both versions");
  rc = run_doctor(&healthy, 0);
  CHECK(!fired("nccl-version-mismatch"), "all ranks on 2.28.9: silent");

  /* low-busbw: NV18 P2P at 40 GB/s (< 25% of 450) */
  s = healthy; s.busbw = 40;
  rc = run_doctor(&s, 0);
  CHECK(rc == 1 && fired("low-busbw") && strstr(outbuf, "docs/REFERENCE-FIGURES.md") && strstr(outbuf, "450.0"),
        "NV18 at 40 GB/s busbw: low-busbw fires and cites docs/REFERENCE-FIGURES.md");
  s = healthy; s.busbw = 200;
  rc = run_doctor(&s, 0);
  CHECK(!fired("low-busbw"), "NV18 at 200 GB/s: low-busbw silent");

  /* comm-bound */
  s = healthy; s.share = 0.8;
  rc = run_doctor(&s, 0);
  /* 20 calls of duration D with gaps D/4: 20D / (20D + 19D/4) = 81% of the window */
  CHECK(rc == 1 && fired("comm-bound") && strstr(outbuf, "(81%") && strstr(outbuf, "8 of 8 ranks"),
        "communication 81%% of the window on every rank: comm-bound fires once, 8 of 8 ranks");
  s = healthy; s.share = 0.3;
  run_doctor(&s, 0);
  CHECK(!fired("comm-bound"), "communication 30%%: comm-bound silent");

  /* JSON */
  s = healthy; s.intra = "SHM/direct/direct"; s.env = "NCCL_P2P_DISABLE=1";
  rc = run_doctor(&s, 1);
  CHECK(rc == 1 && strstr(outbuf, "\"healthy\": false") && strstr(outbuf, "\"id\": \"nvlink-unused\"") &&
        strstr(outbuf, "\"next_step\""), "--json: verdict objects with id and next_step");
  rc = run_doctor(&healthy, 1);
  CHECK(rc == 0 && strstr(outbuf, "\"healthy\": true") && strstr(outbuf, "\"verdicts\": []"), "--json healthy");

  /* report: the same traces through the analysis extension point */
  s = healthy; s.intra = "SHM/direct/direct"; s.env = "NCCL_P2P_DISABLE=1";
  run_doctor(&s, 0);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/s%d", tmpdir, last_seq);
  char *ra[] = { "report", dir, NULL };
  rc = capture(cmd_report, 2, ra);
  CHECK(rc == 0 && strstr(outbuf, "NV18>SHM") && strstr(outbuf, "communicator 8 ranks (ncclCommInitRank): 16 connections (P2P 0, SHM 16"),
        "report text: transport matrix and topology with NV18>SHM overlay");
  char *rj[] = { "report", "--json", dir, NULL };
  rc = capture(cmd_report, 3, rj);
  CHECK(rc == 0 && strstr(outbuf, "\"transports\": [") && strstr(outbuf, "\"transport\": \"SHM\"") &&
        strstr(outbuf, "\"topology\": [") && strstr(outbuf, "\"cell\": \"NV18\""),
        "report --json: ranks[].transports[] and topology[]");
}

static void bad_input(void) {
  char *a1[] = { "doctor", "/nonexistent/ncclscope-doctor", NULL };
  fflush(stdout);
  int saved = dup(2);
  FILE *null = fopen("/dev/null", "w");
  dup2(fileno(null), 2);
  int rc1 = cmd_doctor(2, a1);
  char *a2[] = { "doctor", NULL };
  int rc2 = cmd_doctor(1, a2);
  char *a3[] = { "doctor", "--bogus", tmpdir, NULL };
  int rc3 = cmd_doctor(3, a3);
  char empty[600];
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  mkdir(empty, 0700);
  char *a4[] = { "doctor", empty, NULL };
  int rc4 = cmd_doctor(2, a4);
  dup2(saved, 2);
  close(saved);
  fclose(null);
  CHECK(rc1 == 4 && rc2 == 2 && rc3 == 2 && rc4 == 4, "bad usage exits 2, unreadable input 4 (missing path %d, no path %d, bad option %d, empty dir %d)", rc1, rc2, rc3, rc4);
}

static void topo_roundtrip(void) {
  uint8_t buf[512];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, buf, sizeof buf);
  struct ncs_topo_gpu g = { 3, "NVIDIA A100-SXM4-80GB", "00000000:1A:00.0", "GPU-x", 4, 16, 4, 16, 12 };
  ncs_enc_topo_gpu(&w, &g);
  struct ncs_topo_link l = { 1, 3, 12, NCS_REL_SYS, 0, 0 };
  ncs_enc_topo_link(&w, &l);
  const uint8_t *p = buf, *e = buf + w.len;
  uint64_t ty = 0, ln = 0;
  struct ncs_topo t;
  ncs_topo_init(&t, "h");
  int ok = 1;
  while (p < e) {
    ok &= ncs_get_varint(&p, e, &ty) == 0 && ncs_get_varint(&p, e, &ln) == 0;
    ok &= ncs_topo_add_raw(&t, (uint32_t)ty, p, (size_t)ln) == 0;
    p += ln;
  }
  char c[16];
  CHECK(ok && t.ngpus == 4 && t.have_gpu[3] && !strcmp(t.gpu[3].name, "NVIDIA A100-SXM4-80GB") && t.gpu[3].nvlinks == 12 &&
        !strcmp(ncs_topo_cell(&t, 1, 3, c, sizeof c), "NV12") && !strcmp(ncs_topo_cell(&t, 3, 1, c, sizeof c), "NV12"),
        "TOPO_GPU/TOPO_LINK round trip, NV12 symmetric");
  CHECK(ncs_topo_find_bus(&t, "1a000") == 3 && ncs_topo_find_bus(&t, "0000:1a:00.0") == 3 && ncs_topo_find_bus(&t, "2b000") == -1,
        "NCCL busId 1a000 maps to NVML bus id 00000000:1A:00.0");
  const char *why;
  double pk = ncs_topo_peak_gbps(&t, 1, 3, &why);
  CHECK(pk == 300.0, "NV12 peak is 300 GB/s (A100, docs/REFERENCE-FIGURES.md) got %.1f", pk);
  /* a body cut in the middle of a string is damage, not a crash; a short body reads as defaults */
  struct ncs_rbuf r;
  struct ncs_topo_gpu g2;
  uint8_t cut[] = { 1, 10, 'a' };
  CHECK(ncs_dec_topo_gpu(ncs_rbuf_on(&r, cut, sizeof cut), &g2) == -1, "cut string is reported");
  struct ncs_topo_link l2;
  uint8_t shortb[] = { 0, 1, 4 };
  CHECK(ncs_dec_topo_link(ncs_rbuf_on(&r, shortb, sizeof shortb), &l2) == 0 && l2.nvlinks == 4 && l2.pcie == NCS_REL_UNKNOWN,
        "short TOPO_LINK body: missing pcie reads as unknown");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/ncs-doctor-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) { printf("FAIL: mkdtemp\n"); return 1; }
  topo_roundtrip();
  verdicts();
  bad_input();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (getenv("NCS_KEEP")) { printf("kept %s\n", tmpdir); return check_done(); }
  if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
  return check_done();
}
