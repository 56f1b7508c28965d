#!/usr/bin/env bash
# test_html.sh — `ncclscope html` (decoder/cmd/html_cmd.c, decoder/render/html.c, decoder/render/svg.c): one self-contained page (no
# script, no network reference) with every section, rendered by headless Chromium without
# errors and not blank; each rank's GPU streams with its compute and NCCL kernels and its exposed
# communication (decoder/render/gpu_lanes.c) on jobs with known streams; and a hostile trace (host name and command line holding <script>,
# markup, quotes and terminal escapes) cannot inject anything. Chromium checks SKIP when
# Debian's `chromium` is not installed (.ci/run installs it).
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then skip "html: $NCS not built"; exit 0; fi
"$NCS" synth -o "$T/s" --ranks 8 --hosts 2 --calls 300 --straggler 2:200:0.5 --mismatch 1:50 >/dev/null 2>&1
"$NCS" html "$T/s" -o "$T/r.html" 2>"$T/err"
check_eq "html: exits 0" 0 "$?"
miss=""
for id in cost summary time-per-op busbw comm-share steps gpu-streams skew stragglers findings doctor transports topology ranks; do
  grep -q "<section id=\"$id\"" "$T/r.html" || miss="$miss $id"
done
check_eq "html: every section present" "" "$miss"
check_eq "html: no script element" 0 "$(grep -ci '<script' "$T/r.html")"
check_eq "html: no network reference (http:, https:, //host, url())" 0 "$(grep -ciE 'https?:|src=\"//|href=\"//|url\(' "$T/r.html")"
check "html: charts are inline SVG" grep -q '<svg class="chart"' "$T/r.html"
check "html: expected-peak line drawn for the transports used" grep -q 'stroke-dasharray' "$T/r.html"
check "html: the size mismatch is a finding" grep -q 'MISMATCH' "$T/r.html"
check "html: topology matrix from the traces' TOPO records (NV18 between GPUs)" sh -c "sed -n '/id=\"topology\"/,/<\/section>/p' '$T/r.html' | grep -q '<td>NV18</td>'"
check "html: transport matrix shows P2P within a host and NET across" sh -c "sed -n '/id=\"transports\"/,/<\/section>/p' '$T/r.html' | grep -q 'class=\"P2P\"' && sed -n '/id=\"transports\"/,/<\/section>/p' '$T/r.html' | grep -q 'class=\"NET\"'"
check "html: the doctor's verdicts are included" sh -c "sed -n '/id=\"doctor\"/,/<\/section>/p' '$T/r.html' | grep -q 'ncclscope doctor: 8 process'"

CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
render() { # render FILE OUTPREFIX: DOM, screenshot and chromium's log (one Chromium run)
  timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --enable-logging=stderr --v=0 --window-size=1100,2400 --screenshot="$2.png" --dump-dom "file://$1" >"$2.dom" 2>"$2.log"
}
if [ -z "$CHROME" ]; then
  skip "html: chromium not installed (apt-get install chromium): render checks not run"
else
  render "$T/r.html" "$T/r"
  miss=""
  for id in cost summary time-per-op busbw comm-share steps gpu-streams skew stragglers findings doctor transports topology ranks; do
    grep -q "id=\"$id\"" "$T/r.dom" || miss="$miss $id"
  done
  check_eq "html: Chromium loaded it and its DOM has every section" "" "$miss"
  check_eq "html: Chromium logged no script or console error" 0 "$(grep -ciE 'Uncaught|CONSOLE.*error|SyntaxError' "$T/r.log")"
  check_eq "html: Chromium's DOM has no script element" 0 "$(grep -ci '<script' "$T/r.dom")"
  nonblank=$(python3 - "$T/r.png" <<'PY' 2>&1
import sys, zlib, struct
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n"
p, idat = 8, b""
while p < len(b):
    n, t = struct.unpack(">I4s", b[p:p + 8]); d = b[p + 8:p + 8 + n]; p += 12 + n
    if t == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", d[:10])
    if t == b"IDAT": idat += d
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}.get(ctype, 1)
stride = 1 + w * bpp
# colours present in the unfiltered first byte of each pixel is not enough (filters); count
# distinct rows instead: a blank page has identical rows
rows = {raw[i * stride + 1:(i + 1) * stride] for i in range(h)}
print("ok" if len(rows) > 50 else "blank: %d distinct rows" % len(rows))
PY
)
  check_eq "html: the screenshot is not blank (many distinct pixel rows)" ok "$nonblank"
fi

