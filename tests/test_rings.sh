#!/usr/bin/env bash
# test_rings.sh — the shim's buffering (docs/SHIM.md "Buffering"), exact counts, no timing:
#   - kill -9 after N calls had returned: the trace holds exactly N calls of that thread, read
#     back from the rings file (`<trace>.rings`) when the writer had not written them yet;
#     one thread with few calls (all still in its ring) and two threads with many (the
#     writer's chunk buffer and the rings both hold some). Each thread makes fewer calls than
#     its ring holds (131072 by default), so no call can be dropped whatever the scheduling;
#   - an idle thread's ring keeps at most 2 MiB resident, and a kill -9 then loses nothing;
#   - a clean exit leaves no rings file; the rings file is mode 0600;
#   - a paced run well under the measured capacity (BENCHMARKS.md), longer than a ring holds,
#     drops nothing;
#   - NCCLSCOPE_DISABLE=1 writes no file (not even the directory) and forwards every call (a
#     stub NCCL counts what reaches it).
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "rings: $f not built"; exit 0; }; done

# calls FILE OP: CALL records of op OP in FILE (ncclscope dump)
calls() { "$NCS" dump "$1" 2>/dev/null | awk -v op="$2" '$1 == "CALL" && $0 ~ ("op=" op " ") {n++} END {print n + 0}'; }
# dropped FILE: calls counted as dropped, the sum of the trace's DROP records of reasons 1, 2, 4
# and 7 (format.h: calls, not other records). Not dump's '== end: ... dropped N': that is the
# last written chunk's running total, which leaves out the DROP record the decoder recovers from
# a killed process's rings file (a ring capped at its limit while the writer was off the CPU,
# then kill -9: with the writer held off by an LD_PRELOAD helper, 566,421 calls in that record,
# 'dropped 0' on the end line).
dropped() { "$NCS" dump "$1" 2>/dev/null | awk '$1 == "DROP" && $2 ~ /^reason=[1247]$/ {sub("records=", "", $3); n += $3} END {print n + 0}'; }
# awk "$tcalls": the tcall of each CALL line of a dump, one a line. A field test, not sed's
# 's/.* tcall=\([0-9]*\) .*/\1/p': that regex costs GNU sed about 16 us a line (backtracking for
# the group), 16 CPU-s for the million lines of a killed fast loop's dump; awk takes 0.5 s.
tcalls='$1 == "CALL" { for (i = 2; i <= NF; i++) if ($i ~ /^tcall=[0-9]+$/) { print substr($i, 7); break } }'

