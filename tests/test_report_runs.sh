#!/usr/bin/env bash
# test_report_runs.sh — report's summary takes CALL records a run at a time (cmd/report.c
# on_calls, io/trace.h): the same calls read as long runs (column chunks) and as runs of one
# (row chunks, one record a chunk) give the same report, text and JSON, every rank's line, with
# calls changing operation, datatype, communicator and result code inside runs
# (tests/test_mux.c --write).
. "$(dirname "$0")/lib.sh"
GEN=$BUILD/tests/test_mux
mkdir -p "$T/cols" "$T/rows"
cols=$("$GEN" --write "$T/cols/r.ncs" 100000)
rows=$("$GEN" --write "$T/rows/r.ncs" 1)
check_eq "the long-run trace is column chunks, the other row chunks" "columns>0 columns 0" \
  "$( [ "${cols#columns }" -gt 0 ] 2>/dev/null && echo "columns>0" || echo "$cols") $rows"
for how in "--detail" "--json --detail"; do
  (cd "$T/cols" && "$NCS" report $how r.ncs >"$T/cols.out" 2>&1); a=$?
  (cd "$T/rows" && "$NCS" report $how r.ncs >"$T/rows.out" 2>&1); b=$?
  if [ $a = 0 ] && [ $b = 0 ] && cmp -s "$T/cols.out" "$T/rows.out"; then
    pass "report $how: long runs and runs of one give the same output"
  else
    fail "report $how: long runs (exit $a) and runs of one (exit $b) differ"; diff "$T/cols.out" "$T/rows.out" | head -20
  fi
done
# what the trace holds is in the report: every operation's calls, errors and the communicators
"$NCS" report --json --detail "$T/cols/r.ncs" >"$T/j.json"
check "the report counts all 20000 calls (those of known operations in their rows), errors among them, on two communicators" python3 - "$T/j.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["ranks"][0]
ops = r["ops"].values()
calls = sum(o["calls"] for o in ops)
errs = sum(o.get("errors", 0) for o in ops)
assert r["calls"] == 20000 and 10000 < calls < 20000, (r["calls"], calls)  # op 250: no row
assert errs > 0, errs
assert len(r["ops"]) >= 4, list(r["ops"])
assert len(r["comms"]) >= 2, r["comms"]
PY
