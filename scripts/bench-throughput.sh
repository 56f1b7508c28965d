#!/usr/bin/env bash
# bench-throughput.sh [BUILD] — the shim's rows of issue 14, side by side in one run
# (docs/BENCHMARKS-HISTORY.md "Shim throughput"): plain (no shim) vs `floor` (the least any
# recorder can cost: a wrapper built here that reads CLOCK_MONOTONIC before and after the real
# call and stores 32 bytes into a thread-local ring, nothing else) vs `after` (BUILD's shim) vs
# `before` (a shim built from git revision $BENCH_BEFORE_REV, when set) vs `sites` (after with
# 8-frame call sites, NCCLSCOPE_CALLSITE_DEPTH=8, the default) vs `off` (after,
# NCCLSCOPE_DISABLE=1). floor and sites run in the tight and paced rows only.
#
# Workload: tests/jobs/rate_job.c on a stub libnccl whose calls return at once (built here; it
# replaces the NCCL double through LD_LIBRARY_PATH), host timing (NCCLSCOPE_GPU_TIMING=0:
# there is no GPU), call sites off (NCCLSCOPE_CALLSITE_DEPTH=0) unless said. Variants are
# interleaved round by round; every figure is min / median / max over the rounds, and every
# per-call figure has the run's drop rate beside it.
# Rows:
#   tight-1     1 thread, BENCH_TIGHT calls as fast as possible: wall ns/call, process CPU
#               ns/call (writer included), the calling thread's own CPU ns/call (the hot path)
#               and the part of it spent in the kernel (page faults, pages made present: the
#               rusage system time, tick-sampled on some kernels), drops, and the page faults the
#               calling threads took in their call loops
#   tight-4     4 threads, BENCH_TIGHT/4 calls each, the same
#   first-4     4 threads, 131,072 calls each (one pass over a default ring), the same: a
#               ring's first pass alone (each page's first write), against tight-4's mix of
#               first pass and steady state (not in the default rows)
#   paced-1     1 thread at 1 M calls/s for BENCH_PACED_S seconds: drops, achieved rate
#   paced-4     4 threads at 1 M calls/s each, the same
#   onset-1/4   1 and 4 threads, 1 s at 0.5, 1, 2, 4 M calls/s per thread: drops at each rate
#   writer      the writer thread's CPU per recorded call, its compression helper's included
#               (tight and paced runs)
#   levels      zstd levels on the tight loop's row chunks (before's and after's rows): CPU and bytes per call
#   idle        process CPU per second while the traced process sits idle: its first 5 s (with the
#               shim's one-off work on going idle: the rings' pages given back) and the 10 s after
#               (the steady state: heartbeats alone). 10 s after its first call a traced process
#               gives dead processes' rings files on /dev/shm back (shim/rings.c, 1 MiB a writer
#               pass): inside the steady window, ~1 ms/s more for an 18 MiB file of another's
#               killed job. So where a mount namespace can be had (root), the idle runs get a
#               /dev/shm of their own (an empty 8 GiB tmpfs); else the row says how many of its
#               runs began with such a file on the host's
#   fixed       process CPU of a whole traced run of 10 calls, minus the plain run's (each run
#               writes into its own directory, removed only at the end: deleting a file and
#               creating the next one at once makes ext4's inode allocator skip the recently
#               deleted inodes, a cost of the benchmark's churn, not of the shim)
#   instr       instructions per call of the calling thread, load-independent (valgrind's
#               callgrind, 1 thread, the wrapper's inclusive count: the real call included):
#               (count at BENCH_INSTR_CALLS calls - count at a quarter of them) / the calls
#               between, one run each of floor, before and after, the shims with call sites off
#               and at 8 frames (skipped without valgrind)
#   ddp-bytes   trace bytes per call in steady state, DDP-shaped job (tests/jobs/ddp_job.c, 2
#               ranks on the doubles), host and GPU timing: (size at 300 steps - size at 100
#               steps) / (calls at 300 - calls at 100)
# The calling threads make their calls 8 function frames below their own function (rate_job -s
# 8, no cost per call): with call sites on, the 8 frames unwound are the job's.
# Each row also gives the 1-minute load average seen at the end of its runs (min..max): on a
# shared machine the figures are indications of that load.
# Env: BENCH_ROUNDS (3), BENCH_TIGHT (2000000), BENCH_PACED_S (10), BENCH_INSTR_CALLS (40000), BENCH_BEFORE_REV (unset),
# BENCH_DDP (1; 0 skips the ddp-bytes row), BENCH_RING_KB (unset; else a `ring` variant: after
# with NCCLSCOPE_BUFFER_KB set to it, rows tight/paced/onset only), BENCH_ROWS (all: a subset of "tight1 tight4 paced1
# paced4 idle onset levels fixed instr ddp", plus first4, run only when named), BENCH_HOG (0: N busy loops run beside every measured run, a
# load that does not depend on who else is on the machine; they are stopped at the end).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so JOB=$BUILD/tests/rate_job DDP=$BUILD/tests/ddp_job
STATS=$BUILD/faults/trace_stats
ROUNDS=${BENCH_ROUNDS:-3}
TIGHT=${BENCH_TIGHT:-2000000}
PACED_S=${BENCH_PACED_S:-10}
for f in "$SHIM" "$JOB" "$DDP" "$BUILD/libncsdecoder.a"; do
  [ -e "$f" ] || { echo "bench-throughput: $f missing (run make first)" >&2; exit 2; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-thr.XXXXXX")
HOGS=()
stop_hogs() { local p; for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; done; HOGS=(); }
trap 'stop_hogs; rm -rf "$W"' EXIT
ROWS=" ${BENCH_ROWS:-tight1 tight4 paced1 paced4 idle onset levels fixed instr ddp} "
want() { [[ $ROWS == *" $1 "* ]]; }
export NCCL_DEBUG=

cc -O2 -I"$ROOT/include" -I"$ROOT/decoder" -o "$W/trace_stats" "$ROOT/tests/faults/trace_stats.c" \
  "$BUILD/libncsdecoder.a" -lzstd -lm -lpthread || { echo "bench-throughput: trace_stats does not build" >&2; exit 2; }
STATS=$W/trace_stats
mkdir -p "$W/stub"
cc -O2 -shared -fPIC -I"$ROOT/include" -o "$W/stub/libnccl.so.2" "$ROOT/tests/faults/stub_nccl.c" || { echo "stub does not build" >&2; exit 2; }
# the floor: two clock reads and a 32-byte store into the calling thread's ring (4096 slots,
# allocated and touched at the thread's first call, never read) around the real ncclAllReduce
cat >"$W/floor.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ncclscope/nccl_abi.h"
struct slot { uint64_t t0, t1, count; uint32_t op, rc; };
static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
static __thread struct slot *ring;
static __thread uint64_t head;
__attribute__((constructor)) static void init(void) { real = dlsym(RTLD_NEXT, "ncclAllReduce"); }
static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) {
  if (__builtin_expect(!ring, 0)) {
    ring = calloc(4096, sizeof *ring);
    if (ring) memset(ring, 1, 4096 * sizeof *ring);
  }
  uint64_t t0 = now();
  ncclResult_t rc = real(s, r, n, t, o, c, st);
  uint64_t t1 = now();
  if (ring) {
    struct slot *x = &ring[head++ & 4095];
    x->t0 = t0; x->t1 = t1; x->count = n; x->op = 1; x->rc = rc;
  }
  return rc;
}
C
cc -O2 -shared -fPIC -I"$ROOT/include" -o "$W/floor.so" "$W/floor.c" -ldl || { echo "floor does not build" >&2; exit 2; }

