#!/usr/bin/env bash
# test_symmetric.sh — collectives on symmetric memory (NCCL 2.27+: buffers registered with
# ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)) run NCCL 2.28's symmetric kernels,
# ncclSymkDevKernel_* (the NCCL double, nd_symmetric.c, names them as NCCL's
# src/device/symmetric/generate.py does), and ncclscope counts every NCCL kernel as
# communication, whatever its name (decoder/model/knames.h, ncs_is_nccl_kernel). The job
# (tests/jobs/sym_job.c, 2 ranks) checks its own results and says what ran where (truth).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/sym_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -x "$J" ] || [ ! -f "$SHIM" ] || [ ! -x "$NCS" ]; then skip "symmetric: sym_job, shim or decoder not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "symmetric: python3 needed to read report --json"; exit 0; fi
NCCLSCOPE_DIR="$T/ncs" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --truth "$T/truth.json" >"$T/out" 2>"$T/err"
check "sym_job under the shim: results correct (symmetric AllReduce, AllGather, ReduceScatter; plain AllReduce; ncclDevCommCreate/Destroy)" \
  grep -q "all results correct" "$T/out"
f=$(ls "$T"/ncs/*.ncs 2>/dev/null | head -1)
"$NCS" dump "$f" >"$T/dump" 2>/dev/null
names=$(sed -n 's/^KERNEL_NAME id=[0-9]* class=[a-z]* name=//p' "$T/dump" | sort | tr '\n' ' ')
check_eq "kernel names as NCCL 2.28 gives them: symmetric kernels for the windowed buffers, the ordinary one for plain buffers" \
  "ncclDevKernel_AllReduce_Sum_f32_RING_LL ncclSymkDevKernel_AllGather_ST ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f32 ncclSymkDevKernel_ReduceScatter_LD_sum_f32 " \
  "$names"
check_eq "the shim files every one of them as NCCL's (KERNEL_NAME class nccl)" 4 "$(grep -c '^KERNEL_NAME .*class=nccl name=nccl' "$T/dump")"
"$NCS" report --json "$T/ncs" >"$T/r.json" 2>/dev/null
got=$(python3 - "$T/r.json" "$T/truth.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
t = json.load(open(sys.argv[2]))
want = sum(t["symmetric"].values()) + sum(t["plain"].values())
g = r.get("gpu_time", {})
ops = {k: v["kernels"] for k, v in g.get("ops", {}).items()}
print("nccl_kernels %s of %d; ops %s" % (g.get("nccl_kernels"), want, sorted(ops.items())))
EOF
)
check_eq "report: all 4 NCCL kernels are communication, charged to their operations (= the job's truth)" \
  "nccl_kernels 4 of 4; ops [('AllGather', 1), ('AllReduce', 2), ('ReduceScatter', 1)]" "$got"
