#!/usr/bin/env bash
# bench-alwayson.sh [BUILD] [ROUNDS] [STEPS] — the cost of leaving ncclscope on (issue 29 item 6):
# a DDP-shaped job (tests/jobs/ddp_job.c, 2 ranks, STEPS steps of 2 ms compute, default 200) run
# side by side, ROUNDS times each (default 5), arms interleaved in each round: no shim, the shim,
# the shim with live metrics (NCCLSCOPE_METRICS, rewritten every second). The step time is the
# job's own host measurement (--measure: wall_ns from the start of step 0 to the end of the last,
# divided by the steps; the slower rank's). Prints min / median / max per arm and each arm's
# median against no shim, with the load average: on a shared machine the spread is the load's.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${2:-5}
STEPS=${3:-200}
SHIM=$BUILD/libncclscope.so JOB=$BUILD/tests/ddp_job
for f in "$SHIM" "$JOB"; do [ -e "$f" ] || { echo "build first: make BUILD=$BUILD" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "bench-alwayson: needs jq" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-alwayson.XXXXXX")
trap 'rm -rf "$W"' EXIT
echo "always-on cost: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg); ddp_job 2 ranks, $STEPS steps, compute 2 ms"
run() { # ARM ROUND -> prints the step time in us
  local d=$W/$1-$2
  mkdir -p "$d/truth"
  case $1 in
    plain) bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps "$STEPS" --measure --truth "$d/truth" >/dev/null 2>&1 ;;
    shim) NCCLSCOPE_DIR=$d/tr LD_PRELOAD=$SHIM bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps "$STEPS" --measure \
            --truth "$d/truth" >/dev/null 2>&1 ;;
    metrics) NCCLSCOPE_DIR=$d/tr NCCLSCOPE_METRICS=$d/m NCCLSCOPE_METRICS_MS=1000 LD_PRELOAD=$SHIM \
            bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps "$STEPS" --measure --truth "$d/truth" >/dev/null 2>&1 ;;
  esac
  jq -s --argjson s "$STEPS" 'map(.measured.wall_ns) | max / $s / 1000' "$d"/truth/truth-rank*.json 2>/dev/null
}
declare -A T
for ((k = 1; k <= ROUNDS; k++)); do
  for arm in plain shim metrics; do T[$arm]+="$(run $arm $k) "; done
done
stats() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f %.1f %.1f", a[1], m, a[NR]}'; }
read -r _ base _ < <(echo "${T[plain]}" | stats)
printf '%-9s %-30s %s\n' arm "step us: min / median / max" "median vs no shim"
for arm in plain shim metrics; do
  read -r lo med hi < <(echo "${T[$arm]}" | stats)
  printf '%-9s %-30s %+.2f %%\n' "$arm" "$lo / $med / $hi" "$(echo "$med $base" | awk '{print ($1 / $2 - 1) * 100}')"
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
