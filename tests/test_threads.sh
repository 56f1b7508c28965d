#!/usr/bin/env bash
# test_threads.sh — ranks that live on threads (issue 11, part 3), a transport matrix per
# communicator (part 4) and processes that are not ranks (part 6b), each a job on the doubles whose own truth (tests/jobs/threads_job.c --truth:
# the ranks each process holds and the collectives each entered) is compared with
# `report --json` and `doctor --json`:
#   one process, ncclCommInitAll(4) ........ one row holding ranks 0-3 (lowest first, the same
#                                              every run); 4 straggler rows, one per rank, each
#                                              with its collectives; the communicator fully
#                                              traced and every collective lined up; host-timed
#                                              shares of time never above 100%
#   2 processes x 2 threads (InitRank per thread), blocking and non-blocking: ranks 0-1 and 2-3
#   a rank's thread never enters its last collective (--stall): doctor's hang names that rank,
#                                              the others as entered; report's MISSING too
#   6 ranks split into 4 and 2 (ncclCommSplit), as processes, threads, non-blocking, and split
#                                              before the parent's first collective: each transport
#                                              matrix (report's, and the HTML's) holds its
#                                              communicator's ring only
#   a process that only calls ncclGetVersion: not a rank row, listed under "no_communicator"
# Exact counts only, never timings; the hang is polled (at most 30 s, a failure cap).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/threads_job
[ -f "$SHIM" ] && [ -x "$NCS" ] || { fail "threads: shim or decoder missing"; exit 1; }
[ -x "$J" ] || { skip "threads: $J not built"; exit 0; }
LAUNCH=$ROOT/tests/jobs/launch.sh
export NCCL_DEBUG=
cd "$T"

# py EXPR FILES...: a Python expression over r (report --json of $T/r.json) and truth (the
# merged truth files: {"ranks": {rank: collectives}, "pids": {pid: [ranks]}})
py() {
  python3 - "$@" <<'PY'
import json, sys
expr, files = sys.argv[1], sys.argv[2:]
r = json.load(open("r.json"))
truth = {"ranks": {}, "pids": {}}
for f in files:
    t = json.load(open(f))
    truth["ranks"].update({int(k): v for k, v in t["ranks"].items()})
    truth["pids"][t["pid"]] = sorted(int(k) for k in t["ranks"])
print(eval(expr))
PY
}

# ---- one process, ncclCommInitAll: 4 ranks on 4 threads ----
NCCLSCOPE_DIR="$T/all" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$J" -t 4 -n 60 --all --truth "$T/all.truth" >all.out 2>all.err
check_eq "threads: --all 4 threads runs" 0 "$?"
"$NCS" report --json "$T/all" >r.json 2>r.err
check_eq "threads: --all: one row, holding the ranks the job's threads were (rank = the lowest)" "True 0" \
  "$(py 'str([x.get("ranks_held") for x in r["ranks"]] == list(truth["pids"].values())) + " " + str(r["ranks"][0]["rank"])' all.truth)"
check_eq "threads: --all: a straggler row per rank, each with the collectives its thread entered" "True" \
  "$(py 'sorted((s["rank"], s["collectives"]) for s in r["stragglers"]) == sorted(truth["ranks"].items())' all.truth)"
check_eq "threads: --all: fully traced, every collective lined up (complete incomplete partly mismatches missing)" "60 0 0 0 0" \
  "$(py '" ".join(str(x) for x in (r["collectives"]["complete"], r["collectives"]["incomplete"], r["collectives"]["communicators_partly_traced"], len(r["mismatches"]), len(r["missing"])))' all.truth)"
check_eq "threads: --all: the headline counts 4 ranks in 1 process" "4 1" \
  "$(py 'str(r["headline"]["ranks"]) + " " + str(r["headline"].get("rank_processes"))' all.truth)"
"$NCS" report "$T/all" >all.txt 2>&1
check "threads: --all: text names the row by all its ranks and does not say partly traced" \
  sh -c "grep -q '^ *0-3 ' all.txt && ! grep -q 'are not lined up' all.txt"
# stable from run to run: a second run gives the same label
NCCLSCOPE_DIR="$T/all2" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$J" -t 4 -n 60 --all >/dev/null 2>&1
"$NCS" report --json "$T/all2" >r.json 2>/dev/null
check_eq "threads: --all, second run: the same rank label and held ranks" "0 [0, 1, 2, 3]" \
  "$(py 'str(r["ranks"][0]["rank"]) + " " + str(r["ranks"][0]["ranks_held"])')"
