/* timeline.c — the timeline renderer (render/timeline.h) of `ncclscope timeline PATH... -o
 * FILE.json` (cmd/timeline_cmd.c): a Chrome trace / Perfetto timeline.
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
 * (align.h) in microseconds from the earliest event (an event may come before the earliest
 * trace start, as the call that starts the shim does), so no time is negative. Each file is
 * read once: the zero of the timeline, each process's kernel count and the pairings above are
 * known only at the end of that read, so its events are kept meanwhile in a spool, an unlinked
 * temporary file in $TMPDIR (or /tmp), compactly (varints, ~40-60 bytes an event), and written
 * out from it once the read is over, file by file in the files' order (each file's events in the
 * order they were read; files read at once by decoding threads interleave differently from run
 * to run, so the spool's stretches of one file's events are noted, 24 bytes each): the output is
 * the same whatever the threads did. Memory stays bounded (per file a few hundred bytes and its
 * kernel names, and the stretches: ~0.2 % of the spool at 1024 x 100k calls, 2 threads). With --job every file given is in that read
 * (which job each is in comes with it) and only the picked job's files are written, numbered
 * among themselves, their zero, hosts and clock uncertainty taken over them alone: the output of
 * reading those files alone. Only standard metadata
 * events (process_name, process_sort_index, thread_name, thread_sort_index);
 * ncclscope's own facts and the format version go in "otherData". Output is always valid JSON:
 * strings go through the JSON writer.
 * Communicators are named as the job knows them (model/commnames.h: its commName, else its
 * ranks and parent): "comm_name" beside "comm" (the id) in each call's and each communicator
 * event's args, a process track "rank R of NAME host pid" when its communicator has a name the
 * job gave, and a stream's track "stream 0x...: NAME; NAME" after the communicators whose calls
 * it carried (the first 4).
 * What is written is chosen and bounded (issue 27): --ranks LIST (other ranks' events are not
 * spooled), by default every rank up to 64 and past 64 rank 0 and the straggler analysis'
 * culprits among the job's ranks (then no collective arrows: their partner may be missing;
 * chosen from a first read when the command made one, ncs_timeline_choose, so that only their
 * events are spooled, else at the write from the spool's every rank); --window T0:T1 seconds
 * on the timeline's axis (no call-to-kernel arrows then); --max-mb N of JSON (default 256,
 * counted by the output's FILE, a cookie that hands the bytes to a plain file or to zlib for
 * a name ending in .gz); each leaves out what it leaves out with a line on stderr and a count
 * in otherData.
 * A bounded trace (NCCLSCOPE_KEEP) holds the calls of its last window only: the window's
 * visitor (analysis/window.h) rides on the same read, and the output says so on stderr, in
 * otherData "bounded" (the bound, the window's start and end, its calls and the whole run's)
 * and with a global instant event at the window's start. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "render/timeline.h"
#include "base/exit.h"
#include "analysis/jobsum.h"
#include "model/knames.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "base/json.h"
#include "ncclscope/ops.h"
#include "analysis/straggler.h"
#include "analysis/window.h"
#include "render/window_render.h"
#include "model/commnames.h"

struct streams { uint64_t *s; int n, cap; int named; };
#define TIMELINE_JSON_VERSION 2
#define KERNEL_TID0 2000          /* GPU stream tracks: tids 2001..2256, 2999 for the rest */

/* A CUDA stream of a file and the first SC_COMMS communicators whose calls it carried. */
#define SC_COMMS 4
struct scomm { uint64_t stream, comm[SC_COMMS]; int n, more; };

/* Per file and kernel operation ("AllReduce"): can its calls be paired with its kernels? */
#define LINK_OPS 8
struct link {
  char op[24];
  uint64_t calls, kernels;      /* read: calls outside groups and graphs; NCCL kernels */
  uint64_t stream, kstream;     /* the one cudaStream_t of its calls, GPU stream of its kernels */
  int bad;                      /* a grouped or captured call, or a second stream: not paired */
  uint64_t shown;               /* read: its kernels among those written (under the cap) */
  uint64_t calls2, kernels2;    /* write: ordinals so far */
};
struct kfile {
  struct ncs_knames names;      /* the kernel names read so far (all of them once read) */
  char **defs;                  /* every name given to an id, in file order (ids may be renamed) */
  uint32_t ndefs, capdefs;
  uint32_t *def_of, ndef_of;    /* [id]: its latest name so far, 1 + index into defs; 0 none yet */
  struct ncs_jrank who;         /* the process as it stood at its first event (track name) */
  int have_who;
  int64_t earliest;             /* its earliest event (job clock), when have_earliest */
  int have_earliest;
  struct streams ks;            /* GPU streams seen (write) */
  uint64_t kernels, written;    /* read: kernels in the file; write: written so far */
  struct link link[LINK_OPS];
  int nlink;
  struct scomm *sc;             /* read: the communicators of each stream's calls (track names) */
  int nsc, capsc, lastsc;
};

struct ncs_timeline {
  FILE *f;              /* the output; NULL while the files are read (events go to the spool) */
  FILE *spool;          /* the read's events, in the order the loader gave them */
  int spool_err;        /* a spool record could not be written or read back */
  struct spool_seg *seg; /* the spool's stretches of one file's events, in spool order */
  size_t nseg, capseg;
  uint64_t spooled;     /* the spool's bytes */
  uint32_t kdef;        /* writing a kernel: its name as it stood then (kfile.def_of) */
  struct streams *st;   /* per file */
  struct kfile *kf;     /* per file, both passes */
  int64_t max_kernels;  /* per file; -1 no cap */
  uint64_t events, kernels, kernels_left;
  int64_t shift;        /* ns added to every job-clock time */
  int written;          /* events written so far (the first has no comma before it) */
  int *pid;             /* per file: its process track (1 + its index among the files written),
                           0 for a file of another job (--job) or a rank not chosen */
  unsigned char *sel;   /* --ranks: ranks [0, nsel) chosen (NULL: every rank) */
  int nsel;
  unsigned char *pick;  /* past 64 ranks: the files chosen (culprits), per file; NULL: not chosen yet */
  char pick_why[512];   /* what each chosen file is, for stderr */
  int no_flows;         /* ranks chosen: no collective arrows (their partner may be left out) */
  int windowed;         /* --window: [w0, w1] ns on the timeline's axis */
  int64_t w0, w1;
  uint64_t limit;       /* --max-mb in bytes of JSON, 0 none */
  uint64_t left_window, left_size; /* events left out by --window, by --max-mb */
  struct sink *sink;
  int nfiles;
  struct ncs_timeline_cfg cfg; /* what the command asked for */
  struct ncs_window *win;      /* bounded traces: the whole run and the last window */
  struct ncs_commnames *names; /* communicators as the job knows them (model/commnames.h) */
  uint64_t name_id;            /* the last communicator named in args, and its JSON member */
  char name_json[480];
};

