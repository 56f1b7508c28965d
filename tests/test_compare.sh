#!/usr/bin/env bash
# test_compare.sh — `ncclscope compare BASE NEW` (decoder/cmd/compare.c), the CI gate: runs of the
# same configuration with run-to-run noise are not flagged (exit 0), a 30% bandwidth loss is
# (exit 1), losing NVLink-class P2P for SHM always is, bad usage exits 2, unreadable input 4, and --json /
# --markdown are well formed. Traces from `synth` with 10% per-collective noise and 20 us
# arrival jitter (docs/COMPARE.md).
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "compare: $NCS not built"; exit 0; fi
gen() { "$NCS" synth -o "$T/$1" --ranks 8 --hosts 1 --calls 1000 --noise 10 --jitter-us 20 --seed "$2" "${@:3}" >/dev/null 2>&1; }
for s in 1 2 3 4; do gen "r$s" "$s"; done
flagged=0
for p in "1 2" "3 4" "2 3" "4 1"; do
  set -- $p
  "$NCS" compare "$T/r$1" "$T/r$2" >"$T/same.txt" 2>&1 || { flagged=$((flagged+1)); sed 's/^/    /' "$T/same.txt" | tail -4; }
done
check_eq "compare: 4 pairs of same-configuration runs (different seeds) are not flagged" 0 "$flagged"
gen slow 9 --slow 30
"$NCS" compare "$T/r1" "$T/slow" >"$T/slow.txt" 2>&1
check_eq "compare: a 30% bandwidth loss exits 1" 1 "$?"
check "compare: ... and the large all-reduce row says REGRESSION" grep -qE 'AllReduce +16 MiB.*REGRESSION' "$T/slow.txt"
gen shm 10 --transport SHM
"$NCS" compare "$T/r1" "$T/shm" >"$T/shm.txt" 2>&1
check_eq "compare: P2P -> SHM exits 1" 1 "$?"
check "compare: ... reported as lost NVLink-class transport" grep -q 'P2P -> SHM.*lost NVLink' "$T/shm.txt"
"$NCS" compare "$T/shm" "$T/r1" >/dev/null 2>&1
check_eq "compare: SHM -> P2P (an improvement) is not a regression" 0 "$?"
"$NCS" compare --busbw-drop 50 --time-rise 50 --share-rise 50 "$T/r1" "$T/slow" >/dev/null 2>&1
check_eq "compare: thresholds are flags (50% tolerates a 30% loss)" 0 "$?"
"$NCS" compare --json "$T/r1" "$T/slow" >"$T/c.json" 2>/dev/null
check_eq "compare: --json is valid, says regression" "regression" \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$T/c.json" 2>&1)"
"$NCS" compare --markdown "$T/r1" "$T/r2" >"$T/c.md" 2>/dev/null
check "compare: --markdown has a table" grep -q '^|---|' "$T/c.md"
"$NCS" compare "$T/r1" "$T/nonexistent" >/dev/null 2>&1
check_eq "compare: a missing run exits 4 (unreadable)" 4 "$?"
printf 'not a trace' >"$T/junk.ncs"
"$NCS" compare "$T/r1" "$T/junk.ncs" >/dev/null 2>&1
check_eq "compare: an unreadable trace exits 4" 4 "$?"
"$NCS" compare "$T/r1" >/dev/null 2>&1
check_eq "compare: one argument is bad usage (2)" 2 "$?"
# Several base runs: the median is the base, their spread widens each row's tolerance.
"$NCS" compare "$T/r1" "$T/r2" "$T/r3" "$T/r4" >"$T/m.txt" 2>&1
check_eq "compare: three base runs and a fourth same-configuration run pass" 0 "$?"
"$NCS" compare "$T/r1" "$T/r2" "$T/r3" "$T/slow" >/dev/null 2>&1
check_eq "compare: three base runs, a 30% slower run fails" 1 "$?"
gen s20 11 --slow 20
"$NCS" compare "$T/r1" "$T/s20" "$T/slow" >"$T/w.txt" 2>&1
check "compare: one base run: the 16 MiB all-reduce of the 30% run is a regression" grep -qE 'AllReduce +16 MiB.*REGRESSION' "$T/slow.txt"
check "compare: base runs that themselves differ by 20%: the same row is within tolerance (2 x spread)" \
  sh -c "grep -E 'AllReduce +16 MiB' '$T/w.txt' | grep -vq REGRESSION"
check "compare: ... and the output says how the base was formed" grep -q '2 base runs: their calls are pooled' "$T/w.txt"
