#!/usr/bin/env bash
# test_shim_reach.sh — the shim's side of the smaller surprises of real jobs (issue 11 part 6):
# a relative NCCLSCOPE_DIR is resolved against the directory the process started in, not
# the one it chdir'ed to before its first NCCL call; `ncclscope run -o DIR` passes DIR on as
# an absolute path, so processes of the job that start elsewhere write to the same place; a
# communicator-ending call whose CALL record was dropped is still counted (from its COMM_END).
. "$(dirname "$0")/lib.sh"
J=$BUILD/tests
[ -f "$SHIM" ] && [ -x "$NCS" ] && [ -x "$J/dl_job" ] || { fail "shim_reach: shim, decoder or dl_job missing"; exit 1; }
export NCCL_DEBUG=
LIB=$DOUBLES/libnccl.so.2
mkdir -p "$T/start" "$T/elsewhere/sub"
cd "$T/start"

NCCLSCOPE_DIR=rel LD_PRELOAD="$SHIM" "$J/dl_job" -n 2 -C "$T/elsewhere" "$LIB" >/dev/null 2>&1
check_eq "shim_reach: relative NCCLSCOPE_DIR after a chdir: the trace is under the start directory, none under the new one" \
  "1 0" "$(ls "$T/start/rel"/*.ncs 2>/dev/null | wc -l) $(ls "$T/elsewhere/rel" 2>/dev/null | wc -l)"

"$NCS" run -o runrel -- "$J/dl_job" -n 2 -C "$T/elsewhere" "$LIB" >/dev/null 2>&1
check_eq "shim_reach: ncclscope run -o DIR, job chdirs: trace under the start directory" \
  "1" "$(ls "$T/start/runrel"/*.ncs 2>/dev/null | wc -l)"
"$NCS" run -o runrel2 -- bash -c "cd '$T/elsewhere/sub' && exec '$J/dl_job' -n 2 '$LIB'" >/dev/null 2>&1
check_eq "shim_reach: ncclscope run -o DIR, a process of the job starts in another directory: same trace directory" \
  "1 0" "$(ls "$T/start/runrel2"/*.ncs 2>/dev/null | wc -l) $(ls "$T/elsewhere/sub/runrel2" 2>/dev/null | wc -l)"

# A communicator-ending call whose CALL record was dropped (the fixture's rank traces hold a
# DROP, a COMM_END by CommDestroy and no CALL for it): the op table counts the call.
GEN=$BUILD/tests/test_trace_roundtrip
if [ -x "$GEN" ] && mkdir -p "$T/fx" && "$GEN" --write "$T/fx" >/dev/null 2>&1 && [ -f "$T/fx/rank0.ncs" ]; then
  "$NCS" report --json "$T/fx/rank0.ncs" >"$T/fx.json" 2>/dev/null
  check_eq "shim_reach: dropped CommDestroy CALL, COMM_END present: report --json counts it (calls 1, from_comm_end 1) beside 'ended by CommDestroy'" \
    "1 1 CommDestroy" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; o=r["ops"]["CommDestroy"]; print(o["calls"], o["from_comm_end"], r["comms"][0]["end_op"])' "$T/fx.json" 2>&1)"
  "$NCS" report --detail "$T/fx/rank0.ncs" >"$T/fx.txt" 2>/dev/null
  check "shim_reach: the text report says the call is known only from COMM_END" grep -q 'CommDestroy .*1 known only from COMM_END: CALL record dropped' "$T/fx.txt"
else
  fail "shim_reach: cannot write the fixture traces ($GEN --write)"
fi
