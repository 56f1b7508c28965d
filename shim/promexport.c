/* promexport.c — live metrics for Prometheus: with NCCLSCOPE_METRICS=DIR the writer thread keeps
 * per-process aggregates of the calls it drains and, every NCCLSCOPE_METRICS_MS, writes them as
 * Prometheus text (the node exporter's textfile collector format) to DIR (docs/METRICS-EXPORT.md).
 *
 * Contract:
 *   - A collector that writes no record: an observer of what the writer writes (hooks.h), on
 *     the writer thread only: each batch of ring records it encodes (seen_calls), the ncs_emit
 *     records it takes (seen_queue: COMM, COMM_END, NCCL_LOG), the INFLIGHT records of each
 *     chunk (seen_inflight); its poll and `flushed` (after a chunk the job waited for:
 *     CommDestroy, exit; and after the final one) write the file. Nothing here runs on a calling thread, so
 *     the job never waits for it; with the setting absent every entry returns at once.
 *   - The file is `DIR/ncclscope-<host>-<pid>.prom`, written whole to a hidden temporary
 *     `DIR/.ncclscope-<host>-<pid>.prom.tmp` (created O_EXCL|O_NOFOLLOW, mode 0644: the node
 *     exporter runs as another user), checked to be that file before each write, then renamed
 *     over the .prom name: a reader sees the last complete file or the one before. DIR is
 *     created (0755) when missing. A write that fails (full disk) leaves the previous file and is
 *     counted (ncclscope_metrics_write_failures_total in the next file that makes it).
 *   - GPU time (seen_gpu_time): a call's GPU_TIME is matched to its row through a per-thread
 *     table of its last PROM_PEND calls (made at the thread's first call with GPU timing on,
 *     never with host timing), whichever of the two the writer sees first; a GPU time whose call left the
 *     table is not counted (its call is).
 *   - Exposed communication (seen_queue's KERNEL records): NCCL kernels against everything else
 *     the GPU ran, lined up once a stretch of time is KERNEL_LAG_NS old (kernel activity
 *     arrives late: CUPTI hands a kernel over when it ends, the kernels collector polls every
 *     100 ms), everything at the final file. At most PROM_KPEND kernels wait; when full, what
 *     they cover up to the newest start is lined up early. A kernel that arrives after its
 *     stretch was lined up counts from the horizon on only (docs/METRICS-EXPORT.md).
 *   - Fixed space: at most PROM_COMMS communicators and PROM_ROWS (communicator, operation,
 *     transport) rows; calls beyond go to the row of communicator "other". Bounded output:
 *     at most 18 series a row (docs/METRICS-EXPORT.md, "Cardinality").
 *   - The file stays after exit with its last values and ncclscope_process_up 0.
 *   - Fork: the child forgets the parent's aggregates (atfork_child). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "internal.h"

#define PROM_COMMS 64
#define PROM_ROWS 256
#define PROM_PEND 4096u              /* per thread: calls waiting for their GPU time, a power of two */
#define PROM_KPEND 16384u            /* kernels waiting to be lined up */
#define KERNEL_LAG_NS 2000000000ull  /* a stretch of GPU time is lined up once this old */
#define PROM_BUCKETS 7 /* upper bounds 10 us .. 10 s, then +Inf */
static const double bucket_le[PROM_BUCKETS] = {1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10};
static const char *const bucket_txt[PROM_BUCKETS] = {"1e-05", "0.0001", "0.001", "0.01", "0.1", "1", "10"};

enum { TR_UNKNOWN, TR_P2P, TR_SHM, TR_NET, TR_COUNT }; /* slowest class a communicator used */
static const char *const tr_name[TR_COUNT] = {"unknown", "P2P", "SHM", "NET"};

struct pcomm {
  uint32_t index;          /* the trace's communicator index */
  uint64_t id;             /* comm_id: the same on every rank */
  int32_t rank, nranks;
  int transport, ended;
};
struct prow {
  uint16_t comm;           /* slot in comms[], 0 = other */
  uint8_t op, transport;
  uint64_t calls, bytes, ns, failed;
  double busbytes;
  uint64_t bucket[PROM_BUCKETS + 1];
  uint64_t gpu_calls, gpu_ns;  /* the calls whose GPU time is known, and their GPU time */
  double gpu_busbytes;         /* their bus bytes */
};
/* a call and its GPU time, whichever came first (tcall 0: empty) */
struct ppend { uint64_t tcall, gpu_ns; double busbytes; uint16_t row; uint8_t has_call, has_gpu; };

