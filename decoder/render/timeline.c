/* timeline.c — `ncclscope timeline PATH... -o FILE.json`: a Chrome trace / Perfetto timeline.
 *
 * Contract: one process track per traced process (named "rank R host pid", sorted by rank),
 * one thread track per CUDA stream it used (the host thread track "host" for calls without a
 * stream), every traced call a complete ("X") event: collectives and point-to-point spanning
 * their GPU interval when the trace has one, else their host interval, other calls (groups,
 * registration, ...) their host interval, with size, bytes, bus
 * bandwidth, transport and timing source as args; communicator init and finalize/destroy/abort
 * as instant events; each collective's events on its ranks are chained by flow arrows (rank r
 * to rank r+1 of its communicator, Chrome-trace "s"/"f" events). All times are on the job clock
 * (align.h) in microseconds from the earliest event (a first pass finds it when an event comes
 * before the earliest trace start, as the call that starts the shim does), so no time is
 * negative. Only standard metadata events (process_name, process_sort_index, thread_name);
 * ncclscope's own facts and the format version go in "otherData". Output is always valid JSON:
 * strings go through the JSON writer.
 * Exit (cmd/commands.h): 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "io/jobload.h"
#include "render/json.h"
#include "ncclscope/ops.h"

struct streams { uint64_t *s; int n, cap; int named; };
#define TIMELINE_JSON_VERSION 2

struct tl {
  FILE *f;              /* NULL in the pass that only finds the earliest time */
  struct streams *st;   /* per file */
  uint64_t events;
  int64_t shift;        /* ns added to every job-clock time */
  int64_t earliest;     /* earliest job-clock time seen */
  int written;          /* events written so far (the first has no comma before it) */
};

/* Starts the next event of the traceEvents array. */
static FILE *ev(struct tl *t) {
  fputs(t->written++ ? ",\n" : "\n", t->f);
  return t->f;
}

/* Writes "key":"escaped value" as a member of an open object; first: it is the first member. */
static void jstr(FILE *f, const char *key, const char *s, int first) {
  struct ncs_json j;
  ncs_json_init(&j, f, 0);
  j.depth = 1;
  j.first[1] = (unsigned char)first;
  ncs_json_str(&j, key, s);
}

static double us(const struct tl *t, int64_t ns) { return (double)(ns + t->shift) / 1e3; }
static void seen(struct tl *t, int64_t ns) { if (ns < t->earliest) t->earliest = ns; }

static void name_process(struct tl *t, int file, const struct ncs_jrank *r) {
  char name[200];
  snprintf(name, sizeof name, "rank %d %s pid %u", r->rank, r->host, r->pid);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0", file + 1);
  fputs(",\"args\":{", t->f);
  jstr(t->f, "name", name, 1);
  fputs("}}", t->f);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
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
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", file + 1, tid);
  if (stream) fprintf(t->f, "stream 0x%llx\"}}", (unsigned long long)stream);
  else fputs("host (no stream)\"}}", t->f);
  return tid;
}

/* Flow arrows for one collective: this rank's event starts the arrow to rank+1 and ends the
 * one from rank-1 (ids from communicator, sequence number and the lower rank). */
static void flows(struct tl *t, int file, int tid, const struct ncs_jev *e, const char *name) {
  if (e->rank < 0 || e->nranks < 2) return;
  double ts = us(t, e->start);
  unsigned long long comm = (unsigned long long)e->comm_id, seq = (unsigned long long)e->c->seq;
  if (e->rank + 1 < e->nranks)
    fprintf(ev(t), "{\"ph\":\"s\",\"id\":\"%016llx:%llu:%d\",\"name\":\"%s\",\"cat\":\"coll-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", comm, seq, e->rank, name, file + 1, tid, ts);
  if (e->rank > 0)
    fprintf(ev(t), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":\"%016llx:%llu:%d\",\"name\":\"%s\",\"cat\":\"coll-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", comm, seq, e->rank - 1, name, file + 1, tid, ts);
}

