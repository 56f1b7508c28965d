#!/usr/bin/env bash
# test_rings_move_exit.sh — a traced process that ends while it is giving a dead process's
# rings file back (shim/rings.c move_leftovers, 1 MiB a writer pass, begun 10 s after its
# first call) deletes its partial copy (`<link>.<pid>.tmp`, next to the dead process's trace)
# and leaves the file on /dev/shm, linked, for the next process: every process that ended
# mid-copy used to leave one (tens of MiB each, a big file never done by short processes).
# In a /dev/shm of the test's own (a private 8 GiB tmpfs in a new mount namespace: the shim
# uses one with 4 GiB free; another process's leftovers on the host's would be given back
# first); skipped where none can be had. A job is
# killed -9 after 3000 calls (its rings file stays, ~18 MiB); the next one records for 12 s
# (flush period 500 ms: a copy of ~36 passes) and ends: its partial copy is seen while it
# runs, and gone once it has ended.
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "rings_move_exit: $f not built"; exit 0; }; done
private_shm 8g 120
if [ -z "$IN" ]; then skip "rings_move_exit: no private /dev/shm here (a mount namespace is refused)"; exit 0; fi

d=$T/dead
mkdir -p "$d"
$IN env NCCLSCOPE_DIR="$d/tr" NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 3000 -p >"$d/out" 2>&1 &
jp=$!
for ((i = 0; i < 300; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
victim=$(pgrep -g 0 -f "^$JOB -n 3000 -p" | head -1)
kill -9 "${victim:-$jp}" 2>/dev/null
wait "$jp" 2>/dev/null
f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
to=$(readlink "$f.rings" 2>/dev/null)
case $to in
  /dev/shm/ncclscope-*.rings) pass "rings_move_exit: a killed process's rings file on /dev/shm, linked from its trace" ;;
  *) fail "rings_move_exit: no link to /dev/shm next to the killed process's trace: [$to]"; exit 0 ;;
esac

n=$T/next
mkdir -p "$n"
$IN env NCCLSCOPE_DIR="$n/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 10 -i 11000 >"$n/out" 2>&1 &
pid=$!
seen=0
while kill -0 "$pid" 2>/dev/null; do
  ls "$f".rings.*.tmp >/dev/null 2>&1 && seen=1
  sleep 0.1
done
wait "$pid"
check_eq "rings_move_exit: the next process ran (exit 0) and was copying the dead one's file (its partial copy seen)" "0 1" "$? $seen"
check_eq "rings_move_exit: it ended mid-copy: no partial copy left next to the dead one's trace" "" \
  "$(ls "$d/tr" | grep '\.tmp$')"
check_eq "rings_move_exit: the dead one's file still on /dev/shm, still linked (for the next process)" "$to yes" \
  "$(readlink "$f.rings") $($IN test -e "$to" && echo yes || echo no)"
[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
IN=
