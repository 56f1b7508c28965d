#!/usr/bin/env bash
# test_profiler_idle.sh — the profiler plugin's drain thread while the job makes no NCCL call
# (shim/profiler.c, "ncclscope-prof"; issue 30 item 2): once it has found nothing for its whole
# back-off it sleeps with no timeout (it was woken 3 times a second, up to 320 ms apart, for as
# long as the job stayed idle), and the first event after the pause wakes it (publish, on the
# job's calling thread). ddp_job, 2 ranks on the NCCL double (which loads the shim as its
# profiler plugin), 3 steps of 2 s of compute each: two pauses per rank without NCCL calls.
# Counted under strace -f, per rank's drain thread: its waits with no timeout, and the wakes
# of its futex word by the rank's own threads other than the writer (a code path: publish
# wakes it only on the first event after it went to sleep for good, or at a quarter of the
# ring, 1024 events, which 3 steps do not reach).
. "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCLSCOPE_PROFILER
if [ ! -x "$J" ] || [ ! -f "$SHIM" ]; then skip "profiler idle: ddp_job or the shim not built"; exit 0; fi
if ! command -v strace >/dev/null; then skip "profiler idle: strace is not installed: the drain thread's waits not counted"; exit 0; fi
if [ -n "$NCS_SANITIZER" ]; then skip "profiler idle: a $NCS_SANITIZER build: not counted under strace"; exit 0; fi

NCCLSCOPE_DIR="$T/tr" timeout 120 strace -f -Y -qq -ttt -o "$T/st" -E LD_PRELOAD="$SHIM" \
  bash "$L" 2 "$J" --steps 3 --compute-us 2000000 >"$T/out" 2>"$T/err"
check_eq "profiler idle: ddp_job runs under strace (exit 0, results correct)" "0 yes" \
  "$? $(grep -q 'all results correct' "$T/out" && echo yes || echo no)"

# per drain thread: "WAITS WAKES": its futex waits with no timeout, and the wakes of its word
# (the address of its waits) by threads other than the shim's writer and drain threads (strace
# names no process: the ranks' words are told apart by address, different in each process)
awk '
  $3 ~ /^<\.\.\./ { next }
  { id = $1; sub(/<.*/, "", id); comm = $1; sub(/^[0-9]*</, "", comm); sub(/>$/, "", comm) }
  comm == "ncclscope-prof" && $3 ~ /^futex\(/ && $4 == "FUTEX_WAIT_PRIVATE," {
    a = $3; sub(/^futex\(/, "", a); sub(/,$/, "", a); word[id] = a
    if ($6 == "NULL") deep[id]++
  }
  $3 ~ /^futex\(/ && $4 == "FUTEX_WAKE_PRIVATE," && comm != "ncclscope-prof" && comm != "ncclscope-wr" {
    a = $3; sub(/^futex\(/, "", a); sub(/,$/, "", a); wakes[a]++
  }
  END { for (d in word) printf "%d %d\n", deep[d] + 0, wakes[word[d]] + 0 }
' "$T/st" | sort >"$T/drainers"
n=$(wc -l <"$T/drainers")
check_eq "profiler idle: a drain thread per rank (2)" 2 "$n"
check_eq "profiler idle: each drain thread sleeps with no timeout while its rank makes no call" "" \
  "$(awk '$1 < 1 { printf "a drain thread with %d such waits; ", $1 }' "$T/drainers")"
check_eq "profiler idle: each is woken by its rank's first call after a pause (a wake of its word by a job thread)" "" \
  "$(awk '$2 < 1 { printf "a drain thread woken %d times by a job thread (%d waits with no timeout); ", $2, $1 }' "$T/drainers")"
