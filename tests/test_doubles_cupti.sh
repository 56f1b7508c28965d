#!/usr/bin/env bash
# test_doubles_cupti.sh — the CUPTI double (tests/doubles/cupti/): kernel activity records of
# the CUDA double's stream workers for compute kernels and the NCCL double's collectives, to a
# job that is its own CUPTI client (tests/jobs/overlap_job.c --other-profiler), and the
# one-subscriber rule (an injected tool holds CUPTI).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
L=$ROOT/tests/jobs/launch.sh
check "cupti double: exports every CUPTI entry point ncclscope uses" bash -c '
  for f in cuptiActivityEnable cuptiActivityDisable cuptiActivityRegisterCallbacks cuptiActivityFlushAll \
           cuptiActivityGetNextRecord cuptiActivityGetNumDroppedRecords cuptiGetTimestamp cuptiSubscribe cuptiUnsubscribe; do
    nm -D --defined-only "$1" | grep -qw "$f" || { echo "missing $f"; exit 1; }; done' _ "$DOUBLES/libcupti.so.13"
check_eq "cupti double: soname libcupti.so.13, as CUDA 13's" "libcupti.so.13" \
  "$(readelf -d "$DOUBLES/libcupti.so.13" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
# the job dlopens libcupti.so.13 itself: SAN_LIBPATH (lib.sh) keeps that the double's under a sanitizer
LD_LIBRARY_PATH=$SAN_LIBPATH NCCLDOUBLE_LAT_US=500 bash "$L" 2 "$J/overlap_job" --mode half --steps 4 --compute-us 1000 --other-profiler \
  >"$T/out" 2>"$T/err"
check_eq "cupti double: a job's own CUPTI client gets one CONCURRENT_KERNEL record per kernel, NCCL's by name (2 ranks)" \
  "2" "$(grep -c '^other-profiler kernels: 12 (nccl 4) of 12 launched$' "$T/err")"
CUDA_INJECTION64_PATH=/nonexistent/libinjected.so "$J/overlap_job" --mode serial --steps 1 --compute-us 100 --other-profiler \
  >"$T/out" 2>"$T/err"
rc=$?
check_eq "cupti double: cuptiSubscribe refused while an injected tool holds CUPTI (CUDA_INJECTION64_PATH)" "1 1" \
  "$rc $(grep -c 'could not subscribe' "$T/err")"
