#!/usr/bin/env bash
# test_jobs_group.sh — several jobs in one trace directory, and torchrun restarts (issue 11,
# parts 5 and 7; docs/CLI.md "Several jobs in one directory"), on the doubles' ddp_job
# (tests/jobs/launch.sh), each job's own truth (its --truth files, what it printed) against
# `jobs --json` and `report --json`:
#  - two different 4-rank jobs run at the same time on the same host with the same master
#    port (only their communicators tell them apart), plus a process that only called
#    ncclGetVersion (no job of its own) and a 2-rank trace of format 1.0: three jobs; every
#    reading command refuses the directory (exit 2, listing the jobs) and takes --job;
#  - one torchrun job whose first attempt is killed (kill -9 of its ranks) and restarted
#    (TORCHELASTIC_RESTART_COUNT 1): one job, attempts 1 (cut) and 2 (complete) in order;
#    collectives are never lined up across attempts;
#  - the directory of a job still running: every `jobs` and `report` exits 0, never more
#    than one job.
. "$(dirname "$0")/lib.sh"
J=$BUILD/tests
[ -f "$SHIM" ] && [ -x "$NCS" ] && [ -x "$J/ddp_job" ] || { fail "jobs_group: shim, decoder or ddp_job missing"; exit 1; }
command -v python3 >/dev/null || { skip "jobs_group: python3 needed to read the JSON"; exit 0; }
cd "$T"
export NCCL_DEBUG=
LAUNCH=$ROOT/tests/jobs/launch.sh
traced() { NCCLSCOPE_DIR="$T/$1" LD_PRELOAD="$SHIM$SAN_PRELOAD" "${@:2}"; }
# A job left running (a failed check) is stopped with the test: its launcher kills its ranks.
LIVE=()
trap 'for p in "${LIVE[@]}"; do kill "$p" 2>/dev/null; done; ncs_cleanup' EXIT
# stop_ranks PID: kill -9 the ranks of the launch.sh whose pid is PID, and reap it
stop_ranks() { local k; k=$(pgrep -P "$1"); [ -n "$k" ] && kill -9 $k; wait "$1" 2>/dev/null; }

# ---- part 5: two jobs interleaved in time, a GetVersion-only process, an old trace --------
mkdir -p a.truth b.truth
traced two "$LAUNCH" 4 "$J/ddp_job" --steps 3 --compute-us 2000 --truth "$T/a.truth" >a.out 2>a.err & pa=$!
traced two "$LAUNCH" 4 "$J/ddp_job" --steps 5 --compute-us 2000 --truth "$T/b.truth" >b.out 2>b.err & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
check_eq "jobs_group: both jobs ran (exit status)" "0 0" "$ra $rb"
traced two python3 -c 'import ctypes, sys
v = ctypes.c_int(); sys.exit(ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v)))' "$DOUBLES/libnccl.so.2"
cp "$ROOT"/tests/golden/traces/job/rank*.ncs two/
check_eq "jobs_group: the old traces are format 1.0" "0100 0100" \
  "$(for f in two/rank*.ncs; do od -An -tx1 -j8 -N2 "$f" | tr -d ' \n'; echo; done | tr '\n' ' ' | sed 's/ $//')"
