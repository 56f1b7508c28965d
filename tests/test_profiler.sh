#!/usr/bin/env bash
# test_profiler.sh — shim/profiler.c: the shim registers as NCCL's profiler plugin where the
# user has none, and records algorithm, protocol and channels per collective (PROFILE records,
# docs/PROFILER.md); `report` shows them. Runs ddp_job (tests/jobs/ddp_job.c, 2 ranks) on the
# NCCL double, which loads profiler plugins as NCCL 2.28 does (tests/doubles/nccl/nd_profiler.c).
# A user plugin (NCCL_PROFILER_PLUGIN, or libnccl-profiler.so on the library path) is built
# here from a few lines of C and must get the events instead of the shim.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_ALGO NCCL_PROTO NCCLDOUBLE_NCHANNELS NCCLSCOPE_PROFILER
if [ ! -x "$J" ] || [ ! -f "$SHIM" ] || [ ! -x "$NCS" ]; then skip "profiler: ddp_job, shim or decoder not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "profiler: python3 needed to read report --json"; exit 0; fi

# run NAME ENV... : ddp_job (2 ranks, 2 steps) under the shim, trace in $T/NAME, truth in $T/NAME.truth
run() {
  local name=$1; shift
  mkdir -p "$T/$name.truth"
  env "$@" NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 2 --truth "$T/$name.truth" \
    >"$T/$name.out" 2>"$T/$name.err"
}
# events FILE.json: PROFILE events in the whole job
events() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["events"])' "$1"; }

run plain
check "ddp_job under the shim succeeds" grep -q "all results correct" "$T/plain.out"
"$NCS" report --json "$T/plain" >"$T/plain.json" 2>/dev/null
"$NCS" report "$T/plain" >"$T/plain.txt" 2>/dev/null
# per rank and per collective: PROFILE events and summed counts equal the job's own truth. NCCL
# 2.28 hands AllGather and Broadcast to the profiler with the count in bytes and datatype
# ncclInt8 (collTaskAppend rewrites them, src/enqueue.cc): those compare with the truth's bytes.
cmp=$(python3 - "$T/plain.json" "$T/plain.truth" <<'EOF'
import json, sys, glob
rep = json.load(open(sys.argv[1]))
bad = []
for r in rep["ranks"]:
    truth = json.load(open("%s/truth-rank%d.json" % (sys.argv[2], r["rank"])))["ops"]
    got = {o["func"]: o for o in r["profile"]["ops"]}
    for op in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter"):
        t = truth.get(op, {"calls": 0, "count": 0, "bytes": 0})
        g = got.get(op, {"events": 0, "count": 0})
        want = t["bytes"] if op in ("Broadcast", "AllGather") else t["count"]
        if (t["calls"], want) != (g["events"], g["count"]):
            bad.append("rank %d %s truth %d/%d profile %d/%d" % (r["rank"], op, t["calls"], want, g["events"], g["count"]))
    extra = set(got) - {"AllReduce", "Broadcast", "AllGather", "ReduceScatter"}
    if extra: bad.append("rank %d unexpected %s" % (r["rank"], sorted(extra)))
    if r["profile"]["dropped"] or r["profile"]["undecodable"]: bad.append("rank %d dropped/undecodable" % r["rank"])
print(" ".join(bad) if bad else "ok %d ranks" % len(rep["ranks"]))
EOF
)
check_eq "a PROFILE record for every collective of every rank (events and counts = ddp_job's truth)" "ok 2 ranks" "$cmp"
n=$(events "$T/plain.json")
check_eq "14 collectives x 2 ranks profiled (4 all-reduce buckets + 3 collectives per step, 2 steps)" 28 "$n"
# format 3.1: names NCCL is known to use are ids (PROFILE_ID, stored in columns); the double's all are
check_eq "format 3.1: every collective is a PROFILE_ID record (its names listed), none a PROFILE with strings" "28 0" \
  "$(cat "$T"/plain/*.ncs >/dev/null && for f in "$T"/plain/*.ncs; do "$NCS" dump "$f"; done |
     awk '/^RECORD type=19 /{a++} /^RECORD type=14 /{b++} END {print a+0, b+0}')"
