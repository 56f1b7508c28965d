/* doctor.c — the doctor's checks (doctor.h, docs/DOCTOR.md lists them with their thresholds):
 * each looks at the facts of every process of the job and adds a verdict with its evidence
 * and a next step. No output here: render/doctor_render.c prints verdicts as text, JSON or
 * HTML. Never exits from inside a check. */
#include "analysis/doctor.h"
#include "analysis/headline.h"
#include "analysis/straggler.h"
#include "model/rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static struct ncs_verdict *add_verdict(struct ncs_doctor *d, const char *id, const char *title, int problem) {
  if (d->nv == d->cap) {
    int nc = d->cap ? d->cap * 2 : 8;
    struct ncs_verdict *n = realloc(d->v, (size_t)nc * sizeof *n);
    if (!n) return NULL;
    d->v = n;
    d->cap = nc;
  }
  struct ncs_verdict *v = &d->v[d->nv++];
  memset(v, 0, sizeof *v);
  v->id = id;
  v->title = title;
  v->problem = problem;
  return v;
}

static void evidence(struct ncs_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(struct ncs_verdict *v, const char *fmt, ...) {
  if (v->nevidence >= NCS_VERDICT_EVIDENCE) { v->more++; return; }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->evidence[v->nevidence++], sizeof v->evidence[0], fmt, ap);
  va_end(ap);
}

/* ---- job-level lookups ---- */

static int version_code_of(const struct ncs_dfacts *f) {
  if (f->version_code[0]) return atoi(f->version_code);
  for (int i = 0; i < f->log.nvers; i++) if (f->log.vers[i].code) return f->log.vers[i].code;
  return 0;
}

/* The topology of host h (the first process of that host that recorded one). */
static const struct ncs_topo *topo_of_host(const struct ncs_doctor *d, const char *host) {
  for (int i = 0; i < d->n; i++)
    if (d->f[i]->topo && !strcmp(d->f[i]->host, host)) return d->f[i]->topo;
  return NULL;
}

/* The file whose process is `rank` of communicator `comm_id` (0: any communicator). */
static const struct ncs_dfacts *file_of_rank(const struct ncs_doctor *d, int rank) {
  for (int i = 0; i < d->n; i++) {
    if (ncs_dfacts_holds(d->f[i], rank, NULL)) return d->f[i];
  }
  return NULL;
}

static int all_digits(const char *s) {
  if (!*s) return 0;
  for (; *s; s++) if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* NVML index of a process's CUDA device, through CUDA_VISIBLE_DEVICES when it lists indexes. */
static int nvml_of_cuda(const struct ncs_dfacts *f, int cuda_dev) {
  const char *cvd = ncs_dfacts_env(f, "CUDA_VISIBLE_DEVICES");
  if (cuda_dev < 0) return -1;
  if (!cvd || !*cvd) return cuda_dev;
  int idx = 0;
  for (const char *p = cvd; *p;) {
    char tok[32];
    size_t k = 0;
    while (*p && *p != ',' && k < sizeof tok - 1) tok[k++] = *p++;
    tok[k] = 0;
    if (*p == ',') p++;
    if (idx++ == cuda_dev) return all_digits(tok) ? atoi(tok) : -1;
  }
  return -1;
}

/* NVML index on the printing host of rank `rank` printed with bracket text `tag` by process f. */
static int gpu_of(const struct ncs_doctor *d, const struct ncs_dfacts *f, const struct ncs_topo *t, int rank, const char *tag) {
  if (tag && tag[0]) {
    int vc = version_code_of(f);
    if (vc >= 21803 && all_digits(tag)) return atoi(tag); /* nvmlDev since 2.18.3 */
    int g = ncs_topo_find_bus(t, tag);
    if (g >= 0) return g;
    if (vc && vc < 2500 && all_digits(tag)) return nvml_of_cuda(f, atoi(tag)); /* 2.3/2.4: cudaDev */
  }
  const struct ncs_dfacts *o = file_of_rank(d, rank);
  if (!o || strcmp(o->node, f->node)) return -1;
  int dev = -1;
  return ncs_dfacts_holds(o, rank, &dev) ? nvml_of_cuda(o, dev) : -1;
}

/* 1 when `rank`'s process runs on the same node as f's. */
static int rank_on_node(const struct ncs_doctor *d, int rank, const struct ncs_dfacts *f) {
  const struct ncs_dfacts *o = file_of_rank(d, rank);
  return o && !strcmp(o->node, f->node);
}

static void env_summary(const struct ncs_dfacts *f, char *buf, size_t cap, const char *const *names) {
  buf[0] = 0;
  for (int i = 0; names[i]; i++) {
    const char *v = ncs_dfacts_env(f, names[i]);
    if (!v) continue;
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l, "%s%s=%s", l ? " " : "", names[i], v);
  }
}

/* ---- one finding for many ranks ---- */

/* Adds process f to verdict v's blamed set: every rank it holds in its primary communicator
 * (or its launcher rank), and one per-process figure `value` with its detail line. Returns
 * the number of ranks added (0 out of memory). */
