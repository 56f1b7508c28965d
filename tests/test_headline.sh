#!/usr/bin/env bash
# test_headline.sh — the job's answer comes first and is the same everywhere (docs/METRICS.md):
# `report` starts with the headline (share, ratio, transports vs topology, slowest rank,
# problems), its JSON has "headline"; the communication share is the same figure in report's
# headline and per-rank table, doctor, html and compare; message-size rows are nccl-tests' S in
# report and compare; a 64-rank job's default report fits in 60 lines (--detail has every rank).
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "headline: not built"; exit 0; fi
if ! command -v jq >/dev/null; then skip "headline: jq not installed"; exit 0; fi
"$NCS" synth -o "$T/s64" --ranks 64 --hosts 8 --calls 400 >/dev/null 2>&1
"$NCS" report "$T/s64" >"$T/r.txt" 2>/dev/null
check "headline: report starts with the job's answer" sh -c "head -1 '$T/r.txt' | grep -q '^ncclscope: 64 ranks'"
n=$(wc -l <"$T/r.txt")
check "headline: 64 ranks in under 60 lines by default ($n)" test "$n" -lt 60
"$NCS" report --detail "$T/s64" >"$T/rd.txt" 2>/dev/null
check "headline: --detail shows every rank's section" test "$(grep -c '^rank ' "$T/rd.txt")" -eq 64

# A healthy NVSwitch job and the same with NCCL_P2P_DISABLE=1 (the demo's pair), on the doubles.
export LD_LIBRARY_PATH=$DOUBLES NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
JOB=(bash "$ROOT/tests/jobs/launch.sh" 4 "$BUILD/tests/ddp_job" --steps 12 --compute-us 2000 --lat-us 30 --bw-gbps 20)
"$NCS" run -o "$T/ok" -- "${JOB[@]}" >/dev/null 2>&1
NCCL_P2P_DISABLE=1 "$NCS" run -o "$T/off" -- "${JOB[@]}" >/dev/null 2>&1
"$NCS" report --json "$T/off" >"$T/off.json" 2>/dev/null
check_eq "headline: JSON says NVLink in the box but not used" "true false" \
  "$(jq -r '"\(.headline.nvlink_in_box) \(.headline.nvlink_used)"' "$T/off.json")"
check "headline: JSON names nvlink-unused among the first problems" \
  jq -e '.headline.first_problems | map(.id) | index("nvlink-unused") != null' "$T/off.json"
"$NCS" report "$T/off" >"$T/off.txt" 2>/dev/null
check "headline: text says why (the variable responsible)" grep -q 'why: NCCL_P2P_DISABLE' "$T/off.txt"
check "headline: text names the slowest rank" grep -q '^  slowest: rank ' "$T/off.txt"
"$NCS" report --json "$T/ok" >"$T/ok.json" 2>/dev/null
check_eq "headline: healthy transports: NVLink in the box and used" "true true" \
  "$(jq -r '"\(.headline.nvlink_in_box) \(.headline.nvlink_used)"' "$T/ok.json")"

# One communication share: report's headline (median rank), report's per-rank figures, doctor's
# and html's headline and compare's, all from the same run.
for run in ok off; do
  rep=$(jq -r '.headline.comm_share * 100 | round' "$T/$run.json")
  med=$(jq -r '[.ranks[].comm_share | select(. != null)] | sort | .[((length - 1) / 2 | floor)] * 100 | round' "$T/$run.json")
  doc=$("$NCS" doctor "$T/$run" 2>/dev/null | sed -n 's/^  communication: \([0-9]*\)% of the median.*/\1/p')
  "$NCS" html "$T/$run" -o "$T/$run.html" 2>/dev/null
  htm=$(sed -n 's/.*<b>\([0-9]*\)%<\/b> of the median rank.*/\1/p' "$T/$run.html")
  cmp=$("$NCS" compare --json "$T/$run" "$T/$run" 2>/dev/null | jq -r '.comm_share.new_pct | round')
  check_eq "headline: $run: one communication share in report headline, report ranks, doctor, html, compare" \
    "$rep $rep $rep $rep $rep" "$rep $med $doc $htm $cmp"
