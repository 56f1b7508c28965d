/* dl_probe — probes for NCCL entry points at run time, as a binding that checks features does
 * (`hasattr(ctypes.CDLL(None), "ncclCommShrink")`, dlsym(RTLD_DEFAULT, ...)). Not linked
 * against NCCL (dl_* jobs are built without it).
 *
 * Usage: dl_probe LIBNCCL NAME...
 * For each NAME, before LIBNCCL is loaded and again after dlopen(LIBNCCL, RTLD_NOW|RTLD_GLOBAL),
 * prints one line: "<phase> <NAME> default=<found|absent> global=<found|absent> error=<0|1>"
 * (default: dlsym(RTLD_DEFAULT); global: dlsym on dlopen(NULL)'s handle; error: whether
 * dlerror() had a message after a failed lookup). With the shim preloaded the lines must be
 * the ones printed without it. Exit 1 if LIBNCCL cannot be loaded. */
#include <dlfcn.h>
#include <stdio.h>

static void probe(const char *phase, int argc, char **argv) {
  void *self = dlopen(NULL, RTLD_NOW);
  for (int i = 2; i < argc; i++) {
    dlerror();
    void *d = dlsym(RTLD_DEFAULT, argv[i]);
    int err = d == NULL && dlerror() != NULL;
    void *g = self ? dlsym(self, argv[i]) : NULL;
    if (!g) err = err || dlerror() != NULL;
    printf("%s %s default=%s global=%s error=%d\n", phase, argv[i], d ? "found" : "absent",
           g ? "found" : "absent", err);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: dl_probe LIBNCCL NAME...\n"); return 2; }
  probe("before", argc, argv);
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) { fprintf(stderr, "dl_probe: %s\n", dlerror()); return 1; }
  probe("after", argc, argv);
  return 0;
}
