#!/usr/bin/env bash
# test_static_nccl.sh — NCCL linked statically (docs/PROFILER.md, "Static NCCL"). static_ddp_job
# is ddp_job (tests/jobs/ddp_job.c) linked against the NCCL double's static archive
# (build/doubles/libnccl_static.a; the CUDA double stays shared): its NCCL calls reach no
# wrapper. `ncclscope run` must see that in the ELF files (io/elfnccl.c) and set
# NCCL_PROFILER_PLUGIN to the shim; the plugin's init starts the recorder; the decoder rebuilds
# calls, communicators and GPU times from the profiler events and kernel activity
# (model/profcalls.c). Checked against the job's own truth files (--truth) and its own CUDA-event
# measurement of its communication (--measure); the dynamic ddp_job under the same `run` must
# get no plugin setting and no call twice.
source "$(dirname "$0")/lib.sh"
S=$BUILD/tests/static_ddp_job
D=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
unset NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_ALGO NCCL_PROTO NCCLSCOPE_PROFILER NCCLSCOPE_DIR
if [ ! -x "$S" ] || [ ! -x "$D" ] || [ ! -f "$SHIM" ] || [ ! -x "$NCS" ]; then skip "static nccl: jobs, shim or decoder not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "static nccl: python3 needed to read report --json"; exit 0; fi

# the archive exists and the job carries NCCL itself: no libnccl.so among what it needs
check "libnccl_static.a built" test -s "$DOUBLES/libnccl_static.a"
if readelf -d "$S" | grep -q 'NEEDED.*libnccl'; then fail "static_ddp_job needs no libnccl.so"; else pass "static_ddp_job needs no libnccl.so"; fi

# runjob NAME JOB [ENV...]: 2 ranks, 2 steps, under `ncclscope run`; truth in $T/NAME.truth
runjob() {
  local name=$1 job=$2; shift 2
  mkdir -p "$T/$name.truth"
  env "$@" "$NCS" run -o "$T/$name" -- bash "$L" 2 "$job" --steps 2 --measure --truth "$T/$name.truth" \
    >"$T/$name.out" 2>"$T/$name.err"
}
# the same job without any tool: what it prints is the reference for what it prints under run
mkdir -p "$T/bare.truth"
bash "$L" 2 "$S" --steps 2 --measure --truth "$T/bare.truth" >"$T/bare.out" 2>"$T/bare.err"

runjob st "$S"
check "static job under run succeeds" grep -q "all results correct" "$T/st.out"
check_eq "static job prints what it prints without ncclscope" "$(cat "$T/bare.out")" "$(cat "$T/st.out")"
check "run detected static NCCL and set the plugin" grep -q "static_ddp_job has NCCL linked in statically: recording through NCCL's profiler plugin (NCCL_PROFILER_PLUGIN=$SHIM)" "$T/st.err"
check_eq "static job: one trace per rank" 2 "$(ls "$T/st"/*.ncs 2>/dev/null | wc -l)"
"$NCS" report --json "$T/st" >"$T/st.json" 2>"$T/st.rep.err"
"$NCS" report "$T/st" >"$T/st.txt" 2>/dev/null