# host timing: the ranks' calls overlap in time; the op's share of communication stays <= 100%
NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_DIR="$T/host" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$J" -t 4 -n 60 --all >/dev/null 2>&1
"$NCS" report --json "$T/host" >r.json 2>/dev/null
check_eq "threads: --all, host timing: the evidence's op share of communication is at most 100%" "True" \
  "$(py '(lambda e: float(e.split(", ")[1].split()[1].rstrip("%")) <= 100.0)(r["ranks"][0]["evidence"])')"

# ---- 2 processes x 2 threads, a rank per thread (ncclCommInitRank in each thread) ----
for mode in blocking nonblocking; do
  opt=; [ $mode = nonblocking ] && opt=--nonblocking
  NCCLSCOPE_DIR="$T/$mode" LD_PRELOAD="$SHIM$SAN_PRELOAD" bash "$LAUNCH" 2 "$J" -t 2 -n 45 --procs $opt \
    --truth "$T/$mode.truth" >$mode.out 2>$mode.err
  check_eq "threads: 2 processes x 2 threads ($mode) run" 0 "$?"
  "$NCS" report --json "$T/$mode" >r.json 2>/dev/null
  check_eq "threads: 2x2 $mode: each process's row holds the ranks its threads were" "True" \
    "$(py 'all(x.get("ranks_held") == truth["pids"][x["pid"]] for x in r["ranks"]) and len(r["ranks"]) == 2' $mode.truth.*)"
  check_eq "threads: 2x2 $mode: a straggler row per rank with its collectives; all lined up, fully traced" "True 45 0 0" \
    "$(py '" ".join(str(x) for x in (sorted((s["rank"], s["collectives"]) for s in r["stragglers"]) == sorted(truth["ranks"].items()), r["collectives"]["complete"], r["collectives"]["incomplete"], r["collectives"]["communicators_partly_traced"]))' $mode.truth.*)"
done

# ---- communicators of different sizes (ncclCommSplit): each transport matrix holds its own
# communicator's connections only (the double connects each ring at the first collective, as
# NCCL >= 2.22 does: rank r -> r+1 of that communicator). 6 ranks split into 4 and 2: as 6
# processes, as 2 processes x 3 threads, and as 3 x 2 non-blocking ----
# pairs_ok TRUTH...: every matrix equals the ring of its communicator's size, one per size
pairs_ok() {
  py '(lambda sizes: sorted((m["nranks"], sorted((p["from"], p["to"]) for p in m["pairs"])) for m in r["transport_matrices"]) == sorted((n, sorted((i, (i + 1) % n) for i in range(n))) for n in sizes) and r["transport_lines_unattributed"] == 0)(sorted(set([json.load(open(f))["world"] for f in files] + [z for f in files for z in json.load(open(f))["split_sizes"] if z > 1])))' "$@"
}
for cfg in "6 1 --split" "2 3 --split" "3 2 --split --nonblocking" "6 1 --split-early"; do
  set -- $cfg
  name=split-$1x$2${4:+-nb}; [ "$3" = --split-early ] && name=split-early
  NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM$SAN_PRELOAD" bash "$LAUNCH" "$1" "$J" -t "$2" -n 30 --procs "$3" ${4:-} \
    --truth "$T/$name.truth" >$name.out 2>$name.err
  check_eq "threads: $3 $1 processes x $2 threads${4:+ (non-blocking)}: runs, children of sizes 2 and 4" "0 [2, 4]" \
    "$? $(python3 -c 'import json,sys; print(sorted({z for f in sys.argv[1:] for z in json.load(open(f))["split_sizes"] if z}))' "$T/$name".truth.*)"
  "$NCS" report --json "$T/$name" >r.json 2>/dev/null
  check_eq "threads: $3 $1x$2${4:+ non-blocking}: 3 matrices (6, 4, 2 ranks), each exactly its own ring, no line unplaced; 42 collectives lined up" \
    "True 3 42" "$(pairs_ok $name.truth.*) $(py 'str(len(r["transport_matrices"])) + " " + str(r["collectives"]["complete"])')"
