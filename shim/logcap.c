/* logcap.c — capture of NCCL's debug log (the "logcap" collector of hooks.h), for every communicator,
 * at init and later (NCCL >= 2.22 connects at the first collective).
 *
 * Contract:
 * - logcap_start(), before the process's first NCCL call: remembers the user's
 *   NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE, creates a pipe (1 MiB where the kernel
 *   allows), points NCCL_DEBUG_FILE at its write end (/proc/self/fd/N), raises NCCL_DEBUG to
 *   INFO and adds INIT to the user's subsystems, and starts one reader thread.
 * - The reader thread reads whole lines. The first line proves NCCL has read its debug
 *   environment: the user's three variables are then restored exactly (set or unset), and
 *   NCCL's own descriptor of the pipe is made non-blocking, so NCCL's logging never waits on
 *   the shim (a line that does not fit in a full pipe is lost, NCCL carries on).
 * - Each line is forwarded to the user's destination (their NCCL_DEBUG_FILE with %h/%p, or
 *   stdout) when their settings would have printed it: nothing when NCCL_DEBUG was unset,
 *   only WARN lines (and the blank line before each) at WARN, the banner at VERSION, and at
 *   INFO/TRACE every line except INIT-only lines the shim's added INIT subsystem caused.
 * - Forwarding never holds up reading: the reader records each line, then queues its forwarded
 *   copy (1 MiB, one write per line) for a second thread, the forwarder (started only when the
 *   user's NCCL_DEBUG prints something), which opens the destination and writes it. A
 *   destination that would have blocked NCCL itself (a full FIFO or pipe nobody reads, a FIFO
 *   with no reader yet) blocks only the forwarder: the reader keeps emptying the pipe, so
 *   NCCL's non-blocking writes keep landing and every line still reaches the trace. Lines
 *   that find the queue full are not forwarded (counted); times the reader found the pipe
 *   full (NCCL may then have lost a line) are counted too; NCCLSCOPE_DEBUG=1 prints both.
 * - logcap_stop is bounded: at most min(1000, NCCLSCOPE_EXIT_MS / 3) ms in all. It wakes
 *   the reader and waits for it (half of that); a reader that did not finish is left alone
 *   (its lines are lost, nothing else touches its buffer). Then it waits for the forwarder to
 *   write what is queued until the deadline, and gives up on a destination that blocks. A
 *   thread left blocked in write() or open() ends with the process (exit_group); the kernel
 *   closes the descriptors.
 * - Lines about transports, versions, init, rings, trees, NVLS, channels, networks, tuning
 *   and WARNs become NCCL_LOG records (ncs_emit), others are not kept. Lines read before the
 *   core is ready wait in a small buffer (the first 64 lines).
 * - NCCLSCOPE_NCCL_LOG=0 turns all of this off: NCCL's environment is left untouched.
 * - fork: the child's first NCCL call (logcap_start again) makes the child its own pipe and
 *   reader and moves NCCL's inherited descriptor onto it, so the child's lines are the child's
 *   and never go to a pipe whose reader has exited (no SIGPIPE). The read end stays open until
 *   the process ends, for the same reason.
 * - exec in the window before NCCL's first line: the user's values travel in
 *   NCCLSCOPE_SAVED_NCCL_DEBUG{,_SUBSYS,_FILE} and the new image restores from those.
 * Limits (docs/DOCTOR.md): forwarded stdout lines are written by the reader thread, so their
 * order against the application's own stdout can differ; a child started in that window
 * without the shim sees the shim's values. */
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

struct saved_var { int set; char *value; };

