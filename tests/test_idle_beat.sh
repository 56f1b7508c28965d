#!/usr/bin/env bash
# test_idle_beat.sh — the writer's cadence when the process stops calling NCCL (writer.c,
# format.h NCS_IDLE_BEAT_MS): after a chunk that is a heartbeat alone, the next heartbeat comes
# a heartbeat period later (its CLOCK at least NCS_IDLE_BEAT_MS after the previous one: the
# writer cannot wake earlier with nothing to write), and a call made right after such a
# heartbeat is written by the next flush, not by the next heartbeat. tests/jobs/idle_job.c
# makes 10 calls, waits for three chunks, makes one more, waits for three more, and ends; the
# truth is its own count of calls (11 all-reduces) and the trace's CLOCK and CALL records
# (ncclscope dump). Flush period 100 ms: the call's chunk is due 0.1 s after it; waiting for the
# heartbeat would take up to 2 s. What is checked is which of the two wrote it: the call's chunk
# comes before the heartbeat after the previous one was due (its CLOCK less than a heartbeat
# period after that heartbeat's), with what was seen printed; no duration of the machine's is
# bounded beyond that (a writer held off the CPU for the whole period makes the two the same).
. "$(dirname "$0")/lib.sh"

BEAT_MS=$(awk '$1 == "#define" && $2 == "NCS_IDLE_BEAT_MS" {print $3}' "$ROOT/include/ncclscope/format.h")
d=$T/tr
mkdir -p "$d"
NCCLSCOPE_FLUSH_MS=100 NCCLSCOPE_DIR="$d" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$BUILD/tests/idle_job" "$d" >"$T/out" 2>"$T/err"
rc=$?
check_eq "idle beat: the job ran (exit 0, its line)" "0 idle_job after_beat" "$rc $(cat "$T/out")"
[ "$rc" = 0 ] || sed 's/^/    /' "$T/err" | head -5
"$NCS" dump "$d"/*.ncs >"$T/dump" 2>"$T/dump.err"
check_eq "idle beat: the trace reads whole (dump exits 0)" 0 $?
check_eq "idle beat: the trace holds the job's 11 all-reduces" 11 "$(grep -c '^CALL op=AllReduce ' "$T/dump")"

# one line per chunk: its index, records (lines naming a record), last CLOCK's monotonic ns, and
# the t_exit of the last all-reduce in it (0: none); up to the CommDestroy (the chunks of the
# exit, written at once, are not heartbeats)
awk '
  /^COMM_END / { exit }
  /^-- chunk / { printf "%d %d %.0f %.0f %s\n", $3, n, clk, ex, ($NF == "idle" ? "idle" : "-"); n = 0; ex = 0; next }
  /^[A-Z_]+ / || /^[A-Z_]+$/ { if ($1 != "==") n++ }
  /^CLOCK / { for (i = 2; i <= NF; i++) if ($i ~ /^monotonic_ns=/) clk = substr($i, 14) }
  /^CALL op=AllReduce / { te = 0; du = 0
    for (i = 2; i <= NF; i++) { if ($i ~ /^t_enter=/) te = substr($i, 9); if ($i ~ /^duration=/) du = substr($i, 10) }
    ex = te + du }
' "$T/dump" >"$T/chunks"

# heartbeat alone: one record, a CLOCK; consecutive ones spaced by at least the beat
beats=$(awk '$2 == 1' "$T/chunks" | wc -l)
short=$(awk -v b="$BEAT_MS" '$2 == 1 && p { g = ($3 - pc) / 1e6; if (g < b) printf "chunk %d %.1f ms after chunk %d; ", $1, g, $1 - 1 }
                             { p = ($2 == 1); pc = $3 }' "$T/chunks")
pairs=$(awk '$2 == 1 && p { n++ } { p = ($2 == 1) } END { print n + 0 }' "$T/chunks")
if [ "$beats" -ge 4 ] && [ "$pairs" -ge 2 ] && [ -z "$short" ]; then
  pass "idle beat: heartbeats alone after a heartbeat alone are >= ${BEAT_MS} ms apart ($pairs pairs, $beats heartbeat chunks)"
else
  fail "idle beat: heartbeats alone after a heartbeat alone are >= ${BEAT_MS} ms apart: $beats heartbeat chunks, $pairs pairs; $short"
  sed 's/^/    /' "$T/chunks"
fi

# the 11th call: in the chunk right after a heartbeat alone, written before the next heartbeat
# was due (woken by the call, not by the heartbeat's time)
line=$(awk '$4 > 0 { l = $0 } END { print l }' "$T/chunks")
idx=${line%% *}
prev=$(awk -v i="$idx" '$1 == i - 1 { print $2 }' "$T/chunks")
since=$(awk -v i="$idx" '$1 == i - 1 { pc = $3 } $1 == i { printf "%.0f", ($3 - pc) / 1e6 }' "$T/chunks")
lag=$(echo "$line" | awk '{ printf "%.0f", ($3 - $4) / 1e6 }')
if [ "$prev" = 1 ] && [ -n "$lag" ] && [ "$lag" -ge 0 ] && [ -n "$since" ] && [ "$since" -lt "$BEAT_MS" ]; then
  pass "idle beat: a call right after a heartbeat is written by the next flush ($lag ms after it returned, $since ms after the heartbeat; heartbeat period ${BEAT_MS} ms)"
else
  fail "idle beat: a call right after a heartbeat is written by the next flush: chunk $idx, previous chunk's records $prev, $lag ms after the call, $since ms after the heartbeat"
  sed 's/^/    /' "$T/chunks"
fi

# the chunk flag `idle` (5.6, docs/FORMAT.md) marks exactly the heartbeats alone: what readers
# (analysis/hang.c) take to mean "the next chunk may come a heartbeat period later"
wrong=$(awk '($2 == 1) != ($5 == "idle") { printf "chunk %d (%d records, %s); ", $1, $2, $5 }' "$T/chunks")
if [ -z "$wrong" ] && [ "$beats" -ge 1 ]; then pass "idle beat: the chunk flag idle is on the $beats heartbeats alone and on no other chunk"
else fail "idle beat: the chunk flag idle is on the heartbeats alone only: $wrong"; fi
