#!/usr/bin/env bash
# demo.sh BUILD — the main job on the bundled example: a 4-rank DDP-shaped training loop on the
# CPU doubles of CUDA and NCCL (tests/jobs/ddp_job.c), traced by the shim through
# `ncclscope run`, then the report and the doctor's verdicts. No GPU needed.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT=${DEMO_DIR:-$ROOT/demo-output}
rm -rf "$OUT"; mkdir -p "$OUT/truth"
NVMLDOUBLE_TOPO=${NVMLDOUBLE_TOPO:-$ROOT/tests/doubles/topos/8x-nvswitch-nv18.txt}
[ -f "$NVMLDOUBLE_TOPO" ] && export NVMLDOUBLE_TOPO
export LD_LIBRARY_PATH=$BUILD/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "\$ ncclscope run -o $OUT/traces -- launch.sh 4 ddp_job --steps 50 --compute-us 3000 --lat-us 50 --bw-gbps 20 --overlap"
"$BUILD/ncclscope" run -o "$OUT/traces" -- \
  bash "$ROOT/tests/jobs/launch.sh" 4 "$BUILD/tests/ddp_job" --steps 50 --compute-us 3000 \
  --lat-us 50 --bw-gbps 20 --overlap --truth "$OUT/truth"
echo
echo "\$ ncclscope report $OUT/traces"
"$BUILD/ncclscope" report "$OUT/traces"
echo
echo "\$ ncclscope doctor $OUT/traces"
"$BUILD/ncclscope" doctor "$OUT/traces" || true
if "$BUILD/ncclscope" help 2>&1 | grep -q '^ *html'; then
  "$BUILD/ncclscope" html "$OUT/traces" -o "$OUT/report.html" && echo "HTML report: $OUT/report.html"
fi
if "$BUILD/ncclscope" help 2>&1 | grep -q '^ *timeline'; then
  "$BUILD/ncclscope" timeline "$OUT/traces" -o "$OUT/timeline.json" && echo "Timeline (open in ui.perfetto.dev or chrome://tracing): $OUT/timeline.json"
fi
