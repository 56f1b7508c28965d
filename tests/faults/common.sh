# common.sh — shared setup of the reliability tests (tests/test_fault_*.sh, test_signal*.sh,
# test_spawn*.sh, test_stress*.sh, test_security*.sh), sourced after tests/lib.sh.
#
# Contract: builds the fault library and the test programs of tests/faults/ into
# $BUILD/faults/ with plain cc (rebuilt when a source is newer; a lock keeps parallel runs
# apart) and defines helpers. need_* print one SKIP line naming what is missing and exit 0,
# so a tree where the shim, decoder or NCCL double has not been built yet reports skips, not
# passes.
FAULTS_SRC=$ROOT/tests/faults
FB=$BUILD/faults
FAULTLIB=$FB/libfault.so
FJOB=$FB/fault_job
NCCL_DOUBLE=$DOUBLES/libnccl.so.2
CC=${CC:-cc}

# need_shim / need_decoder / need_double TESTNAME: skip the whole file when missing.
need_shim() { [ -f "$SHIM" ] || { skip "$1: $SHIM not built"; exit 0; }; }
need_decoder() { [ -x "$NCS" ] || { skip "$1: $NCS not built"; exit 0; }; }
need_double() { [ -f "$NCCL_DOUBLE" ] || { skip "$1: $NCCL_DOUBLE not built"; exit 0; }; }

# fault_build: builds what the tests need. Returns non-zero (with the compiler's output on
# stderr) when something does not compile.
fault_build() {
  mkdir -p "$FB"
  (
    flock 9
    local cflags="-std=c11 -O1 -g -Wall -D_GNU_SOURCE -I$ROOT/include ${FAULT_CFLAGS:-}"
    if [ ! -f "$FAULTLIB" ] || [ "$FAULTS_SRC/libfault.c" -nt "$FAULTLIB" ]; then
      $CC $cflags -fPIC -shared -o "$FAULTLIB.tmp" "$FAULTS_SRC/libfault.c" -ldl && mv "$FAULTLIB.tmp" "$FAULTLIB" || exit 1
    fi
    if [ -f "$NCCL_DOUBLE" ]; then
      local p
      for p in fault_job spawn_job; do
        [ -f "$FAULTS_SRC/$p.c" ] || continue
        if [ ! -x "$FB/$p" ] || [ "$FAULTS_SRC/$p.c" -nt "$FB/$p" ] || [ "$NCCL_DOUBLE" -nt "$FB/$p" ]; then
          $CC $cflags -o "$FB/$p.tmp" "$FAULTS_SRC/$p.c" -L"$DOUBLES" -l:libnccl.so.2 \
            -Wl,-rpath,"$DOUBLES" -lpthread && mv "$FB/$p.tmp" "$FB/$p" || exit 1
        fi
      done
    fi
  ) 9>"$FB/.lock"
}

# run_job OUTPREFIX ENV... -- CMD...: runs CMD with ENV set, stdout to OUTPREFIX.out, stderr
# to OUTPREFIX.err, exit status to OUTPREFIX.rc, under a 60 s timeout.
run_job() {
  local out=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout -k 5 60 "$@" >"$out.out" 2>"$out.err"
  echo $? >"$out.rc"
}

# decode_status FILE: prints "rc=<report exit code>" plus the report's first stderr line;
# used to tell "readable" (0) from "damaged" (1) and "unreadable" (2) traces.
decode_rc() { timeout -k 5 60 "$NCS" dump "$1" >/dev/null 2>&1; echo $?; }

# traces DIR: the trace files under DIR, one a line.
traces() { find "$1" -name '*.ncs' -type f 2>/dev/null | sort; }
