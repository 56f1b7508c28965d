#!/usr/bin/env bash
# demo.sh BUILD — the main job on the bundled example, no GPU needed: a 4-rank DDP-shaped
# training loop (tests/jobs/ddp_job.c) on the CPU doubles of CUDA, NCCL and NVML, on a
# simulated 8x H100 NVSwitch box (tests/doubles/topos/nvswitch-8x-h100-nv18.txt). The job queues
# its steps ahead of the GPU (--ahead), and the doubles time the GPU with their link model
# (docs/DOUBLES.md), so the GPU figures are the same idle or on a loaded machine.
#  1. traced by the shim through `ncclscope run`, then `report --summary` (the headline: share,
#     exposed communication, transports against the topology, slowest rank) and `doctor`'s status;
#  2. the same job with NCCL_P2P_DISABLE=1 left in the environment — the classic "is NCCL
#     really using NVLink?" case — then `doctor` and `compare` (the CI gate) against run 1;
#  3. an HTML report and a Perfetto timeline of run 2.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
NCS=$BUILD/ncclscope
OUT=${DEMO_DIR:-$ROOT/demo-output}
rm -rf "$OUT"; mkdir -p "$OUT/truth"
export NVMLDOUBLE_TOPO=${NVMLDOUBLE_TOPO:-$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt}
export LD_LIBRARY_PATH=$BUILD/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
JOB=(bash "$ROOT/tests/jobs/launch.sh" 4 "$BUILD/tests/ddp_job" --steps 40 --compute-us 3000
     --overlap --ahead 64 --truth "$OUT/truth")
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s$ %s%s\n' "$B" "$*" "$N"; }

say "ncclscope run -o demo-output/nvlink -- launch.sh 4 ddp_job ...   # 8x H100 NVSwitch box"
"$NCS" run -o "$OUT/nvlink" -- "${JOB[@]}" | tail -1 || exit 1
say "ncclscope report --summary demo-output/nvlink   # the answer; drop --summary for the tables"
"$NCS" report --summary "$OUT/nvlink"
"$NCS" doctor "$OUT/nvlink" >"$OUT/nvlink-doctor.txt"
echo "(ncclscope doctor: exit status $?: 0 healthy, 1 problem found; verdicts in demo-output/nvlink-doctor.txt)"

say "NCCL_P2P_DISABLE=1 ncclscope run -o demo-output/p2p-off -- launch.sh 4 ddp_job ..."
NCCL_P2P_DISABLE=1 "$NCS" run -o "$OUT/p2p-off" -- "${JOB[@]}" | tail -1 || exit 1
say "ncclscope doctor demo-output/p2p-off"
"$NCS" doctor "$OUT/p2p-off"; echo "(doctor exit status $?: 0 healthy, 1 problem found)"
say "ncclscope compare demo-output/nvlink demo-output/p2p-off   # the CI gate"
"$NCS" compare "$OUT/nvlink" "$OUT/p2p-off"; echo "(compare exit status $?: 1 = regression)"

say "ncclscope html demo-output/p2p-off -o demo-output/report.html"
"$NCS" html "$OUT/p2p-off" -o "$OUT/report.html" && echo "HTML report: $OUT/report.html"
say "ncclscope timeline demo-output/p2p-off -o demo-output/timeline.json"
"$NCS" timeline "$OUT/p2p-off" -o "$OUT/timeline.json" &&
  echo "Timeline (open in ui.perfetto.dev or chrome://tracing): $OUT/timeline.json"
exit 0
