#!/usr/bin/env bash
# bench-decoder.sh [BUILD] — decoder throughput and peak memory for two trace lengths, side by
# side in one run: the trace reader alone (decoder/io/trace.c with a visitor that sums counts) and
# the whole `ncclscope report` (core summary plus every registered analysis). Traces are a
# steady DDP-like loop of AllReduce CALL records written by the test writer (65536 per chunk).
# Rates are per CPU-second of the process (one core; the machine may be shared). Peak RSS
# comes from getrusage (reader) and /usr/bin/time (report) when present.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
GEN=$BUILD/tests/test_trace_roundtrip
NCS=$BUILD/ncclscope
[ -x "$GEN" ] && [ -x "$NCS" ] || { echo "build first: make BUILD=$BUILD decoder $GEN" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo "decoder benchmark: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
for n in ${NCS_BENCH_SIZES:-2000000 20000000}; do
  "$GEN" --bench-write "$W/t$n.ncs" "$n"
  echo "-- $n CALL records, $(stat -c %s "$W/t$n.ncs") bytes on disk"
  for i in 1 2 3; do printf '   reader: '; "$GEN" --bench-read "$W/t$n.ncs"; done
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "   report: %e s wall, %U s user, peak_rss %M KiB" "$NCS" report "$W/t$n.ncs" >/dev/null
  else
    s=$(date +%s.%N); "$NCS" report "$W/t$n.ncs" >/dev/null; e=$(date +%s.%N)
    echo "   report: $(echo "$e - $s" | bc) s wall (no /usr/bin/time: peak RSS not measured)"
  fi
  rm -f "$W/t$n.ncs"
done
