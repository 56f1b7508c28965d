#!/usr/bin/env bash
# test_html_share_threads.sh — the html page's communication share per rank (render/html.c
# rank_share: the chart and the Ranks table) on traces whose calling threads' batches
# interleave (tests/jobs/rate_job.c on a stub NCCL whose calls return at once: each thread a rank
# of its own 1-rank communicator, one process, one trace; a chunk holds each thread's batch
# after another's of the same time). The truth is made here: the AllReduce host intervals (rc 0,
# as many as `ncclscope dump` shows) sorted and swept into their union. With --no-doctor the page
# takes its own union (cmd/html_cmd.c, model/ivunion.h per calling thread) on the job clock over
# the loader's window: its `comm share` (4 significant digits) must be the union of the same
# intervals on the job clock (`ncclscope timeline`'s ts and dur: the clock's slope moves an end
# by a nanosecond, ~1e-4 of this union) over the earliest start to the latest end; the loader's union in
# arrival order gave 2.442 % against 3.983 % on the 2-thread case. With the doctor the page's
# share is the doctor's facts', the figure `report --json` states (comm_share, whose comm_s
# test_metrics_exact_threads checks against dump to the ns): both must agree, and that comm_s
# must be the truth's union here too. A recording under load can have a thread's batch written
# after a union committed past it: the union then says how much it may lack (the page's "may be
# low by up to X s", report's comm_late), and each figure must lie within that bound below the
# truth instead (the contract; the pass line says which case ran). With the doctor, the share is
# over the doctor's window, which also holds the communicator calls (a 3-thread run: 0.219 s
# against the AllReduces' 0.147 s): there the page must state report's share, in both cases.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "html share threads: needs python3"; exit 0; }
stub_nccl || { fail "html share threads: the stub NCCL does not build"; exit 0; }

# one NAME FLUSH_MS RATE_JOB_ARGS...: runs the job under the shim, then compares
one() {
  local name=$1 d=$T/$1
  shift
  if ! stub_job "$d" "$@"; then
    fail "$name: the job failed"; sed 's/^/    /' "$d/out" | head -5; return
  fi
  "$NCS" dump "$d"/*.ncs >"$d/dump" 2>/dev/null || { fail "$name: dump failed"; return; }
  "$NCS" report --json "$d" >"$d/r.json" 2>"$d/r.err" || { fail "$name: report failed"; head -5 "$d/r.err"; return; }
  "$NCS" timeline "$d" -o "$d/tl.json" >/dev/null 2>&1 || { fail "$name: timeline failed"; return; }
  "$NCS" html --no-doctor "$d" -o "$d/nd.html" 2>"$d/h.err" || { fail "$name: html --no-doctor failed"; head -5 "$d/h.err"; return; }
  "$NCS" html "$d" -o "$d/d.html" 2>"$d/h.err" || { fail "$name: html failed"; head -5 "$d/h.err"; return; }
  local got
  got=$(python3 -c '
import json, math, re, sys
d = sys.argv[1]
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[2])
from ivtruth import dump_calls, timeline_calls, union
iv, calls, maxrun = dump_calls(open(d + "/dump"))
tot = union(iv)
jc = timeline_calls(d + "/tl.json")  # the same calls on the job clock (the clock of the page)
if len(jc) != calls: maxrun = 0
lo, hi = min(s for s, e in jc), max(e for s, e in jc)
truth = 100.0 * union(jc) / (hi - lo)
def share(path):  # the Ranks table: one row, its comm share cell
    h = open(path).read()
    rows = re.findall(r"<td>([0-9.]+)%</td>", h[h.find("<th>comm share</th>"):])
    return float(rows[0]) if len(rows) == 1 else -1.0
def near(a, b):  # b printed with 4 significant digits (%.4g)
    return b > 0 and abs(a - b) <= 0.5001 * 10 ** (math.floor(math.log10(b)) - 3)
def late_s(path):  # the "may be low by up to X s" line of the page (its union counted late intervals)
    m = re.search(r"comm share may be low by up to ([0-9.]+) s", open(path).read())
    return float(m.group(1)) if m else 0.0
def within(truth, got, low_s):  # got is the truth, or below it by at most the share of low_s
    if not low_s: return near(truth, got)
    tol = 0.5001 * 10 ** (math.floor(math.log10(got)) - 3) if got > 0 else 0
    return got > 0 and got - tol <= truth <= got + 100.0 * low_s * 1e9 / (hi - lo) + tol
r = json.load(open(d + "/r.json"))["ranks"]
nd, dd = share(d + "/nd.html"), share(d + "/d.html")
nd_low, dd_low = late_s(d + "/nd.html"), late_s(d + "/d.html")
rep = 100.0 * r[0]["comm_share"] if len(r) == 1 else -1
rep_ns = round(r[0]["comm_s"] * 1e9) if len(r) == 1 else -1
rep_low = round(r[0].get("comm_late", {}).get("max_missing_s", 0) * 1e9) if len(r) == 1 else 0
# A union that counted late intervals (a batch of one thread written after the union committed past
# it: the recording under load) is not exact, but low by at most what it counted (docs/METRICS.md
# "Communication time"): then each figure must lie within that bound below the truth.
# The share with the doctor is over the window of the doctor (docs/METRICS.md "Window": the
# communicator calls count too), not over the span of the AllReduce calls, so it must be the
# figure of the report in both cases; the comm_s of the report is checked against the union.
if rep_low or dd_low:
    rep_ok = rep_ns <= tot <= rep_ns + rep_low + 1 and near(rep, dd)
else:
    rep_ok = near(rep, dd) and rep_ns == tot
ok = len(jc) == calls and within(truth, nd, nd_low) and len(r) == 1 and rep_ok
late = "exact" if not (nd_low or dd_low or rep_low) else "late intervals counted: within their bound (--no-doctor %.6f s, doctor %.6f s, report %.6f s)" % (nd_low, dd_low, rep_low / 1e9)
print("ok" if ok else "bad", maxrun, "--no-doctor %r%% (truth %.6f%%), with the doctor %r%% (report %.6f%%), report comm_s %s ns (union %d ns) of %d calls, %s" %
      (nd, truth, dd, rep, rep_ns, tot, calls, late))
' "$d" "$ROOT/tests" 2>&1)
  local verdict maxrun rest
  read -r verdict maxrun rest <<<"$got"
  # the case is there: one thread's batch longer than the union's first buffer (4096 intervals)
  if [ "$verdict" = ok ] && [ "${maxrun:-0}" -gt 4096 ]; then
    pass "$name: html's share = the calls' union (batches up to $maxrun calls): $rest"
  else
    fail "$name: html's share against the calls' union: $got (want batches > 4096)"
  fi
}
one "2 threads x 1 M calls/s" 500 -n 100000 -t 2 -r 1000000
one "3 threads at 0.5, 0.8, 1.1 M calls/s" 100 -n 60000 -t 3 -r 500000 -d 60
