#!/usr/bin/env bash
# test_timeline.sh — `ncclscope timeline` (decoder/render/timeline.c): valid Chrome-trace JSON with
# one track per rank and stream, one duration event per traced call (GPU interval when the
# trace has GPU times, host interval otherwise) with its args, communicator init/destroy as
# instants, times on one clock; and the progress bar (decoder/io/progress.c) only on a terminal.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "timeline: $NCS not built"; exit 0; fi
"$NCS" synth -o "$T/s" --ranks 4 --hosts 2 --calls 200 --chunk-calls 50 >/dev/null 2>&1
"$NCS" timeline "$T/s" -o "$T/t.json" 2>"$T/err"
check_eq "timeline: exits 0" 0 "$?"
out=$(python3 - "$T/t.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
X = [e for e in ev if e["ph"] == "X"]
I = [e for e in ev if e["ph"] == "i"]
procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
a = X[0]["args"]
ok_args = all(k in a for k in ("bytes", "busbw_gbps", "transport", "count", "seq", "timing"))
gpu = all(e["args"]["timing"] == "gpu" for e in X)
# a collective's GPU intervals end together on every rank (the generator makes them end
# within 1 us of each other); on one clock their ends agree within the hosts' realtime error
ends = {}
for e in X:
    ends.setdefault(e["args"]["seq"], []).append(e["ts"] + e["dur"])
spread = max(max(v) - min(v) for v in ends.values())
print(len(X), len(I), len(procs), ok_args, gpu, names[0], "spread_ok" if spread < 25 else spread)
PY
)
check_eq "timeline: 800 duration events, 8 instants, 4 tracks, args, GPU timing, names, ends agree on one clock" \
  "800 8 4 True True rank 0 node000 pid 10000 spread_ok" "$out"
"$NCS" synth -o "$T/h" --ranks 2 --hosts 1 --calls 20 --no-gpu >/dev/null 2>&1
"$NCS" timeline "$T/h" -o "$T/h.json" 2>/dev/null
check_eq "timeline: without GPU times the host interval is used" "host" \
  "$(python3 -c 'import json,sys; print({e["args"]["timing"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"]=="X"}.pop())' "$T/h.json" 2>&1)"
