#!/usr/bin/env bash
# test_hostile.sh — the shim inside jobs that do unusual things to their process (the audit of
# session 4; docs/RELIABILITY.md "Hostile jobs"), each compared with the same job without the
# shim (tests/jobs/hostile_job.c prints a deterministic result per mode):
#   lowfd     a job closes every descriptor from 3 on, opens its own files there and calls NCCL
#             from code without unwind information: libunwind's address-check pipe (opened by
#             the shim's first call-site capture) used to sit on 3 and 4, so libunwind read the
#             job's input and wrote stack bytes into its output (fixed: shim/callsite.c pipe2)
#   atfork    the job's pthread_atfork handlers call NCCL while another thread calls it
#   sigterm   the job's own SIGTERM handler, installed after the first NCCL call, with and
#             without SA_RESTART: a blocked read resumes / returns EINTR exactly as without us
#   sigsegv   the job's own SIGSEGV handler leaves by siglongjmp between NCCL calls
#   dlpath    libnccl dlopen'ed by its full path after the shim activated: calls through that
#             handle are traced
#   clearenv  clearenv() before the first NCCL call (environment scrubbed, environ NULL)
#   tfork     a non-main thread forks children while another thread calls NCCL in a loop; the
#             children exec, exit or _exit after activating the shim (NCS_HOSTILE_RUNS runs)
#   exitrace  exit() while three threads are inside NCCL calls (NCS_HOSTILE_REPEATS runs)
#   cancel    a thread cancelled (pthread_cancel) during the process's first NCCL calls, and one
#             cancelled while it makes and destroys communicators; then the job uses NCCL, forks
#             and exits: it used to hang for ever (the cancelled thread kept the shim's
#             activation lock or the writer's; fixed: shim/state.c, shim/comms.c)
#   hostname  a host name with '/', '..', a newline, a tab, quotes, '<' and non-UTF-8 bytes
#             (user + UTS namespace; SKIP where unshare is not allowed)
#   tmpfs     NCCLSCOPE_DIR on a 16 KiB and a 64 KiB file system that fills up (user + mount
#             namespace; SKIP where not allowed)
#   decoder   two traces concatenated into one file; a live trace read while it is written
# Repetitions: `make test` runs tfork 3 times (NCS_HOSTILE_RUNS) and lowfd and exitrace twice
# (NCS_HOSTILE_REPEATS); `make soak` (scripts/soak.sh) 12 and 5, as this test did before.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "hostile"; need_decoder "hostile"; need_double "hostile"
fault_build || { fail "hostile: test programs build"; exit 0; }
HJ=$BUILD/tests/hostile_job
[ -x "$HJ" ] || { skip "hostile: $HJ not built"; exit 0; }
# processes that _exit leave their rings file for recovery: keep it small
export NCCLSCOPE_BUFFER_KB=64

# same_as_plain NAME MODE ARGS...: the job's stdout and exit status under the shim equal a run
# without it; the traces it left are readable. FILTER (a sed script) drops lines known to differ.
same_as_plain() {
  local name=$1; shift
  rm -rf "$T/p" "$T/s"; mkdir -p "$T/p" "$T/s"
  (cd "$T/p" && timeout -k 5 120 "$HJ" "$@" >out 2>err; echo $? >rc)
  (cd "$T/s" && timeout -k 5 120 env NCCLSCOPE_DIR="$T/s/tr" LD_PRELOAD="$SHIM" "$HJ" "$@" >out 2>err; echo $? >rc)
  sed -i "${FILTER:-}" "$T/p/out" "$T/s/out"
  if [ "$(cat "$T/p/rc")" = "$(cat "$T/s/rc")" ] && cmp -s "$T/p/out" "$T/s/out"; then
    pass "hostile $name: output and exit status as without the shim ($(head -1 "$T/s/out"))"
  else
    fail "hostile $name: exit $(cat "$T/p/rc") vs $(cat "$T/s/rc"): $(diff "$T/p/out" "$T/s/out" | head -4 | tr '\n' ' ') $(head -c 300 "$T/s/err")"
  fi
  local f bad=0 n=0
  for f in $(traces "$T/s/tr"); do n=$((n + 1)); readable "$f" || { bad=$((bad + 1)); echo "    $STATS"; }; done
  check_eq "hostile $name: every trace readable ($n)" 0 "$bad"
}

same_as_plain "atfork (the job's fork handlers call NCCL; 20 forks beside a calling thread)" atfork 20
REPEATS=${NCS_HOSTILE_REPEATS:-2}
for i in $(seq 1 "$REPEATS"); do same_as_plain "lowfd run $i (5 calls through a frame without unwind information)" lowfd 5; done
same_as_plain "sigterm (SA_RESTART and not; the dispositions the job reads before and after its first NCCL call)" sigterm
grep -q '^after first call: term=default ' "$T/s/out" &&
  pass "hostile sigterm: after the first NCCL call the job still reads the default SIGTERM disposition (SIGINT: as without the shim, above)" ||
  fail "hostile sigterm: dispositions under the shim: $(grep '^after first call' "$T/s/out")"
