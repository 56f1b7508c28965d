#!/usr/bin/env bash
# test_results.sh — report's analyses read as data, not as JSON text (issue 31 step 4): builds
# tests/results_check.c against the decoder's library, runs jobs on the doubles that keep their
# own truth, and checks the analyses' result structs against it (results_check.c says what):
#   ddp_job, 4 ranks, the GPU ahead of the host (its schedule is the double's link model alone):
#     sizes — each collective's calls and counts, summed over the ranks from the job's own
#     truth-rank<R>.json, nccl-tests' busbw factors, each row's median the model's time;
#   ddp_job --straggler-rank 2 --straggler-us 20000: stragglers — rank 2 worst, the waiting it
#     caused, every collective of the truth lined up (20 ms a step: a rank the scheduler keeps
#     off a busy 2-core machine is a true straggler too, and two suites at once made one 28 ms
#     late over the 6 steps, more than a 300-us straggler's 5.4 ms);
#   site_job, 4 ranks: callsites — each of its functions a row at the line the job wrote.
source "$(dirname "$0")/lib.sh"
tsan_sites_on
DDP=$BUILD/tests/ddp_job SITE=$BUILD/tests/site_job LAUNCH=$ROOT/tests/jobs/launch.sh
for f in "$SHIM" "$BUILD/libncsdecoder.a" "$DDP" "$SITE" "$DOUBLES/libnccl.so.2"; do
  [ -e "$f" ] || { skip "results: $f not built"; exit 0; }
done
X=$T/results_check
if ! ${CC:-cc} $SAN_CFLAGS -std=c11 -O1 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/decoder" \
     -I"$ROOT/tests" -o "$X" "$ROOT/tests/results_check.c" "$BUILD/libncsdecoder.a" -lzstd -lz -lm -lpthread -ldl \
     2>"$T/cc.err"; then
  fail "results: results_check.c builds"; sed 's/^/    /' "$T/cc.err" | head -20; exit 0
fi
export LD_LIBRARY_PATH=$BUILD/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STEPS=6 LAT=20 BW=10 STRAG_US=20000
# job NAME LAUNCHED...: traces in $T/NAME, truth beside them (in the background: the device clock
# does not depend on the load)
job() {
  local name=$1; shift
  mkdir -p "$T/$name"
  NCCLSCOPE_DIR=$T/$name LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 120 bash "$LAUNCH" 4 "$@" >"$T/$name.out" 2>"$T/$name.err"
}
mkdir -p "$T/ddp-truth" "$T/strag-truth"
job ddp "$DDP" --steps $STEPS --ahead $STEPS --lat-us $LAT --bw-gbps $BW --truth "$T/ddp-truth" & p1=$!
job strag "$DDP" --steps $STEPS --ahead $STEPS --lat-us $LAT --bw-gbps $BW --straggler-rank 2 --straggler-us $STRAG_US \
  --truth "$T/strag-truth" & p2=$!
job site "$SITE" --steps $STEPS --truth "$T/site-truth" & p3=$!
ok=0
wait $p1 && wait $p2 && wait $p3 && ok=1
check_eq "results: ddp_job (healthy, straggler) and site_job ran" 1 "$ok"
[ $ok = 1 ] || { for n in ddp strag site; do sed 's/^/    /' "$T/$n.err" | head -5; done; exit 0; }

# the job's truth, summed over its ranks: "OP:CALLS:COUNT" per collective; its collectives
truth() {
  python3 - "$1" "$2" <<'EOF'
import glob, json, sys
ops = {}
for f in glob.glob(sys.argv[1] + "/truth-rank*.json"):
    for op, v in json.load(open(f))["ops"].items():
        t = ops.setdefault(op, [0, 0]); t[0] += v["calls"]; t[1] += v["count"]
coll = ["AllReduce", "AllGather", "Broadcast", "ReduceScatter", "Reduce"]
if sys.argv[2] == "ops":
    print(" ".join("%s:%d:%d" % (op, c, n) for op, (c, n) in sorted(ops.items()) if op in coll))
else:  # collectives one rank entered (each is entered by all)
    print(sum(c for op, (c, n) in ops.items() if op in coll) // len(glob.glob(sys.argv[1] + "/truth-rank*.json")))
EOF
}
# shellcheck disable=SC2046
"$X" sizes "$T/ddp" $LAT $BW $(truth "$T/ddp-truth" ops)
"$X" stragglers "$T/strag" 2 $STRAG_US $STEPS "$(truth "$T/strag-truth" colls)"
"$X" callsites "$T/site" $((STEPS * 4)) 4 "$T/site-truth"
