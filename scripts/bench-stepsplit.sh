#!/usr/bin/env bash
# bench-stepsplit.sh [BUILD] — the per-step analysis' cost on traces the shim wrote (issue 30
# item 3): CPU seconds (user + system; to the microsecond with python3), records per CPU-second and peak RSS of `ncclscope report`,
# min/median/max over REPS rounds (default 3), "before" and "after" interleaved in each round.
#   stub:    rate_job -n CALLS/2 -t 2 -r 1000000 under the shim on a stub libnccl that returns at
#            once (NCCLSCOPE_GPU_TIMING=0, call sites off): CALL records only, one step boundary
#            per call (every call has the same signature): the per-step analysis at its worst;
#   doubles: rate_job -n KCALLS/2 -t 2 -r 200000 under the shim on the doubles (CUDA, NCCL,
#            CUPTI): CALL, GPU_TIME and KERNEL records (KCALLS default 1,000,000; 0 leaves it out);
#   compare: with RANKS > 0 (default 0), `compare` of a synthetic job of RANKS x SCALLS calls
#            (scripts/gen-traces.sh; default 1024 x 100,000) against itself.
# Records are counted by `ncclscope dump` once per trace. "before" is BASE (a git ref, built in a
# scratch worktree: decoder only), or BEFORE (the path of an `ncclscope` built elsewhere); neither:
# only "after" (BUILD, default build) runs. Exit codes 0
# and 1 (findings) of the decoder are accepted. The load average is printed at start and end.
# Example: BASE=e2d46a0 REPS=3 scripts/bench-stepsplit.sh build
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BASE=${BASE:-}; BEFORE=${BEFORE:-}; REPS=${REPS:-3}; CALLS=${CALLS:-5000000}; KCALLS=${KCALLS:-1000000}
RANKS=${RANKS:-0}; SCALLS=${SCALLS:-100000}
for f in "$BUILD/ncclscope" "$BUILD/libncclscope.so" "$BUILD/tests/rate_job"; do
  [ -e "$f" ] || { echo "bench-stepsplit: $f missing (run make first)" >&2; exit 2; }
done
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-stepsplit.XXXXXX")
cleanup() { [ -n "$BASE" ] && git -C "$ROOT" worktree remove --force "$W/base" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
declare -A NCS=([after]=$BUILD/ncclscope)
SIDES=after
if [ -n "$BASE" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE"
  make -s -C "$W/base" BUILD="$W/base/build" -j2 decoder >/dev/null
  NCS[before]=$W/base/build/ncclscope
  SIDES="before after"
elif [ -n "$BEFORE" ]; then
  NCS[before]=$BEFORE
  SIDES="before after"
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "# bench-stepsplit: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), load $(load), before=${BASE:-${BEFORE:-none}} after=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- decoder || echo '+changes'), REPS=$REPS"
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s / %s / %s", v[1], v[int((NR+1)/2)], v[NR]}'; }
# timed OUT CMD...: appends "cpu_s rss_MiB" to OUT. CPU to the microsecond through wait4's
# rusage where python3 is there (a doubles report is ~0.13 s: /usr/bin/time's %U and %S print
# hundredths, a step of ~8 %), else /usr/bin/time's hundredths.
timed() {
  local out=$1; shift
  if command -v python3 >/dev/null; then
    python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)
    err = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.dup2(err, 2)
    os.execvp(sys.argv[2], sys.argv[2:])
_, st, ru = os.wait4(pid, 0)
rc = os.waitstatus_to_exitcode(st)
print("%d %.6f %d" % (rc, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))' "$W/err" "$@" >"$W/t"
  else
    local st=0
    /usr/bin/time -f '%U %S %M' -o "$W/t0" "$@" >/dev/null 2>"$W/err" || st=$?
    tail -n 1 "$W/t0" | awk -v rc=$st '{print rc, $1 + $2, $3}' >"$W/t"
  fi
  local rc; rc=$(awk '{print $1}' "$W/t")
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || { echo "failed ($rc): $* $(head -c 300 "$W/err")" >&2; exit 1; }
  awk '{printf "%.4f %.1f\n", $2, $3 / 1024}' "$W/t" >>"$out"
}
records() { "${NCS[after]}" dump "$1"/*.ncs 2>/dev/null | grep -c -E '^[A-Z_]+ ' || true; }

# the traces
mkdir -p "$W/stubdir"
cc -O2 -shared -fPIC -I"$ROOT/include" -o "$W/stubdir/libnccl.so.2" "$ROOT/tests/faults/stub_nccl.c"
TRACES=stub
LD_LIBRARY_PATH="$W/stubdir" NCCLSCOPE_DIR="$W/stub" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 \
  LD_PRELOAD="$BUILD/libncclscope.so" "$BUILD/tests/rate_job" -n $((CALLS / 2)) -t 2 -r 1000000 >/dev/null
if [ "$KCALLS" != 0 ]; then
  TRACES="stub doubles"
  NCCLSCOPE_DIR="$W/doubles" LD_PRELOAD="$BUILD/libncclscope.so" \
    bash "$ROOT/tests/jobs/launch.sh" 1 "$BUILD/tests/rate_job" -n $((KCALLS / 2)) -t 2 -r 200000 >/dev/null
fi
declare -A RECS
for tr in $TRACES; do
  RECS[$tr]=$(records "$W/$tr")
  echo "trace $tr: $(du -sh "$W/$tr" | cut -f1), ${RECS[$tr]} records ($("${NCS[after]}" dump "$W/$tr"/*.ncs 2>/dev/null | awk '{print $1}' | sort | uniq -c | sort -rn | head -3 | awk '{printf "%s%s %s", s, $2, $1; s=", "}'))"
done
for ((r = 1; r <= REPS; r++)); do
  for tr in $TRACES; do for s in $SIDES; do timed "$W/$tr.$s" "${NCS[$s]}" report "$W/$tr"; done; done
done
for tr in $TRACES; do
  for s in $SIDES; do
    cpu=$(awk '{print $1}' "$W/$tr.$s"); rss=$(awk '{print $2}' "$W/$tr.$s")
    rate=$(for c in $cpu; do awk -v n="${RECS[$tr]}" -v c="$c" 'BEGIN {if (c > 0) printf "%.1f\n", n / c / 1e6}'; done)
    echo "report $tr $s: CPU $(stats $cpu) s; $(stats $rate) M records/CPU-s; peak $(stats $rss) MiB"
  done
done
if [ "$RANKS" != 0 ]; then
  BUILD="$BUILD" bash "$ROOT/scripts/gen-traces.sh" "$W/job" "$RANKS" "$SCALLS" >/dev/null
  for ((r = 1; r <= REPS; r++)); do for s in $SIDES; do timed "$W/cmp.$s" "${NCS[$s]}" compare "$W/job" "$W/job"; done; done
  for s in $SIDES; do
    echo "compare ${RANKS}x$SCALLS $s: CPU $(stats $(awk '{print $1}' "$W/cmp.$s")) s; peak $(stats $(awk '{print $2}' "$W/cmp.$s")) MiB"
  done
fi
echo "# end: load $(load)"