# busbw chart: scaled to the data (log y), not to the expected figure: the points span a good
# part of the plot's height and none lies on its edge (the issue: every point flat on zero)
squash=$(python3 - "$T/r.html" <<'PY' 2>&1
import re, sys
h = open(sys.argv[1]).read()
sec = h[h.index('<section id="busbw"'):]
sec = sec[:sec.index('</section>')]
top, height = (float(v) for v in re.search(r'<rect class="plot" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', sec).groups())
ys = [float(v) for v in re.findall(r'<circle class="pt" cx="[\d.]+" cy="([\d.-]+)"', sec)]
vals = [float(v) for v in re.findall(r'<td>([\d.]+)</td></tr>', sec)]
bad = []
if len(ys) < 3: bad.append("only %d points" % len(ys))
elif max(vals) > 2 * min(v for v in vals if v > 0) and max(ys) - min(ys) < 0.4 * height:
    bad.append("points span %.0f of %.0f px" % (max(ys) - min(ys), height))
bad += ["point at y=%.1f on the plot's edge [%.0f, %.0f]" % (y, top, top + height) for y in ys if y < top + 3 or y > top + height - 3]
print("; ".join(bad) or "ok")
PY
)
check_eq "html: busbw points spread over the plot (log scale fit to the data), none on an axis" ok "$squash"
check "html: an expected figure far above the data is named off the scale, not drawn" grep -q 'expected P2P ~370.*off the scale' "$T/r.html"
check "html: the legend has a column of its own (no label drawn over it)" grep -q 'class="legend lbl"' "$T/r.html"

# a few steps per rank: one row per rank (8), each with communication bars inside the window
lanes=$(sed -n '/id="steps"/,/<\/section>/p' "$T/r.html" | grep -c 'class="lane"')
check_eq "html: steps picture has one row per rank" 8 "$lanes"
rows_with_bars=$(sed -n '/id="steps"/,/<\/section>/p' "$T/r.html" | grep 'class="lane"' | grep -c 'class="call"')
check_eq "html: steps picture: every rank's row has communication bars" 8 "$rows_with_bars"
"$NCS" synth -o "$T/big" --ranks 20 --hosts 1 --calls 30 >/dev/null 2>&1
"$NCS" html --no-doctor "$T/big" -o "$T/big.html" 2>/dev/null
check_eq "html: steps picture past 16 ranks: the slowest, median and fastest rank (3 rows)" 3 "$(sed -n '/id="steps"/,/<\/section>/p' "$T/big.html" | grep -c 'class="lane"')"
check "html: steps picture says which ranks it shows and why" grep -q '3 of 20 trace files shown: rank [0-9]* (slowest' "$T/big.html"

# No horizontal scroll of the page at 800, 1100 and 1600 px. The shipped page has no script;
# a test-only copy (kept as an artefact) drops the CSP and writes the page's scrollWidth into
# the DOM, which Chromium dumps. The probe is first shown to see a page that does overflow.
if [ -n "$CHROME" ]; then
  A=$BUILD/test-artefacts
  mkdir -p "$A"
  probe() { # probe PAGE WIDTH [SHOT]: prints "scrollWidth clientWidth"; SHOT: also a screenshot
    sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
        -e 's|</body>|<script>document.body.setAttribute("data-overflow",document.documentElement.scrollWidth+" "+document.documentElement.clientWidth)</script></body>|' \
        "$1" >"$1.probe.html"
    local shot=(); [ -n "${3:-}" ] && shot=(--screenshot="$3")
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
      --window-size="$2",3000 "${shot[@]}" --dump-dom "file://$1.probe.html" 2>/dev/null |
      sed -n 's/.*data-overflow="\([0-9]*\) \([0-9]*\)".*/\1 \2/p'
  }
  sed 's|</body>|<div style="width:3000px">wide</div></body>|' "$T/r.html" >"$T/wide.html"
  # the four Chromium runs below are independent (each its own page copy or output): run at
  # once; the 800 and 1600 px probes also keep a screenshot each (the probe copy looks the same)
  rm -f "$A/html-800.png" "$A/html-1600.png"
  probe "$T/wide.html" 800 >"$T/sw-wide" &
  for w in 800 1100 1600; do
    cp "$T/r.html" "$T/r$w.html"
    shot=; [ $w != 1100 ] && shot=$A/html-$w.png
    probe "$T/r$w.html" "$w" "$shot" >"$T/sw-$w" &
  done
  wait
  sw=$(cat "$T/sw-wide")
  check "html: the overflow probe sees a page that overflows (got: $sw)" test "${sw% *}" -gt "${sw#* }"
  for w in 800 1100 1600; do
    sw=$(cat "$T/sw-$w")
    check "html: no horizontal scroll at $w px (scrollWidth clientWidth: $sw)" test -n "$sw" -a "${sw% *}" -le "${sw#* }"
  done
  cp "$T/r800.html.probe.html" "$A/html-probe.html"
  for w in 800 1600; do
    check "html: screenshot at $w px kept: $A/html-$w.png" test -s "$A/html-$w.png"
  done
  cp "$T/r.html" "$A/html-report.html"