VARIANTS="plain floor after sites off"
if [ -n "${BENCH_BEFORE_REV:-}" ]; then
  mkdir -p "$W/before"
  if git -C "$ROOT" archive "$BENCH_BEFORE_REV" | tar -x -C "$W/before" &&
     make -s -C "$W/before" BUILD="$W/before/build" "$W/before/build/libncclscope.so" >"$W/before.log" 2>&1; then
    VARIANTS="plain floor before after sites off"
  else
    echo "bench-throughput: could not build $BENCH_BEFORE_REV (see $W/before.log); no 'before' column" >&2
  fi
fi
# BENCH_RING_KB: one more variant, `ring`: after with NCCLSCOPE_BUFFER_KB=$BENCH_RING_KB
[ -n "${BENCH_RING_KB:-}" ] && VARIANTS="${VARIANTS/after/after ring}"
shim_of() { case $1 in before) echo "$W/before/build/libncclscope.so" ;; plain) echo "" ;; floor) echo "$W/floor.so" ;; *) echo "$SHIM" ;; esac; }

# one VARIANT TAG ARGS...: one rate_job run on the stub; appends
# "wall_ns cpu_ns calls dropped writer_ns idle_us caller_ns load caller_faults caller_sys_ns idle_late_us" to $W/TAG.VARIANT
one() {
  local v=$1 tag=$2; shift 2
  local d=$W/tr-$tag-$v out
  rm -rf "$d"
  local env=(LD_LIBRARY_PATH="$W/stub" NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0)
  [ "$v" = off ] && env+=(NCCLSCOPE_DISABLE=1)
  [ "$v" = sites ] && env+=(NCCLSCOPE_CALLSITE_DEPTH=8) # the later assignment wins
  [ "$v" = ring ] && env+=(NCCLSCOPE_BUFFER_KB="$BENCH_RING_KB")
  [ "$v" != plain ] && env+=(LD_PRELOAD="$(shim_of "$v")")
  local wrap=()
  [ "$tag" = idle ] && [ -n "$PRIVATE_SHM" ] && wrap=(unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=8g tmpfs /dev/shm && exec "$@"' sh)
  out=$("${wrap[@]}" env "${env[@]}" "$JOB" "$@" 2>&1)
  local calls=0 dropped=0 f
  for f in "$d"/*.ncs; do
    [ -f "$f" ] || continue
    local s
    s=$("$STATS" "$f" | head -1)
    calls=$((calls + $(sed -n 's/.* calls=\([0-9]*\).*/\1/p' <<<"$s")))
    dropped=$((dropped + $(sed -n 's/.* dropped=\([0-9]*\).*/\1/p' <<<"$s")))
  done
  g() { local x; x=$(sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $out" | head -1); echo "${x:--}"; }
  echo "$(g ns_per_call) $(g cpu_ns_per_call) $calls $dropped $(g writer_cpu_ns) $(g idle_cpu_us) $(g caller_cpu_ns_per_call) $(cut -d' ' -f1 /proc/loadavg) $(g caller_faults) $(g caller_sys_ns_per_call) $(g idle_late_cpu_us)" >>"$W/$tag.$v"
  rm -rf "$d"
}
# mmm TAG VARIANT COL: "min / median / max" of column COL
mmm() {
  [ -s "$W/$1.$2" ] || { echo "-"; return; }
  awk -v k="$3" '$k != "-" {print $k}' "$W/$1.$2" | sort -g |
    awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f / %.1f / %.1f", a[1], m, a[NR]}'
}
# load TAG...: "load a..b" over the runs of these tags (all variants)
load() {
  local t
  for t in "$@"; do cat "$W/$t".* 2>/dev/null; done | awk '$8 != "" {print $8}' | sort -g |
    awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "load %s..%s", lo, hi; else printf "load -"}'
}
# droprate TAG VARIANT: "min / median / max" of dropped/(calls+dropped) in %
droprate() {
  [ -s "$W/$1.$2" ] || { echo "-"; return; }
  awk '{t = $3 + $4; print t ? 100 * $4 / t : 0}' "$W/$1.$2" | sort -g |
    awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f / %.2f / %.2f %%", a[1], m, a[NR]}'
}

# dead_rings: this user's rings files on /dev/shm whose process is gone (what a traced process
# gives back 10 s after its first call)
dead_rings() {
  local f p n=0
  for f in /dev/shm/ncclscope-"$(id -u)"-*.rings; do
    [ -e "$f" ] || continue
    p=${f#/dev/shm/ncclscope-"$(id -u)"-}
    p=${p%%-*}
    kill -0 "$p" 2>/dev/null || n=$((n + 1))
  done
  echo "$n"
}
IDLE_DIRTY=0
PRIVATE_SHM=
unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=8g tmpfs /dev/shm' 2>/dev/null && PRIVATE_SHM=1
PACED=$((PACED_S * 1000000))
FIRST=131072 # slots of a default ring (12 MiB): first-4 is a ring's first pass and nothing else
for ((h = 0; h < ${BENCH_HOG:-0}; h++)); do
  sh -c 'while :; do :; done' &
  HOGS+=($!)
done
ONSET_RATES="500000 1000000 2000000 4000000"
SHIMS=""
for v in $VARIANTS; do case $v in plain|off|floor|sites) ;; *) SHIMS="$SHIMS $v" ;; esac; done
for ((r = 1; r <= ROUNDS; r++)); do
  for v in $VARIANTS; do
    want tight1 && one "$v" tight1 -n "$TIGHT" -i 100 -s 8
    want tight4 && one "$v" tight4 -n "$((TIGHT / 4))" -t 4 -i 100 -s 8
    want first4 && one "$v" first4 -n "$FIRST" -t 4 -i 100 -s 8
    want paced1 && one "$v" paced1 -n "$PACED" -r 1000000 -i 100 -s 8
    want paced4 && one "$v" paced4 -n "$PACED" -t 4 -r 1000000 -i 100 -s 8
    [ "$v" = floor ] || [ "$v" = sites ] && continue
    want idle && { [ -z "$PRIVATE_SHM" ] && [ "$(dead_rings)" -gt 0 ] && IDLE_DIRTY=$((IDLE_DIRTY + 1)); one "$v" idle -n 1000 -i 15000; }
  done
  want onset && for v in $SHIMS; do
    for rate in $ONSET_RATES; do
      one "$v" "onset1-$rate" -n "$rate" -r "$rate"
      one "$v" "onset4-$rate" -n "$rate" -t 4 -r "$rate"
    done
  done
done

echo "bench-throughput: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "stub NCCL (calls return at once), host timing, call sites off (8 frames in sites); $ROUNDS interleaved rounds; min / median / max"
echo "variants: $VARIANTS${BENCH_BEFORE_REV:+ (before = $BENCH_BEFORE_REV)}; rows:$ROWS; ${BENCH_HOG:-0} busy loop(s) beside every run"
row() { # TITLE TAG: wall, cpu, calling thread's cpu (and its part in the kernel), its page faults, drops per variant
  echo
  echo "$1 ($(load "$2"))"
  printf '  %-7s %-24s %-24s %-24s %-24s %-24s %s\n' variant "wall ns/call" "process CPU ns/call" "caller CPU ns/call" "of which kernel ns/call" "caller page faults" "dropped"
  for v in $VARIANTS; do
    printf '  %-7s %-24s %-24s %-24s %-24s %-24s %s\n' "$v" "$(mmm "$2" "$v" 1)" "$(mmm "$2" "$v" 2)" "$(mmm "$2" "$v" 7)" "$(mmm "$2" "$v" 10)" "$(mmm "$2" "$v" 9)" \
      "$(case $v in plain|floor) echo "- (records nothing)" ;; *) droprate "$2" "$v" ;; esac)"
  done
  # the shim's calling thread against the floor, median by median
  local fm am
  fm=$(mmm "$2" floor 7 | awk -F' / ' '{print $2}') am=$(mmm "$2" after 7 | awk -F' / ' '{print $2}')
  [ -n "$fm" ] && [ -n "$am" ] && [ "$fm" != - ] && awk -v a="$am" -v f="$fm" 'BEGIN {printf "  after - floor (caller CPU, medians): %+.1f ns/call\n", a - f}'
  am=$(mmm "$2" sites 7 | awk -F' / ' '{print $2}')
  [ -n "$fm" ] && [ -n "$am" ] && [ "$fm" != - ] && awk -v a="$am" -v f="$fm" 'BEGIN {printf "  sites - floor (caller CPU, medians): %+.1f ns/call\n", a - f}'
}
if want instr; then
  echo
  if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
    echo "instr: valgrind (callgrind) is not installed: no instruction counts"
  else
    N=${BENCH_INSTR_CALLS:-40000}
    # ir VARIANT DEPTH: instructions per call of the preloaded ncclAllReduce (inclusive), with
    # NCCLSCOPE_CALLSITE_DEPTH=DEPTH: the count at N calls less the count at N/4, per call between
    ir() {
      local v=$1 so n c=() out
      so=$(shim_of "$v")
      for n in $((N / 4)) "$N"; do
        out=$W/cg.$v.$n
        rm -rf "$W/tr-instr"
        env LD_LIBRARY_PATH="$W/stub" NCCLSCOPE_DIR="$W/tr-instr" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH="$2" \
          LD_PRELOAD="$so" valgrind --tool=callgrind --callgrind-out-file="$out" "$JOB" -n "$n" -s 8 >/dev/null 2>&1
        c+=("$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | grep -F "ncclAllReduce [$so]" |
          head -1 | awk '{gsub(",", "", $1); print $1}')")
        rm -f "$out"*
      done
      if [ -n "${c[0]}" ] && [ -n "${c[1]}" ]; then awk -v a="${c[0]}" -v b="${c[1]}" -v n="$N" 'BEGIN {printf "%.1f", (b - a) / (n - n / 4)}'
      else echo -; fi
    }
    echo "instr: instructions per call, calling thread, callgrind, ${N} vs $((N / 4)) calls (1 thread, rate_job -s 8; inclusive of the stub's call)"
    printf '  %-7s %-18s %s\n' variant "call sites off" "8-frame call sites"
    for v in $VARIANTS; do
      case $v in floor) printf '  %-7s %-18s %s\n' "$v" "$(ir "$v" 0)" - ;;
        before|after) printf '  %-7s %-18s %s\n' "$v" "$(ir "$v" 0)" "$(ir "$v" 8)" ;; esac
    done
  fi