/* Starts the next event of the traceEvents array. */
static FILE *ev(struct ncs_timeline *t) {
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

/* ns as microseconds with 3 decimals, the text printf("%.3f", ns / 1e3) gives (below 2^52 ns,
 * 52 days, the double's rounding error is under half the last digit, so the digits are
 * exact), without printf's floating-point formatting: most of the command's time. */
struct usec { char s[32]; };
static struct usec ns_us(int64_t ns) {
  struct usec u;
  if (ns <= -(INT64_C(1) << 52) || ns >= (INT64_C(1) << 52)) {
    snprintf(u.s, sizeof u.s, "%.3f", (double)ns / 1e3);
    return u;
  }
  uint64_t m = ns < 0 ? (uint64_t)-ns : (uint64_t)ns;
  char *p = u.s + sizeof u.s - 1;
  *p = 0;
  for (int i = 0; i < 3; i++, m /= 10) *--p = (char)('0' + m % 10);
  *--p = '.';
  do { *--p = (char)('0' + m % 10); m /= 10; } while (m);
  if (ns < 0) *--p = '-';
  memmove(u.s, p, (size_t)(u.s + sizeof u.s - p));
  return u;
}
/* A job-clock time on the timeline (from its zero). */
static struct usec us(const struct ncs_timeline *t, int64_t ns) { return ns_us(ns + t->shift); }
static void seen(struct ncs_timeline *t, int file, int64_t ns) {
  struct kfile *kf = &t->kf[file];
  if (!kf->have_earliest || ns < kf->earliest) kf->earliest = ns;
  kf->have_earliest = 1;
}

static void name_process(struct ncs_timeline *t, int file, const struct ncs_jrank *r) {
  char name[200];
  const char *given = r->comm_id ? ncs_commnames_given(t->names, r->comm_id) : "";
  if (given[0]) snprintf(name, sizeof name, "rank %d of %s %s pid %u", r->rank, given, r->host, r->pid);
  else snprintf(name, sizeof name, "rank %d %s pid %u", r->rank, r->host, r->pid);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0", t->pid[file]);
  fputs(",\"args\":{", t->f);
  jstr(t->f, "name", name, 1);
  fputs("}}", t->f);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
          t->pid[file], r->rank >= 0 ? r->rank : 1000000 + t->pid[file] - 1);
  t->st[file].named = 1;
}