static int blame(struct ncs_verdict *v, const struct ncs_dfacts *f, double value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int blame(struct ncs_verdict *v, const struct ncs_dfacts *f, double value, const char *fmt, ...) {
  int nr, added = 0, first = -1;
  uint64_t id;
  int r = ncs_dfacts_rank(f, &nr, &id);
  for (int i = 0; r >= 0 && i < f->ncomms; i++) {
    const struct ncs_dcomm *c = &f->comms[i];
    if (c->comm_id != id || c->nranks != nr) continue;
    if (ncs_ranks_add(&v->ranks, c->rank) == 0) added++;
    if (first < 0 || c->rank < first) first = c->rank;
  }
  if (!added && ncs_ranks_add(&v->ranks, r) == 0) { added = 1; first = r; }
  if (v->nper % 64 == 0) {
    struct ncs_vrank *p = realloc(v->per, (size_t)(v->nper + 64) * sizeof *p);
    if (!p) return added;
    v->per = p;
  }
  struct ncs_vrank *e = &v->per[v->nper++];
  e->rank = first;
  e->value = value;
  snprintf(e->host, sizeof e->host, "%s", f->host);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->line, sizeof e->line, fmt, ap);
  va_end(ap);
  return added;
}

static int worst_low(const void *a, const void *b) {
  const struct ncs_vrank *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}
static int worst_high(const void *a, const void *b) { return worst_low(b, a); }

/* Sorts v's blamed processes worst first (high: a higher value is worse) and writes the
 * finding's first evidence line: "ranks 3-450 (448 of 512 judged): <what>; worst 5: ...".
 * `unit` follows each worst value ("%" or " GB/s"); NULL: no value, the first ones are named. */
static void blame_summary(struct ncs_verdict *v, int judged, int high, const char *what, const char *unit) {
  if (!v->nper) return;
  qsort(v->per, (size_t)v->nper, sizeof *v->per, high ? worst_high : worst_low);
  ncs_ranks_sort(&v->ranks);
  char rtxt[160], worst[200] = "";
  ncs_ranks_format(&v->ranks, rtxt, sizeof rtxt);
  int nw = v->nper < 5 ? v->nper : 5;
  for (int k = 0; k < nw; k++) {
    size_t l = strlen(worst);
    if (unit)
      snprintf(worst + l, sizeof worst - l, "%srank %d (%s) %.0f%s", k ? ", " : "", v->per[k].rank, v->per[k].host,
               v->per[k].value, unit);
    else
      snprintf(worst + l, sizeof worst - l, "%srank %d (%s)", k ? ", " : "", v->per[k].rank, v->per[k].host);
  }
  if (v->nevidence == NCS_VERDICT_EVIDENCE) { v->nevidence--; v->more++; }
  memmove(v->evidence[1], v->evidence[0], (size_t)v->nevidence * sizeof v->evidence[0]);
  v->nevidence++;
  if (v->ranks.n == 1)
    snprintf(v->evidence[0], sizeof v->evidence[0], "rank %s (1 of %d judged): %s; %s", rtxt, judged, what, worst);
  else
    snprintf(v->evidence[0], sizeof v->evidence[0], "ranks %s (%d of %d judged): %s; worst %d: %s", rtxt, v->ranks.n,
             judged, what, nw, worst);
}

/* The median of the blamed processes' figures (after blame_summary sorted them). */
static double per_median(const struct ncs_verdict *v) { return v->nper ? v->per[v->nper / 2].value : 0; }

/* ---- checks ---- */

/* 8. Stragglers, from the collectives lined up across ranks (analysis/straggler.h): a rank last
 * to arrive at a share of its collectives far above chance (at least 20%, and 2 / ranks up to
 * 90%: with 2 ranks one of them is always last) whose lateness cost each of its peers at least
 * 10 us per collective on average. One verdict, the first check ncs_doctor_run runs (so its
 * verdict comes right after the hang checks'): the rank the job waits for is the culprit. */
/* A late rank is a problem when it costs each peer this much per collective: above the host
 * scheduling noise of a busy machine (a healthy 2-rank job on a loaded 2-core host reached tens
 * of microseconds), well below a real straggler's cost (hundreds of microseconds and more). */
#define STRAGGLER_MIN_US 100.0