grep -q '^no SA_RESTART: eintr$' "$T/s/out" && grep -q '^SA_RESTART: resumed$' "$T/s/out" &&
  pass "hostile sigterm: the read returned EINTR without SA_RESTART and resumed with it" ||
  fail "hostile sigterm: $(tr '\n' ' ' <"$T/s/out")"
same_as_plain "sigsegv (20 faults left by siglongjmp)" sigsegv 20
same_as_plain "dlpath" dlpath 5
f=$(traces "$T/s/tr" | head -1)
cp "$f" "$T/dlpath.ncs" 2>/dev/null
STATS=$(stats "$f" 2>/dev/null)
check_eq "hostile dlpath: the 5 calls through the full-path handle are traced (6 AllReduce)" "op AllReduce 6" \
  "$(grep '^op AllReduce ' <<<"$STATS")"
same_as_plain "clearenv" clearenv
n=$(traces "$T/s/ncclscope-trace" | wc -l)
check_eq "hostile clearenv: the trace is in the default directory of the start directory" 1 "$n"

# tfork: many runs, each with 20 forks from a non-main thread while NCCL is being called
# (under TSan a child that starts the shim's threads dies: "dup thread with used id", exit 66)
RUNS=${NCS_HOSTILE_RUNS:-3}
tsan_fork_skip "hostile tfork (forks from a non-main thread; children start the shim's threads)" && RUNS=0
bad=0 unread=0 files=0
for i in $(seq 1 "$RUNS"); do
  d=$T/tf; rm -rf "$d"; mkdir -p "$d"
  if ! (cd "$d" && timeout -k 5 120 env NCCLSCOPE_DIR="$d/tr" LD_PRELOAD="$SHIM" "$HJ" tfork 20 >out 2>err); then
    bad=$((bad + 1)); echo "    run $i: $(head -c 300 "$d/err")"
  fi
  for f in $(traces "$d/tr"); do files=$((files + 1)); readable "$f" || { unread=$((unread + 1)); echo "    $STATS"; }; done
done
if [ "$RUNS" -gt 0 ]; then
  check_eq "hostile tfork: $RUNS runs x 20 forks from a non-main thread during NCCL calls: every run exits 0" 0 "$bad"
  check_eq "hostile tfork: every trace readable ($files files)" 0 "$unread"
fi

# exitrace: the exit handlers run while other threads keep calling NCCL
bad=0
for i in $(seq 1 "$REPEATS"); do
  d=$T/ex; rm -rf "$d"; mkdir -p "$d"
  (cd "$d" && timeout -k 5 120 env NCCLSCOPE_DIR="$d/tr" LD_PRELOAD="$SHIM" "$HJ" exitrace 2000 >out 2>err; echo $? >rc)
  f=$(traces "$d/tr" | head -1)
  if [ "$(cat "$d/rc") $(cat "$d/out")" != "0 ok exitrace" ] || [ -z "$f" ] || ! readable "$f"; then
    bad=$((bad + 1)); echo "    run $i: exit $(cat "$d/rc") $(head -c 200 "$d/err") ${STATS:-no trace}"
  fi
done
check_eq "hostile exitrace: $REPEATS runs of exit(0) beside three threads inside NCCL calls: exit 0, trace readable" 0 "$bad"

# cancel: the delays spread the cancellation over activation and the communicator cycle.
# A thread cancelled inside shim code that holds off forks (shim/forkgate.c) can never leave
# it: the fork must not wait for it (the shim's debug line counts forks that waited out their
# 2 s; NCCLSCOPE_DEBUG only adds lines on stderr).
for mode in cancel cancel-destroy; do
  bad=0 waited=0
  for us in 0 100 300 1000 3000 10000; do
    d=$T/cx; rm -rf "$d"; mkdir -p "$d"
    (cd "$d" && timeout -k 5 60 env NCCLSCOPE_DEBUG=1 NCCLSCOPE_DIR="$d/tr" LD_PRELOAD="$SHIM" "$HJ" $mode $us >out 2>err; echo $? >rc)
    f=$(traces "$d/tr" | head -1)
    if [ "$(cat "$d/rc") $(cat "$d/out")" != "0 ok cancel cancelled" ] || [ -z "$f" ] || ! readable "$f"; then
      bad=$((bad + 1)); echo "    $mode $us us: exit $(cat "$d/rc") (124: hung) $(head -c 200 "$d/err") ${STATS:-no trace}"
    fi
    grep -q 'fork(s) proceeded after 2 s' "$d/err" && { waited=$((waited + 1)); echo "    $mode $us us: $(grep 'proceeded after' "$d/err")"; }
  done
  check_eq "hostile $mode: a thread cancelled after 0..10000 us (6 runs): the job goes on, forks and exits 0, trace readable" 0 "$bad"
  check_eq "hostile $mode: no fork waited out the fork gate for the cancelled thread (6 runs)" 0 "$waited"
