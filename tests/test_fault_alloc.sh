#!/usr/bin/env bash
# test_fault_alloc.sh — allocation failures injected into the shim (tests/faults/libfault.so):
# a counting run finds K eligible allocations (malloc, calloc, realloc, posix_memalign,
# aligned_alloc, memalign called from inside libncclscope.so, zstd's included since it is
# linked into the shim; allocations of libc or of the job itself are never failed), then for
# each N in 1..K the Nth fails once, then every one from N on fails. Every run: the job's
# stdout and exit code equal the run without the shim, and every trace left is readable.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_plain_malloc "fault alloc"; need_shim "fault alloc"; need_decoder "fault alloc"; need_double "fault alloc"
fault_build || { fail "fault alloc: test programs build"; exit 0; }

JOBARGS="30 sleep=2000"
run_job "$T/base" -- "$FJOB" $JOBARGS
[ "$(cat "$T/base.rc")" = 0 ] || { fail "fault alloc: baseline job fails: $(head -3 "$T/base.out")"; exit 0; }

FAULT_CLASS="fault alloc"

# Counting run: how many eligible I/O calls the shim makes.
rm -f "$T/stats"
run_job "$T/count" NCCLSCOPE_DIR="$T/count-traces" NCCLSCOPE_FLUSH_MS=10 NCS_FAULT_STATS="$T/stats" \
  NCS_FAULT_FN=alloc NCS_FAULT_N=0 LD_PRELOAD="$FAULTLIB $SHIM" -- "$FJOB" $JOBARGS
K=$(od -An -t u8 -N 8 "$T/stats" 2>/dev/null | tr -d ' ')
K=${K:-0}
if [ "$K" -lt 1 ]; then
  fail "fault alloc: only $K allocations from the shim seen (does the fault library see them?)"
  exit 0
fi
pass "fault alloc: counting run sees $K allocations from the shim"
cmp -s "$T/base.out" "$T/count.out" && pass "fault alloc: stdout unchanged with the fault library loaded, nothing injected" \
  || fail "fault alloc: stdout differs with the fault library loaded"
# The loop: every call in turn, once and from then on. Cap K so the test stays fast.
MAXN=${NCS_FAULT_MAXN:-40}
[ "$K" -gt "$MAXN" ] && K=$MAXN
for n in $(seq 1 "$K"); do
  run_fault "alloc $n" NCS_FAULT_FN=alloc NCS_FAULT_N=$n
  run_fault "allocs $n.." NCS_FAULT_FN=alloc NCS_FAULT_N=$n NCS_FAULT_PERSIST=1
done
# The same with 8 threads calling NCCL: their per-thread buffers are allocated on the job's
# threads, from inside the shim.
fault_wait
JOBARGS="2 threads=8,2000"
run_job "$T/base" -- "$FJOB" $JOBARGS
rm -f "$T/stats"
run_job "$T/count" NCCLSCOPE_DIR="$T/count-traces2" NCCLSCOPE_FLUSH_MS=10 NCS_FAULT_STATS="$T/stats" \
  NCS_FAULT_FN=alloc NCS_FAULT_N=0 LD_PRELOAD="$FAULTLIB $SHIM" -- "$FJOB" $JOBARGS
K2=$(od -An -t u8 -N 8 "$T/stats" 2>/dev/null | tr -d ' ')
K2=${K2:-0}
[ "$K2" -gt "$K" ] && pass "fault alloc: threaded job: $K2 allocations from the shim" \
  || fail "fault alloc: threaded job makes no more shim allocations ($K2) than the single-threaded one ($K)"
[ "$K2" -gt "$MAXN" ] && K2=$MAXN
for n in $(seq 1 "$K2"); do
  run_fault "threads alloc $n" NCS_FAULT_FN=alloc NCS_FAULT_N=$n
  run_fault "threads allocs $n.." NCS_FAULT_FN=alloc NCS_FAULT_N=$n NCS_FAULT_PERSIST=1
done
fault_wait
K="$K+$K2"
echo "# figures: alloc fault runs=$runs injections=$injected jobs_changed=$changed traces_unreadable=$unreadable traces_with_drops=$dropped_seen eligible_calls=$K"
[ $injected -gt 0 ] && pass "fault alloc: $injected failures injected over $runs runs" || fail "fault alloc: nothing was injected"
