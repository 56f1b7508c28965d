#!/usr/bin/env bash
# test_kernel_chunks.sh — a row chunk's KERNEL records in a chunk of their own (format 5.7, chunk
# flag `kernels`; shim/writer.c kernels_apart, docs/FORMAT.md): rate_job on the doubles at
# 2 threads x 200 k calls/s, each call a kernel (CUPTI double), so every flush passes 1 MiB of
# rows and its kernels go apart:
#   - the file's chunks, read from their headers: each `kernels` chunk is a column payload
#     following a row chunk (index + 1, the next byte), and there is at least one;
#   - every kernel is in the trace once: as many KERNEL records as AllReduce calls (the double
#     launches one kernel a call), nothing dropped but GPU times (DROP reason 5: the doubles' event
#     pool runs dry at this rate), and no chunk read as damaged;
#   - the reader calls no chunk end for a `kernels` chunk: dump's chunk lines are the other chunks,
#     its end line counts them all;
#   - report reads it (exit 0) and shows the kernels, doctor too (exit 0 or 1, a finding);
#   - kill -9 while the calls go on: the cut trace reads (dump exit 0, no damage), every call
#     that returned is in it or counted dropped (the job's own count; a loaded machine may
#     leave the writer behind a ring: DROP reason 1) and no kernel is there twice (CUPTI's
#     correlation ids are unique).
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "kernel chunks: $f not built"; exit 0; }; done

# chunks FILE: one line per chunk, "index flags payload_offset" (the file header's size first)
chunks() {
  python3 - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read()
off = struct.unpack_from('<I', b, 12)[0]
while off + 40 <= len(b):
    magic, psz, rsz, nrec, idx, dropped, csum, flags = struct.unpack_from('<IIIIQQII', b, off)
    if magic != 0x4B43534E or off + 40 + psz > len(b):
        break
    print(idx, flags, off, nrec)
    off += 40 + psz
EOF
}

# what the reader says of a damaged chunk (io/trace.c)
damage='bad chunk|checksum|malformed|bad column|decompression|not one complete|more records|header states'
D=$T/run
mkdir -p "$D"
NCCLSCOPE_DIR=$D/tr LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 150000 -t 2 -r 200000 >"$D/out" 2>&1 ||
  { fail "kernel chunks: the job failed: $(head -3 "$D/out")"; exit 0; }
f=$(ls "$D"/tr/*.ncs 2>/dev/null | head -1)
[ -n "$f" ] || { fail "kernel chunks: no trace"; exit 0; }
chunks "$f" >"$D/chunks"
nk=$(awk '$2 >= 64 && int($2 / 64) % 2 == 1' "$D/chunks" | wc -l)
[ "$nk" -ge 1 ] && pass "kernel chunks: $nk chunks of KERNEL records apart" || fail "kernel chunks: none in $(wc -l <"$D/chunks") chunks"
# each: columns (bit 2), right after a row chunk (bit 2 clear, index - 1)
bad=$(awk '{ k = int($2 / 64) % 2; col = int($2 / 4) % 2
             if (k && (!col || !have || pk || pcol || $1 != pidx + 1)) n++
             have = 1; pk = k; pcol = col; pidx = $1 } END { print n + 0 }' "$D/chunks")
check_eq "kernel chunks: each is a column payload right after a row chunk" 0 "$bad"
"$NCS" dump "$f" >"$D/dump" 2>"$D/dump.err"
rc=$?
check_eq "kernel chunks: dump reads the trace (exit 0, no damage)" "0:" "$rc:$(grep -Ei -m1 "$damage" "$D/dump.err")"

calls=$(awk '$1 == "CALL" && / op=AllReduce / {n++} END {print n + 0}' "$D/dump")
kernels=$(awk '$1 == "KERNEL" {n++} END {print n + 0}' "$D/dump")
check_eq "kernel chunks: every call is in the trace" 300000 "$calls"
check_eq "kernel chunks: every kernel is in the trace, once (one a call)" "$calls" "$kernels"
check_eq "kernel chunks: nothing dropped but GPU times" 0 \
  "$(awk '$1 == "DROP" && $2 != "reason=5" {sub("records=", "", $3); n += $3} END {print n + 0}' "$D/dump")"
check_eq "kernel chunks: no chunk end for a kernels chunk (dump's chunk lines: the others)" \
  "$(($(wc -l <"$D/chunks") - nk))" "$(grep -c '^-- chunk ' "$D/dump")"
check_eq "kernel chunks: the reader counts every chunk" "$(wc -l <"$D/chunks")" \
  "$(sed -n 's/^== end: \([0-9]*\) chunks.*/\1/p' "$D/dump")"
"$NCS" report "$f" >"$D/rep" 2>&1
check_eq "kernel chunks: report reads it" 0 $?
grep -q "^GPU time (kernel activity" "$D/rep" && pass "kernel chunks: report shows the kernel activity" || fail "kernel chunks: no kernel activity in report"
"$NCS" doctor "$f" >"$D/doc" 2>&1
rc=$?
[ "$rc" -le 1 ] && ! grep -Eqi "$damage" "$D/doc" && pass "kernel chunks: doctor reads it (exit $rc)" || fail "kernel chunks: doctor exit $rc: $(head -3 "$D/doc")"

# kill -9 while the calls go on
K=$T/kill
mkdir -p "$K"
NCCLSCOPE_DIR=$K/tr LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 2000000 -t 2 -r 200000 -c "$K/count" >"$K/out" 2>&1 &
pid=$!
for ((i = 0; i < 100; i++)); do
  f=$(ls "$K"/tr/*.ncs 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$(chunks "$f" | awk 'int($2 / 64) % 2 == 1' | wc -l)" -ge 2 ] && break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
f=$(ls "$K"/tr/*.ncs 2>/dev/null | head -1)
[ -n "$f" ] || { fail "kernel chunks: kill -9: no trace"; exit 0; }
returned=$(python3 -c "import struct,sys; b=open(sys.argv[1],'rb').read(); print(sum(struct.unpack_from('<2Q', b, 0)))" "$K/count")
"$NCS" dump "$f" >"$K/dump" 2>"$K/dump.err"
rc=$?
check_eq "kernel chunks: kill -9: the cut trace reads (exit 0, no damage)" "0:" "$rc:$(grep -Ei -m1 "$damage" "$K/dump.err")"
got=$(awk '$1 == "CALL" && / op=AllReduce / {n++} END {print n + 0}' "$K/dump")
lost=$(awk '$1 == "DROP" && $2 ~ /^reason=[1247]$/ {sub("records=", "", $3); n += $3} END {print n + 0}' "$K/dump")
[ "$((got + lost))" -ge "$returned" ] && [ "$returned" -gt 0 ] &&
  pass "kernel chunks: kill -9: every returned call is in the trace or counted dropped ($got + $lost >= $returned)" ||
  fail "kernel chunks: kill -9: $got calls in the trace and $lost dropped, $returned returned"
check_eq "kernel chunks: kill -9: no kernel twice" 0 \
  "$(awk '$1 == "KERNEL" { for (i = 2; i <= NF; i++) if ($i ~ /^correlation=/) print $i }' "$K/dump" | sort | uniq -d | wc -l)"