check "report text: the profiler section" grep -q "^NCCL profiler plugin: algorithm/protocol and channels per collective (28 events)" "$T/plain.txt"
# NCCL's names for algorithms and protocols (ncclAlgoToString, ncclProtoToString, collectives.cc)
check "report text: AllReduce with the double's choices (TREE/LL small, RING/LL128 mid) and 2 channels" \
  grep -E -q "^  AllReduce: 16 on 2 ranks;.*TREE/LL [0-9]+.*; channels 2$" "$T/plain.txt"
check "report text: RING/LL128 seen for the 256 KiB+ buckets" grep -q "RING/LL128" "$T/plain.txt"

# the double's choice follows NCCL_ALGO / NCCL_PROTO / channel count: the records carry it
run forced NCCL_ALGO=Ring NCCL_PROTO=Simple NCCLDOUBLE_NCHANNELS=4
"$NCS" report "$T/forced" >"$T/forced.txt" 2>/dev/null
check_eq "NCCL_ALGO=Ring NCCL_PROTO=Simple, 4 channels: every collective line says RING/SIMPLE, channels 4" 4 \
  "$(grep -c -E '^  [A-Za-z]+: [0-9]+ on 2 ranks; RING/SIMPLE [0-9]+; channels 4$' "$T/forced.txt")"

# job output identical with and without the shim
bash "$L" 2 "$J" --steps 2 >"$T/noshim.out" 2>/dev/null
check_eq "job stdout identical with and without the shim (registered as profiler)" \
  "$(cat "$T/noshim.out")" "$(cat "$T/plain.out")"
# NCCL_DEBUG=INFO: the double logs "Successfully loaded external profiler plugin", as NCCL does;
# the user never asked for that plugin, so the shim's log capture does not forward the line
NCCL_DEBUG=INFO bash "$L" 2 "$J" --steps 1 >"$T/info.noshim" 2>&1
NCCL_DEBUG=INFO NCCLSCOPE_DIR="$T/info" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 1 >"$T/info.shim" 2>&1
check_eq "NCCL_DEBUG=INFO: no profiler-plugin line reaches the user" 0 "$(grep -c -i 'profiler' "$T/info.shim")"
check_eq "NCCL_DEBUG=INFO: the same number of NCCL lines with and without the shim" \
  "$(grep -c 'NCCL' "$T/info.noshim")" "$(grep -c 'NCCL' "$T/info.shim")"
"$NCS" report --json "$T/info" >"$T/info.json" 2>/dev/null
check_eq "NCCL_DEBUG=INFO: still profiled (7 collectives x 2 ranks)" 14 "$(events "$T/info.json")"

# a user plugin: built here, counts the collective events NCCL hands it
mkdir -p "$T/lib"
cat >"$T/userplug.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
struct d { uint64_t type; void *parent; int rank; };
static long n;
static int init(void **c, uint64_t id, int *mask, const char *nm, int nn, int nr, int r, void *l) { *c = &n; *mask = 2; return 0; }
static int start(void *c, void **h, struct d *e) { *h = NULL; if (e->type == 2) __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED); return 0; }
static int stop(void *h) { return 0; }
static int rec(void *h, int s, void *a) { return 0; }
static int fin(void *c) {
  char p[512]; snprintf(p, sizeof p, "%s/user.%d", getenv("USERPLUG_OUT"), (int)getpid());
  FILE *f = fopen(p, "w"); if (f) { fprintf(f, "%ld\n", n); fclose(f); } return 0;
}
struct { const char *name; void *f[5]; } ncclProfiler_v5 = { "user", { init, start, stop, rec, fin } };
EOF
if cc -shared -fPIC -o "$T/lib/libuserprof.so" "$T/userplug.c" 2>"$T/cc.err"; then
  cp "$T/lib/libuserprof.so" "$T/lib/libnccl-profiler.so"
  mkdir -p "$T/u1" "$T/u2"
  run user USERPLUG_OUT="$T/u1" NCCL_PROFILER_PLUGIN="$T/lib/libuserprof.so"
  "$NCS" report --json "$T/user" >"$T/user.json" 2>/dev/null
  check_eq "user's NCCL_PROFILER_PLUGIN: the shim does not register (no PROFILE record)" 0 "$(events "$T/user.json")"
  check_eq "user's NCCL_PROFILER_PLUGIN: their plugin got every collective (14 per rank)" "14 14" \
    "$(cat "$T"/u1/user.* 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')"
  check_eq "user's plugin: job stdout identical to the run without the shim" "$(cat "$T/noshim.out")" "$(cat "$T/user.out")"
  mkdir -p "$T/u3"
  NCCL_DEBUG=INFO USERPLUG_OUT="$T/u3" NCCL_PROFILER_PLUGIN="$T/lib/libuserprof.so" bash "$L" 2 "$J" --steps 1 \
    >"$T/info.user" 2>&1
  check "(control) the double logs 'Successfully loaded external profiler plugin' at INFO, as NCCL does" \
    grep -q "NCCL INFO Successfully loaded external profiler plugin $T/lib/libuserprof.so" "$T/info.user"
  run deflt USERPLUG_OUT="$T/u2" LD_LIBRARY_PATH="$T/lib:$LD_LIBRARY_PATH"
  "$NCS" report --json "$T/deflt" >"$T/deflt.json" 2>/dev/null
  check_eq "libnccl-profiler.so on the library path (NCCL's default): the shim does not register" 0 \
    "$(events "$T/deflt.json")"
  check_eq "libnccl-profiler.so on the library path: NCCL loaded it and it got every collective" "14 14" \
    "$(cat "$T"/u2/user.* 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')"
