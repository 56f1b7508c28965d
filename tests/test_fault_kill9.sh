#!/usr/bin/env bash
# test_fault_kill9.sh — kill -9 at NCS_KILL9_RUNS moments (from before the first NCCL call to
# after the last) of the DDP job (tests/jobs/ddp_job.c, 2 ranks under tests/jobs/launch.sh,
# the whole process group killed at once, as when a node dies), two jobs at a time; then
# NCS_KILL9_FRUNS more kills of tests/faults/fault_job, whose printed steps show which calls had
# been made. `make test` runs 12 + 4 kills, `make soak` 100 + 20 (scripts/soak.sh): each kind's
# moments are spread evenly over 0..250 ms (one random moment in each of its equal slices), so
# the short run still kills before, during and after the calls. Every trace left must be readable up to its
# last flush: ncs_trace_read takes it without damage, and `ncclscope report` says it was cut
# (exit 0: a cut trace is normal input; "truncated" in its message, decoder/cmd/commands.h)
# unless the job had finished. Also
# counts how many of the calls the job printed before dying reached the trace.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "kill9"; need_decoder "kill9"; need_double "kill9"
fault_build || { fail "kill9: test programs build"; exit 0; }

DDP=$BUILD/tests/ddp_job
[ -x "$DDP" ] || { skip "kill9: $DDP not built"; exit 0; }
RUNS=${NCS_KILL9_RUNS:-12}
FRUNS=${NCS_KILL9_FRUNS:-4}
# one I: run I (DDP for I <= RUNS, else fault_job), killed after a random delay of 0..250 ms in
# its slice (run J of the G runs of its kind: J x 250 / G ms and up to 250 / G ms more);
# writes $T/k$I.res. Even DDP runs never end by themselves (100000 steps), so they are killed in
# flight whatever the load; odd ones (40 steps) may finish first: whether they do is a race.
one() {
  local i=$1 d=$T/k$1
  mkdir -p "$d"
  local steps=40
  [ $((i % 2)) = 0 ] && steps=100000
  if [ "$i" -le "$RUNS" ]; then
    NCCLSCOPE_DIR="$d/tr" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$SHIM" \
      setsid bash "$ROOT/tests/jobs/launch.sh" 2 "$DDP" --steps $steps --compute-us 2000 >"$d/out" 2>&1 &
  else
    NCCLSCOPE_DIR="$d/tr" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$SHIM" setsid "$FJOB" 60 sleep=3000 >"$d/out" 2>&1 &
  fi
  local pid=$!
  # the kill goes to the job's process group: wait until setsid made it (a kill sent before would
  # miss the job, and an endless one would then run for ever)
  local w=0
  while kill -0 "$pid" 2>/dev/null && ! kill -0 -- -"$pid" 2>/dev/null && [ $w -lt 6000 ]; do sleep 0.01; w=$((w + 1)); done
  local j=$((i - 1)) g=$RUNS
  [ "$i" -gt "$RUNS" ] && j=$((i - 1 - RUNS)) g=$FRUNS
  local ms=$(( j * 250 / g + RANDOM % (250 / g > 0 ? 250 / g : 1) ))
  sleep "$(printf '0.%03d' $ms)"
  kill -9 -- -$pid 2>/dev/null
  { wait $pid; } 2>/dev/null
  local rc=$?
  local f
  echo "job rc=$rc ms=$ms endless=$([ "$i" -le "$RUNS" ] && [ $steps = 100000 ] && echo 1 || echo 0) steps=$(grep -c '^step [0-9]* sum' "$d/out")" >"$d.res"
  for f in $(traces "$d/tr"); do
    local line rep rrc
    line=$("$FB/trace_stats" "$f" | head -1)
    rep=$(timeout 20 "$NCS" report "$f" 2>&1)
    rrc=$?
    echo "file size=$(stat -c %s "$f") reader=$(field rc "$line") truncated=$(field truncated "$line") damaged=$(field damaged "$line") calls=$(field calls "$line") report=$rrc says_truncated=$(grep -qi truncated <<<"$rep" && echo 1 || echo 0) names_file=$(grep -q "$(basename "$f")" <<<"$rep" && echo 1 || echo 0)" >>"$d.res"
  done
  rm -rf "$d"
}
for i in $(seq 1 2 $((RUNS + FRUNS))); do
  one "$i" & one $((i + 1)) &
  wait
done

killed=0 finished=0 endless=0 endless_finished=0 unreadable=0 notcut=0 empty=0 nofile=0 lost=0 traces=0 cut=0
for i in $(seq 1 $((RUNS + FRUNS))); do
  [ -f "$T/k$i.res" ] || { fail "kill9 run $i: no result recorded"; continue; }
  job=$(head -1 "$T/k$i.res")
  g() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
  [ "$(g rc "$job")" = 0 ] && finished=$((finished + 1)) || killed=$((killed + 1))
  if [ "$(g endless "$job")" = 1 ]; then
    endless=$((endless + 1)); [ "$(g rc "$job")" = 0 ] && endless_finished=$((endless_finished + 1))
  fi
  [ "$(wc -l <"$T/k$i.res")" -gt 1 ] || nofile=$((nofile + 1))
  while read -r _ r; do
    traces=$((traces + 1))
    if [ "$(g size "$r")" = 0 ]; then empty=$((empty + 1)); continue; fi
    if [ "$(g reader "$r")" != 0 ] || [ "$(g damaged "$r")" != 0 ]; then
      unreadable=$((unreadable + 1)); fail "kill9 run $i: trace unreadable: $r"; continue
    fi
    if [ "$(g truncated "$r")" = 1 ]; then
      cut=$((cut + 1))
      # cut short: the report must say so, name the file and exit 0 (decoder/cmd/commands.h)
      if [ "$(g report "$r")" != 0 ] || [ "$(g says_truncated "$r")" != 1 ] || [ "$(g names_file "$r")" != 1 ]; then
        notcut=$((notcut + 1)); fail "kill9 run $i: cut trace not reported as truncated: $r"
      fi
    elif [ "$(g report "$r")" != 0 ]; then
      fail "kill9 run $i: complete trace, report exit $(g report "$r")"
    fi
    if [ "$i" -gt "$RUNS" ]; then
      steps=$(g steps "$job"); calls=$(g calls "$r")
      # fault_job: 3 calls before the steps, 6 per printed step
      made=0; [ "$steps" -gt 0 ] && made=$((steps * 6 + 3))
      [ "$calls" -lt "$made" ] && lost=$((lost + made - calls))
    fi
  done < <(tail -n +2 "$T/k$i.res")
done
echo "# figures: kill9 runs=$((RUNS + FRUNS)) (ddp 2 ranks: $RUNS, fault_job: $FRUNS) killed=$killed finished_first=$finished traces=$traces cut=$cut no_file=$nofile empty_files=$empty unreadable=$unreadable cut_not_reported=$notcut fault_job_calls_printed_not_in_trace=$lost"
check_eq "kill9: traces unreadable beyond their damage" 0 "$unreadable"
check_eq "kill9: cut traces not reported as truncated" 0 "$notcut"
check_eq "kill9: the $((RUNS / 2)) endless DDP jobs were all killed in flight (exit status not 0)" "$((RUNS / 2)) 0" "$endless $endless_finished"
check_eq "kill9: empty trace files (killed between create and header)" 0 "$empty"
