/* headline_render.c — the job's answer as text, JSON and HTML (headline_render.h). */
#include "render/headline_render.h"

#include <math.h>
#include <string.h>

#include "io/nccllog.h"
#include "render/doctor_render.h"

/* "P2P+SHM", or "none logged" */
static void transport_names(unsigned mask, char *buf, size_t cap) {
  static const int order[] = {NCS_TC_P2P, NCS_TC_NVLS, NCS_TC_SHM, NCS_TC_NET, NCS_TC_COLLNET};
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof order / sizeof *order && k < cap; i++)
    if (mask & (1u << order[i]))
      k += (size_t)snprintf(buf + k, cap - k, "%s%s", k ? "+" : "", ncs_tclass_name(order[i]));
  if (!buf[0]) snprintf(buf, cap, "none logged");
}

static const char *nvlink_word(const struct ncs_headline *h) {
  int used = (h->transports & ((1u << NCS_TC_P2P) | (1u << NCS_TC_NVLS))) != 0;
  if (h->nvlink_in_box < 0) return used ? "P2P/NVLS used (topology not recorded)" : "topology not recorded";
  if (!h->nvlink_in_box) return "no NVLink in this box";
  if (!h->transports) return "NVLink in the box, NCCL's transport lines not seen";
  return used ? "NVLink in the box and NCCL used it" : "NVLink in the box but NCCL did NOT use it";
}

/* What the job's compute/comm ratio rests on (docs/METRICS.md "Compute to communication"). */
static const char *ratio_basis(const struct ncs_headline *h) {
  if (!h->ratio_est_ranks) return "on GPU time";
  if (h->ratio_est_ranks >= h->ranks) return "estimate: no kernel activity";
  return "estimate for some ranks: no kernel activity";
}
static const char *ratio_basis_json(const struct ncs_headline *h) {
  return !h->ratio_est_ranks ? "gpu_time" : h->ratio_est_ranks >= h->ranks ? "estimate" : "mixed";
}

static const char *state_word(const struct ncs_headline *h) {
  if (h->problems) return h->kinds == 1 ? "1 problem" : "problems";
  return "healthy";
}

/* What problem v costs, after its line: the step time it costs (whatif, by way of the
 * headline's costs), or for a hang the time lost until the traces end; nothing when unknown. */
static void print_cost(FILE *f, const struct ncs_headline *h, const struct ncs_verdict *v) {
  const struct ncs_headline_cost *c = ncs_headline_cost_of(h, v->id);
  if (c) fprintf(f, "; costs %.3f ms of the %.3f ms step: fixed, %.3f ms", (c->step_s - c->fixed_s) * 1e3, c->step_s * 1e3, c->fixed_s * 1e3);
  else if (v->hang && v->hang->lost_n)
    fprintf(f, "; lost %.3f s until the traces end (%.0f%% of the run, %.3f process-s)", v->hang->lost_max_s,
            100.0 * v->hang->lost_share, v->hang->lost_s);
}
/* The costliest finding when no problem line carries it, else NULL. */
static const struct ncs_headline_cost *costliest_unshown(const struct ncs_headline *h) {
  if (!h->ncost) return NULL;
  for (int i = 0; i < h->nfirst; i++)
    if (ncs_headline_cost_of(h, h->first[i]->id) == &h->cost[0]) return NULL;
  return &h->cost[0];
}

/* The device-API sentence of the headline, worded once for text and HTML: the GPU time, the
 * kernels, the processes, then `possibly` (the markup's form of "possibly communicating"). */
static void devapi_words(FILE *f, const struct ncs_devapi_total *t, const char *possibly) {
  fprintf(f, "%.6f s of GPU time in %llu kernels launched while a device communicator existed (%d process%s): %s",
          t->ns / 1e9, (unsigned long long)t->kernels, t->procs, t->procs == 1 ? "" : "es", possibly);
}

