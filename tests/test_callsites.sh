#!/usr/bin/env bash
# test_callsites.sh — call sites and communicator names a user knows (issue 27 item 5;
# docs/CLI.md "Call sites", decoder/analysis/callsites.c, model/callsites.c, model/commnames.c).
# tests/jobs/site_job.c issues its calls from three named functions and writes, as its truth,
# the source line of each NCCL call (__LINE__ compiled in); its world communicator has the
# commName "trainer-world", and a split by rank % 2 has no name. Checked against that truth:
#   report --callsites names each function, and file:line where libdw is installed;
#   the first row is sync_gradients' (the double's model: 4 Mi floats against 16 and 1024);
#   the slowest call's communicator is "trainer-world" (the job's name), the split's is named by
#   the world ranks that joined it and its color, never by a hash alone;
#   every section that shows a communicator names it so: report's transports and stragglers
#   (no id in the text), --detail with the id, JSON "comm" beside "comm_id", report's MISSING
#   line of a hang, the timeline's process and stream tracks and each call's "comm_name";
#   the binary changed or gone after the run: named from the trace, and said so;
#   NCCLSCOPE_CALLSITE_DEPTH=0: one line saying how to record call sites.
# Exposed time per call site (report --callsites "exposed"), against tests/jobs/ddp_job.c's own
# design, on 1 rank (no peer's lateness in any kernel) with the double's latency at 200 us a call:
#   without --overlap every kernel runs on one stream, so nothing is hidden: each site's exposed
#   time is its GPU time, and the most exposed site is the AllReduce line (four calls a step
#   against one of every other operation, each the same 200 us);
#   with --overlap each of the first three buckets' AllReduce (200 us) runs under the next
#   1000 us piece of compute: at most half of the site's GPU time is exposed, and less than
#   without overlap.
#   20 steps, not 5: the shim's start event goes on an idle stream before the real launch, so a
#   host stall between the two counts as that call's GPU time (as on a GPU: the event completes
#   at once); at 5 steps 3 ms of such stalls over the 5 ReduceScatter calls (a loaded machine)
#   put its line above the AllReduce's 4 ms; at 20 steps that takes 12 ms.
# The most exposed site named where a user looks (one computation, analysis/callsites.h): with
# 200 us of compute a step the job is communication-bound; its AllReduce line (the job's source)
# is the first row of report --callsites, with the double's model's GPU time (5 x 4 x 200 us);
# doctor's comm-bound evidence, doctor's headline and html's summary name it with the report's
# figure, and html's call-site table has min(sites, 10) rows, the rest counted in one line.
source "$(dirname "$0")/lib.sh"
tsan_sites_on
JOB=$BUILD/tests/site_job
for f in "$SHIM" "$NCS" "$JOB" "$DOUBLES/libnccl.so.2"; do [ -e "$f" ] || { skip "callsites: $f not built"; exit 0; }; done
LAUNCH=$ROOT/tests/jobs/launch.sh

# the job runs from a copy of its binary, which the checks below change and remove (beside a link
# to the doubles, where its run path looks: $ORIGIN/../doubles)
mkdir -p "$T/bin"
ln -s "$DOUBLES" "$T/doubles"
cp "$JOB" "$T/bin/site_job"
# the double's link model at 0.1 GB/s: each 16 MiB all-reduce of sync_gradients lasts 250 ms on
# the device clock, the other two collectives under 0.1 ms, so no wait for a late rank (the
# machine's load) can reorder the sites
NCCLDOUBLE_LAT_US=5 NCCLDOUBLE_BW_GBPS=0.1 NCCLSCOPE_DIR="$T/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 \
  bash "$LAUNCH" 4 "$T/bin/site_job" --truth "$T/truth" \
  >"$T/job.out" 2>"$T/job.err"
check_eq "callsites: site_job runs (4 ranks)" 0 "$?"
"$NCS" report --callsites "$T/tr" >"$T/rep.txt" 2>"$T/rep.err"
check_eq "callsites: report --callsites exits 0" 0 "$?"
"$NCS" report --callsites --json "$T/tr" >"$T/rep.json" 2>/dev/null