static struct {
  int on;
  uint64_t next_ns, start_ns;
  struct pcomm comms[PROM_COMMS + 1]; /* [0]: "other" (unknown or beyond the table) */
  unsigned ncomms;
  uint16_t slot_of[NCS_MAX_COMMS];     /* communicator index -> slot (0: none yet) */
  struct prow rows[PROM_ROWS];
  unsigned nrows;
  uint64_t covered_until, busy_ns, overflow_calls;
  int pending_transport;               /* log lines seen before their COMM record */
  unsigned last_slot;                  /* the communicator most recently created */
  uint64_t writes, write_failures;
  unsigned in_n[PROM_COMMS + 1];       /* in flight at the last chunk's end */
  uint64_t in_since[PROM_COMMS + 1];   /* the oldest one's entry time (0: none) */
  char path[600], tmp[600];
  int gpu_timing;                      /* a GPU time was seen */
  struct ppend *pend[NCS_MAX_THREADS];
  int kact;                            /* kernel activity: 0 never seen, 1 recording, 2 stopped */
  struct ncs_expo expo;                /* NCCL kernels and exposed communication (exposure.c) */
} P;
/* P was written since it was last cleared (only ever when on): a process that never turns the
 * export on leaves P's 48 KiB of zero pages untouched (clearing them would fault each in) */
static int P_written;

static void prom_reset(void) {
  if (!P_written) return;
  for (int i = 0; i < NCS_MAX_THREADS; i++) free(P.pend[i]);
  ncs_expo_free(&P.expo);
  memset(&P, 0, sizeof P);
  P_written = 0;
}

/* The slot of communicator index idx (0: other). */
static unsigned slot_for(uint32_t idx) {
  if (idx == 0 || idx >= NCS_MAX_COMMS) return 0;
  if (P.slot_of[idx]) return P.slot_of[idx];
  if (P.ncomms >= PROM_COMMS) return 0;
  unsigned s = ++P.ncomms;
  P.comms[s] = (struct pcomm){.index = idx, .rank = -1, .nranks = -1};
  P.slot_of[idx] = (uint16_t)s;
  return s;
}

static struct prow *row_for(unsigned slot, unsigned op) {
  unsigned tr = (unsigned)P.comms[slot].transport;
  for (unsigned i = 0; i < P.nrows; i++) {
    struct prow *r = &P.rows[i];
    if (r->comm == slot && r->op == op && r->transport == tr) return r;
  }
  if (P.nrows < PROM_ROWS) {
    struct prow *r = &P.rows[P.nrows++];
    memset(r, 0, sizeof *r);
    r->comm = (uint16_t)slot; r->op = (uint8_t)op; r->transport = (uint8_t)tr;
    return r;
  }
  /* the table is full: the "other" row of this operation, or the last row as a last resort */
  for (unsigned i = 0; i < P.nrows; i++)
    if (P.rows[i].comm == 0 && P.rows[i].op == op) return &P.rows[i];
  P.overflow_calls++;
  return NULL;
}

/* nccl-tests' bus-bandwidth factor of one call: bus bytes = bytes x factor (ops.h rules) */
static double bus_factor(unsigned op, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (ncs_op_bw(op)) {
  case NCS_BW_ALLREDUCE: return 2.0 * (n - 1) / n;
  case NCS_BW_ONE: return 1.0;
  case NCS_BW_NTIMES: return n - 1; /* S = count x size x n, busbw = algbw (n-1)/n */
  default: return 0;
  }
}

