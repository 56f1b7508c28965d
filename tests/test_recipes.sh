#!/usr/bin/env bash
# test_recipes.sh — the launch recipes of docs/RECIPES.md that can run here, on the CPU doubles:
# the torchrun form (`ncclscope run -o DIR -- LAUNCHER ...`), the per-rank form used with srun and
# mpirun -x (each rank given LD_PRELOAD and NCCLSCOPE_DIR by the launcher) and a directory shared
# by ranks of two simulated hosts. Each: one trace per rank, and `report --json` sees every rank.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "recipes: not built"; exit 0; fi
export LD_LIBRARY_PATH=$DOUBLES NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
JOB=("$BUILD/tests/ddp_job" --steps 3)
ranks_seen() { "$NCS" report --json "$1" 2>/dev/null | jq '[.ranks[]? // empty] | length' 2>/dev/null; }
if ! command -v jq >/dev/null; then skip "recipes: jq not installed"; exit 0; fi

"$NCS" run -o "$T/torchrun" -- bash "$ROOT/tests/jobs/launch.sh" 4 "${JOB[@]}" >"$T/a.out" 2>&1
check_eq "recipes: torchrun form exits 0" 0 "$?"
check_eq "recipes: torchrun form: one trace per rank" 4 "$(ls "$T"/torchrun/*.ncs 2>/dev/null | wc -l)"

bash "$ROOT/tests/jobs/launch.sh" 4 env LD_PRELOAD="$SHIM$SAN_PRELOAD" NCCLSCOPE_DIR="$T/per-rank" "${JOB[@]}" >"$T/b.out" 2>&1
check_eq "recipes: per-rank form (srun / mpirun -x) exits 0" 0 "$?"
check_eq "recipes: per-rank form: one trace per rank" 4 "$(ls "$T"/per-rank/*.ncs 2>/dev/null | wc -l)"

LAUNCH_NODES=2 "$NCS" run -o "$T/shared" -- bash "$ROOT/tests/jobs/launch.sh" 4 "${JOB[@]}" >"$T/c.out" 2>&1
check_eq "recipes: two simulated hosts into one directory exit 0" 0 "$?"
check_eq "recipes: shared directory: one trace per rank" 4 "$(ls "$T"/shared/*.ncs 2>/dev/null | wc -l)"
for d in torchrun per-rank shared; do
  n=$(ranks_seen "$T/$d")
  check_eq "recipes: $d: report --json lists 4 ranks" 4 "$n"
done
