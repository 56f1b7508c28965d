#!/usr/bin/env bash
# bench.sh [BUILD] — the shim's host overhead and trace size, measured side by side in one run.
#
# Workload: tests/jobs/bench_loop (a tight loop of small all-reduces, 8 floats, a 1-rank
# communicator on the CPU NCCL double, a stream sync every 100 calls). Variants, interleaved
# round by round (A B C D A B C D ...) because the machine is shared and noisy; medians:
#   plain       no shim
#   shim-cs0    shim, call sites off (NCCLSCOPE_CALLSITE_DEPTH=0)
#   shim-cs8    shim, 8-frame call sites (the default)
#   shim-host   shim, 8-frame call sites, GPU timing off (NCCLSCOPE_GPU_TIMING=0): shows what
#               the CUDA events add when the process has a CUDA runtime
# then the same loop (fewer iterations) plain vs `ltrace -e ncclAllReduce`, and the trace
# size per recorded call of the shim runs. Env: BENCH_ITERS (200000), BENCH_ROUNDS (5),
# BENCH_LTRACE_ITERS (20000), BENCH_BASE (another build folder: its shim joins the stub loop
# as base-cs0 / base-cs8, interleaved with this one, for a before/after in one run).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so
NCS=$BUILD/ncclscope
JOB=$BUILD/tests/bench_loop
N=${BENCH_ITERS:-200000}
ROUNDS=${BENCH_ROUNDS:-5}
NL=${BENCH_LTRACE_ITERS:-20000}
for f in "$SHIM" "$NCS" "$JOB"; do
  [ -e "$f" ] || { echo "bench: $f missing (run make first)" >&2; exit 2; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export NCCL_DEBUG=

ns_of() { sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} if(NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# run VARIANT ROUND: one bench_loop run, appends ns/call to $W/VARIANT.ns and keeps its trace
run() {
  local v=$1 r=$2 d=$W/tr-$1-$2
  case $v in
    plain) "$JOB" -n "$N" ;;
    shim-cs0) NCCLSCOPE_DIR=$d NCCLSCOPE_CALLSITE_DEPTH=0 LD_PRELOAD=$SHIM "$JOB" -n "$N" ;;
    shim-cs8) NCCLSCOPE_DIR=$d NCCLSCOPE_CALLSITE_DEPTH=8 LD_PRELOAD=$SHIM "$JOB" -n "$N" ;;
    shim-host) NCCLSCOPE_DIR=$d NCCLSCOPE_GPU_TIMING=0 LD_PRELOAD=$SHIM "$JOB" -n "$N" ;;
  esac | ns_of >>"$W/$v.ns"
}
VARIANTS="plain shim-cs0 shim-cs8 shim-host"
for ((r = 1; r <= ROUNDS; r++)); do
  for v in $VARIANTS; do run "$v" "$r"; done
done

echo "bench: $(uname -m), $(nproc) cores, bench_loop -n $N (1 rank, 8 x fp32, sync every 100), $ROUNDS interleaved rounds, medians"
echo "timing source in the traces: $("$NCS" dump "$W"/tr-shim-cs8-1/*.ncs 2>/dev/null | sed -n 's/^  timing=//p' | head -1)"
base=$(median <"$W/plain.ns")
printf '%-10s %12s %12s   %s\n' variant "ns/call" "added ns" "runs (ns/call)"
for v in $VARIANTS; do
  m=$(median <"$W/$v.ns")
  printf '%-10s %12.1f %12.1f   %s\n' "$v" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN{print a-b}')" "$(tr '\n' ' ' <"$W/$v.ns")"
done

