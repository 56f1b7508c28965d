#!/usr/bin/env bash
# test_scale_verdicts.sh — verdicts that aggregate, at scale (issue 27 items 1, 2, 6). A
# synthetic 512-rank job (decoder/io/synth.c) carries four injected causes, the truth every check
# compares with: rank 77 never enters collective 100 (the traces end there: the job was killed),
# rank 5 arrives 300 us late at half the collectives, host 40 (ranks 320-327) has a link 500%
# slower, rank 300 passes twice the count at collective 50 (a desync). Each cause must be one
# finding whose first line names the injected ranks, in text and JSON, in doctor and report;
# the 512 cut traces are one warning line; doctor's whole output and report's first screen fit
# in 40 lines (doctor; report's headline in 20 with the four causes at once, its whole text in 40
# with one: tests/test_scale_causes.sh). Then 4,096 ranks x 20 calls with rank 4000 missing: the same 40-line screens
# name rank 4000.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { skip "scale verdicts: jq missing (scripts/deps.sh installs it)"; exit 0; }

J=$T/j512
"$NCS" synth -o "$J" --ranks 512 --hosts 64 --calls 200 --threads 2 \
  --missing 77:100 --straggler 5:300:0.5 --slow-host 40:500 --mismatch 300:50 >/dev/null 2>"$T/synth.err" ||
  { fail "scale verdicts: synth failed: $(head -3 "$T/synth.err")"; exit 0; }

"$NCS" doctor "$J" >"$T/doc.txt" 2>"$T/doc.err"; drc=$?
"$NCS" doctor --json "$J" >"$T/doc.json" 2>/dev/null
"$NCS" report "$J" >"$T/rep.txt" 2>"$T/rep.err"
"$NCS" report --json "$J" >"$T/rep.json" 2>/dev/null
check_eq "scale verdicts: doctor exits 1 (desync, slow link)" 1 "$drc"
check "scale verdicts: doctor --json and report --json are valid JSON" jq -e . "$T/doc.json" "$T/rep.json"

# the missing rank: named in doctor's verdict (text and JSON) and in both first screens
check_eq "missing rank: doctor --json's missing-collective verdict blames exactly rank 77" "77 1 [77]" \
  "$(jq -r '[.verdicts[] | select(.id == "missing-collective")][0] | "\(.ranks) \(.ranks_count) \(.data.missing | tojson)"' "$T/doc.json")"
check_eq "missing rank: the verdict's data counts 511 ranks that entered" 511 \
  "$(jq '[.verdicts[] | select(.id == "missing-collective")][0].data.entered_count' "$T/doc.json")"
check "missing rank: doctor's text names rank 77 in its first verdicts, before the ranks that entered" \
  bash -c "head -20 '$T/doc.txt' | grep -q '^  - .* not entered .* by 1 rank: 77;'"
check "missing rank: report's first screen names rank 77" \
  bash -c "sed '/^\$/,\$d' '$T/rep.txt' | grep -q 'missing-collective: .* by 1 rank: 77;'"
check_eq "missing rank: report --json's headline names rank 77" 77 "$(jq -r '.headline.missing_collective.ranks' "$T/rep.json")"
check_eq "missing rank: report's straggler engine agrees (one collective entered by only some ranks)" 1 \
  "$(jq -r '.headline.incomplete' "$T/rep.json")"

# the desync: the odd rank out, not whichever file was read first
check_eq "desync: doctor --json blames rank 300 alone" "300 1" \
  "$(jq -r '[.verdicts[] | select(.id == "desync")][0] | "\(.ranks) \(.ranks_count)"' "$T/doc.json")"
check "desync: doctor's text names rank 300 as the one that differs" \
  bash -c "grep -q 'rank 300 (1 of 512) called AllReduce count 13107200' '$T/doc.txt'"

# the slow link: one slow-ranks finding (ranks far below their peers), every blamed rank on host 40
check_eq "slow link: one slow-ranks verdict (not one per rank), no low-busbw beside it" "1 0" \
  "$(jq -r '"\([.verdicts[] | select(.id == "slow-ranks")] | length) \([.verdicts[] | select(.id == "low-busbw")] | length)"' "$T/doc.json")"