static void check_stragglers(struct ncs_doctor *d) {
  const struct ncs_strag *s = d->strag;
  const struct ncs_strag_rank *r;
  int n = s ? ncs_strag_ranks(s, &r) : 0;
  if (n < 2 || !ncs_strag_collectives(s)) return;
  double chance = 2.0 / n, need = chance > 0.9 ? 0.9 : chance < 0.2 ? 0.2 : chance;
  double med_late = r[n / 2].mean_late_us; /* rows are worst first: about the median */
  struct ncs_verdict *v = NULL;
  for (int k = 0; k < n; k++) {
    if (r[k].arrivals < 10) continue;
    double last = (double)r[k].last_count / (double)r[k].arrivals;
    double per_peer_us = 1e6 * r[k].wait_caused_s / (double)r[k].arrivals / (double)(n - 1);
    if (last < need || per_peer_us < STRAGGLER_MIN_US) continue;
    if (!v) v = add_verdict(d, "straggler", "Straggler: the other ranks wait for a late rank", 1);
    if (!v) return;
    v->per_what = "last_to_arrive_pct";
    ncs_ranks_add(&v->ranks, r[k].rank);
    if (v->nper % 64 == 0) {
      struct ncs_vrank *p = realloc(v->per, (size_t)(v->nper + 64) * sizeof *p);
      if (!p) break;
      v->per = p;
    }
    struct ncs_vrank *e = &v->per[v->nper++];
    e->rank = r[k].rank;
    e->value = 100.0 * last;
    snprintf(e->host, sizeof e->host, "%s", r[k].host ? r[k].host : "");
    snprintf(e->line, sizeof e->line, "last to arrive at %.0f%% of its %llu collectives, %.1f us late on average; the others waited %.3f s for it (%.0f us per collective each)",
             100.0 * last, (unsigned long long)r[k].arrivals, r[k].mean_late_us, r[k].wait_caused_s, per_peer_us);
  }
  if (!v) return;
  ncs_ranks_sort(&v->ranks);
  char rtxt[160];
  ncs_ranks_format(&v->ranks, rtxt, sizeof rtxt);
  const struct ncs_vrank *w = &v->per[0]; /* the engine's order: most waiting caused first */
  if (v->nper == 1)
    evidence(v, "rank %s (%s): %s", rtxt, w->host, w->line);
  else
    evidence(v, "ranks %s (%d of %d lined up) are late; the worst, rank %d (%s): %s", rtxt, v->ranks.n, n, w->rank, w->host, w->line);
  evidence(v, "%llu collectives lined up across %d ranks: arrival skew %.1f us mean, %.1f us max; the median rank is %.1f us late on average",
           (unsigned long long)ncs_strag_collectives(s), n, ncs_strag_skew_mean_us(s), ncs_strag_skew_max_us(s), med_late);
  for (int k = 1; k < v->nper && k < 3; k++) evidence(v, "rank %d (%s): %s", v->per[k].rank, v->per[k].host, v->per[k].line);
  snprintf(v->next, sizeof v->next, "Find what delays rank %d before its collectives: its data loading and host work between steps (py-spy dump / py-spy top on host %s), a slower or throttled GPU (`nvidia-smi -q -d PERFORMANCE,CLOCK`), or more work given to that rank; `ncclscope timeline` shows its arrivals beside the others'.",
           w->rank, w->host);
}

/* 1. NVLink between two GPUs, but NCCL connected them through SHM or NET. */
static void check_nvlink_unused(struct ncs_doctor *d) {
  struct ncs_verdict *v = NULL;
  static const char *const envs[] = { "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE",
                                      "NCCL_CUMEM_ENABLE", "NCCL_NET", "CUDA_VISIBLE_DEVICES", NULL };
  char envtxt[400] = "";
  int p2p_disabled = 0, p2p_level = 0, ipc_warn = 0;
  static int seen[256][4];
  int nseen = 0, last_blamed = -1, judged = 0;
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    const struct ncs_topo *t = topo_of_host(d, f->host);
    if (!t) continue;
    judged++;
    for (size_t k = 0; k < f->log.nconns; k++) {
      const struct ncs_tconn *c = &f->log.conns[k];
      if (c->tclass != NCS_TC_SHM && c->tclass != NCS_TC_NET) continue;
      if (c->from < 0 || c->to < 0) continue;
      if (c->tclass == NCS_TC_NET && !(rank_on_node(d, c->from, f) && rank_on_node(d, c->to, f)))
        continue; /* inter-node traffic: NET is right */
      int ga = gpu_of(d, f, t, c->from, c->tclass == NCS_TC_NET ? "" : c->from_tag);
      int gb = gpu_of(d, f, t, c->to, c->tclass == NCS_TC_NET ? "" : c->to_tag);
      if (ga < 0 || gb < 0 || ga >= t->ngpus || gb >= t->ngpus || ga == gb || !t->nv[ga][gb]) continue;
      if (!v) v = add_verdict(d, "nvlink-unused", "NVLink between these GPUs, but NCCL did not use it", 1);
      if (!v) return;
      char label[160];
      int dup = 0;
      for (int q = 0; q < nseen; q++)
        dup |= seen[q][0] == i && seen[q][1] == ga && seen[q][2] == gb && seen[q][3] == c->tclass;
      if (dup) continue;
      if (nseen < 256) { seen[nseen][0] = i; seen[nseen][1] = ga; seen[nseen][2] = gb; seen[nseen][3] = c->tclass; nseen++; }
      if (last_blamed != i) {
        last_blamed = i;
        blame(v, f, 0, "host %s: rank %d (GPU%d) -> rank %d (GPU%d) joined by NV%u, connected via %s", f->host, c->from,
              ga, c->to, gb, t->nv[ga][gb], ncs_tconn_label(c, label, sizeof label));
      }
      if (v->nevidence >= NCS_VERDICT_EVIDENCE - 2) { v->more++; continue; }
      evidence(v, "host %s: rank %d (GPU%d) -> rank %d (GPU%d) are joined by NV%u, but NCCL connected them via %s (channel %d)",
               f->host, c->from, ga, c->to, gb, t->nv[ga][gb], ncs_tconn_label(c, label, sizeof label), c->channel);
      if (!envtxt[0]) env_summary(f, envtxt, sizeof envtxt, envs);
      const char *pd = ncs_dfacts_env(f, "NCCL_P2P_DISABLE");
      if (pd && strcmp(pd, "0")) p2p_disabled = 1;
      if (ncs_dfacts_env(f, "NCCL_P2P_LEVEL")) p2p_level = 1;
    }
    for (int w = 0; w < f->log.nwarns; w++)
      if (strstr(f->log.warns[w].text, "IPC") || strstr(f->log.warns[w].text, "peer access")) ipc_warn = 1;
  }
  if (!v) return;
  v->per_what = "none";
  blame_summary(v, judged, 0, "NVLink between their GPUs, NCCL connected them via SHM or NET", NULL);
  /* the variables responsible, second: within the first screen */
  if (v->nevidence == NCS_VERDICT_EVIDENCE) { v->nevidence--; v->more++; }
  memmove(v->evidence[2], v->evidence[1], (size_t)(v->nevidence - 1) * sizeof v->evidence[0]);
  v->nevidence++;
  if (envtxt[0]) snprintf(v->evidence[1], sizeof v->evidence[1], "environment recorded by the trace: %s", envtxt);
  else snprintf(v->evidence[1], sizeof v->evidence[1], "environment recorded by the trace: no NCCL_P2P_* / NCCL_SHM_* variable set");
  if (p2p_disabled)
    snprintf(v->next, sizeof v->next, "NCCL_P2P_DISABLE is set: unset it (or set 0) so NCCL uses P2P over NVLink.");
  else if (p2p_level)
    snprintf(v->next, sizeof v->next, "NCCL_P2P_LEVEL limits P2P by distance: unset it or set NCCL_P2P_LEVEL=NVL.");
  else if (ipc_warn)
    snprintf(v->next, sizeof v->next, "NCCL warned that CUDA IPC failed: in containers run with --ipc=host (and a shared PID namespace), check `nvidia-smi topo -p2p r`, try NCCL_CUMEM_ENABLE=1.");
  else
    snprintf(v->next, sizeof v->next, "Check P2P between these GPUs (`nvidia-smi topo -p2p r`, `nvidia-smi nvlink --status`); in containers run with --ipc=host; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P to see why P2P was refused.");
}