static void prom_calls(const struct ncs_call *rec, uint64_t mask, uint64_t from, uint64_t to) {
  if (!P.on) return;
  for (uint64_t t = from; t != to; t++) {
    const struct ncs_call *c = &rec[t & mask];
    int kind = ncs_op_kind(c->op);
    if (kind != NCS_KIND_COLL && kind != NCS_KIND_P2P) continue;
    unsigned slot = slot_for(c->comm);
    struct prow *r = row_for(slot, c->op);
    uint64_t ns = c->t_exit > c->t_enter ? c->t_exit - c->t_enter : 0;
    /* time in which some thread of the process was inside a call: exact for one calling
     * thread, a lower bound for several (a thread's call drained after a later one of another) */
    uint64_t a = c->t_enter > P.covered_until ? c->t_enter : P.covered_until;
    if (c->t_exit > a) P.busy_ns += c->t_exit - a;
    if (c->t_exit > P.covered_until) P.covered_until = c->t_exit;
    if (!r) continue;
    uint64_t bytes = c->count * ncclscope_datatype_size((int)c->datatype);
    double busbytes = (double)bytes * bus_factor(c->op, P.comms[slot].nranks);
    r->calls++;
    r->bytes += bytes;
    r->ns += ns;
    r->busbytes += busbytes;
    struct ppend *pt = c->thread < NCS_MAX_THREADS ? P.pend[c->thread] : NULL;
    if (!pt && c->thread < NCS_MAX_THREADS && atomic_load_explicit(&ncs_gpu_on, memory_order_relaxed))
      pt = P.pend[c->thread] = calloc(PROM_PEND, sizeof *pt); /* the thread's first call with GPU timing */
    if (pt && c->tcall) { /* GPU timing: wait for its GPU time, or take the one already here */
      struct ppend *p = &pt[c->tcall & (PROM_PEND - 1)];
      if (p->tcall == c->tcall && p->has_gpu) {
        r->gpu_calls++;
        r->gpu_ns += p->gpu_ns;
        r->gpu_busbytes += busbytes;
        p->tcall = 0;
      } else {
        *p = (struct ppend){.tcall = c->tcall, .busbytes = busbytes, .row = (uint16_t)(r - P.rows), .has_call = 1};
      }
    }
    if (!ncs_rc_ok(c->rc)) r->failed++;
    double s = (double)ns * 1e-9;
    unsigned b = 0;
    while (b < PROM_BUCKETS && s > bucket_le[b]) b++;
    r->bucket[b]++;
  }
}

/* A call's GPU time (writer, as it writes the GPU_TIME record). */
static void prom_gpu_time(const struct ncs_gpu_time *g) {
  if (!P.on || g->kind != NCS_GPU_KIND_CALL || g->flags || g->thread >= NCS_MAX_THREADS || !g->ref) return;
  P.gpu_timing = 1;
  struct ppend *pt = P.pend[g->thread];
  if (!pt && !(pt = P.pend[g->thread] = calloc(PROM_PEND, sizeof *pt))) return;
  struct ppend *p = &pt[g->ref & (PROM_PEND - 1)];
  uint64_t ns = g->gpu_end > g->gpu_start ? g->gpu_end - g->gpu_start : 0;
  if (p->tcall == g->ref && p->has_call) {
    struct prow *r = &P.rows[p->row];
    r->gpu_calls++;
    r->gpu_ns += ns;
    r->gpu_busbytes += p->busbytes;
    p->tcall = 0;
  } else { /* before its call (the writer polled GPU times before it drained the call) */
    *p = (struct ppend){.tcall = g->ref, .gpu_ns = ns, .has_gpu = 1};
  }
}

static int line_transport(const char *s, size_t n) {
  const char *v = memmem(s, n, " via ", 5);
  if (!v) return TR_UNKNOWN;
  size_t rest = n - (size_t)(v + 5 - s);
  if (rest >= 3 && !memcmp(v + 5, "NET", 3)) return TR_NET;
  if (rest >= 3 && !memcmp(v + 5, "SHM", 3)) return TR_SHM;
  if (rest >= 3 && !memcmp(v + 5, "P2P", 3)) return TR_P2P;
  return TR_UNKNOWN;
}

/* Records queued with ncs_emit, as the writer takes them: communicators and NCCL's connection
 * lines (a line seen before any COMM record of an init goes to the next communicator created;
 * after it, to the latest one: NCCL's lines name no communicator). */
