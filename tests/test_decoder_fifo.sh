#!/usr/bin/env bash
# test_decoder_fifo.sh — the decoder never blocks on an input (issue 9 part 4): a FIFO named
# x.ncs, given by name or found inside a directory, is refused by report, doctor, html,
# timeline, dump and compare with a message naming it; only regular files are read. (nccl-log
# reads text logs from any file, pipes included: `nccl-log <(grep ...)` is how it is used.)
# Every command runs under `timeout`, so a regression fails (exit 124) instead of hanging.
source "$(dirname "$0")/lib.sh"
[ -x "$NCS" ] || { fail "decoder fifo: $NCS not built"; exit 0; }
cd "$T" && mkdir dir && "$NCS" synth -o dir --ranks 2 --calls 20 >/dev/null || { fail "decoder fifo: synth"; exit 0; }
mkfifo x.ncs dir/x.ncs || { skip "decoder fifo: mkfifo unavailable"; exit 0; }
# run NAME WANT_RC WANT_MESSAGE CMD...: exit WANT_RC (a regex) (not 124: no hang), stderr names the FIFO
run() {
  local name=$1 want=$2 msg=$3; shift 3
  timeout -k 2 10 "$@" >/dev/null 2>"$T/err" </dev/null; local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$name: blocked (killed by timeout)"; return; fi
  if ! [[ $rc =~ ^($want)$ ]]; then fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$T/err" | head -3; return; fi
  if grep -qF "$msg" "$T/err"; then pass "$name"; else fail "$name: no message naming it"; sed 's/^/    /' "$T/err" | head -3; fi
}
named="x.ncs: not a regular file (a FIFO)"
indir="dir/x.ncs: not a regular file (a FIFO): skipped"
run "report: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" report x.ncs
run "report --json: FIFO in a directory skipped, traces read" 0 "$indir" "$NCS" report --json dir
run "doctor: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" doctor x.ncs
run "doctor: FIFO in a directory skipped (exit 0 or 1: verdicts on the traces)" "0|1" "$indir" "$NCS" doctor dir
run "dump: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" dump x.ncs
run "dump: FIFO in a directory skipped" 0 "$indir" "$NCS" dump dir
run "timeline: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" timeline x.ncs -o "$T/t.json"
run "timeline: FIFO in a directory skipped" 0 "$indir" "$NCS" timeline dir -o "$T/t.json"
run "html: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" html x.ncs -o "$T/h.html"
run "html: FIFO in a directory skipped" 0 "$indir" "$NCS" html dir -o "$T/h.html"
run "compare: FIFO by name refused (exit 4, unreadable input)" 4 "$named" "$NCS" compare x.ncs dir
run "compare: FIFO in a directory skipped" 0 "$indir" "$NCS" compare dir dir