fi
want tight1 && row "tight-1: 1 thread, $TIGHT calls as fast as possible" tight1
want tight4 && row "tight-4: 4 threads x $((TIGHT / 4)) calls" tight4
want first4 && row "first-4: 4 threads x $FIRST calls (one pass over a default ring: its first pages)" first4
want paced1 && row "paced-1: 1 thread at 1 M calls/s for ${PACED_S} s (wall ns/call 1000 = the pace was held)" paced1
want paced4 && row "paced-4: 4 threads at 1 M calls/s each for ${PACED_S} s" paced4
want onset && for th in 1 4; do
  echo
  echo "onset-$th: $th thread(s), 1 s at each rate per thread; wall ns/call achieved (per thread), dropped ($(load $(for x in $ONSET_RATES; do echo "onset$th-$x"; done)))"
  for v in $SHIMS; do
    for rate in $ONSET_RATES; do
      printf '  %-7s %-4s M/s  %-26s %s\n' "$v" "$(awk -v r="$rate" 'BEGIN {print r / 1000000}')" "$(mmm "onset$th-$rate" "$v" 1)" "$(droprate "onset$th-$rate" "$v")"
    done
  done
done
echo
echo "writer thread(s) CPU per recorded call, ns (writer_cpu_ns / calls recorded)"
for v in $SHIMS; do
  for tag in tight1 tight4 paced1 paced4; do
    [ -s "$W/$tag.$v" ] || continue
    w=$(awk '$5 != "-" && $3 > 0 {print $5 / $3}' "$W/$tag.$v" | sort -g |
      awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f / %.1f / %.1f", a[1], m, a[NR]}')
    printf '  %-7s %-8s %s   dropped %s\n' "$v" "$tag" "$w" "$(droprate "$tag" "$v")"
  done
done
if want idle; then
echo
echo "idle: process CPU per second of an idle traced process (1000 calls, 1 s, then 15 s idle), ms/s ($(load idle); $([ -n "$PRIVATE_SHM" ] && echo "each run with a /dev/shm of its own" || echo "$IDLE_DIRTY run(s) began with dead processes' rings files on /dev/shm, given back in the steady window"))"
echo "  variant first 5 s (one-off work on going idle)   the 10 s after (steady)"
for v in $VARIANTS; do
  [ "$v" = floor ] || [ "$v" = sites ] && continue
  printf '  %-7s %-40s %s\n' "$v" "$(awk '$6 != "-" && $11 != "-" {print ($6 - $11) / 5000}' "$W/idle.$v" | sort -g |
    awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.3f / %.3f / %.3f", a[1], m, a[NR]}')" \
    "$(awk '$11 != "-" {print $11 / 10000}' "$W/idle.$v" | sort -g |
    awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.3f / %.3f / %.3f", a[1], m, a[NR]}')"
done
fi

# zstd levels on the rows of the tight loop: a 4-thread tight-loop trace (after), its row chunks
# decompressed and compressed again at each level, one reused context, best of 5 passes of the
# benchmark's own CPU time (single thread, no I/O): what a level costs per record and gives
if want levels; then
cat >"$W/levels.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>
static unsigned u32(const unsigned char *p) { unsigned v; memcpy(&v, p, 4); return v; }
static unsigned long long vget(const unsigned char **p, const unsigned char *e) {
  unsigned long long v = 0; int s = 0;
  while (*p < e && s < 64) { unsigned char c = *(*p)++; v |= (unsigned long long)(c & 127) << s; s += 7; if (c < 128) break; }
  return v;
}
/* calls in rows: a CALL record (type 5) is one, a CALL_RUN (type 20, format 5.0) one per pair */
static double calls_in(const unsigned char *r, size_t n) {
  const unsigned char *p = r, *e = r + n; double k = 0;
  while (p < e) {
    unsigned long long t = vget(&p, e), l = vget(&p, e);
    if (l > (unsigned long long)(e - p)) break;
    if (t == 5) k++;
    else if (t == 20) for (const unsigned char *q = p; q < p + l; q++) k += (*q < 128) * 0.5;
    p += l;
  }
  return k;
}
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n), *raw[4096]; size_t len[4096], off = 64, total = 0; int nc = 0; double recs = 0;
  if (!b || fread(b, 1, n, f) != (size_t)n) return 1;
  while (off + 40 <= (size_t)n && nc < 4096) { /* row chunks over 1 MiB (flag 4 = columns) */
    unsigned pay = u32(b + off + 4), rs = u32(b + off + 8), fl = u32(b + off + 36);
    if (!(fl & 4) && rs > (1u << 20) && (raw[nc] = malloc(rs)) &&
        ZSTD_decompress(raw[nc], rs, b + off + 40, pay) == rs) { len[nc] = rs; total += rs; recs += calls_in(raw[nc], rs); nc++; }
    off += 40 + pay;
  }
  if (!nc) { printf("  no row chunk over 1 MiB\n"); return 0; }
  printf("  %d row chunks, %.0f calls, %.1f raw bytes per call\n", nc, recs, total / recs);
  ZSTD_CCtx *c = ZSTD_createCCtx(); size_t cap = ZSTD_compressBound(8u << 20); unsigned char *out = malloc(cap);
  int lv[] = {3, 1, -1, -5, -20, -100};
  for (int l = 0; l < 6; l++) {
    double best = 1e30; size_t z = 0;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = cpu(); z = 0;
      for (int i = 0; i < nc; i++) z += ZSTD_compressCCtx(c, out, cap, raw[i], len[i], lv[l]);
      if (cpu() - t0 < best) best = cpu() - t0;
    }
    printf("  level %4d  %6.2f ns/call  %5.2f bytes/call\n", lv[l], best * 1e9 / recs, z / recs);
  }
  return 0;
}
C
  echo
  echo "levels: zstd level against CPU and bytes per call, the row chunks over 1 MiB of a 4-thread tight loop ($((TIGHT / 4)) calls each), as each shim wrote them"
  if cc -O2 -o "$W/levels" "$W/levels.c" -lzstd; then
    for v in $VARIANTS; do
      case $v in plain|off|ring|floor) continue ;; esac
      d=$W/tr-levels
      echo " $v:"
      env LD_LIBRARY_PATH="$W/stub" NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 LD_PRELOAD="$(shim_of "$v")" \
        "$JOB" -n "$((TIGHT / 4))" -t 4 >/dev/null 2>&1
      for f in "$d"/*.ncs; do [ -f "$f" ] && "$W/levels" "$f"; done
      rm -rf "$d"
    done
  fi
fi

# fixed CPU per traced process: rusage of a 10-call run, default settings (call sites on)
if want fixed; then
echo
echo "fixed: process CPU (user+sys) of a whole 10-call run, ms; 'added' = minus plain's median; $((5 * ROUNDS)) runs each"
fixed() { # VARIANT ROUND: prints CPU ms of one run (its directory is kept until the end)
  local v=$1 d=$W/fixed-dirs/$1-$2
  python3 - "$v" "$(shim_of "$v")" "$W/stub" "$d" "$JOB" <<'PY'
import os, resource, subprocess, sys
v, shim, stub, d, job = sys.argv[1:]
env = dict(os.environ, LD_LIBRARY_PATH=stub, NCCLSCOPE_DIR=d, NCCLSCOPE_GPU_TIMING="0")
if v != "plain": env["LD_PRELOAD"] = shim
if v == "off": env["NCCLSCOPE_DISABLE"] = "1"
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run([job, "-n", "10"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.2f" % (1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))))
PY
}
mkdir -p "$W/fixed-dirs"
FIXED_VARIANTS=${VARIANTS/ ring/}
FIXED_VARIANTS=${FIXED_VARIANTS/ floor/}
for ((r = 1; r <= 5 * ROUNDS; r++)); do for v in $FIXED_VARIANTS; do fixed "$v" "$r" >>"$W/fixed.$v"; done; done
rm -rf "$W/fixed-dirs"
echo "  (fixed: $(cut -d' ' -f1 /proc/loadavg) load at the end)"
pm=$(sort -g "$W/fixed.plain" | awk '{a[NR]=$1} END {print NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
for v in $FIXED_VARIANTS; do
  printf '  %-7s %s   added (median) %s\n' "$v" "$(sort -g "$W/fixed.$v" | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f / %.2f / %.2f", a[1], m, a[NR]}')" \
    "$(sort -g "$W/fixed.$v" | awk -v p="$pm" '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f", m - p}')"
done
fi

# bytes per call, DDP-shaped job, steady state
{ [ "${BENCH_DDP:-1}" = 0 ] || ! want ddp; } && exit 0
echo
echo "ddp-bytes: trace bytes per call in steady state, tests/jobs/ddp_job.c on 2 ranks (doubles), call sites on (default)"
ddp() { # VARIANT TIMING STEPS: prints "bytes calls dropped" summed over the ranks
  local v=$1 gt=$2 steps=$3 d=$W/tr-ddp
  rm -rf "$d"
  local env=(NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING="$gt" LD_PRELOAD="$(shim_of "$v")")
  env "${env[@]}" bash "$ROOT/tests/jobs/launch.sh" 2 "$DDP" --steps "$steps" --compute-us 100 >/dev/null 2>&1
  local b=0 c=0 x=0 f s
  for f in "$d"/*.ncs; do
    b=$((b + $(stat -c %s "$f")))
    s=$("$STATS" "$f" | head -1)
    c=$((c + $(sed -n 's/.* calls=\([0-9]*\).*/\1/p' <<<"$s")))
    x=$((x + $(sed -n 's/.* dropped=\([0-9]*\).*/\1/p' <<<"$s")))
  done
  echo "$b $c $x"
}
for v in ${SHIMS/ ring/}; do
  for gt in 0 1; do
    for ((r = 1; r <= ROUNDS; r++)); do
      read -r b1 c1 x1 <<<"$(ddp "$v" "$gt" 100)"
      read -r b3 c3 x3 <<<"$(ddp "$v" "$gt" 300)"
      echo "$(awk -v a="$b1" -v b="$b3" -v c="$c1" -v d="$c3" 'BEGIN {print (d > c) ? (b - a) / (d - c) : 0}') $x1 $x3" >>"$W/ddp$gt.$v"
    done
    printf '  %-7s %-5s %s bytes/call   dropped (100/300 steps, per round): %s\n' "$v" "$([ "$gt" = 1 ] && echo gpu || echo host)" \
      "$(awk '{print $1}' "$W/ddp$gt.$v" | sort -g | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f / %.2f / %.2f", a[1], m, a[NR]}')" \
      "$(awk '{printf "%s/%s ", $2, $3}' "$W/ddp$gt.$v")"
  done
done
