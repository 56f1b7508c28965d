#!/usr/bin/env bash
# test_nccl_tests.sh — NVIDIA's nccl-tests, unmodified (../shared/nccl-tests, or NCCL_TESTS_SRC),
# built with nvcc and run on the CUDA, NCCL and NVML doubles under the shim by
# scripts/nccl-tests.sh: every run exits 0 and prints nccl-tests' "# Avg bus bandwidth" line, and
# the calls the traces hold per operation equal nccl-tests' own iteration arithmetic exactly
# (src/common.cu, TimeTest / BenchTime / startColl), counted from what nccl-tests printed:
#
#   calls(op) = k(op) * R * ( W * nwarm + rows * 2 * (1 + N * M) )
#
#   R      ranks in the process: threads (-t) x GPUs per thread (-g); each rank makes its calls
#   k(op)  NCCL calls of op per rank in one startColl: 1 (all_reduce, all_gather, reduce_scatter,
#          broadcast, reduce; alltoall, gather, scatter: ncclAlltoAll/ncclGather/ncclScatter with
#          NCCL >= 2.28), Send 1 + Recv 1 (sendrecv), Send and Recv log2(R) each (hypercube)
#   W      -w warm-up startColls per warm-up size; nwarm = sizes from -b to -e doubling (TimeTest
#          warms up with a step factor of 2 whatever -f says)
#   rows   the size rows nccl-tests printed (one per timed size per -N cycle)
#   2      BenchTime runs out-of-place then in-place
#   1      BenchTime's first startColl, before the timer starts
#   N * M  -n timed iterations of -m aggregated startColls each; -c 0, so no check iteration
#
# With -G G the N * M timed startColls of each BenchTime are captured into a CUDA graph (the
# calls are made once, flagged captured) and the graph is launched G times: captured calls =
# k * R * rows * 2 * N * M, and NCCL kernels run on the GPU = R * (W * nwarm + rows * 2 * (1 + N * G))
# for all_reduce with -m 1 (one kernel per call); the replays found (docs/METRICS.md "Graph
# replays") are k * R * rows * 2 * N * M * G, R * 2 * N * M * G in each printed size's row, none
# unexplained, and the per-size table counts them as timed calls of their size (after the sync,
# 1 + N * M * G a row; warm-up as without -G). -R 1 registers and -R 2 window-registers each
# rank's send and receive buffers once: 2 * R calls. Each COMM record's device is the device
# nccl-tests printed for that rank, whose bus id is the NVML topology's for that GPU.
#
# SKIP when nvcc or the nccl-tests source is missing (a clone without ../shared), under a
# sanitizer build (nccl-tests itself is not instrumented), and when the one-time build does not
# finish in NCS_NCCL_TESTS_BUILD_S (200 s) on a loaded machine: the objects built so far stay in
# BUILD/nccl-tests and the next run goes on from them. The other seven programs are built after
# the first four within 90 s more; each one not built by then is skipped, by name, until a later
# run has built it. alltoallv's calls depend on its size pattern: it is only run, not counted.
source "$(dirname "$0")/lib.sh"
SCRIPT=$ROOT/scripts/nccl-tests.sh
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SRC=${NCCL_TESTS_SRC:-$ROOT/../shared/nccl-tests}
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then skip "nccl-tests: nvcc not found at $CUDA_HOME/bin/nvcc"; exit 0; fi
if [ ! -r "$SRC/src/common.cu" ]; then skip "nccl-tests: no nccl-tests source at $SRC (to run it: NCCL_TESTS_SRC=<a checkout of NVIDIA/nccl-tests> make test)"; exit 0; fi
if [ -n "$NCS_SANITIZER" ]; then skip "nccl-tests: not under $NCS_SANITIZER (nccl-tests is built without it)"; exit 0; fi
command -v python3 >/dev/null || { skip "nccl-tests: python3 needed to read the JSON"; exit 0; }
export BUILD NCCL_TESTS_SRC=$SRC

# refused before anything is built or run
bash "$SCRIPT" "$T/refused" -- all_reduce_perf -c 1 >"$T/refused.out" 2>&1
check_eq "-c 1 refused (data checks need device kernels): exit 2" 2 "$?"
check "... saying why" grep -q "cannot run device code" "$T/refused.out"
check "... and nothing ran" test ! -e "$T/refused/nccl-tests.out"

