#!/usr/bin/env bash
# test_devcomm.sh — NCCL's device API (ncclDevCommCreate / ncclDevCommDestroy, 2.28+): the shim
# passes both through unchanged and records each as a DEVCOMM record with the requirements the
# job passed; the decoder lists every device communicator per rank and names the compute
# kernels launched while one existed "possibly communicating (device API)", beside NCCL's
# communication, never inside it. Truth: the job's own declared kernels (tests/jobs/devcomm_job.c:
# per phase, their count and declared device time; the doubles run each for exactly that long,
# docs/DOUBLES.md "The device clock"), the requirements it passed and the codes NCCL returned.
# Then the error case (NCCL_WIN_ENABLE=0: no symmetric memory, ncclInvalidUsage), a job without
# device communicators (nothing new in any output), and the real NCCL 2.28.9 without a driver.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/devcomm_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -x "$J" ] || [ ! -f "$SHIM" ] || [ ! -x "$NCS" ]; then skip "devcomm: devcomm_job, shim or decoder not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "devcomm: python3 needed to read report --json"; exit 0; fi

mkdir -p "$T/truth" "$T/plain"
bash "$L" 2 "$J" --truth "$T/plain" >"$T/plain.out" 2>"$T/plain.err"; plain_rc=$?
NCCLSCOPE_DIR="$T/ncs" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --truth "$T/truth" >"$T/out" 2>"$T/err"; rc=$?
check_eq "devcomm: devcomm_job exits 0 with and without the shim" "0 0" "$plain_rc $rc"
check "devcomm: same stdout with and without the shim (return codes of create and destroy)" cmp "$T/plain.out" "$T/out"
check_eq "devcomm: create and destroy succeed on the doubles" "devcomm_job: 2 ranks, create rc=0, destroy rc=0" "$(cat "$T/out")"

