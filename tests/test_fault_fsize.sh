#!/usr/bin/env bash
# test_fault_fsize.sh — the file-size limit (RLIMIT_FSIZE, `ulimit -f`): when the trace reaches
# the limit, the job must not die of SIGXFSZ; its stdout and exit code stay those of the run
# without the shim, and the trace is readable up to the limit (cut after whole chunks).
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "fault fsize"; need_decoder "fault fsize"; need_double "fault fsize"
fault_build || { fail "fault fsize: test programs build"; exit 0; }

ARGS="400 quiet threads=2,20000"
# The CPU double's shared-memory segment is itself over a few KiB (SIGXFSZ without the shim), so
# the job runs on tests/faults/mini_nccl.c here: one rank, no files.
export LD_LIBRARY_PATH=$FB/mini
# stdout goes through a pipe (not a file) so the limit applies only to files the job writes.
limited() { local kb=$1; shift; (ulimit -f "$kb"; exec env "$@" timeout -k 5 60 "$FJOB" $ARGS) 2>"$T/err" | cat; echo "rc ${PIPESTATUS[0]}"; }
base=$(limited 4 NCS_X=1)
case $base in *"rc 0") ;; *) fail "fault fsize: baseline job fails: $base"; exit 0 ;; esac
for kb in 1 4 16 64; do
  d=$T/tr-$kb
  out=$(limited "$kb" NCCLSCOPE_DIR="$d" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$SHIM")
  check_eq "fault fsize ${kb} KiB: job output and exit code unchanged (no SIGXFSZ)" "$base" "$out"
  n=0
  for f in $(traces "$d"); do
    n=$((n + 1))
    size=$(stat -c %s "$f")
    [ "$size" -le $((kb * 1024)) ] && pass "fault fsize ${kb} KiB: trace within the limit ($size bytes)" \
      || fail "fault fsize ${kb} KiB: trace is $size bytes, over the limit"
    if readable "$f"; then
      pass "fault fsize ${kb} KiB: trace readable ($(field chunks "$STATS") chunks, $(field calls "$STATS") calls, dropped $(field dropped "$STATS"), truncated $(field truncated "$STATS"))"
    else
      fail "fault fsize ${kb} KiB: trace unreadable: $STATS"
    fi
  done
  [ $n -gt 0 ] || skip "fault fsize ${kb} KiB: no trace file was created under the limit"
done
