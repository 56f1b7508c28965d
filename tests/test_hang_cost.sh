#!/usr/bin/env bash
# test_hang_cost.sh — what a hang costs (issue 28 item 1): the time lost from the stuck
# collective's start to the end of the traces, per rank, in total and as a share of the run
# (analysis/hang.c time_lost, docs/DOCTOR.md "Time lost"), against the job's own clock:
# hang_job (tests/jobs/hang_job.c) on 2 ranks, rank 1 stops calling before step 5 and rank 0
# waits in step 5's AllReduce; each rank prints the realtime at which it starts and rank 0 when
# step 5 starts (--times); the test notes when it kills the job (kill -9, 3 s after step 5
# began: past report's 2 s hang threshold). Truth: each rank lost kill - step-5 start; the share, the sum of
# that over the sum of kill - each rank's start (the trace begins at the process's first NCCL
# call, just after). The trace's end is its last heartbeat: rank 0's, in flight, at most
# NCCLSCOPE_FLUSH_MS=50 before the kill, so 10% (at least 0.25 s) is allowed; rank 1's, which
# makes no call (nothing in flight: its heartbeats come every NCS_IDLE_BEAT_MS, format.h), up
# to that much before the kill, so the total and the share may be short by rank 1's part of it. Also: the doctor's evidence line, its JSON data.time_lost, and the headline's
# problem line (report --summary and JSON first_problems[].time_lost_s).
source "$(dirname "$0")/lib.sh"
for f in "$SHIM" "$NCS" "$DOUBLES/libnccl.so.2"; do [ -e "$f" ] || { skip "hang_cost: $f not built"; exit 0; }; done
JOB=$BUILD/tests/hang_job
[ -x "$JOB" ] || { skip "hang_cost: $JOB not built"; exit 0; }
command -v jq >/dev/null || { skip "hang_cost: jq not installed"; exit 0; }
export NCCLSCOPE_FLUSH_MS=50
mkdir -p "$T/h"
NCCLSCOPE_DIR="$T/h" LD_PRELOAD="$SHIM$SAN_PRELOAD" setsid bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --stop 1:5 --times \
  >"$T/h.out" 2>"$T/h.err" &
pid=$!
# until rank 0 is in step 5 (a failure cap of 30 s), then 3 s of being stuck (past report's 2 s
# hang threshold; nothing asserts a duration: the job's clock is the truth)
end=$((SECONDS + 30))
until grep -q "^rank 0 step 5 at" "$T/h.err" 2>/dev/null; do [ $SECONDS -ge $end ] && break; sleep 0.1; done
sleep 3
t_kill=$(date +%s%N)
kill -9 -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null
t5=$(sed -n 's/^rank 0 step 5 at \([0-9]*\)$/\1/p' "$T/h.err" | head -1)
[ -n "$t5" ] || { fail "hang_cost: rank 0 never printed step 5"; sed 's/^/    /' "$T/h.err" | tail -5; exit 1; }
"$NCS" doctor --json --hang-after 0.5 "$T/h" >"$T/d.json" 2>/dev/null
"$NCS" doctor --hang-after 0.5 "$T/h" >"$T/d.txt" 2>/dev/null
truth=$(awk -v k="$t_kill" -v s="$t5" 'BEGIN { printf "%.6f", (k - s) / 1e9 }')
starts=$(sed -n 's/^rank [01] start at \([0-9]*\)$/\1/p' "$T/h.err" | tr '\n' ' ')
share=$(echo "$starts" | awk -v k="$t_kill" -v s="$t5" '{ for (i = 1; i <= NF; i++) { l += k - s; r += k - $i } } END { if (NF != 2) print "none"; else printf "%.4f", l / r }')
lost0=$(jq -r '[.verdicts[] | select(.id == "hang") | .data.time_lost.per_rank[] | select(.rank == 0) | .lost_s][0] // "none"' "$T/d.json")
lmax=$(jq -r '[.verdicts[] | select(.id == "hang") | .data.time_lost.per_rank_max_s][0] // "none"' "$T/d.json")
tot=$(jq -r '[.verdicts[] | select(.id == "hang") | .data.time_lost.total_s][0] // "none"' "$T/d.json")
tshare=$(jq -r '[.verdicts[] | select(.id == "hang") | .data.time_lost.share_of_run][0] // "none"' "$T/d.json")
echo "# figures: hang: rank 0 lost $lost0 s (trace), $truth s (job's clock: kill - step 5 start); per rank max $lmax, total $tot process-s; share $tshare (job's clock $share)"
within() { awk -v p="$1" -v f="$2" -v a="$3" 'BEGIN { if (p == "none") exit 1; d = p - f; if (d < 0) d = -d; t = 0.1 * f; if (t < a) t = a; exit !(d <= t) }'; }
if within "$lost0" "$truth" 0.25; then pass "hang_cost: rank 0's time lost within 10% of the job's own clock"
else fail "hang_cost: rank 0 lost $lost0 s in the trace, $truth s by the job's clock"; fi
# both ranks were stuck until the kill: the total is about twice the one, less up to one idle
# heartbeat period of rank 1's (its trace ends at its last heartbeat)
beat=$(awk '$1 == "#define" && $2 == "NCS_IDLE_BEAT_MS" { print $3 / 1000 }' "$ROOT/include/ncclscope/format.h")
# within_short P F A S: P within 10% (at least A) of F, or short of it by up to S more
within_short() { awk -v p="$1" -v f="$2" -v a="$3" -v s="$4" 'BEGIN { if (p == "none") exit 1; t = 0.1 * f; if (t < a) t = a; exit !(p <= f + t && p >= f - t - s) }'; }
if within_short "$tot" "$(awk -v t="$truth" 'BEGIN { print 2 * t }')" 0.5 "$beat"; then pass "hang_cost: total over both ranks within 10% of twice the job's (less up to rank 1's heartbeat period, $beat s)"
else fail "hang_cost: total $tot process-s, job's clock 2 x $truth (rank 1's heartbeat period $beat s)"; fi
# the share, with rank 1's lost and traced time both short by up to the heartbeat period
lo=$(echo "$starts" | awk -v k="$t_kill" -v s="$t5" -v b="$beat" '{ for (i = 1; i <= NF; i++) { l += k - s; r += k - $i } } END { if (NF != 2) print "none"; else printf "%.4f", (l / 1e9 - b) / (r / 1e9 - b) }')
if within_short "$tshare" "$share" 0.05 "$(awk -v a="$share" -v b="$lo" 'BEGIN { print a - b }')"; then pass "hang_cost: share of the run within 10% of the job's clock (or of it with rank 1's trace ending a heartbeat period early: $lo)"
else fail "hang_cost: share $tshare, job's clock $share (rank 1's trace a heartbeat period short: $lo)"; fi
check "hang_cost: doctor's text names the time lost" grep -q "time lost: [0-9.]* s per process from the stuck collective's start" "$T/d.txt"
"$NCS" report --summary "$T/h" >"$T/r.txt" 2>/dev/null
check "hang_cost: the headline's hang line carries its cost" grep -q "PROBLEM hang: .*; lost [0-9.]* s until the traces end ([0-9]*% of the run" "$T/r.txt"
"$NCS" report --json "$T/h" >"$T/r.json" 2>/dev/null
check "hang_cost: headline JSON first_problems[] time_lost_s" jq -e '[.headline.first_problems[] | select(.id == "hang") | .time_lost_s > 0 and .time_lost_total_s > 0 and .time_lost_share > 0] | any' "$T/r.json"