timeout -k 5 "${NCS_NCCL_TESTS_BUILD_S:-200}" bash "$SCRIPT" --build-only all_reduce sendrecv alltoall hypercube \
  >"$T/build.log" 2>&1
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  skip "nccl-tests: the build did not finish in ${NCS_NCCL_TESTS_BUILD_S:-200} s (load); kept in $BUILD/nccl-tests, the next run goes on"
  exit 0
fi
check_eq "nccl-tests builds (all_reduce, sendrecv, alltoall, hypercube)" 0 "$rc"
[ "$rc" = 0 ] || { sed 's/^/    /' "$T/build.log" | tail -20; exit 0; }

# bytes SIZE: a size as nccl-tests parses it (K, M, G: binary units)
bytes() {
  case $1 in *[kK]) echo $((${1%?} << 10)) ;; *[mM]) echo $((${1%?} << 20)) ;; *[gG]) echo $((${1%?} << 30)) ;; *) echo "$1" ;; esac
}
# nwarm B E: warm-up sizes, B doubling up to E
nwarm() { local s n=0 e; s=$(bytes "$1"); e=$(bytes "$2"); while [ "$s" -le "$e" ]; do n=$((n + 1)); s=$((s * 2)); done; echo $n; }

# verify.py DIR: what the traces say, as "key value" lines: calls.OP, captured, kernels, comm.RANK
cat >"$T/verify.py" <<'EOF'
import json, re, subprocess, sys
ncs, d = sys.argv[1], sys.argv[2]
rep = json.loads(subprocess.run([ncs, "report", "--json", d], capture_output=True, text=True, check=True).stdout)
calls, timed, captured, kernels, replayed, unexplained, rsize = {}, {}, 0, 0, 0, 0, {}
for r in rep["ranks"]:
    for op, v in r["ops"].items():
        calls[op] = calls.get(op, 0) + v["calls"]
        timed[op] = timed.get(op, 0) + (v.get("timed_calls") or 0)
        for z in v.get("sizes") or []:
            if z.get("replayed_calls"):
                rsize[z["bytes_min"]] = rsize.get(z["bytes_min"], 0) + z["replayed_calls"]
    captured += r.get("captured") or 0
    kernels += (r.get("gpu_time") or {}).get("nccl_kernels") or 0
    replayed += (r.get("graph_replays") or {}).get("calls") or 0
    unexplained += (r.get("graph_replays") or {}).get("unexplained_kernels") or 0
for op, n in sorted(calls.items()):
    print("calls.%s %d" % (op, n))
    print("timed.%s %d" % (op, timed[op]))
print("captured", captured)
print("kernels", kernels)
print("replayed", replayed)
print("unexplained", unexplained)
print("replayed_by_size", ",".join("%d:%d" % kv for kv in sorted(rsize.items())) or "none")
for z in rep["sizes"]["rows"]: # the per-size table: "size.OP.BYTES.PLACEMENT timed replayed warmup first"
    print("size.%s.%d.%s %d %d %d %d" % (z["op"], z["bytes"], z["placement"], z["timed"], z["replayed"], z["warmup"], z["first"]))
bus = {g["index"]: g["bus_id"].lower() for h in rep.get("topology", []) for g in h["gpus"]}
dump = subprocess.run([ncs, "dump", d], capture_output=True, text=True, check=True).stdout
for m in re.finditer(r"^COMM comm=\d+ .*? rank=(\d+) nranks=\d+ device=(-?\d+)", dump, re.M):
    dev = int(m.group(2))
    print("comm.%s %d %s" % (m.group(1), dev, bus.get(dev, "?")))
EOF

