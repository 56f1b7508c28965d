#!/usr/bin/env bash
# trace-sweep.sh [-s STRIDE] [FILE...] — tests/fuzz/sweep.c over real traces: every cut length,
# every byte flipped (checksums refit, and not), concatenations, each read by the trace reader
# built with ASan + UBSan (docs/RELIABILITY.md "The decoder under hostile input"). Default
# files: the golden traces of every format (tests/golden/traces/*/rank*.ncs). Builds into
# ${BUILD:-build}/sweep; exit 1 on a breach of the reader's contract or a sanitizer report.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
args=()
[ "${1:-}" = -s ] && { args=(-s "$2"); shift 2; }
[ $# -gt 0 ] || set -- "$ROOT"/tests/golden/traces/*/rank*.ncs
mkdir -p "$BUILD"
${CC:-cc} -std=c11 -O1 -g -D_GNU_SOURCE -fsanitize=address,undefined -fno-sanitize-recover=undefined \
  -fno-omit-frame-pointer -I"$ROOT/include" -I"$ROOT/decoder" -o "$BUILD/sweep" "$ROOT/tests/fuzz/sweep.c" \
  "$ROOT"/decoder/io/{trace,regfile,recover,readcount}.c -lzstd -lm -lpthread || exit 2
ASAN_OPTIONS=detect_leaks=1 "$BUILD/sweep" "${args[@]}" "$@"