done
# One message size: compare's rows are nccl-tests' S, as report's per-size table.
csz=$("$NCS" compare --json "$T/ok" "$T/ok" 2>/dev/null | jq -r '[.rows[] | select(.op == "AllGather") | .bucket_bytes] | sort | first')
ag=$("$NCS" report "$T/ok" 2>/dev/null | awk '$1 == "AllGather" && $2 ~ /iB$|B$/ {print $2; exit}')
check "headline: compare's AllGather size row is S (report's per-size row: $ag, compare: $csz bytes)" \
  sh -c "case '$ag' in 64KiB) test '$csz' = 65536;; 256KiB) test '$csz' = 262144;; *) false;; esac"
# With kernel activity (the CUDA/CUPTI doubles), the headline gives the exposed figure too.
check "headline: kernel activity gives an exposed share in the JSON" \
  jq -e '.headline.kernel_activity_ranks > 0 and (.headline.exposed_share | type == "number")' "$T/ok.json"
check "headline: the text states the exposed share" grep -q '^  exposed: [0-9]*% of GPU time' "$T/off.txt"
# The dominant operation and its busbw against the transport's expected figure: the same in
# report (metrics' sums) and html (the loader's sums).
dom=$(jq -r '"\(.headline.dominant.op) \(.headline.dominant.busbw_gbps * 100 | round) \(.headline.dominant.expected_busbw_gbps)"' "$T/off.json")
hdom=$(sed -n 's/.*Dominant operation: <b>\([A-Za-z]*\)<\/b>.*at <b>\([0-9.]*\) GB\/s<\/b>.*/\1 \2/p' "$T/off.html" | awk '{printf "%s %d", $1, $2 * 100 + 0.5}')
check "headline: report and html name the same dominant operation and busbw (within 0.01 GB/s: $dom / $hdom)" \
  awk -v a="$dom" -v b="$hdom" 'BEGIN { split(a, x, " "); split(b, y, " "); d = x[2] - y[2]; exit !(x[1] == y[1] && x[1] != "" && d <= 1 && d >= -1) }'
# Bandwidth judged against the link in use (docs/REFERENCE-FIGURES.md "Expected bus bandwidth"): with
# NCCL fallen back to SHM, SHM over the PCIe the topology records (Gen5 x16 in the topology file:
# peak 63 GB/s, not Gen4's 31.5), and report and html give the same expected figure.
check_eq "headline: NCCL fell back to SHM: judged against SHM over the recorded PCIe Gen5 x16 (peak 63 GB/s)" "SHM 63" \
  "$(jq -r '"\(.headline.link.transport) \(.headline.link.peak_gbps)"' "$T/off.json")"
rx=$(jq -r '.headline.dominant.expected_busbw_gbps' "$T/off.json" | awk '{printf "%.3g", $1}')
hx=$(sed -n 's/.*Dominant operation:.* of the \([0-9.e+]*\) GB\/s expected at its sizes.*/\1/p' "$T/off.html")
check_eq "headline: report and html hold the dominant operation against the same expected busbw" "$rx" "$hx"

# Host-timed calls (the common path of metrics' second pass) count their algorithm steps too: the
# dominant operation's expected busbw is Σbus / (Σsteps x α + Σbus / β) over its calls, computed
# here from the raw CALL records (AllReduce on 4 ranks: bus = bytes x 2(n-1)/n, 2(n-1) steps a call)
# and the link's α and β as the JSON states them.
"$NCS" synth -o "$T/h4" --ranks 4 --calls 200 --no-gpu --seed 7 >/dev/null 2>&1
"$NCS" report --json "$T/h4" >"$T/h4.json" 2>/dev/null
want=$("$NCS" dump "$T"/h4/*.ncs 2>/dev/null | awk -v a="$(jq -r .headline.link.step_latency_us "$T/h4.json")" \
  -v b="$(jq -r .headline.link.large_busbw_gbps "$T/h4.json")" '
  /^CALL op=AllReduce / && / rc=0 / { for (i = 2; i <= NF; i++) if ($i ~ /^bytes=/) { bus += substr($i, 7) * 2 * 3 / 4; steps += 6; n++ } }
  END { if (n) printf "%.6g", bus / (steps * a * 1e3 + bus / b) }')
got=$(jq -r '.headline.dominant | select(.op == "AllReduce") | .expected_busbw_gbps' "$T/h4.json" | awk '{printf "%.6g", $1}')
check_eq "headline: host-timed AllReduce's expected busbw from the raw calls' bytes and steps" "$want" "$got"
