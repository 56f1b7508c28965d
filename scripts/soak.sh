#!/usr/bin/env bash
# soak.sh [BUILD] [EXEC_RUNS] — the long forms of the suite's loops (`make soak`). `make test`
# runs each of the tests below with a few repetitions, enough to check every property once
# on a loaded 2-core machine; here each runs with its full count, the same assertions, through
# tests/run.sh (one test at a time, 3600 s limit each). Then scripts/exec-loop.sh, EXEC_RUNS
# runs (default 1000). DEVELOPERS.md ("Test times") says why.
#
#   test                 knob                    make test   soak
#   test_fault_kill9     NCS_KILL9_RUNS/_FRUNS   12 + 4      100 + 20 kills
#   test_fork_safety     NCS_FORK_RUNS           50          500 launchers per mode
#   test_env_invisible   NCS_ENV_RUNS            20          200 runs
#   test_hostile         NCS_HOSTILE_RUNS        3           12 tfork runs
#                        NCS_HOSTILE_REPEATS     2           5 lowfd and exitrace runs
#   test_fd_ownership    NCS_FDSTORM_RUNS/_MS    2 x 1 s     20 x 5 s descriptor storms
#   test_fuzz_short      NCS_FUZZ_SECONDS        5           60 s per target
#   test_html_scale      NCS_HTML_SCALE_RANKS    64 512      64 512 4096 ranks
#   test_keep            NCS_KEEP_FILL_RUNS      3           30 runs whose disk fills at the end
#
# Prints each test's lines and its "-- name: N passed, N failed, N skipped" line, then the
# total; exit 1 when anything failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
EXEC_RUNS=${2:-1000}
export NCS_TEST_TIMEOUT=${NCS_TEST_TIMEOUT:-3600}
echo "soak: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
failed=0
# one TEST ENV...: tests/TEST.sh with ENV, through tests/run.sh
one() {
  local t=$1; shift
  env "$@" NCS_TEST_ONLY="$t.sh" bash "$ROOT/tests/run.sh" "$BUILD" | grep -v '^[0-9]* passed, '
  [ "${PIPESTATUS[0]}" = 0 ] || failed=1
}
one test_fault_kill9 NCS_KILL9_RUNS=100 NCS_KILL9_FRUNS=20
one test_fork_safety NCS_FORK_RUNS=500
one test_env_invisible NCS_ENV_RUNS=200
one test_hostile NCS_HOSTILE_RUNS=12 NCS_HOSTILE_REPEATS=5
one test_fd_ownership NCS_FDSTORM_RUNS=20 NCS_FDSTORM_MS=5000
one test_fuzz_short NCS_FUZZ_SECONDS=60
one test_html_scale "NCS_HTML_SCALE_RANKS=64 512 4096"
one test_keep NCS_KEEP_FILL_RUNS=30
bash "$ROOT/scripts/exec-loop.sh" "$BUILD" "$EXEC_RUNS" || failed=1
echo "soak: $([ $failed = 0 ] && echo "nothing failed" || echo "FAILED")"
exit $failed
