#!/usr/bin/env bash
# test_security_escape.sh — everything the decoder prints that came from a trace is escaped:
# a hostile trace (tests/corrupt-golden/hostile-strings.ncs: terminal escape and OSC
# sequences, BEL, markup, <script>, quotes, backslashes, invalid UTF-8 in the host name, an
# NCCL_* variable, the thread name, a module path and a call-site symbol) must not put a raw
# control byte on a terminal, must give valid JSON, and must not inject markup into HTML.
source "$(dirname "$0")/lib.sh"
H=$ROOT/tests/corrupt-golden/hostile-strings.ncs
if [ ! -x "$NCS" ]; then skip "escaping: $NCS not built"; exit 0; fi

# Control bytes other than \t and \n (ESC, BEL, CR, ...) in a file: count.
ctl() { LC_ALL=C tr -d '\t\n' <"$1" | LC_ALL=C tr -dc '\000-\037\177' | wc -c; }

for cmd in dump report doctor; do
  "$NCS" help 2>&1 | grep -q "^  $cmd " || { skip "escaping: no '$cmd' command yet"; continue; }
  timeout 20 "$NCS" $cmd "$H" >"$T/$cmd.out" 2>"$T/$cmd.err"
  rc=$?
  [ $rc -le 1 ] || fail "escaping: $cmd exits $rc on the hostile trace: $(head -c 200 "$T/$cmd.err")"
  cat "$T/$cmd.out" "$T/$cmd.err" >"$T/$cmd.all"
  n=$(ctl "$T/$cmd.all")
  check_eq "escaping: $cmd prints no raw control bytes (ESC, BEL, CR)" 0 "$n"
done
# The escaped text is still there (escaping must not drop the evidence).
grep -q 'evil\\x1b\[2J' "$T/dump.all" 2>/dev/null && pass "escaping: dump shows the host name with ESC as \\x1b" \
  || fail "escaping: dump does not show the escaped host name: $(grep -m1 host= "$T/dump.all" 2>/dev/null)"

json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>"$T/json.err"; }
for cmd in "report --json" "doctor --json"; do
  c=${cmd%% *}
  "$NCS" help 2>&1 | grep -q "^  $c " || { skip "escaping: no '$c' command yet"; continue; }
  timeout 20 "$NCS" $cmd "$H" >"$T/$c.json" 2>/dev/null
  if json_ok "$T/$c.json"; then pass "escaping: $cmd output is valid JSON"; else fail "escaping: $cmd output is not valid JSON: $(head -1 "$T/json.err")"; fi
  check_eq "escaping: $cmd has no raw control bytes" 0 "$(ctl "$T/$c.json")"
done
# Hostile strings survive a JSON round trip when the report includes them.
if [ -s "$T/report.json" ] && json_ok "$T/report.json"; then
  host=$(python3 -c '
import json,sys
def walk(o):
    if isinstance(o,dict):
        for k,v in o.items():
            if k=="host" and isinstance(v,str): print(v.encode("unicode_escape").decode()); return True
            if walk(v): return True
    elif isinstance(o,list):
        for v in o:
            if walk(v): return True
    return False
walk(json.load(open(sys.argv[1])))' "$T/report.json")
  if [ -n "$host" ]; then
    [[ $host == evil\\x1b\[2J* ]] && pass "escaping: report --json keeps the host name, ESC as \\u001b" || fail "escaping: JSON host name altered: $host"
  else
    skip "escaping: report --json has no host field to compare"
  fi
fi

# HTML and timeline, when those commands exist (issue 5).
if "$NCS" help 2>&1 | grep -q '^  html '; then
  timeout 30 "$NCS" html "$H" -o "$T/r.html" >/dev/null 2>&1
  if [ -s "$T/r.html" ]; then
    ! grep -q -E "<script>alert|<img src=x|<b>host</b>" "$T/r.html" && pass "escaping: html has no injected markup" \
      || fail "escaping: html contains markup from the trace: $(grep -o -m1 -E "<script>alert.{0,20}|<img src=x.{0,20}|<b>host</b>" "$T/r.html")"
    check_eq "escaping: html has no raw control bytes" 0 "$(ctl "$T/r.html")"
    grep -q '&lt;b&gt;host&lt;/b&gt;' "$T/r.html" && pass "escaping: html shows the host name, markup escaped" \
      || fail "escaping: html does not show the escaped host name"
  else
    fail "escaping: html wrote nothing for the hostile trace"
  fi
else
  skip "escaping: no 'html' command yet"
fi
if "$NCS" help 2>&1 | grep -q '^  timeline '; then
  timeout 30 "$NCS" timeline "$H" -o "$T/t.json" >/dev/null 2>&1
  json_ok "$T/t.json" && pass "escaping: timeline JSON is valid" || fail "escaping: timeline JSON invalid: $(head -1 "$T/json.err")"
else
  skip "escaping: no 'timeline' command yet"
fi
