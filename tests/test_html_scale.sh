#!/usr/bin/env bash
# test_html_scale.sh — `ncclscope html` at 64, 512 and 4,096 ranks (issue 27 item 3): synthetic
# jobs (decoder/io/synth.c) with one straggler injected at a known rank. Checks against that
# injected cause and against the page itself read two ways: the straggler is outlined in red
# and named under the arrival-skew heatmap and has a row in the steps picture (with the slowest,
# median and fastest rank: at most 4 rows, never one per rank); no chart draws a bar per rank;
# the share each heatmap cell states equals the Ranks table's share and the table's comm s /
# window s; the transports section names the classes the headline names; and in headless
# Chromium at 1280 x 1000 the page before expanding is under 5 screens tall, never wider than
# the window, with no console error (a screenshot of the first screen kept in
# build/test-artefacts/, taken by the same Chromium run). 4,096 ranks runs with --no-doctor:
# the doctor alone takes minutes there (BENCHMARKS.md), the pictures do not depend on it.
# Scales: NCS_HTML_SCALE_RANKS, "64 512" in `make test`, "64 512 4096" in `make soak`
# (scripts/soak.sh). Chromium checks SKIP when chromium is not installed.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "html_scale: $NCS not built"; exit 0; fi
A=$BUILD/test-artefacts
mkdir -p "$A"
declare -A STRAG=([64]=37 [512]=300 [4096]=3000) CALLS=([64]=200 [512]=60 [4096]=12)
SCALES=${NCS_HTML_SCALE_RANKS:-64 512}
for n in $SCALES; do
  "$NCS" synth -o "$T/t$n" --ranks "$n" --hosts $((n / 8)) --calls "${CALLS[$n]}" --threads 2 \
    --straggler "${STRAG[$n]}:300:1" >/dev/null 2>&1
  nd=; [ "$n" = 4096 ] && nd=--no-doctor
  "$NCS" html $nd "$T/t$n" -o "$T/p$n.html" 2>"$T/err$n"
  check_eq "html_scale $n: exits 0" 0 "$?"
done

for n in $SCALES; do
  P=$T/p$n.html s=${STRAG[$n]}
  out=$(python3 - "$P" "$s" "$n" <<'PY' 2>&1
import re, sys, html
h = open(sys.argv[1]).read(); s = int(sys.argv[2]); n = int(sys.argv[3])
def sec(i):
    a = h.index('<section id="%s"' % i); return h[a:h.index('</section>', a)]
bad = []
sk = sec("skew")
m = re.search(r'outlined in red:([^<]*)', sk)
if not m or ("rank %d " % s) not in m.group(1) + " ": bad.append("skew: straggler %d not named as outlier (%s)" % (s, m and m.group(1)))
if 'class="outlier"' not in sk: bad.append("skew: no outlined cell")
for i in ("comm-share", "skew"):
    bars = len(re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="18"', sec(i)))
    cells = len(re.findall(r'class="cell"', sec(i)))
    if bars > 16: bad.append("%s: %d bars" % (i, bars))
    if cells != n: bad.append("%s: %d heatmap cells for %d ranks" % (i, cells, n))
st = sec("steps")
lanes = re.findall(r'<text[^>]*class="lbl">([^<]*)</text><rect class="lane"', st)
if not (3 <= len(lanes) <= 4): bad.append("steps: %d rows %s" % (len(lanes), lanes))
if "rank %d" % s not in lanes: bad.append("steps: no row for the straggler %d: %s" % (s, lanes))
for w in ("slowest", "median", "fastest"):
    if w not in st: bad.append("steps: the %s rank not said" % w)
# share: heatmap cell titles vs the Ranks table (share column, and comm s / window s)
cell = {int(r): float(v) for r, v in re.findall(r'<title>rank (\d+): ([\d.e+-]+) %</title>', sec("comm-share"))}
rows = re.findall(r'<tr><td>(\d+)</td><td class="l">[^<]*</td><td>\d+</td><td>[^<]*</td><td>\d+</td><td>([\d.]+)</td><td>([\d.]+)</td><td>([\d.e+-]+)%</td>', sec("ranks"))
if len(rows) != n: bad.append("ranks table: %d rows" % len(rows))
for r, win, comm, share in rows:
    r, win, comm, share = int(r), float(win), float(comm), float(share)
    if abs(cell.get(r, -1) - share) > 1e-3 * max(1, share): bad.append("rank %d: chart %s%% table %s%%" % (r, cell.get(r), share)); break
    if win > 0.01 and abs(100 * comm / win - share) > 0.2: bad.append("rank %d: comm/window %.2f%% vs share %s%%" % (r, 100 * comm / win, share)); break
tr = sec("transports")
named = set(re.findall(r'<span class="(\w+)">\1</span>', tr))
if named != {"P2P", "NET"}: bad.append("transports section names %s (synth: P2P in a host, NET across)" % sorted(named))
if "No transport lines" in tr: bad.append("transports: says no transport lines")
hl = re.search(r'Transports: <b>([^<]*)</b>', h)
if hl and set(hl.group(1).split("+")) != named: bad.append("headline transports %s vs section %s" % (hl.group(1), sorted(named)))
print("; ".join(bad) or "ok")
PY
)
  check_eq "html_scale $n: straggler rank $s outlined and in the steps picture; no bar per rank; share chart = Ranks table; transports agree" ok "$out"
done

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  skip "html_scale: chromium not installed (apt-get install chromium): height, overflow and console checks not run"
  exit 0
fi
probe() { # probe PAGE SHOT: a test-only copy that writes the page's size into its DOM; Chromium at
  # 1280 x 1000, which also saves a screenshot of the first screen to SHOT
  sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
      -e 's|</body>|<script>document.body.setAttribute("data-size",document.documentElement.scrollHeight+" "+document.documentElement.scrollWidth+" "+document.documentElement.clientWidth)</script></body>|' \
      "$1" >"$1.probe.html"
  timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --enable-logging=stderr --v=0 --window-size=1280,1000 --screenshot="$2" --dump-dom "file://$1.probe.html" 2>"$1.log" |
    sed -n 's/.*data-size="\([0-9]*\) \([0-9]*\) \([0-9]*\)".*/\1 \2 \3/p' >"$1.size"
}
for n in $SCALES; do rm -f "$A/html-scale-$n.png"; probe "$T/p$n.html" "$A/html-scale-$n.png" & done
wait
for n in $SCALES; do
  read -r h sw cw <"$T/p$n.html.size" || h=
  if [ -z "$h" ]; then fail "html_scale $n: Chromium gave no size"; continue; fi
  check "html_scale $n: under 5 screens tall before expanding (scrollHeight $h, limit 5000)" test "$h" -lt 5000
  check "html_scale $n: no horizontal overflow (scrollWidth $sw, clientWidth $cw)" test "$sw" -le "$cw"
  check_eq "html_scale $n: Chromium logged no console or script error" 0 "$(grep -ciE 'Uncaught|CONSOLE.*error|SyntaxError' "$T/p$n.html.log")"
done
for n in $SCALES; do
  check "html_scale $n: screenshot kept: $A/html-scale-$n.png" test -s "$A/html-scale-$n.png"
  cp "$T/p$n.html" "$A/html-scale-$n.html"
done
