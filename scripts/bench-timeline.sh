#!/usr/bin/env bash
# bench-timeline.sh [BUILD] — `ncclscope timeline` before and after, side by side in one run:
# wall time, CPU seconds (user + system of the process) and peak RSS, min/median/max over REPS
# rounds (default 3), the sides interleaved within each round, on a job of RANKS ranks x CALLS
# collectives (default 1024 x 5000, GPU times, 8 ranks per host, one straggler; `ncclscope
# synth`), all the machine's cores (NCCLSCOPE_THREADS unset), the JSON written to /dev/null.
# "before" is the decoder built from git ref BASE (unset: only "after" runs) in a scratch
# worktree; "after" is BUILD (default build). The job is written by "before"'s synth when there is
# one (a newer format would not be read by it; the newer reader reads the older formats).
# JOB=DIR reuses a job `ncclscope synth` wrote.
# The load average is printed at the start and the end; also each side's output size on a
# second, unmeasured run (the two must match: the command's output did not change).
# Example: BASE=9b9a23b REPS=3 scripts/bench-timeline.sh build
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BASE=${BASE:-}
REPS=${REPS:-3}; RANKS=${RANKS:-1024}; CALLS=${CALLS:-5000}
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-benchtl.XXXXXX")
cleanup() { [ -n "$BASE" ] && git -C "$ROOT" worktree remove --force "$W/base" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
[ -x "$BUILD/ncclscope" ] || { echo "build first: make BUILD=$BUILD decoder" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time" >&2; exit 2; }
declare -A NCS=([after]=$BUILD/ncclscope)
SIDES=after
if [ -n "$BASE" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE"
  make -s -C "$W/base" BUILD="$W/base/build" -j"$(nproc)" decoder >/dev/null
  NCS[before]=$W/base/build/ncclscope
  SIDES="before after"
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s/%s/%s", v[1], v[int((NR+1)/2)], v[NR]}'; }
col() { awk -v c="$2" '{print $c}' "$1"; }
hosts=$(( RANKS >= 8 ? RANKS / 8 : 1 ))
SYNTH=${NCS[before]:-${NCS[after]}}
if [ -n "${JOB:-}" ]; then ln -s "$(cd "$JOB" && pwd)" "$W/job"; RANKS=$(ls "$W/job/" | grep -c '\.ncs$'); CALLS="(from $JOB)"
else "$SYNTH" synth -o "$W/job" --ranks "$RANKS" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
       --straggler 3:50:0.1 >/dev/null; fi
echo "# bench-timeline: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), before=${BASE:-none}$([ -n "$BASE" ] && echo " ($(git -C "$ROOT" rev-parse --short "$BASE"))") after=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- decoder include || echo '+changes'), REPS=$REPS"
echo "## $RANKS ranks x $CALLS calls ($(du -sLm "$W/job" | cut -f1) MiB in $(ls "$W/job/" | wc -l) files): min/median/max of $REPS (load $(load))"
for side in $SIDES; do
  "${NCS[$side]}" timeline "$W/job" -o "$W/out.json" 2>/dev/null
  echo "$side: output $(stat -c %s "$W/out.json") bytes, $(LC_ALL=C sed 's/,$//' "$W/out.json" | LC_ALL=C sort | md5sum | cut -c1-12) (md5 of its sorted lines)"
  rm -f "$W/out.json"
  : >"$W/$side"
done
for i in $(seq "$REPS"); do
  for side in $SIDES; do
    /usr/bin/time -f '%e %U %S %M' -o "$W/t" "${NCS[$side]}" timeline "$W/job" -o /dev/null 2>"$W/err" \
      || { echo "failed: $side $(head -c 300 "$W/err")" >&2; exit 1; }
    tail -n 1 "$W/t" | awk '{printf "%s %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' >>"$W/$side"
  done
done
printf '%-8s %-22s %-22s %-22s\n' side wall_s cpu_s peak_MiB
for side in $SIDES; do
  printf '%-8s %-22s %-22s %-22s\n' "$side" "$(stats $(col "$W/$side" 1))" "$(stats $(col "$W/$side" 2))" "$(stats $(col "$W/$side" 3))"
done
echo "(load at the end $(load))"
