#!/usr/bin/env bash
# test_hang.sh — the failures a stuck job shows, each a scenario job on the doubles
# (tests/jobs/hang_job.c) with its expected verdict from `ncclscope doctor` (analysis/hang.c,
# docs/DOCTOR.md), plus `ncclscope watch` on a job that hangs and on one that does not.
#   healthy job, finished and live ........ no hang / dead-rank / init-hang / desync verdict
#   rank 1 stops calling (blocking) ....... hang at seq 5: rank 0 entered, rank 1 never did
#   rank 1 stops calling (asynchronous) ... the same, rank 0 in flight on the GPU
#   SIGTERM, the job's own handler exits .. complete traces, the hang still shows
#   rank 1 killed -9 mid-collective ....... dead-rank 1 (its trace cut while rank 0 waited)
#   rank 1 never calls ncclCommInitRank ... init-hang: rank 0 arrived, rank 1 never did
#   rank 1 never calls ncclCommSplit ...... init-hang of the split
#   rank 1 calls AllGather / half the size  desync at seq 5
# Hang verdicts use --hang-after 0.5: the test polls until the verdict is due (at most 30 s per
# scenario, a failure cap, never an assertion on a duration).
source "$(dirname "$0")/lib.sh"
for f in "$SHIM" "$NCS" "$DOUBLES/libnccl.so.2"; do [ -e "$f" ] || { skip "hang: $f not built"; exit 0; }; done
JOB=$BUILD/tests/hang_job
[ -x "$JOB" ] || { skip "hang: $JOB not built"; exit 0; }
LAUNCH=$ROOT/tests/jobs/launch.sh
export NCCLSCOPE_FLUSH_MS=50

# start NAME ARGS...: the job under the launcher (2 ranks), in its own process group
start() {
  local name=$1; shift
  mkdir -p "$T/$name"
  NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM$SAN_PRELOAD" setsid bash "$LAUNCH" 2 "$JOB" "$@" \
    >"$T/$name.out" 2>"$T/$name.err" &
  echo $! >"$T/$name.pid"
}
stop() { kill -9 -- -"$(cat "$T/$1.pid")" 2>/dev/null; wait "$(cat "$T/$1.pid")" 2>/dev/null; }
# poll SECONDS CMD...: reruns CMD until it succeeds; 1 when it never did
poll() {
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -ge $end ] && return 1; sleep 0.2; done
}
# doctor_json NAME [OPTIONS...]: the doctor's JSON on NAME's traces into $T/NAME.json
doctor_json() { local n=$1; shift; "$NCS" doctor --json "$@" "$T/$n" >"$T/$n.json" 2>"$T/$n.derr"; echo $? >"$T/$n.rc"; }
# has_verdict NAME ID: the last doctor_json of NAME has a verdict ID
has_verdict() { python3 -c 'import json,sys; sys.exit(0 if any(v["id"]==sys.argv[2] for v in json.load(open(sys.argv[1]))["verdicts"]) else 1)' "$T/$1.json" "$2"; }
poll_verdict() { local n=$1 id=$2; shift 2; poll 30 bash -c "'$NCS' doctor --json $* '$T/$n' >'$T/$n.json' 2>/dev/null; python3 -c 'import json,sys; sys.exit(0 if any(v[\"id\"]==\"$id\" for v in json.load(open(\"$T/$n.json\"))[\"verdicts\"]) else 1)'"; }
# data NAME ID EXPR: a Python expression over the data of verdict ID (d) and the verdict (v)
data() { python3 -c 'import json,sys; v=[v for v in json.load(open(sys.argv[1]))["verdicts"] if v["id"]==sys.argv[2]][0]; d=v.get("data",{}); print(eval(sys.argv[3]))' "$T/$1.json" "$2" "$3" 2>&1; }
HANGS='["hang","dead-rank","init-hang","desync"]'
no_hang_verdict() { python3 -c 'import json,sys; ids=[v["id"] for v in json.load(open(sys.argv[1]))["verdicts"]]; bad=[i for i in ids if i in json.loads(sys.argv[2])]; print(bad); sys.exit(1 if bad else 0)' "$T/$1.json" "$HANGS"; }
# last_call_named JSON RANK SEQ TRACE...: the doctor's evidence that RANK never entered SEQ names
# its last call (op, seq, rc) as RANK's trace's last CALL record (ncclscope dump), the truth
last_call_named() {
  python3 - "$NCS" "$@" <<'EOF'
import json, re, subprocess, sys
ncs, js, rank, seq, paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
ev = " ".join(e for v in json.load(open(js))["verdicts"] for e in v.get("evidence", []))
m = re.search(r"rank %s [^;]*never entered seq %s[^;]*; last call (\S+) comm .*? seq (\d+) returned (-?\d+)" % (rank, seq), ev)
assert m, ev
for path in paths:
    dump = subprocess.run([ncs, "dump", path], capture_output=True, text=True).stdout
    if not re.search(r"^COMM .* rank=%s " % rank, dump, re.M): continue
    last = dict(w.split("=", 1) for w in [l for l in dump.splitlines() if l.startswith("CALL ")][-1].split()[1:] if "=" in w)
    assert (last["op"], last["seq"], last["rc"]) == m.groups(), (last, m.groups())
    print("rank", rank, "last call", m.groups())
    sys.exit(0)
sys.exit("no trace of rank " + rank)
EOF
}