"$NCS" synth -o "$T/x" --ranks 2 --hosts 1 --calls 5 --host-prefix $'ev"il\\\x1b[2J<script>' >/dev/null 2>&1
"$NCS" timeline "$T/x" -o "$T/x.json" 2>/dev/null
check "timeline: hostile host name still gives valid JSON" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any("<script>" in e.get("args",{}).get("name","") for e in d["traceEvents"])' "$T/x.json"
"$NCS" timeline "$T/nonexistent" -o "$T/n.json" >/dev/null 2>&1
check_eq "timeline: a missing path exits 4 (unreadable)" 4 "$?"
# a trace cut in the middle of a chunk (a killed process): normal input, exit 0, said on stderr
f=$(ls "$T/s"/* | head -1); head -c $(( $(stat -c %s "$f") - 100 )) "$f" >"$T/cut.ncs"; cp "$T/s"/*r00001* "$T/"
"$NCS" timeline "$T/cut.ncs" -o "$T/c.json" 2>"$T/c.err"
check_eq "timeline: a cut trace exits 0" 0 "$?"
check "timeline: ... says it was cut" grep -q "cut\|truncated" "$T/c.err"
check "timeline: ... and still writes valid JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/c.json"

# progress bar: never when stderr is not a terminal; drawn on a pseudo-terminal
"$NCS" synth -o "$T/p" --ranks 8 --hosts 1 --calls 200 >/dev/null 2>&1
NCCLSCOPE_PROGRESS=1 "$NCS" timeline "$T/p" -o "$T/p.json" 2>"$T/p.err" >/dev/null
check_eq "progress: no bar when stderr is a file" 0 "$(grep -c 'files' "$T/p.err")"
if command -v script >/dev/null 2>&1; then
  NCCLSCOPE_PROGRESS=1 script -qec "'$NCS' timeline '$T/p' -o '$T/p2.json'" /dev/null >"$T/tty.out" 2>&1
  check "progress: bar drawn on a terminal, ends at 100%" grep -q 'timeline \[#*\] 100%' "$T/tty.out"
  check "progress: bar reaches 8/8 files" grep -q '8/8 files' "$T/tty.out"
else
  skip "progress: no 'script' command to make a terminal"
fi

# Every golden corrupt trace (tests/corrupt-golden/): timeline, html and compare exit with a code
# of the table (0..4, decoder/cmd/commands.h), never crash.
crashed=""
for f in "$ROOT"/tests/corrupt-golden/*.ncs; do
  for c in timeline html; do
    timeout 20 "$NCS" $c "$f" -o "$T/cg.out" >/dev/null 2>&1; rc=$?
    [ $rc -le 4 ] || crashed="$crashed $c:$(basename "$f"):$rc"
  done
  timeout 20 "$NCS" compare "$f" "$f" >/dev/null 2>&1; rc=$?
  [ $rc -le 4 ] || crashed="$crashed compare:$(basename "$f"):$rc"
done
check_eq "whole-job commands on every golden corrupt trace: no crash" "" "$crashed"

# End to end: the DDP-shaped job on the doubles, traced by the shim: one duration event per
# traced call of every kind (collectives, send/recv, groups, communicator calls), as many as
# `report` counts.
DDP=$BUILD/tests/ddp_job
if [ -x "$DDP" ] && [ -f "$SHIM" ]; then
  mkdir -p "$T/ddp"
  NCCLSCOPE_DIR="$T/ddp" LD_PRELOAD="$SHIM" timeout 60 bash "$ROOT/tests/jobs/launch.sh" 4 "$DDP" --steps 5 >/dev/null 2>&1
  "$NCS" timeline "$T/ddp" -o "$T/ddp.json" 2>/dev/null
  "$NCS" report --json "$T/ddp" >"$T/ddp.r.json" 2>/dev/null
  check_eq "timeline e2e: one event per call report counts, groups and send/recv included" "ok" "$(python3 - "$T/ddp.json" "$T/ddp.r.json" <<'PY' 2>&1
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
r = json.load(open(sys.argv[2]))
calls = sum(sum(o["calls"] for o in x["ops"].values()) for x in r["ranks"])
cats = {e["cat"] for e in ev}
print("ok" if len(ev) == calls and {"coll", "p2p", "group"} <= cats else (len(ev), calls, cats))
PY
)"
else
  skip "timeline e2e: shim or ddp_job not built"
fi
# Conventions Perfetto and chrome://tracing expect: no negative time (the first call of a job
# comes before its trace's start), only the standard metadata events, no stray members, and
# flow arrows chaining each collective across its ranks (every arrow one start, one end).
export LD_LIBRARY_PATH=$DOUBLES NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
"$NCS" run -o "$T/ddp" -- bash "$ROOT/tests/jobs/launch.sh" 4 "$BUILD/tests/ddp_job" --steps 4 >/dev/null 2>&1
"$NCS" timeline "$T/ddp" -o "$T/ddp.json" 2>/dev/null
out=$(python3 - "$T/ddp.json" <<'PY' 2>&1
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
neg = [e for e in ev if e.get("ts", 0) < 0]
meta = {e["name"] for e in ev if e["ph"] == "M"}
stray = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name" and set(e["args"]) != {"name"}]
s = collections.Counter(e["id"] for e in ev if e["ph"] == "s")
f = collections.Counter(e["id"] for e in ev if e["ph"] == "f")
colls = [e for e in ev if e["ph"] == "X" and e["cat"] == "coll" and e["args"]["nranks"] > 1]
want = sum(1 for e in colls if e["args"]["rank"] < e["args"]["nranks"] - 1)
paired = set(s) == set(f) and all(v == 1 for v in s.values()) and all(v == 1 for v in f.values())
bound = all(e.get("bp") == "e" for e in ev if e["ph"] == "f")
print(len(neg), sorted(meta - {"process_name", "process_sort_index", "thread_name"}), len(stray),
      paired, len(s) == want and want > 0, bound, d["otherData"].get("version"))
PY
)
check_eq "timeline: no negative time, standard metadata only, no stray args, flows paired and one per rank link, version" \
  "0 [] 0 True True True 2" "$out"
