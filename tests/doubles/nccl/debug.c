/* debug.c — the NCCL double's debug log, as NCCL 2.28 writes it (double_log.h).
 *
 * Contract: the environment is read once, at the first log call (NCCL reads it once too):
 *   NCCL_DEBUG        VERSION | WARN | INFO | TRACE (case-insensitive); unset: nothing but
 *                     errors are logged (NCCL's default level NONE prints nothing)
 *   NCCL_DEBUG_SUBSYS comma list of INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,ALLOC,CALL,PROXY,
 *                     NVLS,BOOTSTRAP,REG,ALL; a leading ^ inverts; default INIT,BOOTSTRAP,ENV
 *   NCCL_DEBUG_FILE   file name with %h (host name up to the first '.') and %p (pid);
 *                     opened with "w" at the first log call; unset or unopenable: stdout
 * INFO lines: "host:pid:tid [dev] NCCL INFO msg". WARN lines: a newline, then (2.26+ default
 * NCCL_DEBUG_TIMESTAMP_LEVELS=WARN) "[YYYY-mm-dd HH:MM:SS] ", then
 * "host:pid:tid [dev] file:line NCCL WARN msg". Each line is written with one fwrite + fflush
 * so lines of concurrent threads do not interleave within a line. */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "double_log.h"

int cudaGetDevice(int *device); /* the CUDA double (libcudart.so.13) */

enum { LVL_NONE = 0, LVL_VERSION = 1, LVL_WARN = 2, LVL_INFO = 3, LVL_TRACE = 5 };

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_level;
static unsigned g_mask = NCCLD_INIT | NCCLD_BOOTSTRAP | NCCLD_ENV;
static FILE *g_out;
static char g_host[64];

static const struct { const char *name; unsigned bit; } k_subsys[] = {
  {"INIT", NCCLD_INIT}, {"COLL", NCCLD_COLL}, {"P2P", NCCLD_P2P}, {"SHM", NCCLD_SHM},
  {"NET", NCCLD_NET}, {"GRAPH", NCCLD_GRAPH}, {"TUNING", NCCLD_TUNING}, {"ENV", NCCLD_ENV},
  {"ALLOC", NCCLD_ALLOC}, {"CALL", NCCLD_CALL}, {"PROXY", NCCLD_PROXY}, {"NVLS", NCCLD_NVLS},
  {"BOOTSTRAP", NCCLD_BOOTSTRAP}, {"REG", NCCLD_REG}, {"ALL", (unsigned)NCCLD_ALL},
};

static void set_env_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[2100];
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    if (n && line[n - 1] == '\n') line[--n] = 0;
    if (line[0] == '#') continue;
    char *eq = strchr(line, '=');
    if (!eq || eq == line) continue;
    *eq = 0;
    setenv(line, eq + 1, 0);
  }
  fclose(f);
}
/* Cancellation is held off while the file is read (fopen and fgets are cancellation points):
 * glibc's pthread_once lets a later caller run a cancelled init again, ThreadSanitizer's
 * interceptor leaves every later caller waiting for ever (hostile_job cancel under make tsan). */
static void init_env_once(void) {
  int cs;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  const char *user = getenv("NCCL_CONF_FILE");
  if (user && *user) set_env_file(user);
  else {
    const char *home = getenv("HOME");
    char p[4096];
    if (home && *home) { snprintf(p, sizeof p, "%s/.nccl.conf", home); set_env_file(p); }
  }
  set_env_file("/etc/nccl.conf");
  pthread_setcancelstate(cs, NULL);
}
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;
void ncclD_init_env(void) { pthread_once(&g_env_once, init_env_once); }