static struct {
  int active;
  int rfd, wfd;
  int wake_r, wake_w;    /* logcap_stop wakes the reader's poll through this pipe */
  int pipe_cap;          /* the capture pipe's size (F_GETPIPE_SZ) */
  pthread_t thread;
  atomic_int stop;
  atomic_int reader_done;
  atomic_ullong pipe_full; /* reads that found the pipe full: NCCL may have lost a line */
  atomic_int restored;
  struct saved_var debug, subsys, file;
  int user_level;
  int user_has_init;     /* the user's mask already had INIT (or they asked for ALL) */
  unsigned user_mask;    /* the user's NCCL_DEBUG_SUBSYS as NCCL computes it */
  int out_fd;            /* user's destination, -1 until opened; 1 = stdout */
  int out_failed;
  ino_t pipe_ino;
  int have_orig;         /* saved originals are valid (kept across fork) */
  int inherited;         /* forked child: NCCL's descriptor still points at the parent's pipe */
  char early[EARLY_LINES][256];
  size_t early_len[EARLY_LINES];
  int nearly;
  pthread_mutex_t mu;
} lc = { .rfd = -1, .wfd = -1, .wake_r = -1, .wake_w = -1, .out_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

/* While NCCL's variables are the shim's, the user's are also kept in NCCLSCOPE_SAVED_<name>
 * ("1:value" or "0:"), so that a program exec'ed in that window (same environment, new image)
 * still knows the user's values. */
static void saved_name(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "NCCLSCOPE_SAVED_%s", name); }
static void save(struct saved_var *s, const char *name) {
  char sn[64];
  saved_name(sn, sizeof sn, name);
  const char *prev = getenv(sn);
  if (prev && (prev[0] == '0' || prev[0] == '1') && prev[1] == ':') {
    s->set = prev[0] == '1';
    s->value = s->set ? strdup(prev + 2) : NULL;
  } else {
    const char *v = getenv(name);
    s->set = v != NULL;
    s->value = v ? strdup(v) : NULL;
  }
  char *enc = malloc((s->value ? strlen(s->value) : 0) + 3);
  if (enc) {
    sprintf(enc, "%c:%s", s->set ? '1' : '0', s->value ? s->value : "");
    setenv(sn, enc, 1);
    free(enc);
  }
}
static void restore(struct saved_var *s, const char *name) {
  char sn[64];
  saved_name(sn, sizeof sn, name);
  if (s->set && s->value) setenv(name, s->value, 1);
  else unsetenv(name);
  unsetenv(sn);
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

static void open_user_dest(void) {
  if (lc.out_fd >= 0 || lc.out_failed) return;
  if (lc.user_level == LV_NONE) { lc.out_failed = 1; return; }
  if (!lc.file.set || !lc.file.value || !*lc.file.value) { lc.out_fd = 1; return; }
  char path[PATH_MAX], host[256] = "";
  gethostname(host, sizeof host - 1);
  char *dot = strchr(host, '.');
  if (dot) *dot = 0;
  size_t o = 0;
  for (const char *p = lc.file.value; *p && o < sizeof path - 32; p++) {
    if (p[0] == '%' && p[1] == 'h') { o += (size_t)snprintf(path + o, sizeof path - o, "%s", host); p++; }
    else if (p[0] == '%' && p[1] == 'p') { o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid()); p++; }
    else path[o++] = *p;
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
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); /* NCCL: fopen(path, "w") */
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_ino == lc.pipe_ino) {
    /* the "user's" file is our own capture pipe (/proc/self/fd/N of the shim's values, seen by
     * a child that got the parent's environment half restored): forwarding into it would feed
     * every line back to the reader forever (and, once full, block it). Forward nothing. */
    close(fd);
    lc.out_failed = 1;
    return;
  }
  lc.out_fd = fd >= 0 ? fd : 1; /* NCCL falls back to stdout too */
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
static void fwd_push(const char *s, size_t n) {
  uint16_t len = (uint16_t)n; /* n <= LINE_MAX_BYTES + 2 */
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

static void open_user_dest(void);
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
    open_user_dest();                           /* may block (a FIFO without a reader): only here */
    if (lc.out_fd >= 0) write_all(lc.out_fd, line, len); /* may block: only here */
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

/* Calls fn(fd) for every descriptor of the process that is our pipe (inode ino), except the
 * shim's own ends. Reads /proc/self/fd links ("pipe:[ino]") rather than probing descriptors. */
static void for_pipe_fds(ino_t ino, int skip1, int skip2, void (*fn)(int fd)) {
  char want[48];
  snprintf(want, sizeof want, "pipe:[%lu]", (unsigned long)ino);
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = atoi(e->d_name);
    if (fd == dfd || fd == skip1 || fd == skip2) continue;
    char link[64];
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = 0;
    if (!strcmp(link, want)) fn(fd);
  }
  closedir(d);
}
static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  int fdfl = fcntl(fd, F_GETFD);
  if (fdfl >= 0) fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC); /* an exec'ed or spawned program never holds it */
}
/* Makes NCCL's descriptor of our pipe (from its fopen) non-blocking and close-on-exec. */
static void nonblock_nccl_fd(void) { for_pipe_fds(lc.pipe_ino, lc.rfd, lc.wfd, set_nonblock); }

