/* api_check — checks the NCCL double's API semantics in one process; prints PASS:/FAIL: lines.
 *
 * Usage: api_check   (no launcher needed: multi-rank cases use ncclCommInitAll or threads)
 * Covers: version (and NCCLDOUBLE_VERSION), error strings and invalid-argument codes (against
 * the real NCCL 2.28.9 when /usr/local/cuda/lib/libnccl.so.2 loads), ncclCommInitAll with a
 * grouped all-reduce over its communicators, non-blocking init (ncclInProgress, then
 * ncclSuccess), CommFinalize, CommAbort with an operation stuck in flight, CommRevoke,
 * CommShrink (default and NCCL_SHRINK_ABORT), registration, windows, MemAlloc/MemFree,
 * GroupSimulateEnd (nothing runs), CommCuDevice/UserRank/Count. */
#include <dlfcn.h>
#include <pthread.h>

#include "job_util.h"

static int g_fail;
#define CHECK(cond, name) do { int ok_ = !!(cond); if (!ok_) g_fail = 1; \
  printf("%s: nccl double: %s\n", ok_ ? "PASS" : "FAIL", name); fflush(stdout); } while (0)

static void compare_with_real(void) {
  const char *path = getenv("NCCLDOUBLE_REAL_NCCL");
  if (!path) path = "/usr/local/cuda/lib/libnccl.so.2";
  /* DEEPBIND keeps the real library off this process's (double's) symbols; the sanitizers'
   * runtimes refuse it, and there the plain local load is used */
  int deep = dlsym(RTLD_DEFAULT, "__asan_init") || dlsym(RTLD_DEFAULT, "__tsan_init") ? 0 : RTLD_DEEPBIND;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | deep);
  if (!h) { printf("SKIP: nccl double: compare with real NCCL: %s does not load\n", path); return; }
  const char *(*estr)(ncclResult_t) = (const char *(*)(ncclResult_t))dlsym(h, "ncclGetErrorString");
  ncclResult_t (*ver)(int *) = (ncclResult_t (*)(int *))dlsym(h, "ncclGetVersion");
  ncclResult_t (*ar)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) =
    (ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))dlsym(h, "ncclAllReduce");
  ncclResult_t (*ge)(void) = (ncclResult_t (*)(void))dlsym(h, "ncclGroupEnd");
  if (!estr || !ver || !ar || !ge) { printf("SKIP: nccl double: compare with real NCCL: symbols missing\n"); return; }
  int same = 1;
  for (int r = 0; r <= ncclNumResults; r++) same &= strcmp(estr((ncclResult_t)r), ncclGetErrorString((ncclResult_t)r)) == 0;
  CHECK(same, "ncclGetErrorString matches NCCL 2.28.9 for every result code");
  int rv = 0, dv = 0;
  ver(&rv);
  ncclGetVersion(&dv);
  if (!getenv("NCCLDOUBLE_VERSION")) CHECK(rv == dv, "ncclGetVersion matches NCCL 2.28.9");
  float x = 0;
  CHECK(ar(&x, &x, 1, ncclFloat32, ncclSum, NULL, NULL) == ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, NULL, NULL),
        "ncclAllReduce on a NULL communicator: same code as NCCL");
  CHECK(ge() == ncclGroupEnd(), "ncclGroupEnd without ncclGroupStart: same code as NCCL");
}

struct init_arg { ncclComm_t *comm; int n, rank, dev; ncclUniqueId id; ncclResult_t r; ncclConfig_t *cfg; };
static void *init_thread(void *p) {
  struct init_arg *a = p;
  cudaSetDevice(a->dev);
  a->r = ncclCommInitRankConfig(a->comm, a->n, a->id, a->rank, a->cfg);
  return NULL;
}

struct shrink_arg { ncclComm_t parent, *out; int *excl, nexcl, flags; ncclResult_t r; };
static void *shrink_thread(void *p) {
  struct shrink_arg *a = p;
  a->r = ncclCommShrink(a->parent, a->excl, a->nexcl, a->out, NULL, a->flags);
  return NULL;
}

