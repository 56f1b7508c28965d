#!/usr/bin/env bash
# test_graph_replays.sh — CUDA-graph replays counted and sized (issue 25 item 2, issue 24;
# docs/METRICS.md "Graph replays"): tests/jobs/capture_job.c on 2 ranks under the shim makes one
# plain all-reduce of 8000 B, captures two of 1 MiB into a graph and launches it R times. The
# job's truth (truth-rank<R>.json) is what it launched (calls made, captured calls, replays,
# sizes) and what its "GPU" ran during the replays (NCCL kernels and their summed durations,
# through the CUDA double's truth hook: the moments CUPTI reports). `report --json` must count
# the replays per op (calls, count, bytes), put them in their size row with their kernels'
# device time, include them in comm_s and the headline, and label them; without kernel activity
# or with host timing the report must say they are not counted. No check depends on how long
# anything took: durations are compared with the job's own record of the same run.
# nccl-tests' own -G (replayed calls per size = its arithmetic, none unexplained, the per-size
# table) is checked on the -G runs of tests/test_nccl_tests.sh and test_nccl_tests_sizes.sh.
. "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/capture_job
LAUNCH=$ROOT/tests/jobs/launch.sh
for f in "$NCS" "$SHIM" "$JOB" "$LAUNCH" "$DOUBLES/libnccl.so.2"; do
  [ -e "$f" ] || { skip "graph replays: $f not built"; exit 0; }
done
command -v jq >/dev/null || { skip "graph replays: jq not installed"; exit 0; }

R=4          # replays
C2=131072    # elements of each captured fp64 all-reduce: S = 1 MiB
run_cap() { # run_cap NAME [ENV=VALUE...]
  local name=$1; shift
  mkdir -p "$T/$name/truth"
  env "$@" NCCLSCOPE_DIR="$T/$name/tr" LD_PRELOAD="$SHIM" timeout 120 bash "$LAUNCH" 2 "$JOB" -r $R --count2 $C2 \
    --truth "$T/$name/truth" >"$T/$name/out" 2>"$T/$name/err"
}

if ! run_cap on; then
  fail "graph replays: capture_job under the shim failed"; sed 's/^/    /' "$T/on/err" | head; exit 0
fi
"$NCS" report --json "$T/on/tr" >"$T/on.json" 2>"$T/on.rerr"
"$NCS" report "$T/on/tr" >"$T/on.txt" 2>&1

# the truth's own arithmetic: what each rank launched
for r in 0 1; do
  t=$T/on/truth/truth-rank$r.json
  want=$(jq -r '"\(.replays) \(.captured.AllReduce) \(.captured_count) \(.replay_kernels)"' "$t")
  check_eq "graph replays: rank $r's truth: $R replays of 2 captured all-reduces of $C2 elements, its GPU ran 2 x $R NCCL kernels meanwhile" \
    "$R 2 $C2 $((2 * R))" "$want"
done