static void after_first_line(void) {
  if (atomic_exchange(&lc.restored, 1)) return;
  restore(&lc.debug, "NCCL_DEBUG");
  restore(&lc.subsys, "NCCL_DEBUG_SUBSYS");
  restore(&lc.file, "NCCL_DEBUG_FILE");
  nonblock_nccl_fd();
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
      after_first_line();
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

static void drain(int timeout_ms) {
  for (;;) {
    struct pollfd p[2] = { { lc.rfd, POLLIN, 0 }, { lc.wake_r, POLLIN, 0 } };
    int r = poll(p, lc.wake_r >= 0 ? 2 : 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || !(p[0].revents & POLLIN)) return; /* timeout, or woken by logcap_stop */
    int queued = 0;
    if (lc.pipe_cap > 0 && ioctl(lc.rfd, FIONREAD, &queued) == 0 && queued >= lc.pipe_cap)
      atomic_fetch_add(&lc.pipe_full, 1);
    ssize_t n = read(lc.rfd, rbuf + rlen, LINE_MAX_BYTES - rlen);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    rlen += (size_t)n;
    consume(rbuf, &rlen, &blank_pending);
    timeout_ms = 0;
  }
}

static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&lc.stop)) drain(lc.wake_r >= 0 ? 1000 : 100);
  atomic_store(&lc.reader_done, 1);
  return NULL;
}

/* Forked child: NCCL's descriptors of the parent's pipe now point at our new pipe, so the
 * child's lines reach the child's reader (and never a pipe whose reader has exited). */
static void onto_new_pipe(int fd) { if (fd != lc.rfd && fd != lc.wfd) dup2(lc.wfd, fd); }
static void adopt_inherited(ino_t old_ino, int old_r, int old_w) {
  for_pipe_fds(old_ino, old_r, old_w, onto_new_pipe);
  if (old_r >= 0) close(old_r);
  if (old_w >= 0) close(old_w);
}

