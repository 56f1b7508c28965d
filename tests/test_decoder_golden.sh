#!/usr/bin/env bash
# test_decoder_golden.sh — every decoder command's whole output, byte for byte, on fixed traces:
# the test writer's fixtures (test_trace_roundtrip --write), two `ncclscope synth` jobs (GPU
# times with a straggler; host times only) and committed traces of tests/corrupt-golden/. Guards
# restructurings of the decoder (issue 13: "the same traces decode to the same JSON"). A
# deliberate output change rewrites the files with NCS_UPDATE_GOLDEN=1 (review the diff).
# html's "decoded in N s" is the one figure that varies between runs; it is blanked. Timeline
# events of different ranks interleave in the order the reader threads deliver them (the
# format does not order them), so the timeline's lines are compared sorted, without their separating commas.
source "$(dirname "$0")/lib.sh"
GOLD=$ROOT/tests/golden/full
GEN=$BUILD/tests/test_trace_roundtrip
CG=$ROOT/tests/corrupt-golden
if [ ! -x "$NCS" ] || [ ! -x "$GEN" ]; then fail "decoder golden: $NCS or $GEN not built"; exit 0; fi
cd "$T" && mkdir fx && "$GEN" --write fx >/dev/null || { fail "decoder golden: fixtures"; exit 0; }
"$NCS" synth -o s1 --ranks 4 --calls 300 --straggler 2:300 --seed 5 >/dev/null &&
  "$NCS" synth -o s2 --ranks 4 --calls 200 --no-gpu --seed 7 >/dev/null || { fail "decoder golden: synth"; exit 0; }
cp "$CG"/hostile-strings.ncs "$CG"/trailing-fields.ncs "$CG"/unknown-record.ncs "$CG"/no-final.ncs fx/
mkdir -p "$GOLD"
golden() { # golden NAME CMD... : stdout, then "exit N"
  local name=$1; shift
  { timeout -k 2 60 "$@" 2>/dev/null; echo "exit $?"; } | sed 's/decoded in [0-9.]* s/decoded in N s/' >"$T/out"
  if [ "${NCS_UPDATE_GOLDEN:-}" = 1 ]; then cp "$T/out" "$GOLD/$name"; fi
  if cmp -s "$T/out" "$GOLD/$name"; then pass "golden full $name"
  else fail "golden full $name differs"; diff "$GOLD/$name" "$T/out" 2>&1 | head -10 | sed 's/^/    /'; fi
}
file_golden() { # file_golden NAME CMD... -o FILE (the command writes FILE); timeline-*: lines sorted
  local name=$1; shift
  rm -f "$T/o"; timeout -k 2 60 "$@" -o "$T/o" >/dev/null 2>&1; local rc=$?
  { case $name in timeline*) sed "s/,$//" "$T/o" 2>/dev/null | LC_ALL=C sort ;; *) cat "$T/o" 2>/dev/null ;; esac; echo "exit $rc"; } | sed 's/decoded in [0-9.]* s/decoded in N s/' >"$T/out"
  if [ "${NCS_UPDATE_GOLDEN:-}" = 1 ]; then cp "$T/out" "$GOLD/$name"; fi
  if cmp -s "$T/out" "$GOLD/$name"; then pass "golden full $name"
  else fail "golden full $name differs"; diff "$GOLD/$name" "$T/out" 2>&1 | head -10 | sed 's/^/    /'; fi
}
golden report-fx.txt "$NCS" report fx/rank0.ncs fx/rank1.ncs
golden report-fx.json "$NCS" report --json fx/rank0.ncs fx/rank1.ncs
golden report-odd.json "$NCS" report --json fx/hostile-strings.ncs fx/trailing-fields.ncs fx/unknown-record.ncs fx/no-final.ncs
golden report-s1.txt "$NCS" report s1
golden report-s1.json "$NCS" report --json s1
golden report-s2.json "$NCS" report --json s2
golden report-s1-warmup.json "$NCS" report --json --skip-warmup 5 s1
golden doctor-s1.json "$NCS" doctor --json s1
golden doctor-s2.txt "$NCS" doctor s2
golden doctor-fx.json "$NCS" doctor --json fx/rank0.ncs fx/rank1.ncs
golden compare.txt "$NCS" compare s2 s1
golden compare.json "$NCS" compare --json s2 s1
golden dump-odd.txt "$NCS" dump fx/trailing-fields.ncs fx/unknown-record.ncs
file_golden timeline-fx.json "$NCS" timeline fx/rank0.ncs fx/rank1.ncs
file_golden html-s1.html "$NCS" html s1
file_golden html-fx.html "$NCS" html fx/rank0.ncs fx/rank1.ncs
