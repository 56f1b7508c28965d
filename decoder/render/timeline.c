/* timeline.c — `ncclscope timeline PATH... -o FILE.json`: a Chrome trace / Perfetto timeline.
 *
 * Contract: one process track per traced process (named "rank R host pid", sorted by rank),
 * one thread track per CUDA stream it used (the host thread track "host" for calls without a
 * stream), every traced call a complete ("X") event: collectives and point-to-point spanning
 * their GPU interval when the trace has one, else their host interval, other calls (groups,
 * registration, ...) their host interval, with size, bytes, bus
 * bandwidth, transport and timing source as args; communicator init and finalize/destroy/abort
 * as instant events; each collective's events on its ranks are chained by flow arrows (rank r
 * to rank r+1 of its communicator, Chrome-trace "s"/"f" events). Kernel activity (KERNEL
 * records): per process one more thread track per GPU stream (CUPTI's stream id, named "GPU
 * stream N", with the calls' stream when an operation's calls are paired with its kernels,
 * sorted after the host tracks) holding its kernels, copies and sets as "X" events
 * named by kernel, category compute-kernel / nccl-kernel / memcpy / memset, each with its own
 * colour (cname); an NCCL call is linked to the NCCL kernel it launched by a flow arrow
 * ("kernel-flow") when the pairing is certain: for each operation, the calls outside groups and
 * graphs on one stream and the kernels on one GPU stream, as many of each (then the i-th call
 * launched the i-th kernel). At most --max-kernels kernels per process are written (default
 * 50000, in file order); what is left out is counted in an instant event "kernels left out" on
 * that process and in otherData. All times are on the job clock
 * (align.h) in microseconds from the earliest event (a first pass finds it when an event comes
 * before the earliest trace start, as the call that starts the shim does; it also counts each
 * process's kernels and the pairings above), so no time is negative. Only standard metadata
 * events (process_name, process_sort_index, thread_name, thread_sort_index);
 * ncclscope's own facts and the format version go in "otherData". Output is always valid JSON:
 * strings go through the JSON writer.
 * Exit (cmd/commands.h): 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/jobpick.h"
#include "cmd/commands.h"
#include "io/jobload.h"
#include "model/knames.h"
#include "render/json.h"
#include "ncclscope/ops.h"

struct streams { uint64_t *s; int n, cap; int named; };
#define TIMELINE_JSON_VERSION 2
#define KERNEL_TID0 2000          /* GPU stream tracks: tids 2001..2256, 2999 for the rest */
#define MAX_KERNELS_DEFAULT 50000 /* kernels written per process unless --max-kernels says */

/* Per file and kernel operation ("AllReduce"): can its calls be paired with its kernels? */
#define LINK_OPS 8
struct link {
  char op[24];
  uint64_t calls, kernels;      /* pass 1: calls outside groups and graphs; NCCL kernels */
  uint64_t stream, kstream;     /* the one cudaStream_t of its calls, GPU stream of its kernels */
  int bad;                      /* a grouped or captured call, or a second stream: not paired */
  uint64_t shown;               /* pass 1: its kernels among those written (under the cap) */
  uint64_t calls2, kernels2;    /* pass 2: ordinals so far */
};
struct kfile {
  struct ncs_knames names;
  struct streams ks;            /* GPU streams seen (pass 2) */
  uint64_t kernels, written;    /* pass 1: kernels in the file; pass 2: written so far */
  struct link link[LINK_OPS];
  int nlink;
};