# per rank and op (collectives, Send, Recv): calls, count and bytes equal the job's truth
# (AllGather/Broadcast reach the plugin in bytes: count = truth bytes); every call GPU-timed from
# its kernel (Send/Recv: their plan's SendRecv kernel), busbw given; the sum of those GPU times
# (a plan's once) lies within the job's own CUDA-event measurement of its communication (its
# events bracket every kernel; equal on the doubles, up to rounding); groups and host time declared unknown, not invented
cmp=$(python3 - "$T/st.json" "$T/st.truth" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
bad, ncalls = [], 0
colls = ("AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv")
ranks = sorted(r["rank"] for r in rep["ranks"])
if ranks != [0, 1]: bad.append("ranks %s" % ranks)
for r in rep["ranks"]:
    truth = json.load(open("%s/truth-rank%d.json" % (sys.argv[2], r["rank"])))
    t_ops, ops = truth["ops"], r["ops"]
    if r.get("calls_from") != "profiler": bad.append("rank %d calls_from %s" % (r["rank"], r.get("calls_from")))
    if r["nranks"] != truth["nranks"]: bad.append("rank %d nranks %d" % (r["rank"], r["nranks"]))
    gpu_s = 0.0
    for op in colls:
        t, g = t_ops[op], ops.get(op)
        if not g: bad.append("rank %d %s missing" % (r["rank"], op)); continue
        want = (t["calls"], t["bytes"] if op in ("Broadcast", "AllGather") else t["count"], t["bytes"])
        got = (g["calls"], g["count"], g["bytes"])
        if want != got: bad.append("rank %d %s truth %s got %s" % (r["rank"], op, want, got))
        if g["timed_calls"] != g["calls"] or g["timing"] != "gpu" or not g["busbw_gbps"] > 0:
            bad.append("rank %d %s timed %d/%d %s busbw %s" % (r["rank"], op, g["timed_calls"], g["calls"], g["timing"], g["busbw_gbps"]))
        if g["host_s"] != 0: bad.append("rank %d %s host_s %s (unknown: 0)" % (r["rank"], op, g["host_s"]))
        if op != "Recv": gpu_s += g["time_s"]  # Send and Recv of one plan share its kernel
        ncalls += g["calls"]
    extra = set(ops) - set(colls)
    if extra: bad.append("rank %d ops not from events %s" % (r["rank"], sorted(extra)))
    # tolerance: kernel times are stored at 32 ns (two ends a call), the job's figure is summed
    # from cudaEventElapsedTime's float milliseconds (24-bit mantissa)
    meas = truth["measured"]["comm_ns"] / 1e9
    tol = 64e-9 * sum(ops[o]["calls"] for o in colls if o in ops) + meas * 2 ** -20
    if not 0 < gpu_s <= meas + tol: bad.append("rank %d collectives' GPU time %.6f s not within the job's measured %.6f s" % (r["rank"], gpu_s, meas))
p = rep.get("calls_from_profiler") or {}
if (p.get("files"), p.get("calls"), p.get("gpu_timed_calls")) != (2, ncalls, ncalls): bad.append("calls_from_profiler %s" % p)
for k in ("groups", "host_time"):
    if k not in p.get("not_known", []): bad.append("not_known lacks " + k)
print(" ".join(bad) if bad else "ok %d collectives on %d ranks" % (ncalls, len(ranks)))
EOF
)
case $cmp in ok*) pass "static job: report --json equals the job's truth ($cmp)" ;; *) fail "static job: report --json: $cmp" ;; esac
check "static job: the text report says the calls came from profiler events" grep -q "^calls from NCCL profiler events .*: 2 of 2 files" "$T/st.txt"
check "static job: and what is not known" grep -q "not known: groups" "$T/st.txt"
"$NCS" doctor "$T/st" >"$T/st.doc" 2>&1
check "static job: the doctor reads both ranks" grep -q "ncclscope doctor: 2 process(es)" "$T/st.doc"

