/* offswitch_job — calls every NCCL entry point against tests/faults/offswitch_stub.c and checks
 * that each returns exactly the stub's code and leaves exactly the stub's errno (or, where the
 * stub leaves errno alone, the job's own value from before the call): what the job sees must
 * not depend on whether the shim is preloaded, enabled or switched off (NCCLSCOPE_DISABLE=1).
 *
 * Built twice (tests/faults/common.sh): linked against the stub's libnccl.so.2, and with
 * -DOFF_DLOPEN, not linked: NCCL is then dlopen'ed (RTLD_LOCAL, as ctypes does) only when the
 * mode starts, after the shim's constructor, and every entry point is found with dlsym on that
 * handle.
 *
 * Usage: offswitch_job MODE [N] [T]
 *   calls N      the whole list of entry points N times
 *   race T N     T threads released at once make the process's first NCCL calls (all racing
 *                the shim's activation), then the list N times each
 *   fork N X     first call (ncclGetVersion), then fork at once; the child runs the list N
 *                times and ends with exit (X = exit) or _exit (X = _exit); the parent too
 *   none         never calls NCCL
 * Prints "ok MODE ...", then "threads N fds N" (this process's threads and open descriptors
 * at the end) and "forwarded N of M" (calls the stub saw, calls the job made). Exit 1, with
 * the entry point, code and errno, on the first answer that is not the stub's. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncclscope/nccl_abi.h"
#include "offswitch.h"

#define SENTINEL 7777
#define DIE(...) do { fprintf(stderr, "offswitch_job: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

#define FN_TYPE_(ret, name, params, args) typedef ret (*fn_##name##_t) params;
NCCLSCOPE_PROTOTYPES(FN_TYPE_)
static struct {
#define FN_FIELD_(ret, name, params, args) fn_##name##_t name;
  NCCLSCOPE_PROTOTYPES(FN_FIELD_)
} F;
static long (*calls_seen)(void);
static const char *(*stub_string)(int);
static atomic_long made;

#ifdef OFF_DLOPEN
static void load(void) {
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) DIE("dlopen libnccl.so.2: %s", dlerror());
#define FN_SYM_(ret, name, params, args) \
  if (!(F.name = (fn_##name##_t)dlsym(h, "nccl" #name))) DIE("dlsym nccl%s: %s", #name, dlerror());
  NCCLSCOPE_PROTOTYPES(FN_SYM_)
  calls_seen = (long (*)(void))dlsym(h, "stub_calls");
  stub_string = (const char *(*)(int))dlsym(h, "stub_str");
  if (!calls_seen || !stub_string) DIE("not the stub NCCL");
}
#else
#define FN_DECL_(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(FN_DECL_)
long stub_calls(void);
const char *stub_str(int);
static void load(void) {
#define FN_ADDR_(ret, name, params, args) F.name = nccl##name;
  NCCLSCOPE_PROTOTYPES(FN_ADDR_)
  calls_seen = stub_calls;
  stub_string = stub_str;
}
#endif

static void judge(int i, const char *name, long rc, int err) {
  atomic_fetch_add(&made, 1);
  int want_err = off_sets_errno(i) ? off_errno(i) : SENTINEL;
  if (rc != off_rc(i) || err != want_err)
    DIE("nccl%s returned %ld errno %d, the stub answered %d errno %d", name, rc, err, off_rc(i), want_err);
}
/* CALL(name, args): errno set to SENTINEL, the call, its answer judged (rc as a number) */
#define CALL(name, args) do { errno = SENTINEL; long rc_ = (long)F.name args; judge(OFF_##name, #name, rc_, errno); } while (0)

static void one_call(int first) { /* the first call of a thread: varies by thread */
  int v;
  ncclUniqueId id;
  if (first % 3 == 0) CALL(GetVersion, (&v));
  else if (first % 3 == 1) CALL(GetUniqueId, (&id));
  else CALL(GroupStart, ());
}