for f in "$T"/ncs/*.ncs; do "$NCS" dump "$f"; done >"$T/dump" 2>/dev/null
# DEVCOMM records against the truth: every requirement the job passed, the codes NCCL returned
got=$(python3 - "$T/dump" "$T/truth" <<'EOF'
import json, sys, glob, re
dump = open(sys.argv[1]).read().splitlines()
truth = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[2] + "/truth-rank*.json"))]
creates = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in dump if l.startswith("DEVCOMM op=DevCommCreate")]
destroys = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in dump if l.startswith("DEVCOMM op=DevCommDestroy")]
bad = []
for c in creates:
    for k, v in truth[0]["requirements"].items():
        if c.get(k) != str(v): bad.append("%s=%s want %s" % (k, c.get(k), v))
    if c["rc"] != str(truth[0]["create_rc"]): bad.append("create rc %s" % c["rc"])
for d in destroys:
    if d["rc"] != str(truth[0]["destroy_rc"]): bad.append("destroy rc %s" % d["rc"])
    if not any(c["handle"] == d["handle"] and c["comm"] == d["comm"] for c in creates): bad.append("destroy of an unknown device comm")
calls = sum(1 for l in dump if re.match(r"CALL op=DevComm(Create|Destroy) .* rc=0 ", l))
print("creates %d destroys %d calls %d %s" % (len(creates), len(destroys), calls, "; ".join(bad) or "as passed"))
EOF
)
check_eq "devcomm: trace: a create (with the 14 requirement figures the job passed) and a destroy per rank, each also a CALL" \
  "creates 2 destroys 2 calls 4 as passed" "$got"

"$NCS" report --json "$T/ncs" >"$T/r.json" 2>/dev/null
res=$(grep -h kernel_resolution_ns "$T/dump" | head -1 | sed 's/.*=//')
got=$(python3 - "$T/r.json" "$T/truth" "${res:-0}" <<'EOF'
import json, sys, glob
r = json.load(open(sys.argv[1]))
truth = {t["rank"]: t for t in (json.load(open(p)) for p in glob.glob(sys.argv[2] + "/truth-rank*.json"))}
res = int(sys.argv[3])
out = []
for rk in r["ranks"]:
    t = truth[rk["rank"]]
    d, g = rk.get("device_api", {}), rk["gpu_time"]
    want_n, want_ns = t["kernels"]["during"]["count"], t["kernels"]["during"]["ns"]
    got_ns = round(d.get("possibly_communicating_s", -1) * 1e9)
    # the shim keeps kernel times at the CUPTI resolution it declares: each duration within it
    ok_ns = abs(got_ns - want_ns) <= want_n * max(res, 1)
    dc = d.get("device_comms", [])
    req = dc[0].get("requirements") if dc else None
    out.append("rank %d: %d of %d kernels, time %s, %d comm(s), requirements %s, nccl_kernels %s of %d" % (
        rk["rank"], d.get("possibly_communicating_kernels", -1), want_n, "= truth" if ok_ns else "%d ns != %d" % (got_ns, want_ns),
        len(dc), "= truth" if req and all(req[k] == v for k, v in t["requirements"].items()) else req,
        g.get("nccl_kernels"), t["nccl_kernels"]))
out.append("job: %s" % json.dumps(r.get("headline", r).get("device_api")))
print("\n".join(out))
EOF
)
want_job=$(python3 -c "
import json,glob
ts=[json.load(open(p)) for p in glob.glob('$T/truth/truth-rank*.json')]
print(sum(t['kernels']['during']['count'] for t in ts))")
check_eq "devcomm: report --json: exactly the kernels launched inside the lifetime are possibly communicating, with their summed GPU time (job's declared durations); NCCL's kernels stay communication" \
  "rank 0: 5 of 5 kernels, time = truth, 1 comm(s), requirements = truth, nccl_kernels 12 of 12
rank 1: 5 of 5 kernels, time = truth, 1 comm(s), requirements = truth, nccl_kernels 12 of 12" "$(echo "$got" | grep '^rank')"
check "devcomm: report --json headline: device_api with the job's $want_job possibly communicating kernels" \
  grep -q "\"possibly_communicating_kernels\": $want_job" <<<"$(echo "$got" | grep '^job:')"
"$NCS" report "$T/ncs" >"$T/r.txt" 2>/dev/null
check "devcomm: report text: the headline states the device-API time beside the communication share" \
  grep -q "^  device API: .* in $want_job kernels launched while a device communicator existed" "$T/r.txt"
check "devcomm: report text: each rank's device communicator with its requirements" \
  grep -q "asked for: lsaMultimem 1, barriers 4 (lsa 2, rail GIN 1), LL A2A 8 blocks x 16 slots, GIN 2 contexts 3 signals 5 counters, 2 resource buffers (69632 bytes), 2 teams (1 multimem)" "$T/r.txt"
check_eq "devcomm: report text: one possibly-communicating line per rank" 2 "$(grep -c 'possibly communicating (device API): 5 kernels' "$T/r.txt")"
"$NCS" doctor --json "$T/ncs" >"$T/d.json" 2>/dev/null
check "devcomm: doctor: a device-api note (not a problem)" \
  python3 -c "import json,sys; v=[x for x in json.load(open('$T/d.json'))['verdicts'] if x['id']=='device-api']; sys.exit(0 if len(v)==1 and v[0]['severity']=='note' else 1)"
"$NCS" doctor "$T/ncs" >"$T/d.txt" 2>/dev/null
check_eq "devcomm: doctor text: the note's line (the pattern the job without device communicators must not show)" 1 \
  "$(grep -c '^[A-Z]* device-api:' "$T/d.txt")"
"$NCS" html "$T/ncs" -o "$T/r.html" >/dev/null 2>&1
check "devcomm: html: the headline's device-API note" grep -q "Device API: .* in $want_job kernels" "$T/r.html"

# the error case: no symmetric-memory support (NCCL_WIN_ENABLE=0) -> ncclInvalidUsage (5), passed through
NCCL_WIN_ENABLE=0 bash "$L" 2 "$J" >"$T/e.plain" 2>/dev/null
NCCL_WIN_ENABLE=0 NCCLSCOPE_DIR="$T/ncs-e" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" >"$T/e.out" 2>/dev/null
check_eq "devcomm: NCCL_WIN_ENABLE=0: create returns ncclInvalidUsage (5) with the shim, as without" \
  "$(cat "$T/e.plain")" "$(cat "$T/e.out")"
grep -q "create rc=5" "$T/e.out" || fail "devcomm: expected create rc=5 under NCCL_WIN_ENABLE=0: $(cat "$T/e.out")"
for f in "$T"/ncs-e/*.ncs; do "$NCS" dump "$f"; done >"$T/e.dump" 2>/dev/null
check_eq "devcomm: error case traced: 2 failed creates (rc 5, no requirements read), no destroy" "2 0" \
  "$(grep -c '^DEVCOMM op=DevCommCreate .* rc=5 .* flags=0$' "$T/e.dump") $(grep -c '^DEVCOMM op=DevCommDestroy' "$T/e.dump")"
"$NCS" report --json "$T/ncs-e" >"$T/e.json" 2>/dev/null
check_eq "devcomm: error case: no kernel possibly communicating (no device communicator existed)" "0 0" \
  "$(python3 -c "import json; print(' '.join(str(r['device_api']['possibly_communicating_kernels']) for r in json.load(open('$T/e.json'))['ranks']))")"

# a job without device communicators: nothing new anywhere (doctor: no device-api finding;
# its healthy line lists device-api among the checks run, and whether this 3-step job is
# healthy depends on the machine's load: a gpu-idle finding or none)
bash -c "NCCLSCOPE_DIR='$T/ncs-ddp' LD_PRELOAD='$SHIM' bash '$L' 2 '$BUILD/tests/ddp_job' --steps 3" >/dev/null 2>&1
"$NCS" report --json "$T/ncs-ddp" >"$T/n.json" 2>/dev/null; "$NCS" report "$T/ncs-ddp" >"$T/n.txt" 2>/dev/null
"$NCS" doctor "$T/ncs-ddp" >"$T/n.doc" 2>/dev/null
check_eq "devcomm: a trace without device communicators: no device_api key, no section, no note" "0 0 0" \
  "$(grep -c device_api "$T/n.json") $(grep -ci 'device comm\|device api' "$T/n.txt") $(grep -c '^[A-Z]* device-api:' "$T/n.doc")"

# the real NCCL 2.28.9 without a driver: ncclDevCommCreate fails in its first step (cudaGetDevice),
# before it reads the communicator; that code passes through. (Its Destroy reads the communicator
# first: without one it cannot be called here.)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/nccl_device/core.h" ] || [ ! -f "$CUDA_HOME/lib/libnccl.so.2" ]; then
  skip "devcomm: real NCCL: no NCCL 2.28 device API in $CUDA_HOME"; exit 0
fi
cat >"$T/real.c" <<'C'
#include <stdbool.h>
#include <stdio.h>
#include <nccl.h>
#define inline
#include <nccl_device/core.h>
#undef inline
int main(void) {
  ncclDevCommRequirements_t reqs = {0};
  static char out[8192];
  ncclResult_t rc = ncclDevCommCreate(NULL, &reqs, (ncclDevComm_t *)out);
  printf("DevCommCreate rc=%d (%s)\n", (int)rc, ncclGetErrorString(rc));
  return rc == ncclSuccess ? 0 : 3;
}
C
if ! cc -std=c11 -I"$CUDA_HOME/include" -o "$T/real" "$T/real.c" -L"$CUDA_HOME/lib" -l:libnccl.so.2 \
     -Wl,-rpath,"$CUDA_HOME/lib" 2>"$T/cc.err"; then
  fail "devcomm: real NCCL: cannot build the test program"; sed 's/^/    /' "$T/cc.err" | head; exit 0
fi
(cd "$T" && env -u LD_LIBRARY_PATH ./real >"$T/real.plain" 2>/dev/null; echo $? >"$T/real.plain.rc")
(cd "$T" && env -u LD_LIBRARY_PATH NCCLSCOPE_DIR="$T/ncs-real" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./real >"$T/real.shim" 2>/dev/null; echo $? >"$T/real.shim.rc")
check_eq "devcomm: real NCCL: same stdout and exit status with and without the shim" \
  "$(cat "$T/real.plain") $(cat "$T/real.plain.rc")" "$(cat "$T/real.shim") $(cat "$T/real.shim.rc")"
rrc=$(sed -n 's/^DevCommCreate rc=\([0-9]*\).*/\1/p' "$T/real.plain")
for f in "$T"/ncs-real/*.ncs; do "$NCS" dump "$f"; done >"$T/real.dump" 2>/dev/null
check "devcomm: real NCCL: the trace records the create with NCCL's code $rrc (CALL and DEVCOMM)" \
  bash -c "[ -n '$rrc' ] && [ '$rrc' != 0 ] && grep -q '^CALL op=DevCommCreate .* rc=$rrc ' '$T/real.dump' && grep -q '^DEVCOMM op=DevCommCreate .* rc=$rrc ' '$T/real.dump'"