static void prom_queue(const uint8_t *q, size_t len) {
  if (!P.on) return;
  const uint8_t *p = q, *e = q + len;
  uint8_t scratch[1024];
  while (p < e) {
    uint64_t type, blen;
    if (ncs_get_varint(&p, e, &type) || ncs_get_varint(&p, e, &blen) || blen > (uint64_t)(e - p)) return;
    struct ncs_rbuf rb;
    if (type == NCS_REC_COMM) {
      struct ncs_comm c;
      ncs_rbuf_init(&rb, p, (size_t)blen, scratch, sizeof scratch);
      if (ncs_dec_comm(&rb, &c) == 0 && ncs_rc_ok(c.rc)) {
        unsigned s = slot_for(c.comm);
        if (s) {
          P.comms[s].id = c.comm_id;
          P.comms[s].rank = c.rank;
          P.comms[s].nranks = c.nranks;
          if (P.pending_transport > P.comms[s].transport) P.comms[s].transport = P.pending_transport;
          P.last_slot = s;
        }
        P.pending_transport = TR_UNKNOWN;
      }
    } else if (type == NCS_REC_COMM_END) {
      struct ncs_comm_end ce;
      ncs_rbuf_init(&rb, p, (size_t)blen, scratch, sizeof scratch);
      if (ncs_dec_comm_end(&rb, &ce) == 0 && ce.comm < NCS_MAX_COMMS && P.slot_of[ce.comm])
        P.comms[P.slot_of[ce.comm]].ended = 1;
    } else if (type == NCS_REC_KERNEL) {
      struct ncs_kernel k;
      ncs_rbuf_init(&rb, p, (size_t)blen, scratch, sizeof scratch);
      if (ncs_dec_kernel(&rb, &k) == 0) {
        if (P.kact == 0) P.kact = 1;
        ncs_expo_kernel(&P.expo, &k, PROM_KPEND);
      }
    } else if (type == NCS_REC_KERNEL_STATUS) {
      struct ncs_kernel_status ks;
      ncs_rbuf_init(&rb, p, (size_t)blen, scratch, sizeof scratch);
      if (ncs_dec_kernel_status(&rb, &ks) == 0) P.kact = ks.state == NCS_KSTATE_ON ? 1 : P.kact ? 2 : 0;
    } else if (type == NCS_REC_NCCL_LOG) {
      struct ncs_log_line l;
      ncs_rbuf_init(&rb, p, (size_t)blen, scratch, sizeof scratch);
      if (ncs_dec_log_line(&rb, &l) == 0 && l.line) {
        int tr = line_transport(l.line, l.len);
        if (tr != TR_UNKNOWN) {
          if (P.last_slot && !P.comms[P.last_slot].ended) {
            if (tr > P.comms[P.last_slot].transport) P.comms[P.last_slot].transport = tr;
          } else if (tr > P.pending_transport) {
            P.pending_transport = tr;
          }
        }
      }
    }
    p += blen;
  }
}

/* ---- the file ---- */

struct out { char *b; size_t len, cap; int overflow; };
static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...) {
  if (o->overflow) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->b + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= o->cap - o->len) { o->overflow = 1; return; }
  o->len += (size_t)n;
}

/* A label value as Prometheus text wants it: \ " and newline escaped, at most 128 bytes. */
static void escape(char *dst, size_t cap, const char *s) {
  size_t j = 0;
  for (; *s && j + 3 < cap && j < 128; s++) {
    if (*s == '\\' || *s == '"') { dst[j++] = '\\'; dst[j++] = *s; }
    else if (*s == '\n') { dst[j++] = '\\'; dst[j++] = 'n'; }
    else dst[j++] = *s;
  }
  dst[j] = 0;
}

static void comm_labels(char *dst, size_t cap, const char *host, unsigned slot) {
  const struct pcomm *c = &P.comms[slot];
  if (slot == 0) snprintf(dst, cap, "host=\"%s\",pid=\"%d\",comm=\"other\",rank=\"\"", host, (int)getpid());
  else snprintf(dst, cap, "host=\"%s\",comm=\"%016llx\",rank=\"%d\"", host, (unsigned long long)c->id, (int)c->rank);
}

/* The calls in flight at the last chunk's end, per communicator slot: each thread's call inside
 * NCCL and each call whose GPU work had not finished (the INFLIGHT records the writer wrote). */
