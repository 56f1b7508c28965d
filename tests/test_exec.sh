#!/usr/bin/env bash
# test_exec.sh — a process image that execs (issue 25 item 5; shim/exec.c, docs/SHIM.md "exec").
# The truth is spawn_job's source (tests/faults/spawn_job.c): before its exec an image makes
# ncclGetUniqueId, ncclCommInitRank and 3 AllReduce (5 calls, rank 0 of 1); fault_job 2 makes 16
# calls. Checked: the job's output and exit code are those of the run without the shim; the
# pre-exec image's trace holds its 5 calls and ends "exec'd" (not cut) with its rank; no
# .rings file remains; the post-exec image's trace is complete and readable; the decoder puts
# both images in one job. Also: exec through execlp, a failed exec (the image goes on: one
# complete trace with every call), and vfork + exec right after ncclCommInitRank (10 runs; the
# 1,000-run loop is scripts/exec-loop.sh, `make soak`).
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "exec"; need_decoder "exec"; need_double "exec"
fault_build || { fail "exec: test programs build"; exit 0; }
SJ=$FB/spawn_job

# both NAME CMD...: runs CMD without and with the shim (traces in $T/NAME); same output/exit.
both() {
  local name=$1; shift
  run_job "$T/$name.0" NCS_X=1 -- "$@"
  run_job "$T/$name.1" NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM" -- "$@"
  if [ "$(cat "$T/$name.0.rc")" = "$(cat "$T/$name.1.rc")" ] && cmp -s "$T/$name.0.out" "$T/$name.1.out"; then
    pass "exec $name: output and exit code unchanged"
  else
    fail "exec $name: changed: exit $(cat "$T/$name.0.rc") vs $(cat "$T/$name.1.rc"); $(diff "$T/$name.0.out" "$T/$name.1.out" | head -4 | tr '\n' ' ')"
  fi
}
# images NAME PRE POST: two trace files of one pid: the first (PRE calls) exec'd, the second
# (POST calls) complete; no rings file; report names the first exec'd with rank 0; one job.
images() {
  local name=$1 pre=$2 post=$3 files f first= second=
  files=($(traces "$T/$name"))
  check_eq "exec $name: two trace files (one per image)" 2 "${#files[@]}"
  for f in "${files[@]}"; do
    readable "$f" || { fail "exec $name: $(basename "$f") unreadable: $STATS"; continue; }
    if [ "$(field calls "$STATS")" = "$pre" ] && [ "$(field truncated "$STATS")" = 0 ] && [ "$(field final "$STATS")" = 0 ]; then first=$f
    elif [ "$(field calls "$STATS")" = "$post" ] && [ "$(field final "$STATS")" = 1 ]; then second=$f; fi
  done
  [ -n "$first" ] && pass "exec $name: the first image's $pre calls, ended by exec, not cut" \
    || fail "exec $name: no trace with the first image's $pre calls ended by exec: $(for f in "${files[@]}"; do stats "$f" | head -1; done)"
  [ -n "$second" ] && pass "exec $name: the new image's $post calls in a complete trace" \
    || fail "exec $name: no complete trace with the new image's $post calls"
  [ -n "$first" ] && [ -n "$second" ] && check_eq "exec $name: both images have the same pid" \
    "$(stats "$first" | head -1 | sed 's/.* pid=\([0-9]*\).*/\1/')" "$(stats "$second" | head -1 | sed 's/.* pid=\([0-9]*\).*/\1/')"
  check_eq "exec $name: no .rings file left" "" "$(find "$T/$name" -name '*.rings' | tr '\n' ' ')"
  "$NCS" report "$T/$name" >"$T/$name.rep" 2>"$T/$name.err"
  check_eq "exec $name: report exits 0 (one job)" 0 "$?"
  check "exec $name: report shows rank 0 exec'd" grep -q "rank 0 (.* pid [0-9]*): exec'd" "$T/$name.rep"
  check_eq "exec $name: report calls nothing cut or killed" "" "$(grep -E 'CUT|killed' "$T/$name.rep" "$T/$name.err" | head -2)"
  [ -n "$first" ] && check_eq "exec $name: report --json: the first image's rank 0 execd" "0 True" \
    "$("$NCS" report --json "$T/$name" 2>/dev/null | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["ranks"] if x["file"].endswith(sys.argv[1])]; print(r[0]["rank"], r[0].get("execd", False))' "$(basename "$first")" 2>&1)"
}

# 1. re-exec of itself: the new image is spawn_job again (vfork of /bin/true, 5 + 3 + 1 calls)
both self "$SJ" exec "$SJ" vfork /bin/true
images self 5 9
# 2. exec of another NCCL program
both other "$SJ" exec "$FJOB" 2
images other 5 16
# 3. the variadic form
both execlp "$SJ" execlp "$FJOB" 2
images execlp 5 16
# 4. an exec that fails: the image goes on, one complete trace with all 5 + 3 + 1 calls
both fail "$SJ" execfail "$T/no-such-program"
files=($(traces "$T/fail"))
check_eq "exec fail: one trace file" 1 "${#files[@]}"
if [ ${#files[@]} = 1 ] && readable "${files[0]}"; then
  check_eq "exec fail: every call, complete (calls final truncated)" "9 1 0" \
    "$(field calls "$STATS") $(field final "$STATS") $(field truncated "$STATS")"
fi
check "exec fail: the job saw ENOENT" grep -q "No such file" "$T/fail.1.out"
check_eq "exec fail: no .rings file left" "" "$(find "$T/fail" -name '*.rings' | tr '\n' ' ')"
# 5. vfork + exec right after ncclCommInitRank: 10 runs, none hangs (30 s each at most), each
# parent's trace complete with 2 + 3 + 1 calls; the vfork child (/bin/true) leaves no file
hung=0 bad=0
for i in $(seq 1 10); do
  d=$T/vf$i
  NCCLSCOPE_DIR=$d LD_PRELOAD="$SHIM" timeout 30 "$SJ" vforkinit /bin/true >"$T/vf.out" 2>&1
  rc=$?
  [ $rc = 124 ] && hung=$((hung + 1))
  files=($(traces "$d"))
  if [ $rc != 0 ] || [ ${#files[@]} != 1 ] || ! readable "${files[0]}" || [ "$(field calls "$STATS") $(field final "$STATS")" != "6 1" ]; then
    bad=$((bad + 1))
    [ $bad = 1 ] && echo "    run $i: rc $rc, ${#files[@]} file(s), $STATS"
  fi
done
check_eq "exec vforkinit: 10 runs of vfork + exec right after init, hung" 0 "$hung"
check_eq "exec vforkinit: runs with a wrong exit code or trace (6 calls, complete)" 0 "$bad"
