#!/usr/bin/env bash
# test_shim_reach.sh — the shim's side of the smaller surprises of real jobs (issue 11 part 6):
# a relative NCCLSCOPE_DIR is resolved against the directory the process started in, not
# the one it chdir'ed to before its first NCCL call; `ncclscope run -o DIR` passes DIR on as
# an absolute path, so processes of the job that start elsewhere write to the same place.
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