check_eq "slow link: the blamed ranks are host 40's (ranks 320-327)" "320-327 8" \
  "$(jq -r '[.verdicts[] | select(.id == "slow-ranks")][0] | "\(.ranks) \(.ranks_count)"' "$T/doc.json")"
check "slow link: doctor's text names host 40's ranks first, as a range" \
  bash -c "grep -A1 'PROBLEM slow-ranks' '$T/doc.txt' | grep -Eq 'ranks 320-327 \\(8 of 512 judged\\).*worst 5: rank 32[0-7] \\(node040\\)'"

# the straggler: report's first screen names rank 5
check "straggler: report's first screen names rank 5 as slowest" bash -c "grep -q '^  slowest: rank 5 (node000)' '$T/rep.txt'"
check_eq "straggler: report --json's headline names rank 5" 5 "$(jq '.headline.slowest.rank' "$T/rep.json")"

# aggregation and the first screen
check_eq "aggregation: doctor prints one block per finding (5: desync, missing-collective, straggler, slow-ranks, comm-bound)" 5 \
  "$(grep -c '^\(PROBLEM\|NOTE\) ' "$T/doc.txt")"
check "aggregation: doctor's whole output fits in 40 lines" test "$(wc -l <"$T/doc.txt")" -le 40
check "aggregation: report's headline fits in 20 lines with four causes" test "$(sed '/^$/,$d' "$T/rep.txt" | wc -l)" -le 20
check_eq "aggregation: report warns once on stderr for the 512 cut traces" "1 1" \
  "$(grep -c 'cut short' "$T/rep.err") $(grep -c '^ncclscope: 512 traces cut short' "$T/rep.err")"
check_eq "aggregation: report's text lists the cut traces as one line of ranks" 1 \
  "$(grep -c '^  512 traces cut short .*: ranks 0-511$' "$T/rep.txt")"
"$NCS" report --detail "$J" >/dev/null 2>"$T/repd.err"
check_eq "aggregation: report --detail names each cut trace on stderr" 512 "$(grep -c 'cut short (truncated)' "$T/repd.err")"
"$NCS" doctor --detail "$J" >"$T/docd.txt" 2>/dev/null
check_eq "aggregation: doctor --detail lists each blamed rank of the slow link" \
  "$(jq '[.verdicts[] | select(.id == "slow-ranks")][0].per_rank | length' "$T/doc.json")" \
  "$(sed -n '/^PROBLEM slow-ranks/,/next step/p' "$T/docd.txt" | grep -c '^    rank 32[0-7]: host node040')"

# 4,096 ranks, a few calls each: the screens stay screens and name the missing rank
B=$T/j4096
"$NCS" synth -o "$B" --ranks 4096 --hosts 512 --calls 20 --threads 2 --missing 4000:10 >/dev/null 2>"$T/synth.err" ||
  { fail "scale verdicts: synth of 4096 ranks failed: $(head -3 "$T/synth.err")"; exit 0; }
"$NCS" doctor "$B" >"$T/doc4.txt" 2>/dev/null
"$NCS" report "$B" >"$T/rep4.txt" 2>"$T/rep4.err"
check "4096 ranks: doctor's whole output fits in 40 lines" test "$(wc -l <"$T/doc4.txt")" -le 40
check "4096 ranks: doctor names rank 4000 as the one that had not entered" \
  bash -c "grep -q '^  - .* not entered .* by 1 rank: 4000;' '$T/doc4.txt'"
check "4096 ranks: report's whole default text fits in 40 lines and names rank 4000" \
  bash -c "[ \$(wc -l <'$T/rep4.txt') -le 40 ] && grep -q 'by 1 rank: 4000;' '$T/rep4.txt'"
check_eq "4096 ranks: one stderr line for 4096 cut traces" 1 "$(grep -c 'cut short' "$T/rep4.err")"