void ncs_headline_print_text(const struct ncs_headline *h, FILE *f, int with_problems) {
  char tr[64];
  transport_names(h->transports, tr, sizeof tr);
  fprintf(f, "ncclscope: %d rank%s", h->ranks, h->ranks == 1 ? "" : "s");
  if (h->rank_procs && h->rank_procs != h->ranks)
    fprintf(f, " in %d process%s", h->rank_procs, h->rank_procs == 1 ? "" : "es");
  fprintf(f, " — %s", state_word(h));
  if (h->kinds > 1) fprintf(f, " (%d)", h->kinds);
  if (with_problems && h->problems) fprintf(f, "; all the evidence and next steps: ncclscope doctor");
  fputc('\n', f);
  if (!isnan(h->share_med)) {
    fprintf(f, "  communication: %.0f%% of the median rank's time (%.0f%%-%.0f%% across ranks, %s timing)",
            100 * h->share_med, 100 * h->share_min, 100 * h->share_max,
            h->gpu_timed == h->ranks ? "GPU" : h->gpu_timed ? "GPU and host" : "host");
    if (!isnan(h->ratio_med)) fprintf(f, "; compute/comm %.2f (%s)", h->ratio_med, ratio_basis(h));
    fputc('\n', f);
    if (h->host_timed_ranks) {
      fprintf(f, "  estimate: %d of %d ranks timed on the host (", h->host_timed_ranks, h->ranks);
      ncs_text_escape(f, h->host_timed_why, strlen(h->host_timed_why));
      fprintf(f, "): their communication time is call entry to return, not the GPU's\n");
    }
    if (!isnan(h->exposed_med)) {
      fprintf(f, "  exposed: %.0f%% of GPU time is communication not hidden under compute (median rank", 100 * h->exposed_med);
      if (!isnan(h->hidden_med)) fprintf(f, "; %.0f%% of NCCL kernel time hidden", 100 * h->hidden_med);
      fprintf(f, ")\n");
      if (h->top_site[0]) {
        fputs("  most exposed call site: ", f);
        ncs_text_escape(f, h->top_site, strlen(h->top_site));
        fprintf(f, ", %s on %d rank%s: %.3f ms of its %.3f ms on the GPU exposed\n", h->top_site_op, h->top_site_ranks,
                h->top_site_ranks == 1 ? "" : "s", h->top_site_exp_ms, h->top_site_gpu_ms);
      }
      if (h->no_kact_ranks) {
        fprintf(f, "  estimate: %d of %d ranks without kernel activity (", h->no_kact_ranks, h->ranks);
        ncs_text_escape(f, h->no_kact_why, strlen(h->no_kact_why));
        fprintf(f, "): their share counts hidden communication as exposed\n");
      }
    } else {
      fprintf(f, "  exposed: unknown, no kernel activity (");
      ncs_text_escape(f, h->no_kact_why, strlen(h->no_kact_why));
      fprintf(f, "): the share and compute/comm above are estimates that count hidden communication as exposed\n");
    }
  } else {
    fprintf(f, "  communication: no rank traced long enough to judge (10 calls over 1 ms)\n");
  }
  if (h->devapi.kernels) {
    fprintf(f, "  device API: ");
    devapi_words(f, &h->devapi, "possibly communicating");
    fprintf(f, ", not in the communication share\n");
  }
  if (h->replay_procs)
    fprintf(f, "  graph replays: %llu calls replayed from CUDA graphs in %d process%s, counted above from kernel activity\n",
            (unsigned long long)h->replayed_calls, h->replay_procs, h->replay_procs == 1 ? "" : "es");
  if (h->replay_uncounted_procs) {
    fprintf(f, "  estimate: %d process%s captured calls into CUDA graphs whose replays are NOT counted (", h->replay_uncounted_procs,
            h->replay_uncounted_procs == 1 ? "" : "es");
    ncs_text_escape(f, h->replay_why, strlen(h->replay_why));
    fprintf(f, "): communication is under-reported\n");
  }
  if (h->top_op[0]) {
    double x = ncs_headline_expected(h);
    fprintf(f, "  dominant: %s, %.0f%% of communication time", h->top_op, 100 * h->top_op_share);
    if (h->top_busbw > 0) fprintf(f, ", at %.2f GB/s busbw", h->top_busbw);
    if (h->top_busbw > 0 && x > 0) {
      fprintf(f, " (%.0f%% of the %.3g GB/s expected at its sizes; ", 100 * h->top_busbw / x, x);
      ncs_text_escape(f, h->link.why, strlen(h->link.why));
      fprintf(f, "; docs/REFERENCE-FIGURES.md)");
    }
    fputc('\n', f);
  }
  fprintf(f, "  transports: %s; %s", tr, nvlink_word(h));
  if (h->busbw_med > 0) fprintf(f, "; large collectives at %.1f GB/s busbw (median rank)", h->busbw_med);
  fputc('\n', f);
  if (h->slowest_rank >= 0) {
    fprintf(f, "  slowest: rank %d (", h->slowest_rank);
    ncs_text_escape(f, h->slowest_host, strlen(h->slowest_host));
    fprintf(f, ") last to arrive at %.0f%% of its collectives, %.3f s of others' waiting; arrival skew %.0f us mean\n",
            h->slowest_last_pct, h->slowest_wait_s, h->skew_mean_us);
  }
  int hang_listed = h->missing != NULL; /* a desync or missing-collective verdict names them */
  for (int i = 0; i < h->nfirst; i++) hang_listed |= h->first[i]->hang != NULL;
  if ((h->mismatches || h->incomplete) && !hang_listed)
    fprintf(f, "  MISMATCH/MISSING: %llu collective(s) called differently by some rank, %llu entered by only some ranks\n",
            (unsigned long long)h->mismatches, (unsigned long long)h->incomplete);
  if (!with_problems) return; /* the caller lists the verdicts itself (doctor) */
  if (h->missing && h->missing->nevidence) {
    fprintf(f, "  NOTE %s: ", h->missing->id);
    ncs_text_escape(f, h->missing->evidence[0], strlen(h->missing->evidence[0]));
    fputc('\n', f);
  }
  int compact = h->kinds > 2; /* many kinds: one line each, the blamed ranks without the title */
  for (int i = 0; i < h->nfirst; i++) {
    const struct ncs_verdict *v = h->first[i];
    int one_line = compact && v->nevidence; /* the blamed ranks (first evidence) in place of the title */
    fprintf(f, "  PROBLEM %s: ", v->id);
    if (one_line) ncs_text_escape(f, v->evidence[0], strlen(v->evidence[0]));
    else {
      fputs(v->title, f);
      if (h->count[i] > 1) fprintf(f, " (%d verdicts)", h->count[i]);
    }
    print_cost(f, h, v);
    fputc('\n', f);
    if (!one_line && v->nevidence) {
      fprintf(f, "    ");
      ncs_text_escape(f, v->evidence[0], strlen(v->evidence[0]));
      fputc('\n', f);
    }
    if (!strcmp(v->id, "nvlink-unused")) fprintf(f, "    why: %s\n", v->next); /* the variable responsible */
  }
  if (h->kinds > h->nfirst) fprintf(f, "  ... %d more kinds of problem\n", h->kinds - h->nfirst);
  /* the costliest finding, when no problem line above carries it */
  const struct ncs_headline_cost *c = costliest_unshown(h);
  if (c)
    fprintf(f, "  costliest: %s, %.3f ms of the %.3f ms step: fixed, %.3f ms (report: \"What the problems cost\")\n", c->id,
            (c->step_s - c->fixed_s) * 1e3, c->step_s * 1e3, c->fixed_s * 1e3);
}