else
  fail "profiler: could not build the user plugin: $(head -3 "$T/cc.err")"
fi
run none NCCL_PROFILER_PLUGIN=none
"$NCS" report --json "$T/none" >"$T/none.json" 2>/dev/null
check_eq "NCCL_PROFILER_PLUGIN=none: no PROFILE record" 0 "$(events "$T/none.json")"
run off NCCLSCOPE_PROFILER=0
"$NCS" report --json "$T/off" >"$T/off.json" 2>/dev/null
check_eq "NCCLSCOPE_PROFILER=0: no PROFILE record" 0 "$(events "$T/off.json")"
check "NCCLSCOPE_PROFILER=0: the job still runs" grep -q "all results correct" "$T/off.out"

# a tight loop of small all-reduces (100 warm-up + 20000, tests/jobs/bench_loop.c) on 2 ranks:
# every collective is either recorded or counted as dropped (the CALL records are not the
# reference: the core may drop some of those under load, counted separately). On a 1-rank
# communicator NCCL 2.28 creates no task for a collective (taskAppend: ncclLaunchOneRank), so
# the plugin gets no event: none recorded, none dropped.
B=$BUILD/tests/bench_loop
if [ -x "$B" ]; then
  NCCLSCOPE_DIR="$T/loop" LD_PRELOAD="$SHIM" bash "$L" 2 "$B" -n 20000 -k 100 >"$T/loop.out" 2>&1
  "$NCS" report --json "$T/loop" >"$T/loop.json" 2>/dev/null
  acc=$(python3 -c '
import json, sys
rs = json.load(open(sys.argv[1]))["ranks"]
bad = ["rank %d events %d dropped %d" % (r["rank"], r["profile"]["events"], r["profile"]["dropped"])
       for r in rs if r["profile"]["events"] + r["profile"]["dropped"] != 20100]
print(" ".join(bad) if bad else "ok %d ranks" % len(rs))
' "$T/loop.json" 2>&1)
  check_eq "bench_loop, 2 ranks, 20100 all-reduces each: PROFILE events + dropped = 20100 per rank" "ok 2 ranks" "$acc"
  NCCLSCOPE_DIR="$T/loop1" LD_PRELOAD="$SHIM" "$B" -n 200 -k 100 >"$T/loop1.out" 2>&1
  "$NCS" report --json "$T/loop1" >"$T/loop1.json" 2>/dev/null
  check_eq "bench_loop, 1 rank: the job ran 300 all-reduces, NCCL hands none to the profiler (0 events, 0 dropped)" \
    "300 0 0" "$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
calls = r["ops"].get("AllReduce", {}).get("calls", 0)
print(calls, r["profile"]["events"], r["profile"]["dropped"])
' "$T/loop1.json" 2>&1)"
else
  skip "profiler: bench_loop not built"
fi