fi

# hostile trace: markup, quotes and escapes in the host name and the command line
H=$'<script>alert(1)</script><img src=x onerror=alert(2)>"\'\x1b[31m'
"$NCS" synth -o "$T/h" --ranks 2 --hosts 1 --calls 20 --host-prefix "$H" --cmdline '<b>host</b> --x="y" <script>alert(3)</script>' >/dev/null 2>&1
"$NCS" html "$T/h" -o "$T/h.html" 2>/dev/null
check_eq "html: hostile trace: exits 0" 0 "$?"
check_eq "html: hostile trace: no injected markup" 0 "$(grep -cE '<script>alert|<img src=x|<b>host</b>' "$T/h.html")"
check_eq "html: hostile trace: no raw ESC byte" 0 "$(LC_ALL=C tr -dc '\033' <"$T/h.html" | wc -c)"
check "html: hostile trace: the host name is shown, escaped" grep -q '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x' "$T/h.html"
if [ -n "$CHROME" ]; then
  render "$T/h.html" "$T/h"
  check_eq "html: hostile trace: Chromium's DOM has no script or img element" 0 "$(grep -ciE '<script|<img' "$T/h.dom")"
  check "html: hostile trace: Chromium shows the text, not markup" grep -q '&lt;script&gt;alert(1)' "$T/h.dom"
fi

