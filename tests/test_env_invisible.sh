#!/usr/bin/env bash
# test_env_invisible.sh — the job and every child it starts see exactly the environment they
# would see without the shim, at every moment (issue 9 part 3; shim/envview.c, docs/SHIM.md
# "Environment"). tests/jobs/env_job: a worker copies its environ, a second thread compares
# environ with the copy in a loop while the first makes NCCL calls (the first one activates the
# shim, whose log capture and profiler make NCCL see NCCL_DEBUG=INFO, INIT, a log stream and the
# profiler plugin) and starts children with system() right after the first call and after init:
# each child's NCCL variables must be the worker's. NCS_ENV_RUNS runs, 3/5 with NCCL_DEBUG unset
# and 2/5 with NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=COLL: 20 in `make test`, 200 in `make soak`
# (scripts/soak.sh). Before envview.c, the old setenv-based capture made 39 differences in 20
# runs (docs/RELIABILITY.md).
source "$(dirname "$0")/lib.sh"
EJ=$BUILD/tests/env_job
[ -x "$EJ" ] || { skip "env invisible: $EJ not built"; exit 0; }
[ -f "$SHIM" ] && [ -x "$NCS" ] || { skip "env invisible: shim or decoder not built"; exit 0; }
RUNS=${NCS_ENV_RUNS:-20}
# each traced process that ends without exit handlers (_exit, as these do) leaves its rings file
# for recovery: NCCLSCOPE_BUFFER_KB per calling thread, reserved on disk. Hundreds of runs at the
# 12 MiB default took gigabytes of /tmp; the smallest ring changes nothing this test looks at.
export NCCLSCOPE_BUFFER_KB=64
A=$((RUNS * 3 / 5)) B=$((RUNS - RUNS * 3 / 5))
mkdir -p "$T/kids"
"$EJ" -n 10 "$T/kids" >"$T/plain.out" 2>"$T/plain.err"
check_eq "env invisible: control without the shim (10 runs)" "env_job runs=10 differences=0 children=20 worker_failures=0" "$(cat "$T/plain.out")"

NCCLSCOPE_DIR="$T/tr-a" LD_PRELOAD="$SHIM" "$EJ" -n "$A" "$T/kids" >"$T/a.out" 2>"$T/a.err"
echo "# figures: env invisible, NCCL_DEBUG unset: $(cat "$T/a.out")"
sed 's/^/    /' "$T/a.err" | head -5
check_eq "env invisible: $A runs, NCCL_DEBUG unset: environ never differs, no child sees another NCCL variable" \
  "env_job runs=$A differences=0 children=$((A * 2)) worker_failures=0" "$(cat "$T/a.out")"
NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=COLL NCCLSCOPE_DIR="$T/tr-b" LD_PRELOAD="$SHIM" "$EJ" -n "$B" "$T/kids" >"$T/b.out" 2>"$T/b.err"
echo "# figures: env invisible, NCCL_DEBUG=WARN: $(tail -1 "$T/b.out")"
check_eq "env invisible: $B runs, NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=COLL: environ never differs, no child sees another value" \
  "env_job runs=$B differences=0 children=$((B * 2)) worker_failures=0" "$(tail -1 "$T/b.out")"
# the capture still works: NCCL read INFO (its init lines are in the traces) though nobody else saw it
f=$(ls "$T"/tr-a/*.ncs 2>/dev/null | head -1)
check "env invisible: NCCL's init lines are captured all the same (NCCL_LOG Init COMPLETE in a worker's trace)" \
  sh -c "'$NCS' dump '$f' | grep -q '^NCCL_LOG.*Init COMPLETE'"
check "env invisible: and the shim is NCCL's profiler all the same (PROFILE records)" \
  sh -c "'$NCS' dump '$f' | grep -q '^RECORD type=1[49] \|^PROFILE'"
# nccl.conf: NCCL itself sets what the file names (setenv(..., 0), as NCCL 2.28 does, and so does
# the double); the shim notes the user's value as NCCL reads it, after that: the job sees the
# same changes, prints the same lines (the WARN level's version banner) with and without it
printf 'NCCL_DEBUG=WARN\n# a comment\n' >"$T/nccl.conf"
NCCL_CONF_FILE="$T/nccl.conf" "$EJ" -n 3 "$T/kids" >"$T/conf.plain" 2>/dev/null
NCCL_CONF_FILE="$T/nccl.conf" NCCLSCOPE_DIR="$T/tr-c" LD_PRELOAD="$SHIM" "$EJ" -n 3 "$T/kids" >"$T/conf.shim" 2>/dev/null
check_eq "env invisible: NCCL_CONF_FILE naming NCCL_DEBUG=WARN: the same output (banner, the differences NCCL itself makes) with and without the shim" \
  "$(cat "$T/conf.plain")" "$(cat "$T/conf.shim")"
check "env invisible: ... and NCCL printed its banner (it read WARN from the file)" grep -q '^NCCL version' "$T/conf.shim"