static int nvlink_capable_name(const char *name) {
  static const char *const names[] = { "SXM", "A100", "H100", "H200", "H20", "H800", "A800", "B200", "GB200", "V100", NULL };
  if (strstr(name, "PCIe")) return 0;
  for (int i = 0; names[i]; i++) if (strstr(name, names[i])) return 1;
  return 0;
}

/* 2. A host with several NVLink-class GPUs but no NVLink at all. */
static void check_no_nvlink(struct ncs_doctor *d) {
  for (int i = 0; i < d->n; i++) {
    const struct ncs_topo *t = d->f[i]->topo;
    if (!t || topo_of_host(d, d->f[i]->host) != t) continue; /* once per host */
    int ngpu = 0, capable = 0;
    for (int g = 0; g < t->ngpus; g++) {
      if (!t->have_gpu[g]) continue;
      ngpu++;
      capable |= nvlink_capable_name(t->gpu[g].name);
    }
    if (ngpu < 2 || !capable || ncs_topo_nvlink_pairs(t) > 0) continue;
    struct ncs_verdict *v = add_verdict(d, "no-nvlink", "No NVLink detected between the GPUs of a host built for it", 1);
    if (!v) return;
    char c[16];
    evidence(v, "host %s: %d GPUs (%s), NVML reports 0 active NVLinks; GPU0-GPU1 link: %s", t->host, ngpu,
             t->gpu[0].name, ncs_topo_cell(t, 0, 1, c, sizeof c));
    snprintf(v->next, sizeof v->next, "Run `nvidia-smi nvlink --status` and `nvidia-smi topo -m` on %s: on NVSwitch systems start nvidia-fabricmanager (its version must match the driver); on PCIe cards check the NVLink bridges are seated.", t->host);
  }
}

