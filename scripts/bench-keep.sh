#!/usr/bin/env bash
# bench-keep.sh [BUILD] [ROUNDS] [SECONDS] — disk per rank of a bounded trace (NCCLSCOPE_KEEP,
# issue 29 item 6): rate_job (one rank, one thread, 8-float all-reduces on the doubles, GPU
# timing on) paced at 10k calls/s for SECONDS (default 10), ROUNDS times (default 3), unbounded,
# with NCCLSCOPE_KEEP=30m,2G and with NCCLSCOPE_KEEP=2s (the time bound at work, scaled down:
# its blocks on disk at the end against 2 s of the stream) side by side. Prints the trace's bytes per call
# (min / median / max), the SEGMENT chunk's size (what the aggregates and the repeated records
# cost once per segment) and the arithmetic for a 7-day run at 10k calls/s: unbounded, and the
# bounded file's ceiling (the size bound, or the 30 min window at the measured bytes per call,
# whichever is less), plus the rings file, which is the same in both modes. The bytes per call
# are the doubles' (sizes, GPU times and kernels as the CUDA double makes them); a real job's
# differ with its call mix.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${2:-3}
SECS=${3:-10}
SHIM=$BUILD/libncclscope.so JOB=$BUILD/tests/rate_job NCS=$BUILD/ncclscope
for f in "$SHIM" "$JOB" "$NCS"; do [ -e "$f" ] || { echo "build first: make BUILD=$BUILD" >&2; exit 2; }; done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-keep.XXXXXX")
trap 'rm -rf "$W"' EXIT
RATE=10000 N=$((RATE * SECS))
echo "bounded-trace disk: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg); rate_job $N calls at $RATE/s, $ROUNDS rounds"
plain="" keep="" seg="" win="" drops=""
for ((k = 1; k <= ROUNDS; k++)); do
  NCCLSCOPE_DIR=$W/p$k LD_PRELOAD=$SHIM "$JOB" -n $N -r $RATE >/dev/null 2>&1
  plain+="$(stat -c %s "$W"/p$k/*.ncs | awk -v n=$N '{print $1 / n}') "
  drops+="$("$NCS" dump "$W"/p$k/*.ncs 2>/dev/null | sed -n 's/^== end:.* dropped \([0-9]*\).*/\1/p') "
  NCCLSCOPE_KEEP=30m,2G NCCLSCOPE_DIR=$W/k$k LD_PRELOAD=$SHIM "$JOB" -n $N -r $RATE >/dev/null 2>&1
  keep+="$(stat -c %s "$W"/k$k/*.ncs | awk -v n=$N '{print $1 / n}') "
  # the time bound at work, scaled down: a 2 s window of the same stream, its blocks on disk
  NCCLSCOPE_KEEP=2s NCCLSCOPE_DIR=$W/w$k LD_PRELOAD=$SHIM "$JOB" -n $N -r $RATE >/dev/null 2>&1
  win+="$(stat -c '%b*%B' "$W"/w$k/*.ncs | bc) "
done
# a SEGMENT chunk: a 256 KiB-bounded run rotates; its first kept chunk is one
NCCLSCOPE_KEEP=256K NCCLSCOPE_DIR=$W/s LD_PRELOAD=$SHIM "$JOB" -n 100000 -r 50000 >/dev/null 2>&1
f=$(ls "$W"/s/*.ncs | head -1)
off=$(od -An -t u8 -j 32 -N 8 "$f" | tr -d ' ')
seg=$(od -An -t u4 -j $((off + 4)) -N 4 "$f" | tr -d ' ')
stats() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f %.2f %.2f", a[1], m, a[NR]}'; }
read -r pmin pmed pmax < <(echo "$plain" | stats)
read -r kmin kmed kmax < <(echo "$keep" | stats)
read -r wmin wmed wmax < <(echo "$win" | stats)
printf 'bytes per call, unbounded:          %s / %s / %s (min / median / max); records dropped per round: %s\n' "$pmin" "$pmed" "$pmax" "$drops"
printf 'bytes per call, KEEP=30m,2G:        %s / %s / %s (no rotation in %s s: the same stream)\n' "$kmin" "$kmed" "$kmax" "$SECS"
printf 'KEEP=2s over %s s: bytes on disk %s / %s / %s, against 2 s x %s calls/s x %s bytes = %.0f (a segment is a quarter of the window: up to 2.5 s kept)\n' "$SECS" "$wmin" "$wmed" "$wmax" "$RATE" "$pmed" "$(echo "2 * $RATE * $pmed" | bc)"
printf 'SEGMENT chunk (1 communicator, 1 op, 1 size: one aggregate row): %s bytes of payload + 40 of header\n' "$seg"
awk -v b="$pmed" -v s="$seg" 'BEGIN {
  calls = 7 * 86400 * 10000; win = 30 * 60 * 10000
  printf "7 days at 10k calls/s: %.3g calls\n", calls
  printf "  unbounded trace: %.1f GiB per rank\n", calls * b / 2^30
  w = win * b; if (w > 2 * 2^30) w = 2 * 2^30
  printf "  NCCLSCOPE_KEEP=30m,2G: the 30 min window %.1f MiB (+ up to a quarter more while a segment fills) + one SEGMENT chunk per segment kept; ceiling 2 GiB whatever the length\n", win * b / 2^20
  printf "  aggregates: at most 4096 rows of about 60 bytes, about 240 KiB per SEGMENT chunk at the table'"'"'s limit (here %d bytes)\n", s
  printf "  plus the rings file in both modes (docs/SHIM.md \"Memory\"): about 18 MiB for a rank with one calling thread, removed at a clean exit\n"
}'