# run NAME PROGRAM K_SPEC ARGS...: runs nccl-tests, checks its exit, its summary line and the
# arithmetic. K_SPEC: op:k pairs (k "log" = log2 of the ranks). ARGS must give -n -w -b -e;
# -t -g -m -G -N -R as wanted.
run() {
  local name=$1 prog=$2 kspec=$3; shift 3
  local out=$T/$name t=1 g=1 w=1 n=20 m=1 G=0 b=33554432 e=33554432 reg=0 a
  local -a args=("$@")
  local i=0
  while [ $i -lt ${#args[@]} ]; do
    a=${args[$i]}; v=${args[$((i + 1))]:-}
    case $a in -t) t=$v ;; -g) g=$v ;; -w) w=$v ;; -n) n=$v ;; -m) m=$v ;; -G) G=$v ;; -b) b=$v ;; -e) e=$v ;; -R) reg=$v ;; esac
    i=$((i + 1))
  done
  bash "$SCRIPT" "$out" -- "$prog" "$@" >"$T/$name.stdout" 2>"$T/$name.stderr"
  local rc=$?
  check_eq "$name: nccl-tests exits 0" 0 "$rc"
  [ "$rc" = 0 ] || { sed 's/^/    /' "$T/$name.stderr" | tail -20; return; }
  check "$name: prints its # Avg bus bandwidth line" grep -q '^# Avg bus bandwidth *: [0-9]' "$out/nccl-tests.out"
  check "$name: ran without data checks (validation: 0)" grep -q 'validation: 0 ' "$out/nccl-tests.out"
  check_eq "$name: OUT/nccl-tests.out is what nccl-tests printed" "" "$(cmp "$out/nccl-tests.out" "$T/$name.stdout" 2>&1)"
  local rows nw R=$((t * g))
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ ' "$out/nccl-tests.out")
  nw=$(nwarm "$b" "$e")
  python3 "$T/verify.py" "$NCS" "$out" >"$T/$name.facts" 2>"$T/$name.err" || { fail "$name: report --json"; sed 's/^/    /' "$T/$name.err"; return; }
  local per_rank=$((w * nw + rows * 2 * (1 + n * m))) pair op k ktot=0 got
  for pair in $kspec; do
    op=${pair%%:*} k=${pair#*:}
    if [ "$k" = log ]; then k=0; while [ $((1 << k)) -lt "$R" ]; do k=$((k + 1)); done; fi
    ktot=$((ktot + k))
    got=$(awk -v k="calls.$op" '$1 == k { print $2 }' "$T/$name.facts")
    check_eq "$name: $op calls = $k x $R ranks x ($w x $nw warm-up + $rows rows x 2 x (1 + $n x $m))" \
      "$((k * R * per_rank))" "${got:-0}"
  done
  if [ "$G" -gt 0 ]; then
    check_eq "$name: captured calls = $ktot x $R x $rows rows x 2 x $n x $m" "$((ktot * R * rows * 2 * n * m))" \
      "$(awk '$1 == "captured" { print $2 }' "$T/$name.facts")"
    [ "$m" = 1 ] && [ "$ktot" = 1 ] &&
      check_eq "$name: NCCL kernels = $R x ($w x $nw + $rows x 2 x (1 + $n x $G launches))" \
        "$((R * (w * nw + rows * 2 * (1 + n * G))))" "$(awk '$1 == "kernels" { print $2 }' "$T/$name.facts")"
    # the replays (docs/METRICS.md "Graph replays"): each captured call replayed G times
    check_eq "$name: replayed calls = $ktot x $R x $rows rows x 2 x $n x $m x $G launches, no NCCL kernel unexplained" \
      "$((ktot * R * rows * 2 * n * m * G)) 0" "$(awk '$1 == "replayed" { r = $2 } $1 == "unexplained" { u = $2 } END { print r, u }' "$T/$name.facts")"
    if [ "$ktot" = 1 ]; then
      op=${kspec%%:*}
      local want_sz
      want_sz=$(grep -E '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ ' "$out/nccl-tests.out" | awk -v v=$((R * 2 * n * m * G)) '{ printf "%s%s:%d", (NR > 1 ? "," : ""), $1, v }')
      check_eq "$name: each printed size's row of the per-op table holds $R x 2 x $n x $m x $G replayed calls" "$want_sz" \
        "$(awk '$1 == "replayed_by_size" { print $2 }' "$T/$name.facts")"
      [ "$m" = 1 ] && check_eq "$name: every NCCL kernel is a call's or a replay's: $op timed calls = NCCL kernels" \
        "$(awk '$1 == "kernels" { print $2 }' "$T/$name.facts")" "$(awk -v k="timed.$op" '$1 == k { print $2 }' "$T/$name.facts")"
      # the per-size table (docs/METRICS.md "Per-size table"): per printed size and placement, the
      # sync call and the captured calls' replays are one run of 1 + N x M x G calls, timed; the
      # -w calls before it warm-up (out-of-place; the smallest size's first is each rank's first call)
      local sz bad=0 small want got pl
      small=$(grep -E '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ ' "$out/nccl-tests.out" | awk 'NR == 1 { print $1 }')
      for sz in $(grep -E '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ ' "$out/nccl-tests.out" | awk '{ print $1 }'); do
        for pl in out-of-place in-place; do
          if [ "$pl" = in-place ]; then want="$((R * (1 + n * m * G))) $((R * n * m * G)) 0 0"
          elif [ "$sz" = "$small" ]; then want="$((R * (1 + n * m * G))) $((R * n * m * G)) $((R * (w - 1))) $R"
          else want="$((R * (1 + n * m * G))) $((R * n * m * G)) $((R * w)) 0"; fi
          got=$(awk -v k="size.$op.$sz.$pl" '$1 == k { print $2, $3, $4, $5 }' "$T/$name.facts")
          [ "$got" = "$want" ] || { bad=1; echo "    $sz B $pl: timed replayed warm-up first: want $want, got ${got:-no row}"; }
        done
      done
      check_eq "$name: per-size table, each printed size and placement: timed R(1 + NMG), replayed RNMG, warm-up RW out-of-place (smallest: R(W-1), first R)" 0 "$bad"
    fi
  fi
  if [ "$reg" = 1 ]; then
    check_eq "$name: -R 1: CommRegister = 2 x $R" "$((2 * R))" "$(awk '$1 == "calls.CommRegister" { print $2 }' "$T/$name.facts")"
  elif [ "$reg" = 2 ]; then
    check_eq "$name: -R 2: CommWindowRegister = 2 x $R" "$((2 * R))" \
      "$(awk '$1 == "calls.CommWindowRegister" { print $2 }' "$T/$name.facts")"
  fi
  # devices: nccl-tests' "#  Rank  r Group 0 Pid p on host device d [bus] name" lines
  local want have
  want=$(sed -n 's/^#  Rank *\([0-9]*\) .* device *\([0-9]*\) \[\([0-9a-f:]*\)\].*/comm.\1 \2 0000\3.0/p' "$out/nccl-tests.out" | sort)
  have=$(awk '$1 ~ /^comm\./' "$T/$name.facts" | sort)
  check_eq "$name: each communicator's device and NVML bus id as nccl-tests printed them ($R ranks)" "$want" "$have"
}

