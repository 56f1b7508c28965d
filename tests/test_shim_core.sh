#!/usr/bin/env bash
# test_shim_core.sh — the shim's core on a minimal NCCL stand-in built here (weak ncclX, strong
# pncclX, like NCCL >= 2.16): exact records and fields, errno and return values passed
# through, a privately loaded NCCL (RTLD_LOCAL), a process with no NCCL at all, fork, 16
# threads, drops when buffers are full, kill -9, a file size limit (EFBIG/SIGXFSZ), safe file
# creation, call sites on/off and libunwind kept out of the global scope. Records are read
# back with `ncclscope dump`.
. "$(dirname "$0")/lib.sh"
[ -f "$SHIM" ] || { fail "shim_core: $SHIM missing"; exit 1; }
[ -x "$NCS" ] || { fail "shim_core: $NCS missing"; exit 1; }
CC=${CC:-cc}
INC="-I$ROOT/include"

# ---- the NCCL stand-in: enough entry points for these tests ----
cat >"$T/fake.c" <<'C'
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ncclscope/nccl_abi.h"
struct ncclComm { int nranks, rank; };
#define WEAK(name) __attribute__((weak, alias("p" #name)))
ncclResult_t pncclGetVersion(int *v) { *v = 22809; errno = 42; return ncclSuccess; }
ncclResult_t ncclGetVersion(int *v) WEAK(ncclGetVersion);
ncclResult_t pncclGetUniqueId(ncclUniqueId *id) { memset(id, 7, sizeof *id); return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) WEAK(ncclGetUniqueId);
ncclResult_t pncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) {
  if (n < 1 || r < 0 || r >= n) return ncclInvalidArgument;
  *c = calloc(1, sizeof **c); (*c)->nranks = n; (*c)->rank = r; return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) WEAK(ncclCommInitRank);
ncclResult_t pncclCommDestroy(ncclComm_t c) { free(c); return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) WEAK(ncclCommDestroy);
ncclResult_t pncclCommCount(const ncclComm_t c, int *n) { *n = c->nranks; return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t c, int *n) WEAK(ncclCommCount);
ncclResult_t pncclCommUserRank(const ncclComm_t c, int *n) { *n = c->rank; return ncclSuccess; }
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *n) WEAK(ncclCommUserRank);
ncclResult_t pncclCommCuDevice(const ncclComm_t c, int *n) { *n = 3; return ncclSuccess; }
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *n) WEAK(ncclCommCuDevice);
ncclResult_t pncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o,
                            ncclComm_t c, cudaStream_t st) {
  if (!c) return ncclInvalidArgument;
  float *out = r; const float *in = s;
  /* the stream (the 7th argument, passed on the stack) shows in the result: +1 per 0x20 */
  for (size_t i = 0; i < n; i++) out[i] = in[i] * (float)c->nranks + (float)((uintptr_t)st / 0x20);
  errno = 7;
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o,
                           ncclComm_t c, cudaStream_t st) WEAK(ncclAllReduce);
ncclResult_t pncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupStart(void) WEAK(ncclGroupStart);
ncclResult_t pncclGroupEnd(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) WEAK(ncclGroupEnd);
ncclResult_t pncclSend(const void *s, size_t n, ncclDataType_t t, int p, ncclComm_t c, cudaStream_t st) { return ncclSuccess; }
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int p, ncclComm_t c, cudaStream_t st) WEAK(ncclSend);
ncclResult_t pncclRecv(void *s, size_t n, ncclDataType_t t, int p, ncclComm_t c, cudaStream_t st) { return ncclSuccess; }
ncclResult_t ncclRecv(void *s, size_t n, ncclDataType_t t, int p, ncclComm_t c, cudaStream_t st) WEAK(ncclRecv);
const char *pncclGetErrorString(ncclResult_t r) { return r ? "some error" : "no error"; }
const char *ncclGetErrorString(ncclResult_t r) WEAK(ncclGetErrorString);
C

