/* window_render.c — a bounded trace's whole run and last window in words (window_render.h). */
#include "render/window_render.h"

#include <time.h>

#include "ncclscope/ops.h"

void ncs_window_utc(uint64_t ns, char *buf, size_t n) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (!ns || !gmtime_r(&t, &tm)) { snprintf(buf, n, "?"); return; }
  size_t k = strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf + k, n - k, ".%03u UTC", (unsigned)(ns / 1000000ull % 1000));
}

void ncs_window_size_text(unsigned bclass, char *buf, size_t n) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned k = bclass / 10 < 4 ? bclass / 10 : 4;
  snprintf(buf, n, "%llu%s", 1ull << (bclass - 10 * k), u[k]);
}

void ncs_window_keep_text(const struct ncs_window_sum *j, char *buf, size_t n) {
  int k = 0;
  buf[0] = 0;
  if (j->keep_ns) k = snprintf(buf, n, "%.0f s", j->keep_ns / 1e9);
  if (j->keep_bytes && k >= 0 && (size_t)k < n) {
    static const char *u[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = j->keep_bytes / 1024.0;
    int e = 0;
    while (v >= 1024 && e < 3) { v /= 1024; e++; }
    snprintf(buf + k, n - (size_t)k, "%s%.4g %s", k ? ", " : "", v, u[e]);
  }
}

void ncs_window_print_text(const struct ncs_window_sum *s, FILE *out) {
  if (!s || !s->files) return;
  const struct ncs_window_sum *j = s;
  char a[48], b[48];
  ncs_window_utc(j->t0_utc, a, sizeof a);
  ncs_window_utc(j->t1_utc, b, sizeof b);
  char k[64];
  ncs_window_keep_text(j, k, sizeof k);
  fprintf(out, "\nBounded trace (NCCLSCOPE_KEEP: %s; %d of %d files): every figure above is of the last window "
               "(%s to %s, %llu calls); the whole run follows (%llu calls)\n",
          k, j->files, j->nfiles, a, b, (unsigned long long)j->win_calls, (unsigned long long)(j->agg_calls + j->win_calls));
  fprintf(out, "Whole run (aggregates): every call of the run, all ranks (%llu before the window, %llu in it)\n",
          (unsigned long long)j->agg_calls, (unsigned long long)j->win_calls);
  fprintf(out, "  %-14s %8s %12s %16s %12s %12s\n", "op", "size", "calls", "bytes", "GPU time s", "busbw GB/s");
  for (int i = 0; i < j->n; i++) {
    const struct ncs_window_row *r = &j->r[i];
    char sz[24], bw[24];
    ncs_window_size_text(r->bclass, sz, sizeof sz);
    if (r->gpu_ns) snprintf(bw, sizeof bw, "%.2f", r->busbytes / (r->gpu_ns / 1e9) / 1e9);
    else snprintf(bw, sizeof bw, "-");
    fprintf(out, "  %-14s %8s %12llu %16llu %12.6f %12s\n", ncs_op_name(r->op), sz, (unsigned long long)r->calls,
            (unsigned long long)r->bytes, r->gpu_ns / 1e9, bw);
  }
  if (j->other_calls) fprintf(out, "  other calls (no bandwidth: group, communicator, registration): %llu\n", (unsigned long long)j->other_calls);
  if (j->kact_files)
    fprintf(out, "Whole run (kernel activity, %d of %d bounded files): GPU communication %.6f s (%.6f s before the window), "
                 "exposed %.6f s\n",
            j->kact_files, j->files, j->gpu_comm_ns / 1e9, j->gpu_comm_before_ns / 1e9, j->gpu_exposed_ns / 1e9);
  else
    fprintf(out, "Whole run (kernel activity): GPU communication and exposed time unknown (no file recorded kernel "
                 "activity for the whole run)\n");
  fprintf(out, "Last window: %s to %s, %llu calls: the per-rank, per-op, straggler, hang and timeline figures\n", a, b,
          (unsigned long long)j->win_calls);
}

void ncs_window_print_json(const struct ncs_window_sum *s, struct ncs_json *js) {
  if (!s || !s->files) return;
  const struct ncs_window_sum *j = s;
  ncs_json_obj_begin(js, "window");
  ncs_json_int(js, "bounded_files", j->files);
  if (j->keep_ns) ncs_json_uint(js, "keep_ns", j->keep_ns);
  if (j->keep_bytes) ncs_json_uint(js, "keep_bytes", j->keep_bytes);
  ncs_json_num(js, "t0_unix_s", j->t0_utc / 1e9);
  ncs_json_num(js, "t1_unix_s", j->t1_utc / 1e9);
  ncs_json_uint(js, "calls", j->win_calls);
  ncs_json_uint(js, "whole_run_calls", j->agg_calls + j->win_calls);
  ncs_json_arr_begin(js, "whole_run");
  for (int i = 0; i < j->n; i++) {
    const struct ncs_window_row *r = &j->r[i];
    ncs_json_obj_begin(js, NULL);
    ncs_json_str(js, "op", ncs_op_name(r->op));
    ncs_json_uint(js, "bytes_log2", r->bclass);
    ncs_json_uint(js, "calls", r->calls);
    ncs_json_uint(js, "bytes", r->bytes);
    ncs_json_uint(js, "failed", r->failed);
    ncs_json_uint(js, "gpu_calls", r->gpu_calls);
    ncs_json_num(js, "gpu_s", r->gpu_ns / 1e9);
    if (r->gpu_ns) ncs_json_num(js, "busbw_GBps", r->busbytes / (r->gpu_ns / 1e9) / 1e9);
    else ncs_json_null(js, "busbw_GBps");
    ncs_json_obj_end(js);
  }
  ncs_json_arr_end(js);
  ncs_json_uint(js, "other_calls", j->other_calls);
  ncs_json_obj_begin(js, "whole_run_gpu"); /* kernel activity over the whole run; null: unknown */
  ncs_json_int(js, "files", j->kact_files);
  if (j->kact_files) {
    ncs_json_num(js, "comm_s", j->gpu_comm_ns / 1e9);
    ncs_json_num(js, "comm_before_window_s", j->gpu_comm_before_ns / 1e9);
    ncs_json_num(js, "exposed_comm_s", j->gpu_exposed_ns / 1e9);
  } else {
    ncs_json_null(js, "comm_s");
    ncs_json_null(js, "comm_before_window_s");
    ncs_json_null(js, "exposed_comm_s");
  }
  ncs_json_obj_end(js);
  ncs_json_obj_end(js);
}

