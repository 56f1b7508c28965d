#!/usr/bin/env bash
# test_results_metrics.sh — report's metrics and gputime results read as numbers, not JSON text
# (tests/results_metrics_check.c): ddp_job on 2 ranks with its link model and CUDA-event measurement
# (per-op calls and S exact, comm_s between the model and the measurement, steps), and
# overlap_job's DDP shape on 2 ranks (kernels, NCCL kernel time, overlapped, exposed and idle
# time, exposed time per bucket position, against the job's own record of what its "GPU" ran).
source "$(dirname "$0")/lib.sh"
tsan_sites_on
J=$BUILD/tests
L=$ROOT/tests/jobs/launch.sh
CHK=$BUILD/tests/results_metrics_check
[ -x "$CHK" ] || { fail "results: $CHK not built (make units)"; exit 0; }

# job NAME ARGS...: runs ARGS on 2 ranks under the shim, traces in $T/NAME, truth in $T/NAME-truth
job() {
  local name=$1; shift
  mkdir -p "$T/$name" "$T/$name-truth"
  NCCLSCOPE_DIR=$T/$name LD_PRELOAD="$SHIM$SAN_PRELOAD" bash "$L" 2 "$@" --truth "$T/$name-truth" \
    >"$T/$name.out" 2>"$T/$name.err" || { fail "results $name: the job failed"; sed 's/^/    /' "$T/$name.err" | head; return 1; }
}
# (kernel activity off: the ddp run's communication time is its calls' GPU_TIME intervals)
if NCCLSCOPE_KERNELS=0 job ddp "$J/ddp_job" --steps 4 --compute-us 2000 --lat-us 500 --bw-gbps 1 --measure; then
  "$CHK" ddp "$T/ddp" "$T/ddp-truth"
fi
if NCCLDOUBLE_LAT_US=200 job overlap "$J/overlap_job" --mode ddp --steps 4; then
  "$CHK" overlap "$T/overlap" "$T/overlap-truth"
fi