# The scenario jobs below that hang or die start now, all at once: each check then polls its
# own job, which has had the time the earlier checks took (they sleep in the doubles' waits,
# using no CPU). Only the order of waiting changes; every check is as it was.
start block --stop 1:5
start async --stop 1:5 --sync-every 1000 --steps 12
start term --stop 1:5 --term-exit
mkdir -p "$T/kill" "$T/kill.rdzv"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r NCCLDOUBLE_RDZV="$T/kill.rdzv" NCCLSCOPE_DIR="$T/kill" \
    LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" --die 1:5 --step-ms 100 >/dev/null 2>&1 &
  kp[$r]=$!
done
start init --no-init 1
start split --split-stop 1
for kind in op size; do start "mm$kind" --mismatch "1:5:$kind"; done

# ---- a healthy job: finished, then live ----
start healthy --steps 30
wait "$(cat "$T/healthy.pid")"; rc=$?
check_eq "hang: healthy job runs" 0 "$rc"
doctor_json healthy --hang-after 0.5
check "hang: healthy job: no hang, dead-rank, init-hang or desync verdict" no_hang_verdict healthy
"$NCS" report "$T/healthy" >"$T/healthy.rep" 2>&1
check_eq "hang: healthy job: report exits 0, no trace cut" "0 0" "$? $(grep -c 'CUT' "$T/healthy.rep")"

# The healthy jobs that watch and doctor read while they run keep the shim's default flush
# period (500 ms): dead-rank judges a cut trace dead once its peers' last sign of life is later
# by two of its observed heartbeat periods + 100 ms, and with the 50 ms the hang scenarios use
# (200 ms) a writer kept off the CPU that long on a loaded machine made a running rank "dead"
# (seen at load 17: rank 0's trace 0.255 s behind rank 1's).
NCCLSCOPE_FLUSH_MS=500 start live --steps 100000 --step-ms 5
# both ranks' traces (*.ncs: each also has its .rings file beside it) hold an all-reduce
poll 30 bash -c "[ \$(ls '$T/live'/*.ncs 2>/dev/null | wc -l) -eq 2 ] && '$NCS' report --json '$T/live' 2>/dev/null | grep -q '\"AllReduce\"'" ||
  fail "hang: the live job's two traces never showed an all-reduce within 30 s: $(ls "$T/live" | tr '\n' ' ')"
doctor_json live
# exit 0 or 1: cut traces are normal input (not 3 or 4); other checks (comm-bound, gpu-idle) may
# fire on the doubles, the hang checks must not
check "hang: live report of a healthy running job: doctor reads the cut traces as normal input (exit 0 or 1)" \
  test "$(cat "$T/live.rc")" -le 1
check "hang: live report of a healthy running job: no hang verdict" no_hang_verdict live
"$NCS" watch --once "$T/live" >"$T/live.watch" 2>&1
got="$? $(grep -c '^[01] ' "$T/live.watch")"
check_eq "hang: watch --once on a healthy running job: exit 0, one line per rank" "0 2" "$got"
[ "$got" = "0 2" ] || sed 's/^/    /' "$T/live.watch"
check_eq "hang: the job was still running during those checks" 0 "$(kill -0 "$(cat "$T/live.pid")" 2>/dev/null; echo $?)"
stop live

