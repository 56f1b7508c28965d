#!/usr/bin/env bash
# test_sizes_order.sh — the per-size table (analysis/sizes.c) past its 2^20 samples a row: the
# samples a row keeps do not depend on the order the files are read in (docs/METRICS.md "Per
# size"). A synthetic job of 32 ranks x 300,000 calls (8 keys: 1.2 M timed calls a row, each
# file's part under its own 65,536 a key): the sizes JSON is the same with the files given in
# order and reversed, read by one thread and by two (before, a row kept the first 2^20 in the
# order the files finished: three different tables); every row is thinned (over_cap > 0), and
# every call of the job is timed or counted (the synthetic job's 32 x 300,000 calls).
source "$(dirname "$0")/lib.sh"
for f in "$NCS"; do [ -e "$f" ] || { fail "sizes_order: $f not built"; exit 0; }; done
command -v python3 >/dev/null || { skip "sizes_order: python3 needed to read the JSON"; exit 0; }
"$NCS" synth -o "$T/job" --ranks 32 --calls 300000 >/dev/null 2>&1 || { fail "sizes_order: synth failed"; exit 0; }
sizes() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["sizes"], sort_keys=True))'; }
NCCLSCOPE_THREADS=1 "$NCS" report --json "$T"/job/*.ncs 2>/dev/null | sizes >"$T/a"
NCCLSCOPE_THREADS=1 "$NCS" report --json $(ls -r "$T"/job/*.ncs) 2>/dev/null | sizes >"$T/b"
NCCLSCOPE_THREADS=2 "$NCS" report --json "$T/job" 2>/dev/null | sizes >"$T/c"
[ -s "$T/a" ] && cmp -s "$T/a" "$T/b" && pass "sizes_order: the same table with the files given reversed" \
  || fail "sizes_order: the table depends on the order the files are given in"
[ -s "$T/a" ] && cmp -s "$T/a" "$T/c" && pass "sizes_order: the same table read by two threads" \
  || fail "sizes_order: the table depends on the reader threads"
check "sizes_order: every row thinned past 2^20 samples (over_cap > 0, timed <= 2^20); each of the job's 9,600,000 calls timed, counted over the cap, warm-up or first" \
  python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert rows and all(r["over_cap"] > 0 and r["timed"] <= 1 << 20 for r in rows), rows
assert sum(r["timed"] + r["over_cap"] + r["warmup"] + r["first"] for r in rows) == 32 * 300000, rows
' "$T/a"
