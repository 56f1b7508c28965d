#!/usr/bin/env bash
# test_device_clock.sh — the doubles' simulated device clock (docs/DOUBLES.md, "The device
# clock"): GPU figures follow the model, not the machine's load. ddp_job (4 ranks, overlapped,
# behind its start line) on a simulated 8x H100 NVSwitch box, traced, once on the machine as it
# is and once beside busy loops on every core (bounded, killed after). The truth is the link
# model's stated figures (tests/doubles/include/nccl_double.h, docs/REFERENCE-FIGURES.md),
# written out here: NVLink 4, 18 links x 25 GB/s x 370/450 = 370 GB/s busbw, latency 6 us + 2 us
# per ring step; SHM (NCCL_P2P_DISABLE=1) on PCIe Gen5 x16: 63 x 28/63 = 28 GB/s, 7 + 2.5 us per
# step. A kernel lasts lat + S x factor / busbw (nccl-tests' S and factor). Checked in each run:
# every NCCL kernel's mean duration per operation and size (KERNEL records, 32 ns resolution)
# and every operation's busbw per size (GPU_TIME records, 256 ns resolution) within 1% of the
# model; compute kernels their declared 24 x 1001 us; the loaded run's figures within 1% of the
# other run's. A step of 1001 us (not 1000) moves the kernels' phase against the 256 ns grid of
# stored GPU times from step to step, so a mean over the steps does not carry one rounding. A
# busbw row comes from its size's median GPU time, which is one stored duration: the whole
# duration of a rounded start and end, the truth's floor or ceiling on that grid. So a busbw
# row may also miss by less than one grid step (256 ns) in its time (a 32 KiB Send's 8.1 us:
# up to 3.2 %), and two runs' rows by one step; which of the two the median lands on depends on
# the kernels' phases, which the load moves (1.24 % seen under make tsan).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
if [ ! -x "$J/ddp_job" ] || [ ! -x "$NCS" ] || [ ! -f "$SHIM" ]; then skip "device clock: not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "device clock: python3 missing"; exit 0; fi
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
unset NCCLDOUBLE_LAT_US NCCLDOUBLE_BW_GBPS

run_job() { # DIR [ENV=VAL...]
  local d=$1; shift
  env "$@" NCCLSCOPE_DIR="$d" LD_PRELOAD="$SHIM$SAN_PRELOAD" \
    bash "$ROOT/tests/jobs/launch.sh" 4 "$J/ddp_job" --steps 24 --compute-us 1001 --overlap --ahead 64 \
    >"$d.out" 2>"$d.err"
}

# Compares a report's GPU figures with the model (and with another report): prints one line
# per mismatch and a last line "checked N worst X%".
cmp_model() { # REPORT.json BUSBW BASE_US STEP_US [OTHER.json]
  python3 - "$@" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1])); bw, base, step = map(float, sys.argv[2:5])
other = json.load(open(sys.argv[5])) if len(sys.argv) > 5 else None
n = 4
# op: (ring steps, S x factor per byte of the size row; the size row is S)
shape = {"AllReduce": (2 * (n - 1), 2.0 * (n - 1) / n), "AllGather": (n - 1, (n - 1) / n),
         "ReduceScatter": (n - 1, (n - 1) / n), "Broadcast": (n - 1, 1.0), "Send": (1, 1.0),
         "Recv": (1, 1.0)}
def model_ns(op, S):
    st, f = shape[op]
    return (base + step * st) * 1e3 + S * f / bw
bad, count, worst, worst_name = [], 0, 0.0, ""
GRID_NS = 256  # the stored GPU_TIME resolution (docs/FORMAT.md)
def near(name, got, want, bytes_ns=0.0):
    # bytes_ns > 0: got and want are busbw (GB/s) of a row whose time is bytes_ns / busbw ns; it
    # also passes when that time is within one grid step of the wanted time (the header says why)
    global count, worst
    count += 1
    e = abs(got - want) / want
    global worst_name
    if e > worst: worst_name = name
    worst = max(worst, e)
    if e > 0.01 and not (bytes_ns > 0 and got > 0 and abs(bytes_ns / got - bytes_ns / want) < GRID_NS):
        bad.append(f"{name}: got {got:.6g} want {want:.6g}")
