# common.sh — shared setup of the reliability tests (tests/test_fault_*.sh, test_signal*.sh,
# test_spawn*.sh, test_stress*.sh, test_security*.sh), sourced after tests/lib.sh.
#
# Contract: builds the fault library and the test programs of tests/faults/ into
# $BUILD/faults/ with cc (and the shim's sanitizer, if any; rebuilt when a source is newer; a lock keeps parallel runs
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

# Sanitizer builds (make asan / make tsan): the test programs carry the same runtime as the
# shim and doubles, and the sanitizer is told not to insist on coming first in LD_PRELOAD
# (libfault.so is preloaded before the shim).
FAULT_SAN=
if readelf -d "$SHIM" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
  FAULT_SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
  # leaks at exit are not what these tests judge (the shim keeps its buffers to the end)
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:verify_asan_link_order=0
elif readelf -d "$SHIM" 2>/dev/null | grep -q 'NEEDED.*libtsan'; then
  FAULT_SAN="-fsanitize=thread"
  # the shim starts its writer thread again in a forked child, which TSan refuses by default
  export TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0
fi
# need_plain_malloc TESTNAME: allocation injection replaces malloc, which a sanitizer owns.
need_plain_malloc() { [ -z "$FAULT_SAN" ] || { skip "$1: allocation injection cannot run under a sanitizer build"; exit 0; }; }

# fault_build: builds what the tests need. Returns non-zero (with the compiler's output on
# stderr) when something does not compile.
fault_build() {
  mkdir -p "$FB"
  (
    flock 9
    local cflags="-std=c11 -O1 -g -Wall -D_GNU_SOURCE -I$ROOT/include $FAULT_SAN ${FAULT_CFLAGS:-}"
    # stale OUT SRC...: OUT missing or older than any SRC
    stale() { local o=$1 s; shift; [ -e "$o" ] || return 0; for s; do [ "$s" -nt "$o" ] && return 0; done; return 1; }
    mk() { local o=$1; shift; "$CC" "$@" -o "$o.tmp" && mv "$o.tmp" "$o"; }
    local S=$FAULTS_SRC
    if stale "$FAULTLIB" "$S/libfault.c"; then mk "$FAULTLIB" ${cflags/$FAULT_SAN/} ${FAULT_SAN:+-DNCS_FAULT_NO_ALLOC} -fPIC -shared "$S/libfault.c" -ldl || exit 1; fi
    if stale "$FB/ncs_raw" "$S/ncs_raw.c"; then mk "$FB/ncs_raw" $cflags "$S/ncs_raw.c" -lzstd || exit 1; fi
    if [ -f "$BUILD/libncsdecoder.a" ] && stale "$FB/trace_stats" "$S/trace_stats.c" "$BUILD/libncsdecoder.a"; then
      mk "$FB/trace_stats" $cflags -I"$ROOT/decoder" "$S/trace_stats.c" "$BUILD/libncsdecoder.a" -lzstd -lm -lpthread || exit 1
    fi
    if stale "$FB/dlopen_job" "$S/dlopen_job.c"; then mk "$FB/dlopen_job" $cflags "$S/dlopen_job.c" -ldl || exit 1; fi
    if [ -f "$NCCL_DOUBLE" ]; then
      local p
      for p in fault_job spawn_job; do
        if stale "$FB/$p" "$S/$p.c" "$NCCL_DOUBLE"; then
          mk "$FB/$p" $cflags "$S/$p.c" -L"$DOUBLES" -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,"$DOUBLES" -lpthread || exit 1
        fi
      done
      # libext.so: DT_NEEDED libnccl.so.2 found through its own rpath (not the program's)
      if stale "$FB/libext.so" "$S/ext.c" "$NCCL_DOUBLE"; then
        mk "$FB/libext.so" $cflags -fPIC -shared "$S/ext.c" -L"$DOUBLES" -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,"$DOUBLES" || exit 1
      fi
    fi
    # the off-switch stub NCCL and its job, linked against it and (-DOFF_DLOPEN) not linked
    mkdir -p "$FB/stub"
    if stale "$FB/stub/libnccl.so.2" "$S/offswitch_stub.c" "$S/offswitch.h"; then
      mk "$FB/stub/libnccl.so.2" $cflags -fPIC -shared -Wl,-soname,libnccl.so.2 "$S/offswitch_stub.c" || exit 1
    fi
    if stale "$FB/offswitch_job" "$S/offswitch_job.c" "$S/offswitch.h" "$FB/stub/libnccl.so.2"; then
      mk "$FB/offswitch_job" $cflags "$S/offswitch_job.c" -L"$FB/stub" -l:libnccl.so.2 -Wl,-rpath,"$FB/stub" -lpthread || exit 1
    fi
    if stale "$FB/offswitch_dl" "$S/offswitch_job.c" "$S/offswitch.h"; then
      mk "$FB/offswitch_dl" $cflags -DOFF_DLOPEN "$S/offswitch_job.c" -ldl -lpthread || exit 1
    fi
    mkdir -p "$FB/mini"
    # the mini runtime exports under the real one's version node, as the CUDA double does (the
    # jobs linked against the double ask for symbol@libcudart.so.13)
    local cudart_map=$ROOT/tests/doubles/cuda/libcudart.map
    if stale "$FB/mini/libnccl.so.2" "$S/mini_nccl.c" "$cudart_map" || stale "$FB/mini/libcudart.so.13" "$cudart_map"; then
      mk "$FB/mini/libnccl.so.2" $cflags -fPIC -shared -Wl,-soname,libnccl.so.2 "$S/mini_nccl.c" || exit 1
      mk "$FB/mini/libcudart.so.13" $cflags -DMINI_CUDART -fPIC -shared -Wl,-soname,libcudart.so.13 \
        -Wl,--version-script="$cudart_map" "$S/mini_nccl.c" || exit 1
    fi
    local real=${NCCLSCOPE_CUDA_HOME:-/usr/local/cuda}/lib/libnccl.so.2
    if [ -f "$real" ] && stale "$FB/real_job" "$S/real_job.c"; then
      mk "$FB/real_job" $cflags "$S/real_job.c" "$real" -Wl,-rpath,"$(dirname "$real")" || exit 1
    fi
  ) 9>"$FB/.lock"
}

