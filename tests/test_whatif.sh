#!/usr/bin/env bash
# test_whatif.sh — what fixing a problem would give (issue 28), proven against a second run:
# ddp_job (tests/jobs/ddp_job.c) on 4 ranks under the shim, on the CUDA/NCCL/NVML doubles' 8x
# H100 NVSwitch box, with --ahead (the GPU's schedule is the device clock's alone, whatever the
# machine's load), four times: healthy (P2P over NVLink, no overlap), with NCCL_P2P_DISABLE=1
# (SHM), with rank 2's compute 300 us longer per step (a straggler), and with the gradient
# all-reduces overlapped with compute (--overlap). Each job measures its own step time on the
# device clock (CUDA events at each step's end: truth "device_step_ns"). The prediction `report`
# makes from the slow run's trace alone (what_if.findings[].step_s_if_fixed) must be within 10%
# of the measured step time of the run with the cause removed, while the two measured runs
# differ by more than 20% (so the check means something): SHM -> nvlink-unused vs the healthy
# run; straggler -> straggler vs the healthy run; healthy -> exposed-comm (the ceiling of
# overlap) vs the overlapped run. Also `--what-if transport=SHM` on the healthy trace against
# the SHM run, `--what-if busbw=` in text and JSON, and a bad --what-if refused (exit 2).
# compare explains the step-time change (issue 28 item 3): `compare healthy X` for X = the SHM
# run, the straggler run and the overlapped run: the parts it names (all but the remainder) add
# up to the difference of the two runs' measured device step times within 10%, and its largest
# part is the cause injected (AllReduce's transfer; waiting, rank 2 named; overlap).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
command -v jq >/dev/null || { skip "whatif: jq not installed"; exit 0; }
export NVMLDOUBLE_TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
export LD_LIBRARY_PATH=$BUILD/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# job NAME ARGS...: traces and truth in $T/NAME (run in the background: the device clock does not
# depend on the load)
job() {
  local name=$1; shift
  mkdir -p "$T/$name"
  NCCLSCOPE_DIR=$T/$name LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 120 bash "$L" 4 "$J" --steps 6 --ahead 6 --scale 16 \
    --compute-us 400 --truth "$T/$name" "$@" >"$T/$name.out" 2>"$T/$name.err"
}
job healthy & p1=$!
NCCL_P2P_DISABLE=1 job shm & p2=$!
job straggler --straggler-rank 2 --straggler-us 300 & p3=$!
job overlap --overlap & p4=$!
ok=1
for p in $p1 $p2 $p3 $p4; do wait $p || ok=0; done
if [ $ok = 0 ]; then
  fail "whatif: a job failed"; for n in healthy shm straggler overlap; do sed 's/^/    /' "$T/$n.err" | head -5; done; exit 1
fi
for n in healthy shm straggler overlap; do
  "$NCS" report --json "$T/$n" >"$T/$n.json" 2>"$T/$n.rerr" || [ $? = 1 ] || fail "whatif: report $n failed"
done
measured() { jq -r '.device_step_ns / 1e9' "$T/$1/truth-rank0.json"; }
# predict NAME ID: the step_s_if_fixed of finding ID in NAME's report
predict() { jq -r --arg id "$2" '[.what_if.findings[] | select(.id == $id) | .step_s_if_fixed][0] // "none"' "$T/$1.json"; }
# prove WHAT SLOW_RUN FINDING FAST_RUN
prove() {
  local what=$1 slow=$2 id=$3 fast=$4 ms mf p
  ms=$(measured "$slow"); mf=$(measured "$fast"); p=$(predict "$slow" "$id")
  echo "# figures: $what: measured $slow $ms s, $fast $mf s; predicted from $slow's trace ($id) $p s"
  if [ "$p" = none ]; then fail "whatif $what: no $id finding in $slow's report"; return; fi
  if awk -v s="$ms" -v f="$mf" 'BEGIN { d = s - f; if (d < 0) d = -d; exit !(d > 0.2 * f) }'; then
    pass "whatif $what: the two runs differ by more than 20%"
  else fail "whatif $what: runs $ms vs $mf s do not differ by 20%: the check would mean nothing"; fi
  if awk -v p="$p" -v f="$mf" 'BEGIN { d = p - f; if (d < 0) d = -d; exit !(d <= 0.1 * f) }'; then
    pass "whatif $what: predicted $p s within 10% of measured $mf s"
  else fail "whatif $what: predicted $p s, measured $mf s (over 10% apart)"; fi
}
prove "transport (SHM -> P2P over NVLink)" shm nvlink-unused healthy
prove "straggler removed" straggler straggler healthy
prove "overlap added" healthy exposed-comm overlap

# the straggler is named: rank 2
check_eq "whatif straggler: rank 2 named" 2 "$(jq -r '[.what_if.findings[] | select(.id == "straggler") | .rank][0]' "$T/straggler.json")"

# --what-if transport=SHM on the healthy trace predicts the SHM run
"$NCS" report --json --what-if transport=SHM "$T/healthy" >"$T/u.json" 2>/dev/null
p=$(jq -r '[.what_if.findings[] | select(.id == "what-if") | .step_s_if_fixed][0] // "none"' "$T/u.json")
mf=$(measured shm)
echo "# figures: --what-if transport=SHM on the healthy trace: predicted $p s, measured SHM run $mf s"
if [ "$p" != none ] && awk -v p="$p" -v f="$mf" 'BEGIN { d = p - f; if (d < 0) d = -d; exit !(d <= 0.1 * f) }'; then
  pass "whatif --what-if transport=SHM: predicted within 10% of the SHM run"