static void prom_inflight(const struct ncs_inflight *f) {
  if (!P.on) return;
  if (!f) { memset(P.in_n, 0, sizeof P.in_n); memset(P.in_since, 0, sizeof P.in_since); return; }
  unsigned s = f->comm < NCS_MAX_COMMS ? P.slot_of[f->comm] : 0;
  P.in_n[s]++;
  if (!P.in_since[s] || f->t_enter < P.in_since[s]) P.in_since[s] = f->t_enter;
}

#define HELP(o, name, type, text) put(o, "# HELP " name " " text "\n# TYPE " name " " type "\n")

static size_t render(struct out *o, int up) {
  char host[300], lab[400];
  escape(host, sizeof host, ncs_host_name());
  uint64_t now = ncs_now_ns();
  unsigned nin[PROM_COMMS + 1] = {0};
  uint64_t oldest[PROM_COMMS + 1] = {0};
  for (unsigned s = 0; up && s <= P.ncomms; s++) { /* age as of now: a hang's keeps growing */
    nin[s] = P.in_n[s];
    if (P.in_since[s] && now > P.in_since[s]) oldest[s] = now - P.in_since[s];
  }
  int pid = (int)getpid();
  HELP(o, "ncclscope_process_up", "gauge", "1 while the traced process runs, 0 once it has exited.");
  put(o, "ncclscope_process_up{host=\"%s\",pid=\"%d\"} %d\n", host, pid, up);
  HELP(o, "ncclscope_process_seconds", "gauge", "Seconds since the process's first NCCL call.");
  put(o, "ncclscope_process_seconds{host=\"%s\",pid=\"%d\"} %.6f\n", host, pid, (double)(now - P.start_ns) * 1e-9);
  HELP(o, "ncclscope_comm_busy_seconds_total", "counter",
       "Host seconds in which some thread of the process was inside an NCCL collective or point-to-point call.");
  put(o, "ncclscope_comm_busy_seconds_total{host=\"%s\",pid=\"%d\"} %.9f\n", host, pid, (double)P.busy_ns * 1e-9);
  HELP(o, "ncclscope_kernel_activity", "gauge",
       "1 while the process's kernel activity is recorded (the GPU communication figures grow), 0 when it is not.");
  put(o, "ncclscope_kernel_activity{host=\"%s\",pid=\"%d\"} %d\n", host, pid, P.kact == 1);
  if (P.kact) { /* only where kernel activity was recorded: absent = unknown, never 0 */
    HELP(o, "ncclscope_gpu_comm_seconds_total", "counter",
         "GPU seconds in which some NCCL kernel of the process ran (union), lined up to a horizon about 2 s old.");
    put(o, "ncclscope_gpu_comm_seconds_total{host=\"%s\",pid=\"%d\"} %.9f\n", host, pid, (double)P.expo.comm_ns * 1e-9);
    HELP(o, "ncclscope_gpu_exposed_comm_seconds_total", "counter",
         "Of those, the seconds with no other kernel, copy or set of the process running beside them: exposed communication.");
    put(o, "ncclscope_gpu_exposed_comm_seconds_total{host=\"%s\",pid=\"%d\"} %.9f\n", host, pid,
        (double)P.expo.exposed_ns * 1e-9);
  }
  HELP(o, "ncclscope_dropped_records_total", "counter", "Trace records the process lost (full buffers, failed writes, no memory).");
  put(o, "ncclscope_dropped_records_total{host=\"%s\",pid=\"%d\"} %llu\n", host, pid,
      (unsigned long long)ncs_writer_dropped());
  HELP(o, "ncclscope_metrics_overflow_calls_total", "counter", "Calls left out of these metrics: the row table was full.");
  put(o, "ncclscope_metrics_overflow_calls_total{host=\"%s\",pid=\"%d\"} %llu\n", host, pid,
      (unsigned long long)P.overflow_calls);
  HELP(o, "ncclscope_metrics_write_failures_total", "counter", "Metrics files that could not be written.");
  put(o, "ncclscope_metrics_write_failures_total{host=\"%s\",pid=\"%d\"} %llu\n", host, pid,
      (unsigned long long)P.write_failures);

  HELP(o, "ncclscope_communicator_info", "gauge", "One series per communicator of the process: its size and transport.");
  for (unsigned s = 1; s <= P.ncomms; s++) {
    comm_labels(lab, sizeof lab, host, s);
    put(o, "ncclscope_communicator_info{%s,nranks=\"%d\",transport=\"%s\"} 1\n", lab, (int)P.comms[s].nranks,
        tr_name[P.comms[s].transport]);
  }
  HELP(o, "ncclscope_inflight_calls", "gauge", "NCCL calls in flight at the last chunk (a thread inside NCCL, or GPU work not finished); comm other: GPU work of no known communicator.");
  for (unsigned s = 0; s <= P.ncomms; s++) {
    comm_labels(lab, sizeof lab, host, s);
    put(o, "ncclscope_inflight_calls{%s} %u\n", lab, nin[s]);
  }
  HELP(o, "ncclscope_inflight_oldest_seconds", "gauge",
       "Age of the oldest NCCL call of the communicator still in flight (0: none); a growing value is a hang.");
  for (unsigned s = 0; s <= P.ncomms; s++) {
    comm_labels(lab, sizeof lab, host, s);
    put(o, "ncclscope_inflight_oldest_seconds{%s} %.6f\n", lab, (double)oldest[s] * 1e-9);
  }

  static const struct { const char *name, *type, *help; } fam[] = {
    {"ncclscope_calls_total", "counter", "NCCL collective and point-to-point calls that returned."},
    {"ncclscope_failed_calls_total", "counter", "Calls that returned an error."},
    {"ncclscope_bytes_total", "counter", "Bytes of the calls' buffers: count x datatype size, as passed to NCCL."},
    {"ncclscope_bus_bytes_total", "counter",
     "Bus bytes (nccl-tests' rule: bytes x 2(n-1)/n for all-reduce, ...); divided by call seconds it is the busbw."},
    {"ncclscope_call_seconds_total", "counter", "Host seconds inside the calls (sum over calls)."},
    /* GPU timing only (a GPU time was seen): absent with host timing */
    {"ncclscope_gpu_timed_calls_total", "counter", "Calls whose GPU time is known (CUDA events around the launch)."},
    {"ncclscope_gpu_call_seconds_total", "counter", "GPU seconds of those calls (sum over calls)."},
    {"ncclscope_gpu_bus_bytes_total", "counter",
     "Bus bytes of those calls; divided by their GPU seconds it is the GPU-timed busbw."},
  };
  for (unsigned f = 0; f < sizeof fam / sizeof fam[0]; f++) {
    if (f >= 5 && !P.gpu_timing) break;
    put(o, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name, fam[f].help, fam[f].name, fam[f].type);
    for (unsigned i = 0; i < P.nrows; i++) {
      const struct prow *r = &P.rows[i];
      comm_labels(lab, sizeof lab, host, r->comm);
      const char *op = ncs_op_name(r->op);
      put(o, "%s{%s,op=\"%s\",transport=\"%s\"} ", fam[f].name, lab, op ? op : "unknown", tr_name[r->transport]);
      switch (f) {
      case 0: put(o, "%llu\n", (unsigned long long)r->calls); break;
      case 1: put(o, "%llu\n", (unsigned long long)r->failed); break;
      case 2: put(o, "%llu\n", (unsigned long long)r->bytes); break;
      case 3: put(o, "%.17g\n", r->busbytes); break;
      case 4: put(o, "%.9f\n", (double)r->ns * 1e-9); break;
      case 5: put(o, "%llu\n", (unsigned long long)r->gpu_calls); break;
      case 6: put(o, "%.9f\n", (double)r->gpu_ns * 1e-9); break;
      default: put(o, "%.17g\n", r->gpu_busbytes); break;
      }
    }
  }
  HELP(o, "ncclscope_call_duration_seconds", "histogram", "Host duration of the calls.");
  for (unsigned i = 0; i < P.nrows; i++) {
    const struct prow *r = &P.rows[i];
    comm_labels(lab, sizeof lab, host, r->comm);
    const char *op = ncs_op_name(r->op);
    uint64_t cum = 0;
    for (unsigned b = 0; b <= PROM_BUCKETS; b++) {
      cum += r->bucket[b];
      put(o, "ncclscope_call_duration_seconds_bucket{%s,op=\"%s\",transport=\"%s\",le=\"%s\"} %llu\n", lab,
          op ? op : "unknown", tr_name[r->transport], b < PROM_BUCKETS ? bucket_txt[b] : "+Inf",
          (unsigned long long)cum);
    }
    put(o, "ncclscope_call_duration_seconds_sum{%s,op=\"%s\",transport=\"%s\"} %.9f\n", lab, op ? op : "unknown",
        tr_name[r->transport], (double)r->ns * 1e-9);
    put(o, "ncclscope_call_duration_seconds_count{%s,op=\"%s\",transport=\"%s\"} %llu\n", lab, op ? op : "unknown",
        tr_name[r->transport], (unsigned long long)r->calls);
  }
  return o->overflow ? 0 : o->len;
}

