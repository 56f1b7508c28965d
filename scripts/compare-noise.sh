#!/usr/bin/env bash
# compare-noise.sh — how often the CI gate (`ncclscope compare`) cries wolf, and how often it
# catches a real loss, measured on the CPU doubles (docs/COMPARE.md, "Measured rates").
#
#   scripts/compare-noise.sh [-n ITERATIONS] [-o OUTDIR] [--build DIR] [--steps N] [--ranks N]
#                            [--bw-gbps G] [--loss PCT] [--load every|none|alternate]
#                            [--also NCCLSCOPE_BIN] [--bases K] [--loss2 PCT]
#
# Each iteration traces three runs of tests/jobs/ddp_job.c through tests/jobs/launch.sh (the
# launcher the tests use) with the shim preloaded: A and B with the NCCL double's link model at
# G GB/s (NCCLDOUBLE_BW_GBPS, docs/DOUBLES.md), D at G x (1 - PCT/100): a PCT% bus-bandwidth
# loss. It compares A with B (same configuration: a regression there is a false alarm) and A
# with D (a detection when flagged), with compare's default thresholds, and keeps both JSON
# outputs. The order of B and D alternates between iterations. --load alternate (the default)
# runs every other iteration with two busy loops (one per core of a 2-core machine) for the
# whole iteration; every: all iterations; none: no added load (other users' load stays).
# --bw-gbps 0 runs the doubles without a link model (no loss can be injected then: D is
# skipped). --also BIN: the same pairs are also compared by another ncclscope (a gate before a
# change), counted apart (json-also/). --loss2 PCT: each iteration also traces E at a PCT%
# loss and counts A against E apart (the detection rate of a smaller loss). --bases K: K base runs A1..AK (compare's several-base
# mode: their spread widens the threshold), each pair compared as A1..AK against B and D; the
# single-base comparison A1 against B and D is counted too (json-single/). Prints one line per iteration and a summary; writes
# OUTDIR/summary.txt. Runs long: not part of make test.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
iters=20 out="" build="$ROOT/build" steps=20 ranks=4 bw=0.1 loss=25 load=alternate also="" bases=1 loss2=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) iters=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --bw-gbps) bw=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --also) also=$2; shift 2 ;;
    --bases) bases=$2; shift 2 ;;
    --loss2) loss2=$2; shift 2 ;;
    *) sed -n '2,23p' "$0" >&2; exit 2 ;;
  esac