struct tl {
  FILE *f;              /* NULL in the pass that only finds the earliest time */
  struct streams *st;   /* per file */
  struct kfile *kf;     /* per file, both passes */
  int64_t max_kernels;  /* per file; -1 no cap */
  uint64_t events, kernels, kernels_left;
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

/* The pairing state of kernel operation op (len bytes) in file kf; NULL when the table is full. */
static struct link *link_of(struct kfile *kf, const char *op, size_t len) {
  if (len >= sizeof kf->link[0].op) len = sizeof kf->link[0].op - 1;
  for (int i = 0; i < kf->nlink; i++)
    if (strlen(kf->link[i].op) == len && !memcmp(kf->link[i].op, op, len)) return &kf->link[i];
  if (kf->nlink == LINK_OPS) return NULL;
  struct link *l = &kf->link[kf->nlink++];
  memset(l, 0, sizeof *l);
  memcpy(l->op, op, len);
  return l;
}

static int linked(const struct link *l) { return l && !l->bad && l->calls == l->kernels && l->calls; }

/* Pass 1: a call that launches an NCCL kernel of its own counts towards its operation's pairing. */
static void link_count_call(struct tl *t, int file, const struct ncs_call *c) {
  const char *op = ncs_kernel_op_of_call(c->op);
  if (!op || c->rc != 0) return;
  struct link *l = link_of(&t->kf[file], op, strlen(op));
  if (!l) return;
  if (c->group || (c->flags & NCS_CALL_F_CAPTURED)) l->bad = 1; /* one kernel per group or graph launch */
  else if (l->calls && c->stream != l->stream) l->bad = 1;
  l->stream = c->stream;
  l->calls++;
}

/* The pairing of an NCCL kernel (its operation from its name), or NULL. */
static struct link *link_of_kernel(struct tl *t, int file, const struct ncs_kernel *k) {
  size_t len;
  const char *op = k->kclass == NCS_KCLASS_NCCL ? ncs_kernel_op(ncs_knames_get(&t->kf[file].names, k->name), &len) : NULL;
  return op ? link_of(&t->kf[file], op, len) : NULL;
}


/* Pass 2: the flow's start on an NCCL call whose kernel was written. */
static void kernel_flow_call(struct tl *t, int file, int tid, const struct ncs_jev *e) {
  const char *op = ncs_kernel_op_of_call(e->c->op);
  if (!op || e->c->rc != 0) return;
  struct link *l = link_of(&t->kf[file], op, strlen(op));
  if (!linked(l)) return;
  uint64_t i = l->calls2++;
  if (i < l->shown)
    fprintf(ev(t), "{\"ph\":\"s\",\"id\":\"k%d:%s:%llu\",\"name\":\"launch\",\"cat\":\"kernel-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", file + 1, l->op, (unsigned long long)i, file + 1, tid, us(t, e->start));
}

static void on_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  struct tl *t = ctx;
  if (!t->f) { seen(t, e->start); seen(t, e->a->enter); link_count_call(t, file, e->c); return; }
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
  kernel_flow_call(t, file, tid, e);
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

/* A GPU stream's track: tid KERNEL_TID0 + 1.. in order of first use, named and sorted after
 * the host tracks. */
static int kernel_tid(struct tl *t, int file, uint32_t stream) {
  struct streams *s = &t->kf[file].ks;
  for (int i = 0; i < s->n; i++) if (s->s[i] == stream) return KERNEL_TID0 + i + 1;
  int other = s->n >= 256;
  if (!other && s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 8;
    uint64_t *p = realloc(s->s, (size_t)nc * sizeof *p);
    if (p) { s->s = p; s->cap = nc; } else other = 1;
  }
  int tid = KERNEL_TID0 + 999;
  if (!other) { s->s[s->n++] = stream; tid = KERNEL_TID0 + s->n; }
  else if (s->named) return tid; /* "other GPU streams" named once */
  else s->named = 1;
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", file + 1, tid);
  const struct link *via = NULL; /* the calls' stream of an operation paired with this GPU stream */
  for (int i = 0; !other && i < t->kf[file].nlink && !via; i++)
    if (linked(&t->kf[file].link[i]) && t->kf[file].link[i].kstream == stream) via = &t->kf[file].link[i];
  if (other) fputs("other GPU streams\"}}", t->f);
  else if (via) fprintf(t->f, "GPU stream %u (%s of stream 0x%llx)\"}}", stream, via->op, (unsigned long long)via->stream);
  else fprintf(t->f, "GPU stream %u\"}}", stream);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
          file + 1, tid, tid);
  return tid;
}

