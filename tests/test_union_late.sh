#!/usr/bin/env bash
# test_union_late.sh — a communication union that counted late intervals says so, with a bound,
# in every output that prints its figure: report (text and JSON: comm_late), compare (text and
# --markdown: the blocks' union), html --no-doctor (the page's own union) and html (the
# doctor's). The trace (tests/union_late_trace.c, deterministic) has a thread first seen in the
# 5th chunk whose 400 calls lie 1 ms into the run, long committed past by then (docs/METRICS.md
# "Communication time"). The truth is made here: the AllReduce intervals of `ncclscope dump`
# (the job clock's, `ncclscope timeline`'s, for html) swept into their union. Each figure must
# be at most the truth and short of it by at most its bound; the bound at most the late
# thread's time; the late intervals at most its calls.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "union late: needs python3"; exit 0; }
mkdir -p "$T/late"
if ! cc -std=c11 -O1 -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/tests" -o "$T/union_late_trace" \
     "$ROOT/tests/union_late_trace.c" -lzstd 2>"$T/cc.err"; then
  fail "union late: tests/union_late_trace.c does not build"; head -5 "$T/cc.err"; exit 0
fi
"$T/union_late_trace" "$T/late/r0.ncs" || { fail "union late: the trace was not written"; exit 0; }
"$NCS" dump "$T/late/r0.ncs" >"$T/dump" 2>/dev/null || { fail "union late: dump failed"; exit 0; }
"$NCS" timeline "$T/late" -o "$T/tl.json" >/dev/null 2>&1 || { fail "union late: timeline failed"; exit 0; }
"$NCS" report "$T/late" >"$T/report.txt" 2>"$T/err"
"$NCS" report --json "$T/late" >"$T/report.json" 2>>"$T/err"
"$NCS" compare "$T/late" "$T/late" >"$T/compare.txt" 2>>"$T/err"
"$NCS" compare --markdown "$T/late" "$T/late" >"$T/compare.md" 2>>"$T/err"
"$NCS" html --no-doctor "$T/late" -o "$T/nd.html" 2>>"$T/err"
"$NCS" html "$T/late" -o "$T/d.html" 2>>"$T/err"

python3 - "$T" <<'EOF'
import json, re, sys
T = sys.argv[1]
def union(iv):
    tot, cs, ce = 0, None, None
    for s, e in sorted(v for v in iv if v[1] > v[0]):
        if ce is None or s > ce:
            if ce is not None: tot += ce - cs
            cs, ce = s, e
        elif e > ce: ce = e
    return tot + (ce - cs if ce is not None else 0)
iv, late_calls, late_ns = [], 0, 0
for line in open(T + "/dump"):
    if not line.startswith("CALL op=AllReduce "): continue
    x = dict(kv.split("=", 1) for kv in line.split()[1:])
    if x["rc"] != "0": continue
    s = int(x["t_enter"]); e = s + int(x["duration"])
    iv.append((s, e))
    if x["thread"] == "2": late_calls += 1; late_ns += e - s
truth = union(iv)
jc = []  # the same calls on the job clock (html's)
for x in json.load(open(T + "/tl.json"))["traceEvents"]:
    if x.get("ph") == "X" and x.get("name") == "AllReduce":
        s = round(x["ts"] * 1000); jc.append((s, s + round(x["dur"] * 1000)))
truth_jc = union(jc)
print("truth %d ns (job clock %d ns) of %d calls; the late thread's %d calls, %d ns" % (truth, truth_jc, len(iv), late_calls, late_ns))
def res(ok, name, detail):
    print(("PASS: " if ok else "FAIL: ") + "union late: " + name + ": " + detail)
def bounded(got_ns, bound_ns, n, want, slack=1):
    """got <= want, want - got <= bound, 0 < n <= the late thread's calls, bound <= its time"""
    return (got_ns <= want + slack and want - got_ns <= bound_ns + slack and 0 < n <= late_calls
            and 0 < bound_ns <= late_ns + slack and want - got_ns > 0)

r = json.load(open(T + "/report.json"))["ranks"]
cl = r[0].get("comm_late") if len(r) == 1 else None
if cl:
    c = round(r[0]["comm_s"] * 1e9); b = round(cl["max_missing_s"] * 1e9)
    res(bounded(c, b, cl["intervals"], truth), "report --json",
        "comm_s %d ns, truth %d ns, short by %d ns, comm_late %d intervals, up to %d ns" % (c, truth, truth - c, cl["intervals"], b))
else:
    res(False, "report --json", "no comm_late (ranks: %d)" % len(r))

m = re.findall(r"rank 0: comm_s may be low by up to ([0-9.]+) s: ([0-9]+) intervals? came after", open(T + "/report.txt").read())
res(len(m) == 1 and cl is not None and float(m[0][0]) == round(cl["max_missing_s"], 6) and int(m[0][1]) == cl["intervals"],
    "report text", "its line %r against JSON's %r" % (m, cl))

pat = r"locks of \S*late may be low by up to ([0-9.]+) s: ([0-9]+) intervals came after"
t = re.findall(pat, open(T + "/compare.txt").read())
md = re.findall(pat, open(T + "/compare.md").read())
# the blocks' union (analysis/gate_samples.c) prints no total: its bound against the late thread
ok = (len(t) >= 1 and md == t and all(0 < int(n) <= late_calls and 0 < float(x) <= late_ns / 1e9 + 1e-6 for x, n in t))
res(ok, "compare text and --markdown", "text %r, markdown %r" % (t, md))

def page(path, want, name):
    h = open(path).read()
    m = re.findall(r"rank 0: comm share may be low by up to ([0-9.]+) s \(comm s ([0-9.]+)\): ([0-9]+) intervals? came after", h)
    if len(m) != 1:
        res(False, name, "%d lines" % len(m)); return
    b, c, n = round(float(m[0][0]) * 1e9), round(float(m[0][1]) * 1e9), int(m[0][2])
    # the bound is printed to the us (%.6f): 500 ns either way
    res(bounded(c, b, n, want, 500), name, "comm s %d ns, truth %d ns, short by %d ns, %d intervals, up to %d ns" % (c, want, want - c, n, b))
page(T + "/nd.html", truth_jc, "html --no-doctor")
page(T + "/d.html", truth, "html (the doctor's union)")
EOF