# ---- the job: one program, several modes ----
cat >"$T/job.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ncclscope/nccl_abi.h"
#define P(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(P)
static ncclComm_t comm;
static long iters;
static void init(void) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  int rc = ncclCommInitRank(&comm, 2, id, 1);
  printf("init rc=%d\n", rc);
}
static int locked = 1; /* threads share the communicator as NCCL allows: one at a time */
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static void allreduces(long n) {
  float a[4] = {1, 2, 3, 4}, b[4];
  for (long i = 0; i < n; i++) {
    if (locked) pthread_mutex_lock(&comm_lock);
    ncclAllReduce(a, b, 4 + (size_t)(i % 3), ncclFloat32, ncclSum, comm, (cudaStream_t)0x20);
    if (locked) pthread_mutex_unlock(&comm_lock);
  }
}
static void *worker(void *arg) { allreduces(iters); return NULL; }
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "basic";
  long n = argc > 2 ? atol(argv[2]) : 10;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(mode, "basic")) {
    int v = 0;
    errno = 0;
    int rc = ncclGetVersion(&v);
    printf("version rc=%d v=%d errno=%d\n", rc, v, errno);
    init();
    float a[4] = {1, 2, 3, 4}, b[4] = {0};
    errno = 0;
    rc = ncclAllReduce(a, b, 4, ncclFloat32, ncclSum, comm, (cudaStream_t)0x20);
    printf("allreduce rc=%d errno=%d b=%g %g %g %g\n", rc, errno, b[0], b[1], b[2], b[3]);
    printf("bad allreduce rc=%d\n", ncclAllReduce(a, b, 4, ncclFloat32, ncclSum, NULL, 0));
    allreduces(n - 2);
    ncclGroupStart(); ncclGroupStart();
    ncclSend(a, 4, ncclFloat32, 0, comm, (cudaStream_t)0x20);
    ncclRecv(b, 2, ncclInt64, 0, comm, (cudaStream_t)0x20);
    ncclGroupEnd(); ncclGroupEnd();
    ncclSend(a, 8, ncclFloat16, 1, comm, (cudaStream_t)0x20);
    int cnt = 0;
    ncclCommCount(comm, &cnt);
    printf("count=%d str=%s\n", cnt, ncclGetErrorString(ncclInvalidArgument));
    printf("destroy rc=%d\n", ncclCommDestroy(comm));
    ncclComm_t bad;
    ncclUniqueId id = {{0}};
    printf("bad init rc=%d\n", ncclCommInitRank(&bad, 0, id, 0));
  } else if (!strcmp(mode, "threads") || !strcmp(mode, "threads-racing")) {
    locked = !strcmp(mode, "threads");
    init();
    int nt = 16;
    iters = n;
    pthread_t th[16];
    for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    printf("threads done\n");
  } else if (!strcmp(mode, "fork")) {
    init();
    allreduces(n);
    pid_t p = fork();
    if (p == 0) { allreduces(n / 2); exit(0); }
    pid_t q = fork();
    if (q == 0) { printf("child without NCCL\n"); exit(0); }
    int st;
    waitpid(p, &st, 0);
    waitpid(q, &st, 0);
    allreduces(n);
    printf("parent done child=%d\n", (int)p);
  } else if (!strcmp(mode, "forever")) {
    init();
    printf("running\n");
    for (;;) { allreduces(100); usleep(1000); }
  } else if (!strcmp(mode, "unwind")) {
    init();
    allreduces(n);
    void *ub = dlsym(RTLD_DEFAULT, "_Unwind_Backtrace");
    Dl_info di = {0};
    const char *where = ub && dladdr(ub, &di) ? di.dli_fname : "none";
    printf("_Unwind_Backtrace from: %s\n", where);
    printf("unw_backtrace global: %s\n", dlsym(RTLD_DEFAULT, "unw_backtrace") ? "yes" : "no");
    char line[512];
    int mapped = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) if (strstr(line, "libunwind.so")) mapped = 1;
    if (f) fclose(f);
    printf("libunwind mapped: %s\n", mapped ? "yes" : "no");
  } else if (!strcmp(mode, "private")) {
    /* an extension module linked against NCCL, loaded RTLD_LOCAL (like a Python extension) */
    void *h = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    int (*run)(long) = (int (*)(long))dlsym(h, "ext_run");
    printf("ext_run rc=%d\n", run(n));
  }
  return 0;
}
C
cat >"$T/ext.c" <<'C'
#include "ncclscope/nccl_abi.h"
#define P(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(P)
int ext_run(long n) {
  ncclUniqueId id; ncclComm_t c; float a[2] = {1, 2}, b[2];
  ncclGetUniqueId(&id);
  int rc = ncclCommInitRank(&c, 1, id, 0);
  for (long i = 0; i < n && rc == 0; i++) rc = ncclAllReduce(a, b, 2, ncclFloat32, ncclSum, c, 0);
  ncclCommDestroy(c);
  return rc;
}
C
# a library whose constructor calls NCCL (may run before the shim's own constructor)
cat >"$T/early.c" <<'C'
#include <stdio.h>
#include "ncclscope/nccl_abi.h"
ncclResult_t ncclGetVersion(int *);
int early_version = -1, early_rc = -1;
__attribute__((constructor)) static void early(void) { early_rc = ncclGetVersion(&early_version); }
C
cat >"$T/earlymain.c" <<'C'
#include <stdio.h>
extern int early_version, early_rc;
int main(void) { printf("early rc=%d version=%d\n", early_rc, early_version); return 0; }
C
cat >"$T/nonccl.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
/* a weak reference, as code built against an optional NCCL has: the loader binds it to the
 * preloaded shim's export; dlsym(RTLD_DEFAULT) finds nothing, as without the shim (no NCCL) */
