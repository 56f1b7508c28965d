#!/usr/bin/env bash
# test_overlap.sh — kernel activity end to end (issue 15): overlap_job (tests/jobs/overlap_job.c)
# on 2 ranks under the shim with the CUPTI double, in four shapes with known overlap; `report
# --json` gpu_time figures against the job's own truth of the same run (asserted at any load: the
# job records the start and end its stream workers really ran each kernel, the same moments the
# CUPTI double reports, and computes its figures without the decoder, so only the clock conversion
# stands between them), the verdicts on exposed communication, doctor (its verdicts, counted
# below its headline), and the shim standing aside for another CUPTI client.
# Verdicts are checked on 1-rank runs (on 2 ranks a late peer's time shows up, as on a GPU, as
# the other rank's NCCL kernel waiting) shaped so that the figure the verdict reads is at least
# 3x away from its threshold: serial 8 ms exposed per 2 ms compute (80% vs 50%), hidden 1 ms
# of communication under 20 ms of compute (~0% exposed vs 25%), idle 16 ms of host sleep per
# 5 ms of GPU work (~75% vs 25%).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
L=$ROOT/tests/jobs/launch.sh
command -v jq >/dev/null || { skip "overlap: jq not installed"; exit 0; }

# run NAME LAT_US ARGS...: traces in $T/NAME, truth in $T/NAME/truth-rank<R>.json, report JSON
run() {
  local name=$1 lat=$2; shift 2
  mkdir -p "$T/$name"
  NCCLSCOPE_DIR=$T/$name NCCLDOUBLE_LAT_US=$lat LD_PRELOAD="$SAN_PRELOAD$SHIM" \
    bash "$L" 2 "$J/overlap_job" --truth "$T/$name" "$@" >"$T/$name.out" 2>"$T/$name.err" || {
    fail "overlap $name: job failed"; sed 's/^/    /' "$T/$name.err" | head; return 1; }
  "$NCS" report --json "$T/$name" >"$T/$name.json" 2>"$T/$name.rerr" || { fail "overlap $name: report failed"; return 1; }
}
# run1 NAME LAT_US ARGS...: the same on 1 rank
run1() {
  local name=$1 lat=$2; shift 2
  mkdir -p "$T/$name"
  NCCLSCOPE_DIR=$T/$name NCCLDOUBLE_LAT_US=$lat LD_PRELOAD="$SAN_PRELOAD$SHIM" \
    bash "$L" 1 "$J/overlap_job" --truth "$T/$name" "$@" >"$T/$name.out" 2>"$T/$name.err" || {
    fail "overlap $name: job failed"; sed 's/^/    /' "$T/$name.err" | head; return 1; }
  "$NCS" report --json "$T/$name" >"$T/$name.json" 2>"$T/$name.rerr" || { fail "overlap $name: report failed"; return 1; }
}
# truth NAME: every rank's gpu_time figures against the job's own truth of the same run (the
# intervals its stream workers really ran, tests/jobs/overlap_job.c), computed by the job without
# the decoder. Both see the very same start and end of every kernel; the only difference is the
# clock conversion (the shim moves CUPTI's clock onto CLOCK_MONOTONIC with an offset per poll,
# error at most half its tightest bracket, well under a microsecond), so they must agree to
# TRUTH_TOL_NS (20 us) on each figure at any load. The kernel counts must agree exactly.
TRUTH_TOL_NS=20000
truth() {
  local name=$1 r bad=0 out
  for r in $(jq -r '.ranks[].rank' "$T/$name.json"); do
    out=$(jq -rn --slurpfile d "$T/$name.json" --slurpfile t "$T/$name/truth-rank$r.json" --argjson r "$r" --argjson tol $TRUTH_TOL_NS '
      ($d[0].ranks[] | select(.rank == $r) | .gpu_time) as $g | $t[0] as $w |
      [["span_s","span_ns"],["busy_s","busy_ns"],["compute_s","compute_ns"],["comm_s","comm_ns"],
       ["overlapped_s","overlapped_ns"],["exposed_comm_s","exposed_ns"],["compute_only_s","compute_only_ns"],
       ["idle_s","idle_ns"]] | map(. as [$f, $tf] | {f: $f, got: ($g[$f] * 1e9 | round), want: $w[$tf]} |
       .diff = ((.got - .want) | fabs)) as $rows |
      ($rows | map("\(.f) \(.got) vs \(.want) (\(.diff) ns)") | join(", ")) as $txt |
      if ($g.kernels + $g.copies) == $w.kernels and $g.nccl_kernels == $w.nccl_kernels and ($rows | map(.diff <= $tol) | all)
      then "ok \($txt)" else "BAD kernels \($g.kernels + $g.copies)/\($g.nccl_kernels) vs \($w.kernels)/\($w.nccl_kernels), \($txt)" end') || out="BAD: no figures"
    echo "# figures: overlap $name rank $r: ${out#* }"
    case $out in ok*) ;; *) bad=1 ;; esac
  done
  [ $bad = 0 ] && [ -n "${r:-}" ]
}
check_truth() {
  if truth "$1" >"$T/$1.truth"; then pass "overlap $1: every rank's GPU-time figures equal the job's own truth of the run (within $TRUTH_TOL_NS ns; kernel counts exact)"
  else fail "overlap $1: GPU-time figures differ from the job's own truth"; fi
  cat "$T/$1.truth"
}
# parts NAME: the decoder's partition holds on every rank whatever the timing: exposed +
# overlapped = NCCL kernel time, and compute-only + overlapped + exposed + idle = the span
# (1 us of rounding).
parts() {
  jq -e '[.ranks[] | .gpu_time | ((.exposed_comm_s + .overlapped_s - .comm_s) | fabs) < 1e-6 and
         ((.compute_only_s + .overlapped_s + .exposed_comm_s + .idle_s - .span_s) | fabs) < 1e-6] | all and length == 2' \
    "$T/$1.json" >/dev/null
}
counts() { jq -r '[.ranks[] | .gpu_time | "\(.kernels)/\(.nccl_kernels)"] | join(" ")' "$T/$1.json"; }
verdicts() { jq -r '[.ranks[] | .gpu_time.verdict] | join(" ")' "$T/$1.json"; }

