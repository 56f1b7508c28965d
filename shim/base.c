/* base.c — what every part of the shim reads and no part owns: the settings struct, the
 * process-wide flags (active, GPU timing on), the ring table and per-thread state, the host
 * name, the fatal-signal flush flags, the clock, the hash and the debug line.
 *
 * Contract: a leaf: uses no other shim file. The settings are filled once, at activation, by
 * state.c (read_config); the ring table by state.c's thread registration; everything else
 * only reads them. ncs_debug writes one line to stderr only with NCCLSCOPE_DEBUG=1. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "internal.h"

struct ncs_config ncs_cfg;
__thread struct ncs_tls ncs_tls __attribute__((tls_model("initial-exec")));
_Atomic uint32_t ncs_gen = 1;
_Atomic int ncs_active;
_Atomic int ncs_gpu_on;
struct ncs_ring *_Atomic ncs_rings[NCS_MAX_THREADS];
char ncs_host[256];
int (*_Atomic ncs_activate_by_profiler)(void);

const char *ncs_host_name(void) { return ncs_host; }

uint64_t ncs_now_ns(void) { return ncs_clock_ns(); } /* the collectors' out-of-line copy */

static __thread struct ncs_debug_sink *debug_sink;
void ncs_debug_divert(struct ncs_debug_sink *sink) { debug_sink = sink; }

void ncs_debug(const char *fmt, ...) {
  if (!ncs_cfg.debug) return;
  int saved = errno;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(line, sizeof line, "ncclscope[%d]: ", (int)getpid());
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  size_t len = strnlen(line, sizeof line - 2);
  line[len++] = '\n';
  if (debug_sink) {
    if (len <= sizeof debug_sink->buf - debug_sink->len) {
      memcpy(debug_sink->buf + debug_sink->len, line, len);
      debug_sink->len += len;
    }
    errno = saved;
    return;
  }
  ssize_t w = write(2, line, len);
  (void)w;
  errno = saved;
}

uint64_t ncs_hash64(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
  return h;
}

int ncs_fd_move_high(int fd) {
  if (fd < 0) return fd;
  struct rlimit rl;
  long base = 512;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) base = (long)(rl.rlim_cur / 2);
  if (base > 4096) base = 4096;
  if (base <= fd) return fd;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)base);
  if (hi < 0) return fd;
  close(fd);
  return hi;
}

int ncs_hooks_ready(void) { return atomic_load_explicit(&ncs_active, memory_order_acquire) == 1; }
