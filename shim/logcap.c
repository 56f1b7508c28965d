/* logcap.c — capture of NCCL's debug log (the "logcap" collector of hooks.h), for every communicator,
 * at init and later (NCCL >= 2.22 connects at the first collective).
 *
 * Contract:
 * - logcap_start(), before the process's first NCCL call, registers with envview.c what NCCL
 *   alone will see: NCCL_DEBUG=INFO (TRACE stays TRACE), the user's NCCL_DEBUG_SUBSYS plus INIT,
 *   NCCL_DEBUG_FILE=ncs_env_marker. The environment is never written: the application and its
 *   children see the user's values only. Each answer notes the user's value at the moment
 *   NCCL reads it (so an nccl.conf NCCL applied itself counts as the user's).
 * - NCCL's fopen of the marker returns a stream of our own (fopencookie): NCCL's log lines come
 *   straight into cookie_write on NCCL's thread, under NCCL's debug lock. No pipe, no reader
 *   thread, no descriptor handed to NCCL; a line is never lost for a slow reader.
 * - Each line is forwarded to the user's destination (their NCCL_DEBUG_FILE with %h/%p, or
 *   stdout) when their settings would have printed it: nothing when NCCL_DEBUG was unset,
 *   only WARN lines (and the blank line before each) at WARN, the banner at VERSION, and at
 *   INFO/TRACE every line except INIT-only lines the shim's added INIT subsystem caused.
 * - To stdout a line is written at once, on NCCL's thread, as NCCL itself writes it. A file
 *   destination is opened when NCCL opens its log file (the marker's fopen, on NCCL's thread:
 *   the same moment, so /proc/self/fd/N names what it would have named), without waiting; a
 *   FIFO with no reader yet is opened later by the forwarder. Forwarding never holds NCCL up:
 *   the line is queued (1 MiB, one write per line) for the forwarder thread (started at the
 *   first line to forward), which writes it. A destination that would block (a full FIFO, a
 *   FIFO with no reader) blocks only the forwarder. Its descriptor is moved high and checked
 *   (device, inode) before each write: one the application closed or reused is never written
 *   again (lines counted). Lines that find the queue full are not forwarded (counted);
 *   NCCLSCOPE_DEBUG=1 prints the counts.
 * - logcap_stop is bounded: the forwarder gets at most min(1000, NCCLSCOPE_EXIT_MS / 3) ms to
 *   write what is queued; a forwarder left blocked ends with the process.
 * - Lines about transports, versions, init, rings, trees, NVLS, channels, networks, tuning
 *   and WARNs become NCCL_LOG records (ncs_emit), others are not kept. Lines that arrive before
 *   the core is ready wait in a small buffer (the first 64 lines).
 * - NCCLSCOPE_NCCL_LOG=0 turns all of this off: NCCL reads the user's values.
 * - fork: NCCL's stream lives on in the child; the child's lines are the child's (recorded once
 *   its shim activates), forwarded by a forwarder the child starts. exec: nothing to carry,
 *   the environment was never changed.
 * Limits: an NCCL reading its environment through an
 *   external env plugin (NCCL_ENV_PLUGIN) is not captured (docs/SHIM.md "Environment"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "internal.h" /* ncs_debug */
#include "ncclscope/encode.h"

#define LINE_MAX_BYTES 4096
#define EARLY_LINES 64
#define FWD_CAP (1u << 20) /* forward queue, bytes (power of two) */

enum { LV_NONE = 0, LV_VERSION = 1, LV_WARN = 2, LV_INFO = 3, LV_TRACE = 4 };

static struct {
  int active;
  char *debug, *subsys, *file; /* the user's values as NCCL read them (NULL: unset) */
  int user_level;
  int user_has_init;     /* the user's mask already had INIT (or they asked for ALL) */
  unsigned user_mask;    /* the user's NCCL_DEBUG_SUBSYS as NCCL computes it */
  int out_fd;            /* user's destination, -1 until opened; 1 = stdout */
  int out_failed;
  dev_t out_dev;         /* the destination's identity, checked before each write */
  ino_t out_ino;
  char early[EARLY_LINES][256];
  size_t early_len[EARLY_LINES];
  int nearly;
  pthread_mutex_t mu;    /* early lines */
  pthread_mutex_t in_mu; /* the stream's partial line */
} lc = { .out_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .in_mu = PTHREAD_MUTEX_INITIALIZER };

static void note(char **slot, const char *user) {
  char *copy = user ? strdup(user) : NULL;
  free(*slot);
  *slot = copy;
}