S=6
if run serial 8000 --mode serial --steps $S --compute-us 2000; then
  check_eq "overlap serial: one compute and one NCCL kernel per step recorded per rank" "12/6 12/6" "$(counts serial)"
  check_truth serial
  check "overlap serial: the decoder's parts add up (exposed + overlapped = NCCL time; parts = span)" parts serial
  check "overlap serial: nothing runs beside NCCL's kernels, so all NCCL time is exposed (exposed = NCCL time)" \
    jq -e '[.ranks[] | .gpu_time | .overlapped_s < 1e-6 and .exposed_comm_s > 0] | all' "$T/serial.json"
  check_eq "overlap serial: AllReduce exposed per size (4096 B bucket, 6 kernels per rank)" "6 6" \
    "$(jq -r '[.ranks[] | .gpu_time.ops.AllReduce.sizes[] | select(.bytes_min == 4096) | .kernels] | join(" ")' "$T/serial.json")"
fi
if run1 serial1 8000 --mode serial --steps $S --compute-us 2000; then
  check_eq "overlap serial (1 rank): communication-bound on exposed GPU time (8 ms exposed per 2 ms compute)" \
    "communication-bound" "$(verdicts serial1)"
  "$NCS" doctor "$T/serial1" >"$T/serial1.doc" 2>&1
  check_eq "overlap serial (1 rank): doctor comm-bound on exposed communication (kernel activity named)" 1 \
    "$(sed -n '/^ncclscope doctor:/,$p' "$T/serial1.doc" | grep -c 'exposed communication .* of GPU time .*kernel activity')"
fi
if run half 4000 --mode half --steps $S --compute-us 4000; then
  check_eq "overlap half: 3 kernels per step (two compute halves, one NCCL)" "18/6 18/6" "$(counts half)"
  check_truth half
  check "overlap half: the decoder's parts add up (exposed + overlapped = NCCL time; parts = span)" parts half
fi
if run hidden 1500 --mode hidden --steps $S --compute-us 4000; then
  check_truth hidden
  check "overlap hidden: the decoder's parts add up (exposed + overlapped = NCCL time; parts = span)" parts hidden
fi
if run1 hidden1 1000 --mode hidden --steps $S --compute-us 20000; then
  check_eq "overlap hidden (1 rank): not communication-bound, nor communication-heavy: compute-bound" \
    "compute-bound" "$(verdicts hidden1)"
  check_eq "overlap hidden (1 rank): the report's verdict is on exposed GPU time, not the window's NCCL share" \
    "exposed_gpu_time:compute-bound" \
    "$(jq -r '[.ranks[] | "\(.verdict_basis):\(.verdict)"] | join(" ")' "$T/hidden1.json")"
  "$NCS" doctor "$T/hidden1" >"$T/hidden1.doc" 2>&1
  check_eq "overlap hidden (1 rank): doctor does not call hidden communication comm-bound" 0 "$(sed -n '/^ncclscope doctor:/,$p' "$T/hidden1.doc" | grep -c '^PROBLEM comm-bound')"
