#!/usr/bin/env bash
# test_doubles_nccl.sh — the NCCL double: every operation's results on 4 ranks (and 3 and 1),
# API semantics and error codes (against real NCCL 2.28.9 where it loads), asynchrony, and
# the link model's timing (jobs in tests/jobs/ print the individual PASS/FAIL lines).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
L=$ROOT/tests/jobs/launch.sh
run_job() { # NAME CMD...: pass the job's PASS/FAIL/SKIP lines through; fail if it exits non-zero
  local name=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  grep -E '^(PASS|FAIL|SKIP): ' "$T/out"
  if [ "$rc" -ne 0 ] && ! grep -q '^FAIL: ' "$T/out"; then
    fail "$name exited with status $rc"; sed 's/^/    /' "$T/err" | tail -20
  fi
}
run_job "coll_check on 4 ranks" bash "$L" 4 "$J/coll_check"
"$J/coll_check" >"$T/one" 2>&1
check_eq "coll_check on 1 rank: all checks pass" "0 0" "$? $(grep -c '^FAIL' "$T/one")"
bash "$L" 3 "$J/coll_check" >"$T/three" 2>&1
check_eq "coll_check on 3 ranks: all checks pass" "0 0" "$? $(grep -c '^FAIL' "$T/three")"
run_job api_check "$J/api_check"
NCCLDOUBLE_VERSION=22703 "$J/api_check" >"$T/v" 2>&1
check_eq "NCCLDOUBLE_VERSION=22703 changes ncclGetVersion" 1 \
  "$(grep -c '^PASS: nccl double: ncclGetVersion: 22809, or NCCLDOUBLE_VERSION' "$T/v")"
# link model: 1 MiB fp32 messages at 0.05 GB/s + 300 us: about 21 ms per operation on 2 ranks
NCCLDOUBLE_LAT_US=300 NCCLDOUBLE_BW_GBPS=0.05 run_job link_check bash "$L" 2 "$J/link_check" -c 262144
# the double reports each operation to NCCL's debug log in NCCL's COLL layout (debug.c prints)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL bash "$L" 2 "$J/ddp_job" --steps 2 >"$T/coll.log" 2>&1
check_eq "NCCL_DEBUG_SUBSYS=COLL: one line per operation (2 ranks x 2 steps x 4 all-reduces)" 16 \
  "$(grep -cE 'NCCL INFO AllReduce: opCount [0-9a-f]+ sendbuff 0x[0-9a-f]+ recvbuff 0x[0-9a-f]+ count [0-9]+ datatype (7|9) op 0 root 0 comm 0x[0-9a-f]+ \[nranks=2\] stream 0x[0-9a-f]+$' "$T/coll.log")"
check_eq "COLL lines for Send and Recv (2 ranks x 2 steps x 2) carry the peer as root" 8 \
  "$(grep -cE 'NCCL INFO (Send|Recv): opCount [0-9a-f]+ .* count 8192 datatype 7 op 0 root [01] comm' "$T/coll.log")"
# api_check calls both the real NCCL 2.28.9 and the double with a NULL communicator and outside
# a group: with NCCL_DEBUG=WARN both must print the same WARN line (file:line and text)
if grep -q '^PASS: nccl double: ncclAllReduce on a NULL communicator: same code as NCCL' "$T/v"; then
  NCCL_DEBUG=WARN "$J/api_check" >"$T/warn" 2>&1
  for pat in 'AllReduce : comm argument is NULL' 'ncclGroupEnd: not in a group call.'; do
    grep -F "NCCL WARN $pat" "$T/warn" | sed 's/^.*\] //' >"$T/wl"
    check_eq "WARN line as real NCCL prints it: $pat (printed by both, one distinct text)" "yes 1" \
      "$([ "$(wc -l <"$T/wl")" -ge 2 ] && echo yes || echo no) $(sort -u "$T/wl" | wc -l)"
  done
else
  skip "WARN lines against real NCCL: real NCCL not loadable here"
fi
