#!/usr/bin/env bash
# test_demo.sh — `make demo`'s story (scripts/demo.sh) on the doubles: at most 80 lines; the
# healthy NVSwitch run says NVLink was used and fires no transport verdict; the run with
# NCCL_P2P_DISABLE=1 is named broken (doctor exit 1, nvlink-unused, the variable responsible);
# compare fails it as a regression. The healthy run is healthy (doctor exit 0): its GPU figures
# come from the doubles' device clock, not the machine's load (docs/DOUBLES.md), and its timing
# verdicts read kernel activity.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "demo: not built"; exit 0; fi
DEMO_DIR=$T/demo bash "$ROOT/scripts/demo.sh" "$BUILD" >"$T/demo.txt" 2>&1
check_eq "demo: exits 0" 0 "$?"
n=$(wc -l <"$T/demo.txt")
check "demo: at most 80 lines ($n)" test "$n" -le 80
check_eq "demo: no compiler output" 0 "$(grep -cE '^(cc|gcc) |warning:' "$T/demo.txt")"
check "demo: the healthy run's headline says NVLink was used" grep -q 'NVLink in the box and NCCL used it' "$T/demo.txt"
check_eq "demo: the healthy run fires no transport verdict" 0 \
  "$(grep -cE '^PROBLEM (nvlink-unused|no-nvlink|socket-not-ib)' "$T/demo/nvlink-doctor.txt")"
check "demo: the healthy run is healthy (doctor exit 0)" grep -q '^(ncclscope doctor: exit status 0' "$T/demo.txt"
check "demo: the broken run is named: nvlink-unused" grep -q '^PROBLEM nvlink-unused' "$T/demo.txt"
check "demo: the broken run names the variable responsible" grep -qE '(why|next step): NCCL_P2P_DISABLE is set' "$T/demo.txt"
check "demo: doctor exits 1 on the broken run" grep -q '^(doctor exit status 1' "$T/demo.txt"
check "demo: compare fails the broken run (exit 1)" grep -q '^(compare exit status 1' "$T/demo.txt"
check "demo: HTML report and timeline written" test -s "$T/demo/report.html" -a -s "$T/demo/timeline.json"
