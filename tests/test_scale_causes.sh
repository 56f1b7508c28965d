#!/usr/bin/env bash
# test_scale_causes.sh — each injected cause is named first (issue 27 item 6). `ncclscope synth`
# (decoder/io/synth.c) writes a 96-rank job (12 hosts of 8) five times: healthy, and with one
# cause each, whose ranks are the truth every check compares with:
#   missing    rank 61 never enters collective 700 (the traces end there: the job was killed)
#   straggler  rank 19 enters 300 us late at half the collectives
#   slow link  host 5 (ranks 40-47) has a link 500% slower (its GPU intervals 6x as long)
#   desync     rank 31 passes twice the count at collective 402
#   all four at once (issue 27 item 2: one screen with every culprit)
# For each, doctor --json's first verdict, doctor's first verdict block, and report's first
# culprit line (its headline: the NOTE or first PROBLEM line; report --json's headline) name that
# cause and exactly those ranks; html's headline names the missing rank as the text does. The
# healthy job has none of these verdicts. Default text of report and doctor fits in 40 lines.
# With all four at once, report's first culprit lines are those four causes, each with its
# injected ranks, before any other problem line, in 40 lines; --detail keeps every rank's row.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { skip "scale causes: jq missing (scripts/deps.sh installs it)"; exit 0; }

N=96; H=12; C=1400
gen() { # NAME SYNTH-OPTIONS...
  local name=$1; shift
  "$NCS" synth -o "$T/$name" --ranks $N --hosts $H --calls $C --threads 2 "$@" >/dev/null 2>"$T/$name.synth" ||
    { fail "scale causes: synth $name failed: $(head -3 "$T/$name.synth")"; return 1; }
  "$NCS" doctor "$T/$name" >"$T/$name.doc" 2>/dev/null
  "$NCS" doctor --json "$T/$name" >"$T/$name.docj" 2>/dev/null
  "$NCS" report "$T/$name" >"$T/$name.rep" 2>"$T/$name.reperr"
  "$NCS" report --json "$T/$name" >"$T/$name.repj" 2>/dev/null
}
first_json() { jq -r '.verdicts[0] | "\(.id) \(.ranks)"' "$T/$1.docj"; }
screens() { # NAME: default text within 40 lines (stdout and stderr together, as a terminal shows them)
  local d r
  d=$(wc -l <"$T/$1.doc"); r=$(( $(wc -l <"$T/$1.rep") + $(wc -l <"$T/$1.reperr") ))
  if [ "$d" -le 40 ] && [ "$r" -le 40 ]; then pass "scale causes: $1: doctor $d lines, report $r lines (<= 40)"
  else fail "scale causes: $1: doctor $d lines, report $r lines (want <= 40 each)"; fi
}

gen healthy || exit 0
check_eq "healthy: no culprit verdict (straggler, slow-ranks, low-busbw, desync, missing-collective)" 0 \
  "$(jq '[.verdicts[] | select(.id | test("^(straggler|slow-ranks|low-busbw|desync|missing-collective|hang|dead-rank)$"))] | length' "$T/healthy.docj")"
screens healthy

gen missing --missing 61:700 || exit 0
check_eq "missing: doctor --json's first verdict is the missing collective, blaming rank 61" "missing-collective 61" "$(first_json missing)"
check_eq "missing: the verdict's data: 95 ranks entered, rank 61 missing" "95 [61]" \
  "$(jq -r '.verdicts[0].data | "\(.entered_count) \(.missing | tojson)"' "$T/missing.docj")"
check "missing: doctor's first verdict block names rank 61 as the one that had not entered" \
  bash -c "first=\$(awk '/^(PROBLEM|NOTE) /{if(n++)exit} n' '$T/missing.doc'); grep -q '^NOTE missing-collective' <<<\"\$first\" && grep -q 'not entered .* by 1 rank: 61;' <<<\"\$first\""
check "missing: report's first culprit line is the missing collective, naming rank 61" \
  bash -c "first_line=\$(sed '/^\$/q' '$T/missing.rep' | grep -m1 -E '^  (NOTE|PROBLEM) '); grep -q '^  NOTE missing-collective: .* by 1 rank: 61;' <<<\"\$first_line\""
check_eq "missing: report --json's headline names rank 61" 61 "$(jq -r '.headline.missing_collective.ranks' "$T/missing.repj")"
"$NCS" html "$T/missing" -o "$T/missing.html" 2>/dev/null
check "missing: html's headline names rank 61 as the text does" \
  bash -c "sed -n '/<section id=\"headline\"/,/<\/section>/p' '$T/missing.html' | grep -q 'missing-collective</b>: .* by 1 rank: 61;'"
