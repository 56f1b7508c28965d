#!/usr/bin/env bash
# bench_overlap.sh [BUILD] — what kernel activity (shim/kernels.c, issue 15) adds, per kernel
# and per NCCL call, on the CPU doubles, measured side by side in one run.
#
# Variants, interleaved round by round (A B C A B C ...: the machine is shared), medians with
# min and max:
#   plain        no shim
#   kernels-off  shim with NCCLSCOPE_KERNELS=0 (everything else at its default)
#   kernels-on   shim with kernel activity (the default): the CUPTI double records every
#                kernel, the shim's writer turns them into KERNEL records
# Workloads:
#   per kernel   tests/jobs/kernel_loop: empty compute kernels on one stream, synced every
#                100; ns_per_kernel (host wall) and cpu_ns_per_kernel (the process's CPU, all
#                threads: on the doubles that includes the CUPTI double's record writing on the
#                stream worker, which stands in for CUPTI's own cost on a GPU)
#   per call     tests/jobs/bench_loop: small all-reduces (each one NCCL kernel), synced every 100
# then, for kernels-on: KERNEL records per kernel launched, trace bytes per kernel, and kernel
# records dropped (DROP reason 6). Env: BENCH_KERNELS (200000), BENCH_ITERS (100000),
# BENCH_ROUNDS (5).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so
NCS=$BUILD/ncclscope
KJOB=$BUILD/tests/kernel_loop
CJOB=$BUILD/tests/bench_loop
NK=${BENCH_KERNELS:-200000}
NC=${BENCH_ITERS:-100000}
ROUNDS=${BENCH_ROUNDS:-5}
for f in "$SHIM" "$NCS" "$KJOB" "$CJOB"; do
  [ -e "$f" ] || { echo "bench_overlap: $f missing (run make first)" >&2; exit 2; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-bench-ov.XXXXXX")
trap 'rm -rf "$W"' EXIT
export NCCL_DEBUG=

field() { sed -n "s/.* $1=\\([0-9.]*\\).*/\\1/p"; }
stats() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan nan nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m, a[1], a[NR]}'; }

# run WORKLOAD VARIANT ROUND
run() {
  local wl=$1 v=$2 r=$3 d=$W/tr-$1-$2-$3 out
  local cmd; if [ "$wl" = kernel ]; then cmd=("$KJOB" -n "$NK"); else cmd=("$CJOB" -n "$NC"); fi
  case $v in
    plain) out=$("${cmd[@]}") ;;
    kernels-off) out=$(NCCLSCOPE_DIR=$d NCCLSCOPE_KERNELS=0 LD_PRELOAD=$SHIM "${cmd[@]}") ;;
    kernels-on) out=$(NCCLSCOPE_DIR=$d LD_PRELOAD=$SHIM "${cmd[@]}") ;;
  esac
  if [ "$wl" = kernel ]; then
    echo "$out" | field ns_per_kernel >>"$W/$wl-$v.ns"
    echo "$out" | field cpu_ns_per_kernel >>"$W/$wl-$v.cpu"
  else
    echo "$out" | field ns_per_call >>"$W/$wl-$v.ns"
  fi
}
VARIANTS="plain kernels-off kernels-on"
for ((r = 1; r <= ROUNDS; r++)); do
  for wl in kernel call; do
    for v in $VARIANTS; do run "$wl" "$v" "$r"; done
  done
done

echo "bench_overlap: $(uname -m), $(nproc) cores, $ROUNDS interleaved rounds; median (min..max)"
echo "per kernel: kernel_loop -n $NK (empty kernels, 1 stream, sync every 100)"
printf '  %-12s %16s %12s %20s %12s\n' variant "wall ns/kernel" "added" "CPU ns/kernel" "added"
read -r kb _ _ < <(stats <"$W/kernel-plain.ns")
read -r cb _ _ < <(stats <"$W/kernel-plain.cpu")
for v in $VARIANTS; do
  read -r m lo hi < <(stats <"$W/kernel-$v.ns")
  read -r cm clo chi < <(stats <"$W/kernel-$v.cpu")
  printf '  %-12s %8.1f (%s..%s) %8.1f %10.1f (%s..%s) %8.1f\n' "$v" "$m" "$lo" "$hi" "$(awk -v a="$m" -v b="$kb" 'BEGIN{print a-b}')" \
    "$cm" "$clo" "$chi" "$(awk -v a="$cm" -v b="$cb" 'BEGIN{print a-b}')"
done
echo "per NCCL call: bench_loop -n $NC (1 rank, 8 x fp32 all-reduce = one NCCL kernel each, sync every 100)"
printf '  %-12s %16s %12s\n' variant "wall ns/call" "added"
read -r pb _ _ < <(stats <"$W/call-plain.ns")
for v in $VARIANTS; do
  read -r m lo hi < <(stats <"$W/call-$v.ns")
  printf '  %-12s %8.1f (%s..%s) %8.1f\n' "$v" "$m" "$lo" "$hi" "$(awk -v a="$m" -v b="$pb" 'BEGIN{print a-b}')"
done
# records, bytes and drops of the kernels-on traces (per kernel launched, first round)
for wl in kernel call; do
  d=$W/tr-$wl-kernels-on-1
  n=$([ $wl = kernel ] && echo $((NK + 100)) || echo $((NC + 100)))
  recs=$("$NCS" report --json "$d" 2>/dev/null | jq -r '[.ranks[].gpu_time.kernels] | add // 0')
  bytes=$(cat "$d"/*.ncs | wc -c)
  drops=$("$NCS" report --json "$d" 2>/dev/null | jq -r '[.ranks[].drops.kernel_records // 0] | add // 0')
  off=$(cat "$W"/tr-$wl-kernels-off-1/*.ncs | wc -c)
  echo "$wl workload, kernels-on round 1: $recs kernels recorded of about $n launched, kernel records dropped: $drops, trace $bytes bytes vs $off with kernels off: $(awk -v a="$bytes" -v b="$off" -v n="$n" 'BEGIN{printf "%.2f", (a-b)/n}') bytes per kernel"
done
