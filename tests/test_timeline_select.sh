#!/usr/bin/env bash
# test_timeline_select.sh — `ncclscope timeline` that opens (issue 27 item 4): --ranks, --window,
# the culprit ranks by default past 64 ranks, gzip output (-o FILE.json.gz), --max-mb, and a line
# on stderr whenever something is left out. Truth: the synthetic job's own parameters (its
# ranks, its injected straggler, its call count) and the unfiltered timeline's events.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "timeline_select: $NCS not built"; exit 0; fi
"$NCS" synth -o "$T/s" --ranks 16 --hosts 2 --calls 200 --threads 2 >/dev/null 2>&1
"$NCS" timeline "$T/s" -o "$T/all.json" 2>"$T/all.err"
check_eq "timeline_select: 16 ranks: every rank written, nothing said left out" "0" "$(grep -c 'left out\|writing' "$T/all.err")"
"$NCS" timeline --ranks 2-3,9 "$T/s" -o "$T/r.json" 2>"$T/r.err"
check_eq "timeline_select: --ranks exits 0" 0 "$?"
out=$(python3 - "$T/all.json" "$T/r.json" <<'PY' 2>&1
import json, sys
a = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
def ranks(d):
    names = {e["pid"]: e["args"]["name"] for e in d["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
    return {int(n.split()[1]) for n in names.values()}, names
ra, na = ranks(a); rr, nr = ranks(r)
bad = []
if ra != set(range(16)): bad.append("unfiltered ranks %s" % sorted(ra))
if rr != {2, 3, 9}: bad.append("--ranks 2-3,9 wrote ranks %s" % sorted(rr))
# the same calls for those ranks as the unfiltered timeline (times and sizes)
def calls(d, names, want):
    return sorted((names[e["pid"]].split()[1], e["name"], e["ts"], e["dur"], e["args"]["seq"]) for e in d["traceEvents"]
                  if e.get("ph") == "X" and int(names[e["pid"]].split()[1]) in want)
ca, cr = calls(a, na, {2, 3, 9}), calls(r, nr, {2, 3, 9})
if not ca or ca != cr: bad.append("calls of ranks 2,3,9 differ: %d vs %d" % (len(ca), len(cr)))
if r["otherData"].get("ranks_written") != 3: bad.append("otherData ranks_written %s" % r["otherData"].get("ranks_written"))
print("; ".join(bad) or "ok")
PY
)
check_eq "timeline_select: --ranks 2-3,9 writes those 3 ranks with the same calls as the whole timeline" ok "$out"
check "timeline_select: --ranks says on stderr what it left out" grep -q 'writing 3 of 16 trace files' "$T/r.err"
check_eq "timeline_select: --ranks with a malformed list exits 2" 2 "$("$NCS" timeline --ranks 3-1 "$T/s" -o "$T/x.json" >/dev/null 2>&1; echo $?)"

# --window: exactly the events of the whole timeline that overlap it, on the same axis
"$NCS" timeline --window 0.1:0.12 "$T/s" -o "$T/w.json.gz" 2>"$T/w.err"
check_eq "timeline_select: --window to a .gz exits 0" 0 "$?"
check "timeline_select: .gz output is gzip (magic 1f 8b)" sh -c "head -c2 '$T/w.json.gz' | od -An -tx1 | grep -q '1f 8b'"
out=$(python3 - "$T/all.json" "$T/w.json.gz" <<'PY' 2>&1
import json, sys, gzip
a = json.load(open(sys.argv[1])); w = json.load(gzip.open(sys.argv[2]))
key = lambda e: (e["pid"], e["name"], e["ts"], e.get("dur"))
lo, hi = 0.1e6, 0.12e6
want = sorted(key(e) for e in a["traceEvents"] if e.get("ph") == "X" and e["ts"] + e["dur"] >= lo - 0.001 and e["ts"] <= hi + 0.001)
got = sorted(key(e) for e in w["traceEvents"] if e.get("ph") == "X")
left = w["otherData"].get("events_outside_window")
total = sum(1 for e in a["traceEvents"] if e.get("ph") in ("X", "i"))
bad = []
if not got or got != want: bad.append("window events %d, the whole timeline's in the window %d" % (len(got), len(want)))
if left is None or left + sum(1 for e in w["traceEvents"] if e.get("ph") in ("X", "i")) != total: bad.append("left %s + written != %d" % (left, total))
print("; ".join(bad) or "ok")
PY
)
check_eq "timeline_select: --window 0.1:0.12 (gzip) holds exactly the whole timeline's events in that window" ok "$out"
check "timeline_select: --window says on stderr how many events it left out" grep -q 'events outside it left out' "$T/w.err"

# --max-mb: the file stays within the bound (plus the 64 KiB output buffer and the closing
# object), is valid JSON, and what it left out is said
"$NCS" timeline --max-mb 0.2 "$T/s" -o "$T/m.json" 2>"$T/m.err"
sz=$(stat -c %s "$T/m.json")
check "timeline_select: --max-mb 0.2 keeps the file near 200 kB (got $sz bytes)" test "$sz" -le 270000 -a "$sz" -ge 150000
check "timeline_select: --max-mb output is valid JSON" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/m.json"
check "timeline_select: --max-mb says on stderr what it left out" grep -q 'stopped at 0.2 MB of JSON: [1-9][0-9]* events left out' "$T/m.err"

# past 64 ranks, by default: rank 0 and the culprits, the injected straggler among them
"$NCS" synth -o "$T/b" --ranks 96 --hosts 12 --calls 40 --threads 2 --straggler 77:300:1 >/dev/null 2>&1
"$NCS" timeline "$T/b" -o "$T/b.json" 2>"$T/b.err"
out=$(python3 - "$T/b.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
names = [e["args"]["name"] for e in d["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"]
rk = sorted({int(n.split()[1]) for n in names})
bad = []
if 77 not in rk: bad.append("straggler 77 not written: %s" % rk)
if 0 not in rk: bad.append("rank 0 not written")
if not (2 <= len(rk) <= 6): bad.append("%d ranks written" % len(rk))
print("; ".join(bad) or "ok")
PY
)
check_eq "timeline_select: 96 ranks: by default rank 0 and the culprits, the injected straggler 77 among them" ok "$out"
check "timeline_select: 96 ranks: stderr names the ranks written and how to choose others" grep -q '96 ranks: writing rank 0.*rank 77.*--ranks all' "$T/b.err"
"$NCS" timeline --ranks all "$T/b" -o "$T/ball.json" 2>/dev/null

# past 64 ranks the ranks written are chosen before their events are spooled: 96 ranks x 2000
# calls spool 8-12 MB when every rank waits in the spool, the JSON of the 4-5 ranks written is
# ~2.6 MB; under a 4 MB limit on any file the process writes (ulimit -f: the spool in $TMPDIR
# too) the timeline is written whole, the same as without the limit
"$NCS" synth -o "$T/c" --ranks 96 --hosts 12 --calls 2000 --threads 2 --straggler 77:300:1 >/dev/null 2>&1
"$NCS" timeline "$T/c" -o "$T/c.json" 2>/dev/null
rc=$( (ulimit -f 4096; "$NCS" timeline "$T/c" -o "$T/c4.json" 2>"$T/c4.err"; echo $?) 2>/dev/null | tail -1)
check_eq "timeline_select: 96 ranks x 2000 calls under a 4 MB file-size limit: written (exit 0)" 0 "$rc"
check "timeline_select: 96 ranks x 2000 calls: the JSON is more than 1 MB (the limit is not loose)" test "$(stat -c %s "$T/c.json")" -gt 1000000
check "timeline_select: 96 ranks x 2000 calls: the same JSON with and without the limit" cmp -s "$T/c.json" "$T/c4.json"
check "timeline_select: 96 ranks x 2000 calls: the straggler 77 written" grep -q 'rank 77' "$T/c4.err"

# two jobs in one directory (96 ranks with straggler 5, 80 ranks with straggler 70), --job the
# 80-rank one: its culprits are chosen among its own ranks (the straggler analysis saw both)
"$NCS" synth -o "$T/ja" --ranks 96 --hosts 12 --calls 100 --straggler 5:300:1 >/dev/null 2>&1
"$NCS" synth -o "$T/jb" --ranks 80 --hosts 10 --calls 100 --seed 7 --straggler 70:300:1 >/dev/null 2>&1
mkdir -p "$T/j2"; cp "$T"/ja/*.ncs "$T/j2/"; for f in "$T"/jb/*.ncs; do cp "$f" "$T/j2/b-${f##*/}"; done
jb=$("$NCS" jobs "$T/j2" 2>/dev/null | sed -n 's/^job \([0-9]*\): 1 attempt, 80 files$/\1/p')
"$NCS" timeline --job "$jb" "$T/j2" -o "$T/jb.json" 2>"$T/jb.err"
out=$(python3 - "$T/jb.json" "$T/jb.err" <<'PY' 2>&1
import json, re, sys
d = json.load(open(sys.argv[1]))
rk = sorted({int(e["args"]["name"].split()[1]) for e in d["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"})
named = [int(x) for x in re.findall(r"rank (\d+) \(", open(sys.argv[2]).read())]
bad = []
if 70 not in rk or 0 not in rk: bad.append("rank 0 or the straggler 70 not written: %s" % rk)
if len(rk) < 3: bad.append("only %s written (median and fastest of the job missing)" % rk)
if [r for r in named if r >= 80] or not named: bad.append("stderr names %s, not the job's ranks" % named)
print("; ".join(bad) or "ok")
PY
)
check_eq "timeline_select: --job of two jobs (80 + 96 ranks): the culprits are the 80-rank job's own, its straggler 70 among them (job $jb)" ok "$out"
check_eq "timeline_select: --ranks all writes all 96 ranks" 96 "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['otherData']['ranks_written'])" "$T/ball.json")"