# GPU streams (issue 15 part 4): overlap_job (tests/jobs/overlap_job.c) on 2 ranks under the shim
# with the CUPTI double. Per rank one lane per GPU stream holding exactly the kernels the job
# launched on it, compute (blue) and NCCL (orange) kernels told apart, on separate lanes when the
# job used two streams, and a lane of exposed communication (red) with nothing else on it; on
# one stream nothing can run beside an NCCL kernel, so all its time is exposed.
S=4
hjob() { # hjob MODE: traces in $T/k-MODE, page in $T/k-MODE.html
  mkdir -p "$T/k-$1"
  NCCLSCOPE_DIR=$T/k-$1 NCCLDOUBLE_LAT_US=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" LD_LIBRARY_PATH=$DOUBLES \
    bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/overlap_job" --mode "$1" --steps $S --compute-us 1000 \
    >"$T/k-$1.out" 2>&1 || { fail "html kernels $1: job failed"; sed 's/^/    /' "$T/k-$1.out" | head; return 1; }
  "$NCS" html "$T/k-$1" -o "$T/k-$1.html" 2>"$T/k-$1.err" || { fail "html kernels $1: html failed"; return 1; }
}
lanes() { # lanes PAGE: per lane "label:<blue>C<orange>N<red>X", then the table's exposed % per rank
  python3 - "$1" <<'PY' 2>&1
import re, sys
h = open(sys.argv[1]).read()
sec = h[h.index('<section id="gpu-streams"'):]
sec = sec[:sec.index("</section>")]
out = []
for line in sec.split("\n"):
    m = re.search(r'class="lbl">([^<]*)</text><rect class="lane"', line)
    if not m: continue
    lab = re.sub(r"stream \d+", "stream", m.group(1))
    fills = re.findall(r'<rect class="call"[^>]*fill="(#[0-9a-f]+)"', line)
    c, x, n = fills.count("#1f77b4"), fills.count("#d62728"), fills.count("#ff7f0e")
    other = len(fills) - c - x - n
    out.append("%s:%s" % (lab.replace(" ", "_"), "%dC%dN%s%s" % (c, n, "X" if x else "", "?%d" % other if other else "")))
out += re.findall(r'<td>([\d.]+%)</td></tr>', sec)
print(" ".join(out))
PY
}
if [ -x "$BUILD/tests/overlap_job" ] && [ -f "$SHIM" ] && command -v python3 >/dev/null; then
  if hjob serial; then
    check_eq "html kernels serial: per rank one stream lane with its $S compute and $S NCCL kernels, an exposed lane; all NCCL time exposed" \
      "rank_0_stream:4C4N rank_0_exposed:0C0NX rank_1_stream:4C4N rank_1_exposed:0C0NX 100.0% 100.0%" "$(lanes "$T/k-serial.html")"
    # where the step time goes (issue 28 item 4): the figures of report's "What the problems cost"
    "$NCS" report "$T/k-serial" >"$T/k-serial.txt" 2>/dev/null
    want=$(sed -n 's/^  step \([0-9.]*\) ms (median rank.*/\1/p; s/^  [a-z-]* *.*: step \([0-9.]* -> [0-9.]*\) ms .*/\1/p' "$T/k-serial.txt" | tr '\n' ' ')
    got=$(sed -n '/<section id="cost"/,/<\/section>/p' "$T/k-serial.html" | sed -n 's/.*<p>Step <b>\([0-9.]*\) ms<\/b>.*/\1/p; s/.*: step \([0-9.]* -> [0-9.]*\) ms .*/\1/p' | tr '\n' ' ')
    if [ -n "$want" ]; then
      check_eq "html cost: the step and each finding's step if fixed as report states them ($want)" "$want" "$got"
    else fail "html cost: report states no step for the serial job"; sed 's/^/    /' "$T/k-serial.txt" | grep -A3 "What the problems" ; fi
  fi
  # the same past the first 16,384 records a file's step boundary is chosen from
  # (model/stepmark.h): report's steps come from metrics, html's from stepstarts
  mkdir -p "$T/k-long"
  if NCCLSCOPE_DIR=$T/k-long NCCLDOUBLE_LAT_US=100 LD_PRELOAD="$SHIM$SAN_PRELOAD" LD_LIBRARY_PATH=$DOUBLES \
       bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/overlap_job" --mode serial --steps 8500 --compute-us 100 >"$T/k-long.out" 2>&1 &&
     "$NCS" html "$T/k-long" -o "$T/k-long.html" 2>/dev/null; then
    "$NCS" report "$T/k-long" >"$T/k-long.txt" 2>/dev/null
    want=$(sed -n 's/^  step \([0-9.]*\) ms (median rank, \([0-9]*\) step boundaries.*/\1 \2/p; s/^  [a-z-]* *.*: step \([0-9.]* -> [0-9.]*\) ms .*/\1/p' "$T/k-long.txt" | tr '\n' ' ')
    got=$(sed -n '/<section id="cost"/,/<\/section>/p' "$T/k-long.html" | sed -n 's/.*<p>Step <b>\([0-9.]*\) ms<\/b> on the GPU (median rank, \([0-9]*\) step boundaries.*/\1 \2/p; s/.*: step \([0-9.]* -> [0-9.]*\) ms .*/\1/p' | tr '\n' ' ')
    check_eq "html cost, 8,500 steps (files past the records the boundary is chosen from): 8500 boundaries, the step and each finding as report states them ($want)" "$want" "$got"
    check_eq "html cost, 8,500 steps: the job's 8500 steps" 8500 "$(echo "$got" | cut -d' ' -f2)"
    # the headline: the costliest finding when no problem line carries it, as report's headline
    want=$(sed -n 's/^  costliest: \([a-z-]*\), \(.* ms\) (report.*/\1 \2/p' "$T/k-long.txt")
    got=$(sed -n '/id="headline"/,/<\/section>/p' "$T/k-long.html" | sed -n 's/.*<p>Costliest: <b>\([a-z-]*\)<\/b>, \(.* ms\) (below.*/\1 \2/p')
    check_eq "html headline: the costliest finding as report's headline names it (${want:-none})" "${want:-none}" "${got:-none}"
  else fail "html cost, 8,500 steps: job or html failed"; sed 's/^/    /' "$T/k-long.out" | head; fi
  if hjob half; then
    got=$(lanes "$T/k-half.html")
    check_eq "html kernels half: per rank $((2 * S)) compute kernels on one stream lane, $S NCCL kernels on another, an exposed lane" \
      "rank_0_stream:8C0N rank_0_stream:0C4N rank_0_exposed:0C0N rank_1_stream:8C0N rank_1_stream:0C4N rank_1_exposed:0C0N" \
      "$(echo "$got" | tr ' ' '\n' | grep -v '%$' | sed 's/\(exposed:0C0N\)X$/\1/' | tr '\n' ' ' | sed 's/ $//')"
    check "html kernels half: the section says in words what exposed communication is" \
      grep -q 'exposed communication</b>: NCCL kernel time with no compute kernel' "$T/k-half.html"
    if [ -n "$CHROME" ]; then
      render "$T/k-half.html" "$T/kh"
      check_eq "html kernels half: Chromium renders the GPU-stream lanes (6 lanes in its DOM), no console error" "6 0" \
        "$(sed -n '/id="gpu-streams"/,/<\/section>/p' "$T/kh.dom" | grep -o 'class="lane"' | wc -l) $(grep -ciE 'Uncaught|CONSOLE.*error' "$T/kh.log")"
      check_eq "html cost: Chromium's DOM holds one bar of the step's parts, its compute part first" 1 \
        "$(sed -n '/id="cost"/,/<\/section>/p' "$T/kh.dom" | grep -c 'class="split"><div class="c-compute"')"
    fi
  fi
else
  skip "html kernels: overlap_job, the shim or python3 missing"
fi
check "html: without kernel activity the GPU-stream section says so and why" \
  grep -q 'No kernel activity in the traces: it needs traces of format 1.1' "$T/r.html"
