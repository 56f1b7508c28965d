#!/usr/bin/env bash
# test_decoder_cli.sh — the ncclscope CLI against golden outputs and exit codes.
# Fixture traces come from a deterministic writer (tests/test_trace_writer.h via
# `test_trace_roundtrip --write DIR`), not from the shim. NCS_UPDATE_GOLDEN=1 rewrites
# tests/golden/ from the current output (review the diff before committing).
. "$(dirname "$0")/lib.sh"
GOLD=$ROOT/tests/golden
GEN=$BUILD/tests/test_trace_roundtrip
if [ ! -x "$NCS" ] || [ ! -x "$GEN" ]; then fail "decoder_cli: $NCS or $GEN not built"; exit 1; fi
mkdir -p "$T/fx" && "$GEN" --write "$T/fx" || { fail "decoder_cli: writing fixtures"; exit 1; }
cd "$T/fx"

# The goldens hold the report's core: analyses (analysis.h) add sections after it (text) and
# members beside it (JSON), tested by their own tests; core_only keeps the core part.
core_only() { # core_only NAME < output
  case $1 in
  report*.json)
    if command -v jq >/dev/null; then
      jq '{version, files, ranks: [.ranks[] | {rank, nranks, host, pid, file, truncated, damaged, error,
          dropped, drops, calls, ops: (.ops | map_values({calls, count, bytes, host_s, errors})), comms}]}'
    else
      python3 -c 'import json,sys
d=json.load(sys.stdin); K=["rank","nranks","host","pid","file","truncated","damaged","error","dropped","drops","calls","ops","comms"]
r=[{k:x[k] for k in K} for x in d["ranks"]]
for x in r: x["ops"]={o:{k:v[k] for k in ["calls","count","bytes","host_s","errors"]} for o,v in x["ops"].items()}
print(json.dumps({"version":d["version"],"files":d["files"],"ranks":r},indent=2))'
    fi ;;
  report*) awk 'BEGIN{s=1} /^$/{blank=1; next} { if (blank && $0 !~ /^rank /) exit; if (blank) print ""; blank=0; print }' ;;
  *) cat ;;
  esac
}
golden() { # golden NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$T/full" 2>"$T/err"; local rc=$?
  core_only "$name" <"$T/full" >"$T/out"
  if [ "${NCS_UPDATE_GOLDEN:-}" = 1 ]; then cp "$T/out" "$GOLD/$name"; fi
  if [ "$rc" != "$want" ]; then fail "golden $name: exit $rc, expected $want"; sed 's/^/    /' "$T/err" | head -5; return; fi
  if cmp -s "$T/out" "$GOLD/$name"; then pass "golden $name (exit $rc)"
  else fail "golden $name differs"; diff "$GOLD/$name" "$T/out" | head -20 | sed 's/^/    /'; fi
}

golden report.txt 0 "$NCS" report rank0.ncs rank1.ncs
golden report.json 0 "$NCS" report --json rank0.ncs rank1.ncs
golden dump-rank0.txt 0 "$NCS" dump rank0.ncs
golden report-cut.txt 0 "$NCS" report rank0.ncs cut.ncs
golden report-hostile.txt 0 "$NCS" report hostile.ncs
head -c 800 rank1.ncs >mid.ncs # inside chunk 2 (offset 766): chunks 0 and 1 still count
golden report-mid.json 0 "$NCS" report --json mid.ncs

# a cut trace (a killed process) is normal input: exit 0, stated on stderr with file and
# offset, in the rank's JSON and in the JSON's warnings
"$NCS" report --json cut.ncs >"$T/cut.json" 2>"$T/cut.err"; rc=$?
check_eq "cut trace: exit 0" 0 "$rc"
check "cut trace: JSON warnings list it" python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["warnings"]; assert w[0]["what"]=="cut" and w[0]["file"]=="cut.ncs"' "$T/cut.json"
check "cut trace: stderr names file and offset" grep -q '^ncclscope: cut.ncs: offset 810: cut short (truncated): no final chunk' "$T/cut.err"
check "cut trace: JSON says truncated" grep -q '"truncated": true' "$T/cut.json"

# hostile strings: no raw control bytes on a terminal, valid JSON (the trace makes no
# communicator: its process is listed under no_communicator, not as a rank)
"$NCS" report hostile.ncs >"$T/h.txt" 2>&1
check "hostile trace: text output holds no ESC or BEL byte" bash -c "! grep -q \$'[\\x1b\\x07]' '$T/h.txt'"
"$NCS" report --json hostile.ncs >"$T/h.json"
if command -v jq >/dev/null; then
  check "hostile trace: JSON parses (jq)" jq -e '.no_communicator[0].host == "ev\u001b[2Jil\"<b>\n"' "$T/h.json"
elif command -v python3 >/dev/null; then
  check "hostile trace: JSON parses (python3)" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["no_communicator"][0]["host"]=="ev\x1b[2Jil\"<b>\n"' "$T/h.json"
else skip "hostile trace: JSON parse: neither jq nor python3"; fi

# directories expand to their *.ncs files, sorted
mkdir -p "$T/dir" && cp rank0.ncs rank1.ncs "$T/dir/" && : >"$T/dir/notes.txt"
"$NCS" report --json "$T/dir" >"$T/dir.json" 2>&1; rc=$?
check_eq "directory of traces: exit 0" 0 "$rc"
check_eq "directory of traces: 2 files read" 2 "$(grep -c '"file":' "$T/dir.json")"