FAST=(-b 8 -e 64K -f 8)
run plain all_reduce_perf "AllReduce:1" "${FAST[@]}" -n 5 -w 2
run g2-m2-R1 all_reduce_perf "AllReduce:1" "${FAST[@]}" -n 3 -w 1 -g 2 -m 2 -R 1
run t2-g2-G2 all_reduce_perf "AllReduce:1" "${FAST[@]}" -n 3 -w 1 -t 2 -g 2 -G 2
run sendrecv-t2-R2 sendrecv_perf "Send:1 Recv:1" "${FAST[@]}" -n 3 -w 1 -t 2 -R 2
run alltoall-g2-N2 alltoall_perf "AlltoAll:1" "${FAST[@]}" -n 2 -w 1 -g 2 -N 2
run hypercube-g4 hypercube_perf "Send:log Recv:log" "${FAST[@]}" -n 2 -w 1 -g 4

# the other programs nccl-tests ships, each with two ranks
timeout -k 5 "${NCS_NCCL_TESTS_BUILD2_S:-90}" bash "$SCRIPT" --build-only all_gather reduce_scatter broadcast \
  reduce gather scatter alltoallv >"$T/build2.log" 2>&1
for spec in all_gather:AllGather reduce_scatter:ReduceScatter broadcast:Broadcast reduce:Reduce \
            gather:Gather scatter:Scatter alltoallv:; do
  prog=${spec%%:*}_perf op=${spec#*:}
  if [ ! -x "$BUILD/nccl-tests/$prog" ]; then
    skip "nccl-tests: $prog not built yet (within ${NCS_NCCL_TESTS_BUILD2_S:-90} s; the next run goes on)"
  elif [ "$op" = Gather ] || [ "$op" = Scatter ]; then
    # no call for a size whose per-rank count is 0 (GatherRunColl/ScatterRunColl return early):
    # from 64 B every size has one, for 2 ranks
    run "${prog%_perf}-g2" "$prog" "$op:1" -b 64 -e 64K -f 8 -n 2 -w 1 -g 2
  elif [ -n "$op" ]; then
    run "${prog%_perf}-g2" "$prog" "$op:1" "${FAST[@]}" -n 2 -w 1 -g 2
  else
    bash "$SCRIPT" "$T/$prog" -- "$prog" "${FAST[@]}" -n 2 -w 1 -g 2 >"$T/$prog.stdout" 2>&1
    check_eq "$prog -g 2: nccl-tests exits 0" 0 "$?"
    check "$prog -g 2: prints its # Avg bus bandwidth line" grep -q '^# Avg bus bandwidth *: [0-9]' "$T/$prog.stdout"
  fi
done
