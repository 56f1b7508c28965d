#!/usr/bin/env bash
# test_fio_link.sh — how the file thread names a new trace file (shim/fileio.c link_fd): the
# header goes into an unnamed file (O_TMPFILE), which then gets its name with
# linkat(fd, "", AT_EMPTY_PATH); where the kernel refuses that (older kernels answer ENOENT to
# a caller without CAP_DAC_READ_SEARCH), through /proc/thread-self/fd/N. The direct way comes
# first because a lookup under /proc/PID/task/TID/fd costs the parent that reaps the process
# milliseconds of CPU (docs/SHIM.md "Files and write errors"); this test counts system calls, not time.
#   1. fault_job under strace -f: the trace file is named by one linkat with AT_EMPTY_PATH that
#      succeeds, and no path under /proc/thread-self is looked up; the trace is complete.
#   2. the same with tests/faults/libfault.so refusing every AT_EMPTY_PATH linkat of the shim
#      with ENOENT (an older kernel): the name comes from linkat of /proc/thread-self/fd/N, the
#      trace is never created by name (O_CREAT|O_EXCL: the header-less moment that O_TMPFILE
#      avoids), the job's output is unchanged and the trace complete.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "fio link"; need_decoder "fio link"; need_double "fio link"
command -v strace >/dev/null || { skip "fio link: strace not installed"; exit 0; }
fault_build || { fail "fio link: test programs build"; exit 0; }

JOBARGS="5"
run_job "$T/base" -- "$FJOB" $JOBARGS
[ "$(cat "$T/base.rc")" = 0 ] || { fail "fio link: baseline job fails: $(head -3 "$T/base.out")"; exit 0; }

# one_run NAME PRELOAD ENV...: fault_job under strace -f (file calls), its trace in $T/NAME
one_run() {
  local name=$1 pre=$2
  shift 2
  run_job "$T/$name" NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$pre" "$@" -- \
    strace -f -qq -e trace=linkat,open,openat -o "$T/$name.st" "$FJOB" $JOBARGS
  if [ "$(cat "$T/$name.rc")" != 0 ] || ! cmp -s "$T/base.out" "$T/$name.out"; then
    fail "fio link $name: job changed (exit $(cat "$T/$name.rc")): $(head -c 200 "$T/$name.err")"
    return 1
  fi
  local f
  f=$(traces "$T/$name")
  if [ "$(wc -l <<<"$f")" != 1 ] || [ -z "$f" ]; then fail "fio link $name: one trace expected, found [$f]"; return 1; fi
  if readable "$f" && [ "$(field final "$STATS")" = 1 ]; then pass "fio link $name: trace complete"
  else fail "fio link $name: trace not complete: $STATS"; fi
  TRACE=$f
}

if one_run direct "$SHIM"; then
  n=$(grep -c "linkat([0-9]*, \"\", AT_FDCWD, \"$TRACE\", AT_EMPTY_PATH) = 0" "$T/direct.st")
  check_eq "fio link direct: named by linkat AT_EMPTY_PATH" 1 "$n"
  n=$(grep -c 'thread-self' "$T/direct.st")
  check_eq "fio link direct: nothing looked up under /proc/thread-self" 0 "$n"
fi

if one_run refused "$FAULTLIB $SHIM" NCS_FAULT_FN=linkat_empty NCS_FAULT_N=1 NCS_FAULT_PERSIST=1 NCS_FAULT_ERRNO=2; then
  n=$(grep -c "linkat(AT_FDCWD, \"/proc/thread-self/fd/[0-9]*\", AT_FDCWD, \"$TRACE\", AT_SYMLINK_FOLLOW) = 0" "$T/refused.st")
  check_eq "fio link refused: named through /proc/thread-self" 1 "$n"
  n=$(grep -c "open.*\"$TRACE\".*O_CREAT" "$T/refused.st")
  check_eq "fio link refused: never created by name" 0 "$n"
fi