static void num_or_null(struct ncs_json *j, const char *k, double v) {
  if (isnan(v)) ncs_json_null(j, k); else ncs_json_num(j, k, v);
}

void ncs_headline_print_json(const struct ncs_headline *h, struct ncs_json *j) {
  char tr[64];
  transport_names(h->transports, tr, sizeof tr);
  ncs_json_obj_begin(j, "headline");
  ncs_json_bool(j, "healthy", h->problems == 0);
  ncs_json_int(j, "ranks", h->ranks);
  if (h->rank_procs != h->ranks) ncs_json_int(j, "rank_processes", h->rank_procs); /* a rank per thread */
  ncs_json_int(j, "gpu_timed_ranks", h->gpu_timed);
  num_or_null(j, "comm_share", h->share_med);
  num_or_null(j, "comm_share_min", h->share_min);
  num_or_null(j, "comm_share_max", h->share_max);
  if (h->rank_min >= 0) ncs_json_int(j, "comm_share_min_rank", h->rank_min); else ncs_json_null(j, "comm_share_min_rank");
  if (h->rank_max >= 0) ncs_json_int(j, "comm_share_max_rank", h->rank_max); else ncs_json_null(j, "comm_share_max_rank");
  num_or_null(j, "compute_to_comm", h->ratio_med);
  if (isnan(h->ratio_med)) ncs_json_null(j, "compute_to_comm_basis"); else ncs_json_str(j, "compute_to_comm_basis", ratio_basis_json(h));
  ncs_json_int(j, "kernel_activity_ranks", h->kact_ranks);
  num_or_null(j, "exposed_share", h->exposed_med);
  num_or_null(j, "hidden_share", h->hidden_med);
  if (h->top_site[0]) {
    ncs_json_obj_begin(j, "most_exposed_site");
    ncs_json_str(j, "site", h->top_site);
    ncs_json_str(j, "op", h->top_site_op);
    ncs_json_int(j, "ranks", h->top_site_ranks);
    ncs_json_num(j, "exposed_s", h->top_site_exp_ms / 1e3);
    ncs_json_num(j, "gpu_s", h->top_site_gpu_ms / 1e3);
    ncs_json_obj_end(j);
  } else {
    ncs_json_null(j, "most_exposed_site");
  }
  /* which headline figures are estimates, and why (docs/JSON.md) */
  ncs_json_arr_begin(j, "estimates");
  if (h->ranks && h->host_timed_ranks) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_arr_begin(j, "figures");
    ncs_json_str(j, NULL, "comm_share");
    ncs_json_str(j, NULL, "compute_to_comm");
    ncs_json_arr_end(j);
    ncs_json_int(j, "ranks", h->host_timed_ranks);
    ncs_json_str(j, "basis", "host_timing");
    ncs_json_str(j, "why", h->host_timed_why);
    ncs_json_obj_end(j);
  }
  if (h->ranks && h->no_kact_ranks) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_arr_begin(j, "figures");
    ncs_json_str(j, NULL, isnan(h->exposed_med) ? "comm_share" : "comm_share_of_ranks_without_kernel_activity");
    if (isnan(h->exposed_med)) ncs_json_str(j, NULL, "compute_to_comm");
    ncs_json_arr_end(j);
    ncs_json_int(j, "ranks", h->no_kact_ranks);
    ncs_json_str(j, "basis", "no_kernel_activity");
    ncs_json_str(j, "why", h->no_kact_why);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  if (h->devapi.procs) { /* docs/JSON.md; absent without device communicators */
    ncs_json_obj_begin(j, "device_api");
    ncs_json_int(j, "processes", h->devapi.procs);
    ncs_json_uint(j, "possibly_communicating_kernels", h->devapi.kernels);
    ncs_json_num(j, "possibly_communicating_s", h->devapi.ns / 1e9);
    ncs_json_obj_end(j);
  }
  ncs_json_obj_begin(j, "graph_replays"); /* docs/JSON.md */
  ncs_json_uint(j, "calls", h->replayed_calls);
  ncs_json_int(j, "processes", h->replay_procs);
  ncs_json_int(j, "uncounted_processes", h->replay_uncounted_procs);
  ncs_json_str(j, "why_not", h->replay_uncounted_procs ? h->replay_why : NULL);
  ncs_json_obj_end(j);
  if (h->busbw_med > 0) ncs_json_num(j, "busbw_large_gbps", h->busbw_med); else ncs_json_null(j, "busbw_large_gbps");
  if (h->top_op[0]) {
    double x = ncs_headline_expected(h);
    ncs_json_obj_begin(j, "dominant");
    ncs_json_str(j, "op", h->top_op);
    ncs_json_num(j, "comm_time_share", h->top_op_share);
    if (h->top_busbw > 0) ncs_json_num(j, "busbw_gbps", h->top_busbw); else ncs_json_null(j, "busbw_gbps");
    if (x > 0) ncs_json_num(j, "expected_busbw_gbps", x); else ncs_json_null(j, "expected_busbw_gbps");
    ncs_json_obj_end(j);
  } else {
    ncs_json_null(j, "dominant");
  }
  if (h->link.tclass) {
    ncs_json_obj_begin(j, "link");
    ncs_json_str(j, "transport", ncs_tclass_name(h->link.tclass));
    ncs_json_num(j, "peak_gbps", h->link.peak_gbps);
    ncs_json_num(j, "large_busbw_gbps", h->link.beta_gbps);
    ncs_json_num(j, "step_latency_us", h->link.alpha_us);
    ncs_json_str(j, "why", h->link.why);
    ncs_json_obj_end(j);
  } else {
    ncs_json_null(j, "link");
  }
  ncs_json_str(j, "transports", h->transports ? tr : "");
  if (h->nvlink_in_box < 0) ncs_json_null(j, "nvlink_in_box"); else ncs_json_bool(j, "nvlink_in_box", h->nvlink_in_box);
  ncs_json_bool(j, "nvlink_used", (h->transports & ((1u << NCS_TC_P2P) | (1u << NCS_TC_NVLS))) != 0);
  if (h->slowest_rank >= 0) {
    ncs_json_obj_begin(j, "slowest");
    ncs_json_int(j, "rank", h->slowest_rank);
    ncs_json_str(j, "host", h->slowest_host);
    ncs_json_num(j, "last_pct", h->slowest_last_pct);
    ncs_json_num(j, "wait_caused_s", h->slowest_wait_s);
    ncs_json_num(j, "skew_mean_us", h->skew_mean_us);
    ncs_json_obj_end(j);
  } else {
    ncs_json_null(j, "slowest");
  }
  ncs_json_uint(j, "mismatches", h->mismatches);
  ncs_json_uint(j, "incomplete", h->incomplete);
  if (h->missing) {
    ncs_json_obj_begin(j, "missing_collective");
    ncs_json_str(j, "evidence", h->missing->nevidence ? h->missing->evidence[0] : "");
    ncs_doctor_json_ranks(j, h->missing);
    ncs_json_obj_end(j);
  } else {
    ncs_json_null(j, "missing_collective");
  }
  ncs_json_int(j, "problems", h->problems);
  ncs_json_int(j, "problem_kinds", h->kinds);
  ncs_json_arr_begin(j, "first_problems");
  for (int i = 0; i < h->nfirst; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "id", h->first[i]->id);
    ncs_json_str(j, "title", h->first[i]->title);
    ncs_json_str(j, "evidence", h->first[i]->nevidence ? h->first[i]->evidence[0] : "");
    ncs_json_str(j, "next", h->first[i]->next);
    ncs_json_int(j, "verdicts", h->count[i]);
    const struct ncs_headline_cost *c = ncs_headline_cost_of(h, h->first[i]->id);
    if (c) {
      ncs_json_num(j, "saved_s_per_step", c->step_s - c->fixed_s);
      ncs_json_num(j, "step_s", c->step_s);
      ncs_json_num(j, "step_s_if_fixed", c->fixed_s);
    } else if (h->first[i]->hang && h->first[i]->hang->lost_n) {
      ncs_json_num(j, "time_lost_s", h->first[i]->hang->lost_max_s);
      ncs_json_num(j, "time_lost_total_s", h->first[i]->hang->lost_s);
      ncs_json_num(j, "time_lost_share", h->first[i]->hang->lost_share);
    }
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

