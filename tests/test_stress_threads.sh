#!/usr/bin/env bash
# test_stress_threads.sh — 32 threads x 100k NCCL calls (ncclGetVersion: recorded, cheap) in one
# process: no call may be lost unless counted. Per thread: CALL records + the thread's DROP
# counts == 100000 and the highest tcall == 100000; over the file: CALL records + the
# cumulative dropped count == every call the job made. Run with the default buffers and with
# the smallest (NCCLSCOPE_BUFFER_KB=16) to force drops.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "stress"; need_decoder "stress"; need_double "stress"
fault_build || { fail "stress: test programs build"; exit 0; }

TH=32 PER=100000
for kb in default 16; do
  d=$T/tr-$kb
  envs=(NCCLSCOPE_DIR="$d" LD_PRELOAD="$SHIM")
  [ $kb != default ] && envs+=(NCCLSCOPE_BUFFER_KB=$kb)
  start=$(date +%s%N)
  run_job "$T/s" "${envs[@]}" -- "$FJOB" 0 quiet threads=$TH,$PER
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  name="stress ${TH}x$PER buffer $kb"
  check_eq "$name: job result" "thread_calls $((TH * PER))" "$(grep thread_calls "$T/s.out")"
  total=$(sed -n 's/^calls \([0-9]*\).*/\1/p' "$T/s.out")
  f=$(traces "$d" | head -1)
  [ -n "$f" ] || { fail "$name: no trace"; continue; }
  stats "$f" >"$T/st"
  line=$(head -1 "$T/st")
  [ "$(field rc "$line")" = 0 ] && [ "$(field final "$line")" = 1 ] && pass "$name: trace complete" || fail "$name: $line"
  calls=$(field calls "$line"); dropped=$(field dropped "$line")
  check_eq "$name: CALL records + dropped == calls made ($calls + $dropped)" "$total" "$((calls + dropped))"
  # per worker thread (trace thread index > 1; index 1 is main)
  bad=0 nt=0 tdrop=0
  while read -r _ t c m dr; do
    c=${c#calls=}; m=${m#max_tcall=}; dr=${dr#dropped=}
    [ "$t" = 1 ] && continue
    nt=$((nt + 1)); tdrop=$((tdrop + dr))
    if [ $((c + dr)) != $PER ] || { [ "$c" != 0 ] && [ "$m" -gt $PER ]; }; then
      bad=$((bad + 1)); [ $bad -le 3 ] && echo "    thread $t: calls $c dropped $dr max_tcall $m"
    fi
  done < <(grep '^thread ' "$T/st")
  check_eq "$name: worker threads seen" "$TH" "$nt"
  check_eq "$name: threads whose records + drops != $PER" 0 "$bad"
  echo "# figures: stress buffer=$kb threads=$TH calls=$total recorded=$calls dropped=$dropped thread_drops=$tdrop wall_ms=$ms"
done