done

# hostname: a user and UTS namespace lets an unprivileged test set any host name
HOSTNAME_RAW='../..\n<b>x"y/z\377\376\tq'
if unshare -ur --uts true 2>/dev/null && command -v python3 >/dev/null; then
  D=$T/hn/traces; rm -rf "$T/hn"; mkdir -p "$T/hn"
  unshare -ur --uts bash -c 'python3 -c "import socket,sys; socket.sethostname(sys.argv[1].encode().decode(\"unicode_escape\").encode(\"latin-1\"))" "$1" &&
    cd "$5" && NCCLSCOPE_DIR="$2" LD_PRELOAD="$3" "$4" sigsegv 3' _ "$HOSTNAME_RAW" "$D" "$SHIM" "$HJ" "$T/hn" >"$T/hn.out" 2>"$T/hn.err"
  check_eq "hostile hostname: the job runs as without the shim" "ok sigsegv faults=3 handler=siginfo-handler" "$(cat "$T/hn.out")"
  n=$(find "$D" -mindepth 1 -maxdepth 1 -type f -name '*.ncs' | wc -l)
  check_eq "hostile hostname: one trace, directly in NCCLSCOPE_DIR ('/' and control characters replaced)" "1 0" \
    "$n $(find "$T/hn" -path "$D" -prune -o -name '*.ncs' -print | wc -l)"
  "$NCS" report --json "$D" >"$T/hn.json" 2>"$T/hn.rerr"
  check "hostile hostname: report --json is valid JSON and names the host" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = json.dumps(d)
assert "x\\\"y/z" in s, "host not found"' "$T/hn.json"
  "$NCS" report "$D" >"$T/hn.txt" 2>&1
  check_eq "hostile hostname: the text report escapes the newline (no line starts with <b>)" 0 "$(grep -c '^<b>' "$T/hn.txt")"
  "$NCS" html "$D" -o "$T/hn.html" >/dev/null 2>&1
  check_eq "hostile hostname: the HTML page carries no raw <b> from the host name" 0 "$(grep -c '<b>x' "$T/hn.html")"
else
  skip "hostile hostname: unshare -ur --uts is not allowed here (user namespaces off)"
fi

# tmpfs: a file system that fills up under the trace
if unshare -urm true 2>/dev/null; then
  FJOBOUT=$("$FJOB" 300 2>/dev/null)
  for size in 16k 64k; do
    M=$T/mnt-$size; mkdir -p "$M"
    unshare -urm bash -c 'mount -t tmpfs -o size="$1" none "$2" && NCCLSCOPE_DIR="$2/tr" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$3" "$4" 300 >"$5.out" 2>"$5.err"; echo $? >"$5.rc";
      for f in "$2"/tr/*.ncs; do "$6" "$f"; done >"$5.stats" 2>&1' _ "$size" "$M" "$SHIM" "$FJOB" "$T/fs-$size" "$FB/trace_stats"
    check_eq "hostile tmpfs $size full: the job's output and exit as without the shim" "0 $FJOBOUT" "$(cat "$T/fs-$size.rc") $(cat "$T/fs-$size.out")"
    l=$(head -1 "$T/fs-$size.stats")
    check_eq "hostile tmpfs $size full: the trace is readable ($l)" 0 "$(field rc "$l")"
  done
else
  skip "hostile tmpfs: unshare -urm is not allowed here (user namespaces off)"
fi

# decoder: concatenated traces, a trace read while it is written
f=$T/dlpath.ncs
cat "$f" "$f" >"$T/cat.ncs"
"$NCS" report "$T/cat.ncs" >/dev/null 2>"$T/cat.err"
rc=$?
check_eq "hostile decoder: two traces concatenated: exit 3 (damaged)" 3 "$rc"
check "hostile decoder: the error names the file and the offset of the second header" \
  grep -q "cat.ncs: offset $(stat -c %s "$f"): " "$T/cat.err"
D=$T/live; rm -rf "$D"
NCCLSCOPE_DIR="$D" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$SHIM" "$FJOB" 300 sleep=5000 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -n "$(traces "$D")" ] && break; sleep 0.05; done
reads=0 badreads=0
while kill -0 $pid 2>/dev/null && [ $reads -lt 40 ]; do
  "$NCS" report "$D" >/dev/null 2>"$T/live.err"
  rc=$?; reads=$((reads + 1))
  [ $rc -le 1 ] || { badreads=$((badreads + 1)); echo "    read $reads: exit $rc $(head -c 200 "$T/live.err")"; }
done
wait $pid
check_eq "hostile decoder: a live trace read $reads times while written: exit 0 or 1 each time" 0 "$badreads"