# exit codes and usage
"$NCS" >/dev/null 2>"$T/e"; check_eq "no command: exit 2" 2 $?
check "no command: usage on stderr" grep -q '^usage: ncclscope COMMAND' "$T/e"
"$NCS" frobnicate >"$T/o" 2>"$T/e"; check_eq "unknown command: exit 2" 2 $?
check "unknown command: usage on stderr, nothing on stdout" bash -c "grep -q 'unknown command' '$T/e' && [ ! -s '$T/o' ]"
"$NCS" help >"$T/o" 2>&1; check_eq "help: exit 0" 0 $?
check "help lists report, dump and run" bash -c "grep -q '^  report ' '$T/o' && grep -q '^  dump ' '$T/o' && grep -q '^  run ' '$T/o'"
"$NCS" --version >"$T/o"; check_eq "--version: exit 0" 0 $?
check "--version names the format" grep -qE '^ncclscope .* \(trace format [1-9]\.[0-9]+\)$' "$T/o"
"$NCS" report >/dev/null 2>&1; check_eq "report without PATH: exit 2" 2 $?
"$NCS" report --bogus=1 rank0.ncs >/dev/null 2>&1; check_eq "report with an unknown option: exit 2" 2 $?
"$NCS" report "$T/none.ncs" >/dev/null 2>"$T/e"; check_eq "report of a missing path: exit 4" 4 $?
check "missing path: stderr names it" grep -q "none.ncs: No such file" "$T/e"
printf 'not a trace' >"$T/x.ncs"
"$NCS" report "$T/x.ncs" rank0.ncs >"$T/o" 2>"$T/e"; check_eq "report of a non-trace: exit 4" 4 $?
check "non-trace: the good file is still reported" grep -q 'AllReduce' "$T/o"
"$NCS" dump cut.ncs >/dev/null 2>&1; check_eq "dump of a cut trace: exit 0" 0 $?
mkdir -p "$T/empty"; "$NCS" report "$T/empty" >/dev/null 2>&1; check_eq "report of a directory without traces: exit 4" 4 $?

# run: preloads the shim (prepended), sets NCCLSCOPE_DIR, exit status is the command's
: >"$T/fake-shim.so"
out=$(NCCLSCOPE_SHIM=$T/fake-shim.so LD_PRELOAD= "$NCS" run -o "$T/tr" -- sh -c 'echo "$LD_PRELOAD|$NCCLSCOPE_DIR"; exit 3' 2>/dev/null); rc=$?
check_eq "run: LD_PRELOAD and NCCLSCOPE_DIR set" "$T/fake-shim.so|$T/tr" "$out"
check_eq "run: exit status is the command's" 3 "$rc"
out=$(NCCLSCOPE_SHIM=$T/fake-shim.so LD_PRELOAD=/lib/other.so "$NCS" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check_eq "run: shim prepended to an existing LD_PRELOAD" "$T/fake-shim.so:/lib/other.so" "$out"
NCCLSCOPE_SHIM=$T/missing.so "$NCS" run -- true 2>/dev/null; check_eq "run: missing shim: exit 2" 2 $?
NCCLSCOPE_SHIM=$T/fake-shim.so LD_PRELOAD= "$NCS" run -- /nonexistent/cmd 2>/dev/null; check_eq "run: command not found: exit 127" 127 $?
"$NCS" run 2>/dev/null; check_eq "run without a command: exit 2" 2 $?
if [ -f "$BUILD/libncclscope.so" ]; then
  out=$(env -u NCCLSCOPE_SHIM LD_PRELOAD= "$NCS" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
  check_eq "run: finds the shim next to the ncclscope binary" "$BUILD/libncclscope.so" "$out"
else skip "run: shim next to the binary: $BUILD/libncclscope.so not built"; fi

# damaged traces through the whole CLI (report with every analysis, dump): exit 0 (cut), 3 or 4
# with a located message, never a crash (a signal gives an exit status >= 128)
size=$(stat -c %s rank0.ncs); crashes=0; unlocated=0; tried=0
for ((i = 1; i < size; i += 17)); do
  head -c "$i" rank0.ncs >"$T/d.ncs"
  cp rank0.ncs "$T/f.ncs"; printf '\x5a' | dd of="$T/f.ncs" bs=1 seek=$((i + 3)) conv=notrunc status=none
  for f in "$T/d.ncs" "$T/f.ncs"; do
    for cmd in "report --json" "report" "dump"; do
      tried=$((tried + 1))
      "$NCS" $cmd "$f" >/dev/null 2>"$T/d.err"; rc=$?
      [ "$rc" -ge 5 ] && { crashes=$((crashes + 1)); echo "    $cmd $(basename "$f") ($i): exit $rc"; }
      [ "$rc" -ne 0 ] && ! grep -q "offset [0-9]*:\|cannot open" "$T/d.err" && unlocated=$((unlocated + 1))
    done
  done
done
check_eq "$tried CLI runs on cut and flipped traces: no crash (exit >= 5)" 0 "$crashes"
check_eq "cut and flipped traces: every non-zero exit names an offset" 0 "$unlocated"
