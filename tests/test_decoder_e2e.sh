#!/usr/bin/env bash
# test_decoder_e2e.sh — the shim, the CPU doubles and the decoder together: the DDP-shaped job
# (tests/jobs/ddp_job.c) on 4 ranks under the shim, then `ncclscope report --json` against the
# job's own ground truth (truth-rank<R>.json): exact calls/count/bytes per rank and op (issue 2),
# GPU timing used, busbw = nccl-tests' formula on the reported sums, and communication time
# against the modelled one (issue 3; the tolerance and why are in BENCHMARKS.md "Decoder").
. "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/ddp_job
LAUNCH=$ROOT/tests/jobs/launch.sh
for f in "$NCS" "$SHIM" "$JOB" "$LAUNCH" "$DOUBLES/libnccl.so.2"; do
  [ -e "$f" ] || { skip "decoder e2e: $f not built"; exit 0; }
done
command -v jq >/dev/null || { skip "decoder e2e: jq not installed (apt-get install jq)"; exit 0; }

run_job() { # run_job NAME ARGS...
  local name=$1; shift
  mkdir -p "$T/$name/truth"
  NCCLSCOPE_DIR=$T/$name/tr LD_PRELOAD=$SHIM timeout 120 bash "$LAUNCH" 4 "$JOB" --truth "$T/$name/truth" "$@" \
    >"$T/$name/out" 2>"$T/$name/err"
}

# 1. exact counts
if ! run_job counts --steps 7 --compute-us 500; then
  fail "decoder e2e: ddp_job failed under the shim"; sed 's/^/    /' "$T/counts/err" | head; exit 1
fi
"$NCS" report --json "$T/counts/tr" >"$T/counts.json" 2>"$T/counts.rerr"; rc=$?
check_eq "e2e: report of 4 clean traces exits 0" 0 "$rc"
check_eq "e2e: 4 ranks reported (0..3)" "0 1 2 3" "$(jq -r '[.ranks[].rank] | map(tostring) | join(" ")' "$T/counts.json")"
bad=0
for r in 0 1 2 3; do
  want=$(jq -S -c '.ops' "$T/counts/truth/truth-rank$r.json")
  got=$(jq -S -c --argjson r "$r" '.ranks[] | select(.rank == $r) | .ops | map_values({calls, count, bytes})' "$T/counts.json")
  if [ "$want" != "$got" ]; then bad=1; echo "    rank $r: truth $want"; echo "    rank $r: report $got"; fi
done
[ $bad = 0 ] && pass "e2e: per-rank calls/count/bytes of every op equal the job's ground truth (4 ranks)" \
             || fail "e2e: per-rank calls/count/bytes differ from the ground truth"

# 2. timing and bandwidth formulas on real traces
# GPU timing (the CUDA double's events); a call whose GPU_TIME the shim could not deliver is
# timed on the host and labelled (seen once in ~20 runs under heavy load: "mixed")
timing=$(jq -r '[.ranks[].timing] | join(" ")' "$T/counts.json")
[ "$timing" = "gpu gpu gpu gpu" ] || echo "    timing per rank: $timing; $(jq -c '[.ranks[] | {rank, timed_gpu, timed_host}]' "$T/counts.json")"
check_eq "e2e: every rank timed on the (CPU double's) GPU for at least 90% of its calls" 0 \
  "$(jq '[.ranks[] | select(.timed_gpu < 0.9 * (.timed_gpu + .timed_host) or .timed_gpu == 0)] | length' "$T/counts.json")"
# busbw = S x factor / time, S from the core's bytes (x n for AllGather/ReduceScatter), n = 4
viol=$(jq -r '[.ranks[] | .ops | to_entries[] | select(.value.timed_calls != null and .value.timed_calls > 0)
  | .key as $op | .value as $v
  | (if ($op == "AllGather" or $op == "ReduceScatter") then $v.bytes * 4 else $v.bytes end) as $S
  | (if $op == "AllReduce" then 1.5 elif ($op == "AllGather" or $op == "ReduceScatter") then 0.75 else 1 end) as $f
  | select((($v.busbw_gbps - $S * $f / $v.time_s / 1e9) | fabs) > 1e-6 * ($v.busbw_gbps | fabs) or $v.timed_calls != $v.calls)
  | "\($op)"] | length' "$T/counts.json")
check_eq "e2e: every op's busbw = S x nccl-tests factor / time, all calls timed" 0 "$viol"

# 3. communication time against the job's model: compute 30 ms, comm ~25.5 ms per step, in
# order on one stream, then overlapped (DDP-style buckets on a communication stream)
for mode in serial overlap; do
  extra=; [ $mode = overlap ] && extra=--overlap
  if ! run_job ratio-$mode --steps 5 --compute-us 30000 --lat-us 3000 --bw-gbps 0.5 $extra; then
    fail "e2e: ddp_job ($mode ratio run) failed"; sed 's/^/    /' "$T/ratio-$mode/err" | head; continue
  fi
  "$NCS" report --json "$T/ratio-$mode/tr" >"$T/ratio.json" 2>/dev/null
  worst=0; line=""; below=0; over=0
  for r in 0 1 2 3; do
    truth_comm=$(jq '.comm_ns_per_step * .steps / 1e9' "$T/ratio-$mode/truth/truth-rank$r.json")
    read -r wall comm steps < <(jq -r --argjson r "$r" '.ranks[] | select(.rank == $r) | "\(.wall_s) \(.comm_s) \(.steps.count)"' "$T/ratio.json")
    err=$(awk -v c="$comm" -v t="$truth_comm" -v w="$wall" 'BEGIN { e = (c - t) / w; if (e < 0) e = -e; printf "%.4f", e }')
    line="$line rank$r: comm $comm s vs model $truth_comm s, error $(awk -v e="$err" 'BEGIN{printf "%.1f", e*100}')% of $wall s;"
    worst=$(awk -v a="$worst" -v b="$err" 'BEGIN { print (b > a) ? b : a }')
    awk -v c="$comm" -v t="$truth_comm" 'BEGIN { exit !(c < 0.99 * t) }' && below=1
    compute=$(jq '.compute_ns_per_step * .steps / 1e9' "$T/ratio-$mode/truth/truth-rank$r.json")
    # serial: compute and communication take turns on one stream, so comm <= wall - compute
    if [ $mode = serial ]; then lim=$(awk -v w="$wall" -v k="$compute" 'BEGIN { print w - 0.99 * k }'); else lim=$wall; fi
    awk -v c="$comm" -v l="$lim" 'BEGIN { exit !(c > l) }' && over=1
    [ "$steps" = 5 ] || fail "e2e ($mode): rank $r: $steps steps found, expected 5"
  done
  echo "    $mode:$line"
  # Each operation on the double lasts at least its modelled time (nccl_double.h) and one
  # rank's operations do not overlap each other, so comm >= model. Serially, the compute
  # (at least its modelled time) and the operations take turns on one stream, so
  # comm <= wall - compute; overlapped, only comm <= wall. Both bounds hold whatever the
  # machine's load. The distance to the model (printed above; goal 2% of wall) is not bounded
  # here: it is the time ranks wait for later peers, which the model leaves out and which
  # grows with the load of the 2 shared cores (5-15% serial, BENCHMARKS.md "Decoder").
  check_eq "e2e ($mode): communication time never below the job's modelled time" 0 "$below"
  if [ $mode = serial ]; then
    check_eq "e2e ($mode): communication time never above the window minus the modelled compute" 0 "$over"
  else
    check_eq "e2e ($mode): communication time never above the window" 0 "$over"
  fi
done