# watch on a healthy job until it ends: exit 0
NCCLSCOPE_FLUSH_MS=500 start wfine --steps 200 --step-ms 2
timeout 60 "$NCS" watch --interval 0.2 "$T/wfine" >"$T/wfine.watch" 2>&1; rc=$?
check_eq "hang: watch on a job that does not hang: exit 0 when every rank finished" "0 1" \
  "$rc $(grep -c '^every rank finished' "$T/wfine.watch")"
check "hang: watch prints plain table lines when not on a terminal" grep -q '^rank  *host:pid  *state' "$T/wfine.watch"
wait "$(cat "$T/wfine.pid")"

# ---- one rank stops calling: blocking (sync after every collective) ----
poll_verdict block hang --hang-after 0.5; rc=$?
check_eq "hang: rank 1 stops calling (blocking): doctor finds the hang while the job runs" 0 "$rc"
check_eq "hang: ... at seq 5, entered [0], never entered [1]" "5 [0] [1]" "$(data block hang 'd["seq"], d["entered"], d["missing"]' | tr -d '(),')"
check "hang: ... says what rank 1 was doing last" bash -c "grep -q 'rank 1 .*never entered seq 5.*outside NCCL since' '$T/block.json'"
check "hang: ... names rank 1's last call as its trace's last CALL record" last_call_named "$T/block.json" 1 5 "$T"/block/*.ncs
timeout 60 "$NCS" watch --hang-after 0.5 --interval 0.2 "$T/block" >"$T/block.watch" 2>&1; rc=$?
check_eq "hang: watch on a running job that hangs: exit 1 with the hang" "1 1" "$rc $(grep -c '^PROBLEM hang' "$T/block.watch")"
check "hang: watch shows rank 0's collective in flight" grep -q '^0 .*AllReduce seq 5 for' "$T/block.watch"
stop block

# ---- one rank stops calling: asynchronous (collectives queue up, one sync at the end) ----
poll_verdict async hang --hang-after 0.5; rc=$?
check_eq "hang: rank 1 stops calling (asynchronous): hang found" 0 "$rc"
check_eq "hang: ... at seq 5, entered [0], never entered [1]" "5 [0] [1]" "$(data async hang 'd["seq"], d["entered"], d["missing"]' | tr -d '(),')"
check "hang: ... rank 0's AllReduce is in flight on the GPU" bash -c "grep -q 'rank 0 .*entered AllReduce at .*in flight on the GPU' '$T/async.json'"
stop async

# ---- SIGTERM, the job's own handler exits ----
poll_verdict term hang --hang-after 0.5
kill -TERM "$(cat "$T/term.pid")"; wait "$(cat "$T/term.pid")" 2>/dev/null
# the launcher is gone; its ranks finish their exit (the shim's last flush) on their own
poll 30 bash -c "'$NCS' report --json '$T/term' 2>/dev/null | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"warnings\"]))'"
"$NCS" report --json "$T/term" >"$T/term.rep" 2>/dev/null; rc=$?
check_eq "hang: SIGTERM with the job's handler (exit): report exits 0, no warning (both traces complete)" "0 0" \
  "$rc $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["warnings"]))' "$T/term.rep" 2>&1)"
doctor_json term --hang-after 0.5
check "hang: ... the hang at seq 5 is still the verdict after the job ended" has_verdict term hang
check_eq "hang: ... with rank 1 never entered" "5 [1]" "$(data term hang 'd["seq"], d["missing"]' | tr -d '(),')"

# ---- rank 1 killed with -9 mid-collective (ranks started by hand: a launcher would kill rank
# 0 at once; here rank 0 waits until the NCCL double notices the dead peer) ----
wait "${kp[0]}" "${kp[1]}" 2>/dev/null
doctor_json kill --hang-after 0.5
check "hang: rank killed -9 mid-collective: dead-rank verdict" has_verdict kill dead-rank
# rank 1's step-5 all-reduce (seq 5) returned before its SIGKILL: its trace holds it (read back
# from its rings file, docs/FORMAT.md), so the first collective it never entered is seq 6
check_eq "hang: ... names rank 1, and rank 0 as the one that entered seq 6" "6 [0] [1]" \
  "$(data kill dead-rank 'd["seq"], d["entered"], d["missing"]' | tr -d '(),')"
check "hang: ... gives rank 1's last sign of life" bash -c "grep -q 'rank 1 .*trace cut at .*its last sign of life' '$T/kill.json'"
"$NCS" report "$T/kill" >/dev/null 2>&1
check_eq "hang: ... report of the cut trace exits 0" 0 "$?"

# ---- rank 1 never arrives at init ----
poll_verdict init init-hang --hang-after 0.5; rc=$?
check_eq "hang: rank 1 never calls ncclCommInitRank: init-hang found" 0 "$rc"
check_eq "hang: ... arrived [0], never arrived [1], of 2 ranks" "[0] [1] 2" "$(data init init-hang 'd["entered"], d["missing"], d["nranks"]' | tr -d '(),')"
check_eq "hang: ... the operation is CommInitRank" "CommInitRank" "$(data init init-hang 'd["op"]')"
stop init

# ---- rank 1 never arrives at a split of the communicator ----
poll_verdict split init-hang --hang-after 0.5; rc=$?
check_eq "hang: rank 1 never calls ncclCommSplit: init-hang found" 0 "$rc"
check_eq "hang: ... CommSplit, split #1, arrived [0], never arrived [1]" "CommSplit 1 [0] [1]" \
  "$(data split init-hang 'd["op"], d["seq"], d["entered"], d["missing"]' | tr -d "(),'")"
check "hang: ... says what rank 1 was doing (its trace: outside NCCL since its init)" \
  bash -c "grep -q 'rank 1 never arrived (host .*outside NCCL since' '$T/split.json'"
stop split

# ---- desync: a different collective, a different size, at the same sequence number ----
for kind in op size; do
  poll_verdict "mm$kind" desync; rc=$?
  check_eq "hang: rank 1 calls a different $kind at seq 5: desync found" 0 "$rc"
  check_eq "hang: ... at seq 5" 5 "$(data "mm$kind" desync 'd["seq"]')"
  stop "mm$kind"
done
check "hang: ... the different collective is named (AllGather)" grep -q 'rank 1 called AllGather count 1024' "$T/mmop.json"
check "hang: ... the different size is named (count 512)" grep -q 'rank 1 called AllReduce count 512' "$T/mmsize.json"
# Of 2 ranks neither is the odd one: both named, the same whichever file the decoder reads first
# (the files given in both orders, one decoder thread: before, the rank read second was blamed)
check "hang: ... 2 ranks: both named, no rank blamed" grep -q 'its 2 ranks differ (no majority tells which one is odd): rank 0 called AllReduce count 1024 float32 root -1, rank 1 called AllGather' "$T/mmop.json"
files=$(ls "$T"/mmop/*.ncs)
desync_of() { NCCLSCOPE_THREADS=1 "$NCS" doctor --json "$@" 2>/dev/null | python3 -c 'import json,sys; print([(v["evidence"], v.get("data")) for v in json.load(sys.stdin)["verdicts"] if v["id"] == "desync"])'; }
fwd=$(desync_of $files); rev=$(desync_of $(ls -r "$T"/mmop/*.ncs))
[ "$fwd" = "$rev" ] && [ "$fwd" != "[]" ] && pass "hang: ... the desync verdict is the same whichever file is read first" \
  || fail "hang: desync by read order: $fwd / $rev"

# A GPU-timed trace (each CALL followed by its GPU_TIME: the calls reach the analysis one at a
# time) where rank 2 never enters seq 150: its last call named as its trace's last CALL record
"$NCS" synth -o "$T/smiss" --ranks 4 --calls 300 --missing 2:150 --seed 3 >/dev/null 2>&1 &&
  "$NCS" doctor --json "$T/smiss" >"$T/smiss.json" 2>/dev/null
check "hang: GPU-timed synthetic job, rank 2 never enters seq 150: its last call named as its trace's last CALL record" \
  last_call_named "$T/smiss.json" 2 150 "$T"/smiss/*.ncs
