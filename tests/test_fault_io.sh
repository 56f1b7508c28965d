#!/usr/bin/env bash
# test_fault_io.sh — I/O failures injected into the shim (tests/faults/libfault.so), in the
# style of SQLite's I/O-error tests: a counting run finds K eligible calls (write, pwrite,
# writev, open, openat, mkdir, ... made from inside libncclscope.so), then for each errno
# (EIO, ENOSPC) and each N in 1..K the Nth call fails once, then every call from N on fails;
# then for each N the Nth write is short and the next one fails (a disk filling up).
# Every run: the job's stdout and exit code equal the run without the shim, and every trace
# left behind is readable by ncs_trace_read (complete, or cut short after whole chunks):
# a write failure may lose chunks (counted as dropped) but must not damage the file.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "fault io"; need_decoder "fault io"; need_double "fault io"
fault_build || { fail "fault io: test programs build"; exit 0; }

JOBARGS="30 sleep=2000"
run_job "$T/base" -- "$FJOB" $JOBARGS
[ "$(cat "$T/base.rc")" = 0 ] || { fail "fault io: baseline job fails: $(head -3 "$T/base.out")"; exit 0; }

FAULT_CLASS="fault io"

# Counting run: how many eligible I/O calls the shim makes.
rm -f "$T/stats"
run_job "$T/count" NCCLSCOPE_DIR="$T/count-traces" NCCLSCOPE_FLUSH_MS=10 NCS_FAULT_STATS="$T/stats" \
  NCS_FAULT_FN=io NCS_FAULT_N=0 LD_PRELOAD="$FAULTLIB $SHIM" -- "$FJOB" $JOBARGS
K=$(od -An -t u8 -N 8 "$T/stats" 2>/dev/null | tr -d ' ')
K=${K:-0}
if [ "$K" -lt 3 ]; then
  fail "fault io: only $K I/O calls from the shim seen (the fault library does not reach its I/O?)"
  exit 0
fi
pass "fault io: counting run sees $K I/O calls from the shim"
cmp -s "$T/base.out" "$T/count.out" && pass "fault io: stdout unchanged with the fault library loaded, nothing injected" \
  || fail "fault io: stdout differs with the fault library loaded"
# The loop: every call in turn, once and from then on. Cap K so the test stays fast.
MAXN=${NCS_FAULT_MAXN:-40}
[ "$K" -gt "$MAXN" ] && K=$MAXN
for e in EIO ENOSPC; do
  for n in $(seq 1 "$K"); do
    run_fault "$e call $n" NCS_FAULT_FN=io NCS_FAULT_N=$n NCS_FAULT_ERRNO=$e
    run_fault "$e calls $n.." NCS_FAULT_FN=io NCS_FAULT_N=$n NCS_FAULT_PERSIST=1 NCS_FAULT_ERRNO=$e
  done
done
# A disk that fills up in the middle of a write: the Nth write is short (half written), the
# next fails, later ones succeed (space freed). Leftover bytes of the short write must not
# survive behind a later, smaller chunk. The job makes a burst of calls from 4 threads (big
# chunks), then a few calls (small ones); the job ends cleanly, so the trace must be complete.
fault_wait
JOBARGS="3 threads=4,20000"
run_job "$T/base" -- "$FJOB" $JOBARGS
for n in $(seq 1 8) $(seq 1 8); do
  EXPECT_FINAL=1 run_fault "short write $n then ENOSPC" NCS_FAULT_FN=write,pwrite NCS_FAULT_N=$n NCS_FAULT_SHORT=1 NCS_FAULT_ERRNO=ENOSPC
done
# Failures of write alone (the chunk appends), from the 2nd write on, every write: the job
# runs to the end and the trace says records were lost.
run_fault "every write from 2" NCS_FAULT_FN=write,pwrite,writev,pwritev NCS_FAULT_N=2 NCS_FAULT_PERSIST=1 NCS_FAULT_ERRNO=ENOSPC
fault_wait
echo "# figures: io fault runs=$runs injections=$injected jobs_changed=$changed traces_unreadable=$unreadable traces_with_drops=$dropped_seen eligible_calls=$K"
[ $injected -gt 0 ] && pass "fault io: $injected failures injected over $runs runs" || fail "fault io: nothing was injected"
