#!/usr/bin/env bash
# test_cli.sh — the conventions of docs/CLI.md hold for every command `ncclscope help` lists:
# `CMD --help` and `help CMD` print the same help on stdout and exit 0; a mistyped option or
# command is named on stderr with the nearest correct one, exit 2, nothing on stdout; options
# may be abbreviated and written --name=value; an unreadable input is reported before any output.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "cli: not built"; exit 0; fi
cmds=$("$NCS" help | awk '/^  [a-z]/ && $1 != "help" {print $1}')
check "cli: help lists commands" test -n "$cmds"
for c in $cmds; do
  "$NCS" "$c" --help >"$T/h1" 2>"$T/e1"; rc=$?
  check_eq "cli: $c --help exits 0" 0 "$rc"
  check "cli: $c --help prints its usage on stdout" grep -q "^usage: ncclscope $c" "$T/h1"
  check_eq "cli: $c --help writes nothing on stderr" "" "$(cat "$T/e1")"
  "$NCS" help "$c" >"$T/h2" 2>/dev/null
  check "cli: help $c is $c --help" cmp -s "$T/h1" "$T/h2"
  "$NCS" "$c" -h >"$T/h3" 2>/dev/null
  check "cli: $c -h is $c --help" cmp -s "$T/h1" "$T/h3"
  "$NCS" "$c" --no-such-option x y >"$T/o" 2>"$T/e"; rc=$?
  check_eq "cli: $c --no-such-option exits 2" 2 "$rc"
  check_eq "cli: $c --no-such-option prints nothing on stdout" "" "$(cat "$T/o")"
  check "cli: $c --no-such-option names it and points at --help" \
    sh -c "grep -q -- \"unknown option '--no-such-option'\" '$T/e' && grep -q \"ncclscope $c --help\" '$T/e'"
done
"$NCS" report --jsn "$T" >"$T/o" 2>"$T/e"
check_eq "cli: report --jsn exits 2" 2 "$?"
check "cli: report --jsn suggests --json" grep -q "did you mean '--json'" "$T/e"
"$NCS" repot "$T" >"$T/o" 2>"$T/e"
check_eq "cli: a mistyped command exits 2" 2 "$?"
check "cli: a mistyped command gets the nearest one" grep -q "did you mean 'report'" "$T/e"
check_eq "cli: a mistyped command prints nothing on stdout" "" "$(cat "$T/o")"
check_eq "cli: the command list is not dumped on a typo" 1 "$(wc -l <"$T/e" | awk '{print ($1 <= 2)}')"
"$NCS" help nosuch >/dev/null 2>&1
check_eq "cli: help of an unknown command exits 2" 2 "$?"

"$NCS" synth -o "$T/s" --ranks 2 --calls 50 >/dev/null 2>&1
"$NCS" report --js --step=AllReduce "$T/s" >"$T/o" 2>/dev/null
check "cli: abbreviated options and --name=value work (report --js --step=...)" jq -e . "$T/o"
"$NCS" compare --busbw-drop abc "$T/s" "$T/s" >"$T/o" 2>"$T/e"
check_eq "cli: a bad number exits 2" 2 "$?"
check "cli: a bad number is named" grep -q "'abc' is not a number" "$T/e"
# errors before output: a missing file among good ones gives no half report
LOG=$ROOT/tests/fixtures/nccl-logs/10-2.6.4-2gpu-nvlink-graph-search-tuning-table.log
"$NCS" nccl-log "$LOG" /nonexistent >"$T/o" 2>"$T/e"
check_eq "cli: nccl-log with a missing file exits 4 (unreadable input)" 4 "$?"
check_eq "cli: nccl-log with a missing file prints no report first" "" "$(cat "$T/o")"
check "cli: nccl-log names the missing file" grep -q "/nonexistent" "$T/e"
"$NCS" timeline "$T/s" >"$T/o" 2>"$T/e"
check_eq "cli: timeline without -o exits 2" 2 "$?"
check "cli: timeline without -o says so" grep -q "no output file" "$T/e"
# Every JSON document carries its version (docs/JSON.md).
v=$( { "$NCS" report --json "$T/s" | jq -r .version; "$NCS" doctor --json "$T/s" | jq -r .version;
       "$NCS" compare --json "$T/s" "$T/s" | jq -r .version; } 2>/dev/null | tr '\n' ' ')
check_eq "cli: report, doctor and compare JSON carry a version (report: 3 since graph replays are counted; doctor: 2 since verdicts carry rank sets)" "3 2 2 " "$v"
if [ -f "$LOG" ]; then
  check_eq "cli: nccl-log JSON carries a version" 1 "$("$NCS" nccl-log --json "$LOG" 2>/dev/null | jq -r .version)"
fi