/* 3. NET/Socket where InfiniBand/RoCE was expected. */
static void check_socket(struct ncs_doctor *d) {
  static const char *const envs[] = { "NCCL_IB_DISABLE", "NCCL_NET", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", NULL };
  int socket = 0, ib_hint = 0, ib_disabled = 0;
  char envtxt[400] = "", where[160] = "";
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    size_t ns = 0;
    for (size_t k = 0; k < f->log.nconns; k++)
      ns += f->log.conns[k].tclass == NCS_TC_NET && !strcmp(f->log.conns[k].mode, "Socket");
    if (!ns) continue;
    if (!socket) snprintf(where, sizeof where, "host %s pid %ld: %zu connections via NET/Socket", f->host, f->pid, ns);
    socket += (int)ns;
    const char *dis = ncs_dfacts_env(f, "NCCL_IB_DISABLE");
    if (dis && strcmp(dis, "0")) ib_disabled = 1;
    const char *net = ncs_dfacts_env(f, "NCCL_NET");
    if (ncs_dfacts_env(f, "NCCL_IB_HCA") || (net && !strncmp(net, "IB", 2)) || f->log.ib_missing) ib_hint = 1;
    for (int w = 0; w < f->log.nwarns; w++) if (strstr(f->log.warns[w].text, "ibverbs")) ib_hint = 1;
    if (!envtxt[0]) env_summary(f, envtxt, sizeof envtxt, envs);
  }
  if (!socket || !(ib_hint || ib_disabled)) return;
  struct ncs_verdict *v = add_verdict(d, "socket-not-ib", "Inter-node traffic over NET/Socket (TCP) where InfiniBand/RoCE was expected", 1);
  if (!v) return;
  evidence(v, "%s", where);
  if (envtxt[0]) evidence(v, "environment recorded by the trace: %s", envtxt);
  for (int i = 0; i < d->n; i++)
    if (d->f[i]->log.ib_missing) { evidence(v, "NCCL's log on host %s: NET/IB found no device (or libibverbs missing)", d->f[i]->host); break; }
  if (ib_disabled)
    snprintf(v->next, sizeof v->next, "NCCL_IB_DISABLE is set: unset it so NCCL can use the IB/RoCE NICs.");
  else
    snprintf(v->next, sizeof v->next, "NCCL found no usable IB device: install rdma-core/libibverbs in the image, expose /dev/infiniband to the container, check `ibv_devinfo`, and that NCCL_IB_HCA names existing HCAs.");
}

/* 4. Ranks on different NCCL versions. */
static void check_versions(struct ncs_doctor *d) {
  int codes[64], nc = 0;
  for (int i = 0; i < d->n; i++) {
    int c = version_code_of(d->f[i]);
    if (!c) continue;
    int seen = 0;
    for (int k = 0; k < nc; k++) seen |= codes[k] == c;
    if (!seen && nc < 64) codes[nc++] = c;
    for (int k = 0; k < d->f[i]->log.nvers; k++) {
      int lc = d->f[i]->log.vers[k].code;
      seen = 0;
      for (int j = 0; j < nc; j++) seen |= codes[j] == lc;
      if (!seen && nc < 64) codes[nc++] = lc;
    }
  }
  if (nc < 2) return;
  struct ncs_verdict *v = add_verdict(d, "nccl-version-mismatch", "Ranks run different NCCL versions", 1);
  if (!v) return;
  for (int k = 0; k < nc; k++) {
    int n = 0;
    const struct ncs_dfacts *ex = NULL;
    for (int i = 0; i < d->n; i++)
      if (version_code_of(d->f[i]) == codes[k]) { n++; if (!ex) ex = d->f[i]; }
    char vs[24];
    evidence(v, "NCCL %s (code %d): %d process(es)%s%s", ncs_rule_nccl_version(codes[k], vs, sizeof vs), codes[k], n, ex ? ", e.g. " : "",
             ex ? (ex->host[0] ? ex->host : ex->path) : "");
  }
  snprintf(v->next, sizeof v->next, "Install one NCCL version on every node (check the wheel/container: `python -c \"import torch; print(torch.cuda.nccl.version())\"`); mixed versions can hang or corrupt collectives.");
}

/* The transport classes NCCL logged for each process's primary communicator, over every
 * process of that communicator (1 << NCS_TC_*): a ring is bounded by its slowest link, whichever
 * rank's log printed it (a rank whose own neighbours are on its host still waits on the
 * network when the ring crosses hosts). out[n], by process. */
struct comm_key { uint64_t id; int i; };
static int by_comm(const void *a, const void *b) {
  const struct comm_key *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->i - y->i;
}
static int comm_transports(const struct ncs_doctor *d, unsigned *out) {
  struct comm_key *k = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *k);
  if (!k) return -1;
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    out[i] = 0;
    for (size_t c = 0; c < f->log.nconns; c++) out[i] |= 1u << f->log.conns[c].tclass;
    k[i].i = i;
    if (ncs_dfacts_rank(f, NULL, &k[i].id) < 0) k[i].id = 0;
  }
  qsort(k, (size_t)d->n, sizeof *k, by_comm);
  for (int a = 0, b; a < d->n; a = b) {
    unsigned m = 0;
    for (b = a; b < d->n && k[b].id == k[a].id; b++) m |= out[k[b].i];
    for (int c = a; c < b && k[a].id; c++) out[k[c].i] = m; /* no communicator: its own lines */
  }
  free(k);
  return 0;
}

/* 5a. Ranks far slower than their peers: a process whose median busbw of collectives >= 8 MiB
 * is under half the median of the processes of its primary communicator (>= 4 of them judged,
 * each >= 3 samples). A slow link, NIC or GPU on some hosts, whatever the reference model says
 * the link should give (the α-β reference's per-step latency grows with ranks: at thousands of
 * ranks it judges no rank slow). Marks d->slow[i] for the processes it blames. */
