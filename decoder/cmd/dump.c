/* dump.c — `ncclscope dump PATH...`: every record of each trace, one line each, in file order,
 * with decoded fields, op names and bytes; a line per chunk after its records. Strings from
 * the trace are escaped (ncs_text_escape). Exit (cmd/commands.h): 0 (cut too), 2 usage, 3 damaged, 4 unreadable. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/cli.h"
#include "cmd/commands.h"
#include "base/json.h"
#include "ncclscope/encode.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"
#include "io/trace.h"
#include "model/rules.h"

static FILE *out;

static void esc(const char *s, size_t n) { ncs_text_escape(out, s, n); }
static void escz(const char *s) { esc(s ? s : "", s ? strlen(s) : 0); }
static const char *opname(unsigned op) { const char *n = ncs_op_name(op); return n ? n : "?"; }

static int d_process(void *c, const struct ncs_process *p) {
  fprintf(out, "PROCESS format=%u.%u pid=%u created_realtime_ns=%" PRIu64 " pairs=%zu\n", p->major,
          p->minor, p->pid, p->created_realtime_ns, p->nkv);
  for (size_t i = 0; i < p->nkv; i++) {
    fputs("  ", out);
    escz(p->kv[i].key);
    fputc('=', out);
    esc(p->kv[i].value, p->kv[i].value_len);
    fputc('\n', out);
  }
  return 0;
}
static int d_thread(void *c, const struct ncs_thread *t) {
  fprintf(out, "THREAD thread=%u tid=%" PRIu64 " name=", t->thread, t->tid);
  escz(t->name);
  fputc('\n', out);
  return 0;
}
static int d_comm(void *c, const struct ncs_comm *m) {
  fprintf(out, "COMM comm=%u comm_id=%016" PRIx64 " handle=0x%" PRIx64 " rank=%d nranks=%d device=%d "
          "init_op=%s parent_id=%016" PRIx64 " flags=%u rc=%d t_enter=%" PRIu64 " t_exit=%" PRIu64 " thread=%u",
          m->comm, m->comm_id, m->handle, m->rank, m->nranks, m->device, opname(m->init_op), m->parent_id,
          m->flags, m->rc, m->t_enter, m->t_exit, m->thread);
  if (m->name[0]) { fputs(" name=", out); escz(m->name); } /* 5.4 */
  if (m->parent_id && m->color >= 0) fprintf(out, " color=%d", m->color);
  fputc('\n', out);
  return 0;
}
static int d_comm_end(void *c, const struct ncs_comm_end *e) {
  fprintf(out, "COMM_END comm=%u op=%s rc=%d t_enter=%" PRIu64 " t_exit=%" PRIu64 " thread=%u\n", e->comm,
          opname(e->op), e->rc, e->t_enter, e->t_exit, e->thread);
  return 0;
}
static int d_call(void *c, const struct ncs_call *k) {
  fprintf(out, "CALL op=%s thread=%u tcall=%" PRIu64 " comm=%u seq=%" PRIu64 " count=%" PRIu64
          " datatype=%u bytes=%" PRIu64 " redop=%u root=%d stream=0x%" PRIx64 " t_enter=%" PRIu64
          " duration=%" PRIu64 " rc=%d depth=%u group=%" PRIu64 " callsite=%u flags=%u\n",
          opname(k->op), k->thread, k->tcall, k->comm, k->seq, k->count, k->datatype,
          ncs_rule_bytes(k->count, k->datatype), k->redop, k->root, k->stream,
          k->t_enter, k->t_exit - k->t_enter, k->rc, k->depth, k->group, k->callsite, k->flags);
  return 0;
}
static int d_callsite(void *c, const struct ncs_callsite *s) {
  fprintf(out, "CALLSITE id=%u frames=%u\n", s->id, s->nframes);
  for (uint32_t i = 0; i < s->nframes; i++) {
    fprintf(out, "  #%u module=%u offset=0x%" PRIx64 " symbol=", i, s->frames[i].module, s->frames[i].offset);
    escz(s->frames[i].symbol);
    fprintf(out, "+0x%" PRIx64 "\n", s->frames[i].symbol_offset);
  }
  return 0;
}
static int d_module(void *c, const struct ncs_module *m) {
  fprintf(out, "MODULE module=%u base=0x%" PRIx64 " path=", m->module, m->base);
  escz(m->path);
  if (m->build_id[0]) { fputs(" build_id=", out); escz(m->build_id); } /* 5.4 */
  fputc('\n', out);
  return 0;
}
static int d_drop(void *c, const struct ncs_drop *d) {
  fprintf(out, "DROP reason=%u records=%" PRIu64 " thread=%u\n", d->reason, d->records, d->thread);
  return 0;
}
static int d_clock(void *c, const struct ncs_clock *k) {
  fprintf(out, "CLOCK realtime_ns=%" PRIu64 " monotonic_ns=%" PRIu64 " uncertainty_ns=%" PRIu64 "\n",
          k->realtime_ns, k->monotonic_ns, k->uncertainty_ns);
  return 0;
}
static int d_gpu(void *c, const struct ncs_gpu_time *g) {
  fprintf(out, "GPU_TIME kind=%s thread=%u ref=%" PRIu64 " gpu_start=%" PRIu64 " gpu_end=%" PRIu64
          " duration=%" PRId64 " flags=%u\n", g->kind == 0 ? "call" : g->kind == 1 ? "group" : "?",
          g->thread, g->ref, g->gpu_start, g->gpu_end, (int64_t)(g->gpu_end - g->gpu_start), g->flags);
  return 0;
}
static int d_log(void *c, const struct ncs_log_line *l) {
  fprintf(out, "NCCL_LOG t=%" PRIu64 " line=", l->t);
  esc(l->line, l->len);
  fputc('\n', out);
  return 0;
}
/* KERNEL and KERNEL_NAME decoded (kernel activity, docs/FORMAT.md); other types by number */
static int d_raw(void *c, const struct ncs_raw *r) {
  static const char *const kclass[] = {"compute", "nccl", "memcpy", "memset"};
  struct ncs_rbuf rb;
  if (r->type == NCS_REC_KERNEL) {
    struct ncs_kernel k;
    if (ncs_dec_kernel(ncs_rbuf_on(&rb, r->body, r->len), &k) == 0) {
      fprintf(out, "KERNEL class=%s device=%u stream=%u start=%" PRIu64 " duration=%" PRIu64 " name=%u bytes=%" PRIu64
              " correlation=%u\n", k.kclass < NCS_KCLASS_COUNT ? kclass[k.kclass] : "?", k.device, k.stream, k.start,
              k.duration, k.name, k.bytes, k.correlation);
      return 0;
    }
  } else if (r->type == NCS_REC_KERNEL_NAME) {
    struct ncs_kernel_name n;
    if (ncs_dec_kernel_name(ncs_rbuf_on(&rb, r->body, r->len), &n) == 0) {
      n.name[sizeof n.name - 1] = 0;
      fprintf(out, "KERNEL_NAME id=%u class=%s name=", n.id, n.kclass < NCS_KCLASS_COUNT ? kclass[n.kclass] : "?");
      escz(n.name);
      fputc('\n', out);
      return 0;
    }
  } else if (r->type == NCS_REC_DEVCOMM) {
    struct ncs_devcomm d;
    if (ncs_dec_devcomm(ncs_rbuf_on(&rb, r->body, r->len), &d) == 0) {
      fprintf(out, "DEVCOMM op=%s comm=%u rc=%d handle=0x%" PRIx64 " t_enter=%" PRIu64 " t_exit=%" PRIu64
              " thread=%u flags=%u", opname(d.op), d.comm, d.rc, d.handle, d.t_enter, d.t_exit, d.thread, d.flags);
      if (d.flags & NCS_DEVCOMM_F_REQS)
        fprintf(out, " lsa_multimem=%u barrier_count=%u lsa_barrier_count=%u rail_gin_barrier_count=%u"
                " lsa_lla2a_block_count=%u lsa_lla2a_slot_count=%u gin_force_enable=%u gin_context_count=%u"
                " gin_signal_count=%u gin_counter_count=%u resources=%u resource_bytes=%" PRIu64 " teams=%u multimem_teams=%u",
                d.lsa_multimem, d.barrier_count, d.lsa_barrier_count, d.rail_gin_barrier_count, d.lsa_lla2a_block_count,
                d.lsa_lla2a_slot_count, d.gin_force_enable, d.gin_context_count, d.gin_signal_count, d.gin_counter_count,
                d.resources, d.resource_bytes, d.teams, d.multimem_teams);
      fputc('\n', out);
      return 0;
    }
  }
  fprintf(out, "RECORD type=%u length=%zu\n", r->type, r->len);
  return 0;
}
static int d_inflight(void *c, const struct ncs_inflight *f) {
  fprintf(out, "INFLIGHT kind=%s thread=%u tcall=%" PRIu64 " op=%s comm=%u seq=%" PRIu64 " count=%" PRIu64
          " datatype=%u root=%d nranks=%d key=0x%016" PRIx64 " t_enter=%" PRIu64 " t_seen=%" PRIu64
          " gpu_since=%" PRIu64 "\n", f->kind == NCS_INFLIGHT_HOST ? "host" : f->kind == NCS_INFLIGHT_GPU ? "gpu" : "?",
          f->thread, f->tcall, f->kind == NCS_INFLIGHT_HOST ? opname(f->op) : "-", f->comm, f->seq, f->count,
          f->datatype, f->root, f->nranks, f->key, f->t_enter, f->t_seen, f->gpu_since);
  return 0;
}
static int d_chunk(void *c, uint64_t index, uint64_t dropped, uint32_t flags, uint64_t off) {
  fprintf(out, "-- chunk %" PRIu64 " at offset %" PRIu64 ": dropped_total=%" PRIu64 "%s%s%s%s\n", index, off,
          dropped, (flags & NCS_CHUNK_F_FINAL) ? " final" : "", (flags & NCS_CHUNK_F_REOPENED) ? " reopened" : "",
          (flags & NCS_CHUNK_F_EXEC) ? " exec" : "", (flags & NCS_CHUNK_F_IDLE) ? " idle" : "");
  return 0;
}

