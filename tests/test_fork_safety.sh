#!/usr/bin/env bash
# test_fork_safety.sh — a process forked at any moment after the shim activated must never
# inherit a shim thread in the middle of the dynamic loader, the unwinder, CUDA or NVML, nor a
# lock it needs (issue 9 part 1; shim/forkgate.c, docs/SHIM.md "Fork"). tests/jobs/fork_storm:
# a launcher makes its first NCCL call (the shim activates: writer thread, NVML topology, call
# sites) and forks 4 ranks at once, right away or 1..5 ms later; each rank dlopens a library it
# has not loaded, then (mode nccl) makes its own communicator and an all-reduce, or (mode plain)
# never calls NCCL. Deaths (signal or non-zero exit) and hangs (not done 60 s after the fork)
# are counted over NCS_FORK_RUNS runs per mode: 50 in `make test`, 500 in `make soak`
# (scripts/soak.sh). Before the fork gate, 1 run in about 300 lost its ranks to SIGSEGV inside
# the NVML library the parent's writer thread was loading, or hung them on the loader's lock
# (docs/RELIABILITY.md): the short run is a smoke check of every path, the soak the one that
# can see a race that rare.
source "$(dirname "$0")/lib.sh"
FS=$BUILD/tests/fork_storm
[ -x "$FS" ] || { skip "fork safety: $FS not built"; exit 0; }
[ -f "$SHIM" ] || { skip "fork safety: shim not built"; exit 0; }
if tsan_fork_skip "fork safety"; then exit 0; fi
if asan_fork_skip "fork safety"; then exit 0; fi
RUNS=${NCS_FORK_RUNS:-50}
# each traced process that ends without exit handlers (_exit, as these do) leaves its rings file
# for recovery: NCCLSCOPE_BUFFER_KB per calling thread, reserved on disk. Hundreds of runs at the
# 12 MiB default took gigabytes of /tmp; the smallest ring changes nothing this test looks at.
export NCCLSCOPE_BUFFER_KB=64
# the NVML double is found, so the shim's topology collector really loads and calls NVML
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt

# control: the job itself is sound without the shim
"$FS" -n 20 >"$T/plain.out" 2>"$T/plain.err"
check_eq "fork safety: control without the shim (20 runs, 80 ranks)" \
  "fork_storm runs=20 children=80 deaths=0 hangs=0 launcher_failures=0" "$(cat "$T/plain.out")"

for mode in nccl plain; do
  NCCLSCOPE_DIR="$T/tr-$mode" LD_PRELOAD="$SHIM" "$FS" -n "$RUNS" -m "$mode" >"$T/$mode.out" 2>"$T/$mode.err"
  rc=$?
  line=$(cat "$T/$mode.out")
  echo "# figures: fork safety $mode: $line"
  [ -s "$T/$mode.err" ] && sed 's/^/    /' "$T/$mode.err" | head -5
  what="ranks that dlopen and use NCCL"
  [ $mode = plain ] && what="ranks that dlopen and never use NCCL"
  check_eq "fork safety: $RUNS launchers fork 4 $what right after activating the shim: 0 deaths, 0 hangs" \
    "0 fork_storm runs=$RUNS children=$((RUNS * 4)) deaths=0 hangs=0 launcher_failures=0" "$rc $line"
  n=$(find "$T/tr-$mode" -name '*.ncs' 2>/dev/null | wc -l)
  echo "# figures: fork safety $mode: $n trace files"
  # ranks that never call NCCL stay inert: at most one file per launcher
  [ $mode = plain ] && check "fork safety: ranks that never call NCCL write no trace ($n files for $RUNS launchers)" test "$n" -le "$RUNS"
  rm -rf "$T/tr-$mode"
done
