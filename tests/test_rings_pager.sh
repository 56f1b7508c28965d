#!/usr/bin/env bash
# test_rings_pager.sh — the pagers (shim/rings.c, docs/SHIM.md "The rings file"): the threads
# that make a new ring's pages present on /dev/shm during its first pass. Thread names and
# context-switch counts from /proc, exact counts from the trace; no timing:
#   - a process whose threads make few calls (10, under half a first window) never starts them;
#   - a process whose threads made 20,000 calls each has two, and while it is idle they sleep:
#     their context switches do not move over a second (they wake only while a growing ring's
#     owner records, or when the writer calls);
#   - a kill -9 then loses nothing: every returned call is in the trace (the job's own count);
#   - at 1 k calls/s a thread the pagers look at most every few ms, not every millisecond;
#   - where the pagers cannot start (a preload refuses the writer's thread creations after the
#     file thread's), the writer grows the rings as before: no pager, and a kill -9 after 2 x
#     20,000 calls finds every call in the trace and none dropped.
# Needs the rings file on /dev/shm (the pagers exist only there): SKIP otherwise.
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "rings_pager: $f not built"; exit 0; }; done
calls() { "$NCS" dump "$1" 2>/dev/null | awk '$1 == "CALL" && $0 ~ /op=AllReduce / {n++} END {print n + 0}'; }
# dropped FILE: calls counted as dropped (DROP records of reasons 1 2 4 7: format.h)
dropped() { "$NCS" dump "$1" 2>/dev/null | awk '$1 == "DROP" && $2 ~ /^reason=[1247]$/ {sub("records=", "", $3); n += $3} END {print n + 0}'; }