static void on_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  struct tl *t = ctx;
  if (!t->f) { seen(t, e->start); seen(t, e->a->enter); return; }
  if (!t->st[file].named) name_process(t, file, r);
  int tid = stream_tid(t, file, e->c->stream);
  const char *name = ncs_op_name(e->c->op);
  int kind = ncs_op_kind(e->c->op);
  const char *cat = kind == NCS_KIND_P2P ? "p2p" : kind == NCS_KIND_COLL ? "coll" : kind == NCS_KIND_GROUP ? "group"
                    : kind == NCS_KIND_COMM ? "comm" : "other";
  fprintf(ev(t), "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
          name ? name : "?", cat, file + 1, tid, us(t, e->start), (double)(e->end - e->start) / 1e3);
  fprintf(t->f, ",\"args\":{\"seq\":%llu,\"count\":%llu,\"bytes\":%llu,\"busbw_gbps\":%.3f,\"timing\":\"%s\"",
          (unsigned long long)e->c->seq, (unsigned long long)e->c->count, (unsigned long long)e->bytes,
          e->busbw_gbps, e->has_gpu ? "gpu" : "host");
  jstr(t->f, "transport", e->transport, 0);
  fprintf(t->f, ",\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d,\"host_enter_us\":%.3f,\"host_us\":%.3f",
          (unsigned long long)e->comm_id, e->rank, e->nranks, us(t, e->a->enter),
          (double)(e->a->exit - e->a->enter) / 1e3);
  if (kind == NCS_KIND_P2P || e->c->root >= 0) fprintf(t->f, ",\"%s\":%d", kind == NCS_KIND_P2P ? "peer" : "root", e->c->root);
  if (e->c->rc) fprintf(t->f, ",\"rc\":%d", e->c->rc);
  fputs("}}", t->f);
  t->events++;
  if (kind == NCS_KIND_COLL && name) flows(t, file, tid, e, name);
}

static void on_comm(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e) {
  struct tl *t = ctx;
  if (!t->f) { seen(t, e->t); return; }
  if (!t->st[file].named) name_process(t, file, r);
  const char *name = ncs_op_name(e->op);
  fprintf(ev(t), "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%s\",\"cat\":\"comm\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
                "\"args\":{\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d}}",
          name ? name : "?", file + 1, us(t, e->t), (unsigned long long)e->comm_id, e->rank, e->nranks);
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
    "Exit: 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable input.\n",
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
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope timeline: no trace files\n"); return NCS_EXIT_UNREADABLE; }
  /* First pass (times only) to find the earliest event: the zero of the timeline. */
  struct ncs_load_opts o = {.on_call = on_call, .on_comm = on_comm, .progress_label = "timeline"};
  struct tl t = {.f = NULL, .earliest = 0};
  struct ncs_jobdata *J = NULL;
  o.ctx = &t;
  int rc = ncs_job_load(n, files, &o, &J);
  int readable = !rc && J;
  ncs_job_free(J);
  J = NULL;
  if (!readable) { fprintf(stderr, "ncclscope timeline: no trace could be read\n"); ncs_paths_free(files, n); return NCS_EXIT_UNREADABLE; }
  FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) { perror(out); ncs_paths_free(files, n); return NCS_EXIT_UNREADABLE; }
  t = (struct tl){.f = f, .st = calloc((size_t)n, sizeof *t.st), .shift = -t.earliest};
  if (!t.st) { ncs_paths_free(files, n); if (f != stdout) fclose(f); return NCS_EXIT_UNREADABLE; }
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  o.ctx = &t;
  rc = ncs_job_load(n, files, &o, &J);
  fprintf(f, "\n],\"otherData\":{\"generator\":\"ncclscope timeline\",\"version\":%d", TIMELINE_JSON_VERSION);
  if (J) fprintf(f, ",\"origin_realtime_ns\":%lld,\"clock_uncertainty_us\":%.3f,\"hosts\":%d", (long long)(J->origin - t.shift),
                 J->clock_err_us, J->hosts);
  fputs("}}\n", f);
  int bad = NCS_EXIT_OK; /* a cut trace is normal input: said on stderr, exit 0 */
  for (int i = 0; J && i < J->n; i++)
    if (J->r[i].read_rc || J->r[i].truncated) {
      bad = ncs_exit_worse(bad, ncs_exit_of_read(J->r[i].read_rc));
      if (J->r[i].error[0]) { ncs_text_escape(stderr, J->r[i].error, strlen(J->r[i].error)); fputc('\n', stderr); }
      else if (J->r[i].truncated) { ncs_text_escape(stderr, J->r[i].path, strlen(J->r[i].path)); fputs(": cut (no final chunk)\n", stderr); }
    }
  int werr = ferror(f);
  if (f != stdout && fclose(f) != 0) werr = 1;
  if (werr) { fprintf(stderr, "ncclscope timeline: write error on %s\n", out); rc = NCS_EXIT_UNREADABLE; }
  for (int i = 0; i < n; i++) free(t.st[i].s);
  free(t.st);
  ncs_job_free(J);
  ncs_paths_free(files, n);
  return rc ? NCS_EXIT_UNREADABLE : bad;
}