static void all_calls(void) {
  static int dummy;
  ncclComm_t comm = (ncclComm_t)&dummy, newc = NULL, comms[2];
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  ncclSimInfo_t sim;
  memset(&sim, 0, sizeof sim);
  ncclResult_t aerr = ncclSuccess;
  ncclRedOp_t op = ncclSum;
  ncclWindow_t win = NULL;
  int v = 0, devs[2] = {0, 1}, excl[1] = {0};
  float buf[8] = {0}, scalar = 1;
  void *mem = NULL, *handle = NULL;
  cudaStream_t st = NULL;
  CALL(GetVersion, (&v));
  CALL(GetUniqueId, (&id));
  CALL(CommInitRank, (&newc, 2, id, 0));
  CALL(CommInitAll, (comms, 2, devs));
  CALL(CommInitRankConfig, (&newc, 2, id, 1, &cfg));
  CALL(CommInitRankScalable, (&newc, 2, 0, 1, &id, &cfg));
  CALL(CommSplit, (comm, 0, 0, &newc, &cfg));
  CALL(CommShrink, (comm, excl, 1, &newc, &cfg, 0));
  CALL(CommFinalize, (comm));
  CALL(CommDestroy, (comm));
  CALL(CommAbort, (comm));
  CALL(CommRevoke, (comm, 0));
  CALL(CommGetAsyncError, (comm, &aerr));
  CALL(CommCount, (comm, &v));
  CALL(CommCuDevice, (comm, &v));
  CALL(CommUserRank, (comm, &v));
  CALL(CommRegister, (comm, buf, sizeof buf, &handle));
  CALL(CommDeregister, (comm, handle));
  CALL(CommWindowRegister, (comm, buf, sizeof buf, &win, 0));
  CALL(CommWindowDeregister, (comm, win));
  CALL(MemAlloc, (&mem, 64));
  CALL(MemFree, (mem));
  CALL(RedOpCreatePreMulSum, (&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  CALL(RedOpDestroy, (op, comm));
  CALL(GroupStart, ());
  CALL(GroupEnd, ());
  CALL(GroupSimulateEnd, (&sim));
  CALL(AllReduce, (buf, buf, 8, ncclFloat32, ncclSum, comm, st));
  CALL(Broadcast, (buf, buf, 8, ncclFloat32, 0, comm, st));
  CALL(Bcast, (buf, 8, ncclFloat32, 0, comm, st));
  CALL(Reduce, (buf, buf, 8, ncclFloat32, ncclSum, 0, comm, st));
  CALL(AllGather, (buf, buf, 4, ncclFloat32, comm, st));
  CALL(ReduceScatter, (buf, buf, 4, ncclFloat32, ncclSum, comm, st));
  CALL(AlltoAll, (buf, buf, 4, ncclFloat32, comm, st));
  CALL(Gather, (buf, buf, 4, ncclFloat32, 0, comm, st));
  CALL(Scatter, (buf, buf, 4, ncclFloat32, 0, comm, st));
  CALL(Send, (buf, 8, ncclFloat32, 1, comm, st));
  CALL(Recv, (buf, 8, ncclFloat32, 1, comm, st));
  /* the string functions: the stub's own string, and its errno */
  errno = SENTINEL;
  const char *s = F.GetErrorString(ncclInvalidUsage);
  judge(OFF_GetErrorString, "GetErrorString", s == stub_string(OFF_GetErrorString) ? off_rc(OFF_GetErrorString) : -1, errno);
  errno = SENTINEL;
  s = F.GetLastError(comm);
  judge(OFF_GetLastError, "GetLastError", s == stub_string(OFF_GetLastError) ? off_rc(OFF_GetLastError) : -1, errno);
  errno = SENTINEL;
  F.ResetDebugInit();
  judge(OFF_ResetDebugInit, "ResetDebugInit", off_rc(OFF_ResetDebugInit), errno);
}

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n - (strcmp(path, "/proc/self/fd") == 0); /* opendir's own descriptor */
}
static void finish(void) {
  printf("threads %d fds %d\n", count_dir("/proc/self/task"), count_dir("/proc/self/fd"));
  if (calls_seen) printf("forwarded %ld of %ld\n", calls_seen(), atomic_load(&made));
}

static pthread_barrier_t gate;
static int reps;
static void *racer(void *arg) {
  pthread_barrier_wait(&gate);
  one_call((int)(intptr_t)arg);
  for (int i = 0; i < reps; i++) all_calls();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) DIE("usage: offswitch_job calls N | race T N | fork N exit|_exit | none");
  const char *mode = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(mode, "none") == 0) {
    printf("ok none\n");
  } else if (strcmp(mode, "calls") == 0) {
    load();
    for (int i = 0; i < n; i++) all_calls();
    printf("ok calls %d\n", n);
  } else if (strcmp(mode, "race") == 0) {
    reps = argc > 3 ? atoi(argv[3]) : 1;
    load();
    pthread_t th[64];
    if (n < 1 || n > 64) DIE("race: 1..64 threads");
    pthread_barrier_init(&gate, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
      if (pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i)) DIE("pthread_create");
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    printf("ok race %d x %d\n", n, reps);
  } else if (strcmp(mode, "fork") == 0) {
    int quick = argc > 3 && strcmp(argv[3], "_exit") == 0;
    load();
    one_call(0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) DIE("fork");
    if (pid == 0) {
      long before = calls_seen(), made_before = atomic_load(&made);
      for (int i = 0; i < n; i++) all_calls();
      printf("child forwarded %ld of %ld\n", calls_seen() - before, atomic_load(&made) - made_before);
      fflush(stdout);
      if (quick) _exit(0);
      exit(0);
    }
    for (int i = 0; i < n; i++) all_calls();
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) DIE("waitpid");
    printf("ok fork %d %s: child %s %d\n", n, quick ? "_exit" : "exit",
           WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  } else {
    DIE("unknown mode %s", mode);
  }
  finish();
  return 0;
}
