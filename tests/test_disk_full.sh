#!/usr/bin/env bash
# test_disk_full.sh — a trace file system that fills up loses nothing silently (issue 26 item
# 3; docs/SHIM.md "Files and write errors"): on small tmpfs mounts (full at start, full
# mid-run, freed and full again) the job's output and exit status are as without the shim, and
# every call the job made (its own count: fault_job's "calls N") is either in the trace or
# counted as lost with its reason (DROP 7: trace filesystem full; 1, 2: buffer full); a job
# that exited normally has its final chunk (not "cut"); report names the loss in its headline
# and exits 1, doctor exits 1. SKIP where mounting a tmpfs is refused.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "disk full"; need_decoder "disk full"; need_double "disk full"
fault_build || { fail "disk full: test programs build"; exit 0; }
M=$T/mnt
mkdir -p "$M"
if ! mount -t tmpfs -o size=32k none "$M" 2>"$T/mount.err"; then
  skip "disk full: cannot mount a tmpfs here ($(head -c 120 "$T/mount.err")): needs root"
  exit 0
fi
umount "$M"
trap 'umount "$M" 2>/dev/null; ncs_cleanup' EXIT
export NCCLSCOPE_FLUSH_MS=10 NCCL_DEBUG=
JOB="150 sleep=3000 quiet"
"$FJOB" $JOB >"$T/plain.out" 2>/dev/null
want=$(sed -n 's/^calls \([0-9]*\) .*/\1/p' "$T/plain.out")

# fill: writes zeros into $M/filler until the file system is full
fill() { dd if=/dev/zero of="$M/filler$1" bs=4096 2>/dev/null; true; }
# account NAME: the job's calls against the trace's (CALL records + DROP 1, 2, 7)
account() {
  local name=$1 f n=0 intrace=0 lost=0 ring=0 final=1
  for f in "$M"/tr/*.ncs; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    "$NCS" dump "$f" >"$T/$name.dump" 2>/dev/null
    intrace=$((intrace + $(grep -c '^CALL op=' "$T/$name.dump")))
    lost=$((lost + $(awk '/^DROP reason=7 /{split($3,a,"="); s+=a[2]} END{print s+0}' "$T/$name.dump")))
    ring=$((ring + $(awk '/^DROP reason=[12] /{split($3,a,"="); s+=a[2]} END{print s+0}' "$T/$name.dump")))
    grep -q '^== end: .*CUT' "$T/$name.dump" && final=0
  done
  got=$(sed -n 's/^calls \([0-9]*\) .*/\1/p' "$T/$name.out")
  check_eq "disk full $name: the job's output and exit status as without the shim" "0 $(cat "$T/plain.out")" "$(cat "$T/$name.rc") $(cat "$T/$name.out")"
  if [ "$n" = 0 ]; then
    echo "# $name: no trace file could be created"
    return 1
  fi
  check_eq "disk full $name: every call the job made ($got) is in the trace ($intrace) or counted lost (full $lost, buffer $ring)" \
    "$got" "$((intrace + lost + ring))"
  check_eq "disk full $name: the process exited normally: its trace has its final chunk (not cut)" 1 "$final"
  LOST=$lost
  return 0
}
run() { local name=$1; (NCCLSCOPE_DIR="$M/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$FJOB" $JOB >"$T/$name.out" 2>/dev/null; echo $? >"$T/$name.rc"); }

# full mid-run: 32 KiB holds the first chunks, not all of them
mount -t tmpfs -o size=32k none "$M"
run mid
if account mid; then
  check "disk full mid: some calls were lost (the file system is smaller than the trace): $LOST" test "$LOST" -gt 0
  "$NCS" report "$M/tr" >"$T/mid.rep" 2>"$T/mid.rep.err"
  check_eq "disk full mid: report exits 1" 1 "$?"
  check "disk full mid: the headline says '$LOST calls lost: trace filesystem full'" \
    sh -c "sed -n '1,8p' '$T/mid.rep' | grep -q '$LOST calls lost: trace filesystem full'"
  check "disk full mid: the rank is not called killed or cut" sh -c "! grep -qi 'killed\\|cut short' '$T/mid.rep' '$T/mid.rep.err'"
  "$NCS" doctor "$M/tr" >/dev/null 2>&1
  check_eq "disk full mid: doctor exits 1" 1 "$?"
fi
umount "$M"

# full at start: no byte free when the job starts
mount -t tmpfs -o size=64k none "$M"
mkdir -p "$M/tr"
fill 0
run start
if account start; then :; else pass "disk full start: no trace could be created, the job ran as without the shim"; fi
umount "$M"

# full at start, freed while the job runs, full again before it ends
mount -t tmpfs -o size=64k none "$M"
mkdir -p "$M/tr"
fill 0
(NCCLSCOPE_DIR="$M/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$FJOB" 300 sleep=3000 quiet >"$T/again.out" 2>/dev/null; echo $? >"$T/again.rc") &
jp=$!
sleep 0.3; rm -f "$M/filler0"
sleep 0.3; fill 1
wait "$jp"
"$FJOB" 300 sleep=3000 quiet >"$T/plain.out" 2>/dev/null
account again || fail "disk full again: no trace although space was freed while the job ran"
umount "$M"
