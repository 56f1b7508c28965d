#!/usr/bin/env bash
# bench-ratio.sh [BUILD] [ROUNDS] — accuracy of `ncclscope report`'s communication time on the
# CPU doubles (issue 3, docs/BENCHMARKS-HISTORY.md "Decoder"): tests/jobs/ddp_job.c --measure under the shim
# on 4 and 8 ranks, serial and --overlap (5 steps, 30 ms compute, link 3 ms + bytes/0.5 GB/s),
# ROUNDS runs each (default 3). Per run: the worst rank's error of comm_s against the job's own
# CUDA-event measurement of its communication (measured.comm_ns), in % of that rank's window
# (the smaller of the decoder's wall_s and the job's measured wall), and against the job's
# model (the model leaves out waiting for peers). Prints the load average at the start of each
# run: the machine may be shared. Exit 1 when a run's worst measured error exceeds 2%.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${2:-3}
NCS=$BUILD/ncclscope SHIM=$BUILD/libncclscope.so JOB=$BUILD/tests/ddp_job
for f in "$NCS" "$SHIM" "$JOB"; do [ -e "$f" ] || { echo "build first: make BUILD=$BUILD" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "bench-ratio: needs jq" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-ratio.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo "ratio accuracy: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); ddp_job --measure, 5 steps, compute 30 ms, link 3 ms + bytes/0.5 GB/s"
printf '%-6s %-8s %-5s %-6s %-34s %-22s %s\n' ranks mode round load "worst vs measured (% of wall)" "worst vs model" "timing"
status=0
for n in 4 8; do
  for mode in serial overlap; do
    extra=; [ $mode = overlap ] && extra=--overlap
    for ((k = 1; k <= ROUNDS; k++)); do
      d=$W/$n-$mode-$k
      mkdir -p "$d/truth"
      load=$(cut -d' ' -f1 /proc/loadavg)
      if ! NCCLSCOPE_DIR=$d/tr LD_PRELOAD=$SHIM timeout 300 bash "$ROOT/tests/jobs/launch.sh" "$n" "$JOB" --truth "$d/truth" \
          --measure --steps 5 --compute-us 30000 --lat-us 3000 --bw-gbps 0.5 $extra >"$d/out" 2>"$d/err"; then
        echo "$n $mode round $k: ddp_job failed"; status=1; continue
      fi
      "$NCS" report --json "$d/tr" >"$d/r.json" 2>/dev/null
      # one line per rank: rank, error vs measured (%), error vs model (%), timing
      for ((r = 0; r < n; r++)); do
        read -r mc mw mo < <(jq -r '"\(.measured.comm_ns / 1e9) \(.measured.wall_ns / 1e9) \(.comm_ns_per_step * .steps / 1e9)"' "$d/truth/truth-rank$r.json")
        read -r wall comm timing < <(jq -r --argjson r "$r" '.ranks[] | select(.rank == $r) | "\(.wall_s) \(.comm_s) \(.timing)"' "$d/r.json")
        awk -v r="$r" -v c="$comm" -v m="$mc" -v w="$wall" -v mw="$mw" -v mo="$mo" -v t="$timing" 'BEGIN {
          dd = (mw > 0 && mw < w) ? mw : w; printf "%d %.3f %.2f %s\n", r, 100 * (c - m) / dd, 100 * (c - mo) / w, t }'
      done >"$d/errs"
      worst=$(awk '{ a = $2 < 0 ? -$2 : $2; if (a >= best) { best = a; line = sprintf("%+.3f%% (rank %d)", $2, $1) } } END { print line }' "$d/errs")
      wmodel=$(awk '{ a = $3 < 0 ? -$3 : $3; if (a >= best) { best = a; line = sprintf("%+.2f%% (rank %d)", $3, $1) } } END { print line }' "$d/errs")
      timings=$(cut -d' ' -f4 "$d/errs" | sort | uniq -c | awk '{ printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1 }')
      printf '%-6s %-8s %-5s %-6s %-34s %-22s %s\n' "$n" "$mode" "$k" "$load" "$worst" "$wmodel" "$timings"
      awk '{ a = $2 < 0 ? -$2 : $2; if (a > 2) bad = 1 } END { exit bad }' "$d/errs" || status=1
    done
  done
done
exit $status