struct bw_key { uint64_t id; double bw; int i; };
static int by_comm_bw(const void *a, const void *b) {
  const struct bw_key *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  if (x->bw != y->bw) return x->bw < y->bw ? -1 : 1;
  return x->i - y->i;
}
static void check_slow_ranks(struct ncs_doctor *d) {
  char *slow = d->slow;
  if (!slow) return;
  struct bw_key *k = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *k);
  if (!k) return;
  int nk = 0, judged = 0;
  for (int i = 0; i < d->n; i++) {
    int ns, gpu;
    double bw = ncs_dfacts_busbw(d->f[i], &ns, &gpu);
    if (ns < 3 || bw <= 0 || ncs_dfacts_rank(d->f[i], NULL, &k[nk].id) < 0) continue;
    k[nk].bw = bw;
    k[nk++].i = i;
  }
  qsort(k, (size_t)nk, sizeof *k, by_comm_bw);
  struct ncs_verdict *v = NULL;
  double med_all = 0;
  for (int a = 0, b; a < nk; a = b) {
    for (b = a; b < nk && k[b].id == k[a].id; b++) {}
    if (b - a < 4) continue;
    double med = k[a + (b - a) / 2].bw;
    for (int c = a; c < b; c++) {
      const struct ncs_dfacts *f = d->f[k[c].i];
      char who[40];
      int held = ncs_dfacts_label(f, who, sizeof who);
      judged += held > 1 ? held : 1;
      if (k[c].bw >= 0.5 * med) continue;
      if (!v) v = add_verdict(d, "slow-ranks", "Some ranks' bus bandwidth far below their peers'", 1);
      if (!v) { free(k); return; }
      v->per_what = "busbw_pct_of_peers";
      if (!med_all) med_all = med;
      slow[k[c].i] = 1;
      int ns, gpu;
      ncs_dfacts_busbw(f, &ns, &gpu);
      blame(v, f, 100.0 * k[c].bw / med, "host %s rank%s %s: median busbw %.2f GB/s over %d collectives >= 8 MiB (%s timing), %.0f%% of its communicator's median rank (%.2f GB/s)",
            f->host, held > 1 ? "s" : "", who, k[c].bw, ns, gpu ? "GPU" : "host", 100.0 * k[c].bw / med, med);
    }
  }
  free(k);
  if (!v) return;
  blame_summary(v, judged, 0, "busbw of collectives >= 8 MiB under half their communicator's median rank", "%");
  /* the hosts they are on: a slow link or NIC shows as one host's ranks */
  char hosts[200] = "";
  int nh = 0;
  for (int p = 0; p < v->nper; p++) {
    int seen = 0;
    for (int q = 0; q < p && !seen; q++) seen = !strcmp(v->per[q].host, v->per[p].host);
    if (seen) continue;
    if (nh < 4) { size_t l = strlen(hosts); snprintf(hosts + l, sizeof hosts - l, "%s%s", nh ? ", " : "", v->per[p].host); }
    nh++;
  }
  evidence(v, "on %d host%s: %s%s; the median rank of the job moves %.2f GB/s", nh, nh == 1 ? "" : "s", hosts,
           nh > 4 ? ", ..." : "", med_all);
  for (int p = 0; p < v->nper && p < 2; p++) evidence(v, "%s", v->per[p].line);
  snprintf(v->next, sizeof v->next, "Look at those hosts' links first: `ibstat` / `ethtool -S` (NIC errors, link speed), `nvidia-smi nvlink -e` and `nvidia-smi -q -d PERFORMANCE` (throttling), the PCIe link width (`lspci -vv`); run nccl-tests between %s and a healthy host.",
           v->nper ? v->per[0].host : "them");
}

/* 5b. busbw far below what the rank's link should give for those calls: the α-β reference of the
 * link that bounds its ring (analysis/headline.h: the same choice of link as report and html;
 * the slowest class NCCL logged for any rank of its communicator), priced on the calls
 * themselves. Threshold 25% of that, >= 3 samples of >= 8 MiB. Ranks check_slow_ranks blamed
 * are that finding, not this one. */
