#!/usr/bin/env bash
# test_callsite_threads.sh — call sites from threads that come and go (shim/unwmem.c: libunwind's
# per-thread trace cache, 256 KiB, is kept when a thread exits and handed, zeroed, to the next
# thread's first unwind). tests/jobs/site_job.c --step-threads runs each step on a new thread,
# joined before the next, and writes its truth (the source line of each NCCL call). Checked:
#   every step's calls are named by the function and line the job wrote, with its own counts
#   (steps x ranks a function), as from one thread;
#   with strace, at depth 24 (past the memo: every call unwinds with unw_backtrace): libunwind
#   maps a 256 KiB trace cache at most twice a process (the main thread's and the first step
#   thread's; later step threads get the kept one), where each of the job's threads that unwound
#   would otherwise map its own; at the default depth on x86-64 none at all (the memo learns a
#   stack through libunwind's cursor, which has no trace cache: shim/callsite.c).
source "$(dirname "$0")/lib.sh"
tsan_sites_skip "callsite_threads: every check (step threads unwind, then exit)" && exit 0
JOB=$BUILD/tests/site_job
for f in "$SHIM" "$NCS" "$JOB" "$DOUBLES/libnccl.so.2"; do [ -e "$f" ] || { skip "callsite_threads: $f not built"; exit 0; }; done
STEPS=4
NCCLSCOPE_DIR="$T/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps $STEPS --step-threads --truth "$T/truth" >"$T/job.out" 2>&1
check_eq "callsite_threads: site_job --step-threads runs (2 ranks, $STEPS steps, a thread each)" 0 "$?"
"$NCS" report --callsites --json "$T/tr" >"$T/rep.json" 2>"$T/rep.err"
check_eq "callsite_threads: report --callsites --json exits 0" 0 "$?"
has_lines=0
python3 -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null && has_lines=1
while read -r fn at; do
  line=${at##*:}
  got=$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["callsites"] if r["function"]==sys.argv[2]]; print(len(r), sum(x["calls"] for x in r), r[0]["line"] if r else "none")' "$T/rep.json" "$fn")
  if [ $has_lines = 1 ]; then
    check_eq "callsite_threads: $fn, one site, $((STEPS * 2)) calls (steps x ranks), at line $line (the job's truth)" "1 $((STEPS * 2)) $line" "$got"
  else
    check_eq "callsite_threads: $fn, one site, $((STEPS * 2)) calls (steps x ranks)" "1 $((STEPS * 2))" "${got% *}"
  fi
done <"$T/truth"

if ! command -v strace >/dev/null; then
  skip "callsite_threads: strace is not installed: libunwind's mappings not counted"
  exit 0
fi
NCCLSCOPE_CALLSITE_DEPTH=24 NCCLSCOPE_DIR="$T/tr2" san_noleak timeout 60 strace -f -qq -e trace=mmap -E LD_PRELOAD="$SHIM$SAN_PRELOAD" -o "$T/st" \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps $STEPS --step-threads >/dev/null 2>&1
check_eq "callsite_threads: site_job --step-threads runs under strace (depth 24)" 0 "$?"
n=$(grep -c 'mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS' "$T/st")
if [ "$n" = 0 ]; then
  skip "callsite_threads: this libunwind maps no 256 KiB trace cache (its version differs): nothing to count"
else
  check "callsite_threads: depth 24: libunwind mapped a trace cache at most twice a process ($n for 2 processes, $STEPS step threads each)" \
    test "$n" -ge 1 -a "$n" -le 4
fi
if [ "$(uname -m)" = x86_64 ]; then
  NCCLSCOPE_DIR="$T/tr4" san_noleak timeout 60 strace -f -qq -e trace=mmap -E LD_PRELOAD="$SHIM$SAN_PRELOAD" -o "$T/st4" \
    bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps $STEPS --step-threads >/dev/null 2>&1
  check_eq "callsite_threads: default depth (the memo): runs, no trace cache mapped" "0 0" \
    "$? $(grep -c 'mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS' "$T/st4")"
else
  skip "callsite_threads: not x86-64 (no memo): the default depth's trace caches not counted"
fi
# a job that loaded libunwind itself (here preloaded before the shim): the shim's dlopen hands
# back the job's object, whose mmap the shim leaves alone (shim/unwmem.c): no trace cache is
# mapped populated, and the step threads' calls are still named
UNW=$(ldconfig -p 2>/dev/null | sed -n 's/.*libunwind\.so\.8 (libc6,x86-64) => //p' | head -1)
if [ -z "$UNW" ]; then
  skip "callsite_threads: libunwind.so.8 not found by ldconfig: the job's-own-libunwind case not run"
elif [ "$NCS_SANITIZER" = asan ]; then
  # preloaded before the ASan runtime (which comes in as the shim's dependency), libunwind's start
  # calls through an interceptor the runtime has not set up: SEGV at pc 0 before the shim runs
  skip "callsite_threads: the job's-own-libunwind case under make asan (libunwind preloaded before the ASan runtime crashes at start)"
else
  NCCLSCOPE_DIR="$T/tr3" san_noleak timeout 60 strace -f -qq -e trace=mmap -E LD_PRELOAD="$UNW:$SHIM$SAN_PRELOAD" -o "$T/st3" \
    bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps $STEPS --step-threads >/dev/null 2>&1
  check_eq "callsite_threads: with the job's own libunwind loaded first: runs, no mapping populated by the shim for it" "0 0" \
    "$? $(grep -c 'mmap(NULL, [0-9]*, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE' "$T/st3")"
fi