static void read_env(void) {
  ncclD_init_env();
  const char *lvl = getenv("NCCL_DEBUG");
  if (lvl) {
    if (!strcasecmp(lvl, "VERSION")) g_level = LVL_VERSION;
    else if (!strcasecmp(lvl, "WARN")) g_level = LVL_WARN;
    else if (!strcasecmp(lvl, "INFO")) g_level = LVL_INFO;
    else if (!strcasecmp(lvl, "TRACE")) g_level = LVL_TRACE;
  }
  const char *sub = getenv("NCCL_DEBUG_SUBSYS");
  if (sub && *sub) {
    int invert = sub[0] == '^';
    unsigned mask = invert ? (unsigned)NCCLD_ALL : 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sub + invert);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
      for (size_t i = 0; i < sizeof k_subsys / sizeof *k_subsys; i++)
        if (!strcasecmp(tok, k_subsys[i].name)) {
          if (invert) mask &= ~k_subsys[i].bit;
          else mask |= k_subsys[i].bit;
        }
    g_mask = mask;
  }
  gethostname(g_host, sizeof g_host - 1);
  char *dot = strchr(g_host, '.');
  if (dot) *dot = 0;
  g_out = stdout;
  const char *fn = getenv("NCCL_DEBUG_FILE");
  /* NCCL 2.28 (src/debug.cc, ncclDebugInit): a file only above VERSION; in its name %h is the
   * host name up to its first '.', with '%' and '/' made '-', %p the pid, %% a '%', and any
   * other %x is kept as it is */
  if (g_level > LVL_VERSION && fn && *fn) {
    char host[sizeof g_host], path[4096];
    snprintf(host, sizeof host, "%s", g_host);
    for (char *h = host; *h; h++) if (*h == '%' || *h == '/') *h = '-';
    size_t o = 0;
    for (const char *p = fn; *p && o < sizeof path - 80; p++) {
      if (p[0] != '%' || !p[1]) { path[o++] = *p; continue; }
      p++;
      if (*p == 'h') o += (size_t)snprintf(path + o, sizeof path - o, "%s", host);
      else if (*p == 'p') o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
      else if (*p == '%') path[o++] = '%';
      else { path[o++] = '%'; path[o++] = *p; }
    }
    path[o] = 0;
    FILE *f = fopen(path, "w");
    if (f) g_out = f;
  }
}

static int current_dev(int dev) {
  if (dev >= 0) return dev;
  int d = 0;
  if (cudaGetDevice(&d) != 0) d = 0;
  return d;
}

static void emit(const char *buf, size_t n) {
  pthread_mutex_lock(&g_mu);
  fwrite(buf, 1, n, g_out);
  fflush(g_out);
  pthread_mutex_unlock(&g_mu);
}

void ncclD_info(unsigned subsys, int dev, const char *fmt, ...) {
  pthread_once(&g_once, read_env);
  if (g_level < LVL_INFO || !(g_mask & subsys)) return;
  char buf[2048];
  int n = snprintf(buf, sizeof buf, "%s:%d:%d [%d] NCCL INFO ", g_host, (int)getpid(), (int)syscall(SYS_gettid),
                   current_dev(dev));
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  emit(buf, (size_t)n);
}

void ncclD_warn(const char *file, int line, int dev, const char *fmt, ...) {
  pthread_once(&g_once, read_env);
  if (g_level < LVL_WARN) return;
  char ts[40];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(ts, sizeof ts, "[%F %T] ", &tm);
  char buf[2048];
  int n = snprintf(buf, sizeof buf, "\n%s%s:%d:%d [%d] %s:%d NCCL WARN ", ts, g_host, (int)getpid(),
                   (int)syscall(SYS_gettid), current_dev(dev), file, line);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  emit(buf, (size_t)n);
}

void ncclD_version_banner(int code) {
  pthread_once(&g_once, read_env);
  int x = code >= 10000 ? code / 10000 : code / 1000;
  int y = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  int z = code % 100;
  if (g_level == LVL_VERSION || g_level == LVL_WARN) {
    char buf[96];
    int n = snprintf(buf, sizeof buf, "NCCL version %d.%d.%d+cuda13.0\n", x, y, z);
    emit(buf, (size_t)n);
  } else {
    ncclD_info(NCCLD_ALL, -1, "NCCL version %d.%d.%d+cuda13.0", x, y, z);
  }
}