# watch (its own read, analysis/hang.c) sees the rebuilt calls too: each rank's last collective is
# the step's ReduceScatter (ddp_job's order), numbered by the job's count of collectives
ncoll=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]+"/truth-rank0.json"))["ops"]; print(sum(t[o]["calls"] for o in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter")))' "$T/st.truth")
timeout 60 "$NCS" watch --once "$T/st" >"$T/st.watch" 2>&1
check_eq "static job: watch shows each rank's last collective" 2 "$(grep -c "ReduceScatter seq $ncoll " "$T/st.watch")"

# the plugin alone starts the recorder: no preload, only NCCL_PROFILER_PLUGIN
mkdir -p "$T/po.truth"
NCCL_PROFILER_PLUGIN=$SHIM NCCLSCOPE_DIR=$T/po bash "$L" 2 "$S" --steps 2 --truth "$T/po.truth" >"$T/po.out" 2>&1
n=$("$NCS" report --json "$T/po" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls_from_profiler"]["calls"])' 2>/dev/null)
want=$(python3 -c 'import json,sys; print(sum(json.load(open("%s/truth-rank%d.json" % (sys.argv[1], r)))["ops"][o]["calls"] for r in (0, 1) for o in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv")))' "$T/po.truth")
check_eq "plugin only (no preload): every collective and Send/Recv recorded" "$want" "$n"

# the user's own plugin is left alone (here: none); run says the calls will not be recorded; no file
runjob user "$S" NCCL_PROFILER_PLUGIN=none
check "user plugin: static job succeeds" grep -q "all results correct" "$T/user.out"
check "user plugin: run says NCCL's calls will not be recorded" grep -q "NCCL_PROFILER_PLUGIN=none is the user's" "$T/user.err"
check_eq "user plugin: no trace (nothing reached the shim)" 0 "$(ls "$T/user"/*.ncs 2>/dev/null | wc -l)"

# NCCLSCOPE_PROFILER=0: run sets nothing and says so; the plugin set by hand starts nothing
runjob off "$S" NCCLSCOPE_PROFILER=0
check "NCCLSCOPE_PROFILER=0: run says the calls will not be recorded" grep -q "NCCLSCOPE_PROFILER=0: its calls will not be recorded" "$T/off.err"
mkdir -p "$T/off2.truth"
NCCLSCOPE_PROFILER=0 NCCL_PROFILER_PLUGIN=$SHIM NCCLSCOPE_DIR=$T/off2 LD_PRELOAD=$SHIM bash "$L" 2 "$S" --steps 1 --truth "$T/off2.truth" >"$T/off2.out" 2>&1
check "NCCLSCOPE_PROFILER=0, plugin set by hand: job succeeds" grep -q "all results correct" "$T/off2.out"
check_eq "NCCLSCOPE_PROFILER=0, plugin set by hand: no file" 0 "$(ls "$T/off2"/*.ncs 2>/dev/null | wc -l)"

# preloaded only, no plugin (what `run` did before): the shim stays inert, as in any process NCCL never reaches
mkdir -p "$T/pre.truth"
NCCLSCOPE_DIR=$T/pre LD_PRELOAD=$SHIM bash "$L" 2 "$S" --steps 1 --truth "$T/pre.truth" >"$T/pre.out" 2>&1
check_eq "preload without plugin: no file" 0 "$(ls "$T/pre"/*.ncs 2>/dev/null | wc -l)"

# a dynamic job: run sets nothing; with the plugin also set by hand (both paths live: the wrappers
# and the plugin in one process), every call is counted once, by the wrappers
runjob dyn "$D"
if grep -q "linked in statically" "$T/dyn.err"; then fail "dynamic job: run sets no plugin"; else pass "dynamic job: run sets no plugin"; fi
runjob both "$D" NCCL_PROFILER_PLUGIN=$SHIM
for name in dyn both; do
  "$NCS" report --json "$T/$name" >"$T/$name.json" 2>/dev/null
  cmp=$(python3 - "$T/$name.json" "$T/$name.truth" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
bad = []
if "calls_from_profiler" in rep: bad.append("calls_from_profiler present")
for r in rep["ranks"]:
    truth = json.load(open("%s/truth-rank%d.json" % (sys.argv[2], r["rank"])))["ops"]
    if "calls_from" in r: bad.append("rank %d calls_from" % r["rank"])
    for op in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv"):
        g = r["ops"].get(op, {"calls": 0, "bytes": 0})
        if (truth[op]["calls"], truth[op]["bytes"]) != (g["calls"], g["bytes"]):
            bad.append("rank %d %s truth %d got %d" % (r["rank"], op, truth[op]["calls"], g["calls"]))
    if r["profile"]["events"] != sum(truth[o]["calls"] for o in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter")):
        bad.append("rank %d profile events %d" % (r["rank"], r["profile"]["events"]))
print(" ".join(bad) if bad else "ok %d ranks" % len(rep["ranks"]))
EOF
)
  case $cmp in ok*) pass "dynamic job ($name): calls equal the truth, once ($cmp)" ;; *) fail "dynamic job ($name): $cmp" ;; esac
done

# detection on programs with no NCCL: nothing set; stderr holds only run's closing line that
# no process called NCCL (issue 25 item 6, tests/test_run_empty.sh)
"$NCS" run -o "$T/none" -- sh -c 'echo "${NCCL_PROFILER_PLUGIN:-unset}"' >"$T/none.out" 2>"$T/none.err"
check_eq "no NCCL in the program: NCCL_PROFILER_PLUGIN not set" unset "$(cat "$T/none.out")"
check_eq "no NCCL in the program: run says only that no process called NCCL" "1 1" \
  "$(wc -l <"$T/none.err") $(grep -c 'no process of the job called NCCL' "$T/none.err")"