# per rank and op: calls made as before; replays counted apart and in the timed calls
bad=0
for r in 0 1; do
  t=$T/on/truth/truth-rank$r.json
  reps=$(jq '.replays * .captured.AllReduce' "$t")
  want=$(jq -c --argjson k "$reps" '{made: .ops.AllReduce, replayed_calls: $k, replayed_count: ($k * .captured_count),
           replayed_bytes: ($k * .captured_count * 8), timed_calls: (.ops.AllReduce.calls - .captured.AllReduce + $k)}' "$t")
  got=$(jq -c --argjson r "$r" '.ranks[] | select(.rank == $r) | .ops.AllReduce |
           {made: {calls, count, bytes}, replayed_calls, replayed_count, replayed_bytes, timed_calls}' "$T/on.json")
  if [ "$want" != "$got" ]; then bad=1; echo "    rank $r: truth $want"; echo "    rank $r: report $got"; fi
done
check_eq "graph replays: per rank, AllReduce calls/count/bytes made, replayed calls/count/bytes and timed calls equal the job's truth (captured x replays)" 0 "$bad"
check_eq "graph replays: per rank, graph_replays says counted, 2 captured, $((2 * R)) kernels and calls, sizes exact, whole replays" \
  "true 2 $((2 * R)) $((2 * R)) exact true,true 2 $((2 * R)) $((2 * R)) exact true" \
  "$(jq -r '[.ranks[] | .graph_replays | "\(.counted) \(.captured) \(.kernels) \(.calls) \(.ops.AllReduce.sizes) \(.ops.AllReduce.whole_replays)"] | join(",")' "$T/on.json")"

# the replays' size row (S = 1 MiB): its calls are the replays, its time their kernels' device
# time as the job's GPU ran them (the trace stores kernel times to 32 ns: 2 x 32 ns a kernel,
# + 5 us as in test_overlap.sh), its busbw nccl-tests' S x 2(n-1)/n over that time
cat >"$T/row.jq" <<'JQ'
.ranks[] | select(.rank == $r) | .ops.AllReduce.sizes[] | select(.bytes_min == 1048576)
JQ
for r in 0 1; do
  t=$T/on/truth/truth-rank$r.json
  kn=$(jq '.replay_kernels' "$t"); tns=$(jq '.replay_kernel_ns' "$t")
  row=$(jq -c --argjson r "$r" -f "$T/row.jq" "$T/on.json")
  check_eq "graph replays: rank $r: the 1 MiB row holds the $((2 * R)) replayed calls (labelled replayed_calls) and nothing else" \
    "$((2 * R)) $((2 * R)) gpu" "$(jq -r '"\(.calls) \(.replayed_calls) \(.timing)"' <<<"$row")"
  check "graph replays: rank $r: the row's time is its replayed kernels' device time as the job's GPU ran them (truth $tns ns, $kn kernels)" \
    jq -e --argjson t "$tns" --argjson k "$kn" '((.time_s * 1e9) - $t | fabs) <= (2 * 32 * $k + 5000)' <<<"$row"
  check "graph replays: rank $r: the row's busbw is S x 2(n-1)/n x calls over the truth's kernel time (2 ranks: factor 1)" \
    jq -e --argjson t "$tns" --argjson k "$kn" \
      '(.busbw_gbps - (1048576 * 1 * .calls / $t) | fabs) <= (1048576 * .calls / $t) * (2 * 32 * $k + 5000) / $t' <<<"$row"
  # comm_s: the plain call's GPU interval (its own row) and the replays' (disjoint: the job
  # synchronised in between) — the replays are in it
  check "graph replays: rank $r: comm_s is the plain call's GPU time plus the replays' kernel time (truth)" \
    jq -e --argjson r "$r" --argjson t "$tns" --argjson k "$kn" \
      '.ranks[] | select(.rank == $r) | ((.comm_s - ([.ops.AllReduce.sizes[] | select(.bytes_min == 4096) | .time_s] | add)) * 1e9 - $t | fabs) <= (2 * 32 * $k + 5000)' "$T/on.json"
done

# the headline: every replayed call of every process, its share computed with them
check_eq "graph replays: headline graph_replays: $((4 * R)) calls (2 x $R on each of 2 ranks) in 2 processes, none uncounted" \
  "$((4 * R)) 2 0" "$(jq -r '.headline.graph_replays | "\(.calls) \(.processes) \(.uncounted_processes)"' "$T/on.json")"
check "graph replays: the headline judges the ranks (replays are calls: 10 over 1 ms) and its median share is one of the ranks' comm_s / wall" \
  jq -e '.headline.comm_share != null and .headline.ranks == 2' "$T/on.json"
check_eq "graph replays: text headline says the replayed calls are counted" 1 \
  "$(grep -c "^  graph replays: $((4 * R)) calls replayed from CUDA graphs in 2 processes, counted above from kernel activity$" "$T/on.txt")"
check_eq "graph replays: text report per rank: captured calls and the replayed calls counted, their share of the timed calls" 2 \
  "$(grep -cE "^  rank [01]: 2 calls captured into CUDA graphs; $((2 * R)) graph-replayed calls counted from kernel activity: $((2 * R)) of $((2 * R + 1)) timed calls, [0-9.]+% of operation time$" "$T/on.txt")"
check_eq "graph replays: text per-size table has a replays column: the 1MiB row holds $((2 * R)) calls, all replays" 1 \
  "$(grep -cE "^  AllReduce +1MiB +$((2 * R)) +$((2 * R)) " "$T/on.txt")"

"$NCS" html "$T/on/tr" -o "$T/on.html" 2>/dev/null
check_eq "graph replays: the HTML headline says the replayed calls are counted" 1 \
  "$(grep -c "CUDA-graph replays: <b>$((4 * R))</b> calls replayed from graphs in 2 processes, counted above from kernel activity" "$T/on.html")"

# without kernel activity: captured calls counted, replays NOT, and the report says so
if run_cap nok NCCLSCOPE_KERNELS=0; then
  "$NCS" report --json "$T/nok/tr" >"$T/nok.json" 2>/dev/null
  "$NCS" report "$T/nok/tr" >"$T/nok.txt" 2>&1
  check_eq "graph replays, NCCLSCOPE_KERNELS=0: per rank not counted, why names kernel activity, 0 replayed, 1 timed call" \
    "false 1 0 1,false 1 0 1" \
    "$(jq -r '[.ranks[] | "\(.graph_replays.counted) \(.graph_replays.why_not | test("kernel activity") | if . then 1 else 0 end) \(.ops.AllReduce.replayed_calls) \(.ops.AllReduce.timed_calls)"] | join(",")' "$T/nok.json")"
  check_eq "graph replays, NCCLSCOPE_KERNELS=0: headline counts 2 processes whose replays are not counted" "0 2" \
    "$(jq -r '.headline.graph_replays | "\(.calls) \(.uncounted_processes)"' "$T/nok.json")"
  check_eq "graph replays, NCCLSCOPE_KERNELS=0: text says so per rank and in the headline" "2 1" \
    "$(grep -c 'rank [01]: 2 calls captured into CUDA graphs, not timed; their replays are NOT counted (no kernel activity' "$T/nok.txt") $(grep -c '^  estimate: 2 processes captured calls into CUDA graphs whose replays are NOT counted (no kernel activity' "$T/nok.txt")"
else
  fail "graph replays: capture_job with NCCLSCOPE_KERNELS=0 failed"; sed 's/^/    /' "$T/nok/err" | head
fi
