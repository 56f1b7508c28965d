#!/usr/bin/env bash
# bench-decoder-job.sh [BUILD] — the decoder rows of issue 14, before and after side by side in
# one run, each figure min/median/max over REPS runs (default 3):
#   1. `report` on one trace of ONE CALL records (default 5,000,000; the test writer's DDP-like
#      AllReduce loop, as scripts/bench-decoder.sh): records per CPU-second of the process
#      (user + system time, so one core whatever the machine), beside the bare reader's rate;
#   2. a job of RANKS ranks x CALLS collectives (default 1024 x 100,000, GPU times, 8 ranks per
#      host, `ncclscope synth`): wall time and peak RSS of `report`, `report --json`, `doctor`
#      and `html` on all the machine's cores (NCCLSCOPE_THREADS unset), and their CPU seconds
#      (user + system: the figure a loaded machine distorts least).
# "before" is the decoder built from git ref BASE (default: BASE unset, only "after" runs) in a
# scratch worktree; "after" is BUILD (default build). Outputs of both go to /dev/null; exit
# codes 0 and 1 (findings, damaged input) are accepted, anything else stops the script.
# Example: BASE=79be6c0 REPS=3 scripts/bench-decoder-job.sh build
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${REPS:-3}; ONE=${ONE:-5000000}; RANKS=${RANKS:-1024}; CALLS=${CALLS:-100000}
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-benchjob.XXXXXX")
cleanup() { [ -n "${BASE:-}" ] && git -C "$ROOT" worktree remove --force "$W/base" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
GEN=$BUILD/tests/test_trace_roundtrip
[ -x "$BUILD/ncclscope" ] && [ -x "$GEN" ] || { echo "build first: make BUILD=$BUILD decoder $GEN" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package 'time')" >&2; exit 2; }
declare -A NCS=([after]=$BUILD/ncclscope)
SIDES=after
if [ -n "${BASE:-}" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE"
  make -s -C "$W/base" BUILD="$W/base/build" -j"$(nproc)" decoder >/dev/null
  NCS[before]=$W/base/build/ncclscope
  SIDES="before after"
fi
echo "# bench-decoder-job: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), BASE=${BASE:-none} ($(git -C "$ROOT" rev-parse --short "${BASE:-HEAD}")) vs $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+changes'), load average $(cut -d' ' -f1 /proc/loadavg)"
# stats VALUES...: "min/median/max"
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s/%s/%s", v[1], v[int((NR+1)/2)], v[NR]}'; }
# timed OUT CMD...: runs CMD, appends "wall_s cpu_s rss_MiB" to OUT
timed() {
  local out=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$W/t" "$@" >/dev/null 2>"$W/err" || { rc=$?; [ $rc -eq 1 ] || { echo "failed ($rc): $* $(head -c 300 "$W/err")" >&2; exit 1; }; }
  tail -n 1 "$W/t" | awk '{printf "%s %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' >>"$out"
}
col() { awk -v c="$2" '{print $c}' "$1"; }

echo "## 1. one trace, $ONE CALL records: records per CPU-second (M/s), min/median/max of $REPS"
"$GEN" --bench-write "$W/one.ncs" "$ONE" >/dev/null
recs=$("$GEN" --bench-read "$W/one.ncs" | sed -n 's/^records \([0-9]*\).*/\1/p')
r=(); for i in $(seq "$REPS"); do r+=("$("$GEN" --bench-read "$W/one.ncs" | sed -n 's/.*records\/cpu-s \([0-9.]*\) M.*/\1/p')"); done
echo "reader alone (test_trace_roundtrip --bench-read): $(stats "${r[@]}") M records/s"
for side in $SIDES; do
  : >"$W/one.$side"
  for i in $(seq "$REPS"); do timed "$W/one.$side" "${NCS[$side]}" report "$W/one.ncs"; done
  rates=(); for c in $(col "$W/one.$side" 2); do rates+=("$(echo "$recs / $c / 1000000" | bc -l | xargs printf '%.1f')"); done
  echo "$side: ncclscope report: $(stats "${rates[@]}") M records/s per core; cpu $(stats $(col "$W/one.$side" 2)) s; peak $(stats $(col "$W/one.$side" 3)) MiB"
done
rm -f "$W/one.ncs"

echo "## 2. $RANKS ranks x $CALLS calls on $(nproc) CPUs: wall s, CPU s and peak MiB, min/median/max of $REPS"
hosts=$(( RANKS >= 8 ? RANKS / 8 : 1 ))
"${NCS[after]}" synth -o "$W/job" --ranks "$RANKS" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
  --straggler 3:50:0.1 --chunk-calls 8192 >/dev/null
echo "traces: $(du -sm "$W/job" | cut -f1) MiB in $(ls "$W/job" | wc -l) files"
printf '%-8s %-14s %-22s %-22s %-22s\n' side command wall_s cpu_s peak_MiB
for cmd in report report-json doctor html; do
  for side in $SIDES; do
    : >"$W/r"
    for i in $(seq "$REPS"); do
      case $cmd in
        report) timed "$W/r" "${NCS[$side]}" report "$W/job" ;;
        report-json) timed "$W/r" "${NCS[$side]}" report --json "$W/job" ;;
        doctor) timed "$W/r" "${NCS[$side]}" doctor "$W/job" ;;
        html) timed "$W/r" "${NCS[$side]}" html "$W/job" -o "$W/r.html" ;;
      esac
    done
    printf '%-8s %-14s %-22s %-22s %-22s\n' "$side" "$cmd" "$(stats $(col "$W/r" 1))" "$(stats $(col "$W/r" 2))" "$(stats $(col "$W/r" 3))"
  done
done
