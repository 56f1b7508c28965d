/* readcount.c — per-path counts of reads and peeks, written at exit (contract in readcount.h). */
#include "io/readcount.h"
#include "base/settings.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct counted { char *path; unsigned long reads, peeks; };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *out_path;  /* NCCLSCOPE_READ_COUNT, NULL: counting is off */
static struct counted *tab;
static size_t n, cap;

static void write_counts(void) {
  FILE *f = fopen(out_path, "a");
  if (!f) return;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < n; i++) fprintf(f, "%lu %lu %s\n", tab[i].reads, tab[i].peeks, tab[i].path);
  pthread_mutex_unlock(&mu);
  fclose(f);
}

static void setup(void) {
  const char *p = ncs_settings()->read_count;
  if (p && atexit(write_counts) == 0) out_path = p;
}

static void count(const char *path, int read) {
  pthread_once(&once, setup);
  if (!out_path || !path) return;
  pthread_mutex_lock(&mu);
  size_t i = 0;
  while (i < n && strcmp(tab[i].path, path) != 0) i++;
  if (i == n) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      struct counted *t = realloc(tab, nc * sizeof *t);
      if (!t) goto out;
      tab = t; cap = nc;
    }
    if (!(tab[n].path = strdup(path))) goto out;
    tab[n].reads = tab[n].peeks = 0;
    n++;
  }
  if (read) tab[i].reads++;
  else tab[i].peeks++;
out:
  pthread_mutex_unlock(&mu);
}

void ncs_readcount_read(const char *path) { count(path, 1); }
void ncs_readcount_peek(const char *path) { count(path, 0); }
