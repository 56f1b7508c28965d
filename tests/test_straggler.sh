#!/usr/bin/env bash
# test_straggler.sh — collectives lined up across ranks (decoder/analysis/straggler.c) in `report`:
# a chosen straggler is found first with the right lateness, a size mismatch and a rank that
# never joined (a hang) are reported, and a clean job has neither. Traces from `synth`, whose
# ground truth is known: rank 5 enters 300 us late on half the collectives.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "straggler: $NCS not built"; exit 0; fi
py() { python3 -c "$1" "$T/r.json" 2>&1; }
"$NCS" synth -o "$T/s" --ranks 16 --hosts 2 --calls 800 --straggler 5:300:0.5 --jitter-us 5 --ntp-us 5 >/dev/null 2>&1
"$NCS" report --json "$T/s" >"$T/r.json" 2>/dev/null
check_eq "straggler: report --json exits 0" 0 "$?"
check_eq "straggler: worst rank first is the straggler" 5 "$(py 'import json,sys; print(json.load(open(sys.argv[1]))["stragglers"][0]["rank"])')"
check_eq "straggler: it was last on about half the collectives" ok "$(py '
import json,sys; s=json.load(open(sys.argv[1]))["stragglers"][0]
print("ok" if 0.4 < s["last_count"]/800 < 0.6 else s)')"
check_eq "straggler: its mean lateness is ~150 us (0.5 x 300, +-15%)" ok "$(py '
import json,sys; s=json.load(open(sys.argv[1]))["stragglers"][0]
print("ok" if 127 < s["mean_late_us"] < 173 else s)')"
check_eq "straggler: the others are late by the jitter and clock error only (< 20 us)" ok "$(py '
import json,sys; s=json.load(open(sys.argv[1]))["stragglers"][1:]
print("ok" if max(x["mean_late_us"] for x in s) < 20 else [x["mean_late_us"] for x in s])')"
check_eq "straggler: wait caused ~ 400 x 300 us x 15 others = 1.8 s (+-10%)" ok "$(py '
import json,sys; s=json.load(open(sys.argv[1]))["stragglers"][0]
print("ok" if 1.62 < s["wait_caused_s"] < 1.98 else s)')"
check_eq "straggler: all 800 collectives complete, none mismatched or missing" "800 0 0" "$(py '
import json,sys; d=json.load(open(sys.argv[1]))
print(d["collectives"]["complete"], len(d["mismatches"]), len(d["missing"]))')"
"$NCS" report "$T/s" >"$T/r.txt" 2>&1
check "straggler: text report has the 'Who is slow' section" grep -q '^Who is slow' "$T/r.txt"
check "straggler: ... naming rank 5 first" sh -c "grep -A3 '^Who is slow' '$T/r.txt' | tail -1 | grep -qE '^ +5 '"

# Size mismatch at seq 100 by rank 3, and a hang: rank 6 never enters seq 300.
# clock check by host name, whatever order the files (and reader threads) meet the hosts in:
# node001's files renamed to sort first, read by one thread and by four
mkdir -p "$T/ho"
for f in "$T"/s/*.ncs; do b=${f##*/}; case $b in *node001*) cp "$f" "$T/ho/a-$b" ;; *) cp "$f" "$T/ho/b-$b" ;; esac; done
hosts_of() { NCCLSCOPE_THREADS=$1 "$NCS" report --json "$T/ho" 2>/dev/null | python3 -c 'import json,sys; print(" ".join(h["host"] for h in json.load(sys.stdin)["clock_check"]))' 2>&1; }
check_eq "straggler: clock check lists hosts by name though node001's files come first (1 thread)" "node000 node001" "$(hosts_of 1)"
check_eq "straggler: the same at 4 threads" "node000 node001" "$(hosts_of 4)"
"$NCS" synth -o "$T/m" --ranks 8 --hosts 1 --calls 400 --mismatch 3:100 --missing 6:300 >/dev/null 2>&1
"$NCS" report --json "$T/m" >"$T/r.json" 2>/dev/null
check_eq "straggler: a hung job's report exits 0 (cut traces are normal input) and lists them as warnings" "0 8" \
  "$? $(python3 -c 'import json,sys; print(sum(w["what"]=="cut" for w in json.load(open(sys.argv[1]))["warnings"]))' "$T/r.json" 2>&1)"
