#!/usr/bin/env bash
# test_doubles_jobs.sh — the launcher and the jobs other tests build on: launch.sh's variables
# and failure handling, ddp_job's checked results, deterministic stdout and ground truth,
# bench_loop on 1 and 2 ranks.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
L=$ROOT/tests/jobs/launch.sh

# launcher: variables per rank
bash "$L" 3 sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $([ -d "$NCCLDOUBLE_RDZV" ] && echo rdzv)"' >"$T/vars"
check_eq "launch.sh sets RANK/LOCAL_RANK/WORLD_SIZE/LOCAL_WORLD_SIZE and a rendezvous dir" \
  "0 0 3 3 rdzv|1 1 3 3 rdzv|2 2 3 3 rdzv" "$(sort "$T/vars" | paste -sd'|')"
LAUNCH_NODES=2 bash "$L" 4 sh -c 'echo "$RANK $LOCAL_RANK $NCCLDOUBLE_NODE"' >"$T/nodes"
check_eq "LAUNCH_NODES=2 spreads 4 ranks over 2 simulated hosts" "0 0 0|1 1 0|2 0 1|3 1 1" "$(sort "$T/nodes" | paste -sd'|')"
# the others would write $T/fin.RANK after 30 s: killed, they never do. Under heavy load one
# rank was seen to survive the kill and finish (1 run in ~3 of a full suite under load, not
# reproduced by hand; docs/RELIABILITY.md "Known problems"), so only the status is checked and
# the survivors are a figure.
bash "$L" 3 sh -c 'if [ "$RANK" = 1 ]; then exit 7; fi; sleep 30; echo done >"$0.$RANK"' "$T/fin"
rc=$?
echo "# figures: launch.sh: ranks that outlived the failing one: $(ls "$T" | grep -c '^fin\.')"
check_eq "one rank failing: launch.sh exits with its status" "7" "$rc"

# ddp_job: results checked by the job; stdout deterministic; ground truth per rank
mkdir -p "$T/gt"
bash "$L" 4 "$J/ddp_job" --steps 3 --truth "$T/gt" --lat-us 20 --bw-gbps 2 >"$T/ddp1" 2>"$T/ddp1.err"
check_eq "ddp_job on 4 ranks succeeds" 0 "$?"
bash "$L" 4 "$J/ddp_job" --steps 3 --overlap >"$T/ddp2" 2>"$T/ddp2.err"
check_eq "ddp_job --overlap on 4 ranks succeeds" 0 "$?"
check_eq "ddp_job stdout" "step 0: 4 ranks, results correct|step 1: 4 ranks, results correct|step 2: 4 ranks, results correct|ddp_job: 3 steps on 4 ranks, all results correct" \
  "$(paste -sd'|' "$T/ddp1")"
bash "$L" 4 "$J/ddp_job" --steps 3 >"$T/ddp3" 2>&1
check "ddp_job stdout identical across runs" cmp "$T/ddp1" "$T/ddp3"
check_eq "ground truth: one file per rank" 4 "$(ls "$T/gt" | grep -c '^truth-rank[0-3]\.json$')"
g=$T/gt/truth-rank2.json
# per step: 4 bucket all-reduces (65536+16384+4096 fp32, 32768 bf16), 4096-float all-gather,
# broadcast and reduce-scatter, 8192-float send and recv in one group; 3 steps
check "ground truth AllReduce: 12 calls, count 356352, bytes 1228800" \
  grep -q '"AllReduce": {"calls": 12, "count": 356352, "bytes": 1228800}' "$g"
check "ground truth Send: 3 calls, 24576 floats" grep -q '"Send": {"calls": 3, "count": 24576, "bytes": 98304}' "$g"
check "ground truth GroupStart/GroupEnd counted" grep -q '"GroupEnd": {"calls": 3, "count": 0, "bytes": 0}' "$g"
check "ground truth: only rank 0 called GetUniqueId" \
  sh -c "grep -q GetUniqueId '$T/gt/truth-rank0.json' && ! grep -q GetUniqueId '$g'"
# modelled comm per step at 20 us + 2 GB/s on 4 ranks, from the busbw factors of docs/REFERENCE-FIGURES.md:
# all-reduce 1.5*(262144+65536+16384+65536) B = 307200 ns, all-gather and reduce-scatter
# 0.75*65536 B = 24576 ns each, broadcast 16384 B = 8192 ns, p2p 32768 B = 16384 ns,
# plus 8 latencies of 20 us  ->  380928 + 160000 = 540928 ns
check "ground truth: modelled comm time per step (540928 ns)" grep -q '"comm_ns_per_step": 540928' "$g"
check "ground truth: compute time per step" grep -q '"compute_ns_per_step": 2000000' "$g"

