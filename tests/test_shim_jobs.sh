#!/usr/bin/env bash
# test_shim_jobs.sh — the shim under the doubles' test jobs (tests/jobs/), each against the
# job's own ground truth (--truth): per trace file, every operation's calls, summed count and
# summed bytes equal what the job counted itself, and the job's output is byte-identical with
# and without the shim. threads_job: 16 threads at once, own communicators and one shared
# 16-rank communicator; fork_job: parent, forked child, exec'd child and an idle child;
# capture_job: calls captured into a CUDA graph; lifecycle_job: non-blocking init, split,
# shrink, finalize, revoke and abort with operations in flight.
. "$(dirname "$0")/lib.sh"
[ -f "$SHIM" ] && [ -x "$NCS" ] || { fail "shim_jobs: shim or decoder missing"; exit 1; }
J=$BUILD/tests
for j in threads_job fork_job capture_job lifecycle_job; do
  [ -x "$J/$j" ] || { skip "shim_jobs: $j not built"; exit 0; }
done
cd "$T"
export NCCL_DEBUG=
LAUNCH=$ROOT/tests/jobs/launch.sh

# truth_ops JSON: "Op calls count bytes" per line, sorted
truth_ops() { sed -n 's/^ *"\([A-Za-z]*\)": {"calls": \([0-9]*\), "count": \([0-9]*\), "bytes": \([0-9]*\)}.*/\1 \2 \3 \4/p' "$1" | sort; }
# trace_ops DUMP: the same from a trace's CALL records
trace_ops() {
  awk '/^CALL /{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } c[f["op"]]++; n[f["op"]] += f["count"]; b[f["op"]] += f["bytes"] }
       END { for (o in c) print o, c[o], n[o], b[o] }' "$1" | sort
}
# same_ops NAME TRUTH DUMP: PASS when equal
same_ops() {
  truth_ops "$2" >"$T/want"; trace_ops "$3" >"$T/got"
  if [ -s "$T/want" ] && cmp -s "$T/want" "$T/got"; then pass "$1"
  else fail "$1"; diff "$T/want" "$T/got" | head -6 | sed 's/^/    /'; fi
}
# both NAME CMD...: the job without and with the shim (traces in $T/NAME, truth in $T/NAME.truth)
both() {
  local name=$1; shift
  "$@" >"$name.plain" 2>"$name.plain.err"; local p=$?
  mkdir -p "$name.truth"
  NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM" "$@" >"$name.shim" 2>"$name.shim.err"; local s=$?
  if [ "$p" = "$s" ] && cmp -s "$name.plain" "$name.shim"; then pass "shim_jobs: $name: output and exit status ($p) identical with and without the shim"
  else fail "shim_jobs: $name: differs (exit $p vs $s)"; diff "$name.plain" "$name.shim" | head -4 | sed 's/^/    /'
    tail -3 "$name.plain.err" "$name.shim.err" | sed 's/^/    /'; fi
}
dumpall() { for f in "$T/$1"/*.ncs; do "$NCS" dump "$f" >"$f.d" 2>&1; done; }

# ---- threads_job: 16 threads, each its own communicator; then one shared 16-rank one ----
both threads "$J/threads_job" -t 16 -n 300
"$J/threads_job" -t 16 -n 300 --truth "$T/threads.truth/t.json" >/dev/null 2>&1
dumpall threads
same_ops "shim_jobs: threads_job 16 threads: calls/count/bytes per op equal the truth" threads.truth/t.json threads/*.ncs.d
check_eq "shim_jobs: threads_job: 16 THREAD records (the main thread makes no call), no drop" "16 0" \
  "$(grep -c '^THREAD ' threads/*.ncs.d) $(sed -n 's/^== end: .* dropped \([0-9]*\).*/\1/p' threads/*.ncs.d)"
# ncclCommInitAll wants a distinct device per rank (NCCL refuses more ranks than devices):
# 16 simulated GPUs for these two runs
export NCCLDOUBLE_NGPUS=16
both threadsall "$J/threads_job" -t 16 -n 100 --all
"$J/threads_job" -t 16 -n 100 --all --truth "$T/threadsall.truth/t.json" >/dev/null 2>&1
unset NCCLDOUBLE_NGPUS
dumpall threadsall
same_ops "shim_jobs: threads_job --all (one 16-rank CommInitAll communicator): per-op totals equal the truth" threadsall.truth/t.json threadsall/*.ncs.d
check_eq "shim_jobs: threads_job --all: 16 COMM records, one comm_id, ranks 0..15" "16 1 16" \
  "$(grep -c '^COMM ' threadsall/*.ncs.d) $(sed -n 's/^COMM comm=[0-9]* comm_id=\([0-9a-f]*\) .*/\1/p' threadsall/*.ncs.d | sort -u | wc -l) $(sed -n 's/^COMM .* rank=\([0-9]*\) nranks=16 .*/\1/p' threadsall/*.ncs.d | sort -un | wc -l)"

# ---- fork_job: parent, forked child, exec'd child, idle child ----
if ! tsan_fork_skip "shim_jobs: fork_job"; then
both fork "$J/fork_job" -n 40
rm -rf fork fork.truth; mkdir -p fork.truth
NCCLSCOPE_DIR="$T/fork" LD_PRELOAD="$SHIM" "$J/fork_job" -n 40 --truth "$T/fork.truth" >/dev/null 2>&1
dumpall fork
# the forked child leaves with _exit() right after ncclCommDestroy: the shim writes the trace
# out at CommDestroy, so it is complete up to there
check_eq "shim_jobs: fork_job: 3 traces (parent, fork child ending in _exit, exec child), none for the idle child" "3" "$(ls fork/*.ncs | wc -l)"
ok=0
for t in fork.truth/truth-*.json; do
  pid=$(sed -n 's/.*"pid": \([0-9]*\),.*/\1/p' "$t" | head -1)
  d=$(ls fork/*-"$pid".ncs.d 2>/dev/null | head -1)
  [ -n "$d" ] || { echo "    no trace for pid $pid ($t)"; continue; }
  truth_ops "$t" >want; trace_ops "$d" >got
  if cmp -s want got; then ok=$((ok + 1)); else echo "    $t:"; diff want got | head -4 | sed 's/^/    /'; fi
done
check_eq "shim_jobs: fork_job: each process's trace (by pid) equals its own truth" "3" "$ok"
idle=$(sed -n 's/.*"pid": \([0-9]*\).*/\1/p' fork.truth/idle-*.json 2>/dev/null | head -1)
check_eq "shim_jobs: fork_job: the idle child (pid $idle) left no file" "" "$(ls fork/*-"$idle".ncs 2>/dev/null)"
fi

# ---- capture_job: 2 ranks, two of three all-reduces captured into a graph ----
both capture bash "$LAUNCH" 2 "$J/capture_job" -r 3
rm -rf capture capture.truth; mkdir -p capture.truth
NCCLSCOPE_DIR="$T/capture" LD_PRELOAD="$SHIM" bash "$LAUNCH" 2 "$J/capture_job" -r 3 --truth "$T/capture.truth" >/dev/null 2>&1
dumpall capture
ok=0
for d in capture/*.ncs.d; do
  r=$(sed -n 's/^  env.RANK=//p' "$d")
  truth_ops "capture.truth/truth-rank$r.json" >want; trace_ops "$d" >got
  cap=$(grep -cE '^CALL op=AllReduce .* flags=(1|5|9)$' "$d"); gt=$(grep -c '^GPU_TIME kind=call .*flags=0$' "$d")
  if cmp -s want got && [ "$cap" = 2 ] && [ "$gt" = 1 ]; then ok=$((ok + 1)); else echo "    rank $r: captured=$cap gpu_times=$gt"; diff want got | head -3 | sed 's/^/    /'; fi
done
check_eq "shim_jobs: capture_job 2 ranks: truth equal, the 2 captured calls flagged, GPU time only for the uncaptured one" "2" "$ok"

# ---- lifecycle_job: 3 ranks ----
both lifecycle bash "$LAUNCH" 3 "$J/lifecycle_job"
rm -rf lifecycle lifecycle.truth; mkdir -p lifecycle.truth
NCCLSCOPE_DIR="$T/lifecycle" LD_PRELOAD="$SHIM" bash "$LAUNCH" 3 "$J/lifecycle_job" --truth "$T/lifecycle.truth" >/dev/null 2>&1
dumpall lifecycle
ok=0
for d in lifecycle/*.ncs.d; do
  r=$(sed -n 's/^  env.RANK=//p' "$d")
  truth_ops "lifecycle.truth/truth-rank$r.json" >want; trace_ops "$d" >got
  if cmp -s want got; then ok=$((ok + 1)); else echo "    rank $r:"; diff want got | head -4 | sed 's/^/    /'; fi
done
check_eq "shim_jobs: lifecycle_job 3 ranks: every rank's calls/count/bytes per op equal its truth" "3" "$ok"
check "shim_jobs: lifecycle_job: non-blocking init (flag), Split and Shrink with parents, Revoke and Abort ends" \
  bash -c "cat lifecycle/*.ncs.d > all.d && grep -q '^COMM .*init_op=CommInitRankConfig .*flags=1 ' all.d &&
           grep -q '^COMM .*init_op=CommSplit parent_id=[0-9a-f]*[1-9a-f][0-9a-f]* ' all.d &&
           grep -q '^COMM .*init_op=CommShrink parent_id=[0-9a-f]*[1-9a-f][0-9a-f]* ' all.d &&
           grep -q '^COMM_END .*op=CommRevoke' all.d && grep -q '^COMM_END .*op=CommAbort' all.d && grep -q '^COMM_END .*op=CommFinalize' all.d"
check_eq "shim_jobs: lifecycle_job: the Shrink communicator has one comm_id on the 2 ranks that made it" "1 2" \
  "$(sed -n 's/^COMM comm=[0-9]* comm_id=\([0-9a-f]*\) .*init_op=CommShrink .*/\1/p' lifecycle/*.ncs.d | sort -u | wc -l) $(grep -h -c 'init_op=CommShrink' lifecycle/*.ncs.d | paste -sd+ | bc)"
check "shim_jobs: lifecycle_job: every trace complete (FINAL chunk), none damaged" \
  bash -c "for d in lifecycle/*.ncs.d; do grep -q '^-- chunk .* final\$' \$d || exit 1; grep -q DAMAGED \$d && exit 1; done; exit 0"