# the truth: "NAME FILE:LINE" per function
while read -r fn at; do
  line=${at##*:}
  check "callsites: the table names $fn (the job's own function)" grep -q " $fn" "$T/rep.txt"
  row=$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["function"]==sys.argv[2]]; print(r[0]["line"] if r else "none", r[0]["ranks"] if r else 0)' "$T/rep.json" "$fn")
  if python3 -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null; then
    check_eq "callsites: $fn at line $line of site_job.c (JSON: line, ranks)" "$line 4" "$row"
    check "callsites: the text names $fn's line site_job.c:$line" grep -q "$fn (.*site_job.c:$line)" "$T/rep.txt"
  else
    skip "callsites: $fn's source line: libdw.so.1 (elfutils) is not installed, so no lines"
  fi
done <"$T/truth"

first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["callsites"][0]["function"])' "$T/rep.json")
check_eq "callsites: the first site (most exposed, then GPU time) is sync_gradients, the double's model's largest all-reduce" \
  sync_gradients "$first"
comm=$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["function"]=="sync_gradients"][0]; print(r["slowest"]["comm"])' "$T/rep.json")
check_eq "callsites: sync_gradients' slowest call is on the communicator the job named (commName)" trainer-world "$comm"
split=$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["function"]=="share_halves"][0]; print(r["slowest"]["rank"], r["slowest"]["comm"])' "$T/rep.json")
# the split's members are the world ranks of one parity (the job's rank % 2), its color that parity
r=${split%% *}
want="ranks $([ $((r % 2)) -eq 0 ] && echo 0,2 || echo 1,3) of trainer-world (split, color $((r % 2)))"
check_eq "callsites: the unnamed split communicator is named by its ranks, parent and color" "rank $r: $want" "rank $r: ${split#* }"
check "callsites: dump shows the COMM name the job gave" grep -q "init_op=CommInitRankConfig .* name=trainer-world" \
  <("$NCS" dump "$(ls "$T"/tr/*.ncs | head -1)")

# communicators named as the job knows them in every section that shows one (report text with
# no id, --detail with it, JSON "comm" beside "comm_id", the timeline's tracks and args): the
# world is "trainer-world" (the job's commName), each split half "ranks P of trainer-world
# (split, color C)" with P the world ranks of one parity and C that parity (the job's rank % 2)
"$NCS" report "$T/tr" >"$T/rep-all.txt" 2>/dev/null
check_eq "callsites: report's text names no communicator by its id alone" 0 "$(grep -cE '(^|[^0-9a-fx])[0-9a-f]{16}([^0-9a-f]|$)' "$T/rep-all.txt")"
check_eq "callsites: report's transports: one line per communicator, by the job's names" \
  "communicator ranks 0,2 of trainer-world (split, color 0) (2 ranks)|communicator ranks 1,3 of trainer-world (split, color 1) (2 ranks)|communicator trainer-world (4 ranks)" \
  "$(grep -o '^  communicator .* ranks)' "$T/rep-all.txt" | sed 's/^  //' | sort | paste -sd'|')"
check "callsites: report's stragglers name the collective's communicator" grep -qE '\(comm (trainer-world|ranks [0-9],[0-9] of trainer-world \(split, color [01]\)) seq [0-9]+\)' "$T/rep-all.txt"
"$NCS" report --detail "$T/tr" >"$T/rep-detail.txt" 2>/dev/null
wid=$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["function"]=="sync_gradients"][0]; print(r["slowest"]["comm_id"])' "$T/rep.json")
check "callsites: --detail keeps the id beside the name (trainer-world [$wid])" grep -q "trainer-world \[$wid\]" "$T/rep-detail.txt"
"$NCS" report --json "$T/tr" >"$T/rep-all.json" 2>/dev/null
check_eq "callsites: report JSON: each rank's communicators carry the name beside the id" "ok" "$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); bad=[]
for r in d["ranks"]:
    for c in r["comms"]:
        want = "trainer-world" if c["nranks"] == 4 else "ranks %s of trainer-world (split, color %d)" % ("0,2" if r["rank"] % 2 == 0 else "1,3", r["rank"] % 2)
        if c["comm"] != want: bad.append((r["rank"], c["comm"], want))
