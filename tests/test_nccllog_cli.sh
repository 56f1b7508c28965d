#!/usr/bin/env bash
# test_nccllog_cli.sh — `ncclscope nccl-log` on real logs from tests/fixtures/nccl-logs/
# (tests/fixtures/README.md says what each shows): text matrix, JSON fields, several files at once, stdin, bad
# input. The per-line classification itself is checked by tests/test_nccllog.c.
source "$(dirname "$0")/lib.sh"
N=$ROOT/tests/fixtures/nccl-logs

"$NCS" nccl-log "$N/42-2.27.3-g6e-l40s-1pod-4proc-shm.log" >"$T/42.txt" 2>&1
check_eq "42 (2.27.3, 4 processes, SHM): exit 0" 0 "$?"
# 28 "via SHM" lines in the file; the file prints each connection twice: 14 distinct
check "42: version 2.27.3 and 14 distinct SHM connections (28 via lines)" \
  sh -c "grep -q '^NCCL version: 2.27.3' '$T/42.txt' && grep -q 'connections: 14 (P2P 0, SHM 14' '$T/42.txt'"
check "42: matrix rows: 0 sends to 1, 3 sends to 0 and 2 (ring and tree)" \
  sh -c "grep -qE '^ +0 +X +SHM +[.] +[.]\$' '$T/42.txt' && grep -qE '^ +3 +SHM +[.] +SHM +X\$' '$T/42.txt'"

"$NCS" nccl-log --json "$N/12-2.8.3-p4d-efa-2node-mpi-prefix-full-run.log" >"$T/12.json" 2>&1
check "12 --json: nccl_version 2.8.3+cuda11.2" grep -q '"nccl_version": "2.8.3+cuda11.2"' "$T/12.json"
check "12 --json: NET over 'AWS Libfabric' with GDRDMA, send and receive" \
  sh -c "grep -q '\"mode\": \"AWS Libfabric\"' '$T/12.json' && grep -q '\"gdrdma\": true' '$T/12.json' && grep -q '\"direction\": \"receive\"' '$T/12.json'"
check "12 --json: transports[] carry channel/from/to/transport/detail" \
  sh -c "grep -q '\"channel\": 0' '$T/12.json' && grep -q '\"transport\": \"P2P\"' '$T/12.json' && grep -q '\"detail\": \"IPC/read\"' '$T/12.json'"
check "12 --json: 16 Init COMPLETE lines" sh -c "[ \$(grep -c '\"phase\": \"COMPLETE\"' '$T/12.json') = 16 ]"
if command -v python3 >/dev/null; then
  check "12 --json is valid JSON with 320 via lines -> distinct transports" \
    python3 -c "import json,sys; d=json.load(open('$T/12.json')); assert len(d['transports'])>0 and d['summary']['P2P']+d['summary']['NET']==len(d['transports'])"
else
  skip "JSON validity: python3 not installed"
fi

"$NCS" nccl-log "$N/20-2.14-2.18.1-2node-socket-ipc-read-same-hostname.log" "$N/05-2.4.x-64rank-ec2-socket-trees-init-complete.log" >"$T/two.txt" 2>&1
check "two files at once: one model, Socket and P2P counted together" grep -q 'connections: 23 (P2P 9, SHM 0, NET 14' "$T/two.txt"
"$NCS" nccl-log - <"$N/11-2.7.8-ray-2gpu-p2p-ipc-peer-access-not-supported-warn.log" >"$T/stdin.txt" 2>&1
check "stdin (-), Ray prefix: the P2P/IPC connection and the WARN" \
  sh -c "grep -q 'P2P/IPC' '$T/stdin.txt' && grep -q 'transport/p2p.cc:238: failed to open CUDA IPC handle' '$T/stdin.txt'"
"$NCS" nccl-log "$T/does-not-exist.log" >/dev/null 2>"$T/err"
check_eq "missing file: exit 4 with the name in the message" "4 yes" "$? $(grep -q does-not-exist "$T/err" && echo yes)"
"$NCS" nccl-log >/dev/null 2>&1
check_eq "no file: usage, exit 2" 2 "$?"
printf '\x1b[31mhost:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/\x1b]0;pwn\x07CUMEM\n' >"$T/hostile.log"
"$NCS" nccl-log "$T/hostile.log" >"$T/hostile.txt" 2>&1
check "hostile bytes in a log are escaped in text output" sh -c "! grep -q \$'\\x1b' '$T/hostile.txt' && grep -q 'P2P/\\\\x1b' '$T/hostile.txt'"

# a shared log file whose processes' lines interleave mid-line (tests/golden/nccl-log-interleaved.log:
# log 42 with 12 pairs of "via SHM" lines of two processes spliced, the first cut after "via S",
# the second whole after it, the first's rest on the next line)
IL=$ROOT/tests/golden/nccl-log-interleaved.log
spliced=$(grep -c 'via Sllama' "$IL")
"$NCS" nccl-log "$IL" >"$T/il.txt" 2>&1
check_eq "interleaved log: exit 0" 0 "$?"
check "interleaved log ($spliced lines holding another's): 14 distinct SHM connections, as in the log it was made from" \
  grep -q 'connections: 14 (P2P 0, SHM 14' "$T/il.txt"
tr() { "$NCS" nccl-log --json "$1" | python3 -c 'import json,sys; [print(t["channel"], t["from"], t["to"], t["transport"], t["detail"], t["pid"]) for t in json.load(sys.stdin)["transports"]]' | sort; }
tr "$IL" >"$T/il.tr"
tr "$N/42-2.27.3-g6e-l40s-1pod-4proc-shm.log" >"$T/42.tr"
check "interleaved log: the same transports (channel, ranks, transport, process) as log 42 itself" cmp "$T/il.tr" "$T/42.tr"
check "interleaved log: the transports list is not empty ($(wc -l <"$T/42.tr"))" test "$(wc -l <"$T/42.tr")" -gt 0
