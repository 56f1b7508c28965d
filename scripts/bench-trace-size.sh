#!/usr/bin/env bash
# bench-trace-size.sh [BUILD] — issue 14's trace-size rows, before vs after side by side in one
# run (docs/BENCHMARKS-HISTORY.md "Trace size"): steady-state trace bytes per NCCL call of the DDP-shaped
# job (tests/jobs/ddp_job.c, 2 ranks on the doubles, call sites on, --compute-us 100), three
# rows: host timing (NCCLSCOPE_GPU_TIMING=0, which also turns kernel activity off); GPU timing as
# issue 14 filed it, GPU_TIME records only (NCCLSCOPE_KERNELS=0); GPU timing with kernel
# activity (GPU_TIME and KERNEL records, the shim's default).
# Steady state: (bytes at 300 steps - bytes at 100 steps) / (calls at 300 - calls at 100),
# summed over the ranks, so headers, definitions and start-up records cancel out.
# `after` is BUILD's shim; `before` a shim built from git revision $BENCH_BEFORE_REV (when
# set). Variants are interleaved round by round; figures are min / median / max over rounds,
# with the calls dropped in each run beside them (a dropped call costs no bytes). With a
# `before`, a third column `recoded` gives the before runs' own records rewritten by this
# tree's chunk writer (tests/faults/repack.c; a PROFILE becomes the PROFILE_ID this tree's shim
# writes for it, format 3.1): the same records in both layouts, so the
# difference between `before` and `recoded` is the layout's alone, free of the timestamp
# jitter that differs from run to run (large on a loaded machine).
# Env: BENCH_ROUNDS (3), BENCH_BEFORE_REV (unset: after only), BENCH_STEPS ("100 300").
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so DDP=$BUILD/tests/ddp_job
ROUNDS=${BENCH_ROUNDS:-3}
read -r S1 S2 <<<"${BENCH_STEPS:-100 300}"
for f in "$SHIM" "$DDP" "$BUILD/libncsdecoder.a"; do
  [ -e "$f" ] || { echo "bench-trace-size: $f missing (run make first)" >&2; exit 2; }
done
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-size.XXXXXX")
trap 'rm -rf "$W"' EXIT
export NCCL_DEBUG=
cc -O2 -I"$ROOT/include" -I"$ROOT/decoder" -o "$W/trace_stats" "$ROOT/tests/faults/trace_stats.c" \
  "$BUILD/libncsdecoder.a" -lzstd -lm -lpthread || { echo "bench-trace-size: trace_stats does not build" >&2; exit 2; }
cc -O2 -I"$ROOT/include" -o "$W/repack" "$ROOT/tests/faults/repack.c" -lzstd ||
  { echo "bench-trace-size: repack does not build" >&2; exit 2; }

VARIANTS="after"
if [ -n "${BENCH_BEFORE_REV:-}" ]; then
  mkdir -p "$W/before"
  if git -C "$ROOT" archive "$BENCH_BEFORE_REV" | tar -x -C "$W/before" &&
     make -s -C "$W/before" BUILD="$W/before/build" "$W/before/build/libncclscope.so" >"$W/before.log" 2>&1; then
    VARIANTS="before after"
  else
    echo "bench-trace-size: could not build $BENCH_BEFORE_REV (see $W/before.log); no 'before' column" >&2
  fi
fi
shim_of() { if [ "$1" = before ]; then echo "$W/before/build/libncclscope.so"; else echo "$SHIM"; fi; }

# The rows: NCCLSCOPE_GPU_TIMING and NCCLSCOPE_KERNELS of each
ROWS="host gpu gpu+kernels"
gt_of() { case $1 in host) echo 0 ;; *) echo 1 ;; esac; }
kn_of() { case $1 in gpu+kernels) echo 1 ;; *) echo 0 ;; esac; }
# ddp VARIANT ROW STEPS: prints "bytes calls dropped recoded-bytes" summed over the ranks
ddp() {
  local d=$W/tr
  rm -rf "$d"
  NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING="$(gt_of "$2")" NCCLSCOPE_KERNELS="$(kn_of "$2")" LD_PRELOAD="$(shim_of "$1")" \
    bash "$ROOT/tests/jobs/launch.sh" 2 "$DDP" --steps "$3" --compute-us 100 >/dev/null 2>&1
  local b=0 c=0 x=0 rb=0 f s
  for f in "$d"/*.ncs; do
    [ -f "$f" ] || continue
    b=$((b + $(stat -c %s "$f")))
    if [ "$1" = before ] && "$W/repack" "$f" "$W/rp.ncs"; then rb=$((rb + $(stat -c %s "$W/rp.ncs"))); fi
    s=$("$W/trace_stats" "$f" | head -1)
    c=$((c + $(sed -n 's/.* calls=\([0-9]*\).*/\1/p' <<<"$s")))
    x=$((x + $(sed -n 's/.* dropped=\([0-9]*\).*/\1/p' <<<"$s")))
  done
  echo "$b $c $x $rb"
}
perc() { awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN {print (d > c) ? (b - a) / (d - c) : 0}'; }
for ((r = 1; r <= ROUNDS; r++)); do
  for row in $ROWS; do
    for v in $VARIANTS; do
      read -r b1 c1 x1 r1 <<<"$(ddp "$v" "$row" "$S1")"
      read -r b2 c2 x2 r2 <<<"$(ddp "$v" "$row" "$S2")"
      echo "$(perc "$b1" "$b2" "$c1" "$c2") $x1/$x2" >>"$W/size.$row.$v"
      if [ "$v" = before ]; then echo "$(perc "$r1" "$r2" "$c1" "$c2") $x1/$x2" >>"$W/size.$row.recoded"; fi
    done
  done
done
mmm() { awk '{print $1}' "$1" | sort -g |
  awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f / %.2f / %.2f", a[1], m, a[NR]}'; }
echo "bench-trace-size: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "ddp_job, 2 ranks, --compute-us 100, call sites on; bytes/call = (size at $S2 steps - size at $S1) / (calls at $S2 - calls at $S1)"
echo "variants: $VARIANTS${BENCH_BEFORE_REV:+ (before = $BENCH_BEFORE_REV; recoded = before's records written by this tree's chunk writer)}; $ROUNDS interleaved rounds; min / median / max"
COLS=$VARIANTS
[ "$VARIANTS" = "before after" ] && COLS="before recoded after"
echo "rows: host = NCCLSCOPE_GPU_TIMING=0; gpu = GPU_TIME records only (NCCLSCOPE_KERNELS=0, the row as issue 14 filed it, goal <= 8); gpu+kernels = GPU_TIME and KERNEL records"
printf '  %-12s' row
for v in $COLS; do printf ' %-26s' "$v bytes/call"; done
for v in $VARIANTS; do printf ' %s' "$v dropped ($S1/$S2 steps, per round);"; done
echo
for row in $ROWS; do
  printf '  %-12s' "$row"
  for v in $COLS; do printf ' %-26s' "$(mmm "$W/size.$row.$v")"; done
  for v in $VARIANTS; do printf ' %s' "$(awk '{printf "%s ", $2}' "$W/size.$row.$v")"; done
  echo
done
