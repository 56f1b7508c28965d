#!/usr/bin/env bash
# test_shim_dlsym_absent.sh — the preloaded shim makes no entry point look present that the
# loaded NCCL lacks (issue 25 item 4, shim/dlsym.c). build/doubles-old/libnccl.so.2 is the NCCL
# double exported as an older NCCL (no CommShrink, Gather, Scatter, CommInitRankScalable,
# CommWindowRegister/Deregister, CommRevoke, ResetDebugInit: tests/doubles/nccl-old/). The
# truth is each library's own answer without the shim: tests/jobs/dl_probe looks every entry
# point up with dlsym(RTLD_DEFAULT) and on dlopen(NULL)'s handle, before and after loading the
# library, and its output must be the same with the shim preloaded. Then calls still work and
# are traced through the older library (dl_job, RTLD_DEFAULT lookups), and Python's ctypes
# probing (hasattr on CDLL(None)) answers as without the shim.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
OLD=$BUILD/doubles-old/libnccl.so.2
NEW=$DOUBLES/libnccl.so.2
[ -f "$SHIM" ] && [ -x "$J/dl_probe" ] && [ -f "$OLD" ] || { fail "dlsym_absent: shim, dl_probe or the older double missing"; exit 1; }
names=$(sed -n 's/^ *X([^,]*, *\([A-Za-z]*\),.*/nccl\1/p' "$ROOT/include/ncclscope/nccl_abi.h")
gone=""
for n in CommShrink Gather Scatter CommInitRankScalable CommWindowRegister CommWindowDeregister CommRevoke ResetDebugInit DevCommCreate DevCommDestroy; do
  nm -D --defined-only "$OLD" | grep -qw "nccl$n" || gone="$gone $n"
done
check_eq "dlsym_absent: the older double defines none of the 10 newer entry points" \
  " CommShrink Gather Scatter CommInitRankScalable CommWindowRegister CommWindowDeregister CommRevoke ResetDebugInit DevCommCreate DevCommDestroy" "$gone"
for lib in old new; do
  L=$OLD; [ $lib = new ] && L=$NEW
  "$J/dl_probe" "$L" $names ncclNoSuchThing >"$T/$lib.plain" 2>&1; p=$?
  NCCLSCOPE_DIR="$T/tr-$lib" LD_PRELOAD="$SHIM" "$J/dl_probe" "$L" $names ncclNoSuchThing >"$T/$lib.shim" 2>&1; s=$?
  if [ "$p$s" = 00 ] && cmp -s "$T/$lib.plain" "$T/$lib.shim"; then
    pass "dlsym_absent: $lib NCCL: every entry point found or absent (RTLD_DEFAULT and dlopen(NULL), before and after loading) as without the shim"
  else
    fail "dlsym_absent: $lib NCCL: exit $p vs $s"; diff "$T/$lib.plain" "$T/$lib.shim" | head -6 | sed 's/^/    /'
  fi
done
check_eq "dlsym_absent: without the shim the older NCCL lacks ncclCommShrink (the probe's own truth)" \
  "after ncclCommShrink default=absent global=absent error=1" "$(grep '^after ncclCommShrink ' "$T/old.plain")"
check_eq "dlsym_absent: ... and has ncclAllReduce" \
  "after ncclAllReduce default=found global=found error=0" "$(grep '^after ncclAllReduce ' "$T/old.plain")"
# The calls the older library has still reach the shim's wrappers and are traced.
LAUNCH=$ROOT/tests/jobs/launch.sh
mkdir -p "$T/truth"
NCCLSCOPE_DIR="$T/old-job" LD_PRELOAD="$SHIM" "$LAUNCH" 2 "$J/dl_job" -g -D -n 6 --truth "$T/truth" "$OLD" >"$T/job.out" 2>&1
check_eq "dlsym_absent: dl_job on the older NCCL (RTLD_DEFAULT lookups) exits 0 under the shim" 0 "$?"
calls=$("$NCS" report --json "$T/old-job" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(v.get("calls", 0) for rk in r.get("ranks", []) for k, v in rk.get("ops", {}).items() if k == "AllReduce"))' 2>/dev/null)
want=$(python3 -c '
import json, sys
print(sum(json.load(open(f))["ops"].get("AllReduce", {}).get("calls", 0) for f in sys.argv[1:]))' "$T"/truth/truth-rank*.json 2>/dev/null)
check "dlsym_absent: its all-reduces are traced ($calls in the trace, $want in the job's truth)" test -n "$want" -a "$calls" = "$want" -a "${want:-0}" -gt 0
if command -v python3 >/dev/null; then
  py='import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(None)
print(" ".join("%s=%d" % (n, hasattr(lib, n)) for n in sys.argv[2:]))'
  env $SAN_RT python3 -c "$py" "$OLD" $names >"$T/py.plain" 2>&1
  NCCLSCOPE_DIR="$T/tr-py" LD_PRELOAD="$SHIM$SAN_PRELOAD" python3 -c "$py" "$OLD" $names >"$T/py.shim" 2>&1
  if cmp -s "$T/py.plain" "$T/py.shim" && grep -q 'ncclCommShrink=0' "$T/py.plain"; then
    pass "dlsym_absent: ctypes hasattr(CDLL(None), name) on the older NCCL answers as without the shim"
  else fail "dlsym_absent: ctypes probing differs"; diff "$T/py.plain" "$T/py.shim" | head -4 | sed 's/^/    /'; fi
else
  skip "dlsym_absent: ctypes probing: no python3"
fi