print("ok" if not bad and d["ranks"] else bad)' "$T/rep-all.json")"
"$NCS" timeline -o "$T/tl.json" "$T/tr" >/dev/null 2>&1
check_eq "callsites: timeline: process tracks, stream tracks and every call's comm_name by the job's names" "ok" "$(python3 -c 'import json,sys
ev=json.load(open(sys.argv[1]))["traceEvents"]; bad=[]
procs={e["pid"]: e["args"]["name"] for e in ev if e["ph"]=="M" and e["name"]=="process_name"}
rank={p: int(n.split()[1]) for p, n in procs.items()}
half=lambda r: "ranks %s of trainer-world (split, color %d)" % ("0,2" if r % 2 == 0 else "1,3", r % 2)
for p, n in procs.items():
    if not n.startswith("rank %d of trainer-world " % rank[p]): bad.append(n)
for e in ev:
    if e["ph"]=="M" and e["name"]=="thread_name" and e["args"]["name"].startswith("stream "):
        if e["args"]["name"].split(": ",1)[-1] != "trainer-world; " + half(rank[e["pid"]]): bad.append(e["args"]["name"])
    if e["ph"]=="X" and e.get("cat")=="coll":
        want = half(rank[e["pid"]]) if e["args"]["count"] == 1024 else "trainer-world"
        if e["args"].get("comm_name") != want: bad.append((e["name"], e["args"].get("comm_name"), want))
n=sum(1 for e in ev if e["ph"]=="X" and e.get("cat")=="coll")
print("ok" if not bad and n == 36 else (n, bad[:3]))' "$T/tl.json")"

# the binary changed after the run: its build id differs, so the names come from the trace
cp "$BUILD/tests/hang_job" "$T/bin/site_job"
"$NCS" report --callsites "$T/tr" >"$T/changed.txt" 2>&1
check "callsites: a binary changed since the run is said so, not read" grep -q "module changed since the run" "$T/changed.txt"
check "callsites: ... and no function of the other binary is named" bash -c "! grep -q 'sync_gradients\|main (' '$T/changed.txt'"
rm -f "$T/bin/site_job"
"$NCS" report --callsites "$T/tr" >"$T/gone.txt" 2>&1
check_eq "callsites: a binary gone after the run: report still exits 0" 0 "$?"
check "callsites: ... its sites named module+offset, marked not found" grep -q "site_job+0x[0-9a-f]* \[module not found\]" "$T/gone.txt"

# call sites off
NCCLSCOPE_CALLSITE_DEPTH=0 NCCLSCOPE_DIR="$T/off" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 bash "$LAUNCH" 2 "$JOB" \
  >/dev/null 2>&1
"$NCS" report --callsites "$T/off" >"$T/off.txt" 2>&1
check_eq "callsites: NCCLSCOPE_CALLSITE_DEPTH=0: one line says how to record them" 1 \
  "$(grep -c 'NCCLSCOPE_CALLSITE_DEPTH=0; leave it unset' "$T/off.txt")"

# a hang whose collective was issued from sync_gradients: rank 1 never calls it again (2 ranks)
mkdir -p "$T/hang"
NCCLSCOPE_FLUSH_MS=50 NCCLSCOPE_DIR="$T/hang" LD_PRELOAD="$SHIM$SAN_PRELOAD" setsid bash "$LAUNCH" 2 "$JOB" --steps 1 --hang 1 \
  >/dev/null 2>&1 &