static int stream_tid(struct ncs_timeline *t, int file, uint64_t stream) {
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
  /* named by the stream and the communicators whose calls it carried (the read saw them all) */
  char name[1024];
  int o = stream ? snprintf(name, sizeof name, "stream 0x%llx", (unsigned long long)stream) : snprintf(name, sizeof name, "host (no stream)");
  const struct kfile *kf = &t->kf[file];
  for (int i = 0; stream && i < kf->nsc; i++) {
    if (kf->sc[i].stream != stream) continue;
    for (int k = 0; k < kf->sc[i].n && o > 0 && (size_t)o < sizeof name; k++) {
      char lab[240];
      o += snprintf(name + o, sizeof name - (size_t)o, "%s%s", k ? "; " : ": ", ncs_commnames_label(t->names, kf->sc[i].comm[k], lab, sizeof lab));
    }
    if (kf->sc[i].more && o > 0 && (size_t)o < sizeof name) snprintf(name + o, sizeof name - (size_t)o, "; ...");
  }
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{", t->pid[file], tid);
  jstr(t->f, "name", name, 1);
  fputs("}}", t->f);
  return tid;
}

/* Flow arrows for one collective: this rank's event starts the arrow to rank+1 and ends the
 * one from rank-1 (ids from communicator, sequence number and the lower rank). */
static void flows(struct ncs_timeline *t, int file, int tid, const struct ncs_jev *e, const char *name) {
  if (t->no_flows || e->rank < 0 || e->nranks < 2) return;
  struct usec ts = us(t, e->start);
  unsigned long long comm = (unsigned long long)e->comm_id, seq = (unsigned long long)e->c->seq;
  if (e->rank + 1 < e->nranks)
    fprintf(ev(t), "{\"ph\":\"s\",\"id\":\"%016llx:%llu:%d\",\"name\":\"%s\",\"cat\":\"coll-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%s}", comm, seq, e->rank, name, t->pid[file], tid, ts.s);
  if (e->rank > 0)
    fprintf(ev(t), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":\"%016llx:%llu:%d\",\"name\":\"%s\",\"cat\":\"coll-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%s}", comm, seq, e->rank - 1, name, t->pid[file], tid, ts.s);
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

/* Read: a call that launches an NCCL kernel of its own counts towards its operation's pairing. */
static void link_count_call(struct ncs_timeline *t, int file, const struct ncs_call *c) {
  const char *op = ncs_kernel_op_of_call(c->op);
  if (!op || c->rc != 0) return;
  struct link *l = link_of(&t->kf[file], op, strlen(op));
  if (!l) return;
  if (c->group || (c->flags & NCS_CALL_F_CAPTURED)) l->bad = 1; /* one kernel per group or graph launch */
  else if (l->calls && c->stream != l->stream) l->bad = 1;
  l->stream = c->stream;
  l->calls++;
}

/* A kernel's name: while reading, as the names read so far give it; while writing, as it
 * stood when the kernel was read, or, when its id had no name yet then, the name read later. */
static const char *kernel_name(const struct ncs_timeline *t, int file, const struct ncs_kernel *k) {
  const struct kfile *kf = &t->kf[file];
  if (t->f && t->kdef) return kf->defs[t->kdef - 1];
  return ncs_knames_get(&kf->names, k->name);
}

/* The pairing of an NCCL kernel (its operation from its name), or NULL. */
static struct link *link_of_kernel(struct ncs_timeline *t, int file, const struct ncs_kernel *k) {
  size_t len;
  const char *op = k->kclass == NCS_KCLASS_NCCL ? ncs_kernel_op(kernel_name(t, file, k), &len) : NULL;
  return op ? link_of(&t->kf[file], op, len) : NULL;
}


/* Write: the flow's start on an NCCL call whose kernel was written. */
static void kernel_flow_call(struct ncs_timeline *t, int file, int tid, const struct ncs_jev *e) {
  const char *op = ncs_kernel_op_of_call(e->c->op);
  if (!op || e->c->rc != 0) return;
  struct link *l = link_of(&t->kf[file], op, strlen(op));
  if (!linked(l)) return;
  uint64_t i = l->calls2++;
  if (i < l->shown)
    fprintf(ev(t), "{\"ph\":\"s\",\"id\":\"k%d:%s:%llu\",\"name\":\"launch\",\"cat\":\"kernel-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%s}", t->pid[file], l->op, (unsigned long long)i, t->pid[file], tid, us(t, e->start).s);
}

/* ---- writing: one event of the spool at a time, in the order the loader gave them ---- */

/* ,"comm_name":"..." for communicator id (escaped once per change of communicator) */
static const char *comm_name_json(struct ncs_timeline *t, uint64_t id) {
  if (t->name_id == id && t->name_json[0]) return t->name_json;
  char lab[240];
  ncs_commnames_label(t->names, id, lab, sizeof lab);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  t->name_json[0] = 0;
  if (m) {
    jstr(m, "comm_name", lab, 0);
    fclose(m);
    if (buf && len < sizeof t->name_json) { memcpy(t->name_json, buf, len + 1); t->name_id = id; }
  }
  free(buf);
  return t->name_json;
}

static void write_call(struct ncs_timeline *t, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  if (!t->st[file].named) name_process(t, file, r);
  int tid = stream_tid(t, file, e->c->stream);
  const char *name = ncs_op_name(e->c->op);
  int kind = ncs_op_kind(e->c->op);
  const char *cat = kind == NCS_KIND_P2P ? "p2p" : kind == NCS_KIND_COLL ? "coll" : kind == NCS_KIND_GROUP ? "group"
                    : kind == NCS_KIND_COMM ? "comm" : "other";
  fprintf(ev(t), "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s",
          name ? name : "?", cat, t->pid[file], tid, us(t, e->start).s, ns_us(e->end - e->start).s);
  fprintf(t->f, ",\"args\":{\"seq\":%llu,\"count\":%llu,\"bytes\":%llu,\"busbw_gbps\":%.3f,\"timing\":\"%s\"",
          (unsigned long long)e->c->seq, (unsigned long long)e->c->count, (unsigned long long)e->bytes,
          ncs_jev_busbw(e), e->has_gpu ? "gpu" : "host");
  jstr(t->f, "transport", e->transport, 0);
  fprintf(t->f, ",\"comm\":\"%016llx\"", (unsigned long long)e->comm_id);
  if (e->comm_id) fputs(comm_name_json(t, e->comm_id), t->f);
  fprintf(t->f, ",\"rank\":%d,\"nranks\":%d,\"host_enter_us\":%s,\"host_us\":%s",
          e->rank, e->nranks, us(t, e->a->enter).s, ns_us(e->a->exit - e->a->enter).s);
  if (kind == NCS_KIND_P2P || e->c->root >= 0) fprintf(t->f, ",\"%s\":%d", kind == NCS_KIND_P2P ? "peer" : "root", e->c->root);
  if (e->c->rc) fprintf(t->f, ",\"rc\":%d", e->c->rc);
  fputs("}}", t->f);
  t->events++;
  if (kind == NCS_KIND_COLL && name) flows(t, file, tid, e, name);
  kernel_flow_call(t, file, tid, e);
}

static void write_comm(struct ncs_timeline *t, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e) {
  if (!t->st[file].named) name_process(t, file, r);
  const char *name = ncs_op_name(e->op);
  fprintf(ev(t), "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%s\",\"cat\":\"comm\",\"pid\":%d,\"tid\":0,\"ts\":%s,"
                "\"args\":{\"comm\":\"%016llx\"", name ? name : "?", t->pid[file], us(t, e->t).s, (unsigned long long)e->comm_id);
  if (e->comm_id) fputs(comm_name_json(t, e->comm_id), t->f);
  fprintf(t->f, ",\"rank\":%d,\"nranks\":%d}}", e->rank, e->nranks);
  t->events++;
}

/* A GPU stream's track: tid KERNEL_TID0 + 1.. in order of first use, named and sorted after
 * the host tracks. */
static int kernel_tid(struct ncs_timeline *t, int file, uint32_t stream) {
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
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", t->pid[file], tid);
  const struct link *via = NULL; /* the calls' stream of an operation paired with this GPU stream */
  for (int i = 0; !other && i < t->kf[file].nlink && !via; i++)
    if (linked(&t->kf[file].link[i]) && t->kf[file].link[i].kstream == stream) via = &t->kf[file].link[i];
  if (other) fputs("other GPU streams\"}}", t->f);
  else if (via) fprintf(t->f, "GPU stream %u (%s of stream 0x%llx)\"}}", stream, via->op, (unsigned long long)via->stream);
  else fprintf(t->f, "GPU stream %u\"}}", stream);
  fprintf(ev(t), "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
          t->pid[file], tid, tid);
  return tid;
}

static void write_kernel(struct ncs_timeline *t, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *a) {
  struct kfile *kf = &t->kf[file];
  const struct ncs_kernel *k = a->k;
  struct link *l = k->kclass == NCS_KCLASS_NCCL ? link_of_kernel(t, file, k) : NULL;
  if (t->max_kernels >= 0 && kf->written >= (uint64_t)t->max_kernels) {
    if (kf->written++ == (uint64_t)t->max_kernels) { /* the first one left out: say how many */
      if (!t->st[file].named) name_process(t, file, r);
      uint64_t left = kf->kernels > (uint64_t)t->max_kernels ? kf->kernels - (uint64_t)t->max_kernels : 1;
      t->kernels_left += left;
      fprintf(ev(t), "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"kernels left out\",\"cat\":\"note\",\"pid\":%d,\"tid\":0,"
                    "\"ts\":%s,\"args\":{\"left_out\":%llu,\"written\":%lld,\"option\":\"--max-kernels\"}}",
              t->pid[file], us(t, a->start).s, (unsigned long long)left, (long long)t->max_kernels);
    }
    return;
  }
  kf->written++;
  if (!t->st[file].named) name_process(t, file, r);
  int tid = kernel_tid(t, file, k->stream);
  static const char *const cat[] = {"compute-kernel", "nccl-kernel", "memcpy", "memset"};
  static const char *const cname[] = {"thread_state_running", "thread_state_iowait", "generic_work", "generic_work"};
  unsigned c = k->kclass < 4 ? k->kclass : 0;
  const char *name = kernel_name(t, file, k);
  fputc('{', ev(t));
  jstr(t->f, "name", name ? name : c == NCS_KCLASS_MEMCPY ? "memcpy" : c == NCS_KCLASS_MEMSET ? "memset" : "kernel", 1);
  fprintf(t->f, ",\"ph\":\"X\",\"cat\":\"%s\",\"cname\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s,"
                "\"args\":{\"stream\":%u,\"device\":%u,\"correlation\":%u",
          cat[c], cname[c], t->pid[file], tid, us(t, a->start).s, ns_us(a->end - a->start).s, k->stream, k->device,
          k->correlation);
  if (c >= NCS_KCLASS_MEMCPY) fprintf(t->f, ",\"bytes\":%llu", (unsigned long long)k->bytes);
  fputs("}}", t->f);
  t->kernels++;
  if (linked(l)) {
    uint64_t i = l->kernels2++;
    fprintf(ev(t), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":\"k%d:%s:%llu\",\"name\":\"launch\",\"cat\":\"kernel-flow\","
                  "\"pid\":%d,\"tid\":%d,\"ts\":%s}", t->pid[file], l->op, (unsigned long long)i, t->pid[file], tid, us(t, a->start).s);
  }
}

/* ---- the spool: what writing needs of each event, one record each (varints) ---- */

enum { SPOOL_CALL = 1, SPOOL_COMM, SPOOL_KERNEL };
#define SPOOL_REC_MAX 256 /* a record's largest body (a call: ~170 bytes at most) */

/* An unlinked temporary file in $TMPDIR (else /tmp), or NULL. */
static FILE *spool_open(void) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/ncclscope-timeline-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  unlink(path);
  FILE *f = fdopen(fd, "w+b");
  if (!f) { close(fd); return NULL; }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  return f;
}

static uint8_t *put_u(uint8_t *p, uint64_t v) { return p + ncs_put_varint(p, v); }
static uint8_t *put_s(uint8_t *p, int64_t v) { return p + ncs_put_varint(p, ncs_zigzag(v)); }
static uint8_t *put_64(uint8_t *p, uint64_t v) { ncs_put_u64(p, v); return p + 8; }

/* The spool holds the events in the order the loader gave them, which interleaves files read
 * at once (decoding threads) differently from run to run; each stretch of one file's events is
 * noted, so that they are written file by file (spool_write): the same output whatever the
 * threads did, and --max-mb leaves out the same events. */
struct spool_seg { uint64_t off, len; int file; };

static void spool_put(struct ncs_timeline *t, int file, const uint8_t *body, const uint8_t *end) {
  uint8_t len[10];
  size_t n = ncs_put_varint(len, (uint64_t)(end - body)), all = n + (size_t)(end - body);
  if (!t->nseg || t->seg[t->nseg - 1].file != file) {
    if (t->nseg == t->capseg) {
      size_t cap = t->capseg ? 2 * t->capseg : 256;
      struct spool_seg *g = realloc(t->seg, cap * sizeof *g);
      if (!g) { t->spool_err = 1; return; }
      t->seg = g;
      t->capseg = cap;
    }
    t->seg[t->nseg++] = (struct spool_seg){t->spooled, 0, file};
  }
  if (fwrite(len, 1, n, t->spool) != n || fwrite(body, 1, (size_t)(end - body), t->spool) != (size_t)(end - body))
    t->spool_err = 1;
  t->seg[t->nseg - 1].len += all;
  t->spooled += all;
}

/* The process as it stood at a file's first event: its track's name. */
static void note_who(struct ncs_timeline *t, int file, const struct ncs_jrank *r) {
  struct kfile *kf = &t->kf[file];
  if (kf->have_who) return;
  kf->who = *r;
  kf->have_who = 1;
}

/* ---- what is written: ranks (--ranks, or the culprits past 64 ranks), a window (--window),
 * a size bound (--max-mb) ---- */

/* 1 when events of a file whose primary rank is `rank` are kept at read time (an unknown rank
 * is kept and settled at write time). */
static int rank_wanted(const struct ncs_timeline *t, int rank) {
  return !t->sel || rank < 0 || (rank < t->nsel && t->sel[rank]);
}
/* The same for file `file`: its rank wanted, and the file among the chosen (ncs_timeline_choose). */
static int file_wanted(const struct ncs_timeline *t, int file, int rank) {
  return rank_wanted(t, rank) && (!t->pick || t->pick[file]);
}
static int in_window(const struct ncs_timeline *t, int64_t s, int64_t e) {
  return !t->windowed || (e >= t->w0 && s <= t->w1);
}

/* Output through a FILE that counts what it is given (the JSON's bytes, for --max-mb) and
 * hands it to a plain file or to gzip (zlib). */
struct sink { FILE *plain; gzFile gz; uint64_t bytes; int err; };
static ssize_t sink_write(void *c, const char *b, size_t n) {
  struct sink *s = c;
  s->bytes += n;
  if (s->gz) { if (n && gzwrite(s->gz, b, (unsigned)n) != (int)n) { s->err = 1; return -1; } }
  else if (fwrite(b, 1, n, s->plain) != n) { s->err = 1; return -1; }
  return (ssize_t)n;
}
static int sink_close(void *c) {
  struct sink *s = c;
  int r = 0;
  if (s->gz) r = gzclose(s->gz) != Z_OK;
  else if (s->plain != stdout) r = fclose(s->plain) != 0;
  else r = fflush(stdout) != 0;
  return r || s->err ? -1 : 0;
}
static int ends_with(const char *s, const char *x) {
  size_t a = strlen(s), b = strlen(x);
  return a >= b && !strcmp(s + a - b, x);
}
static FILE *sink_open(struct sink *s, const char *path, int gz) {
  memset(s, 0, sizeof *s);
  if (gz) {
    int fd = strcmp(path, "-") ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : dup(1);
    if (fd < 0 || !(s->gz = gzdopen(fd, "wb6"))) { if (fd >= 0) close(fd); return NULL; }
  } else if (!(s->plain = strcmp(path, "-") ? fopen(path, "w") : stdout)) {
    return NULL;
  }
  FILE *f = fopencookie(s, "w", (cookie_io_functions_t){.write = sink_write, .close = sink_close});
  if (!f) { if (s->gz) gzclose(s->gz); else if (s->plain != stdout) fclose(s->plain); }
  else setvbuf(f, NULL, _IOFBF, 1 << 16);
  return f;
}

/* The culprits a timeline of many ranks shows by default: rank 0, the rank that caused the
 * most waiting, the slowest, the median and the fastest by mean arrival (the straggler
 * engine's figures, as html's steps picture), among the files of the job (injob[file]: the
 * read may hold other jobs' files, --job). Fills keep[file] = 1; returns how many files. */
static int culprits(const struct ncs_jobdata *J, const unsigned char *injob, unsigned char *keep, char *why, size_t whylen) {
  const struct ncs_strag_rank *all;
  int mall = ncs_strag_ranks(J->strag, &all), n = 0, m = 0;
  struct ncs_strag_rank *sr = mall > 0 ? malloc((size_t)mall * sizeof *sr) : NULL;
  for (int i = 0; sr && i < mall; i++)
    if (all[i].file >= 0 && all[i].file < J->n && injob[all[i].file]) sr[m++] = all[i];
  size_t k = 0;
  int last = -1;
  why[0] = 0;
#define KEEP_FILE(file, rank, what) do { /* a rank chosen twice is named once, with both reasons */ \
    if ((file) >= 0 && (file) < J->n && !keep[file]) { \
      keep[file] = 1; n++; \
      if (k < whylen) k += (size_t)snprintf(why + k, whylen - k, "%srank %d (%s)", k ? ", " : "", (rank), (what)); \
    } else if (k > 0 && k < whylen && why[k - 1] == ')' && last == (file)) { \
      k--; k += (size_t)snprintf(why + k, whylen - k, ", %s)", (what)); \
    } \
    last = (file); \
  } while (0)
  for (int i = 0; i < J->n; i++) if (injob[i] && J->r[i].rank == 0) { KEEP_FILE(i, 0, "rank 0"); break; }
  if (m > 0 && ncs_strag_collectives(J->strag)) {
    int lo = 0, hi = 0;
    for (int i = 0; i < m; i++) {
      if (sr[i].mean_late_us < sr[lo].mean_late_us) lo = i;
      if (sr[i].mean_late_us > sr[hi].mean_late_us) hi = i;
    }
    if (sr[0].wait_caused_s > 0) KEEP_FILE(sr[0].file, sr[0].rank, "caused the most waiting");
    KEEP_FILE(sr[hi].file, sr[hi].rank, "slowest mean arrival");
    double *t = malloc((size_t)m * sizeof *t);
    if (t) {
      for (int i = 0; i < m; i++) t[i] = sr[i].mean_late_us;
      for (int i = 1; i < m; i++) for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
      for (int i = 0; i < m; i++) if (sr[i].mean_late_us == t[m / 2]) { KEEP_FILE(sr[i].file, sr[i].rank, "median arrival"); break; }
      free(t);
    }
    KEEP_FILE(sr[lo].file, sr[lo].rank, "fastest mean arrival");
  }
#undef KEEP_FILE
  free(sr);
  return n;
}