static void on_kernel(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *a) {
  struct tl *t = ctx;
  struct kfile *kf = &t->kf[file];
  const struct ncs_kernel *k = a->k;
  struct link *l = k->kclass == NCS_KCLASS_NCCL ? link_of_kernel(t, file, k) : NULL;
  if (!t->f) { /* pass 1: the zero of the timeline, the counts and the pairing */
    seen(t, a->start);
    if (l) {
      if (l->kernels && k->stream != l->kstream) l->bad = 1;
      l->kstream = k->stream;
      l->kernels++;
      if (t->max_kernels < 0 || kf->kernels < (uint64_t)t->max_kernels) l->shown++;
    }
    kf->kernels++;
    return;
  }
  if (t->max_kernels >= 0 && kf->written >= (uint64_t)t->max_kernels) {
    if (kf->written++ == (uint64_t)t->max_kernels) { /* the first one left out: say how many */
      if (!t->st[file].named) name_process(t, file, r);
      uint64_t left = kf->kernels > (uint64_t)t->max_kernels ? kf->kernels - (uint64_t)t->max_kernels : 1;
      t->kernels_left += left;
      fprintf(ev(t), "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"kernels left out\",\"cat\":\"note\",\"pid\":%d,\"tid\":0,"
                    "\"ts\":%.3f,\"args\":{\"left_out\":%llu,\"written\":%lld,\"option\":\"--max-kernels\"}}",
              file + 1, us(t, a->start), (unsigned long long)left, (long long)t->max_kernels);
    }
    return;
  }
  kf->written++;
  if (!t->st[file].named) name_process(t, file, r);
  int tid = kernel_tid(t, file, k->stream);
  static const char *const cat[] = {"compute-kernel", "nccl-kernel", "memcpy", "memset"};
  static const char *const cname[] = {"thread_state_running", "thread_state_iowait", "generic_work", "generic_work"};
  unsigned c = k->kclass < 4 ? k->kclass : 0;
  const char *name = ncs_knames_get(&kf->names, k->name);
  fputc('{', ev(t));
  jstr(t->f, "name", name ? name : c == NCS_KCLASS_MEMCPY ? "memcpy" : c == NCS_KCLASS_MEMSET ? "memset" : "kernel", 1);
  fprintf(t->f, ",\"ph\":\"X\",\"cat\":\"%s\",\"cname\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"stream\":%u,\"device\":%u,\"correlation\":%u",
          cat[c], cname[c], file + 1, tid, us(t, a->start), (double)(a->end - a->start) / 1e3, k->stream, k->device,
          k->correlation);
  if (c >= NCS_KCLASS_MEMCPY) fprintf(t->f, ",\"bytes\":%llu", (unsigned long long)k->bytes);
  fputs("}}", t->f);
  t->kernels++;
  if (linked(l)) {
    uint64_t i = l->kernels2++;
    fprintf(ev(t), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":\"k%d:%s:%llu\",\"name\":\"launch\",\"cat\":\"kernel-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", file + 1, l->op, (unsigned long long)i, file + 1, tid, us(t, a->start));
  }
}

/* Every file's KERNEL_NAME records, for the kernels' names (per-file state: files may be read
 * at once). */
static int names_raw(void *ctx, const struct ncs_raw *r) { ncs_knames_add_raw(ctx, r); return 0; }
static void names_visitor(void *ctx, int file, struct ncs_mux *m) {
  struct tl *t = ctx;
  if (m->n < NCS_MUX_MAX) m->v[m->n++] = (struct ncs_visitor){.ctx = &t->kf[file].names, .raw = names_raw};
}

static void kfiles_free(struct kfile *kf, int n) {
  for (int i = 0; kf && i < n; i++) { ncs_knames_free(&kf[i].names); free(kf[i].ks.s); }
  free(kf);
}