fi
if run idle 1000 --mode idle --steps $S --compute-us 4000; then
  check_truth idle
  check "overlap idle: the decoder's parts add up (exposed + overlapped = NCCL time; parts = span)" parts idle
  "$NCS" report "$T/idle" >"$T/idle.txt" 2>&1
  check_eq "overlap idle: text report has the GPU time section with both ranks" 2 \
    "$(sed -n '/^GPU time/,/^$/p' "$T/idle.txt" | grep -c ': exposed communication .* in NCCL kernels')"
fi
if run1 idle1 1000 --mode idle --steps $S --compute-us 4000 --idle-us 16000; then
  check_eq "overlap idle (1 rank): an idle GPU between steps is its own verdict" "gpu-idle" "$(verdicts idle1)"
  "$NCS" doctor "$T/idle1" >"$T/idle1.doc" 2>&1
  check_eq "overlap idle (1 rank): doctor gpu-idle, with the rank's evidence line" 1 "$(sed -n '/^ncclscope doctor:/,$p' "$T/idle1.doc" | grep -c 'GPU idle .* between its first and last kernel')"
fi

# the shim stands aside for another CUPTI client, and says so
state() { jq -r '[.ranks[] | "\(.gpu_time.source):\(.gpu_time.state)"] | join(" ")' "$T/$1.json"; }
if run ownprof 500 --mode half --steps 3 --compute-us 1000 --other-profiler; then
  check_eq "overlap: the job's own CUPTI profiler got every kernel record while the shim stood aside" 2 \
    "$(grep -c '^other-profiler kernels: 9 (nccl 3) of 9 launched$' "$T/ownprof.err")"
  check_eq "overlap: stood aside for the job's own CUPTI client (no kernels, state stood_aside)" \
    "none:stood_aside none:stood_aside" "$(state ownprof)"
  check_eq "overlap: without kernel activity the report labels its figures estimates and says why" 2 \
    "$(jq -r '.ranks[] | select(.gpu_time.estimates == ["compute_to_comm", "verdict"]) | .gpu_time.reason' "$T/ownprof.json" | grep -c 'another CUPTI client')"
fi
mkdir -p "$T/inj"
if CUDA_INJECTION64_PATH=/nonexistent/libinjection.so run inj 500 --mode serial --steps 2 --compute-us 500; then
  check_eq "overlap: stood aside for an injected CUDA tool (CUDA_INJECTION64_PATH)" 2 \
    "$(jq -r '.ranks[] | select(.gpu_time.state == "stood_aside") | .gpu_time.reason' "$T/inj.json" | grep -c CUDA_INJECTION64_PATH)"
fi
if NCCLSCOPE_KERNELS=0 run off 500 --mode serial --steps 2 --compute-us 500; then
  check_eq "overlap: NCCLSCOPE_KERNELS=0 turns kernel activity off, and says so" "none:off none:off" "$(state off)"
  "$NCS" report --detail "$T/off" >"$T/off.txt" 2>&1
  check_eq "overlap: text report says the figures are estimates without kernel activity" 2 \
    "$(grep -c 'no kernel activity (NCCLSCOPE_KERNELS=0): compute/comm and the verdict above are estimates' "$T/off.txt")"
fi
# a CUDA runtime with no libcupti beside it: the shim falls back to the soname (on a machine
# with CUDA 13 installed that is the real libcupti, which fails without a driver) or finds none;
# either way kernel activity is off with its reason, and the job is unharmed
mkdir -p "$T/nocupti/tests" "$T/nocupti/doubles"
cp "$J/overlap_job" "$T/nocupti/tests/"
cp "$DOUBLES/libcudart.so.13" "$DOUBLES/libnccl.so.2" "$T/nocupti/doubles/"
J=$T/nocupti/tests
if run nocupti 500 --mode serial --steps 2 --compute-us 500; then
  check_eq "overlap: no libcupti beside the job's CUDA runtime (real CUPTI by soname, or none): off, with the reason" 2 \
    "$(jq -r '.ranks[] | select(.gpu_time.state == "off") | .gpu_time.reason' "$T/nocupti.json" | grep -cE '^(no libcupti beside the CUDA runtime|cupti[A-Za-z]+(\(CONCURRENT_KERNEL\))? failed \([0-9]+\))$')"
fi