seen = set()
for r in rep["ranks"]:
    rk = r["rank"]
    for op, o in r["ops"].items():
        if op not in shape: continue
        for z in o.get("sizes", []):
            S = z["bytes_min"]
            seen.add(op)
            near(f"rank {rk} {op} {S} B busbw", z["busbw_gbps"], S * shape[op][1] / model_ns(op, S), S * shape[op][1])
    g = r["gpu_time"]
    for op, o in g["ops"].items():
        if op not in shape: continue
        for z in o.get("sizes", []):  # kernel rows are sized by this rank's bytes, not S
            S = z["bytes_min"] * (n if op in ("AllGather", "ReduceScatter") else 1)
            near(f"rank {rk} {op} {S} B kernel", z["time_s"] / z["kernels"] * 1e9, model_ns(op, S))
    near(f"rank {rk} compute", g["compute_s"], 24 * 1.001e-3)
if other:
    ob = {(r["rank"], op, z["bytes_min"]): z["busbw_gbps"] for r in other["ranks"]
          for op, o in r["ops"].items() if op in shape for z in o.get("sizes", [])}
    for r in rep["ranks"]:
        for op, o in r["ops"].items():
            for z in o.get("sizes", []):
                k = (r["rank"], op, z["bytes_min"])
                if k in ob: near(f"rank {k[0]} {op} {k[2]} B busbw vs the other run", z["busbw_gbps"], ob[k], k[2] * shape[op][1])
                elif op in shape: bad.append(f"{k}: not in the other run")
for op in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send"):
    if op not in seen: bad.append(f"{op}: no sized GPU figures in the report")
for b in bad[:12]: print(b)
print(f"checked {count} worst {100 * worst:.3f}% ({worst_name})")
EOF
}

one() { # NAME REPORT BUSBW BASE STEP [OTHER]
  local name=$1; shift
  cmp_model "$@" >"$T/cmp.txt" 2>&1
  local last; last=$(tail -1 "$T/cmp.txt")
  check "$name ($last)" test "$(wc -l <"$T/cmp.txt")" -eq 1 -a -n "$(grep -E '^checked [1-9]' "$T/cmp.txt")"
  [ "$(wc -l <"$T/cmp.txt")" -eq 1 ] || sed 's/^/    /' "$T/cmp.txt" | head -12
}

run_job "$T/idle"
check_eq "device clock: ddp_job under the shim succeeds" 1 "$(grep -c 'all results correct' "$T/idle.out")"
"$NCS" report --json "$T/idle" >"$T/idle.json" 2>/dev/null
one "device clock: NVSwitch run: kernels and busbw per size = the model (370 GB/s, 6+2 us/step) within 1% (busbw rows: or one 256 ns step)" \
  "$T/idle.json" 370 6 2

# the same job beside a busy loop per core and two more (bounded by timeout, killed after)
loops=()
for i in $(seq $(( $(nproc) + 2 ))); do timeout 600 bash -c 'while :; do :; done' & loops+=($!); done
run_job "$T/load"
for p in "${loops[@]}"; do kill "$p" 2>/dev/null; done
wait "${loops[@]}" 2>/dev/null
check_eq "device clock: ddp_job under load succeeds" 1 "$(grep -c 'all results correct' "$T/load.out")"
"$NCS" report --json "$T/load" >"$T/load.json" 2>/dev/null
one "device clock: loaded run: the model's figures within 1% (busbw rows: or one 256 ns step), and the first run's" \
  "$T/load.json" 370 6 2 "$T/idle.json"

run_job "$T/shm" NCCL_P2P_DISABLE=1
"$NCS" report --json "$T/shm" >"$T/shm.json" 2>/dev/null
check "device clock: NCCL_P2P_DISABLE=1 connects over SHM" grep -q '"SHM' "$T/shm.json"
one "device clock: P2P disabled: SHM's figures (28 GB/s, 7+2.5 us/step) within 1% (busbw rows: or one 256 ns step)" "$T/shm.json" 28 7 2.5