# bench_loop
"$J/bench_loop" -n 2000 >"$T/b1" 2>&1
check "bench_loop on a 1-rank communicator" grep -q '^bench_loop ranks=1 iters=2000 count=8 sync_every=100 ns_per_call=' "$T/b1"
bash "$L" 2 "$J/bench_loop" -n 500 -k 50 >"$T/b2" 2>&1
check "bench_loop on a 2-rank communicator" grep -q '^bench_loop ranks=2 iters=500 count=8 sync_every=50 ns_per_call=' "$T/b2"

# threads_job: 16 threads with their own communicators; 8 ranks of one ncclCommInitAll
"$J/threads_job" -n 30 --truth "$T/threads.json" >"$T/th1" 2>&1
check_eq "threads_job: 16 threads, own communicators" "0|threads_job: 16 threads, 30 calls each|  GetUniqueId 16|  CommInitRank 16|  CommDestroy 16|  AllReduce 160|  Broadcast 160|  AllGather 160" \
  "$?|$(paste -sd'|' "$T/th1")"
check "threads_job ground truth" grep -q '"AllGather": {"calls": 160, "count": 10240, "bytes": 40960}' "$T/threads.json"
"$J/threads_job" --all -t 8 -n 30 >"$T/th2" 2>&1
check_eq "threads_job --all: 8 ranks of one communicator, one per thread" "0|  CommInitAll 1|  AllReduce 80" \
  "$?|$(grep -E '^  (CommInitAll|AllReduce) ' "$T/th2" | paste -sd'|')"

# fork_job: parent, fork child with its own communicator, exec child, idle child
if ldd "$J/fork_job" 2>/dev/null | grep -q libtsan; then
  skip "fork_job: ThreadSanitizer cannot run a forked child that starts threads (its stream worker)"
else
  mkdir -p "$T/fork"
  "$J/fork_job" --truth "$T/fork" -n 40 >"$T/fork.out" 2>&1
  check_eq "fork_job" "0 fork_job: parent 80 all-reduces, fork child 20, exec child 10, idle child 0: all ok" "$? $(cat "$T/fork.out")"
  check_eq "fork_job ground truth: parent, fork child, exec child, idle child" "4" "$(ls "$T/fork" | grep -cE '^(truth-(parent|fork-child|exec-child)|idle)-[0-9]+\.json$')"
  check "fork_job ground truth of the fork child" grep -q '"AllReduce": {"calls": 20, "count": 5120, "bytes": 20480}' "$T"/fork/truth-fork-child-*.json
fi

# capture_job: captured NCCL calls do not run; each graph replay runs them
mkdir -p "$T/cap"
bash "$L" 3 "$J/capture_job" -r 3 --truth "$T/cap" >"$T/cap.out" 2>&1
check_eq "capture_job on 3 ranks" "0 capture_job: 3 ranks, 1 plain + 2 captured all-reduces, 3 replays: all ok" "$? $(cat "$T/cap.out")"
check "capture_job ground truth" grep -q '"captured": {"AllReduce": 2}, "replays": 3' "$T/cap/truth-rank1.json"

# lifecycle_job: non-blocking init, split, shrink, revoke and abort with operations in flight
mkdir -p "$T/life"
bash "$L" 4 "$J/lifecycle_job" --truth "$T/life" >"$T/life.out" 2>&1
check_eq "lifecycle_job on 4 ranks" "0 lifecycle_job: 4 ranks: non-blocking init, split, shrink, revoke and abort in flight: all ok" \
  "$? $(cat "$T/life.out")"
check "lifecycle_job ground truth: the last rank never called CommShrink" \
  sh -c "! grep -q CommShrink '$T/life/truth-rank3.json' && grep -q '\"CommShrink\": {\"calls\": 1' '$T/life/truth-rank0.json'"

# ddp_job --measure: the job times its own communication calls with events
mkdir -p "$T/meas"
bash "$L" 2 "$J/ddp_job" --steps 2 --measure --lat-us 100 --bw-gbps 0.5 --truth "$T/meas" >/dev/null 2>&1
m=$(sed -n 's/.*"measured": {"comm_ns": \([0-9]*\), "wall_ns": \([0-9]*\)}.*/\1 \2/p' "$T/meas/truth-rank1.json")
model=$(sed -n 's/.*"comm_ns_per_step": \([0-9]*\).*/\1/p' "$T/meas/truth-rank1.json")
check "ddp_job --measure: model x steps <= measured comm <= wall ($model x 2, $m)" \
  awk -v m="$m" -v model="$model" 'BEGIN { split(m, a, " "); exit !(a[1] >= 2 * model * 0.999 && a[1] <= a[2]) }'