static void check_shrink(int flags, const char *name) {
  ncclComm_t c[3], nc[3] = {0};
  NCCHK(ncclCommInitAll(c, 3, NULL));
  int excl[1] = {1};
  pthread_t th[3];
  struct shrink_arg sa[3];
  for (int i = 0; i < 3; i += 2) {
    sa[i] = (struct shrink_arg){c[i], &nc[i], excl, 1, flags, ncclInternalError};
    pthread_create(&th[i], NULL, shrink_thread, &sa[i]);
  }
  for (int i = 0; i < 3; i += 2) pthread_join(th[i], NULL);
  int n0 = 0, n2 = 0, r0 = -1, r2 = -1;
  int ok = sa[0].r == ncclSuccess && sa[2].r == ncclSuccess;
  if (ok) {
    ncclCommCount(nc[0], &n0);
    ncclCommCount(nc[2], &n2);
    ncclCommUserRank(nc[0], &r0);
    ncclCommUserRank(nc[2], &r2);
  }
  CHECK(ok && n0 == 2 && n2 == 2 && r0 == 0 && r2 == 1, name);
  if (ok) {
    /* the shrunk communicator works: a grouped all-reduce over its two ranks */
    cudaStream_t s[2];
    int *v[2];
    for (int i = 0; i < 2; i++) {
      CUCHK(cudaStreamCreate(&s[i]));
      CUCHK(cudaMalloc((void **)&v[i], 4));
      *v[i] = 10 + i;
    }
    NCCHK(ncclGroupStart());
    NCCHK(ncclAllReduce(v[0], v[0], 1, ncclInt32, ncclSum, nc[0], s[0]));
    NCCHK(ncclAllReduce(v[1], v[1], 1, ncclInt32, ncclSum, nc[2], s[1]));
    NCCHK(ncclGroupEnd());
    CUCHK(cudaStreamSynchronize(s[0]));
    CUCHK(cudaStreamSynchronize(s[1]));
    CHECK(*v[0] == 21 && *v[1] == 21, "all-reduce on the shrunk communicator");
    for (int i = 0; i < 2; i++) { cudaStreamDestroy(s[i]); cudaFree(v[i]); }
    ncclCommDestroy(nc[0]);
    ncclCommDestroy(nc[2]);
  }
  int bad = 1;
  ncclComm_t none;
  CHECK(ncclCommShrink(c[1], bad ? excl : NULL, 1, &none, NULL, flags) == ncclInvalidArgument,
        "an excluded rank calling ncclCommShrink: ncclInvalidArgument");
  for (int i = 0; i < 3; i++) NCCHK(flags ? ncclCommAbort(c[i]) : ncclCommDestroy(c[i]));
}

