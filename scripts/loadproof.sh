#!/usr/bin/env bash
# loadproof.sh [COMMIT] — does a test hold under load? Runs one test script RUNS times in a row in
# a clone of COMMIT (default HEAD) while a second clone of the same commit builds (make -j2 all)
# and runs the full `make test` alongside, as a loaded CI machine or a second engineer would.
# Prints one line per run (time, load average, whether the second suite was still running, the
# run's count line), the run's FAIL lines and its "# figures: ... truth" lines (GREP), then the
# second suite's count line. Exit 0 when every run passed.
# Env: RUNS (20), TEST (test_overlap), GREP (an ERE of extra lines to show; default the
# largest-difference lines of test_overlap). Clones go under a temporary directory beside a
# `shared` link to the fixtures directory beside this checkout, removed at the end.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=$(git -C "$ROOT" rev-parse "${1:-HEAD}") || exit 2
RUNS=${RUNS:-20}
TEST=${TEST:-test_overlap}
GREP=${GREP:-'largest per-step difference|exposed share per bucket'}
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-loadproof.XXXXXX")
bg=
trap '[ -n "$bg" ] && kill -- -"$bg" 2>/dev/null; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
FX=$(cd "$ROOT/.." && pwd)/shared
[ -d "$FX" ] && ln -s "$FX" "$W/shared"
for c in proof load; do
  git clone -q "$ROOT" "$W/$c" && git -C "$W/$c" checkout -q "$COMMIT" || exit 2
done
(cd "$W/proof" && make -j2 all >/dev/null 2>&1) || { echo "loadproof: build failed" >&2; exit 2; }
set -m # the second suite in its own process group, so the trap can end it
(cd "$W/load" && make -j2 all >/dev/null 2>&1 && make test >"$W/load.log" 2>&1; echo "second suite rc=$?" >>"$W/load.log") &
bg=$!
set +m
echo "loadproof: $TEST x $RUNS at $(git -C "$ROOT" log --oneline -1 "$COMMIT" | cut -c1-60), started $(date -u +%T)"
bad=0
for i in $(seq 1 "$RUNS"); do
  r=$(cd "$W/proof" && NCS_TEST_ONLY=$TEST make test 2>&1)
  case $(echo "$r" | tail -1) in *" 0 failed"*) ;; *) bad=1 ;; esac
  echo "run $i $(date -u +%T) load=$(cut -d' ' -f1 /proc/loadavg) second-suite=$(kill -0 $bg 2>/dev/null && echo running || echo done): $(echo "$r" | tail -1)"
  echo "$r" | grep -E "^FAIL|$GREP" | sed 's/^/    /'
done
wait $bg
echo "second suite: $(grep -E 'passed, .* failed' "$W/load.log" | tail -1) ($(tail -1 "$W/load.log"))"
exit $bad
