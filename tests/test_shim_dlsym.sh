#!/usr/bin/env bash
# test_shim_dlsym.sh — NCCL reached only through dlopen + dlsym is traced exactly like linked
# NCCL (shim/dlsym.c): tests/jobs/dl_job (C, RTLD_LOCAL, RTLD_GLOBAL and dlsym(RTLD_DEFAULT), 2 ranks) and
# tests/jobs/ctypes_job.py (Python ctypes), each rank's `report --json` ops (calls, count,
# bytes) equal to the job's own truth, output identical with and without the shim. Also: an
# ncclX found in a second NCCL is left alone and named with NCCLSCOPE_DEBUG=1; dlsym(RTLD_NEXT)
# still searches after its caller (another preload's wrapper does not find itself).
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
J=$BUILD/tests
[ -f "$SHIM" ] && [ -x "$NCS" ] && [ -x "$J/dl_job" ] || { fail "shim_dlsym: shim, decoder or dl_job missing"; exit 1; }
cd "$T"
export NCCL_DEBUG=
LAUNCH=$ROOT/tests/jobs/launch.sh
LIB=$DOUBLES/libnccl.so.2

# same_as_truth NAME TRACEDIR TRUTHDIR: every truth-rank<R>.json's ops equal report --json's rank R
same_as_truth() {
  if "$NCS" report --json "$2" >"$T/r.json" 2>"$T/r.err" &&
     python3 - "$T/r.json" "$3" >"$T/cmp.out" 2>&1 <<'PY'
import glob, json, sys
rep = json.load(open(sys.argv[1]))
truths = sorted(glob.glob(sys.argv[2] + "/truth-rank*.json"))
assert truths, "no truth file"
assert len(rep["ranks"]) == len(truths), "%d ranks reported, %d in the truth" % (len(rep["ranks"]), len(truths))
for t in truths:
    want = json.load(open(t))
    rows = [r for r in rep["ranks"] if r["rank"] == want["rank"]]
    assert len(rows) == 1, "rank %d: %d rows" % (want["rank"], len(rows))
    r = rows[0]
    assert r["nranks"] == want["nranks"], "rank %d: nranks %r" % (want["rank"], r["nranks"])
    got = {k: {"calls": v["calls"], "count": v["count"], "bytes": v["bytes"]} for k, v in r["ops"].items()}
    assert got == want["ops"], "rank %d: report %r, truth %r" % (want["rank"], got, want["ops"])
PY
  then pass "$1"; else fail "$1"; cat "$T/r.err" "$T/cmp.out" | head -5 | sed 's/^/    /'; fi
}

for mode in local global default; do
  g=; [ $mode = global ] && g=-g; [ $mode = default ] && g="-g -D" # default: dlsym(RTLD_DEFAULT, ...)
  "$LAUNCH" 2 "$J/dl_job" $g -n 12 "$LIB" >"$mode.plain" 2>&1; p=$?
  mkdir -p "$mode.truth"
  NCCLSCOPE_DIR="$T/$mode" LD_PRELOAD="$SHIM" "$LAUNCH" 2 "$J/dl_job" $g -n 12 --truth "$T/$mode.truth" "$LIB" >"$mode.shim" 2>&1; s=$?
  if [ "$p$s" = 00 ] && cmp -s "$mode.plain" "$mode.shim"; then pass "shim_dlsym: dl_job RTLD_${mode^^}: output and exit status identical with and without the shim"
  else fail "shim_dlsym: dl_job RTLD_${mode^^}: exit $p vs $s"; head -3 "$mode.shim" | sed 's/^/    /'; fi
  same_as_truth "shim_dlsym: dl_job RTLD_${mode^^} (dlopen+dlsym, 2 ranks): report --json ops per rank equal the job's truth" "$mode" "$mode.truth"
