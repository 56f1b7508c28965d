#!/usr/bin/env bash
# run.sh BUILD — runs every tests/test_*.sh and every built unit test $BUILD/tests/test_*,
# counts their "PASS:", "FAIL:" and "SKIP:" lines, and ends with "N passed, N failed, N skipped".
# A test that exits non-zero without printing a FAIL line counts as one failure; a test that
# runs longer than its limit (NCS_TEST_TIMEOUT, default 300 s) is killed and counts as one; so
# does a test that leaves files on the host's /dev/shm (below).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export BUILD ROOT
limit=${NCS_TEST_TIMEOUT:-300}
only=${NCS_TEST_ONLY:-}
passed=0 failed=0 skipped=0
log=$(mktemp)
# Every test's scratch directory (lib.sh's $T, any mktemp) is made under one directory of the
# suite's own, so that what a test's processes leave on /dev/shm can be told from what other
# users of the host leave there: a rings file names its trace in its header (shm_leftovers.sh).
. "$ROOT/tests/shm_leftovers.sh"
suite_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ncs-suite.XXXXXX")
suite_since=$((EPOCHSECONDS - 1))
export TMPDIR=$suite_tmp
# shm_left NAME SINCE: after test NAME (begun at SINCE), the files its processes left on
# /dev/shm, reported as one failure and deleted: rings files of dead processes whose traces
# were under the suite's directory (lib.sh gives back those under $T; this catches the rest),
# and the NCCL double's segments made since the test began that no live process has mapped.
shm_left() {
  local left seg
  left=$(shm_leftovers "$suite_tmp" "$suite_since")
  seg=$(shm_segments "$2")
  [ -n "$seg" ] && left="$left${left:+$'\n'}$seg"
  [ -z "$left" ] && return 0
  echo "FAIL: $1 left $(printf '%s\n' "$left" | wc -l) files on /dev/shm (their processes are gone): $(printf '%s\n' "$left" | head -5 | tr '\n' ' ')"
  printf '%s\n' "$left" | while IFS= read -r d; do rm -f "$d"; done
  return 1
}
# python3 is looked up once for the whole suite: the tests call it several hundred times, and
# where python3 is a version manager's shim (pyenv's is a shell script that runs pyenv to pick
# the interpreter: about 0.5 s of CPU a call, against 0.05 s for the interpreter itself) the
# lookups alone cost minutes. The interpreter the shim picks is put first on PATH, under its
# usual name, for every test and what it runs; the same interpreter, so nothing a test checks
# changes.
pybin=
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ] &&
   [ "$(command -v python3)" != "$py" ]; then
  pybin=$(mktemp -d) && ln -s "$py" "$pybin/python3" && PATH=$pybin:$PATH && export PATH
fi
run_one() {
  local name=$1; shift
  [ -n "$only" ] && case $name in *$only*) ;; *) return ;; esac
  local start=$SECONDS since=$((EPOCHSECONDS - 1))
  echo "== $name"
  timeout -k 10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  shm_left "$name" "$since" >>"$log"
  cat "$log"
  local p f s
  p=$(grep -c '^PASS: ' "$log"); f=$(grep -c '^FAIL: ' "$log"); s=$(grep -c '^SKIP: ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: $name exited with status $rc"; f=1
  fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  echo "-- $name: $p passed, $f failed, $s skipped ($((SECONDS - start)) s)"
}
# nccl-tests' programs (nvcc: minutes on 2 cores) are built in the background from the start, so
# that the build overlaps the tests before test_nccl_tests*.sh, which wait for it on the build's
# lock (scripts/nccl-tests.sh) and then find the programs built; only when those tests can run.
prebuild=
src=${NCCL_TESTS_SRC:-$ROOT/../shared/nccl-tests}
if [ -z "${NCS_SANITIZER:-}" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && [ -r "$src/src/common.cu" ] &&
   case nccl_tests in *$only*) true ;; *) false ;; esac; then
  ( export NCCL_TESTS_SRC=$src
    nice -n 5 bash "$ROOT/scripts/nccl-tests.sh" --build-only all_reduce sendrecv alltoall hypercube &&
    nice -n 5 bash "$ROOT/scripts/nccl-tests.sh" --build-only all_gather reduce_scatter broadcast reduce gather \
      scatter alltoallv ) >/dev/null 2>&1 </dev/null &
  prebuild=$!
fi
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$ROOT"/tests/test_*.sh; do
  [ -f "$t" ] && run_one "$(basename "$t")" bash "$t"
done
[ -n "$prebuild" ] && wait "$prebuild" 2>/dev/null
rm -f "$log"
rm -rf "$suite_tmp"
[ -n "$pybin" ] && rm -rf "$pybin"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
