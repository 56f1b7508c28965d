/* callsites_render.c — report's call sites as text and JSON (callsites_render.h). */
#include "render/callsites_render.h"

#include <inttypes.h>
#include <string.h>

#include "ncclscope/ops.h"

#define TEXT_ROWS 10

static const char *rank_label(const struct ncs_job *job, int file) {
  return file >= 0 && file < job->n ? job->rank[file].label : "?";
}

static void say_off(const struct ncs_callsites_result *cs, FILE *out) {
  if (!strcmp(cs->missing, "NCCLSCOPE_CALLSITE_DEPTH=0"))
    fprintf(out, "  no call sites in the traces: the job ran with NCCLSCOPE_CALLSITE_DEPTH=0; leave it unset\n"
                 "  (8 frames) or set it to 1-32 to record them\n");
  else
    fprintf(out, "  no call sites in the traces (static NCCL seen through the profiler plugin, or an\n"
                 "  older shim): they are recorded by the shim's wrappers, NCCLSCOPE_CALLSITE_DEPTH 1-32 (default 8)\n");
}

void ncs_callsites_print_text(const struct ncs_callsites_result *s, FILE *out, const struct ncs_job *job) {
  if (!s) return;
  fprintf(out, "\nCall sites (the job's own frame that issued the calls; sorted by exposed GPU time, then GPU time,\n"
               "then host time)\n");
  if (!s->nrow) { say_off(s, out); return; }
  size_t shown = job->detail ? s->nrow : (s->nrow < TEXT_ROWS ? s->nrow : TEXT_ROWS);
  fprintf(out, "  %-20s %8s %6s %12s %10s %10s %10s  %-10s  %s\n", "op", "calls", "ranks", "bytes", "gpu_ms",
          "exposed_ms", "host_ms", "slowest_ms", "site");
  for (size_t i = 0; i < shown; i++) {
    const struct ncs_csrow *r = &s->row[i];
    char ex[32] = "-";
    if (r->exp_gpu_ns) snprintf(ex, sizeof ex, "%.3f", r->exp_ns / 1e6);
    fprintf(out, "  %-20s %8" PRIu64 " %6d %12" PRIu64 " %10.3f %10s %10.3f  %-10.3f  ",
            r->mixed ? "(several)" : ncs_op_name(r->op) ? ncs_op_name(r->op) : "?", r->calls, r->ranks, r->bytes,
            r->gpu_ns / 1e6, ex, r->host_ns / 1e6, r->slow.ns / 1e6);
    ncs_text_escape(out, r->where, strlen(r->where));
    fprintf(out, "\n  %20s slowest: rank %s, %s", "", rank_label(job, r->slow_file),
            ncs_op_name(r->slow.op) ? ncs_op_name(r->slow.op) : "?");
    if (r->slow.seq) fprintf(out, " #%" PRIu64, r->slow.seq);
    if (r->slow_comm[0]) { fputs(" on ", out); ncs_text_escape(out, r->slow_comm, strlen(r->slow_comm)); }
    fprintf(out, ", %.3f ms %s\n", r->slow.ns / 1e6, r->slow.gpu ? "on the GPU" : "on the host");
    if (!job->detail) continue;
    for (int k = 0; k < r->nstack; k++) {
      fprintf(out, "  %20s   #%d ", "", k);
      ncs_text_escape(out, r->stack[k], strlen(r->stack[k]));
      fputc('\n', out);
    }
  }
  if (shown < s->nrow) fprintf(out, "  ... %zu more sites (--detail lists every site and its stack)\n", s->nrow - shown);
  const struct ncs_csrow *top = &s->row[0];
  if (top->exp_ns) {
    fputs("  most exposed: ", out);
    ncs_text_escape(out, top->where, strlen(top->where));
    fprintf(out, ", %.3f ms of its %.3f ms on the GPU not hidden under compute (all ranks)\n", top->exp_ns / 1e6,
            top->exp_gpu_ns / 1e6);
  } else {
    int any = 0;
    for (size_t i = 0; i < s->nrow; i++) any |= s->row[i].exp_gpu_ns != 0;
    if (!any) fprintf(out, "  exposed_ms: - (no kernel activity in the traces: what is hidden under compute is unknown)\n");
  }
  fprintf(out, "  (exposed_ms: each call's GPU time times its rank's exposed share of that operation and size\n"
               "  from kernel activity, a model: docs/CLI.md \"Call sites\")\n");
  if (!s->have_lines)
    fprintf(out, "  (no source lines: libdw.so.1, elfutils, is not installed; functions come from symbol tables)\n");
}

void ncs_callsites_print_json(const struct ncs_callsites_result *s, struct ncs_json *j, const struct ncs_job *job) {
  if (!s) return;
  ncs_json_arr_begin(j, "callsites");
  for (size_t i = 0; i < s->nrow; i++) {
    const struct ncs_csrow *r = &s->row[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "site", r->where);
    ncs_json_str(j, "function", r->func[0] ? r->func : NULL);
    ncs_json_str(j, "file", r->file[0] ? r->file : NULL);
    if (r->line) ncs_json_int(j, "line", r->line); else ncs_json_null(j, "line");
    ncs_json_str(j, "key", r->key);
    ncs_json_str(j, "module_state", ncs_sym_state_name(r->state));
    ncs_json_str(j, "op", r->mixed ? NULL : ncs_op_name(r->op));
    ncs_json_uint(j, "calls", r->calls);
    ncs_json_int(j, "ranks", r->ranks);
    ncs_json_uint(j, "bytes", r->bytes);
    ncs_json_num(j, "gpu_s", r->gpu_ns / 1e9);
    if (r->exp_gpu_ns) ncs_json_num(j, "exposed_s", r->exp_ns / 1e9); else ncs_json_null(j, "exposed_s");
    ncs_json_num(j, "exposed_of_gpu_s", r->exp_gpu_ns / 1e9);
    ncs_json_uint(j, "gpu_timed_calls", r->gpu_calls);
    ncs_json_num(j, "host_s", r->host_ns / 1e9);
    ncs_json_obj_begin(j, "slowest");
    ncs_json_str(j, "rank", rank_label(job, r->slow_file));
    ncs_json_str(j, "op", ncs_op_name(r->slow.op));
    ncs_json_uint(j, "seq", r->slow.seq);
    ncs_json_str(j, "comm", r->slow_comm[0] ? r->slow_comm : NULL);
    char id[24];
    snprintf(id, sizeof id, "%016" PRIx64, r->slow_comm_id);
    ncs_json_str(j, "comm_id", r->slow_comm_id ? id : NULL);
    ncs_json_num(j, "time_s", r->slow.ns / 1e9);
    ncs_json_str(j, "clock", r->slow.gpu ? "gpu" : "host");
    ncs_json_obj_end(j);
    ncs_json_arr_begin(j, "stack");
    for (int k = 0; k < r->nstack; k++)
      ncs_json_str(j, NULL, r->stack[k]);
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  if (!s->nrow) ncs_json_str(j, "callsites_missing", s->missing);
}

