#!/usr/bin/env bash
# test_fuzz_short.sh — the short fuzz run of every libFuzzer target (scripts/fuzz.sh) that
# `make test`, and so CI, runs each time: NCS_FUZZ_SECONDS per target (default 5; the targets
# run side by side), starting from the regression corpora; `make soak` (scripts/soak.sh) runs
# 60 s per target. A crash fails the test; the inputs are left under $BUILD/fuzz.
# SKIP when clang with libFuzzer is not installed (.ci/run installs it).
. "$(dirname "$0")/lib.sh"
secs=${NCS_FUZZ_SECONDS:-5}
if ! command -v clang >/dev/null; then skip "fuzz: clang not installed"; exit 0; fi
bash "$ROOT/scripts/fuzz.sh" "$secs" "$BUILD" >"$T/fuzz.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && ! grep -q "executions" "$T/fuzz.out"; then
  skip "fuzz: libFuzzer unavailable ($(head -1 "$T/fuzz.out"))"; exit 0
fi
for target in trace nccllog; do
  line=$(grep "^fuzz $target:" "$T/fuzz.out")
  case $line in
    *" 0 crashes"*) execs=$(sed -n 's/^fuzz [a-z]*: \([0-9]*\) executions.*/\1/p' <<<"$line")
       if [ "${execs:-0}" -gt 0 ]; then pass "fuzz $target: $line"; else fail "fuzz $target: no executions: $line"; fi ;;
    "") fail "fuzz $target: no result"; sed 's/^/    /' "$T/fuzz.out" | head -10 ;;
    *) fail "fuzz $target: $line"; grep -A4 "^fuzz $target:" "$T/fuzz.out" | sed 's/^/    /' ;;
  esac
done