static int level_of(const char *v) {
  if (!v) return LV_NONE;
  if (!strcasecmp(v, "VERSION")) return LV_VERSION;
  if (!strcasecmp(v, "WARN")) return LV_WARN;
  if (!strcasecmp(v, "INFO")) return LV_INFO;
  if (!strcasecmp(v, "TRACE")) return LV_TRACE;
  return LV_NONE;
}

/* The user's subsystem list plus INIT, as NCCL_DEBUG_SUBSYS text. */
static void subsys_with_init(const char *user, char *out, size_t cap, int *had_init) {
  if (!user || !*user) { /* NCCL's default is INIT,BOOTSTRAP,ENV: INIT is in it */
    *had_init = 1;
    snprintf(out, cap, "INIT,BOOTSTRAP,ENV");
    return;
  }
  if (user[0] == '^') { /* everything but a list: keep the list minus INIT */
    char buf[512], res[512] = "^";
    snprintf(buf, sizeof buf, "%s", user + 1);
    *had_init = 1;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
      if (!strcasecmp(t, "INIT")) { *had_init = 0; continue; }
      if (res[1]) strncat(res, ",", sizeof res - strlen(res) - 1);
      strncat(res, t, sizeof res - strlen(res) - 1);
    }
    snprintf(out, cap, "%s", res[1] ? res : "ALL");
    return;
  }
  *had_init = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", user);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    if (!strcasecmp(t, "INIT") || !strcasecmp(t, "ALL")) *had_init = 1;
  snprintf(out, cap, "%s%s", user, *had_init ? "" : ",INIT");
}

/* ---- forwarding ---- */

/* 1 when NCCL alone would log to stdout: no NCCL_DEBUG_FILE, or a level of VERSION (NCCL
 * opens the file only above VERSION) */
static int to_stdout(void) { return lc.user_level <= LV_VERSION || !lc.file || !*lc.file; }

/* Opens the user's destination as NCCL's fopen(path, "w") would have. Called first on NCCL's
 * thread when NCCL opens its debug file (open_capture), the moment NCCL alone would have opened
 * it, without blocking (O_NONBLOCK); only a FIFO with no reader yet (ENXIO) is left to the
 * forwarder, which calls this again with may_block set and blocks only itself. Opening later
 * and elsewhere is what hurt jobs: with NCCL_DEBUG_FILE=/proc/self/fd/N, a lazy open on the
 * forwarder's thread reopened and truncated whatever N had become meanwhile (a job's shared
 * memory segment: SIGBUS). */
