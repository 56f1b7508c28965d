#!/usr/bin/env bash
# test_golden_traces.sh — the committed traces decode to exactly the committed output: every
# golden corrupt input (tests/corrupt-golden/*.ncs, `dump` one by one) and a 2-rank ddp_job
# traced by the shim with every collector on (tests/golden/traces/job/: PROCESS, THREAD, COMM,
# COMM_END, CALL, CALLSITE, MODULE, CLOCK, GPU_TIME, NCCL_LOG, TOPO_GPU, TOPO_LINK, PROFILE;
# `dump`, and the record-fed members of `report --json`: ranks' core, topology, profile), and
# the same job in format 2.0 (tests/golden/traces/job20/, column chunks), 2.1 (job21/,
# keyed columns), 3.1 (job31/, PROFILE_ID records in place of PROFILE) and 4.0 (job40/, job31's
# records with the lanes chunk checksum).
# It holds the decoder to what it read before a change that restructures code (records,
# loader): such a change leaves these files alone. A change meant to alter what is printed
# rewrites them with NCS_UPDATE_GOLDEN=1 (review the diff before committing).
. "$(dirname "$0")/lib.sh"
G=$ROOT/tests/golden/traces
if [ ! -x "$NCS" ]; then fail "golden traces: $NCS not built"; exit 1; fi
if ! command -v python3 >/dev/null; then skip "golden traces: python3 needed to filter report --json"; exit 0; fi

# The members of report --json that come straight from records (analyses add others).
record_fed() {
  python3 -c 'import json,sys
d=json.load(sys.stdin); K=["rank","nranks","host","pid","file","truncated","damaged","error","dropped","drops","calls","ops","comms","profile"]
print(json.dumps({"ranks":[{k:x.get(k) for k in K} for x in d["ranks"]],"topology":d.get("topology"),"profile":d.get("profile")},indent=1,sort_keys=True))'
}
# compare NAME CMD... : output (stdout, stderr, exit code) of CMD against $G/NAME
compare() {
  local name=$1; shift
  { "$@" 2>&1; echo "exit $?"; } >"$T/out"
  if [ "${NCS_UPDATE_GOLDEN:-}" = 1 ]; then cp "$T/out" "$G/$name"; pass "golden trace $name: rewritten"; return; fi
  if cmp -s "$T/out" "$G/$name"; then pass "golden trace $name: same output"
  else fail "golden trace $name differs"; diff "$G/$name" "$T/out" | head -20 | sed 's/^/    /'; fi
}
cd "$ROOT/tests/corrupt-golden" || exit 1
for f in *.ncs; do compare "corrupt-${f%.ncs}.dump" "$NCS" dump "$f"; done
cd "$G" || exit 1
compare job.dump "$NCS" dump job
report_json() { "$NCS" report --json "$1" >"$T/rep.json" 2>"$T/rep.err"; local rc=$?; record_fed <"$T/rep.json"; cat "$T/rep.err"; return $rc; }
compare job-report.out report_json job
# format 2.0: the same job traced by the shim of commit 21dc8cc (column chunks of CALL,
# GPU_TIME and KERNEL records, no keyed column), read by this reader (format 3.0)
compare job20.dump "$NCS" dump job20
compare job20-report.out report_json job20
# format 2.1 (keyed columns, the layout of 3.0: FORMAT.md "Versions"): the same job traced by the shim of commit a30271a, GPU timing and kernel activity
# (keyed columns: CALL seq, t_enter and duration, GPU_TIME gpu_start, KERNEL start); its dump
# was checked equal, chunk offsets aside, to the dump of the same records rewritten as rows
compare job21.dump "$NCS" dump job21
compare job21-report.out report_json job21
# format 3.1: the same job (30 steps, GPU timing and kernel activity) traced by the shim of the
# commit that added PROFILE_ID: its collectives are PROFILE_ID records (names as ids, in
# columns, seq keyed by communicator and function); report's profile member is the one the
# PROFILE records of job21 give
compare job31.dump "$NCS" dump job31
compare job31-report.out report_json job31
# format 4.0 (the lanes chunk checksum): job31's records repacked by this tree's chunk writer
# (tests/faults/repack.c, the shim's ncs_chunk_pack); its dump is job31's but for the header's
# version and the chunk offsets (recompressed payloads)
compare job40.dump "$NCS" dump job40
compare job40-report.out report_json job40
strip_dump() { "$NCS" dump "$1" 2>&1 | sed -e 's/^== .*\//== /' -e 's/^PROCESS format=[0-9.]* /PROCESS /' -e 's/^-- chunk \([0-9]*\) at offset [0-9]*:/-- chunk \1:/'; }
check_eq "golden trace job40: the same records as job31 (dump without versions and offsets)" \
  "$(strip_dump job31)" "$(strip_dump job40)"
check "golden trace job40: its files are format 4.0 and job31's 3.1" \
  sh -c "'$NCS' dump job40 | grep -c '^PROCESS format=4.0 ' | grep -qx 2 && '$NCS' dump job31 | grep -c '^PROCESS format=3.1 ' | grep -qx 2"
profile_of() { "$NCS" report --json "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["profile"], sort_keys=True))'; }
check_eq "golden trace job31: its PROFILE_ID records give report the profile job21's PROFILE records give" \
  "$(profile_of job21)" "$(profile_of job31)"