check_eq "straggler: mismatch names rank 3 at seq 100 with both counts" "3 100 524288 262144" "$(py '
import json,sys; m=json.load(open(sys.argv[1]))["mismatches"][0]
print(m["rank"], m["seq"], m["got"]["count"], m["others"]["count"])')"
check_eq "straggler: missing names seq 300, entered by 7 of 8, rank 6 never" "300 7 [6]" "$(py '
import json,sys; m=json.load(open(sys.argv[1]))["missing"][0]
print(m["seq"], m["entered"], m["never_entered"])')"
"$NCS" report "$T/m" >"$T/m.txt" 2>&1
check "straggler: text says MISMATCH and MISSING" sh -c "grep -q 'MISMATCH .*seq 100: rank 3' '$T/m.txt' && grep -q 'MISSING .*seq 300: 7 of 8 .* 6' '$T/m.txt'"

# The mismatch named whatever order the files are read in (they once named rank 0 or null, as
# the reader threads came): rank 0 calls the odd size at seq 120 (synth's truth), files read by
# one thread and by four, three times, and with the files renamed so that rank 7's sorts first.
"$NCS" synth -o "$T/m0" --ranks 8 --hosts 2 --calls 400 --mismatch 0:120 >/dev/null 2>&1
mkdir -p "$T/m0r"
for f in "$T"/m0/*.ncs; do b=${f##*/}; r=${b#synth-r}; r=${r%%-*}; cp "$f" "$T/m0r/$((99999 - 10#$r))-$b"; done
mm_of() { NCCLSCOPE_THREADS=$1 "$NCS" report --json "$2" 2>/dev/null | python3 -c '
import json,sys; print(json.dumps(json.load(sys.stdin)["mismatches"], sort_keys=True))' 2>&1; }
ref=$(mm_of 1 "$T/m0")
check_eq "straggler: rank 0's odd call named: rank 0, seq 120, 1 odd rank, twice the others' count (synth doubles it)" \
  "0 120 1 True" "$(echo "$ref" | python3 -c '
import json,sys; m=json.load(sys.stdin); print(m[0]["rank"], m[0]["seq"], m[0]["ranks_odd"], m[0]["got"]["count"] == 2 * m[0]["others"]["count"]) if len(m)==1 else print(m)' 2>&1)"
same=0
for i in 1 2 3; do for d in m0 m0r; do for t in 1 4; do [ "$(mm_of $t "$T/$d")" = "$ref" ] && same=$((same + 1)); done; done; done
check_eq "straggler: the same mismatch list at 1 and 4 threads, files in rank order or reversed (12 runs)" 12 "$same"
# two ranks, two signatures one rank each: the odd one is the group without the lowest rank
"$NCS" synth -o "$T/m2" --ranks 2 --hosts 1 --calls 200 --mismatch 1:50 >/dev/null 2>&1
check_eq "straggler: 2 ranks, rank 1 odd at seq 50: named at 1 and 4 threads" "1 50 1 50" "$(for t in 1 4; do mm_of $t "$T/m2" | python3 -c '
import json,sys; m=json.load(sys.stdin); print(m[0]["rank"], m[0]["seq"], end=" ")' 2>&1; done | sed 's/ $//')"

# Two communicators: the world and one per host (a CommSplit), 12 ranks on 2 hosts of 6.
"$NCS" synth -o "$T/hc" --ranks 12 --hosts 2 --calls 800 --host-comms --straggler 4:100:0.5 >/dev/null 2>&1
"$NCS" report --json "$T/hc" >"$T/r.json" 2>/dev/null
check_eq "straggler: two communicators: 800 world + 2 hosts x 100 per-host collectives line up, straggler 4 first" \
  "1000 0 0 4" "$(py '
import json,sys; d=json.load(open(sys.argv[1]))
print(d["collectives"]["complete"], d["collectives"]["incomplete"], len(d["mismatches"]), d["stragglers"][0]["rank"])')"

# Only one rank's trace of an 8-rank job: nothing can line up; said (not as collectives
# missing: no hang), and memory stays small (a communicator that cannot be complete with the
# files given keeps a window of at most 4096 open collectives, straggler.h).
"$NCS" synth -o "$T/o" --ranks 8 --hosts 1 --calls 20000 >/dev/null 2>&1
mkdir -p "$T/one" && cp "$T/o"/*r00000* "$T/one/"
"$NCS" report --json "$T/one" >"$T/r.json" 2>/dev/null
check_eq "straggler: one file of an 8-rank communicator: partly traced, nothing lined up or missing, window held to 4096" \
  "1 0 0 0 4096" "$(py '
import json,sys; j=json.load(open(sys.argv[1])); d=j["collectives"]
print(d["communicators_partly_traced"], d["complete"], d["incomplete"], len(j["missing"]), d["peak_open"])')"
"$NCS" report "$T/one" >"$T/one.txt" 2>&1
check "straggler: ... and the text says so" grep -q 'has 8 ranks but only 1 of them are in the 1 trace file' "$T/one.txt"

# End to end on real traces: the DDP-shaped job on the CPU doubles (tests/jobs/ddp_job.c, 4
# ranks, its own ground truth), traced by the shim: every collective it counted lines up
# across the 4 ranks, with no mismatch and nothing missing (the job has no per-rank delay
# option, so who is slowest is not checked here; the synthetic cases above do that).
DDP=$BUILD/tests/ddp_job
if [ -x "$DDP" ] && [ -f "$SHIM" ]; then
  mkdir -p "$T/ddp" "$T/truth"
  NCCLSCOPE_DIR="$T/ddp" LD_PRELOAD="$SHIM" timeout 60 bash "$ROOT/tests/jobs/launch.sh" 4 "$DDP" --steps 10 \
    --truth "$T/truth" >/dev/null 2>"$T/ddp.err"
  check_eq "straggler e2e: the DDP job ran under the shim" 0 "$?"
  want=$(python3 -c '
import json,sys
t=json.load(open(sys.argv[1]))["ops"]
print(sum(v["calls"] for k,v in t.items() if k in ("AllReduce","Broadcast","Bcast","Reduce","AllGather","ReduceScatter","AlltoAll","Gather","Scatter")))' "$T/truth/truth-rank0.json" 2>&1)
  "$NCS" report --json "$T/ddp" >"$T/r.json" 2>/dev/null
  check_eq "straggler e2e: every collective the job counted ($want) lined up across 4 ranks, none mismatched or missing" \
    "$want 0 0 0 4" "$(py '
import json,sys; d=json.load(open(sys.argv[1])); c=d["collectives"]
print(c["complete"], c["incomplete"], len(d["mismatches"]), len(d["missing"]), len(d["stragglers"]))')"
else
  skip "straggler e2e: shim or ddp_job not built"
fi

# One-rank communicators (rate_job: each of its 2 threads inits its own), GPU-timed on the
# doubles: each collective is complete as it opens; every one the job made (-n per thread) counts
# in the rank's row, and lateness, wait and skew are 0 (no other rank). The report takes these
# arrivals as read, not put on the job clock (straggler.h, lines_up 2).
RATE=$BUILD/tests/rate_job
if [ -x "$RATE" ] && [ -f "$SHIM" ]; then
  NCCLSCOPE_DIR="$T/onerank" LD_PRELOAD="$SHIM" timeout 60 bash "$ROOT/tests/jobs/launch.sh" 1 "$RATE" -n 3000 -t 2 \
    >/dev/null 2>"$T/onerank.err"
  check_eq "straggler one-rank: rate_job ran under the shim" 0 "$?"
  "$NCS" report --json "$T/onerank" >"$T/r.json" 2>/dev/null
  check_eq "straggler one-rank: the job's 2 x 3000 collectives complete in one row, GPU-timed, none late or mismatched" \
    "6000 0 1 6000 0.0 0.0 0.0 0 0 gpu" "$(py '
import json,sys; d=json.load(open(sys.argv[1])); c=d["collectives"]; s=d["stragglers"]
print(c["complete"], c["incomplete"], len(s), s[0]["last_count"], s[0]["mean_late_us"], s[0]["wait_caused_s"],
      c["skew_max_us"], len(d["mismatches"]), len(d["missing"]), d["ranks"][0]["timing"])')"
else
  skip "straggler one-rank: shim or rate_job not built"
fi
