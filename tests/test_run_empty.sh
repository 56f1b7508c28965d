#!/usr/bin/env bash
# test_run_empty.sh — `ncclscope run` ends with one line on stderr when nothing was traced
# (issue 25 item 6; decoder/cmd/run.c): a job that never calls NCCL (/bin/true: its source is
# the truth), a trace directory that cannot be used (under /proc: nothing can be created there),
# NCCLSCOPE_DISABLE=1; and no such line when the job traced (fault_job 1: one trace). The job's
# exit status passes through.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "run_empty"; need_decoder "run_empty"; need_double "run_empty"
fault_build || { fail "run_empty: test programs build"; exit 0; }
last() { tail -1 "$1"; }
"$NCS" run -o "$T/none" -- /bin/true 2>"$T/none.err"
check_eq "run_empty: /bin/true exit status" 0 "$?"
check "run_empty: no NCCL: the last stderr line says no process called NCCL" grep -q "no process of the job called NCCL" <(last "$T/none.err")
"$NCS" run -o "$T/none" -- sh -c 'exit 3' 2>/dev/null
check_eq "run_empty: the job's exit status passes through" 3 "$?"
"$NCS" run -o /proc/ncclscope-none/x -- "$FJOB" 1 >"$T/proc.out" 2>"$T/proc.err"
check_eq "run_empty: unusable directory: the job still runs (exit 0)" 0 "$?"
check "run_empty: unusable directory: the last stderr line says it cannot be used" grep -q "trace directory /proc/ncclscope-none/x cannot be used" <(last "$T/proc.err")
NCCLSCOPE_DISABLE=1 "$NCS" run -o "$T/off" -- "$FJOB" 1 >/dev/null 2>"$T/off.err"
check "run_empty: NCCLSCOPE_DISABLE=1: the last stderr line says so" grep -q "NCCLSCOPE_DISABLE=1" <(last "$T/off.err")
"$NCS" run -o "$T/ok" -- "$FJOB" 1 >/dev/null 2>"$T/ok.err"
check_eq "run_empty: a traced job: one trace file" 1 "$(find "$T/ok" -name '*.ncs' | wc -l)"
check_eq "run_empty: a traced job: no 'nothing traced' line" "" "$(grep -E 'no trace in|nothing was traced' "$T/ok.err")"
