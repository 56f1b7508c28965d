# lib.sh — helpers for shell tests, sourced by tests/test_*.sh.
# Each check prints "PASS: name" or "FAIL: name"; tests/run.sh counts those lines.
# Variables: BUILD (build dir, absolute), ROOT (repo root), T (a fresh scratch dir).
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so
NCS=$BUILD/ncclscope
DOUBLES=$BUILD/doubles
T=$(mktemp -d "${TMPDIR:-/tmp}/ncs-test.XXXXXX")
T_SINCE=$((EPOCHSECONDS - 1))
. "$ROOT/tests/shm_leftovers.sh"
# ncs_cleanup: run at exit (a test's own EXIT trap calls it last): gives back the /dev/shm
# rings files of the test's dead processes whose traces are under $T and the NCCL double's
# segments its jobs (run with its TMPDIR) left, then deletes $T.
ncs_cleanup() { shm_give_back "$T" "$T_SINCE" "${TMPDIR:-}"; rm -rf "$T"; }
trap ncs_cleanup EXIT
# The shim's exit waits (final flush, CommDestroy) are bounded by NCCLSCOPE_EXIT_MS (3 s by
# default). A check that a trace is complete must not depend on the writer getting a core within
# 3 s on a loaded machine, so tests run with 60 s unless they set it: a healthy run takes what
# it needs, never the bound; a test of the bound itself sets its own value.
export NCCLSCOPE_EXIT_MS=${NCCLSCOPE_EXIT_MS:-60000}
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
skip() { echo "SKIP: $*"; }
# check NAME CMD... : PASS when CMD exits 0
check() { local n=$1; shift; if "$@" >"$T/.check.out" 2>&1; then pass "$n"; else fail "$n"; sed 's/^/    /' "$T/.check.out" | head -20; fi; }
# fieldval KEY: from each line on stdin, the value of its first " KEY=VALUE" field (awk; sed's
# 's/.* KEY=\([0-9]*\) .*/\1/' backtracks for the group: 16 us a line, 16 CPU-s a million lines)
fieldval() { awk -v k="$1=" '{for (i = 1; i <= NF; i++) if (index($i, k) == 1) {print substr($i, length(k) + 1); break}}'; }
# check_eq NAME EXPECTED ACTUAL
check_eq() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2] got [$3]"; fi; }
# Sanitizer builds (make asan / make tsan, docs/RELIABILITY.md). NCS_SANITIZER is asan or tsan
# (set by those targets, else read from the shim's DT_NEEDED), empty in a normal build.
# SAN_PRELOAD (TSan only) is a space and the runtime the shim needs: put it right after the shim
# (LD_PRELOAD="$SHIM$SAN_PRELOAD"). Loaded only as the shim's dependency (after libc), libc's
# pthread_create/malloc come before the runtime's interceptors (a program not built with TSan:
# the shim's threads crash; ls: libselinux's constructor calls the shim's instrumented fopen
# before the runtime started). Put before the shim, its own fopen comes before the shim's:
# NCCL's log stream (logcap.c's marker) is never seen, and no NCCL_LOG is recorded. Empty in a
# normal build.
SAN_PRELOAD=
if [ -z "${NCS_SANITIZER:-}" ]; then
  case $(readelf -d "$SHIM" 2>/dev/null | grep NEEDED) in
    *libasan*) NCS_SANITIZER=asan ;; *libtsan*) NCS_SANITIZER=tsan ;; *) NCS_SANITIZER= ;;
  esac
fi
# ASan does without (verify_asan_link_order=0): with libasan first, LeakSanitizer judges the
# tests' own small programs, and a forking job hung in ASan's fork handling.
if [ "$NCS_SANITIZER" = tsan ] && [ -f "$SHIM" ]; then
  SAN_PRELOAD=$(ldd "$SHIM" 2>/dev/null | awk -v l="lib$NCS_SANITIZER.so" 'index($1, l) == 1 {print $3; exit}')
  [ -n "$SAN_PRELOAD" ] && SAN_PRELOAD=" $SAN_PRELOAD"
fi
# SAN_CFLAGS: the sanitizer flags of this build, for a program a test compiles against
# libncsdecoder.a (instrumented: it needs the runtime). Empty in a normal build.
case $NCS_SANITIZER in
  asan) SAN_CFLAGS="-fsanitize=address,undefined" ;; tsan) SAN_CFLAGS="-fsanitize=thread" ;; *) SAN_CFLAGS= ;;