screens missing

gen straggler --straggler 19:300:0.5 || exit 0
check_eq "straggler: doctor --json's first verdict is the straggler, rank 19" "straggler 19" "$(first_json straggler)"
check "straggler: doctor's first verdict block names rank 19" \
  bash -c "[[ \"\$(awk '/^(PROBLEM|NOTE) /{if(n++)exit; print; next} n&&/^  - /{print; exit}' '$T/straggler.doc')\" == *'PROBLEM straggler'*'- rank 19 (node002): last to arrive'* ]]"
check "straggler: report's first culprit line is the straggler, rank 19" \
  bash -c "sed '/^\$/q' '$T/straggler.rep' | grep -m1 -A1 -E '^  (NOTE|PROBLEM) ' | tr '\n' ' ' | grep -q '^  PROBLEM straggler: .*rank 19 (node002): last to arrive'"
check_eq "straggler: report --json's headline and verdicts name rank 19" "19 straggler" \
  "$(jq -r '"\(.headline.slowest.rank) \(.verdicts[0].id)"' "$T/straggler.repj")"
screens straggler

gen slow --slow-host 5:500 || exit 0
check_eq "slow link: doctor --json's first verdict is slow-ranks, blaming host 5's ranks 40-47" "slow-ranks 40-47" "$(first_json slow)"
check_eq "slow link: every blamed rank's host is node005" "node005" \
  "$(jq -r '[.verdicts[0].per_rank[].host] | unique | join(",")' "$T/slow.docj")"
check "slow link: doctor's first verdict block names ranks 40-47" \
  bash -c "[[ \"\$(awk '/^(PROBLEM|NOTE) /{if(n++)exit; print; next} n&&/^  - /{print; exit}' '$T/slow.doc')\" == *'PROBLEM slow-ranks'*'- ranks 40-47 (8 of 96 judged)'* ]]"
check "slow link: report's first culprit line is slow-ranks, ranks 40-47" \
  bash -c "sed '/^\$/q' '$T/slow.rep' | grep -m1 -A1 -E '^  (NOTE|PROBLEM) ' | tr '\n' ' ' | grep -q '^  PROBLEM slow-ranks: .*ranks 40-47 (8 of 96 judged)'"
check_eq "slow link: no low-busbw verdict beside it (one finding per cause)" 0 \
  "$(jq '[.verdicts[] | select(.id == "low-busbw")] | length' "$T/slow.docj")"
screens slow

gen desync --mismatch 31:402 || exit 0
check_eq "desync: doctor --json's first verdict is the desync, blaming rank 31" "desync 31" "$(first_json desync)"
check "desync: doctor's first verdict block names rank 31 as the one that differs" \
  bash -c "awk '/^(PROBLEM|NOTE) /{if(n++)exit} n' '$T/desync.doc' | grep -q 'seq 402: rank 31 (1 of 96) called AllReduce count 13107200'"
check "desync: report's first culprit line is the desync, rank 31" \
  bash -c "sed '/^\$/q' '$T/desync.rep' | grep -m1 -A1 -E '^  (NOTE|PROBLEM) ' | tr '\n' ' ' | grep -q '^  PROBLEM desync: .*seq 402: rank 31 (1 of 96)'"
screens desync

gen all --missing 61:$C --straggler 19:300:0.5 --slow-host 5:500 --mismatch 31:402 || exit 0
# the headline's NOTE/PROBLEM lines (before the first blank line), "id ranks" each, in order
culprits=$(sed '/^$/q' "$T/all.rep" | sed -n -E \
  -e 's/^  NOTE (missing-collective): .* by 1 rank: ([0-9]+);.*/\1 \2/p' \
  -e 's/^  PROBLEM (desync): .* rank ([0-9]+) \(1 of 96\).*/\1 \2/p' \
  -e 's/^  PROBLEM (straggler): rank ([0-9]+) .*/\1 \2/p' \
  -e 's/^  PROBLEM (slow-ranks): ranks ([0-9-]+) .*/\1 \2/p' \
  -e 's/^  (PROBLEM|NOTE) ([a-z-]+): .*/\2 other/p' | head -4 | sort | paste -sd, -)
check_eq "all four: report's first 4 culprit lines are the 4 injected causes with their ranks" \
  "desync 31,missing-collective 61,slow-ranks 40-47,straggler 19" "$culprits"
screens all
check_eq "all four: report --detail keeps every rank's communication row" 96 \
  "$("$NCS" report --detail "$T/all" 2>/dev/null | grep -c '^ *[0-9]\+ .*communication-bound:')"