# stats FILE...: tests/faults/trace_stats.c output for the files.
stats() { "$FB/trace_stats" "$@"; }
# field NAME LINE: the value of NAME=... in a trace_stats line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# run_job OUTPREFIX ENV... -- CMD...: runs CMD with ENV set, stdout to OUTPREFIX.out, stderr
# to OUTPREFIX.err, exit status to OUTPREFIX.rc, under a 60 s timeout.
run_job() {
  local out=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  timeout -k 5 60 env "${envs[@]}" "$@" >"$out.out" 2>"$out.err" # the preloads reach the job, not timeout
  echo $? >"$out.rc"
}

# readable FILE: 0 when the reader takes the whole file (ncs_trace_read returns 0: complete or
# cut short after whole chunks), 1 when it finds damage or no trace. Sets STATS to the line.
readable() { STATS=$("$FB/trace_stats" "$1" | head -1); [ "$(field rc "$STATS")" = 0 ]; }

# traces DIR: the trace files under DIR, one a line.
traces() { find "$1" -name '*.ncs' -type f 2>/dev/null | sort; }

# Jobs run in the scratch directory, so a default ./ncclscope-trace never lands in the tree.
cd "$T" || exit 1

# run_fault NAME ENV...: one run of fault_job ($FJOB $JOBARGS) with the fault library and the
# shim; compares it with the baseline run ($T/base.out), reads every trace it left, and counts
# into runs, injected, changed, unreadable, dropped_seen. Labels start with $FAULT_CLASS.
# EXPECT_FINAL=1: a trace without its final chunk counts as unreadable too.
# The runs are independent (each its own directory, counters file and output), so up to
# NCS_FAULT_PAR (default 2) go at once, in the background: their lines are printed and their
# counts added in the order they started, when a slot is needed and by fault_wait, which a test
# calls before it reads the counts or changes JOBARGS or the baseline.
runs=0 injected=0 changed=0 unreadable=0 dropped_seen=0
FAULT_PAR=${NCS_FAULT_PAR:-2}
fault_queue=() fault_seq=0
run_fault() {
  while [ ${#fault_queue[@]} -ge "$FAULT_PAR" ]; do fault_reap; done
  fault_seq=$((fault_seq + 1))
  fault_one "$fault_seq" "$@" >"$T/rf-$fault_seq.log" 2>&1 &
  fault_queue+=("$!:$fault_seq")
}
# fault_reap: waits for the oldest run in flight, prints its lines, adds its counts.
fault_reap() {
  local e=${fault_queue[0]} i c a b d f
  fault_queue=("${fault_queue[@]:1}")
  wait "${e%%:*}"
  i=${e#*:}
  grep -v '^#counts ' "$T/rf-$i.log"
  c=$(grep '^#counts ' "$T/rf-$i.log")
  runs=$((runs + 1))
  if [ -z "$c" ]; then
    changed=$((changed + 1)); fail "$FAULT_CLASS run $i: no result (the run's shell died)"
  else
    read -r _ a b d f <<<"$c"
    injected=$((injected + a)) changed=$((changed + b)) unreadable=$((unreadable + d)) dropped_seen=$((dropped_seen + f))
  fi
  rm -rf "$T/rf-$i.log" "$T/run-$i" "$T/stats-$i" "$T/f-$i".*
}
fault_wait() { while [ ${#fault_queue[@]} -gt 0 ]; do fault_reap; done; }
# fault_one I NAME ENV...: run I; prints its PASS/FAIL lines, then "#counts INJ CHANGED UNREADABLE DROPPED".
fault_one() {
  local i=$1 name=$2; shift 2
  local d=$T/run-$i st=$T/stats-$i inj=0 chg=0 unr=0 drp=0
  mkdir -p "$d"
  run_job "$T/f-$i" NCCLSCOPE_DIR="$d/traces" NCCLSCOPE_FLUSH_MS=10 NCS_FAULT_STATS="$st" \
    LD_PRELOAD="$FAULTLIB $SHIM" "$@" -- "$FJOB" $JOBARGS
  [ -f "$st" ] && inj=$(od -An -t u8 -j 8 -N 8 "$st" | tr -d ' ')
  inj=${inj:-0}
  if [ "$(cat "$T/f-$i.rc")" != 0 ] || ! cmp -s "$T/base.out" "$T/f-$i.out"; then
    fail "$FAULT_CLASS $name: job changed (exit $(cat "$T/f-$i.rc")): $(diff "$T/base.out" "$T/f-$i.out" | head -3 | tr '\n' ' ') $(head -c 200 "$T/f-$i.err")"
    echo "#counts $inj 1 0 0"; return
  fi
  local f ok=1
  for f in $(traces "$d"); do
    if ! readable "$f"; then
      unr=$((unr + 1)); ok=0
      fail "$FAULT_CLASS $name: trace unreadable beyond its damage: $STATS"
    elif [ "${EXPECT_FINAL:-0}" = 1 ] && [ "$(field final "$STATS")" != 1 ]; then
      unr=$((unr + 1)); ok=0
      fail "$FAULT_CLASS $name: the job ended cleanly and later writes succeeded, but the trace is not complete: $STATS"
    elif [ "$(field dropped "$STATS")" != 0 ]; then
      drp=$((drp + 1))
    fi
  done
  [ $ok = 1 ] && pass "$FAULT_CLASS $name (injected $inj)"
  echo "#counts $inj 0 $unr $drp"
}