static const struct ncs_cli dump_cli = {
  "dump",
  "usage: ncclscope dump PATH...\n"
  "Every record of each trace in file order, one line each (a CALL_RUN as the CALL lines of\n"
  "its calls), a line after each chunk and a summary per file. PATH: trace files or\n"
  "directories.\n"
  "  -h, --help   this text\n"
  "Exit: 0 (a cut trace too), 2 bad usage, 3 damaged input (records before the damage are\n"
  "shown), 4 unreadable input.\n",
  NULL, 0};

int cmd_dump(int argc, char **argv) {
  int r = ncs_cli_next(&dump_cli, argc, argv);
  if (r != NCS_CLI_DONE) return ncs_cli_exit(r);
  if (optind >= argc) return ncs_cli_fail(&dump_cli, "no PATH given");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n < 0) return NCS_EXIT_UNREADABLE;
  if (n == 0) { fprintf(stderr, "ncclscope dump: no trace files (*.ncs) found\n"); ncs_paths_free(files, n); return NCS_EXIT_UNREADABLE; }
  out = stdout;
  struct ncs_visitor v = {.process = d_process, .thread = d_thread, .comm = d_comm, .comm_end = d_comm_end,
                          .call = d_call, .callsite = d_callsite, .module = d_module, .drop = d_drop,
                          .clock = d_clock, .gpu_time = d_gpu, .log_line = d_log, .raw = d_raw,
                          .chunk = d_chunk, .inflight = d_inflight};
  int ret = 0;
  for (int i = 0; i < n; i++) {
    struct ncs_read_status st;
    fputs("== ", out);
    escz(files[i]);
    fputc('\n', out);
    int rc = ncs_trace_read(files[i], &v, &st);
    fprintf(out, "== end: %" PRIu64 " chunks, %" PRIu64 " records, dropped %" PRIu64 "%s%s\n", st.chunks,
            st.records, st.dropped_total, st.truncated ? ", CUT" : st.comms_closed ? ", COMPLETE (communicators closed)"
            : st.exec_ended && !st.final_seen ? ", EXEC'D (the process image was replaced by exec)" : "", rc == 1 ? ", DAMAGED" : "");
    fflush(out);
    if (st.error[0]) fprintf(stderr, "ncclscope: %s\n", st.error);
    ret = ncs_exit_worse(ret, ncs_exit_of_read(rc));
  }
  ncs_paths_free(files, n);
  return ret;
}
