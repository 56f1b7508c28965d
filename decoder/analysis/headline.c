/* headline.c — the job's answer as data (headline.h). */
#include "analysis/headline.h"
#include "analysis/straggler.h"
#include "analysis/callsites.h"
#include "analysis/jobsum.h"
#include "ncclscope/ops.h"
#include "io/nccllog.h"
#include "model/rules.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

double ncs_headline_share(const struct ncs_dfacts *f, double *window_ns) {
  uint64_t s = f->timing_gpu && f->gpu_first && f->gpu_first < f->t_first ? f->gpu_first : f->t_first;
  uint64_t e = f->timing_gpu && f->gpu_last > f->t_last ? f->gpu_last : f->t_last;
  if (f->ncalls < 10 || e <= s || e - s < 1000000) return -1;
  if (window_ns) *window_ns = (double)(e - s);
  return f->comm_ns / (double)(e - s);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* A judged process: its share, then its compute/comm ratio (sorted by share, then ratio). */
struct judged { double share, ratio; };
static int cmp_judged(const void *a, const void *b) {
  const struct judged *x = a, *y = b;
  if (x->share != y->share) return x->share < y->share ? -1 : 1;
  return x->ratio < y->ratio ? -1 : x->ratio > y->ratio;
}

static void job_link(struct ncs_headline *h, const struct ncs_doctor *d);

void ncs_headline_build(struct ncs_headline *h, const struct ncs_doctor *d) {
  memset(h, 0, sizeof *h);
  h->built = 1;
  h->processes = d->n;
  h->share_min = h->share_med = h->share_max = h->ratio_med = NAN;
  h->rank_min = h->rank_max = -1;
  h->nvlink_in_box = -1;
  h->slowest_rank = -1;
  h->exposed_med = h->hidden_med = NAN;
  const struct ncs_kact_fig **kf = calloc((size_t)(d->n ? d->n : 1), sizeof *kf);
  struct judged *shares = calloc((size_t)(d->n ? d->n : 1), sizeof *shares);
  double *bws = calloc((size_t)(d->n ? d->n : 1), sizeof *bws);
  int nbw = 0;
  for (int i = 0; i < d->n; i++) {
    const struct ncs_dfacts *f = d->f[i];
    for (size_t k = 0; k < f->log.nconns; k++) h->transports |= 1u << f->log.conns[k].tclass;
    if (f->topo) {
      if (h->nvlink_in_box < 0) h->nvlink_in_box = 0;
      for (int a = 0; a < f->topo->ngpus; a++)
        for (int b = a + 1; b < f->topo->ngpus; b++)
          if (f->topo->nv[a][b]) h->nvlink_in_box = 1;
    }
    int nr, gpu, ns;
    uint64_t id;
    double bw = ncs_dfacts_busbw(f, &ns, &gpu);
    if (bw > 0 && bws) bws[nbw++] = bw;
    if (f->gpu.have && f->gpu.span_ns && kf) kf[h->kact_ranks++] = &f->gpu;
    ncs_devapi_add(&h->devapi, &f->gpu);
    if (f->replays.captured && f->replays.counted && f->timing_gpu) {
      h->replay_procs++;
      h->replayed_calls += f->replays.calls;
    } else if (f->replays.captured) {
      if (!h->replay_uncounted_procs)
        snprintf(h->replay_why, sizeof h->replay_why, "%s", f->replays.why_not ? f->replays.why_not : "calls timed on the host");
      h->replay_uncounted_procs++;
    }
    double window = 0, share = ncs_headline_share(f, &window);
    if (share < 0 || !shares) continue;
    int rank = ncs_dfacts_rank(f, &nr, &id);
    char lab[40];
    int held = ncs_dfacts_label(f, lab, sizeof lab);
    if (isnan(h->share_min) || share < h->share_min) { h->share_min = share; h->rank_min = rank; }
    if (isnan(h->share_max) || share > h->share_max) { h->share_max = share; h->rank_max = rank; }
    int nh = held > 1 ? held : 1; /* a process with a rank per thread: each of its ranks counts */
    int est = 0;
    shares[h->rank_procs++] = (struct judged){share, ncs_kact_compute_to_comm(&f->gpu, window, f->comm_ns, &est)};
    h->ratio_est_ranks += est ? nh : 0;
    h->ranks += nh;
    h->gpu_timed += f->timing_gpu ? nh : 0;
    if (!(f->gpu.have && f->gpu.span_ns)) {
      if (!h->no_kact_ranks) snprintf(h->no_kact_why, sizeof h->no_kact_why, "%s", ncs_kact_why_none(&f->gpu));
      h->no_kact_ranks += nh;
    }
    if (!f->timing_gpu) {
      if (!h->host_timed_ranks)
        snprintf(h->host_timed_why, sizeof h->host_timed_why, "%s",
                 ncs_rule_why_host_timed(f->timing[0] ? f->timing : NULL, f->gpu_timing_env[0] ? f->gpu_timing_env : NULL));
      h->host_timed_ranks += nh;
    }
  }
  if (h->rank_procs) {
    if (h->rank_procs > 1) qsort(shares, (size_t)h->rank_procs, sizeof *shares, cmp_judged);
    h->share_med = shares[(h->rank_procs - 1) / 2].share;
    h->ratio_med = shares[(h->rank_procs - 1) / 2].ratio; /* the same (median) process's */
  }
  if (nbw) {
    if (nbw > 1) qsort(bws, (size_t)nbw, sizeof *bws, cmp_double);
    h->busbw_med = bws[(nbw - 1) / 2];
  }
  if (h->kact_ranks) { /* the median rank by exposed share */
    for (int a = 1; a < h->kact_ranks; a++)
      for (int b = a; b > 0 && (double)kf[b]->exposed_ns / kf[b]->span_ns < (double)kf[b - 1]->exposed_ns / kf[b - 1]->span_ns; b--) {
        const struct ncs_kact_fig *t = kf[b]; kf[b] = kf[b - 1]; kf[b - 1] = t;
      }
    const struct ncs_kact_fig *g = kf[(h->kact_ranks - 1) / 2];
    h->exposed_med = (double)g->exposed_ns / (double)g->span_ns;
    if (g->comm_ns) h->hidden_med = (double)g->overlapped_ns / (double)g->comm_ns;
  }
  job_link(h, d);
  free(kf);
  free(shares);
  free(bws);
  for (int i = 0; i < d->nv; i++) {
    if (!d->v[i].problem && !h->missing && !strcmp(d->v[i].id, "missing-collective")) h->missing = &d->v[i];
    if (!d->v[i].problem) continue;
    h->problems++;
    int k = 0, seen = 0;
    for (int j = 0; j < i; j++) seen |= d->v[j].problem && !strcmp(d->v[j].id, d->v[i].id);
    if (seen) {
      for (k = 0; k < h->nfirst && strcmp(h->first[k]->id, d->v[i].id); k++) {}
      if (k < h->nfirst) h->count[k]++;
      continue;
    }
    h->kinds++;
    if (h->nfirst < NCS_HEADLINE_PROBLEMS) { h->count[h->nfirst] = 1; h->first[h->nfirst++] = &d->v[i]; }
  }
}

double ncs_headline_expected(const struct ncs_headline *h) {
  return ncs_linkref_busbw(&h->link, h->top_busbytes, h->top_steps);
}

void ncs_headline_link_of(const struct ncs_doctor *d, int tclass, struct ncs_link *out) {
  int any = 0;
  memset(out, 0, sizeof *out);
  for (int i = 0; d && i < d->n; i++) {
    struct ncs_link l;
    if (!d->f[i]->topo || ncs_linkref_of(tclass, d->f[i]->topo, &l) != 0) continue;
    if (!any || ncs_linkref_slower(out, &l) == &l) *out = l;
    any = 1;
  }
  if (!any) ncs_linkref_of(tclass, NULL, out);
}

/* The link that bounds the job's collectives: the slowest transport class NCCL used (NET, then
 * SHM, then P2P, then NVLS: the one that bounds a ring), on the slowest of the hosts' recorded
 * topologies (or assumed, said in its why, when none was recorded). */
static void job_link(struct ncs_headline *h, const struct ncs_doctor *d) {
  static const int bottleneck_first[] = {NCS_TC_NET, NCS_TC_COLLNET, NCS_TC_SHM, NCS_TC_P2P, NCS_TC_NVLS};
  for (size_t i = 0; i < sizeof bottleneck_first / sizeof *bottleneck_first; i++)
    if (h->transports & (1u << bottleneck_first[i])) { ncs_headline_link_of(d, bottleneck_first[i], &h->link); return; }
}

void ncs_headline_add_stragglers(struct ncs_headline *h, const struct ncs_strag *s) {
  const struct ncs_strag_rank *r;
  h->mismatches = ncs_strag_mismatches(s);
  h->incomplete = ncs_strag_incomplete(s);
  /* a rank is named only when its lateness cost the others something: at least 1 us of waiting
   * per collective it entered on average (arrivals equal to the ns name nobody) */
  if (!ncs_strag_collectives(s) || ncs_strag_ranks(s, &r) <= 0 || !r[0].last_count ||
      r[0].wait_caused_s < 1e-6 * (double)r[0].arrivals)
    return;
  h->slowest_rank = r[0].rank;
  snprintf(h->slowest_host, sizeof h->slowest_host, "%s", r[0].host);
  h->slowest_last_pct = r[0].arrivals ? 100.0 * (double)r[0].last_count / (double)r[0].arrivals : 0;
  h->slowest_wait_s = r[0].wait_caused_s;
  h->skew_mean_us = ncs_strag_skew_mean_us(s);
}

const struct ncs_headline_cost *ncs_headline_cost_of(const struct ncs_headline *h, const char *id) {
  for (int i = 0; h && i < h->ncost; i++)
    if (!strcmp(h->cost[i].id, id) || (!strcmp(id, "comm-bound") && !strcmp(h->cost[i].id, "exposed-comm")))
      return &h->cost[i];
  return NULL;
}

void ncs_headline_add_top_op(struct ncs_headline *h, const struct ncs_jobdata *J) {
  double total = 0, best = 0, bus = 0, steps = 0;
  unsigned top = 0;
  for (unsigned op = 1; op < NCS_OP_LIMIT; op++) {
    double t = 0, b = 0, k = 0;
    for (int i = 0; i < J->nops; i++)
      if (J->ops[i].op == op) { t += J->ops[i].time_s; b += J->ops[i].busbytes; k += J->ops[i].steps; }
    total += t;
    if (t > best) { best = t; top = op; bus = b; steps = k; }
  }
  if (!top || !(total > 0)) return;
  snprintf(h->top_op, sizeof h->top_op, "%s", ncs_op_name(top) ? ncs_op_name(top) : "?");
  h->top_op_share = best / total;
  h->top_busbw = ncs_op_bw(top) != NCS_BW_NONE ? bus / best / 1e9 : 0;
  h->top_busbytes = bus;
  h->top_steps = steps;
}

void ncs_headline_add_callsite(struct ncs_headline *h, const struct ncs_callsites *cs) {
  const struct ncs_csrow *r = ncs_callsites_most_exposed(cs);
  if (!h || !r) return;
  snprintf(h->top_site, sizeof h->top_site, "%.199s", r->where);
  snprintf(h->top_site_op, sizeof h->top_site_op, "%s", r->mixed ? "several operations" : ncs_op_name(r->op) ? ncs_op_name(r->op) : "?");
  h->top_site_ranks = r->ranks;
  h->top_site_exp_ms = r->exp_ns / 1e6;
  h->top_site_gpu_ms = r->exp_gpu_ns / 1e6;
}
