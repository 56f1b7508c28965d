#!/usr/bin/env bash
# fuzz.sh [SECONDS] [BUILD] — a short libFuzzer run of every fuzz target (tests/fuzz/fuzz_*.c):
# the trace reader (decoder/io/trace.c) and the NCCL log parser (decoder/io/nccllog.c).
#
# Builds each target with clang -fsanitize=fuzzer,address,undefined into BUILD/fuzz/ (again
# only when a source under tests/fuzz/, decoder/ or include/ is newer than the binary), starts
# from a copy of its regression corpus (tests/fuzz/corpus/TARGET/; the copy grows, the
# repository's corpus does not), runs SECONDS (default 60) per target, the targets side by side
# on one core each, and prints
# one line per target: "fuzz TARGET: N executions in S s, C crashes, corpus K files". Crash
# inputs are left in BUILD/fuzz/crash-TARGET-*; add them (after the fix) to the regression
# corpus, which tests/test_fuzz_replay.sh replays in `make test`. Exit 1 when any crashed,
# 2 when clang or libFuzzer is missing.
#
# fuzz.sh --build-only [BUILD]: only builds the targets (exit 0, or 2 when one does not build);
# tests/test_fuzz_replay.sh replays the regression corpora with them, and the fuzz run that
# follows finds them built.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; set -- 0 "$@"; fi
SECS=${1:-60}
BUILD=${2:-${BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CLANG=${CLANG:-clang}
OUT=$BUILD/fuzz
mkdir -p "$OUT"
command -v "$CLANG" >/dev/null || { echo "fuzz.sh: $CLANG not found (apt-get install clang)" >&2; exit 2; }

declare -A SRC=([trace]="decoder/io/trace.c decoder/io/regfile.c decoder/io/recover.c decoder/io/readcount.c decoder/base/settings.c" [nccllog]="decoder/io/nccllog.c")
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$ROOT/include -I$ROOT/decoder"
# fuzz_one TARGET: builds and runs one target, its summary line in OUT/result-TARGET; exit 0 ok,
# 1 crashed, 2 build failed. The targets run side by side, one core each.
fuzz_one() {
  local target=$1 bin=$OUT/fuzz_$1 srcs="" s res=$OUT/result-$1
  for s in ${SRC[$target]}; do srcs="$srcs $ROOT/$s"; done
  # built again when a source or header it may include is newer than the binary
  if { [ ! -x "$bin" ] || [ -n "$(find "$ROOT/tests/fuzz" "$ROOT/decoder" "$ROOT/include" -newer "$bin" \
         -name '*.[ch]' -print -quit 2>/dev/null)" ]; } &&
     ! $CLANG $flags -o "$bin" "$ROOT/tests/fuzz/fuzz_$target.c" $srcs -lzstd -lm 2>"$OUT/build-$target.log"; then
    rm -f "$bin"
    echo "fuzz $target: build failed (see $OUT/build-$target.log)" >"$res"; return 2
  fi
  [ "$build_only" = 1 ] && { echo "fuzz $target: built $bin" >"$res"; return 0; }
  local corpus=$OUT/corpus-$target
  mkdir -p "$corpus"
  cp -n "$ROOT/tests/fuzz/corpus/$target"/* "$corpus"/ 2>/dev/null
  local before after rc execs secs crashes
  before=$(ls "$OUT" | grep -c "^crash-$target-")
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$bin" "$corpus" -max_total_time="$SECS" \
    -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$OUT/crash-$target-" >"$OUT/run-$target.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/run-$target.log" | tail -1)
  secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/run-$target.log" | tail -1)
  after=$(ls "$OUT" | grep -c "^crash-$target-\|^timeout-$target-\|^oom-$target-")
  crashes=$((after - before))
  [ $rc -ne 0 ] && [ $crashes -eq 0 ] && crashes=1
  echo "fuzz $target: ${execs:-0} executions in $SECS s (${secs:-0}/s), $crashes crashes, corpus $(ls "$corpus" | wc -l) files" >"$res"
  if [ $crashes -ne 0 ]; then
    grep -m5 -E 'ERROR|SUMMARY|decoder/' "$OUT/run-$target.log" | sed 's/^/    /' >>"$res"
    ls "$OUT" | grep "^crash-$target-" | tail -3 | sed "s|^|    $OUT/|" >>"$res"
    return 1
  fi
}
status=0 pids=()
for target in trace nccllog; do fuzz_one "$target" & pids+=($!); done
for p in "${pids[@]}"; do
  wait "$p"; rc=$?
  # a crash (1) outranks a build failure (2): the caller must see it
  if [ $rc = 1 ] || { [ $rc = 2 ] && [ $status = 0 ]; }; then status=$rc; fi
done
cat "$OUT/result-trace" "$OUT/result-nccllog"
exit $status
