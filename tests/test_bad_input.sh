#!/usr/bin/env bash
# test_bad_input.sh — what the decoder answers to input that is not what it reads (issue 26,
# item 7): a file that is not a trace gets exit 4, an error naming it and no verdict; a text
# file with no NCCL line is neither a trace nor a log (nccl-log, doctor: exit 4); a directory
# whose traces are in subdirectories names them and the command to read them; `watch` never
# shows a negative age; the man page's synopsis keeps LD_PRELOAD=PATH in one word; NCCL's
# version code is shown as NCCL prints it (2.28.9).
source "$(dirname "$0")/lib.sh"
[ -x "$NCS" ] || { skip "bad input: $NCS not built"; exit 0; }

# a text file that is not a trace: README.md
"$NCS" report "$ROOT/README.md" >"$T/r.out" 2>"$T/r.err"
check_eq "report README.md: exit 4" 4 "$?"
check_eq "report README.md: nothing on stdout (no verdict, no 'healthy')" 0 "$(wc -c <"$T/r.out")"
check "report README.md: the error names the file and offset 0" grep -q "README.md: offset 0: not an ncclscope trace" "$T/r.err"
"$NCS" doctor "$ROOT/README.md" >"$T/d.out" 2>"$T/d.err"
check_eq "doctor README.md (neither a trace nor an NCCL log): exit 4" 4 "$?"
check_eq "doctor README.md: nothing on stdout" 0 "$(wc -c <"$T/d.out")"
check "doctor README.md: the error says neither a trace nor an NCCL log" grep -q "README.md: not an ncclscope trace .* no NCCL log line" "$T/d.err"
"$NCS" nccl-log "$ROOT/README.md" >"$T/n.out" 2>"$T/n.err"
check_eq "nccl-log README.md (no NCCL line): exit 4" 4 "$?"
check_eq "nccl-log README.md: nothing on stdout" 0 "$(wc -c <"$T/n.out")"
lines=$(wc -l <"$ROOT/README.md")
check "nccl-log README.md: the error names the file and the $lines lines read" grep -q "README.md: no NCCL log line in it ($lines lines read" "$T/n.err"
: >"$T/empty.log"
"$NCS" nccl-log "$T/empty.log" >/dev/null 2>&1
check_eq "nccl-log of an empty file: exit 4" 4 "$?"
L=$ROOT/tests/fixtures/nccl-logs/42-2.27.3-g6e-l40s-1pod-4proc-shm.log
"$NCS" nccl-log "$L" "$ROOT/README.md" >"$T/n2.out" 2>&1
check_eq "nccl-log of a real log and README.md: exit 4, nothing printed" "4 0" "$? $(grep -c 'NCCL version' "$T/n2.out")"
"$NCS" doctor "$L" >/dev/null 2>&1
check "doctor of a real NCCL log (42) still reads it as a log (exit 0 or 1)" test $? -le 1

