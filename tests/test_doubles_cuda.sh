#!/usr/bin/env bash
# test_doubles_cuda.sh — the CUDA runtime double: asynchronous streams, events with real
# elapsed times, capture and replay, error codes (tests/jobs/cuda_check.c prints the checks);
# kernels as nvcc registers and launches them, device properties (tests/jobs/kernel_check.c).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
"$J/cuda_check" 2>"$T/err" || { fail "cuda_check exited non-zero"; sed 's/^/    /' "$T/err"; }
CUDA_VISIBLE_DEVICES=1,3 "$J/cuda_check" >"$T/out" 2>&1
check_eq "CUDA_VISIBLE_DEVICES=1,3: the job still passes" 0 "$?"
cat >"$T/count.sh" <<'EOS'
"$1" 2>/dev/null | grep -c '^PASS: cuda double: cudaSetDevice out of range'
EOS
check_eq "CUDA_VISIBLE_DEVICES=1,3 means 2 devices (device 2 is out of range)" 1 \
  "$(CUDA_VISIBLE_DEVICES=1,3 bash "$T/count.sh" "$J/cuda_check")"
# nvcc-compiled programs: kernel registration and launch, device properties (kernel_check.c)
"$J/kernel_check" 2>"$T/err" || { fail "kernel_check exited non-zero"; sed 's/^/    /' "$T/err"; }
