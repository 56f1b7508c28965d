#!/usr/bin/env bash
# test_gputime_anchors.sh — the GPU clock anchors (shim/gputime.c anchor_for; docs/SHIM.md "GPU
# timing", "Clock conversion") are made for the events there are to convert, never by an idle
# process: each is a record and a synchronisation on the writer's stream, up to 5 times, which
# the writer made at every pass 500 ms after the last, so every 2 s heartbeat of an idle
# process. tests/jobs/idle_job.c on the doubles (GPU timing on), NCCLSCOPE_DEBUG=1 (a line per
# anchor): 10 all-reduces, 5 chunks written meanwhile (two 2 s heartbeats of an idle process),
# a mark on stderr, one more all-reduce, 3 more chunks. Counted (no duration): the anchors
# before the mark, 1 (2 if the first calls' conversions were over 500 ms apart); after it
# exactly 1, the first call after the pause (its nearest anchor is seconds old); and the 11
# GPU times, none failed.
. "$(dirname "$0")/lib.sh"

d=$T/tr
mkdir -p "$d"
NCCLSCOPE_DEBUG=1 NCCLSCOPE_FLUSH_MS=100 NCCLSCOPE_DIR="$d" LD_PRELOAD="$SHIM$SAN_PRELOAD" \
  "$BUILD/tests/idle_job" "$d" 5 >"$T/out" 2>&1
rc=$?
check_eq "gputime anchors: the job ran (exit 0, its mark and line)" "0 1 1" \
  "$rc $(grep -c '^idle_job calls again$' "$T/out") $(grep -c '^idle_job after_beat$' "$T/out")"
[ "$rc" = 0 ] || sed 's/^/    /' "$T/out" | head -5
counts=$(awk 'BEGIN {mark = 0} /^idle_job calls again$/ {mark = 1} /GPU clock anchor / {n[mark]++} END {print n[0] + 0, n[1] + 0}' "$T/out")
read -r before after <<<"$counts"
if [ "$before" -ge 1 ] && [ "$before" -le 2 ] && [ "$after" = 1 ]; then
  pass "gputime anchors: 1-2 for the first calls, none while idle, 1 for the call after the pause ($before, $after)"
else
  fail "gputime anchors: 1-2 for the first calls, none while idle, 1 for the call after the pause: got $before before the mark, $after after"
fi
"$NCS" dump "$d"/*.ncs >"$T/dump" 2>&1
check_eq "gputime anchors: the trace reads whole, with the 11 calls' GPU times, none failed" "0 11 0" \
  "$? $(grep -c '^GPU_TIME kind=call ' "$T/dump") $(grep '^GPU_TIME ' "$T/dump" | grep -vc ' flags=0$')"
