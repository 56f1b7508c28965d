#!/usr/bin/env bash
# test_fault_dlopen.sh — how NCCL reaches the process: an extension linked against libnccl.so.2
# dlopen()ed with RTLD_LOCAL after start (its calls must be traced); the shim preloaded twice
# (same path, and two copies); NCCL absent (the job's own error unchanged, no trace file); the
# real NCCL 2.28.9 returning errors (ncclCommInitRank fails without a GPU): return codes and
# error strings pass through unchanged and the failure is recorded.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "dlopen"; need_decoder "dlopen"; need_double "dlopen"
fault_build || { fail "dlopen: test programs build"; exit 0; }
DJ=$FB/dlopen_job

same() { # NAME: compares $T/NAME.0.* with $T/NAME.1.*
  if [ "$(cat "$T/$1.0.rc")" = "$(cat "$T/$1.1.rc")" ] && cmp -s "$T/$1.0.out" "$T/$1.1.out"; then
    pass "dlopen $1: output and exit code unchanged"
  else
    fail "dlopen $1: changed: exit $(cat "$T/$1.0.rc") vs $(cat "$T/$1.1.rc"); $(diff "$T/$1.0.out" "$T/$1.1.out" | head -4 | tr '\n' ' ') $(head -c 300 "$T/$1.1.err")"
  fi
}

# 1. Extension with DT_NEEDED libnccl.so.2, loaded RTLD_LOCAL.
run_job "$T/ext.0" NCS_X=1 -- "$DJ" ext "$FB/libext.so" 7
run_job "$T/ext.1" NCCLSCOPE_DIR="$T/ext" LD_PRELOAD="$SHIM" -- "$DJ" ext "$FB/libext.so" 7
same ext
f=$(traces "$T/ext" | head -1)
if [ -n "$f" ] && readable "$f"; then
  n=$(stats "$f" | sed -n 's/^op AllReduce //p')
  check_eq "dlopen ext RTLD_LOCAL: AllReduce calls traced" 7 "${n:-0}"
else
  fail "dlopen ext RTLD_LOCAL: no readable trace (${STATS:-no file})"
fi

# 1b. The NCCL double itself dlopen'ed RTLD_LOCAL and called through dlsym handles: those calls
# bypass any interposer by design; the job must simply behave the same.
run_job "$T/dlsym.0" NCS_X=1 -- "$DJ" nccl "$NCCL_DOUBLE"
run_job "$T/dlsym.1" NCCLSCOPE_DIR="$T/dlsym" LD_PRELOAD="$SHIM" -- "$DJ" nccl "$NCCL_DOUBLE"
same dlsym

