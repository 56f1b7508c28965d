#!/usr/bin/env bash
# test_signal.sh — signals and the shim: the application's own SIGTERM/SIGINT handlers still
# run (same output, same exit code as without the shim); a job killed by SIGTERM or SIGINT with
# no handler dies the same way and still leaves a readable trace holding every call it made
# before the signal: the shim installs no handler, so the calls since the last periodic flush
# (NCCLSCOPE_FLUSH_MS=1000 here) come from the rings file the process leaves, as after kill -9.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "signal"; need_decoder "signal"; need_double "signal"
fault_build || { fail "signal: test programs build"; exit 0; }

# job_kill OUT SIG DELAY_S ENV...: starts fault_job (long, 20 ms steps), sends SIG after DELAY_S.
job_kill() {
  local out=$1 sig=$2 delay=$3; shift 3
  # background jobs of a non-interactive shell start with SIGINT ignored: restore the default
  env --default-signal=INT,TERM "$@" "$FJOB" 200 sleep=20000 ${HANDLER:-} >"$out.out" 2>"$out.err" &
  local pid=$!
  # the handler is installed before the first step: wait for it (up to 120 s under load)
  for _ in $(seq 1 2400); do grep -q '^step 0 ' "$out.out" 2>/dev/null && break; sleep 0.05; done
  sleep "$delay"
  kill -s "$sig" $pid
  wait $pid
  echo $? >"$out.rc"
}
for sig in TERM INT; do
  # With the application's handler.
  HANDLER=handler job_kill "$T/h0" $sig 0.3 NCS_X=1
  HANDLER=handler job_kill "$T/h1" $sig 0.3 NCCLSCOPE_DIR="$T/h-$sig" LD_PRELOAD="$SHIM"
  num=$(kill -l $sig)
  grep -q "^handler $num$" "$T/h0.out" || fail "signal $sig: baseline handler did not run"
  grep -q "^handler $num$" "$T/h1.out" && pass "signal $sig: application handler runs under the shim" \
    || fail "signal $sig: application handler did not run under the shim: $(tail -2 "$T/h1.out")"
  check_eq "signal $sig: exit code with handler same as without the shim" "$(cat "$T/h0.rc")" "$(cat "$T/h1.rc")"
  f=$(traces "$T/h-$sig" | head -1)
  [ -n "$f" ] && readable "$f" && pass "signal $sig: trace readable after the handler's exit" \
    || fail "signal $sig: no readable trace after handler exit: ${STATS:-none}"

  # Without a handler: dies of the signal; the trace must hold the calls made before it.
  HANDLER= job_kill "$T/n0" $sig 0.5 NCS_X=1
  HANDLER= job_kill "$T/n1" $sig 0.5 NCCLSCOPE_DIR="$T/n-$sig" NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM"
  check_eq "signal $sig: no handler: exit status same as without the shim" "$(cat "$T/n0.rc")" "$(cat "$T/n1.rc")"
  f=$(traces "$T/n-$sig" | head -1)
  if [ -z "$f" ]; then fail "signal $sig: no handler: no trace left"; continue; fi
  if readable "$f"; then pass "signal $sig: no handler: trace readable"; else fail "signal $sig: no handler: $STATS"; continue; fi
  steps=$(grep -c '^step ' "$T/n1.out")
  calls=$(field calls "$STATS")
  # each printed step made 6 calls, plus GetVersion, GetUniqueId, CommInitRank before them
  want=$((steps * 6 + 3))
  [ "$calls" -ge "$want" ] && pass "signal $sig: no handler: trace holds all $want calls made before the signal ($calls)" \
    || fail "signal $sig: no handler: trace holds $calls calls, the job made at least $want before SIG$sig (not flushed on the signal)"
done
