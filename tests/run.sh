#!/usr/bin/env bash
# run.sh BUILD — runs every tests/test_*.sh and every built unit test $BUILD/tests/test_*,
# counts their "PASS:", "FAIL:" and "SKIP:" lines, and ends with "N passed, N failed, N skipped".
# A test that exits non-zero without printing a FAIL line counts as one failure; a test that
# runs longer than its limit (NCS_TEST_TIMEOUT, default 300 s; 900 s under a sanitizer, whose
# build runs 5-15 times slower: NCS_SANITIZER set) is killed and counts as one; so does a test
# that leaves files on the host's /dev/shm (below).
# Two tests run at once (NCS_TEST_JOBS, default 2; 1: one at a time): most tests wait on their
# jobs' sleeps, pacing and exits far more than they compute. Each test's lines are printed
# together when it ends, then "   cpu: C s" (its CPU time and its children's) and its
# "-- NAME: ... (N s)" line (wall seconds). Tests in $alone (those that use both cores on
# purpose) run with nothing beside them.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export BUILD ROOT
limit=${NCS_TEST_TIMEOUT:-$([ -n "${NCS_SANITIZER:-}" ] && echo 900 || echo 300)}
only=${NCS_TEST_ONLY:-}
passed=0 failed=0 skipped=0
logs=$(mktemp -d)
# Every test's scratch directory (lib.sh's $T, any mktemp) is made under one directory of the
# suite's own, so that what a test's processes leave on /dev/shm can be told from what other
# users of the host leave there: a rings file names its trace in its header (shm_leftovers.sh).
. "$ROOT/tests/shm_leftovers.sh"
suite_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ncs-suite.XXXXXX")
# shm_left NAME SINCE DIR: after test NAME (begun at SINCE, its TMPDIR DIR), the files its
# processes left on /dev/shm, reported as one failure and deleted: rings files of dead
# processes whose traces were under the test's own directory (lib.sh gives back those under
# $T; this catches the rest), and the NCCL double's segments made since the test began by its
# jobs (their names carry a tag of the test's TMPDIR: shm_leftovers.sh nd_tag) that no live
# process has mapped.
shm_left() {
  local left seg
  left=$(shm_leftovers "$3" "$2")
  seg=$(shm_segments "$2" "$3")
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
# one_test NAME CMD...: runs one test in a TMPDIR of its own under the suite's; writes its
# lines and its "-- NAME: ..." line to $logs/NAME.log and "P F S" to $logs/NAME.n.
one_test() {
  local name=$1; shift
  local start=$SECONDS since=$((EPOCHSECONDS - 1)) dir=$suite_tmp/$name.d out=$logs/$name.log
  mkdir -p "$dir"
  echo "== $name" >"$out"
  TMPDIR=$dir timeout -k 10 "$limit" "$@" >>"$out" 2>&1
  local rc=$?
  times >"$logs/$name.cpu" # this subshell's children: the test and all it ran and waited for
  shm_left "$name" "$since" "$dir" >>"$out"
  local p f s
  p=$(grep -c '^PASS: ' "$out"); f=$(grep -c '^FAIL: ' "$out"); s=$(grep -c '^SKIP: ' "$out")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: $name exited with status $rc" >>"$out"; f=1
  fi
  awk 'NR == 2 {for (i = 1; i <= 2; i++) {split($i, a, "m"); c += a[1] * 60 + a[2]}} END {printf "   cpu: %.1f s (user + sys of the test and what it ran)\n", c}' "$logs/$name.cpu" >>"$out"
  echo "-- $name: $p passed, $f failed, $s skipped ($((SECONDS - start)) s)" >>"$out"
  echo "$p $f $s" >"$logs/$name.n"
}
# Up to $jobs tests at once. running: pid -> name of the tests in flight. alone: tests that
# load the machine on purpose, test_device_clock (a busy loop per core and two more, beside
# its job) and test_fuzz_short (two fuzzers side by side, one core each), and test_scale,
# whose peak-memory bounds for the decoder's reader threads move with how they are scheduled
# (11.4 -> 14.2 MiB, over its bound, with a test beside it at load 13-16).
jobs=${NCS_TEST_JOBS:-2}
alone=" test_device_clock.sh test_fuzz_short.sh test_scale.sh "
declare -A running=()
# reap: waits for one test in flight to end, prints its lines, adds its counts.
reap() {
  local pid name p f s
  wait -n -p pid "${!running[@]}"
  name=${running[$pid]}; unset "running[$pid]"
  cat "$logs/$name.log"
  read -r p f s <"$logs/$name.n" 2>/dev/null || { p=0 f=1 s=0; echo "FAIL: $name: no result"; }
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}
run_one() {
  local name=$1
  [ -n "$only" ] && case $name in *$only*) ;; *) return ;; esac
  local lone=0 n
  case $alone in *" $name "*) lone=1 ;; esac
  for n in "${running[@]}"; do case $alone in *" $n "*) lone=1 ;; esac; done
  while [ ${#running[@]} -gt 0 ] && { [ ${#running[@]} -ge "$jobs" ] || [ $lone = 1 ]; }; do
    reap
    lone=0
    case $alone in *" $name "*) lone=1 ;; esac
  done
  one_test "$@" &
  running[$!]=$name
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
# The tests that run alone go first, one after another: nothing is running yet, so none of
# them waits for a test beside it to end while the other core idles.
for t in $alone; do
  [ -f "$ROOT/tests/$t" ] && run_one "$t" bash "$ROOT/tests/$t"
done
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
# test_nccl_tests*.sh go last: they wait for the nccl-tests programs built in the background
# (above), which then have the whole suite to finish in.
last=" test_nccl_tests.sh test_nccl_tests_sizes.sh "
for t in "$ROOT"/tests/test_*.sh; do
  case $alone$last in *" ${t##*/} "*) continue ;; esac
  [ -f "$t" ] && run_one "$(basename "$t")" bash "$t"
done
for t in $last; do
  [ -f "$ROOT/tests/$t" ] && run_one "$t" bash "$ROOT/tests/$t"
done
while [ ${#running[@]} -gt 0 ]; do reap; done
[ -n "$prebuild" ] && wait "$prebuild" 2>/dev/null
rm -rf "$logs"
rm -rf "$suite_tmp"
[ -n "$pybin" ] && rm -rf "$pybin"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
