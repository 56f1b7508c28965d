#!/usr/bin/env bash
# test_timeline.sh — `ncclscope timeline` (decoder/cmd/timeline_cmd.c, decoder/render/timeline.c): valid Chrome-trace JSON with
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
# each call's busbw from its own args, nccl-tests' way: S = bytes as passed (AllGather: x ranks),
# busbw = S x factor / time (AllReduce 2(n-1)/n, AllGather (n-1)/n, Broadcast 1), %.3f printed
fac = {"AllReduce": lambda n: 2.0 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n, "Broadcast": lambda n: 1.0}
bw_bad = sum(1 for e in X if abs(e["args"]["busbw_gbps"] - e["args"]["bytes"] * (e["args"]["nranks"] if e["name"] == "AllGather" else 1)
                                 * fac[e["name"]](e["args"]["nranks"]) / (e["dur"] * 1e3)) > 0.0006)
bw_nz = sum(1 for e in X if e["args"]["busbw_gbps"] > 0)
print(len(X), len(I), len(procs), ok_args, gpu, names[0], "spread_ok" if spread < 25 else spread, "busbw_bad", bw_bad, bw_nz == len(X))
PY
)
check_eq "timeline: 800 duration events, 8 instants, 4 tracks, args, GPU timing, names, ends agree on one clock, every busbw as bytes and time give it" \
  "800 8 4 True True rank 0 node000 pid 10000 spread_ok busbw_bad 0 True" "$out"
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
lim=20; [ -n "$NCS_SANITIZER" ] && lim=120 # 124 is the timeout's: html ran past 20 s under make asan at load 16
for f in "$ROOT"/tests/corrupt-golden/*.ncs; do
  for c in timeline html; do
    timeout $lim "$NCS" $c "$f" -o "$T/cg.out" >/dev/null 2>&1; rc=$?
    [ $rc -le 4 ] || crashed="$crashed $c:$(basename "$f"):$rc"
  done
  timeout $lim "$NCS" compare "$f" "$f" >/dev/null 2>&1; rc=$?
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
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X" and "kernel" not in e["cat"]
      and e["cat"] not in ("memcpy", "memset")]
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
# flow arrows chaining each collective across its ranks (every arrow one start, one end; the
# call-to-kernel arrows are checked below).
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
s = collections.Counter(e["id"] for e in ev if e["ph"] == "s" and e["cat"] == "coll-flow")
f = collections.Counter(e["id"] for e in ev if e["ph"] == "f" and e["cat"] == "coll-flow")
colls = [e for e in ev if e["ph"] == "X" and e["cat"] == "coll" and e["args"]["nranks"] > 1]
want = sum(1 for e in colls if e["args"]["rank"] < e["args"]["nranks"] - 1)
paired = set(s) == set(f) and all(v == 1 for v in s.values()) and all(v == 1 for v in f.values())
bound = all(e.get("bp") == "e" for e in ev if e["ph"] == "f")
ks = {e["id"] for e in ev if e["ph"] == "s" and e["cat"] == "kernel-flow"}
kf = {e["id"] for e in ev if e["ph"] == "f" and e["cat"] == "kernel-flow"}
bound = bound and ks == kf
print(len(neg), sorted(meta - {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}), len(stray),
      paired, len(s) == want and want > 0, bound, d["otherData"].get("version"))
PY
)
check_eq "timeline: no negative time, standard metadata only, no stray args, flows paired (collective and call-to-kernel) and one per rank link, version" \
  "0 [] 0 True True True 2" "$out"

# Kernel activity (issue 15 part 4): overlap_job (tests/jobs/overlap_job.c) on 2 ranks under the
# shim with the CUPTI double, in three shapes. Per rank, one track per GPU stream holding exactly
# the kernels the job launched on it (S steps: serial 1 compute + 1 NCCL kernel per step on one
# stream; half 2 compute kernels per step on the compute stream, 1 NCCL kernel on the other;
# hidden 1 + 1 on two streams), compute and NCCL kernels apart by category and colour, on their
# own tracks when the job used two streams; each kernel on the job clock inside its rank's
# traced window (after the communicator's init call entered, before its destroy returned) and
# each NCCL kernel after the host entered the call that launched it (causality, whatever the
# load); every NCCL call linked to its kernel by one arrow.
S=4
kjob() { # kjob NAME MODE: traces in $T/k-NAME, timeline in $T/k-NAME.json
  mkdir -p "$T/k-$1"
  NCCLSCOPE_DIR=$T/k-$1 NCCLDOUBLE_LAT_US=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" \
    bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/overlap_job" --mode "$2" --steps $S --compute-us 1000 \
    >"$T/k-$1.out" 2>&1 || { fail "timeline kernels $1: job failed"; sed 's/^/    /' "$T/k-$1.out" | head; return 1; }
  "$NCS" timeline "$T/k-$1" -o "$T/k-$1.json" 2>"$T/k-$1.err" || { fail "timeline kernels $1: timeline failed"; return 1; }
}
kcheck() { # kcheck NAME: per rank "<compute kernels per compute track>/<NCCL kernels per NCCL track>/<shared tracks>/<in window>/<flows>"
  python3 - "$T/k-$1.json" <<'PY' 2>&1
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
out = []
for pid in sorted({e["pid"] for e in ev if e["ph"] == "X"}):
    mine = [e for e in ev if e.get("pid") == pid]
    tracks = {e["tid"]: e["args"]["name"] for e in mine if e["ph"] == "M" and e["name"] == "thread_name"}
    K = [e for e in mine if e["ph"] == "X" and e["cat"] in ("compute-kernel", "nccl-kernel")]
    comp = collections.Counter(e["tid"] for e in K if e["cat"] == "compute-kernel")
    nccl = collections.Counter(e["tid"] for e in K if e["cat"] == "nccl-kernel")
    named = all(tracks.get(t, "").startswith("GPU stream ") for t in list(comp) + list(nccl))
    colours = {e["cat"]: e["cname"] for e in K}
    calls = [e for e in mine if e["ph"] == "X" and e["cat"] in ("coll", "comm", "other", "p2p", "group")]
    init = min(e["args"]["host_enter_us"] for e in calls if e["name"] == "CommInitRank")
    end = max(e["args"]["host_enter_us"] + e["args"]["host_us"] for e in calls if e["name"] == "CommDestroy")
    inwin = all(init <= e["ts"] and e["ts"] + e["dur"] <= end for e in K)
    # the i-th AllReduce call launched the i-th NCCL kernel: the kernel starts after the call entered
    ar = sorted((e for e in calls if e["name"] == "AllReduce"), key=lambda e: e["args"]["seq"])
    nk = sorted((e for e in K if e["cat"] == "nccl-kernel"), key=lambda e: e["ts"])
    causal = len(ar) == len(nk) and all(k["ts"] >= c["args"]["host_enter_us"] for c, k in zip(ar, nk))
    s = {e["id"]: e for e in mine if e["ph"] == "s" and e["cat"] == "kernel-flow"}
    f = {e["id"]: e for e in mine if e["ph"] == "f" and e["cat"] == "kernel-flow"}
    flows = len(s) if set(s) == set(f) and all(f[i]["tid"] in nccl for i in f) else "unpaired"
    out.append("%s/%s/%s/%s/%s/%s" % ("+".join(str(v) for v in sorted(comp.values())),
               "+".join(str(v) for v in sorted(nccl.values())), "shared" if set(comp) & set(nccl) else "apart",
               "in" if inwin and causal and named else "OUT", flows,
               "colours" if len(set(colours.values())) == 2 else colours))
print(" ".join(out))
PY
}
if [ -x "$BUILD/tests/overlap_job" ] && [ -f "$SHIM" ] && command -v python3 >/dev/null; then
  if kjob serial serial; then
    check_eq "timeline kernels serial: per rank one GPU stream with the $S compute and $S NCCL kernels, in the window, $S call-to-kernel arrows" \
      "4/4/shared/in/4/colours 4/4/shared/in/4/colours" "$(kcheck serial)"
  fi
  if kjob half half; then
    check_eq "timeline kernels half: per rank $((2 * S)) compute kernels on one track, $S NCCL kernels on another, in the window, $S arrows" \
      "8/4/apart/in/4/colours 8/4/apart/in/4/colours" "$(kcheck half)"
    check_eq "timeline kernels half: the NCCL kernels' track names the call track whose AllReduce calls it ran" "2" \
      "$(python3 - "$T/k-half.json" <<'PY' 2>&1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
# a call track is "stream 0x...", then ": " and the communicators it carried (model/commnames.h)
calls = {(pid, n.split(": ", 1)[0]) for pid, n in names if n.startswith("stream ")}
print(sum(1 for pid, n in names if n.startswith("GPU stream ") and " (AllReduce of " in n
          and (pid, n.split(" of ", 1)[1].rstrip(")")) in calls))
PY
)"
    # --max-kernels: the first N per process are written; the rest counted on the timeline
    "$NCS" timeline --max-kernels 5 "$T/k-half" -o "$T/k-cap.json" 2>/dev/null
    check_eq "timeline kernels: --max-kernels 5 writes 5 per rank and counts the $((3 * S - 5)) left out, arrows still paired" \
      "5 5 $((3 * S - 5)) $((3 * S - 5)) 14 10 paired" "$(python3 - "$T/k-cap.json" <<'PY' 2>&1
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
K = collections.Counter(e["pid"] for e in ev if e["ph"] == "X" and e["cat"].endswith("-kernel"))
notes = [e["args"]["left_out"] for e in sorted(ev, key=lambda e: e.get("pid", 0)) if e.get("name") == "kernels left out"]
s = {e["id"] for e in ev if e["ph"] == "s" and e["cat"] == "kernel-flow"}
f = {e["id"] for e in ev if e["ph"] == "f" and e["cat"] == "kernel-flow"}
print(K[1], K[2], *notes, d["otherData"]["kernels_left_out"], d["otherData"]["kernels_written"], "paired" if s == f else (s, f))
PY
)"
    "$NCS" timeline --max-kernels 0 "$T/k-half" -o "$T/k-none.json" 2>/dev/null
    check_eq "timeline kernels: --max-kernels 0 writes no kernel and no GPU stream track" "0" \
      "$(grep -c 'GPU stream\|-kernel"' "$T/k-none.json")"
  fi
  if kjob hidden hidden; then
    check_eq "timeline kernels hidden: per rank $S compute and $S NCCL kernels on two tracks, in the window, $S arrows" \
      "4/4/apart/in/4/colours 4/4/apart/in/4/colours" "$(kcheck hidden)"
  fi
else
  skip "timeline kernels: overlap_job, the shim or python3 missing"
fi

# Files read at once (decoding threads) give their events in an order that changes from run to
# run; the output is written file by file, so it is the one-thread output whatever the threads
# did, and --max-mb leaves out the same events. Truth: the one-thread run.
"$NCS" synth -o "$T/th" --ranks 8 --hosts 2 --calls 20000 --chunk-calls 500 >/dev/null 2>&1
NCCLSCOPE_THREADS=1 "$NCS" timeline "$T/th" -o "$T/th-1.json" 2>/dev/null
NCCLSCOPE_THREADS=1 "$NCS" timeline --max-mb 2 "$T/th" -o "$T/thm-1.json" 2>/dev/null
differ=0
for i in 1 2 3; do
  NCCLSCOPE_THREADS=4 "$NCS" timeline "$T/th" -o "$T/th-4.json" 2>/dev/null
  cmp -s "$T/th-1.json" "$T/th-4.json" || differ=$((differ+1))
  NCCLSCOPE_THREADS=4 "$NCS" timeline --max-mb 2 "$T/th" -o "$T/thm-4.json" 2>/dev/null
  cmp -s "$T/thm-1.json" "$T/thm-4.json" || differ=$((differ+1))
done
check_eq "timeline: 8 ranks x 20000 calls at 4 threads, 3 runs, whole and --max-mb 2: each the one-thread output" 0 "$differ"
check_eq "timeline: ... the one-thread output holds every rank's calls (8 x 20000)" 160000 \
  "$(grep -c '"ph":"X","name":"[A-Za-z]*","cat":"coll"' "$T/th-1.json")"