hpid=$!
# poll until the doctor names the hung collective's site (at most 90 s: a failure cap, not a timing;
# 30 s ran out at load 22 on 2 cores).
# Under a sanitizer a rank starts seconds after the other: its first all-reduce (sync_gradients
# too) is then seen waiting past 0.5 s, a hang for a moment that the next look no longer sees;
# past 5 s only the job's own hang is
HANG_AFTER=0.5
[ -n "$NCS_SANITIZER" ] && { HANG_AFTER=5; echo "# $NCS_SANITIZER build: --hang-after 5 (a rank's start lags the other's by over 0.5 s)"; }
site_named() {
  "$NCS" doctor --json --hang-after "$HANG_AFTER" "$T/hang" >"$T/hang.json" 2>/dev/null
  python3 -c 'import json,sys
v=[v for v in json.load(open(sys.argv[1]))["verdicts"] if v["id"] in ("hang","dead-rank")]
sys.exit(0 if v and any("issued at sync_gradients" in e for e in v[0]["evidence"]) else 1)' "$T/hang.json" 2>/dev/null
}
end=$((SECONDS + 90))
until site_named; do [ $SECONDS -ge $end ] && break; sleep 0.3; done
check "callsites: doctor's hang evidence names the hung collective's site (sync_gradients)" site_named
check "callsites: ... and the communicator by the job's name, not its id" python3 -c 'import json,sys
v=[v for v in json.load(open(sys.argv[1]))["verdicts"] if v["id"] in ("hang","dead-rank")][0]
sys.exit(0 if "trainer-world" in v["evidence"][0] and "%016x" % int(v["data"]["comm_id"], 16) not in v["evidence"][0] else 1)' "$T/hang.json"
"$NCS" html -o "$T/hang.html" "$T/hang" >/dev/null 2>&1
check "callsites: the html page names the hung collective's site" grep -q "issued at sync_gradients" "$T/hang.html"
"$NCS" report "$T/hang" >"$T/hang-rep.txt" 2>/dev/null
check "callsites: report's hang evidence (MISSING) names the communicator by the job's name" \
  grep -qE '^  MISSING comm trainer-world seq [0-9]+: 1 of 2 ranks entered; never entered: 1 ' "$T/hang-rep.txt"
kill -9 -- -"$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null || true  # killed on purpose: not the test's status

# exposed time per call site: ddp_job with and without --overlap (see the top)
DDP=$BUILD/tests/ddp_job
if [ -x "$DDP" ]; then
  ar_line=$(grep -n 'ncclAllReduce(' "$ROOT/tests/jobs/ddp_job.c" | head -1 | cut -d: -f1)
  for m in serial overlap; do
    a=; [ $m = overlap ] && a=--overlap
    NCCLDOUBLE_LAT_US=200 NCCLSCOPE_DIR="$T/ddp-$m" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 \
      bash "$LAUNCH" 1 "$DDP" --steps 20 --compute-us 4000 $a >/dev/null 2>"$T/ddp-$m.err"
    check_eq "callsites: ddp_job ($m, 1 rank) runs" 0 "$?"
    "$NCS" report --callsites --json "$T/ddp-$m" >"$T/ddp-$m.json" 2>/dev/null
    "$NCS" report --callsites "$T/ddp-$m" >"$T/ddp-$m.txt" 2>/dev/null
  done
  # the AllReduce row: "exposed_s gpu_s"
  ar() { python3 -c 'import json,sys
r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["op"]=="AllReduce"][0]
print(r["exposed_s"], r["gpu_s"])' "$1"; }
  check "callsites: no overlap: every GPU-timed site's exposed time is its GPU time (one stream)" python3 -c 'import json,sys
rows=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["gpu_s"] > 0]
bad=[(r["site"], r["exposed_s"], r["gpu_s"]) for r in rows if r["exposed_s"] is None or r["exposed_s"] < 0.95 * r["gpu_s"]]
print(bad); sys.exit(1 if bad or len(rows) < 6 else 0)' "$T/ddp-serial.json"
  first=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["callsites"][0]; print(r["op"], r["line"])' "$T/ddp-serial.json")
  if python3 -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null; then
    check_eq "callsites: no overlap: the most exposed site is the AllReduce line (ddp_job.c:$ar_line)" "AllReduce $ar_line" "$first"
    check "callsites: ... and the text names it as the most exposed" grep -q "most exposed: main (.*ddp_job.c:$ar_line)" "$T/ddp-serial.txt"
  else
    check_eq "callsites: no overlap: the most exposed site is the AllReduce's" AllReduce "${first%% *}"
  fi
  read -r ser_e ser_g <<<"$(ar "$T/ddp-serial.json")"
  read -r ovl_e ovl_g <<<"$(ar "$T/ddp-overlap.json")"
  check "callsites: --overlap: at most half the AllReduce site's GPU time is exposed ($ovl_e of $ovl_g s)" \
    python3 -c 'import sys; e,g=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if 0 < e <= 0.5*g else 1)' "$ovl_e" "$ovl_g"
  # shares, not seconds: an overlapped all-reduce's GPU time also holds its wait behind the
  # compute kernels sharing the device, so its exposed seconds can pass the serial run's (0.028
  # against 0.016 s under make asan) while its exposed share is far lower
  check "callsites: --overlap: the AllReduce site's exposed share is less than without ($ovl_e of $ovl_g s against $ser_e of $ser_g s)" \
    python3 -c 'import sys; e,g,se,sg=map(float,sys.argv[1:]); sys.exit(0 if g > 0 and sg > 0 and e / g < se / sg else 1)' "$ovl_e" "$ovl_g" "$ser_e" "$ser_g"
  # the most exposed site where a user looks: doctor's comm-bound evidence, the headline, html.
  # ddp_job with 200 us of compute a step and the GPU's schedule the model's alone (--ahead):
  # communication-bound on the double's model (20 all-reduces of 200 us against 1 ms of compute)
  NCCLDOUBLE_LAT_US=200 NCCLSCOPE_DIR="$T/ddp-cb" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 \
    bash "$LAUNCH" 1 "$DDP" --steps 5 --compute-us 200 --ahead 5 >/dev/null 2>"$T/ddp-cb.err"
  check_eq "callsites: ddp_job (comm-bound, 1 rank) runs" 0 "$?"
  "$NCS" report --callsites --json "$T/ddp-cb" >"$T/cb.json" 2>/dev/null
  "$NCS" doctor "$T/ddp-cb" >"$T/cb-doctor.txt" 2>/dev/null
  "$NCS" html -o "$T/cb.html" "$T/ddp-cb" >/dev/null 2>&1
  # the report's first row: where, exposed ms as printed (%.3f), its GPU time
  read -r top_op top_line top_exp top_gpu <<<"$(python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))["callsites"][0]