done
# split before the parent's first collective: the parent connects after its child was made; the
# HTML report's matrix (the job summary's, analysis/jobsum.c) holds the 6-rank ring, rank r -> r+1
"$NCS" html -o "$T/se.html" "$T/split-early" >/dev/null 2>&1
check_eq "threads: --split-early: the HTML transport matrix is the 6-rank ring (6 SHM cells, r -> r+1)" "6 True" "$(python3 - "$T/se.html" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
sec = s[s.index("Largest communicator: the transport NCCL chose"):]
sec = sec[:sec.index("</table>")]
rows = re.findall(r"<tr>(.*?)</tr>", sec, re.S)
cells = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)] for row in rows]
shm = [(int(r[0]), j - 1) for r in cells[1:] if r and r[0].isdigit() for j, c in enumerate(r) if c == "SHM"]
print(len(shm), sorted(shm) == sorted((i, (i + 1) % 6) for i in range(6)))
PY
)"
"$NCS" report "$T/split-2x3" >split.txt 2>&1
check "threads: split, text: one matrix per communicator, none says lines were left out" \
  sh -c "[ \$(grep -c '^  communicator ' split.txt) = 3 ] && grep -q '(2 ranks): 4 connections' split.txt && ! grep -q 'could not be given' split.txt"

# ---- a rank on a thread never enters its last collective: the hang names that rank ----
export NCCLSCOPE_FLUSH_MS=50
mkdir -p "$T/stall"
NCCLSCOPE_DIR="$T/stall" LD_PRELOAD="$SHIM$SAN_PRELOAD" setsid "$J" -t 4 -n 30 --all --stall 2 >stall.out 2>&1 &
spid=$!
hang_seen() {
  "$NCS" doctor --json --hang-after 0.5 "$T/stall" >d.json 2>/dev/null
  python3 -c 'import json,sys; sys.exit(0 if any(v["id"]=="hang" for v in json.load(open("d.json"))["verdicts"]) else 1)'  2>/dev/null
}
end=$((SECONDS + 30))
until hang_seen; do [ $SECONDS -ge $end ] && break; sleep 0.2; done
check_eq "threads: --stall 2: doctor's hang verdict: seq 30, rank 2 never entered, ranks 0 1 3 did" "30 [2] [0, 1, 3]" \
  "$(python3 -c 'import json; v=[v for v in json.load(open("d.json"))["verdicts"] if v["id"]=="hang"]; d=v[0]["data"] if v else {}; print(d.get("seq"), d.get("missing"), sorted(d.get("entered", [])))' 2>&1)"
"$NCS" report --json "$T/stall" >r.json 2>/dev/null
check_eq "threads: --stall 2: report's missing collective names rank 2" "30 3 [2]" \
  "$(py '" ".join(str(x) for x in (r["missing"][0]["seq"], r["missing"][0]["entered"], r["missing"][0]["never_entered"])) if r["missing"] else "none"')"
kill -9 -- -"$spid" 2>/dev/null; wait "$spid" 2>/dev/null
unset NCCLSCOPE_FLUSH_MS

# ---- a process that only calls ncclGetVersion is not a rank ----
mkdir -p "$T/probe"
NCCLSCOPE_DIR="$T/probe" LD_PRELOAD="$SHIM$SAN_PRELOAD" python3 -c '
import ctypes, os, sys
n = ctypes.CDLL(os.path.join(sys.argv[1], "libnccl.so.2")); v = ctypes.c_int()
assert n.ncclGetVersion(ctypes.byref(v)) == 0; print("version", v.value, "calls 1")' "$DOUBLES" >probe.out 2>probe.err
NCCLSCOPE_DIR="$T/probe" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$J" -t 2 -n 30 --all --truth "$T/probe.truth" >/dev/null 2>&1
check_eq "threads: the version probe ran and counted its one call; two trace files" "calls 1 2" \
  "$(sed -n 's/^version [0-9]* //p' probe.out) $(ls "$T/probe" | grep -c '\.ncs$')"
"$NCS" report --json "$T/probe" >r.json 2>/dev/null
check_eq "threads: version probe: not a rank row; listed under no_communicator with its one GetVersion" "1 True 1 {'GetVersion': 1}" \
  "$(py '" ".join(str(x) for x in (len(r["ranks"]), r["ranks"][0].get("ranks_held") == [0, 1], len(r["no_communicator"]), r["no_communicator"][0]["ops"]))')"
"$NCS" report "$T/probe" >probe.txt 2>&1
check "threads: version probe: text says 1 process made no communicator, and has no 'rank ?' row" \
  sh -c "grep -q '1 process made no communicator' probe.txt && ! grep -q 'rank ?' probe.txt && ! grep -Eq '^ +\\? ' probe.txt"
"$NCS" report --detail "$T/probe" >probe.txt 2>&1
check "threads: version probe, --detail: no 'rank ?' section" sh -c "! grep -q '^rank ?' probe.txt && grep -q 'made no communicator' probe.txt"
