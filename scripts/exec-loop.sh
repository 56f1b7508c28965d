#!/usr/bin/env bash
# exec-loop.sh [BUILD] [RUNS] — vfork + exec right after init, many times (issue 25 item 5;
# docs/RELIABILITY.md "exec"). Each run: tests/faults/spawn_job.c `vforkinit /bin/true` under the
# shim (NCCL double): ncclGetUniqueId and ncclCommInitRank (the shim's writer has just started),
# then vfork + execv of /bin/true in the child, then 3 AllReduce and ncclCommDestroy in the
# parent; and, every tenth run, `exec` of itself (`vforkinit`) right after its own calls.
# A run that has not ended within 30 s is a hang (killed, counted). A run is bad when its exit
# code is not 0, or its traces are not what spawn_job's source says (vforkinit: one complete
# trace, 6 calls; exec: two files, 5 calls ended by exec + 6 complete, no .rings file).
# Prints a summary line (runs, hangs, bad) and each bad run; exit 0 when none hung or was bad.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RUNS=${2:-1000}
SHIM=${SHIM:-$BUILD/libncclscope.so}
D=$BUILD/doubles
for f in "$SHIM" "$D/libnccl.so.2" "$BUILD/libncsdecoder.a"; do [ -e "$f" ] || { echo "exec-loop: $f missing (make first)" >&2; exit 2; }; done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-exec.XXXXXX")
trap 'rm -rf "$W"' EXIT
cc -std=c11 -O1 -D_GNU_SOURCE -I"$ROOT/include" -o "$W/spawn_job" "$ROOT/tests/faults/spawn_job.c" \
  -L"$D" -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,"$D" -lpthread || exit 2
cc -O2 -I"$ROOT/include" -I"$ROOT/decoder" -o "$W/trace_stats" "$ROOT/tests/faults/trace_stats.c" \
  "$BUILD/libncsdecoder.a" -lzstd -lm -lpthread || exit 2
echo "exec-loop: $RUNS runs, shim $SHIM, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
runs=0 hangs=0 bad=0 execs=0 t0=$(date +%s)
for ((i = 1; i <= RUNS; i++)); do
  d=$W/r$i
  if ((i % 10 == 0)); then
    mode=exec; execs=$((execs + 1))
    NCCLSCOPE_DIR=$d LD_PRELOAD=$SHIM timeout -k 5 30 "$W/spawn_job" exec "$W/spawn_job" vforkinit /bin/true >"$W/out" 2>&1
  else
    mode=vforkinit
    NCCLSCOPE_DIR=$d LD_PRELOAD=$SHIM timeout -k 5 30 "$W/spawn_job" vforkinit /bin/true >"$W/out" 2>&1
  fi
  rc=$?
  runs=$((runs + 1))
  if [ $rc = 124 ] || [ $rc = 137 ]; then hangs=$((hangs + 1)); echo "run $i ($mode): HUNG"; rm -rf "$d"; continue; fi
  got=
  for f in $(find "$d" -name '*.ncs' | sort); do
    s=$("$W/trace_stats" "$f" | head -1)
    got="$got $(field calls "$s")/$(field final "$s")/$(field truncated "$s")"
  done
  got=$(echo $got | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
  want="6/1/0"; [ $mode = exec ] && want="5/0/0 6/1/0"
  rings=$(find "$d" -name '*.rings' | wc -l)
  if [ $rc != 0 ] || [ "$got" != "$want" ] || [ "$rings" != 0 ]; then
    bad=$((bad + 1)); echo "run $i ($mode): exit $rc, traces [$got] (want [$want]), $rings rings file(s)"
  fi
  rm -rf "$d"
done
echo "exec-loop: $runs runs ($execs with an exec of the image, $((runs - execs)) vfork + exec right after init): $hangs hung, $bad bad, $(( $(date +%s) - t0 )) s"
[ $hangs = 0 ] && [ $bad = 0 ]