/* ---- reading: the loader's callbacks note the zero of the timeline, the counts and the
 * pairings, and spool the event ---- */

/* The read: which communicators a stream's calls used (the first SC_COMMS of at most 256
 * streams a file, as its tracks). */
static void note_stream_comm(struct kfile *kf, uint64_t stream, uint64_t comm) {
  struct scomm *c = kf->nsc && kf->lastsc < kf->nsc && kf->sc[kf->lastsc].stream == stream ? &kf->sc[kf->lastsc] : NULL;
  for (int i = 0; !c && i < kf->nsc; i++)
    if (kf->sc[i].stream == stream) { c = &kf->sc[i]; kf->lastsc = i; }
  if (!c) {
    if (kf->nsc >= 256) return;
    if (kf->nsc == kf->capsc) {
      int nc = kf->capsc ? kf->capsc * 2 : 4;
      struct scomm *p = realloc(kf->sc, (size_t)nc * sizeof *p);
      if (!p) return;
      kf->sc = p; kf->capsc = nc;
    }
    c = &kf->sc[kf->nsc];
    memset(c, 0, sizeof *c);
    c->stream = stream;
    kf->lastsc = kf->nsc++;
  }
  for (int k = 0; k < c->n; k++) if (c->comm[k] == comm) return;
  if (c->n < SC_COMMS) c->comm[c->n++] = comm; else c->more = 1;
}

