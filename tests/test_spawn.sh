#!/usr/bin/env bash
# test_spawn.sh — process creation under the shim: fork without exec (the child writes its own
# trace under its own pid), exec of another NCCL program (same pid: a second file, both
# readable and complete), vfork + exec and posix_spawn of programs that never use NCCL (no file for them),
# posix_spawn of an NCCL program, and a daemonising double fork whose grandchild uses NCCL after
# its parent exited. Job output and exit codes are those of the runs without the shim.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "spawn"; need_decoder "spawn"; need_double "spawn"
fault_build || { fail "spawn: test programs build"; exit 0; }
SJ=$FB/spawn_job

# both NAME CMD...: runs CMD without and with the shim (traces in $T/NAME); same output/exit.
both() {
  local name=$1; shift
  run_job "$T/$name.0" NCS_X=1 -- "$@"
  run_job "$T/$name.1" NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM" -- "$@"
  if [ "$(cat "$T/$name.0.rc")" = "$(cat "$T/$name.1.rc")" ] && cmp -s "$T/$name.0.out" "$T/$name.1.out"; then
    pass "spawn $name: output and exit code unchanged"
  else
    fail "spawn $name: changed: exit $(cat "$T/$name.0.rc") vs $(cat "$T/$name.1.rc"); $(diff "$T/$name.0.out" "$T/$name.1.out" | head -4 | tr '\n' ' ')"
  fi
}
# expect_traces NAME N: N files in $T/NAME, each readable and complete (FINAL chunk);
# prints "pid calls" per file on fd 3.
expect_traces() {
  local files=($(traces "$T/$1")) f
  check_eq "spawn $1: trace files" "$2" "${#files[@]}"
  for f in "${files[@]}"; do
    if readable "$f" && [ "$(field final "$STATS")" = 1 ]; then
      pass "spawn $1: $(basename "$f") complete ($(field calls "$STATS") calls)"
    else
      fail "spawn $1: $(basename "$f") not complete: $STATS"
    fi
  done
}

# fork without exec: parent 1 step, child 4 steps on its own communicator, parent 4 more.
# The child ends with exit(): its trace must be complete.
if ! tsan_fork_skip "spawn forkexit"; then
both forkexit "$FJOB" 5 forkexit
expect_traces forkexit 2
calls=$(for f in $(traces "$T/forkexit"); do field calls "$(stats "$f" | head -1)"; done | sort -n | tr '\n' ' ')
# child: GetUniqueId, CommInitRank, 4 steps x 6, CommDestroy = 27; parent: 3 + 5x6 + 1 = 34
check_eq "spawn forkexit: calls per trace (child, parent)" "27 34 " "$calls"
fi
# The child ends with _exit() (as Python's multiprocessing children do): no exit handler runs,
# so the child's trace may end at its last periodic flush; it must still be readable.
both fork "$FJOB" 5 fork
files=($(traces "$T/fork"))
# the _exit child leaves a file only if a periodic flush happened before its _exit
[ ${#files[@]} -ge 1 ] && pass "spawn fork (_exit child): ${#files[@]} trace file(s)" || fail "spawn fork (_exit child): no trace"
for f in "${files[@]}"; do
  readable "$f" && pass "spawn fork (_exit child): $(basename "$f") readable ($(field calls "$STATS") calls, final $(field final "$STATS"))" \
    || fail "spawn fork (_exit child): $STATS"
done

# exec: same pid, new image. Every file readable and complete: the first image's trace ends
# with the chunk the shim's execv wrapper has the writer write (flag EXEC, shim/exec.c), so all
# of its 5 calls (spawn_job.c: GetUniqueId, CommInitRank, 3 AllReduce) are there; the second
# image's 16 (fault_job 2) in a complete trace. tests/test_exec.sh checks the rest.
both exec "$SJ" exec "$FJOB" 2
files=($(traces "$T/exec"))
check_eq "spawn exec: one trace file per image" 2 "${#files[@]}"
calls=
for f in "${files[@]}"; do
  readable "$f" && [ "$(field truncated "$STATS")" = 0 ] && pass "spawn exec: $(basename "$f") readable, not cut" || fail "spawn exec: $STATS"
  calls="$calls $(field calls "$STATS")"
done
check_eq "spawn exec: calls per image (5 before the exec, 16 after)" "5 16" "$(echo $calls | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')"
# vfork + exec of a program that never uses NCCL
both vfork "$SJ" vfork /bin/true
expect_traces vfork 1
# posix_spawn of a program that never uses NCCL, then of an NCCL program
both spawn-true "$SJ" spawn /bin/true
expect_traces spawn-true 1
both spawn-nccl "$SJ" spawn "$FJOB" 2
expect_traces spawn-nccl 2

# daemon: the grandchild outlives its parent
if ! tsan_fork_skip "spawn daemon"; then
for m in 0 1; do
  rm -f "$T/marker$m"
  if [ $m = 0 ]; then "$SJ" daemon "$T/marker$m" >"$T/d$m.out" 2>&1
  else NCCLSCOPE_DIR="$T/daemon" LD_PRELOAD="$SHIM" "$SJ" daemon "$T/marker$m" >"$T/d$m.out" 2>&1; fi
  echo $? >"$T/d$m.rc"
  for _ in $(seq 1 1200); do [ -s "$T/marker$m" ] && break; sleep 0.05; done
done
check_eq "spawn daemon: parent output unchanged" "$(cat "$T/d0.out") $(cat "$T/d0.rc")" "$(cat "$T/d1.out") $(cat "$T/d1.rc")"
[ "$(cut -d' ' -f3 "$T/marker1" 2>/dev/null)" = 0 ] && pass "spawn daemon: grandchild's NCCL calls succeed" \
  || fail "spawn daemon: grandchild marker: $(cat "$T/marker1" 2>/dev/null)"
# the grandchild writes the marker before it exits: wait until it is gone (its final flush)
gpid=$(cut -d' ' -f2 "$T/marker1" 2>/dev/null)
for _ in $(seq 1 1200); do [ -n "$gpid" ] && kill -0 "$gpid" 2>/dev/null || break; sleep 0.05; done
expect_traces daemon 2
fi
