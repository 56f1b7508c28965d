#!/usr/bin/env bash
# test_nonblocking.sh — non-blocking communicators (ncclConfig_t.blocking = 0) as NCCL 2.28
# runs them (tests/jobs/nb_job: init returning ncclInProgress and polled, operations and a
# group returning ncclInProgress, a split without a config that inherits non-blocking and
# publishes its child later) are attributed and lined up like blocking ones. Checked against
# the job's own truth, per rank, from `report --json`: rank and size, every communicator's rank
# and size (init_state complete), calls/count/bytes per op with 0 errors (ncclInProgress is not
# one), and the number of collectives lined up across ranks. Also: an init never polled (-x)
# still gives the rank its place, reported as "in_progress".
. "$(dirname "$0")/lib.sh"
J=$BUILD/tests
[ -f "$SHIM" ] && [ -x "$NCS" ] && [ -x "$J/nb_job" ] || { fail "nonblocking: shim, decoder or nb_job missing"; exit 1; }
command -v python3 >/dev/null || { skip "nonblocking: python3 not installed"; exit 0; }
cd "$T"
export NCCL_DEBUG=
LAUNCH=$ROOT/tests/jobs/launch.sh

# matches NAME TRACEDIR TRUTHDIR STATE: report --json against every truth-rank<R>.json
matches() {
  if "$NCS" report --json "$2" >"$T/r.json" 2>"$T/r.err" &&
     python3 - "$T/r.json" "$3" "$4" >"$T/cmp.out" 2>&1 <<'PY'
import glob, json, sys
rep, state = json.load(open(sys.argv[1])), sys.argv[3]
truths = [json.load(open(t)) for t in sorted(glob.glob(sys.argv[2] + "/truth-rank*.json"))]
assert truths and len(rep["ranks"]) == len(truths), "%d ranks reported, %d truths" % (len(rep["ranks"]), len(truths))
for want in truths:
    rows = [r for r in rep["ranks"] if r["rank"] == want["rank"]]
    assert len(rows) == 1, "rank %d: %d rows" % (want["rank"], len(rows))
    r = rows[0]
    assert r["nranks"] == want["nranks"], "rank %d: nranks %r" % (want["rank"], r["nranks"])
    got = {k: {"calls": v["calls"], "count": v["count"], "bytes": v["bytes"]} for k, v in r["ops"].items()}
    assert got == want["ops"], "rank %d ops: report %r, truth %r" % (want["rank"], got, want["ops"])
    errs = sum(v["errors"] for v in r["ops"].values())
    assert errs == 0, "rank %d: %d errors (ncclInProgress counted as an error?)" % (want["rank"], errs)
    comms = [(c["rank"], c["nranks"], c["init_state"]) for c in r["comms"]]
    exp = [(c["rank"], c["nranks"], state) for c in want["comms"]][:len(comms)]
    assert comms == exp and comms, "rank %d comms: report %r, truth %r" % (want["rank"], comms, exp)
lined = rep["collectives"]["complete"]
assert lined == truths[0]["lined_up"], "collectives lined up: report %d, truth %d" % (lined, truths[0]["lined_up"])
PY
  then pass "$1"; else fail "$1"; cat "$T/r.err" "$T/cmp.out" | head -5 | sed 's/^/    /'; fi
}

"$LAUNCH" 4 "$J/nb_job" -n 5 >plain.out 2>&1; p=$?
mkdir -p nb.truth
NCCLSCOPE_DIR="$T/nb" LD_PRELOAD="$SHIM" "$LAUNCH" 4 "$J/nb_job" -n 5 --truth "$T/nb.truth" >shim.out 2>&1; s=$?
if [ "$p$s" = 00 ] && cmp -s plain.out shim.out; then pass "nonblocking: nb_job 4 ranks: output and exit status identical with and without the shim"
else fail "nonblocking: nb_job: exit $p vs $s"; head -3 shim.out | sed 's/^/    /'; fi
matches "nonblocking: nb_job 4 ranks (init, 5 all-reduces, split inheriting non-blocking, 5 all-reduces on each half, a group): report --json equals the truth, every collective lined up" nb nb.truth complete

mkdir -p x.truth
NCCLSCOPE_DIR="$T/x" LD_PRELOAD="$SHIM" "$LAUNCH" 2 "$J/nb_job" -x --truth "$T/x.truth" >x.out 2>&1
matches "nonblocking: an init never polled (destroyed in progress): ranks attributed from the init's arguments, init_state in_progress" x x.truth in_progress
"$NCS" report --detail x >x.txt 2>&1
check "nonblocking: the text report says the init was not seen complete (ncclInProgress), not that it failed" \
  grep -q "non-blocking init: not seen complete, ncclInProgress" x.txt