# start NAME CALLS [PRELOAD]: the job makes CALLS on each of 2 threads, says "done" and waits
# to be killed; sets pid and d; fails when it never said done
start() {
  d=$T/$1
  mkdir -p "$d"
  : >"$d/out"
  NCCLSCOPE_DIR=$d/tr NCCLSCOPE_GPU_TIMING=0 LD_PRELOAD="$SHIM$SAN_PRELOAD${3:+:$3}" "$JOB" -n "$2" -t 2 -p >"$d/out" 2>&1 &
  pid=$!
  local i
  for ((i = 0; i < 300; i++)); do grep -q '^done' "$d/out" && return 0; sleep 0.1; done
  return 1
}
# pagers: the tids of $pid's threads named ncclscope-pg
pagers() {
  local t
  for t in /proc/"$pid"/task/*; do [ "$(cat "$t/comm" 2>/dev/null)" = ncclscope-pg ] && basename "$t"; done
}
# switches TIDS...: each thread's voluntary + involuntary context switches, one line
switches() {
  local t
  for t in "$@"; do awk '/ctxt_switches/ {n += $2} END {printf "%d ", n}' /proc/"$pid"/task/"$t"/status; done
}
stop() { kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }

if start few 10; then
  sleep 0.5 # the writer has drained and tended the rings by now (or was slow: fewer threads yet)
  check_eq "rings_pager: a process whose threads made 10 calls each has no pager" 0 "$(pagers | wc -l)"
else
  fail "rings_pager: the 10-call job never finished its calls: $(head -3 "$d/out")"
fi
stop

if ! start busy 20000; then
  fail "rings_pager: the 20,000-call job never finished its calls: $(head -3 "$d/out")"
  stop
  exit 0
fi
f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
case "$(readlink "$f.rings" 2>/dev/null)" in
/dev/shm/*) ;;
*)
  skip "rings_pager: the rings file is not on /dev/shm here (no tmpfs with room to spare): no pagers"
  stop
  exit 0
  ;;
esac
# the writer starts them at its next pass once a ring has passed half its first window; the
# job said "done" after 20,000 calls a thread: wait for them (bounded), do not assume
for ((i = 0; i < 50; i++)); do [ "$(pagers | wc -l)" = 2 ] && break; sleep 0.1; done
tids=$(pagers)
check_eq "rings_pager: a process whose threads made 20,000 calls each has two pagers" 2 "$(wc -w <<<"$tids")"
if [ -n "$tids" ]; then
  # idle from here: the rings are still growing (20,000 of 131,072 records), and their owners
  # record nothing; the pagers may still finish a look begun before (one poll), then sleep
  sleep 0.5
  a=$(switches $tids)
  sleep 1
  b=$(switches $tids)
  check_eq "rings_pager: idle, the pagers do not wake (context switches over 1 s)" "$a" "$b"
fi
stop
check_eq "rings_pager: then kill -9: every returned call is in the trace" 40000 "$(calls "$f")"

# A job at 1 k calls/s a thread (2 threads, 6 s): its rings grow all along, but a window ahead of
# each owner is made long before the owner needs it, so the pagers find nothing to do at most
# looks and look less often (up to every 64 ms): over 1 s while the job records, each pager's
# context switches stay far below those of a look every millisecond (310-872 measured; 36-42
# with the back-off; counted, no timing)
d=$T/paced
mkdir -p "$d"
NCCLSCOPE_DIR=$d/tr NCCLSCOPE_GPU_TIMING=0 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 6000 -t 2 -r 1000 -p >"$d/out" 2>&1 &
pid=$!
for ((i = 0; i < 50; i++)); do [ "$(pagers | wc -l)" = 2 ] && break; sleep 0.1; done
tids=$(pagers)
if [ "$(wc -w <<<"$tids")" = 2 ]; then
  sleep 0.3
  a=$(switches $tids)
  sleep 1
  b=$(switches $tids)
  if grep -q '^done' "$d/out"; then
    skip "rings_pager: the 1 k calls/s job finished before the pagers were counted (a slow machine): nothing to say"
  else
    most=$(paste <(tr ' ' '\n' <<<"$b") <(tr ' ' '\n' <<<"$a") | awk 'NF == 2 {d = $1 - $2; if (d > m) m = d} END {print m + 0}')
    check "rings_pager: 1 k calls/s a thread: each pager woke at most 150 times in 1 s while the owners recorded (got $most)" test "$most" -le 150
  fi
else
  fail "rings_pager: the 1 k calls/s job has $(wc -w <<<"$tids") pagers, not 2"
fi
stop

# No pagers: a preload refuses every thread the writer asks for with a 64 KiB stack after its
# first (the file thread's; the pagers' are the next), and says so in $T/refused. Not under
# TSan: its runtime comes before this preload in LD_PRELOAD (SAN_PRELOAD), so its
# pthread_create is the one the shim calls, and the preload never sees it.
if [ "${NCS_SANITIZER:-}" = tsan ]; then
  skip "rings_pager: pagers refused: a preload cannot refuse the shim's threads under TSan (its runtime's pthread_create comes first)"
  exit 0
fi
cat >"$T/nopager.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
  static int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  static int small;
  if (!next) next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
  if (!next) next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
  char name[16] = "";
  size_t ss = 0;
  if (a && pthread_attr_getstacksize(a, &ss) == 0 && ss == 64 * 1024 && pthread_getname_np(pthread_self(), name, sizeof name) == 0 &&
      strcmp(name, "ncclscope-wr") == 0 && small++ > 0) {
    const char *f = getenv("NOPAGER_MARK");
    int fd = f ? open(f, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
    if (fd >= 0) { ssize_t w = write(fd, "refused\n", 8); (void)w; close(fd); }
    return EAGAIN;
  }
  return next(t, a, fn, arg);
}
C
if ! cc -O2 -shared -fPIC -o "$T/nopager.so" "$T/nopager.c" -ldl 2>"$T/nopager.err"; then
  fail "rings_pager: the no-pager preload does not build: $(head -3 "$T/nopager.err")"
  exit 0
fi
export NOPAGER_MARK=$T/refused
if start nopager 20000 "$T/nopager.so"; then
  f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
  # the writer asks for the pagers at its first pass after a ring passed 512 calls: wait for the
  # refusal (bounded), then look
  for ((i = 0; i < 50; i++)); do [ -s "$T/refused" ] && break; sleep 0.1; done
  check_eq "rings_pager: pagers refused (the preload refused the writer's thread)" refused "$(head -1 "$T/refused" 2>/dev/null)"
  check_eq "rings_pager: pagers refused: none runs" 0 "$(pagers | wc -l)"
  stop
  check_eq "rings_pager: pagers refused, then kill -9: every returned call is in the trace" 40000 "$(calls "$f")"
  check_eq "rings_pager: pagers refused: nothing dropped (the writer and the threads grow the rings)" 0 "$(dropped "$f")"
else
  fail "rings_pager: the job without pagers never finished its calls: $(head -3 "$d/out")"
  stop
fi
