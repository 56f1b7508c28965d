#!/usr/bin/env bash
# test_writer_slice.sh — the writer thread asks for the shortest time slice (writer.c,
# writer_short_slice) and changes nothing else: what the kernel shows in /proc for the shim's
# threads and the job's, against a job started with a nice value and one under SCHED_BATCH.
. "$(dirname "$0")/lib.sh"

if ! stub_nccl 2>"$T/stub.err"; then
  fail "writer slice: stub NCCL builds: $(head -3 "$T/stub.err")"
  exit 0
fi
# start LAUNCHER... : rate_job under the shim in the background (1,000 calls on 2 threads,
# then idle 3 s), launched through LAUNCHER (nice, chrt); sets pid once its writer exists
start() {
  local d=$T/tr-$RANDOM i
  mkdir -p "$d"
  env LD_LIBRARY_PATH="$T/stub" NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 \
    LD_PRELOAD="$SHIM$SAN_PRELOAD" "$@" "$BUILD/tests/rate_job" -n 1000 -t 2 -i 3000 >"$d/out" 2>&1 &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    [ -n "$(tid_of ncclscope-wr)" ] && [ -n "$(tid_of ncclscope-fio)" ] && return 0
    sleep 0.05
  done
}
# tid_of NAME: the first thread of $pid named NAME
tid_of() {
  local t
  for t in /proc/"$pid"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] && { basename "$t"; return; }
  done
}
# stat_of TID: "nice policy" from /proc/PID/task/TID/stat (fields 19 and 41, after the name)
stat_of() { sed 's/.*) //' /proc/"$pid"/task/"$1"/stat | awk '{print $17, $39}'; }
# slice_of TID: se.slice from /proc/PID/task/TID/sched (empty when the kernel shows none)
slice_of() { awk '$1 == "se.slice" {print $3}' /proc/"$pid"/task/"$1"/sched 2>/dev/null; }

# the kernel's default slice, as a process without the shim sees it
sleep 3 &
pid=$!
default=$(slice_of "$pid")
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
# custom slices for SCHED_OTHER: Linux 6.12 and later (earlier kernels ignore the request)
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
custom=0
[ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "${kmin%%[!0-9]*}" -ge 12 ]; } && [ -n "$default" ] && custom=1

# nice values are relative to this test's own
own=$(nice)
want=$((own + 7 > 19 ? 19 : own + 7))
start nice -n 7
wr=$(tid_of ncclscope-wr) fio=$(tid_of ncclscope-fio)
if [ -z "$wr" ]; then
  fail "writer slice: the writer thread of a job under nice 7 was not found"
else
  check_eq "writer slice: the job's nice value and policy on the writer and file threads" "$want 0 $want 0 $want 0" \
    "$(stat_of "$pid") $(stat_of "$wr") $(stat_of "$fio")"
  if [ "$custom" = 1 ]; then
    check_eq "writer slice: writer and file thread 0.1 ms, the job's main thread the default ($default ns)" \
      "100000 100000 $default" "$(slice_of "$wr") $(slice_of "$fio") $(slice_of "$pid")"
  else
    skip "writer slice: this kernel ($(uname -r)) has no slice of its own for a SCHED_OTHER thread"
  fi
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# a job under another policy: left alone
if chrt -b 0 true 2>/dev/null; then
  start chrt -b 0
  wr=$(tid_of ncclscope-wr)
  if [ -z "$wr" ]; then
    fail "writer slice: the writer thread of a SCHED_BATCH job was not found"
  else
    check_eq "writer slice: a SCHED_BATCH job's writer keeps its policy (3) and the default slice" \
      "$own 3 ${default:--}" "$(stat_of "$wr") $(s=$(slice_of "$wr"); echo "${s:--}")"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
else
  skip "writer slice: chrt cannot start a SCHED_BATCH process here"
fi
exit 0