static void check_busbw(struct ncs_doctor *d) {
  const char *slow = d->slow;
  static const int bottleneck_first[] = {NCS_TC_NET, NCS_TC_COLLNET, NCS_TC_SHM, NCS_TC_P2P, NCS_TC_NVLS};
  struct ncs_verdict *v = NULL;
  int judged = 0;
  char why[200] = "";
  struct ncs_link links[32];
  unsigned have = 0;
  unsigned *used_of = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *used_of);
  if (!used_of || comm_transports(d, used_of) != 0) { free(used_of); return; }
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    int ns, gpu;
    double bw = ncs_dfacts_busbw(f, &ns, &gpu);
    if (ns < 3 || bw <= 0) continue;
    unsigned used = used_of[i];
    int tc = 0;
    for (size_t k = 0; k < sizeof bottleneck_first / sizeof *bottleneck_first && !tc; k++)
      if (used & (1u << bottleneck_first[k])) tc = bottleneck_first[k];
    if (!tc) continue; /* no transport logged: no link to judge against */
    if (tc < 0 || tc >= 32) continue;
    if (!(have & (1u << tc))) { ncs_headline_link_of(d, tc, &links[tc]); have |= 1u << tc; } /* once per class, not per rank */
    const struct ncs_link link = links[tc];
    double x = ncs_dfacts_busbw_expected(f, &link);
    if (x <= 0) continue;
    char who[40];
    int held = ncs_dfacts_label(f, who, sizeof who);
    judged += held > 1 ? held : 1;
    if (bw >= 0.25 * x || (slow && slow[i])) continue;
    if (!v) v = add_verdict(d, "low-busbw", "Bus bandwidth far below what the chosen transport should give", 1);
    if (!v) break;
    v->per_what = "busbw_pct_of_expected";
    if (!why[0]) snprintf(why, sizeof why, "%s", link.why);
    blame(v, f, 100.0 * bw / x, "host %s rank%s %s: median busbw %.1f GB/s over %d collectives >= 8 MiB (%s timing), %.0f%% of the %.1f GB/s expected",
          f->host, held > 1 ? "s" : "", who, bw, ns, gpu ? "GPU" : "host", 100.0 * bw / x, x);
  }
  free(used_of);
  if (!v) return;
  char what[120];
  snprintf(what, sizeof what, "busbw of collectives >= 8 MiB below 25%% of expected");
  blame_summary(v, judged, 0, what, "%");
  evidence(v, "median of those ranks %.0f%% of expected: the alpha-beta reference of the link that bounds their communicator's ring, priced on their calls (the first: %s; docs/REFERENCE-FIGURES.md)",
           per_median(v), why);
  for (int k = 0; k < v->nper && k < 3; k++) evidence(v, "%s", v->per[k].line);
  snprintf(v->next, sizeof v->next, "Compare with nccl-tests all_reduce_perf on the same GPUs; look for other jobs sharing the GPUs, throttling (`nvidia-smi -q -d PERFORMANCE`), NCCL_MAX_NCHANNELS / NCCL_ALGO / NCCL_PROTO overrides, and small bucket sizes.");
}

/* 6. Communication-bound. With kernel activity (docs/METRICS.md "GPU time"): exposed
 * communication (NCCL kernels running with no compute beside them) covers at least half of the
 * rank's GPU span; hidden communication does not count. Without it, the estimate: communication
 * covers more than half of the rank's traced window (first call entered to last call or GPU
 * interval ended), for ranks with >= 10 calls over >= 1 ms. One verdict for the job, one
 * evidence line per such rank. */
static void check_comm_bound(struct ncs_doctor *d) {
  struct ncs_verdict *v = NULL;
  int nbound = 0, nchecked = 0;
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    const struct ncs_kact_fig *g = &f->gpu;
    char who[40];
    int held = ncs_dfacts_label(f, who, sizeof who), nheld = held > 1 ? held : 1; /* a rank per thread: all count */
    if (g->have && g->span_ns >= 1000000) {
      nchecked += nheld;
      double share = (double)g->exposed_ns / (double)g->span_ns;
      if (share < 0.5) continue;
      nbound += nheld;
      if (!v) v = add_verdict(d, "comm-bound", "Communication-bound: most of the traced time is spent in NCCL", 1);
      if (!v) return;
      v->per_what = "comm_share_pct";
      blame(v, f, 100.0 * share, "host %s rank%s %s: exposed communication %.3f s of %.3f s of GPU time (%.0f%%; %.0f%% of NCCL kernel time hidden under compute; kernel activity)",
               f->host, held > 1 ? "s" : "", who, g->exposed_ns / 1e9, g->span_ns / 1e9, 100.0 * share,
               g->comm_ns ? 100.0 * (double)g->overlapped_ns / (double)g->comm_ns : 0.0);
      continue;
    }
    uint64_t s = f->timing_gpu && f->gpu_first ? (f->gpu_first < f->t_first ? f->gpu_first : f->t_first) : f->t_first;
    uint64_t e = f->timing_gpu && f->gpu_last > f->t_last ? f->gpu_last : f->t_last;
    if (f->ncalls < 10 || e <= s || e - s < 1000000) continue;
    nchecked += nheld;
    double share = f->comm_ns / (double)(e - s);
    if (share <= 0.5) continue;
    nbound += nheld;
    if (!v) v = add_verdict(d, "comm-bound", "Communication-bound: most of the traced time is spent in NCCL", 1);
    if (!v) return;
    v->per_what = "comm_share_pct";
    char late[128] = ""; /* intervals the streaming union may have clipped (model/ivunion.h) */
    if (f->comm_late)
      snprintf(late, sizeof late, "; may be low by up to %.6f s: %llu interval%s came after the union passed their start",
               f->comm_late_ns / 1e9, (unsigned long long)f->comm_late, f->comm_late == 1 ? "" : "s");
    blame(v, f, 100.0 * share, "host %s rank%s %s: communication %.3f s of %.3f s traced (%.0f%%, %s timing%s%s; estimate without kernel activity (%s): hidden communication counted as exposed%s)",
             f->host, held > 1 ? "s" : "", who, f->comm_ns / 1e9, (double)(e - s) / 1e9, 100.0 * share,
             f->timing_gpu ? "GPU" : "host", f->timing_gpu ? "" : ": ",
             f->timing_gpu ? "" : ncs_rule_why_host_timed(f->timing[0] ? f->timing : NULL, f->gpu_timing_env[0] ? f->gpu_timing_env : NULL),
             ncs_kact_why_none(g), late);
  }
  if (!v) return;
  blame_summary(v, nchecked, 1, "communication over 50% of the traced time", "%");
  evidence(v, "%d of %d ranks with enough calls spend more than 50%% of their window in communication (median of those %.0f%%)",
           nbound, nchecked, per_median(v));
  for (int k = 0; k < v->nper && k < 2; k++) evidence(v, "%s", v->per[k].line);
  snprintf(v->next, sizeof v->next, "Overlap communication with compute (DDP bucket_cap_mb, gradient accumulation, FSDP prefetch), check the transports above use NVLink/IB, and compare busbw with nccl-tests.");
}

