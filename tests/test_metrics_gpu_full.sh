#!/usr/bin/env bash
# test_metrics_gpu_full.sh — a GPU-timed trace whose GPU times mostly come late or never: which
# calls report times on the GPU and which on the host, and comm_s, against the rule of
# docs/METRICS.md applied here to the raw records (`ncclscope dump`, in file order): a call
# waits for its GPU_TIME while fewer than 24,576 calls wait (else it is timed on the host at
# once), a GPU_TIME times the waiting call it names (a failed or captured one: its host
# interval), and the calls still waiting when the file ends are timed on the host. comm_s is the
# exact union of the intervals so chosen (when GPU times came after the streaming union had been
# committed past them, JSON's comm_late: low by at most its max_missing_s). The job
# (tests/jobs/rate_job on the doubles, 2 threads) writes its GPU times in runs after its calls
# and drops some: the table fills and most calls are turned away (metrics' common path in GPU
# mode, p2_calls' gate); the test says it did. Then two synthetic jobs (2 x 40,000 calls, past
# what is held while the step boundary is chosen) whose every call has its GPU_TIME: right after
# it (p2_calls' `next`: timed on it without waiting in nx), and with --chunk-calls 500.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "metrics gpu full: needs python3"; exit 0; }
[ -x "$BUILD/tests/rate_job" ] || { fail "metrics gpu full: rate_job not built"; exit 0; }
mkdir -p "$T/d"
NCCLSCOPE_DIR="$T/d" LD_PRELOAD="$SHIM" bash "$ROOT/tests/jobs/launch.sh" 1 "$BUILD/tests/rate_job" \
  -n "${NCS_METRICS_GPU_FULL_CALLS:-100000}" -t 2 -r 200000 >"$T/out" 2>&1 || { fail "metrics gpu full: the job failed"; head -5 "$T/out"; exit 0; }
"$NCS" report --json "$T/d" >"$T/r.json" 2>"$T/r.err" || { fail "metrics gpu full: report failed"; head -5 "$T/r.err"; exit 0; }
# truth FILE JSON RANK: "other turned gpu host tot" by the rule, then the report's "timed_gpu timed_host
# comm_ns late max_missing_ns" for that rank
truth() {
  "$NCS" dump "$1" 2>/dev/null | python3 -c '
import json, sys
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[3])
from ivtruth import merge
CAP = 24576
TIMED = {"AllReduce", "AllGather", "Broadcast", "Reduce", "ReduceScatter", "AlltoAll", "Send", "Recv"}
wait, iv, gpu, host, turned, other = {}, [], 0, 0, 0, 0
for line in sys.stdin:
    kind = line.split(" ", 1)[0]
    if kind not in ("CALL", "GPU_TIME"):
        continue
    x = dict(kv.split("=", 1) for kv in line.split()[1:])
    if kind == "CALL":
        if x["op"] not in TIMED:
            other += x["op"] not in ("GetUniqueId", "CommInitRank", "CommDestroy")
            continue
        if x["rc"] != "0" or x["depth"] != "0" or x["flags"] not in ("0", "4", "8"):
            other += 1
            continue
        s = int(x["t_enter"]); h = (s, s + int(x["duration"]))
        if len(wait) < CAP:
            wait[(x["thread"], x["tcall"])] = h
        else:
            turned += 1; host += 1; iv.append(h)
    elif x["kind"] == "call":
        h = wait.pop((x["thread"], x["ref"]), None)
        if h is None:
            continue
        s, e = int(x["gpu_start"]), int(x["gpu_end"])
        if x["flags"] == "0" and e >= s:
            gpu += 1; iv.append((s, e))
        else:
            host += 1; iv.append(h)
host += len(wait); iv.extend(wait.values())
tot = sum(e - s for s, e in merge(iv))
r = [x for x in json.load(open(sys.argv[1]))["ranks"] if x["file"] == sys.argv[2]][0]
late = r.get("comm_late") or {}
print(other, turned, gpu, host, tot, r["timed_gpu"], r["timed_host"], round(r["comm_s"] * 1e9), late.get("intervals", 0),
      round(late.get("max_missing_s", 0) * 1e9))
' "$2" "$1" "$ROOT/tests"
}
# judge NAME FILE JSON [MIN_TURNED]
judge() {
  local name=$1 got
  got=$(truth "$2" "$3") || { fail "$name: truth"; return; }
  read -r other turned gpu host tot rgpu rhost rcomm late miss <<<"$got"
  check_eq "$name: calls of the simple kind only (others: $other)" 0 "$other"
  [ -n "${4:-}" ] && check "$name: the pending table filled: $turned calls timed on the host at once" test "${turned:-0}" -gt "$4"
  check_eq "$name: calls timed on the GPU / on the host as the rule gives from dump" "$gpu $host" "$rgpu $rhost"
  if [ "$late" = 0 ]; then
    check_eq "$name: comm_s = the exact union of the chosen intervals (ns)" "$tot" "$rcomm"
  else # GPU times that came after the union was committed past them: comm_s low by at most max_missing_s
    check "$name: comm_s $rcomm ns <= the exact union $tot <= comm_s + comm_late.max_missing_s $miss ($late late)" \
      test "$rcomm" -le "$tot" -a "$tot" -le $((rcomm + miss + 1))
  fi
}
f=$(ls "$T"/d/*.ncs)
check_eq "metrics gpu full: one trace file" 1 "$(echo "$f" | wc -l)"
judge "metrics gpu full" "$f" "$T/r.json" 1000
# A synthetic job whose every call has its GPU_TIME right after it (p2_calls' `next`: timed on it
# without waiting) and whose chunks hold their calls' column before their GPU times' (waiting).
"$NCS" synth -o "$T/s" --ranks 2 --calls 40000 --seed 3 >/dev/null 2>&1
"$NCS" synth -o "$T/c" --ranks 2 --calls 40000 --seed 3 --chunk-calls 500 >/dev/null 2>&1
for d in s c; do
  "$NCS" report --json "$T/$d" >"$T/$d.json" 2>/dev/null || { fail "metrics gpu full: report $d failed"; continue; }
  for f in "$T/$d"/*.ncs; do judge "metrics gpu full: synth $d $(basename "$f")" "$f" "$T/$d.json"; done
done
