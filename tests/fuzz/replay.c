/* replay.c — runs a libFuzzer entry point over files, without libFuzzer, so `make test` can
 * replay the regression corpora with any C compiler.
 *
 * Usage: replay FILE_OR_DIR...  Calls LLVMFuzzerTestOneInput once per regular file (a
 * directory stands for the files directly inside it), prints "replayed N files" and exits 0;
 * a crash or abort in the target ends the process (the caller reports which file was last:
 * each name is printed to stderr before it runs). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replayed;

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); return -1; }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) { uint8_t *nb = realloc(buf, cap *= 2); if (!nb) { free(buf); buf = NULL; } else buf = nb; }
  }
  fclose(f);
  if (!buf) { fprintf(stderr, "%s: out of memory\n", path); return -1; }
  fprintf(stderr, "replay %s\n", path);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  replayed++;
  return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) { perror(argv[i]); bad = 1; continue; }
    if (!S_ISDIR(st.st_mode)) { bad |= run_file(argv[i]) != 0; continue; }
    DIR *d = opendir(argv[i]);
    if (!d) { perror(argv[i]); bad = 1; continue; }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char **nv = realloc(names, (nn + 1) * sizeof *names);
      if (!nv) break;
      names = nv;
      size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
      names[nn] = malloc(len);
      snprintf(names[nn++], len, "%s/%s", argv[i], e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp);
    for (size_t k = 0; k < nn; k++) {
      if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) bad |= run_file(names[k]) != 0;
      free(names[k]);
    }
    free(names);
  }
  printf("replayed %ld files\n", replayed);
  return bad;
}