void ncs_headline_print_html(const struct ncs_headline *h, FILE *f) {
  char tr[64];
  transport_names(h->transports, tr, sizeof tr);
  fprintf(f, "<section id=\"headline\" class=\"headline %s\"><h2>%d rank%s", h->problems ? "bad" : "good", h->ranks,
          h->ranks == 1 ? "" : "s");
  if (h->rank_procs && h->rank_procs != h->ranks)
    fprintf(f, " in %d process%s", h->rank_procs, h->rank_procs == 1 ? "" : "es");
  fprintf(f, ": %s</h2>\n", state_word(h));
  if (!isnan(h->share_med)) {
    fprintf(f, "<p class=\"big\"><b>%.0f%%</b> of the median rank's time is communication "
               "(%.0f%%&ndash;%.0f%% across ranks, %s timing)",
            100 * h->share_med, 100 * h->share_min, 100 * h->share_max,
            h->gpu_timed == h->ranks ? "GPU" : h->gpu_timed ? "GPU and host" : "host");
    if (!isnan(h->ratio_med)) fprintf(f, "; compute/communication <b>%.2f</b> (%s)", h->ratio_med, ratio_basis(h));
    fprintf(f, ".</p>\n");
    if (!isnan(h->exposed_med))
      fprintf(f, "<p class=\"big\"><b>%.0f%%</b> of GPU time is <i>exposed</i> communication (not hidden under compute; "
                 "median rank)%s</p>\n", 100 * h->exposed_med, h->exposed_med >= 0.5 ? ": communication-bound." : ".");
    if (!isnan(h->exposed_med) && h->top_site[0]) {
      fprintf(f, "<p id=\"top-site\">Most exposed call site: <code>");
      ncs_html_escape(f, h->top_site, strlen(h->top_site));
      fprintf(f, "</code>, %s on %d rank%s: <b>%.3f ms</b> of its %.3f ms on the GPU exposed "
                 "(<a href=\"#callsites\">Call sites</a>).</p>\n", h->top_site_op, h->top_site_ranks,
              h->top_site_ranks == 1 ? "" : "s", h->top_site_exp_ms, h->top_site_gpu_ms);
    }
    else {
      fprintf(f, "<p class=\"note\">Estimate: exposed communication is unknown, no kernel activity (");
      ncs_html_escape(f, h->no_kact_why, strlen(h->no_kact_why));
      fprintf(f, "): the share above counts hidden communication as exposed.</p>\n");
    }
    if (!isnan(h->exposed_med) && h->no_kact_ranks) {
      fprintf(f, "<p class=\"note\">Estimate: %d of %d ranks without kernel activity (", h->no_kact_ranks, h->ranks);
      ncs_html_escape(f, h->no_kact_why, strlen(h->no_kact_why));
      fprintf(f, "): their share counts hidden communication as exposed.</p>\n");
    }
    if (h->devapi.kernels) {
      fprintf(f, "<p class=\"note\">Device API: ");
      devapi_words(f, &h->devapi, "<i>possibly communicating</i>");
      fprintf(f, ", not in the communication share.</p>\n");
    }
    if (h->host_timed_ranks) {
      fprintf(f, "<p class=\"note\">Estimate: %d of %d ranks timed on the host (", h->host_timed_ranks, h->ranks);
      ncs_html_escape(f, h->host_timed_why, strlen(h->host_timed_why));
      fprintf(f, "): their communication time is call entry to return, not the GPU's.</p>\n");
    }
  } else {
    fprintf(f, "<p class=\"big\">No rank was traced long enough to judge its communication share.</p>\n");
  }
  if (h->replay_procs)
    fprintf(f, "<p>CUDA-graph replays: <b>%llu</b> calls replayed from graphs in %d process%s, counted above from kernel activity.</p>\n",
            (unsigned long long)h->replayed_calls, h->replay_procs, h->replay_procs == 1 ? "" : "es");
  if (h->replay_uncounted_procs) {
    fprintf(f, "<p class=\"note\">Estimate: %d process%s captured calls into CUDA graphs whose replays are not counted (",
            h->replay_uncounted_procs, h->replay_uncounted_procs == 1 ? "" : "es");
    ncs_html_escape(f, h->replay_why, strlen(h->replay_why));
    fprintf(f, "): communication is under-reported.</p>\n");
  }
  if (h->top_op[0]) {
    double x = ncs_headline_expected(h);
    fprintf(f, "<p>Dominant operation: <b>%s</b>, %.0f%% of communication time", h->top_op, 100 * h->top_op_share);
    if (h->top_busbw > 0) fprintf(f, ", at <b>%.2f GB/s</b> busbw", h->top_busbw);
    if (h->top_busbw > 0 && x > 0) {
      fprintf(f, " (%.0f%% of the %.3g GB/s expected at its sizes; ", 100 * h->top_busbw / x, x);
      ncs_html_escape(f, h->link.why, strlen(h->link.why));
      fputc(')', f);
    }
    fprintf(f, ".</p>\n");
  }
  fprintf(f, "<p>Transports: <b>%s</b>; %s", tr, nvlink_word(h));
  if (h->busbw_med > 0) fprintf(f, "; large collectives at <b>%.1f GB/s</b> busbw (median rank)", h->busbw_med);
  fprintf(f, ".</p>\n");
  if (h->slowest_rank >= 0) {
    fprintf(f, "<p>Slowest: rank <b>%d</b> (", h->slowest_rank);
    ncs_html_escape(f, h->slowest_host, strlen(h->slowest_host));
    fprintf(f, "), last to arrive at %.0f%% of its collectives (%.3f s of others' waiting).</p>\n",
            h->slowest_last_pct, h->slowest_wait_s);
  }
  if (h->mismatches || h->incomplete)
    fprintf(f, "<p class=\"bad\">%llu collective(s) called differently by some rank, %llu entered by only some ranks.</p>\n",
            (unsigned long long)h->mismatches, (unsigned long long)h->incomplete);
  if (h->missing && h->missing->nevidence) { /* the ranks that had not arrived, as the text names them */
    fprintf(f, "<p class=\"bad\"><b>");
    ncs_html_escape(f, h->missing->id, strlen(h->missing->id));
    fprintf(f, "</b>: ");
    ncs_html_escape(f, h->missing->evidence[0], strlen(h->missing->evidence[0]));
    fprintf(f, "</p>\n");
  }
  if (h->nfirst) {
    fprintf(f, "<ul class=\"problems\">");
    for (int i = 0; i < h->nfirst; i++) {
      fprintf(f, "<li><b>");
      ncs_html_escape(f, h->first[i]->id, strlen(h->first[i]->id));
      fprintf(f, "</b>: ");
      ncs_html_escape(f, h->first[i]->title, strlen(h->first[i]->title));
      if (h->first[i]->nevidence) {
        fprintf(f, "<br><span class=\"note\">");
        ncs_html_escape(f, h->first[i]->evidence[0], strlen(h->first[i]->evidence[0]));
        fprintf(f, "</span>");
      }
      print_cost(f, h, h->first[i]); /* (numbers only: nothing to escape) */
      fprintf(f, "</li>");
    }
    fprintf(f, "</ul>\n");
  }
  const struct ncs_headline_cost *c = costliest_unshown(h);
  if (c) {
    fprintf(f, "<p>Costliest: <b>");
    ncs_html_escape(f, c->id, strlen(c->id));
    fprintf(f, "</b>, %.3f ms of the %.3f ms step: fixed, %.3f ms (below: where the step time goes).</p>\n",
            (c->step_s - c->fixed_s) * 1e3, c->step_s * 1e3, c->fixed_s * 1e3);
  }
  fprintf(f, "</section>\n");
}