static void logcap_start(void) {
  if (lc.active || !ncs_cfg.nccl_log) return;
  int old_r = lc.rfd, old_w = lc.wfd, inherited = lc.inherited;
  ino_t old_ino = lc.pipe_ino;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  lc.rfd = fds[0];
  lc.wfd = fds[1];
  fcntl(lc.wfd, F_SETPIPE_SZ, 1 << 20);
  lc.pipe_cap = fcntl(lc.wfd, F_GETPIPE_SZ);
  fcntl(lc.rfd, F_SETFL, fcntl(lc.rfd, F_GETFL) | O_NONBLOCK);
  fcntl(lc.wfd, F_SETFL, fcntl(lc.wfd, F_GETFL) | O_NONBLOCK);
  struct stat st;
  if (fstat(lc.wfd, &st) == 0) lc.pipe_ino = st.st_ino;
  if (inherited) adopt_inherited(old_ino, old_r, old_w);
  lc.inherited = 0;
  if (!lc.have_orig) {
    save(&lc.debug, "NCCL_DEBUG");
    save(&lc.subsys, "NCCL_DEBUG_SUBSYS");
    save(&lc.file, "NCCL_DEBUG_FILE");
    lc.have_orig = 1;
  }
  lc.user_level = level_of(lc.debug.value);
  lc.user_mask = mask_of(lc.subsys.value);
  char subsys[600], path[64];
  subsys_with_init(lc.subsys.value, subsys, sizeof subsys, &lc.user_has_init);
  snprintf(path, sizeof path, "/proc/self/fd/%d", lc.wfd);
  int env_is_ours = !atomic_load(&lc.restored);
  if (lc.wake_r >= 0) close(lc.wake_r); /* a forked child: the parent's wake pipe */
  if (lc.wake_w >= 0) close(lc.wake_w);
  lc.wake_r = lc.wake_w = -1;
  int wk[2];
  if (pipe2(wk, O_CLOEXEC | O_NONBLOCK) == 0) { lc.wake_r = wk[0]; lc.wake_w = wk[1]; }
  atomic_store(&lc.stop, 0);
  atomic_store(&lc.reader_done, 0);
  if (lc.user_level != LV_NONE) fwd_start(); /* without it, nothing is forwarded (counted) */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&lc.thread, NULL, reader, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    fwd_finish(0);
    close(lc.rfd);
    close(lc.wfd);
    lc.rfd = lc.wfd = -1;
    return;
  }
  if (!inherited || env_is_ours) { /* a child whose parent already gave the variables back keeps them */
    atomic_store(&lc.restored, 0);
    if (lc.user_level < LV_TRACE) setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", subsys, 1);
    setenv("NCCL_DEBUG_FILE", path, 1);
  }
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
  atomic_store(&lc.stop, 1);
  if (lc.wake_w >= 0) { ssize_t w = write(lc.wake_w, "x", 1); (void)w; }
  /* the reader never waits for the destination, so it finishes at once; but whatever it is
   * doing, wait for it at most half the budget, never with an unbounded join */
  while (!atomic_load(&lc.reader_done) && ncs_now_ns() - t0 < budget / 2) sleep_ms();
  if (atomic_load(&lc.reader_done)) {
    pthread_join(lc.thread, NULL);
    drain(0);                   /* lines written after the reader's last look */
    if (rlen) { record(rbuf, rlen); forward(rbuf, rlen, 0); rlen = 0; }
  } else {
    ncs_debug("NCCL log reader did not stop within %llu ms: its last lines are not in the trace",
              (unsigned long long)(budget / 2000000));
  }
  logcap_poll();
  if (!atomic_exchange(&lc.restored, 1)) { /* NCCL never logged: give the user their variables back */
    restore(&lc.debug, "NCCL_DEBUG");
    restore(&lc.subsys, "NCCL_DEBUG_SUBSYS");
    restore(&lc.file, "NCCL_DEBUG_FILE");
  }
  if (!fwd_finish(t0 + budget))
    ncs_debug("NCCL_DEBUG destination blocks: %llu bytes of NCCL lines not forwarded at exit",
              (unsigned long long)(fq.head - fq.tail));
  if (fq.dropped) ncs_debug("%llu NCCL lines not forwarded (forward queue full)", (unsigned long long)fq.dropped);
  if (atomic_load(&lc.pipe_full))
    ncs_debug("the NCCL log pipe was found full %llu times: NCCL may have lost lines",
              (unsigned long long)atomic_load(&lc.pipe_full));
  /* rfd and wfd stay open: NCCL may log during the rest of the exit, and an open read end keeps
   * those writes from raising SIGPIPE (a full pipe just drops them: NCCL's descriptor is
   * non-blocking). out_fd stays open: a forwarder still blocked on it may finish its write. */
  lc.active = 0;
}

static void logcap_atfork_child(void) {
  /* The reader thread does not exist in the child. Keep the user's saved variables and the
   * destination; the next logcap_start (the child's first NCCL call) makes a new pipe,
   * moves NCCL's inherited descriptor onto it and starts a reader. */
  if (!lc.active) return;
  lc.active = 0;
  lc.inherited = 1;
  lc.nearly = 0;
  rlen = 0;
  blank_pending = 0;
  atomic_store(&lc.stop, 0);
  atomic_store(&lc.reader_done, 0);
  atomic_store(&lc.pipe_full, 0);
  pthread_mutex_init(&lc.mu, NULL);
  /* nor does the forwarder: the parent's queued lines are the parent's to write */
  pthread_mutex_init(&fq.mu, NULL);
  pthread_cond_init(&fq.cv, NULL);
  fq.head = fq.tail = 0;
  fq.quit = fq.started = 0;
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