else fail "whatif --what-if transport=SHM: predicted $p s, measured $mf s"; fi
# --what-if busbw=G,op=AllReduce: the JSON fields, and the text line
"$NCS" report --json --what-if busbw=10,op=AllReduce "$T/healthy" >"$T/b.json" 2>/dev/null
check "whatif --what-if busbw JSON fields" jq -e '.what_if.findings[] | select(.id == "what-if") |
  (.saved_s_per_step | type) == "number" and .step_s > 0 and .step_s_if_fixed > .step_s and (.model | length) > 0 and (.assumptions | length) > 0' "$T/b.json"
"$NCS" report --what-if busbw=10,op=AllReduce "$T/healthy" >"$T/b.txt" 2>/dev/null
check "whatif --what-if busbw text" grep -q "what-if.*AllReduce at 10 GB/s busbw: step" "$T/b.txt"
"$NCS" report --what-if busbw=fast "$T/healthy" >/dev/null 2>"$T/bad.err"
check_eq "whatif: a bad --what-if is refused (exit 2)" 2 $?
# shown first: the headline's nvlink-unused problem carries its cost, the same prediction, in
# text and JSON
hp=$(jq -r '[.headline.first_problems[] | select(.id == "nvlink-unused") | .step_s_if_fixed][0] // "none"' "$T/shm.json")
mf=$(measured healthy)
if [ "$hp" != none ] && awk -v p="$hp" -v f="$mf" 'BEGIN { d = p - f; if (d < 0) d = -d; exit !(d <= 0.1 * f) }'; then
  pass "whatif headline: nvlink-unused carries step_s_if_fixed $hp s, within 10% of the P2P run's $mf s"
else fail "whatif headline: nvlink-unused step_s_if_fixed $hp, P2P run measured $mf s"; fi
"$NCS" report --summary "$T/shm" >"$T/shm.sum" 2>/dev/null
check "whatif headline text: the problem line carries its cost" grep -q "PROBLEM nvlink-unused: .*; costs [0-9.]* ms of the [0-9.]* ms step: fixed, [0-9.]* ms" "$T/shm.sum"
# the html page's headline: the same cost on the same problem line (issue 28 item 4)
"$NCS" html "$T/shm" -o "$T/shm.html" 2>/dev/null
want=$(grep -o "PROBLEM nvlink-unused: .*; costs [0-9.]* ms of the [0-9.]* ms step: fixed, [0-9.]* ms" "$T/shm.sum" | grep -o "costs .*")
got=$(sed -n '/id="headline"/,/<\/section>/p' "$T/shm.html" | grep -o '<li><b>nvlink-unused</b>[^<]*<br><span class="note">[^<]*</span>; costs [0-9.]* ms of the [0-9.]* ms step: fixed, [0-9.]* ms' | grep -o "costs .*")
check_eq "whatif headline html: the nvlink-unused line carries report's cost (${want:-none})" "${want:-none in report}" "$got"

# compare explains the step-time change: named parts against the runs' own device step times
# explain NEW ID [OP]: compare healthy NEW; the largest part is ID (and OP), the named parts' sum
# within 10% of measured(NEW) - measured(healthy)
explain() {
  local new=$1 id=$2 op=${3:-} d sum top
  "$NCS" compare --json "$T/healthy" "$T/$new" >"$T/cmp-$new.json" 2>/dev/null
  "$NCS" compare "$T/healthy" "$T/$new" >"$T/cmp-$new.txt" 2>/dev/null
  d=$(awk -v a="$(measured "$new")" -v b="$(measured healthy)" 'BEGIN { printf "%.9f", a - b }')
  sum=$(jq -r '[.step_time.parts[] | select(.id != "remainder") | .change_s] | add // "none"' "$T/cmp-$new.json")
  top=$(jq -r '.step_time.parts[0] | [.id, (.op // empty)] | join(" ")' "$T/cmp-$new.json")
  echo "# figures: compare healthy $new: measured difference $d s, named parts add up to $sum s; largest: $top"
  if [ "$sum" != none ] && awk -v p="$sum" -v f="$d" 'BEGIN { e = p - f; if (e < 0) e = -e; if (f < 0) f = -f; exit !(e <= 0.1 * f) }'; then
    pass "whatif compare $new: the named parts add up to the measured step difference within 10%"
  else fail "whatif compare $new: parts $sum s, measured difference $d s"; fi
  check_eq "whatif compare $new: the largest part is the injected cause" "$id${op:+ $op}" "$top"
  check_eq "whatif compare $new: parts and remainder add up to the step change" 1 \
    "$(jq -r '.step_time | (([.parts[].change_s] | add) - .change_s) | if . < 1e-12 and . > -1e-12 then 1 else 0 end' "$T/cmp-$new.json")"
}
explain shm transfer AllReduce
explain straggler waiting
check_eq "whatif compare straggler: rank 2 named" 2 "$(jq -r '.step_time.parts[0].rank' "$T/cmp-straggler.json")"
explain overlap overlap
check "whatif compare text: the step line names the transport change" grep -q "^  step +[0-9]*% (.*): [0-9.]* ms from AllReduce transfer (busbw .* GB/s, P2P -> SHM)" "$T/cmp-shm.txt"
