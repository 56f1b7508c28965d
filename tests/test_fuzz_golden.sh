#!/usr/bin/env bash
# test_fuzz_golden.sh — the golden corrupt inputs (tests/corrupt-golden/, MANIFEST) against
# the trace reader (ncs_trace_read via tests/fuzz/golden_check.c) and `ncclscope report`:
# each must give the outcome in MANIFEST (ok / truncated / damaged at the stated offset /
# not a trace), with a message naming the file and offset, within 10 s and 1 GiB.
source "$(dirname "$0")/lib.sh"
G=$ROOT/tests/corrupt-golden
DECLIB=$BUILD/libncsdecoder.a
LIMIT_KB=1048576
# Sanitizer builds (make asan / tsan): link the checker with the same runtime; those runtimes
# reserve terabytes of address space, so the memory bound cannot be checked there.
SANF=
if nm "$DECLIB" 2>/dev/null | grep -q ' U __asan_'; then SANF="-fsanitize=address,undefined"; LIMIT_KB=unlimited
elif nm "$DECLIB" 2>/dev/null | grep -q ' U __tsan_'; then SANF="-fsanitize=thread"; LIMIT_KB=unlimited; fi
[ "$LIMIT_KB" = unlimited ] && skip "golden corrupt inputs: memory bound (ulimit -v) not checked in a sanitizer build"

if [ ! -f "$DECLIB" ]; then
  skip "golden corrupt inputs: $DECLIB not built"
else
  if ! cc -std=c11 -O1 -g -D_GNU_SOURCE $SANF -I"$ROOT/include" -I"$ROOT/decoder" -o "$T/golden_check" \
      "$ROOT/tests/fuzz/golden_check.c" "$DECLIB" -lzstd -lm -lpthread 2>"$T/cc.err"; then
    fail "golden_check builds"; sed 's/^/    /' "$T/cc.err" | head
  else
    while read -r file outcome off; do
      case $file in ''|\#*) continue ;; esac
      line=$( (ulimit -v $LIMIT_KB; timeout -k 2 10 "$T/golden_check" "$G/$file") 2>&1)
      rc=$?
      name="reader $file: $outcome"
      if [ $rc -ne 0 ]; then fail "$name: checker exited $rc (crash, hang or memory): $line"; continue; fi
      get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
      err=${line#*error=}
      case $outcome in
        ok) [ "$(get rc)" = 0 ] && [ "$(get truncated)" = 0 ] && [ "$(get damaged)" = 0 ] && [ "$(get final)" = 1 ] \
              && pass "$name" || fail "$name: $line" ;;
        closed) [ "$(get rc)" = 0 ] && [ "$(get truncated)" = 0 ] && [ "$(get damaged)" = 0 ] && [ "$(get final)" = 0 ] \
              && pass "$name (complete: no final chunk, every communicator closed)" || fail "$name: $line" ;;
        truncated) [ "$(get rc)" = 0 ] && [ "$(get truncated)" = 1 ] && [ "$(get damaged)" = 0 ] \
              && [[ $err == *"$file"*offset* ]] && pass "$name" || fail "$name: $line" ;;
        damaged) [ "$(get rc)" = 1 ] && [ "$(get damaged)" = 1 ] && [ "$(get offset)" = "$off" ] \
              && [[ $err == *"$file: offset $off"* ]] && pass "$name at offset $off" || fail "$name (offset $off): $line" ;;
        notrace) [ "$(get rc)" = 2 ] && [[ $err == *"$file"* ]] && pass "$name" || fail "$name: $line" ;;
        *) fail "$name: unknown outcome in MANIFEST" ;;
      esac
    done <"$G/MANIFEST"
  fi
fi

# The command line: exit code (decoder/cmd/commands.h: 0 ok, a cut trace included with its
# warning; 3 damaged; 4 unreadable or not a trace), a message naming
# the file and offset on stderr, bounded time and memory.
if [ ! -x "$NCS" ]; then
  skip "golden corrupt inputs via ncclscope report: $NCS not built"
  exit 0
fi
while read -r file outcome off; do
  case $file in ''|\#*) continue ;; esac
  (ulimit -v $LIMIT_KB; timeout -k 2 10 "$NCS" report "$G/$file") >"$T/out" 2>"$T/err"
  rc=$?
  name="report $file: $outcome"
  all=$(cat "$T/out" "$T/err")
  case $outcome in
    ok|closed) [ $rc -eq 0 ] && pass "$name" || fail "$name: exit $rc: $(head -c 300 "$T/err")" ;;
    truncated) [ $rc -eq 0 ] && grep -qi "$file.*truncated" <<<"$all" && pass "$name (exit 0, says truncated)" \
        || fail "$name: exit $rc, output: $(head -c 300 <<<"$all")" ;;
    damaged) [ $rc -eq 3 ] && grep -q "$file.*offset $off" "$T/err" && pass "$name (exit 3, offset $off)" \
        || fail "$name: exit $rc, stderr: $(head -c 300 "$T/err")" ;;
    notrace) [ $rc -eq 4 ] && grep -q "$file" "$T/err" && pass "$name (exit 4)" \
        || fail "$name: exit $rc, stderr: $(head -c 300 "$T/err")" ;;
  esac
done <"$G/MANIFEST"
