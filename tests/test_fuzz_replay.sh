#!/usr/bin/env bash
# test_fuzz_replay.sh — replays the fuzz regression corpora (tests/fuzz/corpus/<target>/) through
# the libFuzzer entry points: with clang's libFuzzer build when there is one, else with
# tests/fuzz/replay.c, built with plain cc (no libFuzzer needed). Either way, when the compiler
# supports it, the decoder sources are compiled with -fsanitize=address,undefined so an
# out-of-bounds read fails the test, not just a crash.
source "$(dirname "$0")/lib.sh"
C=$ROOT/tests/fuzz/corpus
CC=${CC:-cc}
declare -A SRC=([trace]="decoder/io/trace.c decoder/io/regfile.c decoder/io/recover.c decoder/io/readcount.c decoder/base/settings.c" [nccllog]="decoder/io/nccllog.c")

# With clang and libFuzzer, the corpora are replayed by the libFuzzer targets themselves
# (scripts/fuzz.sh --build-only: ASan+UBSan built in, kept in BUILD/fuzz/): given files, libFuzzer
# runs each once ("Executed FILE") and fuzzes nothing. test_fuzz_short then finds them built, so
# a fresh clone compiles the decoder with the sanitizers once, not twice. Without clang, or when
# its build fails, the replay program below, built with cc.
if command -v clang >/dev/null && bash "$ROOT/scripts/fuzz.sh" --build-only "$BUILD" >"$T/fb.out" 2>&1; then
  for target in trace nccllog; do
    mapfile -t files < <(find "$C/$target" -type f | sort)
    if ASAN_OPTIONS=detect_leaks=0 timeout -k 5 120 "$BUILD/fuzz/fuzz_$target" "${files[@]}" >"$T/out" 2>&1; then
      check_eq "fuzz replay $target: every file of the corpus replayed (libFuzzer build, ASan+UBSan)" \
        "${#files[@]}" "$(grep -c '^Executed ' "$T/out")"
    else
      fail "fuzz replay $target: crashed on $(grep '^Running: ' "$T/out" | tail -1 | cut -d' ' -f2-)"
      grep -m4 -E 'ERROR|SUMMARY|decoder/' "$T/out" | sed 's/^/    /'
    fi
  done
  exit 0
fi

# The replay programs are kept in BUILD/fuzz-replay/ and built again only when a source under
# tests/fuzz/, decoder/ or include/ is newer, or the flags changed.
B=$BUILD/fuzz-replay
mkdir -p "$B"
san=""
echo 'int main(void){return 0;}' >"$T/t.c"
if $CC -fsanitize=address,undefined -o "$T/t" "$T/t.c" 2>/dev/null && "$T/t" 2>/dev/null; then
  san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
fi
for target in trace nccllog; do
  srcs=""
  for s in ${SRC[$target]}; do [ -f "$ROOT/$s" ] && srcs="$srcs $ROOT/$s"; done
  if [ -z "$srcs" ]; then skip "fuzz replay $target: ${SRC[$target]} not written yet"; continue; fi
  bin=$B/replay_$target
  srcs=()
  for s in ${SRC[$target]}; do [ -f "$ROOT/$s" ] && srcs+=("$ROOT/$s"); done
  cc=($CC -std=c11 -O1 -g -D_GNU_SOURCE $san -I"$ROOT/include" -I"$ROOT/decoder" "$ROOT/tests/fuzz/fuzz_$target.c"
      "$ROOT/tests/fuzz/replay.c" "${srcs[@]}" -lzstd -lm -lpthread)
  cmd="${cc[*]}"
  if [ ! -x "$bin" ] || [ "$(cat "$bin.cmd" 2>/dev/null)" != "$cmd" ] ||
     [ -n "$(find "$ROOT/tests/fuzz" "$ROOT/decoder" "$ROOT/include" -newer "$bin" -name '*.[ch]' -print -quit)" ]; then
    if ! "${cc[@]}" -o "$bin.tmp.$$" 2>"$T/cc.err"; then
      rm -f "$bin.tmp.$$"; fail "fuzz replay $target builds"; sed 's/^/    /' "$T/cc.err" | head; continue
    fi
    mv "$bin.tmp.$$" "$bin" && echo "$cmd" >"$bin.cmd"
  fi
  n=$(find "$C/$target" -type f | wc -l)
  if ASAN_OPTIONS=detect_leaks=0 timeout -k 5 120 "$bin" "$C/$target" >"$T/out" 2>"$T/err"; then
    pass "fuzz replay $target: $(cat "$T/out") of $n${san:+ (ASan+UBSan)}"
  else
    fail "fuzz replay $target: crashed on $(grep '^replay ' "$T/err" | tail -1 | cut -d' ' -f2-)"
    grep -v '^replay ' "$T/err" | grep -m4 -E 'ERROR|SUMMARY|decoder/' | sed 's/^/    /'
  fi
done