# trace size: bytes on disk per CALL record, and drops, for each shim variant (all rounds)
echo
printf '%-10s %14s %12s %12s %14s\n' variant "calls traced" dropped "bytes" "bytes/call"
for v in shim-cs0 shim-cs8 shim-host; do
  calls=0 dropped=0 bytes=0
  for d in "$W"/tr-$v-*; do
    for f in "$d"/*.ncs; do
      [ -f "$f" ] || continue
      s=$("$NCS" dump "$f" 2>/dev/null | awk '/^CALL /{c++} /^== end:/{for(i=1;i<=NF;i++) if($i=="dropped") d=$(i+1)} END{print c+0, d+0}')
      calls=$((calls + ${s% *})); dropped=$((dropped + ${s#* }))
      bytes=$((bytes + $(stat -c %s "$f")))
    done
  done
  printf '%-10s %14d %12d %12d %14.2f\n' "$v" "$calls" "$dropped" "$bytes" "$(awk -v b="$bytes" -v c="$calls" 'BEGIN{print c ? b/c : 0}')"
done

# the shim's own hot path, without the double: a stub libnccl whose AllReduce returns at once
# (weak ncclAllReduce, strong pncclAllReduce, like NCCL), 2 M calls, plain / cs0 / cs8 interleaved
echo
cat >"$W/stub.c" <<'C'
#include "ncclscope/nccl_abi.h"
struct ncclComm { int x; };
static struct ncclComm the_comm;
ncclResult_t pncclGetUniqueId(ncclUniqueId *id) { id->internal[0] = 1; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) __attribute__((weak, alias("pncclGetUniqueId")));
ncclResult_t pncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) { *c = &the_comm; return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) __attribute__((weak, alias("pncclCommInitRank")));
ncclResult_t pncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) __attribute__((weak, alias("pncclAllReduce")));
C
cat >"$W/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ncclscope/nccl_abi.h"
ncclResult_t ncclGetUniqueId(ncclUniqueId *);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  ncclUniqueId id; ncclComm_t c; float a[8] = {0}, b[8];
  ncclGetUniqueId(&id); ncclCommInitRank(&c, 1, id, 0);
  struct timespec t0, t1, c0, c1, p0, p1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
  for (long i = 0; i < n; i++) ncclAllReduce(a, b, 8, ncclFloat32, ncclSum, c, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
#define NS(a, b) (((b).tv_sec - (a).tv_sec) * 1e9 + ((b).tv_nsec - (a).tv_nsec))
  printf("ns_per_call=%.1f cpu_ns_per_call=%.1f proc_cpu_ns_per_call=%.1f\n", NS(t0, t1) / n,
         NS(c0, c1) / n, NS(p0, p1) / n);
  return 0;
}
C
if cc -O2 -shared -fPIC -I"$ROOT/include" -o "$W/libnccl.so.2" "$W/stub.c" &&
   cc -O2 -I"$ROOT/include" -o "$W/loop" "$W/loop.c" -L"$W" -l:libnccl.so.2 -Wl,-rpath,"$W"; then
  SN=${BENCH_STUB_ITERS:-2000000}
  stub() { # VARIANT ENV...: one run, appends "wall cpu proc" (ns per call) to $W/VARIANT.st
    local v=$1; shift
    env "$@" "$W/loop" "$SN" |
      sed -n 's/ns_per_call=\([0-9.]*\) cpu_ns_per_call=\([0-9.]*\) proc_cpu_ns_per_call=\([0-9.]*\)/\1 \2 \3/p' >>"$W/$v.st"
  }
  for ((r = 1; r <= ROUNDS; r++)); do
    stub stub-plain NCS_X=1
    stub stub-cs0 NCCLSCOPE_DIR="$W/tr-stub" NCCLSCOPE_CALLSITE_DEPTH=0 LD_PRELOAD="$SHIM"
    stub stub-cs8 NCCLSCOPE_DIR="$W/tr-stub" NCCLSCOPE_CALLSITE_DEPTH=8 LD_PRELOAD="$SHIM"
    if [ -n "${BENCH_BASE:-}" ]; then
      stub base-cs0 NCCLSCOPE_DIR="$W/tr-stub" NCCLSCOPE_CALLSITE_DEPTH=0 LD_PRELOAD="$BENCH_BASE/libncclscope.so"
      stub base-cs8 NCCLSCOPE_DIR="$W/tr-stub" NCCLSCOPE_CALLSITE_DEPTH=8 LD_PRELOAD="$BENCH_BASE/libncclscope.so"
    fi
  done
  col() { awk -v k="$1" '{print $k}' "$2" | median; }
  echo "stub NCCL (the shim's own cost, no double), $SN calls, $ROUNDS interleaved rounds, medians."
  echo "ns per call: wall; CPU of the calling thread; CPU of the whole process (writer included):"
  printf '  %-10s %9s %9s %9s %16s %16s %16s\n' variant wall cpu proc "added wall" "added cpu" "cpu min..max"
  sbw=$(col 1 "$W/stub-plain.st"); sbc=$(col 2 "$W/stub-plain.st")
  for v in stub-plain stub-cs0 stub-cs8 ${BENCH_BASE:+base-cs0 base-cs8}; do
    w=$(col 1 "$W/$v.st"); c=$(col 2 "$W/$v.st")
    printf '  %-10s %9.1f %9.1f %9.1f %16.1f %16.1f %16s\n' "$v" "$w" "$c" "$(col 3 "$W/$v.st")" \
      "$(awk -v a="$w" -v b="$sbw" 'BEGIN{print a-b}')" "$(awk -v a="$c" -v b="$sbc" 'BEGIN{print a-b}')" \
      "$(awk '{print $2}' "$W/$v.st" | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {printf "%.1f..%.1f", a, b}')"
  done
else
  echo "stub NCCL loop: could not build"
fi

# ltrace, the generic tool, on the same loop
echo
if command -v ltrace >/dev/null; then
  for ((r = 1; r <= 3; r++)); do
    "$JOB" -n "$NL" | ns_of >>"$W/lt-plain.ns"
    ltrace -e ncclAllReduce -o "$W/ltrace.out" "$JOB" -n "$NL" | ns_of >>"$W/lt.ns"
    NCCLSCOPE_DIR=$W/tr-lt-$r LD_PRELOAD=$SHIM "$JOB" -n "$NL" | ns_of >>"$W/lt-shim.ns"
  done
  lp=$(median <"$W/lt-plain.ns"); lt=$(median <"$W/lt.ns"); ls=$(median <"$W/lt-shim.ns")
  echo "ltrace -e ncclAllReduce, bench_loop -n $NL, 3 interleaved rounds, medians:"
  printf '  plain %.1f ns/call, ltrace %.1f ns/call (%.1fx plain), shim (cs8) %.1f ns/call (%.2fx plain)\n' \
    "$lp" "$lt" "$(awk -v a="$lt" -v b="$lp" 'BEGIN{print a/b}')" "$ls" "$(awk -v a="$ls" -v b="$lp" 'BEGIN{print a/b}')"
  printf '  ltrace adds %.0f ns per call, the shim %.0f ns: ltrace/shim added-time ratio %.0fx\n' \
    "$(awk -v a="$lt" -v b="$lp" 'BEGIN{print a-b}')" "$(awk -v a="$ls" -v b="$lp" 'BEGIN{print a-b}')" \
    "$(awk -v a="$lt" -v b="$lp" -v s="$ls" 'BEGIN{d=s-b; if (d<1) d=1; print (a-b)/d}')"
else
  echo "ltrace not installed: ltrace comparison skipped"
fi
