/* timeline.c — `ncclscope timeline PATH... -o FILE.json`: a Chrome trace / Perfetto timeline.
 *
 * Contract: one process track per traced process (named "rank R host pid", sorted by rank),
 * one thread track per CUDA stream it used (the host thread track "host" for calls without a
 * stream), every traced call a complete ("X") event: collectives and point-to-point spanning
 * their GPU interval when the trace has one, else their host interval, other calls (groups,
 * registration, ...) their host interval, with size, bytes, bus
 * bandwidth, transport and timing source as args; communicator init and finalize/destroy/abort
 * as instant events. All times are on the job clock (align.h) in microseconds from the
 * earliest trace start. Output is always valid JSON: strings go through the JSON writer.
 * Exit 0, 1 when some input was damaged or truncated (still written), 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "io/jobload.h"
#include "render/json.h"
#include "ncclscope/ops.h"

struct streams { uint64_t *s; int n, cap; int named; };
struct tl {
  FILE *f;
  struct streams *st;   /* per file */
  uint64_t events;
};

/* Writes ,"key":"escaped value" inside an object that already has a member. */
static void jstr(FILE *f, const char *key, const char *s) {
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  j.depth = 1;
  j.first[1] = 0;
  ncs_json_str(&j, key, s);
}

static void name_process(struct tl *t, int file, const struct ncs_jrank *r) {
  char name[200];
  snprintf(name, sizeof name, "rank %d %s pid %u", r->rank, r->host, r->pid);
  fprintf(t->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0", file + 1);
  fputs(",\"args\":{\"x\":0", t->f);
  jstr(t->f, "name", name);
  fputs("}}", t->f);
  fprintf(t->f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
          file + 1, r->rank >= 0 ? r->rank : 1000000 + file);
  t->st[file].named = 1;
}

static int stream_tid(struct tl *t, int file, uint64_t stream) {
  struct streams *s = &t->st[file];
  for (int i = 0; i < s->n; i++) if (s->s[i] == stream) return i + 1;
  if (s->n >= 256) return 1000; /* "other streams" */
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 8;
    uint64_t *p = realloc(s->s, (size_t)nc * sizeof *p);
    if (!p) return 1000;
    s->s = p; s->cap = nc;
  }
  s->s[s->n++] = stream;
  int tid = s->n;
  fprintf(t->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", file + 1, tid);
  if (stream) fprintf(t->f, "stream 0x%llx\"}}", (unsigned long long)stream);
  else fputs("host (no stream)\"}}", t->f);
  return tid;
}

static void on_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  struct tl *t = ctx;
  if (!t->st[file].named) name_process(t, file, r);
  int tid = stream_tid(t, file, e->c->stream);
  const char *name = ncs_op_name(e->c->op);
  int kind = ncs_op_kind(e->c->op);
  const char *cat = kind == NCS_KIND_P2P ? "p2p" : kind == NCS_KIND_COLL ? "coll" : kind == NCS_KIND_GROUP ? "group"
                    : kind == NCS_KIND_COMM ? "comm" : "other";
  fprintf(t->f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
          name ? name : "?", cat, file + 1, tid, (double)e->start / 1e3,
          (double)(e->end - e->start) / 1e3);
  fprintf(t->f, ",\"args\":{\"seq\":%llu,\"count\":%llu,\"bytes\":%llu,\"busbw_gbps\":%.3f,\"timing\":\"%s\"",
          (unsigned long long)e->c->seq, (unsigned long long)e->c->count, (unsigned long long)e->bytes,
          e->busbw_gbps, e->has_gpu ? "gpu" : "host");
  jstr(t->f, "transport", e->transport);
  fprintf(t->f, ",\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d,\"host_enter_us\":%.3f,\"host_us\":%.3f",
          (unsigned long long)e->comm_id, e->rank, e->nranks, (double)e->a->enter / 1e3,
          (double)(e->a->exit - e->a->enter) / 1e3);
  if (kind == NCS_KIND_P2P || e->c->root >= 0) fprintf(t->f, ",\"%s\":%d", kind == NCS_KIND_P2P ? "peer" : "root", e->c->root);
  if (e->c->rc) fprintf(t->f, ",\"rc\":%d", e->c->rc);
  fputs("}}", t->f);
  t->events++;
}

static void on_comm(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e) {
  struct tl *t = ctx;
  if (!t->st[file].named) name_process(t, file, r);
  const char *name = ncs_op_name(e->op);
  fprintf(t->f, ",\n{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%s\",\"cat\":\"comm\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
                "\"args\":{\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d}}",
          name ? name : "?", file + 1, (double)e->t / 1e3, (unsigned long long)e->comm_id, e->rank, e->nranks);
  t->events++;
}

int cmd_timeline(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'}, {0}};
  static const struct ncs_cli cli = {
    "timeline",
    "usage: ncclscope timeline PATH... -o FILE.json\n"
    "A Chrome trace / Perfetto JSON file of every traced call, all hosts on one clock (open it in\n"
    "ui.perfetto.dev or chrome://tracing).\n"
    "  -o, --output FILE   where to write it (- for standard output)\n"
    "  -h, --help          this text\n"
    "Exit: 0, 1 damaged or truncated input (still written), 2 bad usage or unreadable input.\n",
    opts, 0};
  const char *out = NULL;
  int r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'o') out = optarg;
    else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&cli, "no PATH given");
  if (!out) return ncs_cli_fail(&cli, "no output file: -o FILE.json");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope timeline: no trace files\n"); return 2; }
  FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) { perror(out); ncs_paths_free(files, n); return 2; }
  struct tl t = {.f = f, .st = calloc((size_t)n, sizeof *t.st)};
  if (!t.st) { ncs_paths_free(files, n); return 2; }
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"ncclscope\",\"pid\":0,\"tid\":0,\"args\":{}}", f);
  struct ncs_load_opts o = {.ctx = &t, .on_call = on_call, .on_comm = on_comm, .progress_label = "timeline"};
  struct ncs_jobdata *J = NULL;
  int rc = ncs_job_load(n, files, &o, &J);
  fputs("\n],\"otherData\":{\"generator\":\"ncclscope timeline\"", f);
  if (J) fprintf(f, ",\"origin_realtime_ns\":%lld,\"clock_uncertainty_us\":%.3f,\"hosts\":%d", (long long)J->origin,
                 J->clock_err_us, J->hosts);
  fputs("}}\n", f);
  int bad = 0;
  for (int i = 0; J && i < J->n; i++)
    if (J->r[i].read_rc || J->r[i].truncated) {
      bad = 1;
      if (J->r[i].error[0]) { ncs_text_escape(stderr, J->r[i].error, strlen(J->r[i].error)); fputc('\n', stderr); }
      else if (J->r[i].truncated) { ncs_text_escape(stderr, J->r[i].path, strlen(J->r[i].path)); fputs(": truncated (no final chunk)\n", stderr); }
    }
  int werr = ferror(f);
  if (f != stdout && fclose(f) != 0) werr = 1;
  if (werr) { fprintf(stderr, "ncclscope timeline: write error on %s\n", out); rc = 2; }
  for (int i = 0; i < n; i++) free(t.st[i].s);
  free(t.st);
  ncs_job_free(J);
  ncs_paths_free(files, n);
  return rc ? 2 : bad ? 1 : 0;
}