esac
# SAN_RT (TSan only): "LD_PRELOAD=<the runtime>", for a run without the shim of a program built
# without TSan that loads an instrumented double (python3 ctypes): the runtime dlopen'ed late
# fails ("cannot allocate memory in static TLS block"). Empty otherwise: `env $SAN_RT python3 ...`.
SAN_RT=
[ -n "$SAN_PRELOAD" ] && SAN_RT="LD_PRELOAD=${SAN_PRELOAD# }"
# SAN_LIBPATH: the LD_LIBRARY_PATH for a job that dlopens a double by name (libcupti.so.13).
# Under a sanitizer its dlopen interceptor becomes the caller, so the job's RUNPATH
# ($ORIGIN/../doubles) is not searched and ld.so.cache answers with the real CUDA library: the
# doubles go on the path. Otherwise the caller's own LD_LIBRARY_PATH, unchanged.
SAN_LIBPATH=${LD_LIBRARY_PATH:-}
[ -n "$NCS_SANITIZER" ] && SAN_LIBPATH=$DOUBLES
# san_noleak CMD...: runs CMD; under ASan with LeakSanitizer off, for a job under strace (it cannot
# run in a process under ptrace: "LeakSanitizer has encountered a fatal error") or one that loads a
# library whose leaks are not ours (the NCCL Inspector leaks 6.5 MB at finalize, with or without
# ncclscope).
san_noleak() {
  if [ "$NCS_SANITIZER" = asan ]; then ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@"; else "$@"; fi
}
# tsan_fork_skip NAME: under TSan, prints "SKIP: NAME: ..." and returns 0 (the caller skips the
# check): TSan cannot run a forked child of a threaded process that starts threads again (it
# kills it, or with die_after_fork=0 exits it with 66). Returns 1 otherwise.
tsan_fork_skip() {
  [ "$NCS_SANITIZER" = tsan ] || return 1
  skip "$1: ThreadSanitizer cannot run a forked child that starts threads (make tsan)"
}
# asan_fork_skip NAME: under ASan, prints "SKIP: NAME: ..." and returns 0 (the caller skips the
# check); 1 otherwise. make asan's runtime (gcc 12) does not keep its allocator consistent across
# fork: a child forked while another thread was in malloc can inherit its lock held and hang in
# its first malloc (fork_storm's children, seen with gdb in activate()'s malloc; glibc's malloc
# forks its locks). And loaded after libc (verify_asan_link_order=0, above), it never registers
# the shim's threads (T-1): one that reuses the parent's stack in a forked child reads that
# stack's stale poison as stack-use-after-scope (shim_core's fork child: the writer's first frame).
asan_fork_skip() {
  [ "$NCS_SANITIZER" = asan ] || return 1
  skip "$1: a child of a threaded process under make asan (the runtime after libc: its allocator is not forked safely)"
}
# make tsan sets NCCLSCOPE_CALLSITE_DEPTH=0: gcc 12's TSan runtime dies of SIGSEGV when
# libunwind's per-thread cache destructor runs at the exit of a thread that unwound
# (docs/RELIABILITY.md), so call sites are off for the suite. tsan_sites_on: for a test whose
# jobs call NCCL from their main thread only (it never exits as a thread), call sites back on
# (the default depth), so what depends on them is checked under TSan too.
tsan_sites_on() {
  [ "$NCS_SANITIZER" = tsan ] || return 0
  unset NCCLSCOPE_CALLSITE_DEPTH
  echo "# tsan: call sites on (the jobs of this test call NCCL from their main thread only)"
}
# tsan_sites_skip NAME: under TSan, prints "SKIP: NAME: ..." and returns 0 (the caller skips the
# check): it needs call sites from threads that exit (make tsan turns them off). 1 otherwise.
tsan_sites_skip() {
  [ "$NCS_SANITIZER" = tsan ] || return 1
  skip "$1: call sites from threads that exit: off under make tsan (gcc 12's TSan runtime crashes in libunwind's thread-exit destructor)"
}
# private_shm SIZE SECONDS: a private mount namespace with an empty tmpfs of SIZE on /dev/shm,
# held for SECONDS by a sleeping process; sets IN (the prefix that runs a command there:
# "nsenter -t PID -m") and holder (its pid). IN stays empty where no namespace can be had.
private_shm() {
  IN=
  holder=
  unshare --mount --propagation private true 2>/dev/null || return 0
  unshare --mount --propagation private sh -c "mount -t tmpfs -o size=$1 tmpfs /dev/shm && exec sleep $2" &
  holder=$!
  local i
  for ((i = 0; i < 50; i++)); do
    [ "$(nsenter -t "$holder" -m stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
      [ "$(nsenter -t "$holder" -m ls -A /dev/shm 2>/dev/null | wc -l)" = 0 ] && { IN="nsenter -t $holder -m"; return 0; }
    sleep 0.1
  done
}
# stub_nccl: builds the stub NCCL (tests/faults/stub_nccl.c: every call returns at once) as
# $T/stub/libnccl.so.2; 1 when it does not build.
stub_nccl() {
  mkdir -p "$T/stub" && cc -O2 -shared -fPIC -I"$ROOT/include" -o "$T/stub/libnccl.so.2" "$ROOT/tests/faults/stub_nccl.c"
}
# stub_job DIR FLUSH_MS RATE_JOB_ARGS...: tests/jobs/rate_job under the shim on that stub, host
# timing, no call sites, its trace in DIR and its output in DIR/out; the job's exit status.
stub_job() {
  local d=$1 flush=$2
  shift 2
  mkdir -p "$d"
  env LD_LIBRARY_PATH="$T/stub" NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 \
    NCCLSCOPE_FLUSH_MS="$flush" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$BUILD/tests/rate_job" "$@" >"$d/out" 2>&1
}