extern int ncclGetVersion(int *) __attribute__((weak));
int main(void) {
  int (*gv)(int *) = ncclGetVersion;
  int v = -1;
  printf("found=%s", gv ? "yes" : "no");
  if (gv) printf(" rc=%d v=%d", gv(&v), v);
  printf(" dlsym=%s\n", dlsym(RTLD_DEFAULT, "ncclGetVersion") ? "yes" : "no");
  return 0;
}
C
mkdir -p "$T/lib" "$T/priv"
if ! { $CC -O1 -shared -fPIC $INC -o "$T/lib/libnccl.so.2" "$T/fake.c" &&
       $CC -O1 -shared -fPIC $INC -o "$T/priv/libnccl.so.2" "$T/fake.c" &&
       $CC -O1 -g $INC -o "$T/job" "$T/job.c" -L"$T/lib" -l:libnccl.so.2 -Wl,-rpath,"$T/lib" -ldl -lpthread &&
       $CC -O1 -shared -fPIC $INC -o "$T/priv/ext.so" "$T/ext.c" -L"$T/priv" -l:libnccl.so.2 -Wl,-rpath,"$T/priv" &&
       $CC -O1 -shared -fPIC $INC -o "$T/lib/libearly.so" "$T/early.c" -L"$T/lib" -l:libnccl.so.2 &&
       $CC -O1 -o "$T/earlymain" "$T/earlymain.c" -L"$T/lib" -learly -Wl,-rpath,"$T/lib" &&
       $CC -O1 -o "$T/nonccl" "$T/nonccl.c" -ldl; } 2>"$T/cc.err"; then
  fail "shim_core: cannot build the test programs"; sed 's/^/    /' "$T/cc.err" | head; exit 1
fi
cd "$T"
unset NCCLSCOPE_CALLSITE_DEPTH NCCLSCOPE_BUFFER_KB NCCLSCOPE_FLUSH_MS
dump() { "$NCS" dump "$@" 2>&1; }
calls() { grep -c "^CALL op=$2 " "$1"; }

