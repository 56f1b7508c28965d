#!/usr/bin/env bash
# test_inspector.sh — NVIDIA's NCCL Inspector and ncclscope on the same job, each loaded as a
# user would: ncclscope preloaded (LD_PRELOAD), the Inspector, built unmodified out of tree
# (scripts/build-inspector.sh) from ../shared/nccl-inspector (or NCCL_INSPECTOR_SRC), as
# NCCL_PROFILER_PLUGIN. The job is ddp_job (2 ranks) on the NCCL double, which emits the
# profiler events NCCL 2.28.9 emits (Coll/P2p, KernelCh with pTimer; nd_profiler.c) and provides
# the CUDA driver calls the Inspector makes (tests/doubles/cudadrv). The two outputs are compared
# collective by collective (scripts/inspector-compare.py): counts per communicator and operation
# equal to each other and to the job's own truth, sizes equal, the Inspector's time GPU-timed
# and within ncclscope's event time of the call (docs/PROFILER.md, "Beside the NCCL Inspector").
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
SRC=${NCCL_INSPECTOR_SRC:-$ROOT/../shared/nccl-inspector}
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_ALGO NCCL_PROTO NCCLDOUBLE_NCHANNELS NCCLSCOPE_PROFILER
if [ ! -x "$J" ] || [ ! -f "$SHIM" ] || [ ! -x "$NCS" ] || [ ! -f "$DOUBLES/libcuda.so.1" ]; then
  skip "inspector: ddp_job, shim, decoder or the CUDA driver double not built"; exit 0
fi
if ! command -v python3 >/dev/null; then skip "inspector: python3 needed to read the outputs"; exit 0; fi
LIB=$(bash "$ROOT/scripts/build-inspector.sh" "$SRC" "$BUILD/inspector" 2>"$T/build.err"); rc=$?
if [ "$rc" = 2 ]; then skip "inspector: $(head -1 "$T/build.err")"; exit 0; fi
check "the NCCL Inspector builds out of tree from $SRC" test "$rc" = 0 -a -f "$LIB"
[ "$rc" = 0 ] || { sed 's/^/    /' "$T/build.err"; exit 0; }
check "nothing written into the Inspector's sources (out-of-tree build)" \
  test ! -e "$SRC/obj" -a ! -e "$SRC/version.cc" -a ! -e "$SRC/libnccl-profiler-inspector.so"

# both tools on one job; the Inspector dumps every 1 ms (its default, -1, never dumps) and keeps
# every size (its default skips messages under 8 KiB); ddp_job lingers 3 s before
# ncclCommDestroy so that the dump thread writes the last collectives (the Inspector drops what it
# has not dumped when the communicator is finalized). 300 ms was not enough under load: in a
# full make test one rank's dump thread never ran in time and its file was missing.
# the dump directory exists before the ranks start: the Inspector's ensureDir() stats, then
# mkdirs, and a rank that loses that race to another (EEXIST) starts no dump thread and writes no
# file (a fresh-clone CI lost one of 4 files that way). Users sharing a directory meet the same.
mkdir -p "$T/truth" "$T/insp"
INSP=(NCCL_PROFILER_PLUGIN="$LIB" NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000
      NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=1 NCCL_INSPECTOR_DUMP_DIR="$T/insp")
san_noleak env "${INSP[@]}" NCCLSCOPE_DIR="$T/ncs" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 2 --linger-ms 3000 \
  --lat-us 100 --bw-gbps 1 --truth "$T/truth" >"$T/both.out" 2>"$T/both.err"
check "ddp_job with ncclscope preloaded and the Inspector as NCCL_PROFILER_PLUGIN succeeds" \
  grep -q "all results correct" "$T/both.out"
bash "$L" 2 "$J" --steps 2 --lat-us 100 --bw-gbps 1 >"$T/none.out" 2>/dev/null
check_eq "job stdout identical with both tools and with neither" "$(cat "$T/none.out")" "$(cat "$T/both.out")"
check_eq "the Inspector wrote one JSON-lines file per rank process" 2 "$(ls "$T"/insp/*-pid*.log 2>/dev/null | wc -l)"
check_eq "ncclscope wrote one trace per rank process" 2 "$(ls "$T"/ncs/*.ncs 2>/dev/null | wc -l)"
"$NCS" report --json "$T/ncs" >"$T/ncs.json" 2>/dev/null
check_eq "the user's plugin wins: ncclscope did not register as NCCL's profiler (no PROFILE record)" 0 \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["events"])' "$T/ncs.json" 2>&1)"

# the job's own truth: collectives and Send/Recv per rank
want=$(python3 - "$T/truth" <<'EOF'
import json, glob, sys
coll = p2p = 0
for f in glob.glob(sys.argv[1] + "/truth-rank*.json"):
    ops = json.load(open(f))["ops"]
    coll += sum(ops.get(o, {}).get("calls", 0) for o in ("AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"))
    p2p += sum(ops.get(o, {}).get("calls", 0) for o in ("Send", "Recv"))
print("ok %d collectives, %d p2p" % (coll, p2p))
EOF
)
python3 "$ROOT/scripts/inspector-compare.py" "$NCS" "$T/insp" "$T/ncs" >"$T/cmp.out" 2>&1
check_eq "collective by collective: same counts per communicator and op (= the job's truth), same sizes, Inspector GPU-timed and within ncclscope's GPU time + 51 us" \
  "$want" "$(tail -1 "$T/cmp.out")"
[ "$want" = "$(tail -1 "$T/cmp.out")" ] || head -20 "$T/cmp.out" | sed 's/^/    /'
check "(control) the truth counts something" test "$want" != "ok 0 collectives, 0 p2p"
