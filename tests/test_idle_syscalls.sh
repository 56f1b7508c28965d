#!/usr/bin/env bash
# test_idle_syscalls.sh — what an idle traced process costs per heartbeat (issue 30 item 2;
# docs/SHIM.md "Writer"): the writer posts a heartbeat's write to the file thread and sleeps
# (shim/fileio.c ncs_fio_post_pwrite_if), taking its answer at its next pass (shim/writer.c
# settle_beat), so a heartbeat is one wake-up of each thread and five system calls: the
# writer's wake of the file thread and its sleep, the file thread's statx, pwrite and sleep
# (nine before: the writer waited for the answer, the file thread woke it, and two getpid).
#   1. strace -f of rate_job on the stub NCCL, 10 calls then 8.5 s idle (shorter than the 10 s
#      after which a process looks for dead processes' rings files on /dev/shm): the system
#      calls of the shim's threads between the second heartbeat of the idle and the last one:
#      5 per heartbeat period, and 2 more in all at most (a writer that finds its heartbeat's
#      answer not there yet waits for it); a count of code paths, not of time.
#   2. a heartbeat whose posted write fails: the trace is deleted while the process is idle;
#      the failure is taken at the writer's next pass as a synchronous one is (the record
#      counted lost, DROP reason 3, and a new file flagged reopened). rate_job -p idles until
#      killed; killed once the new file has a chunk past its first.
. "$(dirname "$0")/lib.sh"

stub_nccl || { fail "idle syscalls: the stub NCCL builds"; exit 0; }
RJ=$BUILD/tests/rate_job
env_job=(LD_LIBRARY_PATH="$T/stub" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0)

# --- 2, in the background: the deleted trace (its own directory) ---
del=$T/del
mkdir -p "$del"
env "${env_job[@]}" NCCLSCOPE_DIR="$del" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$RJ" -n 10 -p >"$T/del.out" 2>"$T/del.err" &
dpid=$!
size() { stat -c %s "$1" 2>/dev/null || echo -1; }
# waits (at most $2 s) until file $1 has grown $3 times; 0 when it has
grown() {
  local f=$1 n=0 last cur i
  last=$(size "$f")
  for ((i = 0; i < $2 * 20 && n < $3; i++)); do
    sleep 0.05
    cur=$(size "$f")
    [ "$cur" != "$last" ] && { n=$((n + 1)); last=$cur; }
  done
  [ "$n" -ge "$3" ]
}
(
  for ((i = 0; i < 600; i++)); do grep -q '^done' "$T/del.out" 2>/dev/null && break; sleep 0.05; done
  tr=$(ls "$del"/*.ncs 2>/dev/null | head -1)
  # three chunks after the calls: the last ones heartbeats alone, each write posted
  [ -n "$tr" ] && grown "$tr" 30 3 || { echo "no idle heartbeats" >"$T/del.why"; kill -9 $dpid; exit 0; }
  rm -f "$tr"
  # the next heartbeat fails (the file is deleted: ESTALE), the pass after makes a new file
  for ((i = 0; i < 600; i++)); do [ -e "$tr" ] && break; sleep 0.05; done
  [ -e "$tr" ] && grown "$tr" 30 1 || echo "no new file after the deletion" >"$T/del.why"
  kill -9 $dpid
) &
watcher=$!

# --- 1: system calls per idle heartbeat ---
if ! command -v strace >/dev/null; then
  skip "idle syscalls: strace is not installed: the system calls of an idle heartbeat not counted"
elif [ -n "$NCS_SANITIZER" ]; then
  skip "idle syscalls: a $NCS_SANITIZER build (its runtime's own system calls): not counted"
else
  d=$T/tr
  mkdir -p "$d"
  env "${env_job[@]}" NCCLSCOPE_DIR="$d" timeout 120 strace -f -Y -qq -ttt -o "$T/st" -E LD_PRELOAD="$SHIM" \
    "$RJ" -n 10 -i 7500 >"$T/st.out" 2>&1
  check_eq "idle syscalls: rate_job runs under strace (exit 0)" 0 $?
  # the main thread (the first line's pid): its first clock_nanosleep starts the idle, its next
  # line after the last one ends it; heartbeats: the file thread's pwrite64 in between
  awk '
    { id = $1; sub(/<.*/, "", id) }
    NR == 1 { main = id }
    $3 ~ /^<\.\.\./ || $3 ~ /^\+\+\+/ || $3 ~ /^---/ { if (id == main && sleeping) { tend = $2; sleeping = 0 } next }
    id == main { if ($3 ~ /^clock_nanosleep\(/) { if (!tidle) tidle = $2; sleeping = 1; tend = 0 } else if (sleeping) { tend = $2; sleeping = 0 } }
    { t[NR] = $2; who[NR] = $1; call[NR] = $3 }
    END {
      if (!tidle || !tend) { print "no idle seen"; exit }
      for (i = 1; i <= NR; i++) if (t[i] > tidle && t[i] < tend && who[i] ~ /<ncclscope-fio>$/ && call[i] ~ /^pwrite64\(/) h[++n] = t[i]
      if (n < 4) { print "heartbeats " n; exit }
      for (i = 1; i <= NR; i++) if (t[i] > h[2] && t[i] <= h[n] && who[i] ~ /<ncclscope-/) {
        c++; sub(/\(.*/, "", call[i]); w = who[i]; sub(/^[0-9]*/, "", w); k[w " " call[i]]++ }
      printf "periods %d calls %d (by thread and call:", n - 2, c
      for (x in k) printf " %s=%d", x, k[x]
      print ")"
    }' "$T/st" >"$T/count"
  read -r _ periods _ calls _ <"$T/count"
  if [ "${periods:-0}" -ge 2 ] 2>/dev/null && [ "$calls" -le $((5 * periods + 2)) ]; then
    pass "idle syscalls: 5 system calls per idle heartbeat, 2 more in all at most ($(cat "$T/count"))"
  else
    fail "idle syscalls: 5 system calls per idle heartbeat, 2 more in all at most: $(cat "$T/count")"
  fi
  "$NCS" dump "$d"/*.ncs >"$T/dump" 2>&1
  check_eq "idle syscalls: its trace reads whole (dump exits 0), the idle heartbeats flagged idle" "0 yes" \
    "$? $([ "$(grep -c '^-- chunk .* idle$' "$T/dump")" -ge 3 ] && echo yes || echo no)"
fi

wait $watcher
wait $dpid 2>/dev/null
if [ -e "$T/del.why" ]; then
  fail "idle syscalls: a deleted trace while idle: $(cat "$T/del.why")"
else
  "$NCS" dump "$del"/*.ncs >"$T/ddump" 2>&1
  # the new file: its first chunk flagged reopened, a DROP reason=3 counting the lost heartbeat
  first=$(grep -m1 '^-- chunk ' "$T/ddump")
  lost=$(awk '/^DROP reason=3 /' "$T/ddump" | fieldval records | head -1)
  check_eq "idle syscalls: a heartbeat lost to a deleted trace: a new file flagged reopened, the lost record counted (DROP reason 3)" \
    "reopened 1" "$(case $first in *reopened*) echo reopened ;; *) echo "[$first]" ;; esac) ${lost:-none}"
fi