done
NCS=$build/ncclscope SHIM=$build/libncclscope.so JOB=$build/tests/ddp_job
for f in "$NCS" "$SHIM" "$JOB"; do [ -e "$f" ] || { echo "compare-noise: $f not built (make)" >&2; exit 2; }; done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/compare-noise.XXXXXX")
mkdir -p "$out/json" "$out/json-also" "$out/json-single"
A=("$out/A"); for ((k = 2; k <= bases; k++)); do A+=("$out/A$k"); done
lossy=$(awk -v b="$bw" -v l="$loss" 'BEGIN { printf "%.6g", b * (1 - l / 100) }')
[ "$bw" = 0 ] && loss2=""
[ -n "$loss2" ] && lossy2=$(awk -v b="$bw" -v l="$loss2" 'BEGIN { printf "%.6g", b * (1 - l / 100) }')
hogs=()
stop_load() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; hogs=(); }
trap 'stop_load; exit 130' INT TERM
trace() { # trace DIR BW: one traced run of the job; 0 when it ran
  rm -rf "$1"
  local env=(NCCLSCOPE_DIR="$1")
  [ "$2" != 0 ] && env+=(NCCLDOUBLE_BW_GBPS="$2")
  env "${env[@]}" LD_PRELOAD="$SHIM" timeout -k 5 120 bash "$ROOT/tests/jobs/launch.sh" "$ranks" "$JOB" --steps "$steps" \
    >"$out/job.log" 2>&1
}
echo "compare-noise: $iters iterations, $bases base run(s), $ranks ranks, $steps steps, link model ${bw} GB/s, loss ${loss}% (${lossy} GB/s), load $load, $(nproc) CPUs; in $out"
same_fa=0 same_n=0 loss_hit=0 loss_n=0 failed=0 also_fa=0 also_hit=0 single_fa=0 single_hit=0 l2_hit=0 also_l2=0
for ((i = 1; i <= iters; i++)); do
  loaded=0
  case $load in every) loaded=1 ;; alternate) loaded=$((i % 2)) ;; esac
  if [ $loaded = 1 ]; then
    for c in 1 2; do ( while :; do :; done ) & hogs+=($!); done
  fi
  ok=1
  for a in "${A[@]}"; do trace "$a" "$bw" || ok=0; done
  if [ $((i % 2)) = 0 ] && [ "$bw" != 0 ]; then
    trace "$out/D" "$lossy" || ok=0; trace "$out/B" "$bw" || ok=0
  else
    trace "$out/B" "$bw" || ok=0; [ "$bw" != 0 ] && { trace "$out/D" "$lossy" || ok=0; }
  fi
  if [ -n "$loss2" ]; then trace "$out/E" "$lossy2" || ok=0; fi
  la=$(cut -d' ' -f1 /proc/loadavg)
  stop_load
  if [ $ok = 0 ]; then failed=$((failed + 1)); echo "iteration $i: a run failed (see $out/job.log)"; continue; fi
  "$NCS" compare --json "${A[@]}" "$out/B" >"$out/json/same-$i.json" 2>/dev/null
  s=$?
  same_n=$((same_n + 1)); [ $s = 1 ] && same_fa=$((same_fa + 1))
  line="iteration $i (load $loaded, loadavg $la): same-config exit $s"
  if [ "$bases" -gt 1 ]; then
    "$NCS" compare --json "$out/A" "$out/B" >"$out/json-single/same-$i.json" 2>/dev/null
    a=$?; [ $a = 1 ] && single_fa=$((single_fa + 1)); line="$line (A1 alone: $a)"
  fi
  if [ -n "$also" ]; then
    "$also" compare --json "$out/A" "$out/B" >"$out/json-also/same-$i.json" 2>/dev/null
    a=$?; [ $a = 1 ] && also_fa=$((also_fa + 1)); line="$line (also: $a)"
  fi
  if [ "$bw" != 0 ]; then
    "$NCS" compare --json "${A[@]}" "$out/D" >"$out/json/loss-$i.json" 2>/dev/null
    d=$?
    loss_n=$((loss_n + 1)); [ $d = 1 ] && loss_hit=$((loss_hit + 1))
    line="$line, ${loss}% loss exit $d"
    if [ -n "$loss2" ]; then
      "$NCS" compare --json "${A[@]}" "$out/E" >"$out/json/loss2-$i.json" 2>/dev/null
      e=$?; [ $e = 1 ] && l2_hit=$((l2_hit + 1)); line="$line, ${loss2}% loss exit $e"
      if [ -n "$also" ]; then
        "$also" compare --json "$out/A" "$out/E" >"$out/json-also/loss2-$i.json" 2>/dev/null
        a=$?; [ $a = 1 ] && also_l2=$((also_l2 + 1)); line="$line (also: $a)"
      fi
    fi
    if [ "$bases" -gt 1 ]; then
      "$NCS" compare --json "$out/A" "$out/D" >"$out/json-single/loss-$i.json" 2>/dev/null
      a=$?; [ $a = 1 ] && single_hit=$((single_hit + 1)); line="$line (A1 alone: $a)"
    fi
    if [ -n "$also" ]; then
      "$also" compare --json "$out/A" "$out/D" >"$out/json-also/loss-$i.json" 2>/dev/null
      a=$?; [ $a = 1 ] && also_hit=$((also_hit + 1)); line="$line (also: $a)"
    fi
  fi
  echo "$line"
done
stop_load
rm -rf "${A[@]}" "$out/B" "$out/D" "$out/E"
{
  echo "compare-noise: $ranks ranks, $steps steps, link model ${bw} GB/s, loss ${loss}%, load $load, $bases base run(s)"
  echo "same-configuration pairs: $same_n, flagged (false alarms): $same_fa"
  [ "$bw" != 0 ] && echo "${loss}% loss pairs: $loss_n, flagged (detections): $loss_hit"
  [ -n "$loss2" ] && echo "${loss2}% loss pairs: $loss_n, flagged (detections): $l2_hit"
  if [ "$bases" -gt 1 ]; then
    echo "the first base run alone, same pairs: false alarms $single_fa of $same_n$([ "$bw" != 0 ] && echo ", detections $single_hit of $loss_n")"
  fi
  if [ -n "$also" ]; then
    echo "$also on the same pairs: false alarms $also_fa of $same_n$([ "$bw" != 0 ] && echo ", detections $also_hit of $loss_n")$([ -n "$loss2" ] && echo ", ${loss2}%: $also_l2 of $loss_n")"
  fi
  echo "iterations with a failed run (not counted): $failed"
} | tee "$out/summary.txt"