int cmd_timeline(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"max-kernels", required_argument, NULL, 'k'}, NCS_JOB_OPTION, {0}};
  static const struct ncs_cli cli = {
    "timeline",
    "usage: ncclscope timeline [--max-kernels N|all] [--job ID] PATH... -o FILE.json\n"
    "A Chrome trace / Perfetto JSON file of every traced call, and of the kernels each GPU stream\n"
    "ran (compute and NCCL kernels apart, calls linked to their kernels), all hosts on one clock\n"
    "(open it in ui.perfetto.dev or chrome://tracing).\n"
    "  -o, --output FILE    where to write it (- for standard output)\n"
    "  --max-kernels N|all  kernels written per process, the first in the trace (default 50000;\n"
    "                       0: none); those left out are counted on the timeline\n"
    NCS_JOB_HELP
    "  -h, --help           this text\n"
    "Exit: 0 (cut traces too), 2 bad usage, 3 damaged input (still written), 4 unreadable input.\n",
    opts, 0};
  const char *out = NULL, *want_job = NULL;
  int64_t max_kernels = MAX_KERNELS_DEFAULT;
  int r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'o') out = optarg;
    else if (r == 'J') want_job = optarg;
    else if (r == 'k') {
      long v;
      if (!strcmp(optarg, "all")) max_kernels = -1;
      else if (ncs_cli_long(&cli, "--max-kernels", optarg, &v) != 0) return NCS_EXIT_USAGE;
      else if (v < 0) return ncs_cli_fail(&cli, "--max-kernels: a count >= 0 or 'all' (got %s)", optarg);
      else max_kernels = v;
    } else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&cli, "no PATH given");
  if (!out) return ncs_cli_fail(&cli, "no output file: -o FILE.json");
  char **files;
  int n = ncs_paths_expand(argc - optind, argv + optind, &files);
  if (n <= 0) { if (n == 0) fprintf(stderr, "ncclscope timeline: no trace files\n"); return NCS_EXIT_UNREADABLE; }
  if (want_job && (r = ncs_pick_job("timeline", want_job, &n, &files))) { ncs_paths_free(files, n); return r; }
  /* First pass (times only) to find the earliest event, the zero of the timeline, and to count
   * each file's kernels and which calls pair with them. */
  struct ncs_load_opts o = {.on_call = on_call, .on_comm = on_comm, .progress_label = "timeline"};
  struct tl t = {.f = NULL, .earliest = 0, .max_kernels = max_kernels, .kf = calloc((size_t)n, sizeof *t.kf)};
  if (!t.kf) { ncs_paths_free(files, n); fprintf(stderr, "ncclscope timeline: out of memory\n"); return NCS_EXIT_UNREADABLE; }
  if (max_kernels) { o.on_kernel = on_kernel; o.file_visitor = names_visitor; }
  struct ncs_jobdata *J = NULL;
  o.ctx = &t;
  int rc = ncs_job_load(n, files, &o, &J);
  int readable = !rc && J;
  if (readable && (r = ncs_one_job("timeline", J, files))) { ncs_job_free(J); kfiles_free(t.kf, n); ncs_paths_free(files, n); return r; }
  ncs_job_free(J);
  J = NULL;
  if (!readable) { fprintf(stderr, "ncclscope timeline: no trace could be read\n"); kfiles_free(t.kf, n); ncs_paths_free(files, n); return NCS_EXIT_UNREADABLE; }
  FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) { perror(out); kfiles_free(t.kf, n); ncs_paths_free(files, n); return NCS_EXIT_UNREADABLE; }
  t = (struct tl){.f = f, .st = calloc((size_t)n, sizeof *t.st), .shift = -t.earliest, .kf = t.kf, .max_kernels = max_kernels};
  if (!t.st) { kfiles_free(t.kf, n); ncs_paths_free(files, n); if (f != stdout) fclose(f); return NCS_EXIT_UNREADABLE; }
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  o.ctx = &t;
  rc = ncs_job_load(n, files, &o, &J);
  fprintf(f, "\n],\"otherData\":{\"generator\":\"ncclscope timeline\",\"version\":%d", TIMELINE_JSON_VERSION);
  if (J) fprintf(f, ",\"origin_realtime_ns\":%lld,\"clock_uncertainty_us\":%.3f,\"hosts\":%d", (long long)(J->origin - t.shift),
                 J->clock_err_us, J->hosts);
  if (t.kernels || t.kernels_left)
    fprintf(f, ",\"kernels_written\":%llu,\"kernels_left_out\":%llu,\"max_kernels_per_process\":%lld",
            (unsigned long long)t.kernels, (unsigned long long)t.kernels_left, (long long)max_kernels);
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
  kfiles_free(t.kf, n);
  ncs_job_free(J);
  ncs_paths_free(files, n);
  return rc ? NCS_EXIT_UNREADABLE : bad;
}
