#!/usr/bin/env bash
# test_shim_inert.sh — processes that never call NCCL (bash, python3 -c pass, make -v, a
# launcher that exits with a status) run under LD_PRELOAD=libncclscope.so exactly as without
# it: same stdout, stderr and exit status, no trace directory or file created, no thread
# started by the shim.
. "$(dirname "$0")/lib.sh"
[ -f "$SHIM" ] || { fail "inert: $SHIM missing"; exit 1; }
mkdir -p "$T/cwd"
cd "$T/cwd"
unset NCCLSCOPE_DIR
run_both() { # NAME CMD...: compare plain and preloaded runs
  local name=$1; shift
  "$@" >"$T/p.out" 2>"$T/p.err"; local prc=$?
  LD_PRELOAD="$SHIM$SAN_PRELOAD" "$@" >"$T/s.out" 2>"$T/s.err"; local src=$?
  if [ "$prc" = "$src" ] && cmp -s "$T/p.out" "$T/s.out" && cmp -s "$T/p.err" "$T/s.err"; then
    pass "inert: $name: same stdout, stderr and status ($prc)"
  else
    fail "inert: $name: differs (status $prc vs $src)"; diff "$T/p.out" "$T/s.out" | head -5
  fi
  local left; left=$(find "$T/cwd" -mindepth 1 | head -3)
  check_eq "inert: $name: no file or directory created" "" "$left"
}
run_both "bash" bash -c 'echo hello; echo err >&2; exit 3'
if command -v python3 >/dev/null; then run_both "python3 -c pass" python3 -c pass
else skip "inert: python3 -c pass: no python3"; fi
if command -v make >/dev/null; then run_both "make -v" make -v
else skip "inert: make -v: no make"; fi
run_both "env (environment unchanged but for LD_PRELOAD)" bash -c 'env | grep -v ^LD_PRELOAD= | sort'
# one thread, as without the shim: the writer thread appears only at the first NCCL call
n=$(LD_PRELOAD="$SHIM$SAN_PRELOAD" bash -c 'ls /proc/$$/task | wc -l')
check_eq "inert: no extra thread in a preloaded bash" "1" "$n"
check_eq "inert: nothing left in the working directory" "" "$(ls -A "$T/cwd")"