static int write_file(int up) {
  static char buf[PROM_ROWS * 5120 + 65536];
  struct out o = {buf, 0, sizeof buf, 0};
  uint64_t now = ncs_now_ns();
  ncs_expo_line_up(&P.expo, !up ? UINT64_MAX : now > KERNEL_LAG_NS ? now - KERNEL_LAG_NS : 0);
  size_t n = render(&o, up);
  if (!n) return -1;
  mkdir(ncs_cfg.metrics_dir, 0755);
  unlink(P.tmp); /* a temporary left by a write that failed halfway */
  int fd = ncs_fio_open(P.tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  struct stat mine;
  int ok = ncs_fio_fstat(fd, &mine) == 0 && ncs_fio_fchmod(fd, 0644) == 0;
  for (size_t off = 0; ok && off < n;) {
    struct stat now; /* still our file (where the file thread shares the job's table) */
    if (ncs_fio_fstat(fd, &now) != 0 || now.st_ino != mine.st_ino || now.st_dev != mine.st_dev) { ok = 0; fd = -1; break; }
    ssize_t w = ncs_fio_pwrite(fd, buf + off, n - off, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { ok = 0; break; }
    off += (size_t)w;
  }
  if (fd >= 0) ncs_fio_close(fd);
  if (ok && rename(P.tmp, P.path) == 0) { P.writes++; return 0; }
  unlink(P.tmp);
  P.write_failures++;
  return -1;
}

static void prom_start(void) {
  prom_reset();
  if (!ncs_cfg.metrics_dir[0]) return;
  int a = snprintf(P.path, sizeof P.path, "%s/ncclscope-%s-%d.prom", ncs_cfg.metrics_dir, ncs_host_name(), (int)getpid());
  int b = snprintf(P.tmp, sizeof P.tmp, "%s/.ncclscope-%s-%d.prom.tmp", ncs_cfg.metrics_dir, ncs_host_name(),
                   (int)getpid());
  if (a < 0 || b < 0 || (size_t)a >= sizeof P.path || (size_t)b >= sizeof P.tmp) return;
  P_written = 1;
  P.start_ns = ncs_now_ns();
  P.next_ns = P.start_ns; /* the first poll writes (the series exist from the first call) */
  P.on = 1;
}

static int prom_poll(unsigned wait_ms) {
  (void)wait_ms;
  if (!P.on) return 0;
  uint64_t now = ncs_now_ns();
  if (now < P.next_ns) return 0;
  P.next_ns = now + (uint64_t)ncs_cfg.metrics_ms * 1000000ull;
  write_file(1);
  return 0;
}

static void prom_flushed(int final) {
  if (!P.on) return;
  P.next_ns = ncs_now_ns() + (uint64_t)ncs_cfg.metrics_ms * 1000000ull;
  write_file(!final);
  if (final) P.on = 0;
}

NCS_COLLECTOR ncs_prom_collector = {
  .name = "metrics",
  .start = prom_start,
  .poll = prom_poll,
  .atfork_child = prom_reset, /* the child starts again, under its own pid, if it records */
  .seen_calls = prom_calls,
  .seen_queue = prom_queue,
  .seen_inflight = prom_inflight,
  .flushed = prom_flushed,
  .seen_gpu_time = prom_gpu_time,
};
