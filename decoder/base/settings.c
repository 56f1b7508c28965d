/* settings.c — the decoder's settings, read from the environment once (settings.h). */
#include "base/settings.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct ncs_settings S;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char *nonempty(const char *v) { return v && *v ? v : NULL; }

static void read_env(void) {
  const char *v;
  S.shim = nonempty(getenv("NCCLSCOPE_SHIM"));
  v = getenv("NCCLSCOPE_THREADS");
  S.threads = v && atoi(v) > 0 ? atoi(v) : 0;
  v = getenv("NCCLSCOPE_LOCKSTEP");
  S.lockstep = v && (*v == '0' || *v == '1') ? *v == '1' : -1;
  v = getenv("NCCLSCOPE_PROGRESS");
  S.progress = v && !strcmp(v, "0") ? 0 : v && !strcmp(v, "1") ? 1 : -1;
  S.step_mark = getenv("NCCLSCOPE_STEP_MARK");
  S.read_count = nonempty(getenv("NCCLSCOPE_READ_COUNT"));
}

const struct ncs_settings *ncs_settings(void) {
  pthread_once(&once, read_env);
  return &S;
}

void ncs_settings_read(void) {
  pthread_once(&once, read_env);
  read_env();
}