static void on_call(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jev *e) {
  struct ncs_timeline *t = ctx;
  seen(t, file, e->start);
  seen(t, file, e->a->enter);
  link_count_call(t, file, e->c);
  note_who(t, file, r);
  if (!file_wanted(t, file, r->rank)) return;
  if (e->c->stream && e->comm_id) note_stream_comm(&t->kf[file], e->c->stream, e->comm_id);
  uint8_t b[SPOOL_REC_MAX], *p = b;
  size_t tlen = strlen(e->transport);
  if (tlen > 63) tlen = 63;
  p = put_u(p, SPOOL_CALL); p = put_u(p, (uint64_t)file);
  p = put_u(p, e->c->op); p = put_u(p, e->c->stream); p = put_u(p, e->c->seq); p = put_u(p, e->c->count);
  p = put_s(p, e->c->root); p = put_s(p, e->c->rc);
  p = put_s(p, e->start); p = put_s(p, e->end - e->start); p = put_u(p, (uint64_t)e->has_gpu);
  p = put_u(p, e->bytes);
  uint64_t bb; /* bus bytes: its busbw is made when written (ncs_jev_busbw) */
  memcpy(&bb, &e->busbytes, sizeof bb);
  p = put_64(p, bb); p = put_64(p, e->comm_id);
  p = put_s(p, e->rank); p = put_s(p, e->nranks);
  p = put_s(p, e->a->enter); p = put_s(p, e->a->exit - e->a->enter);
  p = put_u(p, tlen);
  memcpy(p, e->transport, tlen);
  spool_put(t, file, b, p + tlen);
}

static void on_comm(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_jcomm_ev *e) {
  struct ncs_timeline *t = ctx;
  seen(t, file, e->t);
  note_who(t, file, r);
  if (!file_wanted(t, file, r->rank)) return;
  uint8_t b[SPOOL_REC_MAX], *p = b;
  p = put_u(p, SPOOL_COMM); p = put_u(p, (uint64_t)file);
  p = put_u(p, e->op); p = put_64(p, e->comm_id); p = put_s(p, e->rank); p = put_s(p, e->nranks); p = put_s(p, e->t);
  spool_put(t, file, b, p);
}

static void on_kernel(void *ctx, int file, const struct ncs_jrank *r, const struct ncs_aligned_kernel *a) {
  struct ncs_timeline *t = ctx;
  struct kfile *kf = &t->kf[file];
  const struct ncs_kernel *k = a->k;
  struct link *l = k->kclass == NCS_KCLASS_NCCL ? link_of_kernel(t, file, k) : NULL;
  seen(t, file, a->start);
  if (l) {
    if (l->kernels && k->stream != l->kstream) l->bad = 1;
    l->kstream = k->stream;
    l->kernels++;
    if (t->max_kernels < 0 || kf->kernels < (uint64_t)t->max_kernels) l->shown++;
  }
  kf->kernels++;
  note_who(t, file, r);
  if (!file_wanted(t, file, r->rank)) return;
  uint8_t b[SPOOL_REC_MAX], *p = b;
  p = put_u(p, SPOOL_KERNEL); p = put_u(p, (uint64_t)file);
  p = put_u(p, k->kclass); p = put_u(p, k->name); p = put_u(p, k->name < kf->ndef_of ? kf->def_of[k->name] : 0);
  p = put_u(p, k->stream); p = put_u(p, k->device); p = put_u(p, k->correlation); p = put_u(p, k->bytes);
  p = put_s(p, a->start); p = put_s(p, a->end - a->start);
  spool_put(t, file, b, p);
}

/* Every file's KERNEL_NAME records, for the kernels' names (per-file state: files may be read
 * at once); each name an id is given is kept, so that a kernel is written with the name its
 * id had when it was read. */
static int names_raw(void *ctx, const struct ncs_raw *r) {
  struct kfile *kf = ctx;
  struct ncs_kernel_name x;
  struct ncs_rbuf rb;
  if (r->type != NCS_REC_KERNEL_NAME || ncs_dec_kernel_name(ncs_rbuf_on(&rb, r->body, r->len), &x) != 0) return 0;
  const char *before = ncs_knames_get(&kf->names, x.id);
  ncs_knames_add_raw(&kf->names, r);
  const char *now = ncs_knames_get(&kf->names, x.id);
  if (!now || now == before) return 0;
  if (x.id >= kf->ndef_of) {
    uint32_t n = kf->ndef_of ? kf->ndef_of : 64;
    while (n <= x.id) n *= 2;
    uint32_t *p = realloc(kf->def_of, n * sizeof *p);
    if (!p) return 0;
    memset(p + kf->ndef_of, 0, (n - kf->ndef_of) * sizeof *p);
    kf->def_of = p; kf->ndef_of = n;
  }
  if (kf->ndefs == kf->capdefs) {
    uint32_t n = kf->capdefs ? kf->capdefs * 2 : 16;
    char **p = realloc(kf->defs, n * sizeof *p);
    if (!p) return 0;
    kf->defs = p; kf->capdefs = n;
  }
  if (!(kf->defs[kf->ndefs] = strdup(now))) return 0;
  kf->def_of[x.id] = ++kf->ndefs;
  return 0;
}
static void names_visitor(void *ctx, int file, struct ncs_mux *m) {
  struct ncs_timeline *t = ctx;
  if (t->max_kernels && m->n < NCS_MUX_MAX) m->v[m->n++] = (struct ncs_visitor){.ctx = &t->kf[file], .raw = names_raw};
  if (t->win && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_window_visitor(t->win, file, &m->v[m->n++]);
  }
  if (t->names && m->n < NCS_MUX_MAX) {
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    ncs_commnames_visitor(t->names, file, &m->v[m->n++]);
  }
}
static void names_done(void *ctx, int file, int read_rc, const struct ncs_read_status *st) {
  (void)read_rc; (void)st;
  struct ncs_timeline *t = ctx;
  if (t->win) ncs_window_file_done(t->win, file);
}

