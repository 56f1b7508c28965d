#!/usr/bin/env bash
# test_rings_move_exit.sh — giving a dead process's rings file back (shim/rings.c move_leftovers,
# 1 MiB a writer pass, begun 10 s after a process's first call) never leaves a copy beside the
# dead process's trace, whether the process copying ends or is killed -9 mid-copy: the copy is
# an unnamed file (O_TMPFILE) until it is whole; where the file system has none (here an
# LD_PRELOAD helper refuses O_TMPFILE) it is `<link>.<pid>.tmp`, deleted by a process that ends
# mid-copy; and such a named copy of a process that is gone (an older shim's, or a kill between
# naming a whole copy and renaming it) is deleted by the next process that gives the file back.
# Each process that stopped mid-copy leaves the file on /dev/shm, linked, for the next one.
# In a /dev/shm of the test's own (a private 8 GiB tmpfs in a new mount namespace: the shim
# uses one with 4 GiB free; another process's leftovers on the host's would be given back
# first); skipped where none can be had. A job is killed -9 after 3000 calls (its rings file
# stays, ~18 MiB); beside its trace, two named copies planted: one of a pid that is gone, one of
# this test's shell (alive). Then two processes record side by side (flush period 500 ms: a copy
# of ~36 passes): one without O_TMPFILE ends after 12 s (its named copy seen while it runs), the
# other is killed -9 once its unnamed copy is seen open in /proc.
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "rings_move_exit: $f not built"; exit 0; }; done
private_shm 8g 120
if [ -z "$IN" ]; then skip "rings_move_exit: no private /dev/shm here (a mount namespace is refused)"; exit 0; fi
cat >"$T/named.c" <<'C'
/* open() refusing O_TMPFILE, as a file system without it does */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
int open(const char *path, int flags, ...) {
  static int (*real)(const char *, int, ...);
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  if ((flags & O_TMPFILE) == O_TMPFILE) { errno = EOPNOTSUPP; return -1; }
  if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  return real(path, flags, mode);
}
C
if ! cc -O2 -shared -fPIC -o "$T/named.so" "$T/named.c" -ldl 2>"$T/named.err"; then
  fail "rings_move_exit: the O_TMPFILE-refusing helper does not build: $(head -3 "$T/named.err")"; exit 0
fi

d=$T/dead
mkdir -p "$d"
$IN env NCCLSCOPE_DIR="$d/tr" NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 3000 -p >"$d/out" 2>&1 &
jp=$!
for ((i = 0; i < 300; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
victim=$(pgrep -g 0 -f "^$JOB -n 3000 -p" | head -1)
kill -9 "${victim:-$jp}" 2>/dev/null
wait "$jp" 2>/dev/null
f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
to=$(readlink "$f.rings" 2>/dev/null)
case $to in
  /dev/shm/ncclscope-*.rings) pass "rings_move_exit: a killed process's rings file on /dev/shm, linked from its trace" ;;
  *) fail "rings_move_exit: no link to /dev/shm next to the killed process's trace: [$to]"; exit 0 ;;
esac
gone=$(sh -c 'echo $$')
echo stale >"$f.rings.$gone.tmp"
echo alive >"$f.rings.$$.tmp"

n=$T/next
mkdir -p "$n/a" "$n/b"
$IN env NCCLSCOPE_DIR="$n/a/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD:$T/named.so" "$JOB" -n 10 -i 11000 >"$n/a/out" 2>&1 &
pa=$!
$IN env NCCLSCOPE_DIR="$n/b/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 10 -i 60000 >"$n/b/out" 2>&1 &
pb=$!
sleep 0.5
jb=$(pgrep -g 0 -f "^$JOB -n 10 -i 60000" | head -1)
named=0 unnamed=0
while kill -0 "$pa" 2>/dev/null; do
  ls "$f".rings.[0-9]*.tmp 2>/dev/null | grep -qvE "\.($gone|$$)\.tmp$" && named=1
  # B's copy: an open file of one of its threads, in the dead one's trace directory, with no name
  if [ $unnamed = 0 ] && [ -n "$jb" ] && ls -l /proc/"$jb"/task/*/fd/ 2>/dev/null | grep -qF -- "-> $d/tr/#"; then
    unnamed=1
    kill -9 "$jb"
  fi
  sleep 0.1
done 2>/dev/null # (bash's note of B's kill)
wait "$pa"
check_eq "rings_move_exit: without O_TMPFILE, the next process ran (exit 0) and copied into a named file (seen)" "0 1" "$? $named"
check_eq "rings_move_exit: beside it, a process whose copy had no name (seen open) was killed -9 mid-copy" "1" "$unnamed"
kill -9 "$jb" 2>/dev/null
wait "$pb" 2>/dev/null
check_eq "rings_move_exit: no copy left next to the dead one's trace but the living pid's (the gone pid's deleted)" \
  "${f##*/}.rings.$$.tmp" "$(ls "$d/tr" | grep '\.tmp$')"
check_eq "rings_move_exit: the dead one's file still on /dev/shm, still linked (for the next process)" "$to yes" \
  "$(readlink "$f.rings") $($IN test -e "$to" && echo yes || echo no)"
check_eq "rings_move_exit: the dead one's trace still read whole (every returned call, through the link)" 3000 \
  "$($IN "$NCS" dump "$f" 2>/dev/null | awk '$1 == "CALL" && / op=AllReduce /{n++} END {print n + 0}')"
rm -f "$f.rings.$$.tmp"
[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
IN=