# run_killed NAME CALLS THREADS: the job makes CALLS per thread, says "done", is killed -9
run_killed() {
  local name=$1 n=$2 t=$3 d=$T/$1
  mkdir -p "$d"
  NCCLSCOPE_DIR=$d/tr NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n "$n" -t "$t" -p >"$d/out" 2>&1 &
  local pid=$! i
  for ((i = 0; i < 600; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  grep -q '^done' "$d/out" || { fail "rings $name: the job never finished its calls: $(head -3 "$d/out")"; return; }
  local f
  f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
  [ -n "$f" ] || { fail "rings $name: no trace"; return; }
  [ -f "$f.rings" ] && pass "rings $name: the rings file outlived the kill" || fail "rings $name: no rings file next to $f"
  check_eq "rings $name: every returned call is in the trace" "$((n * t))" "$(calls "$f" AllReduce)"
  check_eq "rings $name: init calls too" "$t" "$(calls "$f" CommInitRank)"
  "$NCS" report "$f" >"$d/rep" 2>&1
  grep -q "recovered from $(basename "$f").rings" "$d/rep" && pass "rings $name: report says what it recovered" \
    || fail "rings $name: report does not mention the recovery: $(grep -i trunc "$d/rep" | head -2)"
}
run_killed one-thread 3000 1
run_killed two-threads 60000 2

# An idle ring keeps at most 2 MiB mapped (rings.c: its header page and 1/8 of the ring ahead
# of its head, once its owner has recorded nothing for 1 s and the writer has drained it), and a
# kill -9 after that still loses nothing: 2 threads x 200000 calls (more than a ring holds, so
# every page of both rings was touched), then idle; the largest resident size of a ring's
# mapping (/proc/PID/smaps, the rings file's mappings past its header) is polled for 30 s.
# The truth: the job's own count of returned calls.
ring_rss_kb() { # PID: the largest Rss (kB) of a ring mapping of the process's rings file
  awk '/^[0-9a-f]+-[0-9a-f]+ / {m = ($6 ~ /(\.ncs\.rings|\/ncclscope-[0-9]+-[0-9]+-[0-9a-f]+\.rings)$/ && $3 != "00000000")}
       m && $1 == "Rss:" && $2 > x {x = $2} END {print x + 0}' "/proc/$1/smaps" 2>/dev/null
}
# FILE: the largest number of KiB with blocks (memory on a tmpfs) of one ring of a rings file
# (SEEK_DATA / SEEK_HOLE over each ring's bytes; the header says where the rings are)
ring_blocks_kb() {
  python3 - "$1" <<'PY'
import os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
ring0, rbytes, _, nrings = struct.unpack_from("<4Q", os.pread(fd, 96, 0), 48)
worst = 0
for i in range(nrings):
    a, b, n = ring0 + i * rbytes, ring0 + (i + 1) * rbytes, 0
    while a < b:
        try: d = os.lseek(fd, a, os.SEEK_DATA)
        except OSError: break
        if d >= b: break
        h = min(os.lseek(fd, d, os.SEEK_HOLE), b)
        n += h - d; a = h
    worst = max(worst, n)
print(worst // 1024)
PY
}
# idle NAME CALLS: 2 threads make CALLS calls each, then idle: each ring gives its memory back
# ("rings idle mid-pass": 20,000 calls, a ring still on its first pass, growing: rings.c)
idle() {
local name=$1 n=$2 d=$T/${1// /-} rss blk f shm got dr
mkdir -p "$d"
NCCLSCOPE_DIR=$d/tr NCCLSCOPE_FLUSH_MS=200 NCCLSCOPE_GPU_TIMING=0 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n "$n" -t 2 -p >"$d/out" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
rss=-1
if grep -q '^done' "$d/out"; then
  for ((i = 0; i < 300; i++)); do rss=$(ring_rss_kb "$pid"); [ "$rss" -gt 0 ] && [ "$rss" -le 2048 ] && break; sleep 0.1; done
fi
# and the memory behind it: a ring's blocks in the file (on /dev/shm, memory) once trimmed
blk=-1
f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
if [ "$rss" -gt 0 ] && [ "$rss" -le 2048 ] && [ -n "$f" ]; then
  for ((i = 0; i < 50; i++)); do blk=$(ring_blocks_kb "$f.rings"); [ "$blk" -le 2048 ] && break; sleep 0.1; done
fi
shm=$(readlink "$f.rings" 2>/dev/null)
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if ! grep -q '^done' "$d/out"; then
  fail "rings $name: the job never finished its calls: $(head -3 "$d/out")"
else
  [ "$rss" -gt 0 ] && [ "$rss" -le 2048 ] && pass "rings $name: an idle thread's ring keeps $rss KiB resident (<= 2048)" \
    || fail "rings $name: an idle thread's ring still holds $rss KiB resident after 30 s (> 2048)"
  [ "$blk" -ge 0 ] && [ "$blk" -le 2048 ] && pass "rings $name: an idle ring keeps $blk KiB of blocks in the rings file${shm:+ (on ${shm%/*})} (<= 2048)" \
    || fail "rings $name: an idle ring still holds $blk KiB of blocks in the rings file (> 2048)"
  # a tight loop on a loaded machine may fill a ring while the writer is off the CPU: those
  # calls are counted as dropped (DROP records), not lost
  got=$(calls "$f" AllReduce) dr=$(dropped "$f")
  check_eq "rings $name, then kill -9: every returned call is in the trace or counted as dropped ($got + $dr)" \
    "$((2 * n))" "$((got + dr))"
  check_eq "rings $name, then kill -9: init calls too" 2 "$(calls "$f" CommInitRank)"
fi
}
idle idle 200000
idle "idle mid-pass" 20000

# a clean exit: complete trace, no rings file left
d=$T/clean
NCCLSCOPE_DIR=$d LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 20000 >/dev/null 2>&1
f=$(ls "$d"/*.ncs 2>/dev/null | head -1)
check_eq "rings clean exit: all calls" 20000 "$(calls "$f" AllReduce)"
left=$(ls "$d" | grep -c '\.rings$')
check_eq "rings clean exit: no rings file left" 0 "$left"

# paced well under capacity: 100 k calls/s per thread (a fifth of 0.5 M calls/s per thread,
# where 4 threads dropped nothing in the median at load 15-30, docs/BENCHMARKS-HISTORY.md "Shim
# throughput"), 2 threads for 1.5 s. Each thread makes more calls (150000) than its ring
# holds (131072 records, NCCLSCOPE_BUFFER_KB=16384), so the writer must drain while the job runs; its ring holds 1.3 s of calls at this rate, so a
# drop would need the writer kept off the CPU for over a second (a loaded 2-core machine keeps
# it off for milliseconds). Counts only, no timing: a thread that falls behind its pace calls
# faster to catch up, which this margin covers too.
# (host timing: GPU timing on the CUDA double adds its own event-pool limit, counted apart)
d=$T/paced
NCCLSCOPE_BUFFER_KB=16384 NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_DIR=$d LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 150000 -t 2 -r 100000 >/dev/null 2>&1
f=$(ls "$d"/*.ncs 2>/dev/null | head -1)
check_eq "rings paced 100k/s x 2 threads, more calls than a ring holds: calls" 300000 "$(calls "$f" AllReduce)"
check_eq "rings paced 100k/s x 2 threads, more calls than a ring holds: nothing dropped" 0 "$(dropped "$f")"

# The writer kept off the CPU (a preload that puts the shim's writer thread, "ncclscope-wr",
# to sleep for 0.8 s once it has made the trace file, as a loaded machine can): 2 threads x
# 60,000 calls, fewer than a ring holds, more than its first quarter (32,768, where a new ring
# on /dev/shm stopped, dropping, until the writer reserved the rest: 54,468 dropped before):
# each thread makes its own ring's pages present as it goes (shim/rings.c ncs_rings_grow), so
# nothing is dropped whatever the scheduling. Counts only: the job may be slower or faster
# than the sleep, the answer is the same.
cat >"$T/starve.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
/* the writer's first pthread_cond_broadcast (the file is there) arms it; the next unlock (the
 * lock the job's activation waits on is released) sleeps 0.8 s on the writer thread */
static __thread int armed, slept;
int pthread_cond_broadcast(pthread_cond_t *c) {
  static int (*next)(pthread_cond_t *);
  if (!next) next = (int (*)(pthread_cond_t *))dlvsym(RTLD_NEXT, "pthread_cond_broadcast", "GLIBC_2.3.2");
  char name[16] = "";
  if (!slept && pthread_getname_np(pthread_self(), name, sizeof name) == 0 && strcmp(name, "ncclscope-wr") == 0) armed = 1;
  return next(c);
}
int pthread_mutex_unlock(pthread_mutex_t *m) {
  static int (*next)(pthread_mutex_t *);
  if (!next) next = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
  int rc = next(m);
  if (armed && !slept) {
    slept = 1;
    struct timespec ts = {0, 800 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return rc;
}
C
if cc -O2 -shared -fPIC -o "$T/starve.so" "$T/starve.c" -ldl 2>"$T/starve.err"; then
  d=$T/starved
  NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_DIR=$d LD_PRELOAD="$SHIM$SAN_PRELOAD:$T/starve.so" "$JOB" -n 60000 -t 2 >"$d.out" 2>&1
  f=$(ls "$d"/*.ncs 2>/dev/null | head -1)
  check_eq "rings writer kept off the CPU 0.8 s, 2 x 60,000 calls: every call in the trace" 120000 "$(calls "$f" AllReduce)"
  check_eq "rings writer kept off the CPU 0.8 s: nothing dropped (each thread grows its own ring)" 0 "$(dropped "$f")"
else
  fail "rings writer kept off the CPU: the preload does not build: $(head -3 "$T/starve.err")"
fi

# NCCLSCOPE_DISABLE=1 against a stub NCCL that counts the calls reaching it
cat >"$T/stub.c" <<'C'
#include <stdio.h>
#include "ncclscope/nccl_abi.h"
struct ncclComm { int x; };
static struct ncclComm the_comm;
static long n_calls;
__attribute__((destructor)) static void report(void) { fprintf(stderr, "stub calls=%ld\n", n_calls); }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { n_calls++; id->internal[0] = 1; return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) { n_calls++; *c = &the_comm; return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { n_calls++; return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { n_calls++; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { return "stub"; }
C
mkdir -p "$T/stub"
if cc -O2 -shared -fPIC -I"$ROOT/include" -o "$T/stub/libnccl.so.2" "$T/stub.c" 2>"$T/stub.err"; then
  d=$T/disabled
  out=$(cd "$T" && NCCLSCOPE_DISABLE=1 NCCLSCOPE_DIR=$d LD_LIBRARY_PATH=$T/stub LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 10000 2>&1)
  check_eq "rings DISABLE=1: every call forwarded (stub count)" "stub calls=10003" "$(grep -o 'stub calls=[0-9]*' <<<"$out")"
  [ ! -e "$d" ] && [ ! -e "$T/ncclscope-trace" ] && pass "rings DISABLE=1: no file, no directory" \
    || fail "rings DISABLE=1: something was created: $(ls -R "$d" "$T/ncclscope-trace" 2>&1 | head -3)"
  out=$(cd "$T" && NCCLSCOPE_DIR=$T/enabled LD_LIBRARY_PATH=$T/stub LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 10000 2>&1)
  check_eq "rings stub, tracing on: every call forwarded" "stub calls=10003" "$(grep -o 'stub calls=[0-9]*' <<<"$out")"
  f=$(ls "$T"/enabled/*.ncs 2>/dev/null | head -1)
  check_eq "rings stub, tracing on: every call recorded" 10000 "$(calls "$f" AllReduce)"

  # a tight loop on the stub: chunks over 1 MiB of rows where it makes more than about 52 k calls
  # a second (over 1 MiB of CALL rows per one-second flush period; the stub returns at once, so
  # it makes millions, unless the machine is very loaded), in which the writer puts its runs of
  # like calls in CALL_RUN records (docs/FORMAT.md, 5.0): such a chunk's header counts fewer
  # records than it has calls (no profiler or kernel records here). Every call reads back,
  # numbered without a gap, at any rate.
  d=$T/runs
  LD_LIBRARY_PATH=$T/stub NCCLSCOPE_FLUSH_MS=1000 NCCLSCOPE_PROFILER=0 NCCLSCOPE_KERNELS=0 NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 \
    NCCLSCOPE_DIR=$d LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 300000 >/dev/null 2>&1
  f=$(ls "$d"/*.ncs 2>/dev/null | head -1)
  # A writer kept off the CPU (a loaded machine: CI had 20,210 such drops with six builds
  # beside it) lets the ring fill: those calls are counted as dropped (buffer full), not in the
  # trace. Every call is in the trace or in that count; the tcalls recorded are distinct and
  # none past the job's 300,002 calls (id and init calls too).
  full=$("$NCS" report --json "$d" 2>/dev/null | jq -r '[.ranks[].drops.buffer_full // 0] | add // 0')
  nar=$(calls "$f" AllReduce)
  [ "$nar" -le 300000 ] && [ "$nar" -ge $((300000 - full)) ] \
    && pass "rings tight loop, 300000 calls: every call in CALL and CALL_RUN records or counted as dropped ($nar recorded, $full dropped, buffer full)" \
    || fail "rings tight loop, 300000 calls: $nar AllReduce recorded, $full dropped (buffer full)"
  read -r nt mt < <("$NCS" dump "$f" 2>/dev/null | awk "$tcalls" | sort -n | uniq | awk '{n++; m = $1} END {print n + 0, m + 0}')
  [ $((nt + full)) -eq 300002 ] && [ "$mt" -le 300002 ] \
    && pass "rings tight loop: the calling thread's tcalls: $nt distinct of 1..300002 plus $full dropped (buffer full) = the job's 300,002 calls" \
    || fail "rings tight loop: $nt distinct tcalls up to $mt, $full dropped (buffer full): want 300,002 in all, none past it"
  if command -v python3 >/dev/null; then
    # "big records": chunks over 1 MiB raw and their header records; "all": every chunk's records
    read -r big recs all < <(python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read(); o=struct.unpack_from("<I",d,12)[0]; b=r=a=0
while o+40<=len(d):
    p,raw,k=struct.unpack_from("<III",d,o+4); a+=k; o+=40+p
    if raw>(1<<20): b+=1; r+=k
print(b,r,a)' "$f")
    if [ "${big:-0}" = 0 ]; then
      skip "rings tight loop: no chunk over 1 MiB of rows (the calls came too slowly): CALL_RUN not exercised"
    else
      [ "$all" -lt 300000 ] && pass "rings tight loop: CALL_RUN records written ($big chunks over 1 MiB, $all records in all the chunk headers for 300000 calls)" \
        || fail "rings tight loop: $big chunks over 1 MiB but no CALL_RUN records ($all records in the chunk headers)"
    fi
  else
    skip "rings tight loop: python3 needed to count the chunk headers' records"
  fi
  # kill -9 in the middle of a fast loop (1 M calls/s, more than a ring holds by the second
  # kill), the chunk buffer and the ring both holding calls not yet written. Killed at 2 moments;
  # the truth is the job's own count of returned calls (-c: a shared mapping that survives the
  # kill). The trace holds them all, or counts as dropped those it could not take, numbered
  # without a repeat: the call in flight at the kill may be there too.
  for k in 1 2; do
    d=$T/tightkill$k
    mkdir -p "$d"
    LD_LIBRARY_PATH=$T/stub NCCLSCOPE_PROFILER=0 NCCLSCOPE_KERNELS=0 NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 \
      NCCLSCOPE_DIR=$d/tr LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 50000000 -r 1000000 -c "$d/count" >/dev/null 2>&1 &
    pid=$!
    for ((i = 0; i < 200; i++)); do [ "$(od -An -tu8 -N8 "$d/count" 2>/dev/null | tr -d ' ')" -gt 0 ] 2>/dev/null && break; sleep 0.05; done
    sleep "0.$((k + 1))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    n=$(od -An -tu8 -N8 "$d/count" 2>/dev/null | tr -d ' ')
    f=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
    if [ -z "$f" ] || [ -z "$n" ]; then fail "rings fast loop killed ($k): no trace or no count"; continue; fi
    read -r got distinct first last < <("$NCS" dump "$f" 2>/dev/null | awk '$1 == "CALL" && / op=AllReduce /' |
      awk "$tcalls" | sort -n | awk 'NR == 1 {f = $1} {n++; if ($1 != p) u++; p = $1} END {print n + 0, u + 0, f + 0, p + 0}')
    dr=$(dropped "$f")
    dr=${dr:-0}
    [ $((got + dr)) -ge "$n" ] && [ $((got + dr)) -le $((n + 1)) ] &&
      pass "rings fast loop killed ($k): the $n returned calls are in the trace ($got, $dr counted as dropped)" ||
      fail "rings fast loop killed ($k): $n calls returned, $got in the trace, $dr counted as dropped"
    # the tcalls missing between the first and the last in the trace are at most the dropped
    # ones (dropped calls may also be the last ones made before the kill)
    gap=$((last - 2 - got))
    check_eq "rings fast loop killed ($k): tcalls from 3, no repeat, a gap only for a dropped call (to $last, $gap missing, $dr dropped)" \
      "$got 3 1" "$distinct $first $([ "$gap" -ge 0 ] && [ "$gap" -le "$dr" ] && echo 1 || echo 0)"
  done
else
  fail "rings: stub NCCL builds: $(head -3 "$T/stub.err")"
fi