# ---- basic: output identical, exact records ----
./job basic 10 >plain.out 2>&1
NCCLSCOPE_DIR="$T/tr1" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job basic 10 >shim.out 2>&1
check "shim_core: job output identical with and without the shim (values, return codes, errno)" cmp plain.out shim.out
check "shim_core: errno set by NCCL reaches the caller (42 and 7)" grep -q "errno=42" shim.out
f=$(ls tr1/*.ncs 2>/dev/null)
check_eq "shim_core: one trace file" "1" "$(echo "$f" | grep -c .)"
check_eq "shim_core: file mode 0600" "600" "$(stat -c %a $f)"
check_eq "shim_core: directory mode 0700" "700" "$(stat -c %a tr1)"
dump $f >d1; d1rc=$?
check_eq "shim_core: trace decodes cleanly" "0" "$d1rc"
check_eq "shim_core: 10 AllReduce calls recorded" "10" "$(calls d1 AllReduce)"
check_eq "shim_core: 2 Send, 1 Recv, 2 GroupStart, 2 GroupEnd" "2 1 2 2" \
  "$(calls d1 Send) $(calls d1 Recv) $(calls d1 GroupStart) $(calls d1 GroupEnd)"
check_eq "shim_core: queries (CommCount, GetErrorString) are not recorded" "0 0" \
  "$(calls d1 CommCount) $(calls d1 GetErrorString)"
check_eq "shim_core: AllReduce seq 1..9 on comm 1; the call on a NULL comm has none" "1 0 2 3 4 5 6 7 8 9" \
  "$(grep '^CALL op=AllReduce' d1 | sed 's/.* comm=\([0-9]*\) seq=\([0-9]*\).*/\1:\2/' | awk -F: '{printf "%s%s", (NR>1?" ":""), ($1==1?$2:0)}')"
check_eq "shim_core: Send/Recv numbered separately (1 2 3)" "1 2 3" \
  "$(grep -E '^CALL op=(Send|Recv)' d1 | sed 's/.* seq=\([0-9]*\).*/\1/' | tr '\n' ' ' | sed 's/ $//')"
check "shim_core: AllReduce fields (count 4, fp32, 16 bytes, sum, stream 0x20)" \
  grep -q '^CALL op=AllReduce thread=1 tcall=4 comm=1 seq=1 count=4 datatype=7 bytes=16 redop=0 root=-1 stream=0x20 ' d1
check "shim_core: a failing call keeps NCCL's return code (4)" grep -q '^CALL op=AllReduce .* comm=0 .* rc=4 ' d1
check "shim_core: Recv inside nested group: depth 2, peer 0, int64 bytes 16" \
  grep -q '^CALL op=Recv .* count=2 datatype=4 bytes=16 redop=255 root=0 .* depth=2 ' d1
gs=$(grep '^CALL op=GroupStart' d1 | head -1 | sed 's/.* tcall=\([0-9]*\) .*/\1/')
check_eq "shim_core: group members carry the outermost GroupStart's tcall" "$gs $gs $gs $gs $gs $gs" \
  "$(grep -E '^CALL op=(GroupStart|GroupEnd) |^CALL op=(Send|Recv) .* depth=[12] ' d1 | sed 's/.* group=\([0-9]*\) .*/\1/' | tr '\n' ' ' | sed 's/ $//')"
check "shim_core: GroupEnd records the depth after it (1 then 0)" \
  bash -c "grep '^CALL op=GroupEnd' d1 | sed 's/.* depth=\([0-9]*\) .*/\1/' | tr '\n' ' ' | grep -qx '1 0 '"
check "shim_core: COMM record: rank 1 of 2, device from CommCuDevice (3), comm_id = FNV-1a 64 of the id" \
  grep -q '^COMM comm=1 comm_id=[0-9a-f]* .* rank=1 nranks=2 device=3 init_op=CommInitRank .* rc=0 ' d1
idhash=$(python3 -c 'h=0xcbf29ce484222325
for b in [7]*128: h=((h^b)*0x100000001b3)&0xffffffffffffffff
print("%016x"%h)' 2>/dev/null)
[ -n "$idhash" ] && check "shim_core: comm_id is FNV-1a 64 of the unique id ($idhash)" grep -q "^COMM comm=1 comm_id=$idhash " d1
check "shim_core: COMM_END for CommDestroy" grep -q '^COMM_END comm=1 op=CommDestroy rc=0 ' d1
check "shim_core: the failed init is recorded (rc=4, no handle)" grep -q '^COMM comm=2 .*handle=0x0 .*rc=4 ' d1
check "shim_core: PROCESS has host, pid, cmdline, versions, no arbitrary environment" \
  bash -c "grep -q '^  shim_version=' d1 && grep -q '^  nccl_version=22809' d1 && grep -q '^  cmdline=./job' d1 && ! grep -q '^  env.PATH=' d1 && ! grep -q '^  env.HOME=' d1"
check "shim_core: NCCL_* and rank variables recorded" \
  bash -c "NCCL_FOO=bar RANK=5 SECRET_TOKEN=x NCCLSCOPE_DIR='$T/tr1b' LD_PRELOAD='$SHIM$SAN_PRELOAD' ./job basic 3 >/dev/null &&
           '$NCS' dump '$T'/tr1b/*.ncs | grep -q '^  env.NCCL_FOO=bar' && '$NCS' dump '$T'/tr1b/*.ncs | grep -q '^  env.RANK=5' &&
           ! '$NCS' dump '$T'/tr1b/*.ncs | grep -q SECRET_TOKEN"
check "shim_core: final chunk has the FINAL flag" grep -q '^-- chunk .* final$' d1
check "shim_core: no CUDA in the process: PROCESS says timing=host, no GPU_TIME" \
  bash -c "grep -q '^  timing=host\$' d1 && ! grep -q '^GPU_TIME' d1"
check "shim_core: THREAD record before the first CALL" \
  bash -c "awk '/^THREAD thread=1 /{t=NR} /^CALL /{if(!c)c=NR} END{exit !(t && t<c)}' d1"

# ---- the off switch: NCCLSCOPE_DISABLE=1 forwards every call (the wrappers' forward-only
# path), arguments, results and errno untouched, and writes nothing, in every way of reaching
# NCCL: linked, a privately loaded NCCL, a library's constructor, threads, fork, no NCCL ----
off() { NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/off-$1" LD_PRELOAD="$SHIM$SAN_PRELOAD" "${@:2}"; }
off basic ./job basic 10 >off.out 2>&1
check "shim_core: DISABLE=1: job output identical to plain (values, the stream argument, return codes, errno)" \
  cmp plain.out off.out
off threads ./job threads 2000 >offthr.out 2>&1
check_eq "shim_core: DISABLE=1: 16 threads run through" "init rc=0 threads done" "$(tr '\n' ' ' <offthr.out | sed 's/ $//')"
off private ./job private 25 "$T/priv/ext.so" >offpriv.out 2>&1
check_eq "shim_core: DISABLE=1: a privately loaded NCCL (RTLD_LOCAL) is found and called" "ext_run rc=0" "$(cat offpriv.out)"
off early ./earlymain >offearly.out 2>&1
check_eq "shim_core: DISABLE=1: NCCL called from another library's constructor is forwarded" "early rc=0 version=22809" "$(cat offearly.out)"
off none ./nonccl >offnon.out 2>&1
check_eq "shim_core: DISABLE=1: no NCCL anywhere: ncclSystemError, no crash; dlsym(RTLD_DEFAULT) finds nothing" "found=yes rc=2 v=-1 dlsym=no" "$(cat offnon.out)"
if ! tsan_fork_skip "shim_core: DISABLE=1 fork"; then
  ./job fork 100 2>&1 | sed 's/child=[0-9]*/child=N/' >plainfork.out
  off fork ./job fork 100 2>&1 | sed 's/child=[0-9]*/child=N/' >offfork.out
  check "shim_core: DISABLE=1: fork (a child using NCCL, one not): output identical to plain" cmp plainfork.out offfork.out
fi
check_eq "shim_core: DISABLE=1: no trace directory written by any of these runs" "" "$(ls -d off-* 2>/dev/null)"

# ---- call sites ----
check "shim_core: call sites on by default (8 frames max), defined before use" \
  bash -c "awk '/^CALLSITE id=/{split(\$2,a,\"=\"); def[a[2]]=1} /^CALL /{for(i=1;i<=NF;i++) if(\$i ~ /^callsite=/){split(\$i,b,\"=\"); if(b[2]==0 || !def[b[2]]) bad=1}} END{exit bad}' d1"
check "shim_core: frames point into the job, with modules" \
  bash -c "grep -A1 '^CALLSITE' d1 | grep -q '#0 module=' && grep -q '^MODULE module=1 .*path=.*job' d1"
NCCLSCOPE_CALLSITE_DEPTH=0 NCCLSCOPE_DIR="$T/tr2" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job basic 10 >/dev/null 2>&1
dump tr2/*.ncs >d2
check_eq "shim_core: NCCLSCOPE_CALLSITE_DEPTH=0: no CALLSITE, every callsite=0" "0 0" \
  "$(grep -c '^CALLSITE' d2) $(grep '^CALL ' d2 | grep -vc ' callsite=0 ')"
LD_PRELOAD="$SHIM$SAN_PRELOAD" NCCLSCOPE_DIR="$T/tr3" ./job unwind 5 >unw.out 2>&1
check "shim_core: libunwind is loaded (call sites use it)" grep -q 'libunwind mapped: yes' unw.out
check "shim_core: unw_backtrace not in the global scope" grep -q 'unw_backtrace global: no' unw.out
check "shim_core: _Unwind_Backtrace (if any) is not libunwind's" \
  bash -c "grep '_Unwind_Backtrace from:' unw.out | grep -v -q libunwind"

# ---- resolution ----
NCCLSCOPE_DIR="$T/tr4" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job private 25 "$T/priv/ext.so" >priv.out 2>&1
check "shim_core: NCCL loaded privately (RTLD_LOCAL) is found: call succeeds" grep -q 'ext_run rc=0' priv.out
check_eq "shim_core: ... and its 25 AllReduce calls are recorded" "25" "$(dump tr4/*.ncs | grep -c '^CALL op=AllReduce ')"
NCCLSCOPE_DIR="$T/tr12" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./earlymain >early.out 2>&1
check_eq "shim_core: NCCL called from another library's constructor: forwarded" "early rc=0 version=22809" "$(cat early.out)"
check "shim_core: ... and recorded as the process's first call" \
  bash -c "'$NCS' dump tr12/*.ncs | grep -q '^CALL op=GetVersion thread=1 tcall=1 .* rc=0 '"
NCCLSCOPE_DIR="$T/tr5" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./nonccl >non.out 2>&1
check_eq "shim_core: no NCCL anywhere: ncclGetVersion (weak reference) returns ncclSystemError, no crash; dlsym(RTLD_DEFAULT) finds nothing, as without the shim" "found=yes rc=2 v=-1 dlsym=no" "$(cat non.out)"
check_eq "shim_core: ... and records nothing (no file)" "" "$(ls -A tr5 2>/dev/null)"

# ---- threads ----
# make tsan: call sites off in the multi-threaded jobs (gcc 12's TSan runtime crashes in
# libunwind's thread-exit destructor, without the shim too: docs/RELIABILITY.md); the
# one-thread jobs above keep them on.
MT=(); [ "$NCS_SANITIZER" = tsan ] && { MT=(NCCLSCOPE_CALLSITE_DEPTH=0); echo "# tsan: call sites off in the threaded jobs"; }
env "${MT[@]}" NCCLSCOPE_DIR="$T/tr6" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job threads 5000 >thr.out 2>&1
dump tr6/*.ncs >d6
rec=$(calls d6 AllReduce); dropped=$(sed -n 's/^== end: .* dropped \([0-9]*\).*/\1/p' d6)
check_eq "shim_core: 16 threads x 5000 AllReduce: recorded + dropped = 80000" "80000" "$((rec + dropped))"
check_eq "shim_core: 17 THREAD records (main + 16)" "17" "$(grep -c '^THREAD ' d6)"
check "shim_core: each thread's tcall runs 1..5000 with no gap beyond drops" \
  bash -c "awk '/^CALL op=AllReduce/{for(i=1;i<=NF;i++){if(\$i~/^thread=/)t=substr(\$i,8); if(\$i~/^tcall=/)c=substr(\$i,7)+0} n[t]++; if(c>m[t])m[t]=c} END{for(t in n) if(t>1 && (m[t]!=5000 || n[t]>5000)) exit 1}' d6"
check_eq "shim_core: seq on the shared communicator (its calls serialized by the job, as NCCL requires) is a permutation of 1..80000 (no dup)" "80000 80000" \
  "$(grep '^CALL op=AllReduce' d6 | fieldval seq | sort -un | wc -l) $(grep '^CALL op=AllReduce' d6 | fieldval seq | sort -n | tail -1)"
# 16 threads calling on the one communicator at once, which NCCL forbids (its thread-safety
# rules: one communicator, one thread at a time): every call still recorded or counted, each
# thread's own numbering intact; seq may repeat there (a relaxed counter, docs/SHIM.md), so
# only its range is checked
env "${MT[@]}" NCCLSCOPE_DIR="$T/tr6r" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job threads-racing 5000 >thrr.out 2>&1
dump tr6r/*.ncs >d6r
rec=$(calls d6r AllReduce); dropped=$(sed -n 's/^== end: .* dropped \([0-9]*\).*/\1/p' d6r)
check_eq "shim_core: 16 threads racing on one communicator: the job ran, recorded + dropped = 80000" "1 80000" "$(grep -c '^threads done' thrr.out) $((rec + dropped))"
check_eq "shim_core: ... every seq within 1..80000" "0" \
  "$(grep '^CALL op=AllReduce' d6r | fieldval seq | awk '$1 < 1 || $1 > 80000' | wc -l)"
env "${MT[@]}" NCCLSCOPE_BUFFER_KB=16 NCCLSCOPE_DIR="$T/tr7" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job threads 20000 >/dev/null 2>&1
dump tr7/*.ncs >d7
rec=$(calls d7 AllReduce); dropped=$(sed -n 's/^== end: .* dropped \([0-9]*\).*/\1/p' d7)
dsum=$(awk '/^DROP /{for(i=1;i<=NF;i++) if($i~/^records=/) s+=substr($i,9)} END{print s+0}' d7)
check_eq "shim_core: tiny buffers (16 KiB): recorded + dropped = 320000" "320000" "$((rec + dropped))"
check_eq "shim_core: DROP records add up to the chunk header's total ($dropped)" "$dropped" "$dsum"

# ---- fork ----
if ! tsan_fork_skip "shim_core: fork" && ! asan_fork_skip "shim_core: fork"; then
NCCLSCOPE_DIR="$T/tr8" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job fork 100 >fork.out 2>&1
child=$(sed -n 's/.*child=\([0-9]*\).*/\1/p' fork.out)
check_eq "shim_core: fork: two files (parent, NCCL-using child); the child without NCCL writes none" "2" "$(ls tr8/*.ncs | wc -l)"
cf=$(ls tr8/*-"$child".ncs 2>/dev/null)
pf=$(ls tr8/*.ncs | grep -v -- "-$child.ncs")
check_eq "shim_core: fork: parent recorded 200 AllReduce, child 50" "200 50" \
  "$(dump $pf | grep -c '^CALL op=AllReduce') $(dump $cf | grep -c '^CALL op=AllReduce')"
check "shim_core: fork: child's file decodes cleanly and names its parent" \
  bash -c "'$NCS' dump '$cf' >/dev/null && '$NCS' dump '$cf' | grep -q '^  ppid=$(sed -n 's/^  pid=//p' <("$NCS" dump "$pf"))\$'"
check "shim_core: fork: child numbers its own calls from tcall 1" \
  bash -c "'$NCS' dump '$cf' | grep -m1 '^CALL op=AllReduce' | grep -q ' tcall=1 '"
fi

# ---- kill -9 ----
NCCLSCOPE_FLUSH_MS=100 NCCLSCOPE_DIR="$T/tr9" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job forever >/dev/null 2>&1 &
pid=$!
# kill once the file holds 5 chunks and 1000 calls (polled, so a slow machine only waits longer)
for _ in $(seq 1 600); do
  dump tr9/*.ncs >d9 2>/dev/null
  [ "$(grep -c '^-- chunk' d9)" -ge 5 ] && [ "$(grep -c '^CALL op=AllReduce' d9)" -ge 1000 ] && break
  sleep 0.1
done
kill -9 $pid; wait $pid 2>/dev/null
dump tr9/*.ncs >d9; rc9=$?
check_eq "shim_core: kill -9: a cut trace is normal input (exit 0), not damage" "0 0" \
  "$rc9 $(grep -c DAMAGED d9)"
check "shim_core: kill -9: the chunks written before the kill decode (>= 5 chunks, calls present)" \
  bash -c "[ \$(grep -c '^-- chunk' d9) -ge 5 ] && [ \$(grep -c '^CALL op=AllReduce' d9) -ge 1000 ]"

# ---- a file size limit: EFBIG, SIGXFSZ must not kill the job ----
(ulimit -f 4; env "${MT[@]}" NCCLSCOPE_FLUSH_MS=50 NCCLSCOPE_DIR="$T/tr10" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./job threads 3000 >big.out 2>&1; echo "rc=$?" >>big.out)
check "shim_core: write errors (4 KiB file limit) never reach the job" grep -q '^threads done' big.out
check "shim_core: ... which exits normally" grep -q '^rc=0$' big.out
check "shim_core: ... and the file holds whole chunks only (no damage)" \
  bash -c "'$NCS' dump tr10/*.ncs 2>&1 | grep -q -v DAMAGED && [ \$(stat -c %s tr10/*.ncs) -le 4096 ]"

# ---- file creation ----
mkdir -p tr11
host=$(hostname)
( touch tr11/dummy; exec env NCCLSCOPE_DIR="$T/tr11" LD_PRELOAD="$SHIM$SAN_PRELOAD" bash -c 'touch "$NCCLSCOPE_DIR/'"$host"'-$$.ncs"; ln -s "'"$T"'/target" "$NCCLSCOPE_DIR/'"$host"'-$$-1.ncs"; exec ./job basic 3' >/dev/null 2>&1 )
check "shim_core: existing name and a symlink are never written through: -2 suffix used" \
  bash -c "ls tr11 | grep -q -- '-2.ncs\$' && [ ! -e '$T/target' ] && [ ! -s \$(ls tr11/*.ncs | grep -v -- '-[12].ncs\$' | head -1) ]"
