#!/usr/bin/env bash
# test_sizes_rows.sh — report's text without --sizes prints only how many per-size rows the job
# has, and the `sizes` analysis then keeps the rows' keys alone (analysis/sizes.c: no sample, no
# GPU time). The count it prints is checked against the keys found in the raw records
# (`ncclscope dump`: every collective that returned ncclSuccess, and every Send / Recv inside a
# group not captured, docs/METRICS.md "Per-size table") and against the rows of --json (the
# full analysis), on the test writer's fixtures (SendRecv groups, in-place and out-of-place
# calls) and two synthetic jobs (GPU times; host times only), with one and two reader threads.
source "$(dirname "$0")/lib.sh"
GEN=$BUILD/tests/test_trace_roundtrip
for f in "$NCS" "$GEN"; do [ -x "$f" ] || { fail "sizes_rows: $f not built"; exit 0; }; done
command -v python3 >/dev/null || { skip "sizes_rows: python3 needed to read the dump and the JSON"; exit 0; }
cd "$T" && mkdir fx && "$GEN" --write fx >/dev/null || { fail "sizes_rows: fixtures"; exit 0; }
"$NCS" synth -o s1 --ranks 4 --calls 3000 --straggler 2:300 --seed 5 >/dev/null &&
  "$NCS" synth -o s2 --ranks 3 --calls 2000 --no-gpu --seed 7 >/dev/null || { fail "sizes_rows: synth"; exit 0; }

# The distinct (op, communicator size, datatype, reduction, count, placement) keys of the raw
# records: the independent truth of the row count.
cat >"$T/keys.py" <<'EOF'
import sys
COLL = {"AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter"}
keys = set()
nranks = {}
def fields(line):
    return dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
for line in sys.stdin:
    if line.startswith("== "):
        nranks = {}  # communicator indexes are per file
    elif line.startswith("COMM "):
        f = fields(line)
        if int(f["nranks"]) > 0: nranks[f["comm"]] = int(f["nranks"])
    elif line.startswith("CALL "):
        f = fields(line)
        op, flags, n = f["op"], int(f["flags"]), nranks.get(f["comm"], 0)
        if f["rc"] != "0": continue
        if op in COLL:
            place = "in" if flags & 4 else "out" if flags & 8 else "unknown"
            keys.add(("Broadcast" if op == "Bcast" else op, n, f["datatype"], f["redop"], f["count"], place))
        elif op in ("Send", "Recv") and f["depth"] != "0" and not flags & 1:
            keys.add(("SendRecv", n, f["datatype"], "-", f["count"], "unknown"))
print(len(keys))
EOF
rows_text() { sed -n 's/^Per-size table: \([0-9]*\) rows.*/\1/p'; }
rows_json() { python3 -c 'import json,sys; print(len(json.load(sys.stdin)["sizes"]["rows"]))'; }
for job in fx s1 s2; do
  case $job in fx) files="fx/rank0.ncs fx/rank1.ncs" ;; *) files=$job ;; esac
  truth=$("$NCS" dump $files 2>/dev/null | python3 "$T/keys.py")
  json=$(NCCLSCOPE_THREADS=1 "$NCS" report --json $files 2>/dev/null | rows_json)
  for t in 1 2; do
    text=$(NCCLSCOPE_THREADS=$t "$NCS" report $files 2>/dev/null | rows_text)
    [ -n "$truth" ] && [ "$truth" -gt 0 ] && [ "$text" = "$truth" ] && [ "$json" = "$truth" ] &&
      pass "sizes_rows: $job, $t thread(s): text says $text rows, the raw records hold $truth keys, --json has $json rows" ||
      fail "sizes_rows: $job, $t thread(s): text says [$text] rows, the raw records hold [$truth] keys, --json has [$json] rows"
  done
done
