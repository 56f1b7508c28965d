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
# mode, p2_calls' gate); the test says it did.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "metrics gpu full: needs python3"; exit 0; }
[ -x "$BUILD/tests/rate_job" ] || { fail "metrics gpu full: rate_job not built"; exit 0; }
mkdir -p "$T/d"
NCCLSCOPE_DIR="$T/d" LD_PRELOAD="$SHIM" bash "$ROOT/tests/jobs/launch.sh" 1 "$BUILD/tests/rate_job" \
  -n "${NCS_METRICS_GPU_FULL_CALLS:-100000}" -t 2 -r 200000 >"$T/out" 2>&1 || { fail "metrics gpu full: the job failed"; head -5 "$T/out"; exit 0; }
"$NCS" report --json "$T/d" >"$T/r.json" 2>"$T/r.err" || { fail "metrics gpu full: report failed"; head -5 "$T/r.err"; exit 0; }
"$NCS" dump "$T"/d/*.ncs 2>/dev/null | python3 -c '
import json, sys
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[2])
from ivtruth import merge
CAP = 24576
wait, iv, gpu, host, turned, other = {}, [], 0, 0, 0, 0
for line in sys.stdin:
    kind = line.split(" ", 1)[0]
    if kind not in ("CALL", "GPU_TIME"):
        continue
    x = dict(kv.split("=", 1) for kv in line.split()[1:])
    if kind == "CALL":
        if x["op"] != "AllReduce":
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
r = json.load(open(sys.argv[1]))["ranks"]
late = r[0].get("comm_late") or {}
print(len(r), other, turned, gpu, host, tot, *(r[0][k] for k in ("timed_gpu", "timed_host")), round(r[0]["comm_s"] * 1e9),
      late.get("intervals", 0), round(late.get("max_missing_s", 0) * 1e9))
' "$T/r.json" "$ROOT/tests" >"$T/got" 2>"$T/py.err" || { fail "metrics gpu full: truth"; head -5 "$T/py.err"; exit 0; }
read -r nr other turned gpu host tot rgpu rhost rcomm late miss <"$T/got"
check_eq "metrics gpu full: one rank, AllReduce calls only (others: $other)" "1 0" "$nr $other"
check "metrics gpu full: the pending table filled: $turned calls timed on the host at once" test "${turned:-0}" -gt 1000
check_eq "metrics gpu full: calls timed on the GPU / on the host as the rule gives from dump" "$gpu $host" "$rgpu $rhost"
if [ "$late" = 0 ]; then
  check_eq "metrics gpu full: comm_s = the exact union of the chosen intervals (ns)" "$tot" "$rcomm"
else # GPU times that came after the union was committed past them: comm_s low by at most max_missing_s
  check "metrics gpu full: comm_s $rcomm ns <= the exact union $tot <= comm_s + comm_late.max_missing_s $miss ($late late)" \
    test "$rcomm" -le "$tot" -a "$tot" -le $((rcomm + miss + 1))
fi