# 2. The shim preloaded twice: the same path, then two copies under different names.
cp "$SHIM" "$T/libncclscope-copy.so"
run_job "$T/twice.0" NCS_X=1 -- "$FJOB" 4
for v in same copy; do
  pre="$SHIM $SHIM"; [ $v = copy ] && pre="$SHIM $T/libncclscope-copy.so"
  run_job "$T/twice.1" NCCLSCOPE_DIR="$T/twice-$v" LD_PRELOAD="$pre" -- "$FJOB" 4
  cp "$T/twice.0.out" "$T/twice-$v.0.out"; cp "$T/twice.0.rc" "$T/twice-$v.0.rc"
  mv "$T/twice.1.out" "$T/twice-$v.1.out"; mv "$T/twice.1.rc" "$T/twice-$v.1.rc"; mv "$T/twice.1.err" "$T/twice-$v.1.err"
  same twice-$v
  files=($(traces "$T/twice-$v"))
  ok=0
  for f in "${files[@]}"; do readable "$f" && [ "$(field calls "$STATS")" = 28 ] && ok=$((ok + 1)); done
  [ ${#files[@]} -ge 1 ] && [ $ok = 1 ] && pass "dlopen preloaded twice ($v): one complete trace of 28 calls (${#files[@]} files)" \
    || fail "dlopen preloaded twice ($v): ${#files[@]} files, $ok with the 28 calls: $(for f in "${files[@]}"; do stats "$f" | head -1; done)"
done

# 3. NCCL absent: the job's own dlopen error is unchanged, and no trace appears.
run_job "$T/absent.0" LD_LIBRARY_PATH=/nonexistent -- "$DJ" nccl libnccl-absent.so.2
run_job "$T/absent.1" LD_LIBRARY_PATH=/nonexistent NCCLSCOPE_DIR="$T/absent" LD_PRELOAD="$SHIM" -- "$DJ" nccl libnccl-absent.so.2
same absent
check_eq "dlopen absent: no trace file" 0 "$(traces "$T/absent" | wc -l)"

# 3b. A job linked against libnccl.so.2 that the loader cannot find: the loader's own error
# (stderr) and exit status are unchanged. (/usr/local/cuda/lib is in this machine's loader
# cache, so the loader is run directly with --inhibit-cache to make NCCL truly absent.)
LDSO=$(readelf -l "$FJOB" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
if cc -std=c11 -D_GNU_SOURCE -I"$ROOT/include" $FAULT_SAN -o "$T/nolib_job" "$ROOT/tests/faults/fault_job.c" \
    -L"$DOUBLES" -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,/nonexistent -lpthread 2>"$T/cc.err"; then
  run_job "$T/nolib.0" NCS_X=1 -- "$LDSO" --inhibit-cache "$T/nolib_job" 2
  run_job "$T/nolib.1" NCCLSCOPE_DIR="$T/nolib" LD_PRELOAD="$SHIM" -- "$LDSO" --inhibit-cache "$T/nolib_job" 2
  grep -q "libnccl.so.2: cannot open" "$T/nolib.0.err" && pass "dlopen linked NCCL missing: the loader refuses the job ($(cat "$T/nolib.0.rc"))" \
    || fail "dlopen linked NCCL missing: the job found an NCCL anyway: $(head -2 "$T/nolib.0.out")"
  cmp -s "$T/nolib.0.err" "$T/nolib.1.err" && pass "dlopen linked NCCL missing: loader error unchanged" \
    || fail "dlopen linked NCCL missing: stderr differs: $(diff "$T/nolib.0.err" "$T/nolib.1.err" | head -3 | tr '\n' ' ')"
  same nolib
  check_eq "dlopen linked NCCL missing: no trace file" 0 "$(traces "$T/nolib" | wc -l)"
else
  fail "dlopen: the job without its NCCL does not build: $(head -3 "$T/cc.err")"
fi

# 4. Real NCCL 2.28.9, linked normally and loaded by dlopen: errors pass through.
if [ -x "$FB/real_job" ]; then
  run_job "$T/real.0" NCS_X=1 -- "$FB/real_job"
  run_job "$T/real.1" NCCLSCOPE_DIR="$T/real" LD_PRELOAD="$SHIM" -- "$FB/real_job"
  same real
  grep -q "ncclCommInitRank [1-9]" "$T/real.1.out" && pass "dlopen real NCCL: ncclCommInitRank fails here, as expected" \
    || skip "dlopen real NCCL: ncclCommInitRank did not fail (a GPU is present?)"
  f=$(traces "$T/real" | head -1)
  if [ -n "$f" ] && readable "$f"; then
    rc=$("$NCS" dump "$f" | grep -m1 'CALL op=CommInitRank ' | sed -n 's/.* rc=\([0-9-]*\).*/\1/p')
    want=$(sed -n 's/^ncclCommInitRank \([0-9]*\).*/\1/p' "$T/real.0.out")
    check_eq "dlopen real NCCL: failed CommInitRank recorded with its return code" "$want" "$rc"
    v=$("$NCS" dump "$f" | sed -n 's/^  nccl_version=//p' | head -1)
    check_eq "dlopen real NCCL: version recorded" 22809 "$v"
  else
    fail "dlopen real NCCL: no readable trace (${STATS:-no file})"
  fi
  run_job "$T/realdl.0" NCS_X=1 -- "$DJ" nccl /usr/local/cuda/lib/libnccl.so.2
  run_job "$T/realdl.1" NCCLSCOPE_DIR="$T/realdl" LD_PRELOAD="$SHIM" -- "$DJ" nccl /usr/local/cuda/lib/libnccl.so.2
  same realdl
else
  skip "dlopen real NCCL: /usr/local/cuda/lib/libnccl.so.2 not installed"
fi
