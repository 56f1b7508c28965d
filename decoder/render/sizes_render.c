/* sizes_render.c — report's per-size table as text and JSON (sizes_render.h). */
#include "render/sizes_render.h"

#include <string.h>
#include <strings.h>

#include "model/rules.h"

static const char *const place_name[] = {"unknown", "out-of-place", "in-place"};

static int shown(const struct ncs_sizes_result *s, const struct ncs_sizes_row *r) {
  return !s->want || !strcmp(s->want, "all") || !strcasecmp(r->op_name, s->want);
}

void ncs_sizes_print_text(const struct ncs_sizes_result *s, FILE *out) {
  if (!s || !s->nrows) return;
  if (!s->want) {
    fprintf(out, "\nPer-size table: %zu rows (op, size, in-place / out-of-place; warm-up and first calls apart): "
                 "--sizes all prints it\n", s->nrows);
    return;
  }
  fprintf(out, "\nPer size: timed calls, warm-up and each communicator's first call apart; time per call, "
               "busbw from the median (docs/METRICS.md)\n");
  fprintf(out, "  %-13s %5s %-8s %-5s %-12s %12s %6s %5s %5s %10s %10s %10s %9s %9s %s\n", "op", "ranks", "type",
          "redop", "placement", "size(B)", "timed", "warm", "first", "mean_us", "median_us", "p99_us", "algbw",
          "busbw", "timing");
  for (size_t i = 0; i < s->nrows; i++) {
    const struct ncs_sizes_row *r = &s->rows[i];
    if (!shown(s, r)) continue;
    fprintf(out, "  %-13s %5d %-8s %-5s %-12s %12.0f %6llu %5llu %5llu", r->op_name, r->nranks,
            ncs_rule_dtype_name(r->dtype), r->op == NCS_SIZES_SENDRECV ? "-" : ncs_rule_redop_name(r->redop), place_name[r->place], r->bytes,
            (unsigned long long)r->timed, (unsigned long long)r->warmup, (unsigned long long)r->first);
    if (r->timed)
      fprintf(out, " %10.2f %10.2f %10.2f %9.2f %9.2f %s", r->mean_ns / 1e3, r->median_ns / 1e3, r->p99_ns / 1e3,
              r->algbw_gbps, r->busbw_gbps, r->gpu ? "gpu" : "host");
    else
      fprintf(out, " %10s %10s %10s %9s %9s -", "-", "-", "-", "-", "-");
    if (r->replayed) fprintf(out, " (%llu of them graph replays)", (unsigned long long)r->replayed);
    if (r->host_only) fprintf(out, " (%llu host-timed left out)", (unsigned long long)r->host_only);
    if (r->over_cap) fprintf(out, " (%llu past the sample cap)", (unsigned long long)r->over_cap);
    fputc('\n', out);
  }
  if (s->grouped)
    fprintf(out, "  not timed: %llu calls inside groups of different calls or without a GPU time\n", (unsigned long long)s->grouped);
  if (s->captured)
    fprintf(out, "  captured into CUDA graphs: %llu calls, counted as their %llu replays (each timed on its kernel)%s\n",
            (unsigned long long)s->captured, (unsigned long long)s->replays,
            s->replays ? "" : "; no replay found (kernel activity off, or host timing: report's graph replays line says why)");
}

void ncs_sizes_print_json(const struct ncs_sizes_result *s, struct ncs_json *j) {
  if (!s) return;
  ncs_json_obj_begin(j, "sizes");
  ncs_json_uint(j, "grouped_calls", s->grouped);
  ncs_json_uint(j, "captured_calls", s->captured);
  ncs_json_uint(j, "replayed_calls", s->replays);
  ncs_json_arr_begin(j, "rows");
  for (size_t i = 0; i < s->nrows; i++) {
    const struct ncs_sizes_row *r = &s->rows[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "op", r->op_name);
    ncs_json_int(j, "nranks", r->nranks);
    ncs_json_str(j, "datatype", ncs_rule_dtype_name(r->dtype));
    ncs_json_str(j, "redop", r->op == NCS_SIZES_SENDRECV ? NULL : ncs_rule_redop_name(r->redop));
    ncs_json_str(j, "placement", place_name[r->place]);
    ncs_json_uint(j, "count", r->count);
    ncs_json_num(j, "bytes", r->bytes);
    ncs_json_uint(j, "timed", r->timed);
    ncs_json_uint(j, "replayed", r->replayed);
    ncs_json_uint(j, "warmup", r->warmup);
    ncs_json_uint(j, "first", r->first);
    ncs_json_uint(j, "host_only", r->host_only);
    ncs_json_uint(j, "over_cap", r->over_cap);
    ncs_json_str(j, "timing", !r->timed ? NULL : r->gpu ? "gpu" : "host");
    if (r->timed) {
      ncs_json_num(j, "mean_us", r->mean_ns / 1e3);
      ncs_json_num(j, "median_us", r->median_ns / 1e3);
      ncs_json_num(j, "p99_us", r->p99_ns / 1e3);
      ncs_json_num(j, "algbw_gbps", r->algbw_gbps);
      ncs_json_num(j, "busbw_gbps", r->busbw_gbps);
    } else {
      ncs_json_null(j, "mean_us");
      ncs_json_null(j, "median_us");
      ncs_json_null(j, "p99_us");
      ncs_json_null(j, "algbw_gbps");
      ncs_json_null(j, "busbw_gbps");
    }
    ncs_json_num(j, "busbw_factor", r->busbw_factor);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_end(j);
}

