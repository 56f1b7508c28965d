#!/usr/bin/env bash
# test_synth.sh — `ncclscope synth` (decoder/io/synth.c): traces in the real format that the
# reader accepts, deterministic for a seed, with the calls, hosts and hang it was asked for.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "synth: $NCS not built"; exit 0; fi
"$NCS" synth -o "$T/a" --ranks 6 --hosts 2 --calls 300 --seed 5 --chunk-calls 64 >/dev/null 2>&1
check_eq "synth: one file per rank" 6 "$(ls "$T/a" | wc -l)"
"$NCS" synth -o "$T/b" --ranks 6 --hosts 2 --calls 300 --seed 5 --chunk-calls 64 --threads 1 >/dev/null 2>&1
"$NCS" synth -o "$T/c" --ranks 6 --hosts 2 --calls 300 --seed 6 --chunk-calls 64 >/dev/null 2>&1
check "synth: same seed, same bytes (whatever the thread count)" diff -r "$T/a" "$T/b"
if diff -rq "$T/a" "$T/c" >/dev/null; then fail "synth: another seed gives other traces"; else pass "synth: another seed gives other traces"; fi
"$NCS" report --json "$T/a" >"$T/r.json" 2>"$T/r.err"
check_eq "synth: report reads the traces cleanly" 0 "$?"
calls=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print(sum(sum(o["calls"] for o in r["ops"].values()) for r in d["ranks"]))' "$T/r.json" 2>/dev/null)
check_eq "synth: every call read back (6 ranks x 300)" 1800 "$calls"
hosts=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); print(len(set(r["host"] for r in d["ranks"])))' "$T/r.json" 2>/dev/null)
check_eq "synth: two hosts" 2 "$hosts"
"$NCS" dump "$T/a/$(ls "$T/a" | head -1)" >"$T/d.txt" 2>&1
check_eq "synth: CLOCK pairs at start and after every chunk (300/64 -> 4, +start, +end)" 6 "$(grep -c '^CLOCK' "$T/d.txt")"
check "synth: GPU_TIME records written" grep -q '^GPU_TIME' "$T/d.txt"
check "synth: transport lines written as NCCL_LOG" grep -q 'NCCL_LOG.*via P2P/CUMEM/read' "$T/d.txt"
# A hang: rank 2 never enters seq 100; its trace and the others' lack the final chunk.
"$NCS" synth -o "$T/h" --ranks 4 --hosts 1 --calls 300 --missing 2:100 >/dev/null 2>&1
"$NCS" report --detail "$T/h" >"$T/h.txt" 2>&1
check_eq "synth: a hung job's traces read as cut short (report exits 0, says CUT for each)" "0 4" "$? $(grep -c '^  CUT: ' "$T/h.txt")"
n2=$("$NCS" dump "$T/h"/*r00002* 2>/dev/null | grep -c '^CALL')
check_eq "synth: the missing rank stops before seq 100" 99 "$n2"
"$NCS" synth -o "$T/bad" --ranks 0 >/dev/null 2>&1
check_eq "synth: bad configuration exits 2" 2 "$?"
