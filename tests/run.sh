#!/usr/bin/env bash
# run.sh BUILD — runs every tests/test_*.sh and every built unit test $BUILD/tests/test_*,
# counts their "PASS:", "FAIL:" and "SKIP:" lines, and ends with "N passed, N failed, N skipped".
# A test that exits non-zero without printing a FAIL line counts as one failure; a test that
# runs longer than its limit (NCS_TEST_TIMEOUT, default 300 s) is killed and counts as one.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export BUILD ROOT
limit=${NCS_TEST_TIMEOUT:-300}
only=${NCS_TEST_ONLY:-}
passed=0 failed=0 skipped=0
log=$(mktemp)
run_one() {
  local name=$1; shift
  [ -n "$only" ] && case $name in *$only*) ;; *) return ;; esac
  local start=$SECONDS
  echo "== $name"
  timeout -k 10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  cat "$log"
  local p f s
  p=$(grep -c '^PASS: ' "$log"); f=$(grep -c '^FAIL: ' "$log"); s=$(grep -c '^SKIP: ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: $name exited with status $rc"; f=1
  fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  echo "-- $name: $p passed, $f failed, $s skipped ($((SECONDS - start)) s)"
}
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$ROOT"/tests/test_*.sh; do
  [ -f "$t" ] && run_one "$(basename "$t")" bash "$t"
done
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