int main(void) {
  int v = 0;
  NCCHK(ncclGetVersion(&v));
  const char *ev = getenv("NCCLDOUBLE_VERSION");
  CHECK(v == (ev ? atoi(ev) : 22809), "ncclGetVersion: 22809, or NCCLDOUBLE_VERSION");
  CHECK(ncclGetVersion(NULL) == ncclInvalidArgument, "ncclGetVersion(NULL): ncclInvalidArgument");
  CHECK(strcmp(ncclGetErrorString(ncclInvalidArgument), "invalid argument (run with NCCL_DEBUG=WARN for details)") == 0,
        "error string of ncclInvalidArgument");
  compare_with_real();

  /* invalid arguments on a real communicator */
  ncclComm_t c1;
  ncclUniqueId id;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&c1, 1, id, 0));
  float buf[4] = {1, 2, 3, 4};
  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  CHECK(ncclAllReduce(buf, buf, 4, (ncclDataType_t)ncclNumTypes, ncclSum, c1, s) == ncclInvalidArgument, "bad datatype: ncclInvalidArgument");
  CHECK(ncclAllReduce(buf, buf, 4, ncclFloat32, (ncclRedOp_t)(ncclNumOps + 3), c1, s) == ncclInvalidArgument, "bad reduction op: ncclInvalidArgument");
  CHECK(ncclBroadcast(buf, buf, 4, ncclFloat32, 1, c1, s) == ncclInvalidArgument, "root out of range: ncclInvalidArgument");
  CHECK(ncclSend(buf, 4, ncclFloat32, -1, c1, s) == ncclInvalidArgument, "peer out of range: ncclInvalidArgument");
  CHECK(ncclAllReduce(NULL, buf, 4, ncclFloat32, ncclSum, c1, s) == ncclInvalidArgument, "NULL buffer: ncclInvalidArgument");
  CHECK(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, NULL, s) == ncclInvalidArgument, "NULL communicator: ncclInvalidArgument");
  ncclComm_t bad;
  CHECK(ncclCommInitRank(&bad, 2, id, 2) == ncclInvalidArgument, "rank >= nranks: ncclInvalidArgument");
  CHECK(ncclCommInitRank(&bad, 0, id, 0) == ncclInvalidArgument, "nranks 0: ncclInvalidArgument");
  ncclUniqueId junk;
  memset(&junk, 0x5a, sizeof junk);
  CHECK(ncclCommInitRank(&bad, 1, junk, 0) == ncclInvalidArgument, "unique id not from ncclGetUniqueId: ncclInvalidArgument");
  CHECK(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart: ncclInvalidUsage");
  int cnt = -1, dev = -1, rk = -1;
  NCCHK(ncclCommCount(c1, &cnt));
  NCCHK(ncclCommCuDevice(c1, &dev));
  NCCHK(ncclCommUserRank(c1, &rk));
  int cur = -1;
  CUCHK(cudaGetDevice(&cur));
  CHECK(cnt == 1 && rk == 0 && dev == cur, "ncclCommCount/UserRank/CuDevice");
  CHECK(ncclCommCount(NULL, &cnt) == ncclInvalidArgument, "ncclCommCount(NULL): ncclInvalidArgument");

  /* registration, windows, memory */
  void *handle = NULL, *mem = NULL;
  ncclWindow_t win = NULL;
  CHECK(ncclCommRegister(c1, buf, sizeof buf, &handle) == ncclSuccess && handle && ncclCommDeregister(c1, handle) == ncclSuccess,
        "ncclCommRegister/Deregister");
  CHECK(ncclCommWindowRegister(c1, buf, sizeof buf, &win, 0) == ncclSuccess && win && ncclCommWindowDeregister(c1, win) == ncclSuccess,
        "ncclCommWindowRegister/Deregister");
  CHECK(ncclMemAlloc(&mem, 1 << 20) == ncclSuccess && mem && ncclMemFree(mem) == ncclSuccess, "ncclMemAlloc/MemFree");
  CHECK(ncclMemAlloc(&mem, 0) == ncclInvalidArgument, "ncclMemAlloc of 0 bytes: ncclInvalidArgument");

  /* GroupSimulateEnd: estimates, launches nothing */
  float out[4] = {0};
  ncclSimInfo_t si = {sizeof si, 0x74685283u, 22809, -1.0f};
  NCCHK(ncclGroupStart());
  NCCHK(ncclAllReduce(buf, out, 4, ncclFloat32, ncclSum, c1, s));
  NCCHK(ncclGroupSimulateEnd(&si));
  CUCHK(cudaStreamSynchronize(s));
  CHECK(out[0] == 0 && si.estimatedTime >= 0, "ncclGroupSimulateEnd launches nothing and estimates a time");
  /* an invalid call inside a group fails the group: ncclGroupEnd returns it, nothing runs */
  out[0] = 0;
  NCCHK(ncclGroupStart());
  NCCHK(ncclAllReduce(buf, out, 4, ncclFloat32, ncclSum, c1, s));
  ncclResult_t inner = ncclBroadcast(buf, out, 4, ncclFloat32, 5, c1, s);
  ncclResult_t end = ncclGroupEnd();
  CUCHK(cudaStreamSynchronize(s));
  CHECK(inner == ncclInvalidArgument && end == ncclInvalidArgument && out[0] == 0,
        "an invalid call in a group: ncclGroupEnd returns its error and launches nothing");
  NCCHK(ncclCommFinalize(c1));
  NCCHK(ncclCommDestroy(c1));

  /* CommInitAll: 4 ranks in this process, a grouped all-reduce from one thread */
  ncclComm_t all[4];
  int devs[4] = {3, 2, 1, 0};
  NCCHK(ncclCommInitAll(all, 4, devs));
  cudaStream_t st[4];
  int *x[4];
  for (int i = 0; i < 4; i++) {
    CUCHK(cudaSetDevice(devs[i]));
    CUCHK(cudaStreamCreate(&st[i]));
    CUCHK(cudaMalloc((void **)&x[i], 1000 * sizeof(int)));
    for (int j = 0; j < 1000; j++) x[i][j] = i + j;
  }
  NCCHK(ncclGroupStart());
  for (int i = 0; i < 4; i++) NCCHK(ncclAllReduce(x[i], x[i], 1000, ncclInt32, ncclSum, all[i], st[i]));
  NCCHK(ncclGroupEnd());
  int ok = 1;
  for (int i = 0; i < 4; i++) {
    CUCHK(cudaStreamSynchronize(st[i]));
    for (int j = 0; j < 1000; j++) ok &= x[i][j] == 6 + 4 * j;
    int d = -1;
    ncclCommCuDevice(all[i], &d);
    ok &= d == devs[i];
  }
  CHECK(ok, "ncclCommInitAll: grouped all-reduce over 4 in-process ranks, devices from devlist");

  /* CommAbort with an operation stuck in flight (rank 1 never joins the all-reduce) */
  NCCHK(ncclAllReduce(x[0], x[0], 1000, ncclInt32, ncclSum, all[0], st[0]));
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  CHECK(cudaStreamQuery(st[0]) == cudaErrorNotReady, "an all-reduce without its peers stays in flight");
  NCCHK(ncclCommAbort(all[0]));
  CUCHK(cudaStreamSynchronize(st[0]));
  CHECK(cudaStreamQuery(st[0]) == cudaSuccess, "ncclCommAbort returns and frees the stream with an operation in flight");
  ncclResult_t ae = ncclSuccess;
  NCCHK(ncclCommGetAsyncError(all[1], &ae));
  CHECK(ae == ncclSuccess, "peers of an aborted rank keep a valid communicator handle");
  for (int i = 1; i < 4; i++) NCCHK(ncclCommAbort(all[i]));

  /* CommRevoke: stops in-flight work; quiescent afterwards; finalize then invalid */
  NCCHK(ncclCommInitAll(all, 2, NULL));
  NCCHK(ncclAllReduce(x[0], x[0], 10, ncclInt32, ncclSum, all[0], st[0]));
  NCCHK(ncclCommRevoke(all[0], 0));
  CUCHK(cudaStreamSynchronize(st[0]));
  NCCHK(ncclCommGetAsyncError(all[0], &ae));
  CHECK(ae == ncclSuccess, "ncclCommRevoke: the communicator is quiescent afterwards");
  CHECK(ncclCommFinalize(all[0]) == ncclInvalidUsage, "ncclCommFinalize after revoke: ncclInvalidUsage");
  CHECK(ncclCommRevoke(all[1], 1) == ncclInvalidArgument, "ncclCommRevoke with flags != 0: ncclInvalidArgument");
  NCCHK(ncclCommDestroy(all[0]));
  NCCHK(ncclCommAbort(all[1]));

  /* non-blocking init: in progress until the second rank joins */
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.magic = 0xcafebeefu;
  cfg.version = 22809;
  cfg.blocking = 0;
  ncclComm_t nb[2] = {0};
  NCCHK(ncclGetUniqueId(&id));
  ncclResult_t r = ncclCommInitRankConfig(&nb[0], 2, id, 0, &cfg);
  ncclResult_t a1 = ncclSuccess;
  if (nb[0]) ncclCommGetAsyncError(nb[0], &a1);
  CHECK(r == ncclInProgress && nb[0] && a1 == ncclInProgress, "non-blocking init returns ncclInProgress, async error ncclInProgress");
  CHECK(ncclAllReduce(x[0], x[0], 1, ncclInt32, ncclSum, nb[0], st[0]) == ncclInvalidArgument,
        "using a communicator still initialising: ncclInvalidArgument");
  pthread_t th;
  struct init_arg ia = {&nb[1], 2, 1, 1, id, ncclInternalError, NULL};
  pthread_create(&th, NULL, init_thread, &ia);
  pthread_join(th, NULL);
  for (int i = 0; i < 120000 && a1 == ncclInProgress; i++) { /* breaks as soon as it is done */
    ncclCommGetAsyncError(nb[0], &a1);
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  CHECK(ia.r == ncclSuccess && a1 == ncclSuccess, "non-blocking init completes: async error ncclSuccess");
  NCCHK(ncclCommDestroy(nb[0]));
  NCCHK(ncclCommDestroy(nb[1]));

  check_shrink(0, "ncclCommShrink excluding rank 1 of 3: 2 ranks, renumbered");
  check_shrink(1, "ncclCommShrink with NCCL_SHRINK_ABORT");
  for (int i = 0; i < 4; i++) { cudaStreamDestroy(st[i]); cudaFree(x[i]); }
  return g_fail;
}
