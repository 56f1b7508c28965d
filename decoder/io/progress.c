/* progress.c — the terminal progress bar (contract in progress.h). */
#include "io/progress.h"
#include "base/settings.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int on;
static const char *label;
static uint64_t total;
static int files_total;
static _Atomic uint64_t done_bytes;
static _Atomic int done_files;
static _Atomic int64_t next_draw_ns;
static _Atomic int drawing;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void draw(void) {
  uint64_t b = atomic_load(&done_bytes);
  double frac = total ? (double)b / (double)total : 0;
  if (frac > 1) frac = 1;
  char bar[31];
  int fill = (int)(frac * 30);
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  fprintf(stderr, "\r%s [%s] %3d%%  %d/%d files  %.1f MB", label, bar, (int)(frac * 100),
          atomic_load(&done_files), files_total, (double)b / 1e6);
  fflush(stderr);
}

static void maybe_draw(void) {
  if (!on) return;
  int64_t t = now_ns(), next = atomic_load(&next_draw_ns);
  if (t < next) return;
  int expect = 0;
  if (!atomic_compare_exchange_strong(&drawing, &expect, 1)) return;
  atomic_store(&next_draw_ns, t + 100000000);
  draw();
  atomic_store(&drawing, 0);
}

void ncs_progress_begin(const char *what, uint64_t total_bytes, int nfiles) {
  int want = ncs_settings()->progress;
  on = isatty(2) && want != 0;
  label = what;
  total = total_bytes;
  files_total = nfiles;
  atomic_store(&done_bytes, 0);
  atomic_store(&done_files, 0);
  /* short decodes never show a bar; NCCLSCOPE_PROGRESS=1 draws from the start (tests) */
  atomic_store(&next_draw_ns, want == 1 ? 0 : now_ns() + 200000000);
}
void ncs_progress_bytes(uint64_t n) { atomic_fetch_add(&done_bytes, n); maybe_draw(); }
void ncs_progress_file_done(void) { atomic_fetch_add(&done_files, 1); maybe_draw(); }
void ncs_progress_end(void) {
  if (!on) return;
  draw();
  fprintf(stderr, "\n");
  fflush(stderr);
  on = 0;
}