/* 7. GPU idle: with kernel activity, the GPU ran nothing for at least a quarter of its span
 * (input pipeline, host stalls, synchronisation between steps); its own verdict, whatever the
 * communication does. */
static void check_gpu_idle(struct ncs_doctor *d) {
  struct ncs_verdict *v = NULL;
  int nidle = 0, nchecked = 0;
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    const struct ncs_kact_fig *g = &f->gpu;
    if (!g->have || g->span_ns < 1000000) continue;
    nchecked++;
    double share = (double)g->idle_ns / (double)g->span_ns;
    if (share < 0.25) continue;
    nidle++;
    if (!v) v = add_verdict(d, "gpu-idle", "GPU idle: the GPU ran nothing for a large part of the run", 1);
    if (!v) return;
    char who[40];
    int held = ncs_dfacts_label(f, who, sizeof who);
    v->per_what = "gpu_idle_pct";
    blame(v, f, 100.0 * share, "host %s rank%s %s: GPU idle %.3f s of %.3f s (%.0f%%) between its first and last kernel",
             f->host, held > 1 ? "s" : "", who, g->idle_ns / 1e9, g->span_ns / 1e9, 100.0 * share);
  }
  if (!v) return;
  blame_summary(v, nchecked, 1, "GPU idle at least 25% of its span", "%");
  evidence(v, "%d of %d ranks with kernel activity leave their GPU idle for at least 25%% of their GPU span (median of those %.0f%%)",
           nidle, nchecked, per_median(v));
  for (int k = 0; k < v->nper && k < 2; k++) evidence(v, "%s", v->per[k].line);
  snprintf(v->next, sizeof v->next, "Look at what the host does between steps: data loading (DataLoader num_workers, pin_memory), host-side synchronisation (.item(), .cpu(), cudaDeviceSynchronize), logging and checkpointing; profile the host with py-spy or perf.");
}

/* 8. Device API (a note): kernels the job launched while a device communicator existed
 * (ncclDevCommCreate .. ncclDevCommDestroy) may communicate through it; ncclscope cannot tell
 * which do, so their GPU time is counted as compute and named here. */
static void check_devapi(struct ncs_doctor *d) {
  struct ncs_verdict *v = NULL;
  struct ncs_devapi_total t = {0};
  for (int i = 0; i < d->n; i++) ncs_devapi_add(&t, &d->f[i]->gpu);
  int procs = t.procs, ndev = t.comms;
  uint64_t kernels = t.kernels, ns = t.ns;
  if (!kernels) return;
  v = add_verdict(d, "device-api", "Kernels launched while a device communicator existed may communicate (NCCL device API)", 0);
  if (!v) return;
  evidence(v, "%d process%s created %d device communicator%s (ncclDevCommCreate); %llu kernels, %.6f s of GPU time, were launched while one existed",
           procs, procs == 1 ? "" : "es", ndev, ndev == 1 ? "" : "s", (unsigned long long)kernels, ns / 1e9);
  evidence(v, "their time is counted as compute: the communication share and compute/comm are those of NCCL's own kernels");
  snprintf(v->next, sizeof v->next, "Kernels written with NCCL's device API communicate from inside the kernel: if these are yours, part of their time is communication. `ncclscope report` lists each device communicator, its requirements and these kernels per rank (\"Device communicators\"; JSON device_api).");
}

void ncs_doctor_run(struct ncs_doctor *d) {
  d->slow = calloc((size_t)(d->n > 0 ? d->n : 1), 1); /* slow-ranks' marks, for low-busbw */
#define RUN_(id, run) run,
  static void (*const runs[])(struct ncs_doctor *) = {NCS_DOCTOR_CHECK_LIST(RUN_)};
#undef RUN_
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
    if (runs[i]) runs[i](d);
  free(d->slow);
  d->slow = NULL;
}

int ncs_doctor_problems(const struct ncs_doctor *d) {
  int n = 0;
  for (int i = 0; i < d->nv; i++) n += d->v[i].problem;
  return n;
}

void ncs_doctor_free(struct ncs_doctor *d) {
  for (int i = 0; i < d->n; i++) ncs_dfacts_free(d->f[i]);
  for (int i = 0; i < d->nv; i++) { ncs_ranks_free(&d->v[i].ranks); free(d->v[i].per); }
  free(d->f);
  free(d->v);
  memset(d, 0, sizeof *d);
}
