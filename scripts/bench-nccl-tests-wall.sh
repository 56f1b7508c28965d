#!/usr/bin/env bash
# bench-nccl-tests-wall.sh [BUILD] [RUNS] [-- NCCL-TESTS ARGS...] — a benchmark, not a test:
# how far nccl-tests' printed bus bandwidth, a wall-clock figure, lies from ncclscope's, a
# device-clock figure, when nccl-tests runs on the CPU doubles (scripts/nccl-tests.sh; issue 24).
# Runs all_reduce_perf RUNS times (default 5; nccl-tests args default -b 64K -e 64M -f 4 -t 2
# -w 2 -n 10: 2 ranks, a thread each, on the default simulated 8x H100 NVSwitch box) and prints,
# per size (out-of-place), ncclscope's busbw (report --json, sizes rows) over the busbw column
# nccl-tests printed, min / median / max over the runs, with both busbws' medians and the load
# average at the start of each run. On a GPU both would be the GPU's; here nccl-tests' column
# is the CPU's time to move the data through shared memory (slower, and load-dependent), while
# ncclscope's follows the double's link model (370 GB/s busbw, 6 + 2 us per ring step).
# Needs nvcc and the nccl-tests source as scripts/nccl-tests.sh does; python3.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RUNS=${2:-5}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = -- ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(-b 64K -e 64M -f 4 -t 2 -w 2 -n 10)
NCS=$BUILD/ncclscope
command -v python3 >/dev/null || { echo "bench-nccl-tests-wall: needs python3" >&2; exit 2; }
export BUILD
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-ntwall.XXXXXX")
trap 'rm -rf "$W"' EXIT
bash "$ROOT/scripts/nccl-tests.sh" --build-only all_reduce >"$W/build.log" 2>&1 ||
  { echo "bench-nccl-tests-wall: cannot build all_reduce_perf:" >&2; tail -3 "$W/build.log" >&2; exit 2; }
echo "nccl-tests wall vs ncclscope device busbw: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "all_reduce_perf ${ARGS[*]}, $RUNS runs, $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
for ((k = 1; k <= RUNS; k++)); do
  d=$W/run$k
  echo "run $k: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  if ! bash "$ROOT/scripts/nccl-tests.sh" "$d" -- all_reduce_perf "${ARGS[@]}" -J "$d/nt.json" >"$W/run$k.out" 2>&1; then
    echo "run $k failed:" >&2; tail -5 "$W/run$k.out" >&2; exit 1
  fi
  "$NCS" report --json "$d" >"$d/report.json" 2>"$d/report.err" || { cat "$d/report.err" >&2; exit 1; }
done
python3 - "$W" "$RUNS" <<'EOF'
import json, statistics, sys
w, runs = sys.argv[1], int(sys.argv[2])
per = {}   # size -> [(ncclscope busbw, nccl-tests busbw)]
drops = []
for k in range(1, runs + 1):
    nt = json.load(open("%s/run%d/nt.json" % (w, k)))["results"]
    rep = json.load(open("%s/run%d/report.json" % (w, k)))
    drops.append("%d of %d" % (sum(r["dropped"] for r in rep["ranks"]), sum(r["calls"] for r in rep["ranks"])))
    rows = [r for r in rep["sizes"]["rows"] if r["op"] == "AllReduce" and r["placement"] == "out-of-place"]
    for t in nt:
        m = [r for r in rows if r["bytes"] == t["size"]]
        if len(m) == 1 and m[0]["busbw_gbps"] and t["out_of_place"]["bus_bw"] > 0:
            per.setdefault(t["size"], []).append((m[0]["busbw_gbps"], t["out_of_place"]["bus_bw"]))
print("%12s %6s %28s %16s %16s" % ("bytes", "runs", "ratio min / median / max", "ncclscope GB/s", "nccl-tests GB/s"))
for size in sorted(per):
    v = per[size]
    q = sorted(a / b for a, b in v)
    print("%12d %6d %8.2f / %8.2f / %8.2f %16.2f %16.2f" % (size, len(v), q[0], statistics.median(q), q[-1],
          statistics.median(a for a, b in v), statistics.median(b for a, b in v)))
print("records dropped / calls traced, per run: " + ", ".join(drops))
EOF