print(r["op"], r["line"], "%.3f" % (r["exposed_s"]*1e3), "%.3f" % (r["gpu_s"]*1e3))' "$T/cb.json")"
  check_eq "callsites: comm-bound job: the most exposed site is the AllReduce's (the job's 4 buckets a step)" AllReduce "$top_op"
  check "callsites: ... its GPU time is the double's model, 5 steps x 4 all-reduces x 200 us (= 4 ms within 5%: $top_gpu ms)" \
    python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - 4.0) <= 0.2 else 1)' "$top_gpu"
  site=main; python3 -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null && site="main (.*ddp_job.c:$ar_line)"
  check "callsites: doctor's comm-bound evidence names that site with the report's figure ($top_exp ms)" \
    grep -q "^  - most exposed call site: $site, AllReduce on 1 rank: $top_exp ms of its $top_gpu ms on the GPU" "$T/cb-doctor.txt"
  check "callsites: ... inside the comm-bound verdict (its second evidence line)" \
    bash -c "grep -A2 '^PROBLEM comm-bound' '$T/cb-doctor.txt' | tail -1 | grep -q 'most exposed call site'"
  check "callsites: doctor's headline names it too" grep -q "^  most exposed call site: $site, AllReduce on 1 rank: $top_exp ms" "$T/cb-doctor.txt"
  check "callsites: html's summary names it, with the same figure" \
    grep -q "<p id=\"top-site\">Most exposed call site: <code>$site</code>, AllReduce on 1 rank: <b>$top_exp ms</b>" "$T/cb.html"
  nrows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["callsites"]))' "$T/cb.json")
  python3 - "$T/cb.html" "$nrows" "$top_exp" >"$T/cb-table.txt" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
m = re.search(r'<section id="callsites"><details[^>]*>(.*?)</section>', h, re.S)
rows = re.findall(r'<tr><td class="l"><code>(.*?)</code></td><td>(.*?)</td><td>\d+</td><td>\d+</td><td[^>]*>([^<]*)</td>', m.group(1)) if m else []
more = re.search(r'(\d+) more call sites', m.group(1)) if m else None
n = int(sys.argv[2])
print(len(rows), min(n, 10), rows[0][1] if rows else "-", rows[0][2] if rows else "-", sys.argv[3],
      int(more.group(1)) if more else 0, max(n - 10, 0))
PY
  read -r shown want first_op first_exp want_exp more want_more <"$T/cb-table.txt"
  check_eq "callsites: html's call-site table: a collapsible section with min(sites, 10) rows ($nrows sites)" "$want" "$shown"
  check_eq "callsites: ... the rest counted in one line" "$want_more" "$more"
  check_eq "callsites: ... its first row is the most exposed, the report's figure" "AllReduce $want_exp" "$first_op $first_exp"
else
  skip "callsites: exposed time per site: $DDP not built"
fi