static void open_user_dest(int may_block) {
  if (lc.out_fd >= 0 || lc.out_failed) return;
  if (lc.user_level == LV_NONE) { lc.out_failed = 1; return; }
  if (to_stdout()) { lc.out_fd = 1; return; }
  /* the name as NCCL 2.28 makes it (src/debug.cc, ncclDebugInit): %h the host name up to its
   * first '.', with '%' and '/' made '-'; %p the pid; %% a '%'; any other %x kept as it is */
  char path[PATH_MAX], host[256] = "";
  gethostname(host, sizeof host - 1);
  char *dot = strchr(host, '.');
  if (dot) *dot = 0;
  for (char *h = host; *h; h++) if (*h == '%' || *h == '/') *h = '-';
  size_t o = 0;
  for (const char *p = lc.file; *p && o < sizeof path - sizeof host - 2; p++) {
    if (p[0] != '%' || !p[1]) { path[o++] = *p; continue; }
    p++;
    if (*p == 'h') o += (size_t)snprintf(path + o, sizeof path - o, "%s", host);
    else if (*p == 'p') o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
    else if (*p == '%') path[o++] = '%';
    else { path[o++] = '%'; path[o++] = *p; }
  }
  path[o] = 0;
  struct stat st;
  if (stat(path, &st) == 0 && ncs_is_trace_file(&st)) {
    /* the "user's" file is our own trace file (/proc/self/fd/N of the shim's values, N being
     * the trace's descriptor in this process): opening it "w" would truncate the trace.
     * Forward nothing. */
    lc.out_failed = 1;
    return;
  }
  int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (may_block ? 0 : O_NONBLOCK); /* NCCL: fopen(path, "w") */
  int fd = open(path, flags, 0644);
  if (fd < 0 && !may_block && errno == ENXIO && stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
    return; /* a FIFO nobody reads yet: NCCL would wait in fopen; the forwarder waits instead */
  if (fd >= 0 && !may_block) { /* writes block as NCCL's would (on the forwarder only) */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  fd = ncs_fd_move_high(fd);
  if (fd >= 0 && fstat(fd, &st) == 0) { lc.out_dev = st.st_dev; lc.out_ino = st.st_ino; }
  lc.out_fd = fd >= 0 ? fd : 1; /* NCCL falls back to stdout too */
}

/* 1 while the destination descriptor is still the file the forwarder opened (stdout is the
 * application's own, where NCCL itself would have written) */
static int out_is_ours(void) {
  struct stat st;
  if (lc.out_fd == 1) return 1;
  return lc.out_fd >= 0 && fstat(lc.out_fd, &st) == 0 && st.st_dev == lc.out_dev && st.st_ino == lc.out_ino;
}

static void write_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* The forward queue: lines as (u16 length, bytes) in a byte ring, filled by the reader (and by
 * logcap_stop's last drain), emptied by the forwarder thread, which alone opens and writes
 * the user's destination. Nobody holds fq.mu across a write or an open. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* data queued, or quit */
  char buf[FWD_CAP];
  uint64_t head, tail;     /* bytes pushed / popped, ever */
  int quit;                /* logcap_stop: exit once the queue is empty */
  int started;
  int tried;               /* fwd_start was called in this process */
  atomic_int done;         /* the forwarder returned */
  uint64_t dropped;        /* lines not forwarded: queue full or no forwarder */
  pthread_t th;
} fq = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void ring_put(uint64_t at, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) fq.buf[(at + i) & (FWD_CAP - 1)] = ((const char *)p)[i];
}
static void ring_get(uint64_t at, void *p, size_t n) {
  for (size_t i = 0; i < n; i++) ((char *)p)[i] = fq.buf[(at + i) & (FWD_CAP - 1)];
}

/* Queues one line for the destination; never waits for the destination. */
static void fwd_start(void);
static void fwd_push(const char *s, size_t n) {
  uint16_t len = (uint16_t)n; /* n <= LINE_MAX_BYTES + 2 */
  if (to_stdout()) {
    /* stdout: written here, on NCCL's thread under NCCL's log lock, as NCCL itself writes it
     * (same order against the job's own lines, nothing left queued at a child's _exit) */
    write_all(1, s, n);
    return;
  }
  pthread_mutex_lock(&fq.mu);
  int start = !fq.started && !fq.quit && !fq.tried;
  fq.tried |= start;
  pthread_mutex_unlock(&fq.mu);
  if (start) fwd_start(); /* the first line to forward (in a forked child too) */
  pthread_mutex_lock(&fq.mu);
  if (!fq.started || FWD_CAP - (fq.head - fq.tail) < sizeof len + n) {
    fq.dropped++;
  } else {
    ring_put(fq.head, &len, sizeof len);
    ring_put(fq.head + sizeof len, s, n);
    fq.head += sizeof len + n;
    pthread_cond_signal(&fq.cv);
  }
  pthread_mutex_unlock(&fq.mu);
}

static void *forwarder(void *arg) {
  (void)arg;
  char line[LINE_MAX_BYTES + 2];
  pthread_mutex_lock(&fq.mu);
  for (;;) {
    while (fq.head == fq.tail && !fq.quit) pthread_cond_wait(&fq.cv, &fq.mu);
    if (fq.head == fq.tail) break; /* quit and nothing left */
    uint16_t len;
    ring_get(fq.tail, &len, sizeof len);
    ring_get(fq.tail + sizeof len, line, len);
    fq.tail += sizeof len + len;
    pthread_mutex_unlock(&fq.mu);
    open_user_dest(1);                          /* a FIFO without a reader: may block, only here */
    if (lc.out_fd >= 0 && !out_is_ours()) { lc.out_fd = -1; lc.out_failed = 1; } /* taken: never again */
    if (lc.out_fd >= 0) write_all(lc.out_fd, line, len); /* may block: only here */
    else fq.dropped++;
    pthread_mutex_lock(&fq.mu);
  }
  pthread_mutex_unlock(&fq.mu);
  atomic_store(&fq.done, 1);
  return NULL;
}

static void fwd_start(void) {
  pthread_mutex_lock(&fq.mu);
  fq.head = fq.tail = 0;
  fq.quit = 0;
  atomic_store(&fq.done, 0);
  pthread_mutex_unlock(&fq.mu);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* SIGPIPE of a closed destination: EPIPE, not death */
  int rc = pthread_create(&fq.th, NULL, forwarder, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_mutex_lock(&fq.mu);
  fq.started = rc == 0;
  pthread_mutex_unlock(&fq.mu);
}

static void sleep_ms(void) { struct timespec t = {0, 1000000}; nanosleep(&t, NULL); }

/* Lets the forwarder write what is queued, until deadline_ns; 1 when it did. A forwarder
 * blocked on its destination is left as it is (it ends with the process). */
static int fwd_finish(uint64_t deadline_ns) {
  pthread_mutex_lock(&fq.mu);
  int started = fq.started;
  fq.quit = 1;
  pthread_cond_signal(&fq.cv);
  pthread_mutex_unlock(&fq.mu);
  if (!started) return 1;
  while (!atomic_load(&fq.done) && ncs_now_ns() < deadline_ns) sleep_ms();
  if (!atomic_load(&fq.done)) return 0;
  pthread_join(fq.th, NULL);
  pthread_mutex_lock(&fq.mu);
  fq.started = 0;
  pthread_mutex_unlock(&fq.mu);
  return 1;
}

static int has(const char *s, size_t n, const char *needle) { return memmem(s, n, needle, strlen(needle)) != NULL; }

/* NCCL's subsystem bits (src/include/nccl_common.h) and names. */
enum { SS_INIT = 0x1, SS_COLL = 0x2, SS_P2P = 0x4, SS_SHM = 0x8, SS_NET = 0x10, SS_NVLS = 0x800, SS_ALL = ~0 };
static const struct { const char *name; unsigned bit; } k_subsys[] = {
  {"INIT", 0x1}, {"COLL", 0x2}, {"P2P", 0x4}, {"SHM", 0x8}, {"NET", 0x10}, {"GRAPH", 0x20}, {"TUNING", 0x40},
  {"ENV", 0x80}, {"ALLOC", 0x100}, {"CALL", 0x200}, {"PROXY", 0x400}, {"NVLS", 0x800}, {"BOOTSTRAP", 0x1000},
  {"REG", 0x2000}, {"PROFILE", 0x4000}, {"RAS", 0x8000}, {"ALL", ~0u},
};
/* The mask NCCL computes from NCCL_DEBUG_SUBSYS (default INIT,BOOTSTRAP,ENV). */
static unsigned mask_of(const char *v) {
  if (!v || !*v) return 0x1 | 0x1000 | 0x80;
  int invert = v[0] == '^';
  unsigned m = invert ? ~0u : 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", v + invert);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    for (size_t i = 0; i < sizeof k_subsys / sizeof *k_subsys; i++)
      if (!strcasecmp(t, k_subsys[i].name)) m = invert ? m & ~k_subsys[i].bit : m | k_subsys[i].bit;
  return m;
}
/* The subsystems NCCL logs a line under, from its wording; unknown lines count as any. */
static unsigned line_subsys(const char *s, size_t n) {
  if (has(s, n, "NCCL INFO NCCL version ")) return SS_ALL;
  if (has(s, n, ": opCount ")) return SS_COLL;
  if (has(s, n, " via P2P/")) return SS_INIT | SS_P2P;
  if (has(s, n, " via SHM/") || has(s, n, " via direct shared")) return SS_INIT | SS_SHM;
  if (has(s, n, " via NET/") || has(s, n, "NCCL INFO NET/") || has(s, n, "NCCL INFO Using network")) return SS_INIT | SS_NET;
  if (has(s, n, "NVLS multicast")) return SS_INIT | SS_NVLS;
  static const char *const init_only[] = { "Init START", "Init COMPLETE", "NCCL INFO Channel ", "NCCL INFO Trees",
                                           " coll channels", " nRanks ", "Connected all", NULL };
  for (int i = 0; init_only[i]; i++) if (has(s, n, init_only[i])) return SS_INIT;
  return SS_ALL;
}

/* shim/profiler.c steers NCCL_PROFILER_PLUGIN at the same moment (docs/PROFILER.md); NCCL's
 * INFO lines about loading the shim as its profiler are not forwarded. */
int ncs_profiler_own_line(const char *s, size_t n);

/* Forwards one line (without newline) the way the user's settings would have printed it. */
static void forward(const char *s, size_t n, int blank_before) {
  int warn = has(s, n, " NCCL WARN ");
  int info = !warn && has(s, n, " NCCL INFO ");
  int show = 0;
  switch (lc.user_level) {
  case LV_NONE: return;
  case LV_VERSION:
  case LV_WARN:
    if (info && has(s, n, "NCCL INFO NCCL version ")) { /* bare banner, as NCCL 2.22+ prints it then */
      const char *b = memmem(s, n, "NCCL version ", 13);
      char buf[LINE_MAX_BYTES + 1];
      size_t m = n - (size_t)(b - s) < LINE_MAX_BYTES ? n - (size_t)(b - s) : LINE_MAX_BYTES;
      memcpy(buf, b, m);
      buf[m++] = '\n';
      fwd_push(buf, m);
      return;
    }
    show = lc.user_level == LV_WARN && (warn || (!info && has(s, n, "NCCL version ")));
    break;
  default:
    if (info && ncs_profiler_own_line(s, n)) return;
    show = warn || !info || (line_subsys(s, n) & lc.user_mask) != 0;
    break;
  }
  if (!show) return;
  /* one write per line, as NCCL's fwrite+fflush: lines of other processes never cut into it */
  char buf[LINE_MAX_BYTES + 2];
  size_t k = 0;
  if (blank_before) buf[k++] = '\n';
  size_t m = n < LINE_MAX_BYTES ? n : LINE_MAX_BYTES;
  memcpy(buf + k, s, m);
  k += m;
  buf[k++] = '\n';
  fwd_push(buf, k);
}

/* ---- records ---- */

static int keep_line(const char *s, size_t n) {
  static const char *const pat[] = { " via ", "NCCL version", "Init START", "Init COMPLETE", "nRanks ", "Channel ",
                                     "Trees", "NVLS", " channels", "Using network", "NET/IB", "NET/Socket", "Bytes -> Algo",
                                     " NCCL WARN ", "Connected all", NULL };
  if (has(s, n, ": opCount ")) return 0; /* COLL lines: the shim records calls itself */
  for (int i = 0; pat[i]; i++) if (has(s, n, pat[i])) return 1;
  return 0;
}

static void emit_line(const char *s, size_t n) {
  uint8_t buf[LINE_MAX_BYTES + 32];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, buf, sizeof buf);
  struct ncs_log_line l = { ncs_now_ns(), s, n };
  ncs_enc_log_line_body(&w, &l);
  if (!w.overflow) ncs_emit(NCS_REC_NCCL_LOG, w.buf, w.len);
}

static void record(const char *s, size_t n) {
  if (!keep_line(s, n)) return;
  if (ncs_hooks_ready()) {
    pthread_mutex_lock(&lc.mu);
    for (int i = 0; i < lc.nearly; i++) emit_line(lc.early[i], lc.early_len[i]);
    lc.nearly = 0;
    pthread_mutex_unlock(&lc.mu);
    emit_line(s, n);
    return;
  }
  pthread_mutex_lock(&lc.mu);
  if (lc.nearly < EARLY_LINES) {
    size_t k = n < sizeof lc.early[0] ? n : sizeof lc.early[0];
    memcpy(lc.early[lc.nearly], s, k);
    lc.early_len[lc.nearly++] = k;
  }
  pthread_mutex_unlock(&lc.mu);
}

/* Splits buffered bytes into lines; keeps a partial tail. */
static void consume(char *buf, size_t *len, int *blank_pending) {
  size_t start = 0;
  for (size_t i = 0; i < *len; i++) {
    if (buf[i] != '\n') continue;
    size_t n = i - start;
    const char *s = buf + start;
    if (n && s[n - 1] == '\r') n--;
    if (n == 0) *blank_pending = 1; /* NCCL's newline before a WARN */
    else {
      record(s, n);
      forward(s, n, *blank_pending && has(s, n, " NCCL WARN "));
      *blank_pending = 0;
    }
    start = i + 1;
  }
  if (start > 0) {
    memmove(buf, buf + start, *len - start);
    *len -= start;
  }
  if (*len >= LINE_MAX_BYTES) { /* an over-long line: pass it on in pieces */
    record(buf, *len);
    forward(buf, *len, 0);
    *len = 0;
  }
}

static char rbuf[LINE_MAX_BYTES + 1];
static size_t rlen;
static int blank_pending;

/* NCCL's stream (fopencookie): every byte NCCL writes, on NCCL's thread; never fails */
static ssize_t cookie_write(void *c, const char *buf, size_t size) {
  (void)c;
  pthread_mutex_lock(&lc.in_mu);
  for (size_t done = 0; done < size;) {
    size_t k = size - done < LINE_MAX_BYTES - rlen ? size - done : LINE_MAX_BYTES - rlen;
    memcpy(rbuf + rlen, buf + done, k);
    rlen += k;
    done += k;
    consume(rbuf, &rlen, &blank_pending);
  }
  pthread_mutex_unlock(&lc.in_mu);
  return (ssize_t)size;
}
static int cookie_close(void *c) { (void)c; return 0; }

static FILE *open_capture(void) {
  static int opened; /* the first fopen only (a second NCCL in the process shares the stream) */
  if (!opened) { opened = 1; open_user_dest(0); } /* where and when NCCL alone would open it */
  cookie_io_functions_t io = { .read = NULL, .write = cookie_write, .seek = NULL, .close = cookie_close };
  return fopencookie(NULL, "w", io);
}

/* What NCCL alone reads (envview.c); each notes the user's value first */
static char subsys_for_nccl[600];
static const char *debug_value(const char *user) {
  note(&lc.debug, user);
  lc.user_level = level_of(user);
  return lc.user_level == LV_TRACE ? user : "INFO";
}
static const char *subsys_value(const char *user) {
  note(&lc.subsys, user);
  lc.user_mask = mask_of(user);
  subsys_with_init(user, subsys_for_nccl, sizeof subsys_for_nccl, &lc.user_has_init);
  return subsys_for_nccl;
}
static const char *file_value(const char *user) {
  note(&lc.file, user);
  return ncs_env_marker;
}

static void logcap_start(void) {
  if (lc.active || !ncs_cfg.nccl_log) return;
  ncs_env_override("NCCL_DEBUG", debug_value);
  ncs_env_override("NCCL_DEBUG_SUBSYS", subsys_value);
  ncs_env_override("NCCL_DEBUG_FILE", file_value);
  ncs_env_file_hook(open_capture);
  lc.active = 1;
}

static void logcap_poll(void) {
  if (!lc.active || !ncs_hooks_ready()) return;
  pthread_mutex_lock(&lc.mu);
  for (int i = 0; i < lc.nearly; i++) emit_line(lc.early[i], lc.early_len[i]);
  lc.nearly = 0;
  pthread_mutex_unlock(&lc.mu);
}

/* The whole of logcap_stop: min(1000, NCCLSCOPE_EXIT_MS / 3) ms, so that the writer keeps
 * most of its exit budget for the final chunk. */
static uint64_t stop_budget_ms(void) {
  unsigned ms = ncs_cfg.exit_ms / 3;
  return ms > 1000 ? 1000 : ms;
}

static void logcap_stop(void) {
  if (!lc.active) return;
  uint64_t t0 = ncs_now_ns(), budget = stop_budget_ms() * 1000000ull;
  pthread_mutex_lock(&lc.in_mu);
  if (rlen) { record(rbuf, rlen); forward(rbuf, rlen, 0); rlen = 0; } /* a last line without newline */
  pthread_mutex_unlock(&lc.in_mu);
  logcap_poll();
  if (!fwd_finish(t0 + budget))
    ncs_debug("NCCL_DEBUG destination blocks: %llu bytes of NCCL lines not forwarded at exit",
              (unsigned long long)(fq.head - fq.tail));
  if (fq.dropped) ncs_debug("%llu NCCL lines not forwarded (queue full or destination taken)", (unsigned long long)fq.dropped);
  /* the stream stays: NCCL may log during the rest of the exit (recorded no more, forwarded
   * while a forwarder runs). out_fd stays open: a forwarder still blocked on it may finish. */
}

static void logcap_atfork_child(void) {
  /* NCCL's stream and the user's values live on; the forwarder does not exist here: the
   * parent's queued lines are the parent's to write, the child starts its own when needed */
  lc.nearly = 0;
  rlen = 0;
  blank_pending = 0;
  pthread_mutex_init(&lc.mu, NULL);
  pthread_mutex_init(&lc.in_mu, NULL);
  pthread_mutex_init(&fq.mu, NULL);
  pthread_cond_init(&fq.cv, NULL);
  fq.head = fq.tail = 0;
  fq.quit = fq.started = fq.tried = 0;
  fq.dropped = 0;
  atomic_store(&fq.done, 0);
}

static int logcap_poll_hook(unsigned wait_ms) {
  logcap_poll();
  return 0;
}

NCS_COLLECTOR ncs_logcap_collector = {
  .name = "logcap", .start = logcap_start, .poll = logcap_poll_hook, .stop = logcap_stop,
  .atfork_child = logcap_atfork_child};