done
# the off switch: the wrappers reached through dlsym forward every call and write nothing
NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/off" LD_PRELOAD="$SHIM" "$LAUNCH" 2 "$J/dl_job" -g -D -n 12 "$LIB" >default.off 2>&1; o=$?
if [ "$o" = 0 ] && cmp -s default.plain default.off && [ ! -e "$T/off" ]; then
  pass "shim_dlsym: DISABLE=1, dl_job RTLD_DEFAULT: output and exit status identical to plain, no trace directory"
else fail "shim_dlsym: DISABLE=1, dl_job RTLD_DEFAULT: exit $o, $(ls -d "$T/off" 2>/dev/null)"; head -3 default.off | sed 's/^/    /'; fi

if command -v python3 >/dev/null; then
  mkdir -p py.truth second
  cp "$LIB" second/libnccl.so.2
  env $SAN_RT python3 "$ROOT/tests/jobs/ctypes_job.py" "$DOUBLES" 10 "$T/plain.json" "$T/second/libnccl.so.2" >py.plain 2>&1; p=$?
  NCCLSCOPE_DEBUG=1 NCCLSCOPE_DIR="$T/py" LD_PRELOAD="$SHIM$SAN_PRELOAD" \
    python3 "$ROOT/tests/jobs/ctypes_job.py" "$DOUBLES" 10 "$T/py.truth/truth-rank0.json" "$T/second/libnccl.so.2" >py.shim 2>py.err; s=$?
  if [ "$p$s" = 00 ] && cmp -s py.plain py.shim; then pass "shim_dlsym: ctypes_job: output and exit status identical with and without the shim"
  else fail "shim_dlsym: ctypes_job: exit $p vs $s"; cat py.err | head -3 | sed 's/^/    /'; fi
  same_as_truth "shim_dlsym: python3 ctypes (CDLL = RTLD_LOCAL): report --json ops equal the job's truth (the second NCCL's call not counted)" py py.truth
  check "shim_dlsym: NCCLSCOPE_DEBUG=1 names the second NCCL's ncclGetVersion as not traced" \
    grep -q "dlsym(\"ncclGetVersion\") found $T/second/libnccl.so.2: it is not the NCCL the shim traces; calls through it are not traced" py.err
  NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/pyoff" LD_PRELOAD="$SHIM$SAN_PRELOAD" \
    python3 "$ROOT/tests/jobs/ctypes_job.py" "$DOUBLES" 10 "$T/off.json" "$T/second/libnccl.so.2" >py.off 2>&1; o=$?
  if [ "$o" = 0 ] && cmp -s py.plain py.off && [ ! -e "$T/pyoff" ]; then
    pass "shim_dlsym: DISABLE=1, ctypes_job: output and exit status identical to plain, no trace directory"
  else fail "shim_dlsym: DISABLE=1, ctypes_job: exit $o, $(ls -d "$T/pyoff" 2>/dev/null)"; head -3 py.off | sed 's/^/    /'; fi
else
  skip "shim_dlsym: ctypes: python3 not installed"
fi

# dlsym(RTLD_NEXT) keeps its caller: a second preloaded library's getpid wrapper asks for the
# next getpid; were the caller taken to be the shim, it would find itself and recurse forever.
cat >next.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
static int calls;
pid_t getpid(void) { pid_t (*next)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid"); calls++; return next(); }
int next_calls(void) { return calls; }
C
cat >nextmain.c <<'C'
#include <stdio.h>
#include <unistd.h>
#include <dlfcn.h>
int main(void) {
  pid_t p = getpid();
  int (*n)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "next_calls");
  printf("%s %d\n", p > 0 ? "pid" : "nopid", n ? n() : -1);
  return 0;
}
C
if $CC -shared -fPIC -o libnext.so next.c -ldl && $CC -o nextmain nextmain.c -ldl; then
  check_eq "shim_dlsym: dlsym(RTLD_NEXT) from another preload finds libc's getpid, not its own" "pid 1" \
    "$(LD_PRELOAD="$SHIM $T/libnext.so" timeout 20 ./nextmain 2>&1)"
else fail "shim_dlsym: RTLD_NEXT probe does not build"; fi
