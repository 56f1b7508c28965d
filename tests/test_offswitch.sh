#!/usr/bin/env bash
# test_offswitch.sh — NCCLSCOPE_DISABLE=1 (the off switch) and a job that never calls NCCL,
# attacked the ways a real job could break a forward-only wrapper (the audit of session 5;
# docs/RELIABILITY.md "Hostile jobs"). tests/faults/offswitch_job.c calls every NCCL entry point
# against a stub NCCL (tests/faults/offswitch_stub.c) whose every answer says which function
# ran: a return code and an errno of its own (or errno left as the job set it). Checks:
#   - under DISABLE the job's whole output equals a run without the shim: every answer exact,
#     every call reached NCCL exactly once ("forwarded N of N"), the same threads and open
#     descriptors at the end (the shim started nothing, opened nothing); no file, no directory;
#   - modes: the list of entry points; 8 threads racing the process's first calls (the shim's
#     activation); a fork right after the first call, the child ending with exit and _exit;
#     NCCL linked, and NCCL dlopen'ed RTLD_LOCAL only after start (ctypes: every entry point
#     found with dlsym on the handle);
#   - with tracing on: the same answers (the shim's own calls and thread aside), traces readable;
#   - under DISABLE, and in a job that never calls NCCL, the shim itself makes no I/O call and no
#     allocation (counted by the fault library, tests/faults/libfault.c; tracing on, not 0);
#   - a job that never calls NCCL: no file, no thread, no descriptor, with tracing on or off;
#   - the CPU doubles' rank-per-thread job (threads_job --all) and dl_job under DISABLE: the
#     job's output unchanged, no file;
#   - NCS_OFFSWITCH_RUNS (default 40) fresh processes under DISABLE: the 8-thread race and the
#     fork right after the first call, both builds, each compared with its run without the shim.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "offswitch"; need_decoder "offswitch"
fault_build || { fail "offswitch: test programs build"; exit 0; }
OJ=$FB/offswitch_job OD=$FB/offswitch_dl
# the dlopen build finds the stub by name, as ctypes.CDLL("libnccl.so.2") would
export LD_LIBRARY_PATH=$FB/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# run DIR ENV... -- CMD...: CMD in DIR (made fresh) with ENV; DIR/out, DIR/err, DIR/rc
run() {
  local d=$1; shift
  rm -rf "$d"; mkdir -p "$d"
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  (cd "$d" && timeout -k 5 60 env "${envs[@]}" "$@" >out 2>err; echo $? >rc) # the preloads reach the job only
}
# created DIR: what the shim left in the run directory DIR (its trace directory is DIR/tr)
created() { (cd "$1" && ls -A | grep -vx -e out -e err -e rc); }

# offswitch NAME CMD...: plain and DISABLE runs of CMD identical, nothing created
offswitch() {
  local name=$1; shift
  run "$T/p" X=1 -- "$@"
  run "$T/d" NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/d/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" -- "$@"
  if [ "$(cat "$T/p/rc")" = 0 ] && [ "$(cat "$T/d/rc")" = 0 ] && cmp -s "$T/p/out" "$T/d/out"; then
    pass "offswitch $name: DISABLE=1 answers, forwards and leaves threads and descriptors as without the shim ($(grep -h forwarded "$T/d/out" | tr '\n' ' '))"
  else
    fail "offswitch $name: exit $(cat "$T/p/rc") vs $(cat "$T/d/rc"): $(diff "$T/p/out" "$T/d/out" | head -6 | tr '\n' ' ') $(head -c 300 "$T/d/err")"
  fi
  check_eq "offswitch $name: DISABLE=1 created nothing" "" "$(created "$T/d")"
}

# traced NAME CMD...: with tracing on, the job's answers are the same (the shim's own
# GetVersion, its writer thread and its descriptors aside) and every trace is readable
traced() {
  local name=$1; shift
  run "$T/p" X=1 -- "$@"
  run "$T/e" NCCLSCOPE_DIR="$T/e/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" -- "$@"
  local filt='/^threads \|forwarded /d'
  if [ "$(cat "$T/e/rc")" = 0 ] && [ "$(sed "$filt" "$T/p/out")" = "$(sed "$filt" "$T/e/out")" ]; then
    pass "offswitch $name, tracing on: the same answers"
  else
    fail "offswitch $name, tracing on: exit $(cat "$T/e/rc"): $(diff <(sed "$filt" "$T/p/out") <(sed "$filt" "$T/e/out") | head -6 | tr '\n' ' ') $(head -c 300 "$T/e/err")"
  fi
  local f n=0 bad=0
  for f in $(traces "$T/e/tr"); do n=$((n + 1)); readable "$f" || { bad=$((bad + 1)); echo "    $STATS"; }; done
  [ "$n" -gt 0 ] && [ "$bad" = 0 ] && pass "offswitch $name, tracing on: $n trace(s), all readable" \
    || fail "offswitch $name, tracing on: $n trace(s), $bad unreadable"
}