"$NCS" jobs --json two >jobs.json 2>jobs.err
check_eq "jobs_group: jobs exits 0" 0 $?
# truth: per job, {rank: {op: calls}}; trace: the same from report --json --job N
truth_of() { python3 - "$1" <<'EOF'
import json, glob, sys
t = {}
for f in glob.glob(sys.argv[1] + "/truth-rank*.json"):
    d = json.load(open(f)); t[d["rank"]] = {k: v["calls"] for k, v in d["ops"].items()}
print(json.dumps(t, sort_keys=True))
EOF
}
ranks_of() { python3 -c 'import json, sys
d = json.load(sys.stdin); att = sys.argv[1] if len(sys.argv) > 1 else None
print(json.dumps({str(r["rank"]): {k: v["calls"] for k, v in r["ops"].items()} for r in d["ranks"]
                  if r["rank"] is not None and (att is None or str(r["attempt"]) == att)}, sort_keys=True))' "$@"; }
ta=$(truth_of a.truth); tb=$(truth_of b.truth)
summary=$(python3 -c 'import json
d = json.load(open("jobs.json"))
print(" ".join(sorted("%d:%d:%d:%s" % (j["attempts"][0]["ranks"], len(j["attempts"]), j["attempts"][0]["files"], j["attempts"][0]["ended"]) for j in d["jobs"])), "apart", len(d["apart"]))')
check_eq "jobs_group: three jobs (4, 4 and 2 ranks, one attempt each, complete), the GetVersion-only process in none" \
  "2:1:2:complete 4:1:4:complete 4:1:4:complete apart 1" "$summary"
got=""
for id in 1 2 3; do
  "$NCS" report --json --job $id two >r$id.json 2>r$id.err; rc=$?
  n=$(python3 -c 'import json; print(len(json.load(open("r'$id'.json"))["ranks"]))' 2>/dev/null)
  [ "$n" = 4 ] || continue
  g=$(ranks_of <r$id.json)
  if [ "$g" = "$ta" ]; then got="$got A$rc"; elif [ "$g" = "$tb" ]; then got="$got B$rc"; else got="$got ?$rc"; fi
done
check_eq "jobs_group: report --json --job N of each 4-rank job equals one job's own truth, per rank and op" \
  "A0 B0" "$(echo $got | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')"
old=$(python3 -c 'import json
for j in json.load(open("jobs.json"))["jobs"]:
    if j["attempts"][0]["ranks"] == 2: print(j["job"], " ".join(p.split("/")[-1] for p in j["attempts"][0]["paths"]))')
check_eq "jobs_group: the format 1.0 traces are one job of their own" "rank0.ncs rank1.ncs" "${old#* }"
"$NCS" report --json --job "${old%% *}" two >old.json 2>/dev/null
check_eq "jobs_group: report --job of the old job reads both of its ranks" "0 1" \
  "$(python3 -c 'import json; print(" ".join(str(r["rank"]) for r in json.load(open("old.json"))["ranks"]))')"
for c in "report" "report --json" "doctor" "html -o x.html" "timeline -o x.json" "compare two"; do
  "$NCS" $c two >refuse.out 2>refuse.err; rc=$?
  if [ $rc = 2 ] && [ ! -s refuse.out ] && grep -q "hold 3 jobs" refuse.err && grep -q "^job 3:" refuse.err &&
     grep -q -- "--job ID" refuse.err; then pass "jobs_group: $c of three jobs refuses (exit 2), listing them"
  else fail "jobs_group: $c of three jobs: exit $rc"; head -3 refuse.err | sed 's/^/    /'; fi
done
for c in "doctor --job 1" "html --job 1 -o x.html" "timeline --job 1.1 -o x.json" "compare --base-job 1 --job 1 two"; do
  "$NCS" $c two >/dev/null 2>pick.err; rc=$?
  if [ $rc = 0 ] || [ $rc = 1 ]; then pass "jobs_group: $c reads one job (exit $rc)"
  else fail "jobs_group: $c: exit $rc"; head -2 pick.err | sed 's/^/    /'; fi
done
"$NCS" report --job 9 two >/dev/null 2>nine.err
check_eq "jobs_group: --job naming no job is refused, listing the jobs" "2 1" "$? $(grep -c "^job 1:" nine.err)"

# ---- part 7: a torchrun job killed and restarted -----------------------------------------
mkdir -p a2.truth
TORCHELASTIC_RUN_ID=elastic-7 TORCHELASTIC_RESTART_COUNT=0 NCCLSCOPE_DIR="$T/el" LD_PRELOAD="$SHIM" \
  "$LAUNCH" 4 "$J/ddp_job" --steps 100000 --compute-us 2000 >a1.out 2>a1.err & lp=$!
LIVE+=($lp)
# killed once it has printed (its stdout is a file: it comes in blocks) and all 4 ranks trace
for _ in $(seq 600); do
  [ -s a1.out ] && [ "$(ls el/*.ncs 2>/dev/null | wc -l)" = 4 ] && break
  kill -0 $lp 2>/dev/null || break
  sleep 0.1
done
stop_ranks $lp
printed=$(grep -c '^step [0-9]*: 4 ranks, results correct$' a1.out)
TORCHELASTIC_RUN_ID=elastic-7 TORCHELASTIC_RESTART_COUNT=1 \
  traced el "$LAUNCH" 4 "$J/ddp_job" --steps 3 --compute-us 2000 --truth "$T/a2.truth" >a2.out 2>a2.err
check_eq "jobs_group: the restarted attempt ran (exit 0), the first printed steps before its kill" "0 yes" \
  "$? $([ "$printed" -gt 0 ] && echo yes || echo no)"
"$NCS" jobs --json el >el-jobs.json 2>/dev/null
check_eq "jobs_group: restart: one job, attempts 1 (restart 0, cut) then 2 (restart 1, complete), 4 ranks each, in order" \
  "1 elastic-7 1:0:4:cut 2:1:4:complete ordered" "$(python3 -c 'import json
d = json.load(open("el-jobs.json")); j = d["jobs"]; a = j[0]["attempts"]
print(len(j), j[0]["run_id"], " ".join("%d:%s:%d:%s" % (x["attempt"], x["restart_count"], x["files"], x["ended"]) for x in a),
      "ordered" if a[0]["end_realtime_ns"] <= a[1]["start_realtime_ns"] else "overlap")')"
"$NCS" report --json el >el.json 2>el.err
check_eq "jobs_group: report of the restarted job exits 0 (a cut attempt is a warning)" 0 $?
check_eq "jobs_group: report --json: job.attempts in order, cut then complete" "cut complete" \
  "$(python3 -c 'import json; print(" ".join(a["ended"] for a in json.load(open("el.json"))["job"]["attempts"]))')"
check_eq "jobs_group: report --json rank rows: attempt 1's ranks 0..3, then attempt 2's" "1:0 1:1 1:2 1:3 2:0 2:1 2:2 2:3" \
  "$(python3 -c 'import json; print(" ".join("%s:%s" % (r["attempt"], r["rank"]) for r in json.load(open("el.json"))["ranks"]))')"
check_eq "jobs_group: attempt 2's ranks in report --json equal its own truth" "$(truth_of a2.truth)" "$(ranks_of 2 <el.json)"
per_step=$(python3 -c 'import json; print(json.load(open("a2.truth/truth-rank0.json"))["ops"]["AllReduce"]["calls"] // 3)')
a1=$(python3 -c 'import json; print([r for r in json.load(open("el.json"))["ranks"] if r["attempt"] == 1 and r["rank"] == 0][0]["ops"]["AllReduce"]["calls"])')
if [ "$a1" -ge $((printed * per_step)) ]; then pass "jobs_group: attempt 1 rank 0: $a1 AllReduce traced >= $printed steps printed x $per_step"
else fail "jobs_group: attempt 1 rank 0: $a1 AllReduce traced < $printed steps printed x $per_step"; fi
for a in 1.1 1.2; do "$NCS" report --json --job $a el >el-$a.json 2>/dev/null; done
check_eq "jobs_group: collectives lined up = attempt 1's + attempt 2's (none across attempts), no mismatch" "yes 0" \
  "$(python3 -c 'import json
c = lambda f: json.load(open(f))["collectives"]["complete"]
print("yes" if c("el.json") == c("el-1.1.json") + c("el-1.2.json") and c("el-1.2.json") > 0 else "no", len(json.load(open("el.json"))["mismatches"]))')"
"$NCS" report el >el.txt 2>/dev/null
grep -q "^2 attempts of one job" el.txt && grep -q "^  1.1 .*cut, restart 0" el.txt && grep -q "^  1.2 .*complete, restart 1" el.txt \
  && pass "jobs_group: the text report lists the attempts in order" || { fail "jobs_group: text report lacks the attempts"; grep -A3 attempts el.txt | sed 's/^/    /'; }

# ---- a job still running: no phantom job ----------------------------------------------------
NCCLSCOPE_DIR="$T/live" LD_PRELOAD="$SHIM" "$LAUNCH" 4 "$J/ddp_job" --steps 100000 --compute-us 2000 >live.out 2>live.err & lp=$!
LIVE+=($lp)
bad="" runs=0
for _ in $(seq 8); do
  "$NCS" jobs --json live >live.json 2>/dev/null; rc=$?
  n=$(python3 -c 'import json; print(len(json.load(open("live.json"))["jobs"]))' 2>/dev/null || echo none)
  "$NCS" report --json live >/dev/null 2>&1; rr=$?
  # before the first trace file exists: exit 4 (no trace), nothing else
  if [ $rc = 4 ] && [ "$n" = none ]; then :
  elif [ $rc = 0 ] && { [ "$n" = 0 ] || [ "$n" = 1 ]; }; then runs=$((runs + 1))
  else bad="$bad jobs:$rc/$n"; fi
  [ $rr = 0 ] || [ $rr = 4 ] || bad="$bad report:$rr"
  sleep 0.2
done
alive=$(kill -0 $lp 2>/dev/null && echo yes || echo no)
stop_ranks $lp
check_eq "jobs_group: a live directory: jobs and report never fail nor see more than one job ($runs reads)" " yes" "$bad $alive"