# a real trace, from the synthetic writer (the real format)
"$NCS" synth -o "$T/syn" --ranks 2 --calls 50 >/dev/null 2>&1 || { fail "bad input: synth failed"; exit 0; }
# good traces beside a non-trace: their tables, but no verdict on a job with a file missing
cp "$ROOT/README.md" "$T/syn2.ncs"
"$NCS" report "$T/syn" "$T/syn2.ncs" >"$T/m.out" 2>"$T/m.err"
check_eq "report of good traces and a non-trace .ncs: exit 4" 4 "$?"
nsyn=$(ls "$T"/syn/*.ncs | wc -l)
check "report: the first line says no verdict, 1 of $((nsyn + 1)) inputs unreadable" \
  sh -c "head -1 '$T/m.out' | grep -q 'no verdict: 1 of the $((nsyn + 1)) inputs cannot be read as traces'"
check "report: never 'healthy' then" sh -c "! grep -qi healthy '$T/m.out'"
check "report: the good traces' table is still there" grep -q AllReduce "$T/m.out"
check "report: the non-trace is named" grep -q "syn2.ncs: offset 0: not an ncclscope trace" "$T/m.err"

# traces in subdirectories
mkdir -p "$T/runs/a" "$T/runs/b/c"
cp "$T"/syn/*.ncs "$T/runs/a/"
cp "$T"/syn/*.ncs "$T/runs/b/c/"
na=$(ls "$T"/syn/*.ncs | wc -l)
for cmd in report doctor; do
  "$NCS" $cmd "$T/runs" >"$T/s.out" 2>"$T/s.err"
  check_eq "$cmd DIR with traces only in subdirectories: exit 4" 4 "$?"
  check "$cmd DIR: both subdirectories named with their trace counts" \
    grep -q "runs: no trace (\*.ncs) in it, but 2 of its subdirectories hold traces: $T/runs/a ($na) $T/runs/b/c ($na)" "$T/s.err"
  check "$cmd DIR: the command to read one" grep -q "with: ncclscope $cmd $T/runs/a\$" "$T/s.err"
  "$NCS" $cmd "$T/runs/a" >/dev/null 2>&1
  check "$cmd of the named subdirectory reads it (exit 0 or 1)" test $? -le 1
done
mkdir -p "$T/none/x"
"$NCS" report "$T/none" >/dev/null 2>"$T/s.err"
check "report of a directory with no trace anywhere: no subdirectory hint" sh -c "! grep -q subdirector '$T/s.err'"

# man page synopsis: LD_PRELOAD=/path in one word
if command -v man >/dev/null 2>&1 && man -l "$ROOT/docs/man/ncclscope.1" >/dev/null 2>&1; then
  MANWIDTH=120 man -l "$ROOT/docs/man/ncclscope.1" 2>/dev/null >"$T/man.txt"
  check "man page synopsis: LD_PRELOAD=/path/to/libncclscope.so (no space after '=')" grep -q "LD_PRELOAD=/path/to/libncclscope.so" "$T/man.txt"
else
  skip "bad input: man -l cannot render the man page here"
fi

# NCCL version code 22809 shown as 2.28.9 (html's rank table)
if [ -f /usr/local/cuda/lib/libnccl.so.2 ] && [ -f /usr/local/cuda/include/nccl.h ]; then
  printf '#include <stdio.h>\n#include <nccl.h>\nint main(void){int v=0;ncclGetVersion(&v);ncclUniqueId id;ncclGetUniqueId(&id);printf("%%d\\n",v);return 0;}\n' >"$T/v.c"
  if cc -I/usr/local/cuda/include -o "$T/v" "$T/v.c" -L/usr/local/cuda/lib -l:libnccl.so.2 -Wl,-rpath,/usr/local/cuda/lib 2>/dev/null; then
    code=$(NCCL_DEBUG= NCCLSCOPE_DIR="$T/vtr" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$T/v")
    want="$((code / 10000)).$((code % 10000 / 100)).$((code % 100))"
    "$NCS" html "$T/vtr" -o "$T/v.html" >/dev/null 2>&1
    check "html: NCCL version code $code shown as $want" grep -q "<td>$want</td>" "$T/v.html"
    check "html: the raw code $code is not shown" sh -c "! grep -q '<td>$code</td>' '$T/v.html'"
  else
    skip "bad input: cannot build a program against the real NCCL"
  fi
else
  skip "bad input: no real NCCL in /usr/local/cuda"
fi

# watch: ages never negative, while a job writes its trace every 10 ms
FJ=$BUILD/tests/rate_job
if [ -x "$FJ" ] && [ -f "$SHIM" ]; then
  NCCLSCOPE_DIR="$T/live" NCCLSCOPE_FLUSH_MS=10 LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 "$FJ" -n 200 -r 100 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do ls "$T"/live/*.ncs >/dev/null 2>&1 && break; sleep 0.05; done
  : >"$T/w.all"
  for _ in $(seq 1 20); do "$NCS" watch --once "$T/live" >>"$T/w.all" 2>&1; done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rows=$(grep -c "s ago" "$T/w.all")
  check "watch --once 20 times on a live trace: rows with ages shown ($rows)" test "$rows" -gt 0
  check "watch: no negative age in $rows rows" sh -c "! grep -qE -- '-[0-9.]+s( ago)?' '$T/w.all'"
else
  skip "bad input watch: rate_job or the shim not built"
fi