for b in linked dlopen; do
  J=$OJ; [ $b = dlopen ] && J=$OD
  offswitch "$b: every entry point x 3" "$J" calls 3
  offswitch "$b: 8 threads race the first calls" "$J" race 8 2
  offswitch "$b: fork right after the first call, child exit" "$J" fork 2 exit
  offswitch "$b: fork right after the first call, child _exit" "$J" fork 2 _exit
  offswitch "$b: never calls NCCL" "$J" none
  traced "$b: every entry point x 3" "$J" calls 3
  f=$(traces "$T/e/tr" | head -1)
  check_eq "offswitch $b, tracing on: the calls went through the shim's wrappers (3 AllReduce recorded)" 3 \
    "$("$NCS" dump "$f" 2>/dev/null | grep -c '^CALL .*op=AllReduce ')"
  traced "$b: 8 threads race the first calls" "$J" race 8 2
  traced "$b: fork right after the first call, child _exit" "$J" fork 2 _exit
done

# the shim's own I/O and allocation calls under DISABLE, counted by the fault library (calls whose
# return address lies in the shim): none at all; tracing on, the same count sees the shim's calls
shimcalls() { # shimcalls CLASS ENV... -- CMD...: eligible calls the fault library counted
  local cls=$1; shift
  rm -f "$T/fstats"
  run "$T/f" NCS_FAULT_FN="$cls" NCS_FAULT_N=0 NCS_FAULT_STATS="$T/fstats" LD_PRELOAD="$FAULTLIB $SHIM" "$@"
  [ -f "$T/fstats" ] && od -An -t u8 -N 8 "$T/fstats" | tr -d ' ' || echo none
}
classes="io alloc"; [ -n "$FAULT_SAN" ] && classes=io  # a sanitizer owns malloc: I/O only
for cls in $classes; do
  for b in linked dlopen; do
    J=$OJ; [ $b = dlopen ] && J=$OD
    on=$(shimcalls $cls NCCLSCOPE_DIR="$T/f/tr" -- "$J" fork 2 exit)
    off=$(shimcalls $cls NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/f/tr" -- "$J" fork 2 exit)
    off2=$(shimcalls $cls NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/f/tr" -- "$J" race 8 2)
    inert=$(shimcalls $cls NCCLSCOPE_DIR="$T/f/tr" -- "$J" none)
    if [ "$off $off2 $inert" = "0 0 0" ] && [ "$on" != none ] && [ "$on" -gt 0 ]; then
      pass "offswitch $b: the shim made no $cls call of its own under DISABLE=1 (fork, race) nor, tracing on, in a job that never calls NCCL (tracing on, fork: $on)"
    else
      fail "offswitch $b: the shim's own $cls calls: DISABLE fork $off, race $off2, no NCCL call $inert (want 0 0 0); tracing on $on (want > 0)"
    fi
  done
done

# a job that never calls NCCL, tracing on: inert (no file, no thread, no descriptor)
for b in linked dlopen; do
  J=$OJ; [ $b = dlopen ] && J=$OD
  run "$T/p" X=1 -- "$J" none
  run "$T/e" NCCLSCOPE_DIR="$T/e/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" -- "$J" none
  cmp -s "$T/p/out" "$T/e/out" && pass "offswitch $b: a job that never calls NCCL, tracing on: same threads and descriptors ($(sed -n 2p "$T/e/out"))" \
    || fail "offswitch $b: a job that never calls NCCL, tracing on: $(diff "$T/p/out" "$T/e/out" | tr '\n' ' ')"
  check_eq "offswitch $b: a job that never calls NCCL, tracing on: nothing created" "" "$(created "$T/e")"
done

# the CPU doubles under DISABLE: a rank per thread, and NCCL reached only through dlopen + dlsym
if [ -x "$BUILD/tests/threads_job" ] && [ -x "$BUILD/tests/dl_job" ] && [ -f "$DOUBLES/libnccl.so.2" ]; then
  (unset LD_LIBRARY_PATH; offswitch "doubles: threads_job --all (4 threads, a rank each)" "$BUILD/tests/threads_job" -t 4 -n 20 --all)
  (unset LD_LIBRARY_PATH; offswitch "doubles: dl_job (NCCL dlopen'ed RTLD_LOCAL, dlsym)" "$BUILD/tests/dl_job" -n 20 "$DOUBLES/libnccl.so.2")
else
  fail "offswitch: threads_job, dl_job or the NCCL double not built"
fi

# many runs, each a fresh process: 8 threads racing its first NCCL calls, or a fork right after
# the first call (the child ends with _exit or exit), NCCL linked or dlopen'ed; each run's output
# must equal the run without the shim of the same variant
RUNS=${NCS_OFFSWITCH_RUNS:-40}
variants=("$OJ race 8 1" "$OD race 8 1" "$OJ fork 1 _exit" "$OD fork 1 exit")
for v in 0 1 2 3; do run "$T/ref$v" X=1 -- ${variants[$v]}; done
bad=0
for i in $(seq 1 "$RUNS"); do
  v=$((i % 4))
  run "$T/d" NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR="$T/d/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" -- ${variants[$v]}
  if [ "$(cat "$T/d/rc")" != 0 ] || ! cmp -s "$T/ref$v/out" "$T/d/out" || [ -n "$(created "$T/d")" ]; then
    bad=$((bad + 1)); echo "    run $i (${variants[$v]##*/}): exit $(cat "$T/d/rc"): $(diff "$T/ref$v/out" "$T/d/out" | tr '\n' ' ') $(head -c 200 "$T/d/err") $(created "$T/d")"
  fi
done
check_eq "offswitch: $RUNS runs under DISABLE=1 (8 threads racing the first calls; fork right after it; linked and dlopen'ed): output as without the shim, nothing created" 0 "$bad"
