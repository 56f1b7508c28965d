#!/usr/bin/env bash
# kill9-rings.sh [BUILD] [RUNS] — kill -9 at random moments, and count the calls that had
# returned before the kill but are missing from the trace (docs/RELIABILITY.md "kill -9").
#
# Each run: tests/jobs/rate_job.c, 2 threads, 200000 calls each at 200 k calls/s per thread
# (NCCL double, default settings), a counter file updated after every call (a shared mapping,
# so it survives the kill: it holds how many calls of each thread had returned), killed with
# SIGKILL after a random 0..1200 ms (from before the first NCCL call to after the last). Then:
#   returned  the counters' sum (a call that returned just before the kill but whose counter
#             store had not happened yet is not counted: returned can be 1 per thread low)
#   traced    AllReduce CALL records in the trace, as `ncclscope` reads it (with what it
#             recovers from the rings file)
#   dropped   calls the shim counted as dropped (ring full), by reason in the trace
#   lost      returned - traced - dropped, when positive: calls that returned and are nowhere
# Prints one line per run and a summary. SHIM= another libncclscope.so (e.g. an older build) to
# compare. Exit 0; the figures are the output.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RUNS=${2:-100}
SHIM=${SHIM:-$BUILD/libncclscope.so}
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$JOB" "$BUILD/libncsdecoder.a"; do [ -e "$f" ] || { echo "kill9-rings: $f missing (make first)" >&2; exit 2; }; done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-kill9.XXXXXX")
trap 'rm -rf "$W"' EXIT
cc -O2 -I"$ROOT/include" -I"$ROOT/decoder" -o "$W/trace_stats" "$ROOT/tests/faults/trace_stats.c" \
  "$BUILD/libncsdecoder.a" -lzstd -lm -lpthread || exit 2
echo "kill9-rings: $RUNS runs, shim $SHIM, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
runs=0 notrace=0 lost_runs=0 lost_total=0 lost_max=0 returned_total=0 traced_total=0 dropped_total=0 recovered_runs=0
for ((i = 1; i <= RUNS; i++)); do
  d=$W/r$i
  mkdir -p "$d"
  ms=$(( (RANDOM * 32768 + RANDOM) % 1200 ))
  NCCLSCOPE_DIR=$d/tr LD_PRELOAD=$SHIM "$JOB" -n 200000 -t 2 -r 200000 -c "$d/count" >"$d/out" 2>&1 &
  pid=$!
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  runs=$((runs + 1))
  returned=0
  [ -f "$d/count" ] && returned=$(od -An -t u8 -N 16 "$d/count" | awk '{s += $1 + $2} END {print s + 0}')
  f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
  if [ -z "$f" ]; then
    notrace=$((notrace + 1))
    echo "run $i: killed at $ms ms: no trace (returned $returned)"
    [ "$returned" -gt 0 ] && { lost_runs=$((lost_runs + 1)); lost_total=$((lost_total + returned)); }
    rm -rf "$d"; continue
  fi
  s=$("$W/trace_stats" "$f")
  traced=$(awk '$1 == "op" && $2 == "AllReduce" {print $3}' <<<"$s")
  traced=${traced:-0}
  dropped=$(head -1 <<<"$s" | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')
  rec=$(sed -n 's/.*error=.*; \([0-9]*\) calls recovered from.*/\1/p' <<<"$(head -1 <<<"$s")")
  [ -n "$rec" ] && [ "$rec" -gt 0 ] && recovered_runs=$((recovered_runs + 1))
  lost=$((returned - traced - dropped))
  [ "$lost" -lt 0 ] && lost=0
  [ "$lost" -gt 0 ] && lost_runs=$((lost_runs + 1))
  lost_total=$((lost_total + lost))
  [ "$lost" -gt "$lost_max" ] && lost_max=$lost
  returned_total=$((returned_total + returned)); traced_total=$((traced_total + traced)); dropped_total=$((dropped_total + dropped))
  echo "run $i: killed at $ms ms: returned $returned traced $traced dropped $dropped lost $lost recovered ${rec:-0}"
  rm -rf "$d"
done
echo "summary: $runs kills, $notrace without a trace file; calls returned $returned_total, traced $traced_total, dropped (counted) $dropped_total; lost $lost_total in $lost_runs runs (at most $lost_max in one run); $recovered_runs runs needed the rings file"