/* ---- writing the spool out ---- */

static int get_u(const uint8_t **p, const uint8_t *end, uint64_t *v) { return ncs_get_varint(p, end, v); }
static int get_s(const uint8_t **p, const uint8_t *end, int64_t *v) {
  uint64_t u;
  if (ncs_get_varint(p, end, &u)) return -1;
  *v = ncs_unzigzag(u);
  return 0;
}
static int get_64(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (end - *p < 8) return -1;
  *v = ncs_get_u64(*p);
  *p += 8;
  return 0;
}

/* Reads the next record's body into b (*n bytes): 1, 0 at the end, -1 when damaged. */
static int spool_next(FILE *f, uint8_t *b, size_t *n) {
  uint64_t len = 0;
  int c = getc_unlocked(f);
  if (c == EOF) return 0;
  for (int shift = 0;; shift += 7) {
    len |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) break;
    if (shift > 14 || (c = getc_unlocked(f)) == EOF) return -1;
  }
  if (len == 0 || len > SPOOL_REC_MAX || fread(b, 1, (size_t)len, f) != len) return -1;
  *n = (size_t)len;
  return 1;
}

/* Writes one spooled event (its body b, n bytes) of file `want`: 0, or -1 when damaged. */
static int spool_write_one(struct ncs_timeline *t, int nfiles, int want, const uint8_t *b, size_t n) {
  {
    const uint8_t *p = b, *end = b + n;
    uint64_t type, file, u[8];
    int64_t s[8];
    if (get_u(&p, end, &type) || get_u(&p, end, &file) || file >= (uint64_t)nfiles || (int)file != want) return -1;
    if (!t->pid[file]) return 0; /* another job's file (--job), a rank not chosen */
    if (t->limit && t->sink && t->sink->bytes >= t->limit) { t->left_size++; return 0; } /* --max-mb */
    const struct ncs_jrank *who = &t->kf[file].who;
    if (type == SPOOL_CALL) {
      char tr[64];
      if (get_u(&p, end, &u[0]) || get_u(&p, end, &u[1]) || get_u(&p, end, &u[2]) || get_u(&p, end, &u[3]) ||
          get_s(&p, end, &s[0]) || get_s(&p, end, &s[1]) || get_s(&p, end, &s[2]) || get_s(&p, end, &s[3]) ||
          get_u(&p, end, &u[4]) || get_u(&p, end, &u[5]) || get_64(&p, end, &u[6]) || get_64(&p, end, &u[7]) ||
          get_s(&p, end, &s[4]) || get_s(&p, end, &s[5]) || get_s(&p, end, &s[6]) || get_s(&p, end, &s[7]))
        return -1;
      uint64_t tlen;
      if (get_u(&p, end, &tlen) || tlen >= sizeof tr || (uint64_t)(end - p) != tlen) return -1;
      memcpy(tr, p, (size_t)tlen);
      tr[tlen] = 0;
      struct ncs_call c = {.op = (uint32_t)u[0], .stream = u[1], .seq = u[2], .count = u[3], .root = (int32_t)s[0],
                           .rc = (int32_t)s[1]};
      struct ncs_aligned a = {.call = &c, .enter = s[6], .exit = s[6] + s[7]};
      struct ncs_jev e = {.c = &c, .a = &a, .start = s[2], .end = s[2] + s[3], .has_gpu = (int)u[4], .bytes = u[5],
                          .comm_id = u[7], .rank = (int)s[4], .nranks = (int)s[5], .transport = tr};
      memcpy(&e.busbytes, &u[6], sizeof e.busbytes);
      if (!in_window(t, e.start + t->shift, e.end + t->shift)) { t->left_window++; return 0; }
      write_call(t, (int)file, who, &e);
    } else if (type == SPOOL_COMM) {
      if (get_u(&p, end, &u[0]) || get_64(&p, end, &u[1]) || get_s(&p, end, &s[0]) || get_s(&p, end, &s[1]) ||
          get_s(&p, end, &s[2]) || p != end)
        return -1;
      struct ncs_jcomm_ev e = {.op = (uint32_t)u[0], .comm_id = u[1], .rank = (int)s[0], .nranks = (int)s[1], .t = s[2]};
      if (!in_window(t, e.t + t->shift, e.t + t->shift)) { t->left_window++; return 0; }
      write_comm(t, (int)file, who, &e);
    } else if (type == SPOOL_KERNEL) {
      for (int i = 0; i < 7; i++) if (get_u(&p, end, &u[i])) return -1;
      if (get_s(&p, end, &s[0]) || get_s(&p, end, &s[1]) || p != end || u[2] > t->kf[file].ndefs) return -1;
      struct ncs_kernel k = {.kclass = (uint32_t)u[0], .name = (uint32_t)u[1], .stream = (uint32_t)u[3],
                             .device = (uint32_t)u[4], .correlation = (uint32_t)u[5], .bytes = u[6]};
      struct ncs_aligned_kernel a = {.k = &k, .start = s[0], .end = s[0] + s[1]};
      if (!in_window(t, a.start + t->shift, a.end + t->shift)) { t->left_window++; return 0; }
      t->kdef = (uint32_t)u[2];
      write_kernel(t, (int)file, who, &a);
      t->kdef = 0;
    } else {
      return -1;
    }
  }
  return 0;
}

