#!/usr/bin/env bash
# test_decoder_threads.sh — the decoder's whole output does not depend on how many threads read
# the files: `report`, `report --json`, `report --detail`, `doctor`, `doctor --json` and `html`
# at NCCLSCOPE_THREADS=2 and 4 give byte for byte what 1 thread gives, on synthetic jobs (GPU
# times with a straggler, a missing and a mismatched collective, on 2 hosts; host times only;
# per-host communicators), the test writer's two ranks, all its traces together (its cut trace is
# a second claim to rank 1 of the same communicator: METRICS.md "Two traces claim one rank";
# run three times at each count, since which file a thread finishes first varies), the
# committed shim-traced job, and a
# DDP-shaped job with kernel activity (overlap_job under the shim and the CUPTI double). Files
# are read in parallel and every analysis keeps per-file state merged at the end: a result that
# depended on which file a thread finished first would show here. (The same corpus, before vs
# after a change of the decoder: scripts/decoder-same-output.sh.) html's "decoded in N s" is
# blanked, the one figure that varies between runs.
source "$(dirname "$0")/lib.sh"
GEN=$BUILD/tests/test_trace_roundtrip
if [ ! -x "$NCS" ] || [ ! -x "$GEN" ]; then fail "decoder threads: $NCS or $GEN not built"; exit 0; fi
cd "$T" || exit 1
mkdir fx && "$GEN" --write fx >/dev/null && mkdir fx2 && cp fx/rank0.ncs fx/rank1.ncs fx2/ &&
"$NCS" synth -o s-16 --ranks 16 --hosts 2 --calls 1500 --straggler 5:80:0.2 --missing 3:700 \
  --mismatch 7:1000 --seed 11 --chunk-calls 256 >/dev/null &&
"$NCS" synth -o s-host --ranks 4 --calls 300 --no-gpu --seed 7 >/dev/null &&
"$NCS" synth -o s-comms --ranks 8 --hosts 2 --calls 500 --host-comms --noise 20 --seed 13 >/dev/null ||
  { fail "decoder threads: could not write the jobs"; exit 0; }
jobs="s-16 s-host s-comms fx2 fx"
cp -r "$ROOT/tests/golden/traces/job" golden-job && jobs="$jobs golden-job"
if [ -x "$BUILD/tests/overlap_job" ] && [ -f "$SHIM" ]; then
  mkdir kernels
  if NCCLSCOPE_DIR=$T/kernels NCCLDOUBLE_LAT_US=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" \
       bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/overlap_job" --mode ddp --steps 8 --compute-us 2000 \
       >kernels.out 2>kernels.err && "$NCS" dump kernels/*.ncs 2>/dev/null | grep -q '^RECORD'; then
    jobs="$jobs kernels"
  else fail "decoder threads: the DDP-shaped job with kernel activity did not run"; sed 's/^/    /' kernels.err | head -5; fi
else skip "decoder threads: no shim or overlap_job built: no job with kernel activity"; fi

# out THREADS CMD DIR ARGS...: stdout (html: the page) and the exit code
out() {
  local th=$1 cmd=$2 dir=$3; shift 3
  if [ "$cmd" = html ]; then
    NCCLSCOPE_THREADS=$th timeout -k 2 60 "$NCS" html "$@" "$dir" -o o.html >/dev/null 2>&1; local rc=$?
    sed 's/decoded in [0-9.]* s/decoded in N s/' o.html 2>/dev/null; rm -f o.html; echo "exit $rc"
  else
    NCCLSCOPE_THREADS=$th timeout -k 2 60 "$NCS" "$cmd" "$@" "$dir" 2>&1; echo "exit $?"
  fi
}
for j in $jobs; do
  for c in "report" "report --json" "report --detail" "doctor" "doctor --json" "html"; do
    set -- $c
    out 1 "$1" "$j" "${@:2}" >one
    if ! grep -q . one || [ "$(wc -l <one)" -lt 3 ]; then fail "decoder threads: $c $j: no output at 1 thread"; continue; fi
    bad= counts="1 2 4"
    [ "$j" = fx ] && counts="1 1 2 2 2 4 4 4" # a claim contested between files: a few runs each
    for th in ${counts#1 }; do out "$th" "$1" "$j" "${@:2}" >many; cmp -s one many || { bad="$bad $th"; diff one many | head -6 | sed 's/^/    /'; }; done
    if [ -z "$bad" ]; then pass "decoder threads: $c $j: the same output at threads $counts"
    else fail "decoder threads: $c $j differs at threads$bad from 1 thread"; fi
  done
done
