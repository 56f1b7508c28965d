#!/usr/bin/env bash
# race-loops.sh [BUILD] [RUNS] [PAR] — the rare failures a single test run cannot show, looped
# (docs/RELIABILITY.md "Races found by looping"). Each loop runs one command RUNS times, PAR at a
# time (the load makes a race likelier), and counts the runs that ended badly:
#   exit      tests/jobs/rate_job.c -n 20000 under the shim, exiting normally (test_rings'
#             "clean exit"): bad = a non-zero exit, a signal, or a rings file left behind
#             (the shim's clean exit removes it)
#   selfref   ddp_job (one rank) with NCCL_DEBUG=INFO NCCL_DEBUG_FILE=/proc/self/fd/N, N = 3..8
#             in turn (test_logcap's last check): bad = a non-zero exit, a timeout (40 s) or a
#             signal. The same runs without the shim (NCCL alone) are the reference: a run
#             that fails there too is the job's, not the shim's.
# SHIM= another libncclscope.so (an older build) to compare. Prints one line per bad run and a
# summary per loop. Exit 0; the figures are the output.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RUNS=${2:-300}
PAR=${3:-3}
SHIM=${SHIM:-$BUILD/libncclscope.so}
for f in "$SHIM" "$BUILD/tests/rate_job" "$BUILD/tests/ddp_job"; do
  [ -e "$f" ] || { echo "race-loops: $f missing (make first)" >&2; exit 2; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-races.XXXXXX")
trap 'rm -rf "$W"' EXIT
export W SHIM BUILD
# a copy: NCCL_DEBUG_FILE=/proc/self/fd/N makes NCCL write its log into whatever N is then, the
# topology file the NVML double reads among them
cp "$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt" "$W/topo.txt"
export LD_LIBRARY_PATH=$BUILD/doubles NVMLDOUBLE_TOPO=$W/topo.txt
export NCCLSCOPE_EXIT_MS=60000
echo "race-loops: $RUNS runs per loop, $PAR at a time, shim $SHIM, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"

# one_exit I: one clean-exit run; prints "bad ..." when it went wrong
one_exit() {
  local d=$W/exit$1 rc
  mkdir -p "$d"
  NCCLSCOPE_DIR=$d/tr LD_PRELOAD=$SHIM "$BUILD/tests/rate_job" -n 20000 >"$d/out" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || ls "$d"/tr/*.rings >/dev/null 2>&1; then echo "bad exit run $1: rc=$rc rings=$(ls "$d"/tr/*.rings 2>/dev/null | wc -l)"; fi
  rm -rf "$d"
}
# one_selfref I SHIMFLAG: one /proc/self/fd/N run (N = 3 + I % 6), with the shim or without
one_selfref() {
  local i=$1 with=$2 n=$((3 + $1 % 6)) d=$W/self$1$2 rc pre=
  mkdir -p "$d"
  [ "$with" = shim ] && pre=$SHIM
  env -u NCCLSCOPE_SAVED_NCCL_DEBUG -u NCCLSCOPE_SAVED_NCCL_DEBUG_FILE NCCL_DEBUG=INFO NCCL_DEBUG_FILE=/proc/self/fd/$n \
    NCCLSCOPE_DIR=$d/tr LD_PRELOAD=$pre timeout -k 2 40 "$BUILD/tests/ddp_job" --steps 1 >"$d/out" 2>&1
  rc=$?
  [ $rc -ne 0 ] && echo "bad selfref-$with run $i (fd $n): rc=$rc"
  rm -rf "$d"
}
export -f one_exit one_selfref

loop() { # NAME CMD: RUNS runs of CMD I, PAR at a time; prints the bad runs and a summary
  local name=$1 cmd=$2 t0=$SECONDS out
  out=$(seq "$RUNS" | xargs -P "$PAR" -I{} bash -c "$cmd {}")
  [ -n "$out" ] && printf '%s\n' "$out"
  echo "$name: $(printf '%s' "$out" | grep -c '^bad') bad of $RUNS runs ($((SECONDS - t0)) s)"
}
loop "exit (rate_job, shim)" one_exit
loop "selfref (ddp_job, NCCL_DEBUG_FILE=/proc/self/fd/3..8, shim)" "one_selfref_shim() { one_selfref \$1 shim; }; one_selfref_shim"
loop "selfref (the same without the shim)" "one_selfref_plain() { one_selfref \$1 plain; }; one_selfref_plain"