static int seg_cmp(const void *a, const void *b) {
  const struct spool_seg *x = a, *y = b;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Writes every spooled event, file by file, each file's in the order the loader gave them; 0,
 * or -1 when the spool could not be read back. */
static int spool_write(struct ncs_timeline *t, int nfiles) {
  uint8_t b[SPOOL_REC_MAX];
  size_t n;
  uint64_t pos = 0, all = 0;
  if (fflush(t->spool) != 0 || fseeko(t->spool, 0, SEEK_SET) != 0) return -1;
  for (size_t i = 0; i < t->nseg; i++) all += t->seg[i].len;
  if (all != t->spooled) return -1;
  if (t->nseg > 1) qsort(t->seg, t->nseg, sizeof *t->seg, seg_cmp);
  for (size_t i = 0; i < t->nseg; i++) {
    const struct spool_seg *g = &t->seg[i];
    if (g->off != pos && fseeko(t->spool, (off_t)g->off, SEEK_SET) != 0) return -1;
    for (pos = g->off; pos < g->off + g->len;) {
      if (spool_next(t->spool, b, &n) != 1) return -1;
      uint8_t len[10];
      pos += ncs_put_varint(len, n) + n;
      if (spool_write_one(t, nfiles, g->file, b, n) != 0) return -1;
    }
    if (pos != g->off + g->len) return -1;
  }
  return 0;
}

static void kfiles_free(struct kfile *kf, int n) {
  for (int i = 0; kf && i < n; i++) {
    ncs_knames_free(&kf[i].names);
    for (uint32_t k = 0; k < kf[i].ndefs; k++) free(kf[i].defs[k]);
    free(kf[i].defs);
    free(kf[i].def_of);
    free(kf[i].ks.s);
    free(kf[i].sc);
  }
  free(kf);
}

/* Ranks in the job's files (a process holding several counts each). */
static int job_ranks(const struct ncs_jobdata *J, const int *keep, int nk) {
  int m = 0;
  for (int k = 0; k < nk; k++) m += J->r[keep ? keep[k] : k].held > 1 ? J->r[keep ? keep[k] : k].held : 1;
  return m;
}

/* Past 64 ranks with no --ranks: the culprits of J's job files (keep[0..nk), NULL every file)
 * to t->pick, with what each is to t->pick_why; none (no straggler figures) leaves t->pick NULL.
 * Returns 0, or NCS_EXIT_UNREADABLE out of memory. */
int ncs_timeline_choose(struct ncs_timeline *t, const struct ncs_jobdata *J, const int *keep, int nk) {
  if (t->sel || t->cfg.ranks || t->pick || job_ranks(J, keep, nk) <= 64) return 0;
  unsigned char *in = calloc((size_t)t->nfiles, 1), *p = calloc((size_t)t->nfiles, 1);
  if (!in || !p) { free(in); free(p); fprintf(stderr, "ncclscope timeline: out of memory\n"); return NCS_EXIT_UNREADABLE; }
  for (int k = 0; k < nk; k++) in[keep ? keep[k] : k] = 1;
  if (J->n == t->nfiles && culprits(J, in, p, t->pick_why, sizeof t->pick_why) > 0) t->pick = p;
  else free(p);
  free(in);
  return 0;
}

int ncs_timeline_new(int nfiles, const struct ncs_timeline_cfg *cfg, struct ncs_timeline **out) {
  struct ncs_timeline *t = calloc(1, sizeof *t);
  *out = t;
  if (!t) { free(cfg->sel); fprintf(stderr, "ncclscope timeline: out of memory\n"); return NCS_EXIT_UNREADABLE; }
  t->nfiles = nfiles;
  t->cfg = *cfg;
  t->max_kernels = cfg->max_kernels;
  t->sel = cfg->sel;
  t->nsel = cfg->nsel;
  t->no_flows = t->sel != NULL;
  t->windowed = cfg->windowed;
  t->w0 = (int64_t)(cfg->w0 * 1e9); t->w1 = (int64_t)(cfg->w1 * 1e9);
  t->limit = (uint64_t)(cfg->max_mb * 1e6);
  if (!(t->kf = calloc((size_t)nfiles, sizeof *t->kf)) || !(t->st = calloc((size_t)nfiles, sizeof *t->st)) ||
      !(t->pid = calloc((size_t)nfiles, sizeof *t->pid))) {
    fprintf(stderr, "ncclscope timeline: out of memory\n");
    return NCS_EXIT_UNREADABLE;
  }
  if (!(t->win = ncs_window_new(nfiles)) || !(t->names = ncs_commnames_new(nfiles))) {
    fprintf(stderr, "ncclscope timeline: out of memory\n");
    return NCS_EXIT_UNREADABLE;
  }
  if (!(t->spool = spool_open())) {
    fprintf(stderr, "ncclscope timeline: cannot make a temporary file in %s: %s\n",
            getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
    return NCS_EXIT_UNREADABLE;
  }
  return 0;
}

void ncs_timeline_plug(struct ncs_timeline *t, struct ncs_load_opts *o, struct ncs_jobsum_events *ev) {
  *ev = (struct ncs_jobsum_events){.ctx = t, .on_call = on_call, .on_comm = on_comm};
  if (t->max_kernels) ev->on_kernel = on_kernel;
  o->file_visitor = names_visitor;
  o->file_done = names_done;
  o->ctx = t;
}

void ncs_timeline_free(struct ncs_timeline *t) {
  if (!t) return;
  free(t->sel);
  free(t->pick);
  if (t->spool) fclose(t->spool);
  free(t->seg);
  for (int i = 0; t->st && i < t->nfiles; i++) free(t->st[i].s);
  free(t->st);
  free(t->pid);
  kfiles_free(t->kf, t->nfiles);
  ncs_window_free(t->win);
  ncs_commnames_free(t->names);
  free(t);
}

int ncs_timeline_write(struct ncs_timeline *t, const struct ncs_jobdata *J, const int *keep, int nk) {
  const char *out = t->cfg.out, *ranks = t->cfg.ranks;
  ncs_commnames_finish(t->names); /* every file's COMM records are in */
  int n = t->nfiles, windowed = t->cfg.windowed;
  double w0 = t->cfg.w0, w1 = t->cfg.w1, max_mb = t->cfg.max_mb;
  int64_t max_kernels = t->cfg.max_kernels;
  FILE *f = NULL;
  int rc = NCS_EXIT_UNREADABLE, bad = NCS_EXIT_OK; /* a cut trace is normal input: said on stderr, exit 0 */
  struct sink sink;
  unsigned char *chosen = NULL, *injob = NULL;
  /* the ranks written: --ranks (settled here for files whose rank was unknown at the read),
   * else every rank up to 64, else the culprits */
  if (!(chosen = calloc((size_t)n, 1)) || !(injob = calloc((size_t)n, 1))) { fprintf(stderr, "ncclscope timeline: out of memory\n"); goto done; }
  for (int k = 0; k < nk; k++) injob[keep ? keep[k] : k] = 1; /* the zero, hosts and clock: over the job's files */
  int nranks_job = job_ranks(J, keep, nk), nchosen = 0;
  if (t->sel) {
    for (int k = 0; k < nk; k++) { int i = keep ? keep[k] : k; chosen[i] = J->r[i].rank >= 0 && rank_wanted(t, J->r[i].rank); }
  } else if (!ranks && nranks_job > 64 && ncs_timeline_choose(t, J, keep, nk) == 0 && t->pick) {
    for (int k = 0; k < nk; k++) { int i = keep ? keep[k] : k; chosen[i] = t->pick[i]; }
    t->no_flows = 1;
    fprintf(stderr, "ncclscope timeline: %d ranks: writing ", nranks_job);
    ncs_text_escape(stderr, t->pick_why, strlen(t->pick_why));
    fprintf(stderr, "; --ranks LIST to choose others, --ranks all for every rank\n");
  } else {
    for (int k = 0; k < nk; k++) chosen[keep ? keep[k] : k] = 1;
  }
  for (int k = 0; k < nk; k++) { int i = keep ? keep[k] : k; if (chosen[i]) t->pid[i] = ++nchosen; }
  if (t->sel && nchosen < nk)
    fprintf(stderr, "ncclscope timeline: --ranks %s: writing %d of %d trace files\n", ranks, nchosen, nk);
  if (!nchosen) { fprintf(stderr, "ncclscope timeline: no trace file holds a rank of --ranks %s\n", ranks ? ranks : ""); rc = NCS_EXIT_USAGE; goto done; }
  if (windowed) /* the i-th call / kernel pairing needs every call: no kernel arrows in a window */
    for (int i = 0; i < n; i++) for (int k = 0; k < t->kf[i].nlink; k++) t->kf[i].link[k].bad = 1;
  /* The zero of the timeline: the picked files' earliest creation (the job clock's origin had
   * they been read alone), or their earliest event when one comes before it. */
  int64_t created = 0, err_ns = 0;
  int hosts = 0;
  for (int i = 0; i < n; i++)
    if (injob[i] && J->r[i].created_ns && (!created || J->r[i].created_ns < created)) created = J->r[i].created_ns;
  int64_t earliest = created ? created - J->origin : 0;
  for (int i = 0; i < n; i++) {
    if (!injob[i]) continue;
    if (t->kf[i].have_earliest && t->kf[i].earliest < earliest) earliest = t->kf[i].earliest;
    if ((int64_t)J->r[i].clock_unc_ns > err_ns) err_ns = (int64_t)J->r[i].clock_unc_ns;
    int dup = 0;
    for (int k = 0; k < i && !dup; k++) dup = injob[k] && !strcmp(J->r[k].host, J->r[i].host);
    hosts += !dup;
  }
  if (t->spool_err || ferror(t->spool)) {
    fprintf(stderr, "ncclscope timeline: write error on its temporary file (in $TMPDIR or /tmp: full?)\n");
    goto done;
  }
  if (!(f = sink_open(&sink, out, ends_with(out, ".gz")))) { perror(out); goto done; }
  t->f = f;
  t->sink = &sink;
  t->shift = -earliest;
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  if (spool_write(t, n) != 0) {
    fprintf(stderr, "ncclscope timeline: its temporary file could not be read back\n");
    t->spool_err = 1;
  }
  struct ncs_window_sum *ws = malloc(sizeof *ws);
  if (ws && !ncs_window_sum(t->win, ws)) { free(ws); ws = NULL; }
  int64_t zero_rt = J->origin - t->shift; /* realtime ns of the axis' zero */
  char kt[64], wa[48], wb[48];
  if (ws) {
    ncs_window_keep_text(ws, kt, sizeof kt);
    ncs_window_utc(ws->t0_utc, wa, sizeof wa);
    ncs_window_utc(ws->t1_utc, wb, sizeof wb);
    fprintf(ev(t), "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"bounded trace: the last window starts here; the calls before it "
                   "are not on this timeline\",\"cat\":\"ncclscope\",\"pid\":0,\"tid\":0,\"ts\":%.3f,\"args\":{\"keep\":\"%s\","
                   "\"window_calls\":%llu,\"whole_run_calls\":%llu}}",
            ((double)(int64_t)(ws->t0_utc - (uint64_t)zero_rt)) / 1e3, kt, (unsigned long long)ws->win_calls,
            (unsigned long long)(ws->agg_calls + ws->win_calls));
  }
  fprintf(f, "\n],\"otherData\":{\"generator\":\"ncclscope timeline\",\"version\":%d", TIMELINE_JSON_VERSION);
  fprintf(f, ",\"origin_realtime_ns\":%lld,\"clock_uncertainty_us\":%.3f,\"hosts\":%d", (long long)(J->origin - t->shift),
          (double)err_ns / 1e3, hosts);
  if (t->kernels || t->kernels_left)
    fprintf(f, ",\"kernels_written\":%llu,\"kernels_left_out\":%llu,\"max_kernels_per_process\":%lld",
            (unsigned long long)t->kernels, (unsigned long long)t->kernels_left, (long long)max_kernels);
  fprintf(f, ",\"ranks_written\":%d,\"ranks_in_job\":%d", nchosen, nranks_job);
  if (windowed) fprintf(f, ",\"window_s\":[%.9g,%.9g],\"events_outside_window\":%llu", w0, w1, (unsigned long long)t->left_window);
  if (t->limit) fprintf(f, ",\"max_mb\":%g,\"events_left_out_by_size\":%llu", max_mb, (unsigned long long)t->left_size);
  if (ws) {
    fprintf(f, ",\"bounded\":{\"files\":%d,\"keep_ns\":%llu,\"keep_bytes\":%llu,\"window_start_unix_s\":%.6f,"
               "\"window_end_unix_s\":%.6f,\"window_start_us\":%.3f,\"window_end_us\":%.3f,\"window_calls\":%llu,"
               "\"whole_run_calls\":%llu,\"what\":\"every event here is of the last window; whole-run figures: ncclscope report\"}",
            ws->files, (unsigned long long)ws->keep_ns, (unsigned long long)ws->keep_bytes, ws->t0_utc / 1e9, ws->t1_utc / 1e9,
            ((double)(int64_t)(ws->t0_utc - (uint64_t)zero_rt)) / 1e3, ((double)(int64_t)(ws->t1_utc - (uint64_t)zero_rt)) / 1e3,
            (unsigned long long)ws->win_calls, (unsigned long long)(ws->agg_calls + ws->win_calls));
    fprintf(stderr, "ncclscope timeline: bounded trace (NCCLSCOPE_KEEP: %s; %d of %d files): the last window only, %s to %s, "
                    "%llu of the run's %llu calls; whole-run figures: ncclscope report\n",
            kt, ws->files, ws->nfiles, wa, wb, (unsigned long long)ws->win_calls, (unsigned long long)(ws->agg_calls + ws->win_calls));
  }
  free(ws);
  fputs("}}\n", f);
  if (t->left_size)
    fprintf(stderr, "ncclscope timeline: stopped at %g MB of JSON: %llu events left out (--max-mb N to raise the bound, "
                    "--ranks or --window to choose what to write)\n", max_mb, (unsigned long long)t->left_size);
  if (windowed)
    fprintf(stderr, "ncclscope timeline: --window %g:%g s: %llu events outside it left out\n", w0, w1, (unsigned long long)t->left_window);
  for (int i = 0; i < J->n; i++)
    if (t->pid[i] && (J->r[i].read_rc || J->r[i].truncated)) {
      bad = ncs_exit_worse(bad, ncs_exit_of_read(J->r[i].read_rc));
      if (J->r[i].error[0]) { ncs_text_escape(stderr, J->r[i].error, strlen(J->r[i].error)); fputc('\n', stderr); }
      else if (J->r[i].truncated) { ncs_text_escape(stderr, J->r[i].path, strlen(J->r[i].path)); fputs(": cut (no final chunk)\n", stderr); }
    }
  int werr = ferror(f);
  if (fclose(f) != 0) werr = 1;
  f = NULL;
  if (werr) fprintf(stderr, "ncclscope timeline: write error on %s\n", out);
  rc = werr || t->spool_err ? NCS_EXIT_UNREADABLE : bad;
done:
  if (f) fclose(f);
  free(chosen); free(injob);
  return rc;
}
