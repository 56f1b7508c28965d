#!/usr/bin/env bash
# test_callsite_symbols.sh — the symbol the shim writes beside each call-site frame (CALLSITE
# records, docs/FORMAT.md; shim/callsite.c ask_all: what dladdr answers, looked up for a batch
# of sites at once) against the truth read from the ELF files themselves: for each frame of
# `ncclscope dump`, its module's file (MODULE path) is read with readelf, and the dynamic symbol
# holding the frame's return address - 1 (defined, not absolute, not TLS; the highest start
# among those whose [value, value + size) holds it, or whose value is it when its size is 0) is
# the expected name (any of the names sharing that start), and return address - its start the
# expected offset; no such symbol: the frame must have none. Jobs: rate_job at 8 frames below
# its threads' functions (2 threads: frames in the job and in libc), and the Python ctypes job
# (24 frames: in the interpreter, whose functions are dynamic symbols, and in libffi).
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "callsite_symbols: $f not built"; exit 0; }; done
command -v readelf >/dev/null || { skip "callsite_symbols: readelf is not installed"; exit 0; }
command -v python3 >/dev/null || { skip "callsite_symbols: python3 is not installed"; exit 0; }

# verify TRACE: prints "frames named unnamed wrong" and the first wrong frames
verify() {
  "$NCS" dump "$1" 2>/dev/null | python3 -c '
import re, subprocess, sys
mods, frames = {}, []
for line in sys.stdin:
    m = re.match(r"MODULE module=(\d+) base=\S+ path=(.*) build_id=", line)
    if m: mods[m.group(1)] = m.group(2)
    m = re.match(r"  #\d+ module=(\d+) offset=0x([0-9a-f]+) symbol=(.*)\+0x([0-9a-f]+)$", line)
    if m: frames.append((m.group(1), int(m.group(2), 16), m.group(3), int(m.group(4), 16)))
syms = {}
def table(path):
    if path in syms: return syms[path]
    lo = min(int(l.split()[2], 16) for l in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout.splitlines()
             if l.split()[:1] == ["LOAD"])
    out = []
    for l in subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True, text=True).stdout.splitlines():
        p = l.split()
        if len(p) < 8 or not p[0][:-1].isdigit() or p[6] in ("UND", "ABS") or p[3] == "TLS": continue
        out.append((int(p[1], 16), int(p[2], 0), p[7].split("@")[0]))
    syms[path] = (lo & ~0xfff, out)
    return syms[path]
named = unnamed = wrong = 0
bad = []
for mod, off, name, soff in frames:
    if mod == "0" or mod not in mods: continue
    lo, tab = table(mods[mod])
    a = lo + off - 1  # the return address - 1, as an address in the file
    hold = [(v, s, n) for v, s, n in tab if v <= a and (a < v + s or (s == 0 and a == v))]
    if not hold:
        ok = name == "" and soff == 0
        unnamed += ok
    else:
        top = max(v for v, s, n in hold)
        ok = name in [n for v, s, n in hold if v == top] and soff == a + 1 - top
        named += ok
    if not ok:
        wrong += 1
        bad.append("%s+0x%x: got %s+0x%x" % (mods[mod], off, name or "-", soff))
print(named, unnamed, wrong, *bad[:3])
'
}

d=$T/rate
if ! tsan_sites_skip "callsite_symbols: rate_job -t 2 (its 2 calling threads exit)"; then
NCCLSCOPE_DIR=$d NCCLSCOPE_GPU_TIMING=0 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 200 -t 2 -s 8 >/dev/null 2>&1
check_eq "callsite_symbols: rate_job -t 2 -s 8 runs" 0 "$?"
read -r named unnamed wrong rest < <(verify "$(ls "$d"/*.ncs | head -1)")
check_eq "callsite_symbols: rate_job: every frame's symbol is the ELF file's ($named named, $unnamed in no dynamic symbol) ${rest:-}" 0 "${wrong:-x}"
[ "${named:-0}" -gt 0 ] && [ "${unnamed:-0}" -gt 0 ] && pass "callsite_symbols: rate_job: frames with and without a symbol were checked" ||
  fail "callsite_symbols: rate_job: named $named, unnamed $unnamed (both kinds expected: libc's clone, the job's own static functions)"
fi

if [ -e "$DOUBLES/libnccl.so.2" ]; then
  mkdir -p "$T/py/second"
  cp "$DOUBLES/libnccl.so.2" "$T/py/second/libnccl.so.2"
  (cd "$T/py" && NCCLSCOPE_CALLSITE_DEPTH=24 NCCLSCOPE_DIR="$T/py/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" \
    python3 "$ROOT/tests/jobs/ctypes_job.py" "$DOUBLES" 10 "$T/py/truth.json" "$T/py/second/libnccl.so.2" >/dev/null 2>&1)
  check_eq "callsite_symbols: ctypes_job runs" 0 "$?"
  read -r named unnamed wrong rest < <(verify "$(ls "$T"/py/tr/*.ncs | head -1)")
  check_eq "callsite_symbols: ctypes_job: every frame's symbol is the ELF file's ($named named, $unnamed in no dynamic symbol) ${rest:-}" 0 "${wrong:-x}"
  [ "${named:-0}" -ge 8 ] && pass "callsite_symbols: ctypes_job: $named frames named (the interpreter's and libffi's functions)" ||
    fail "callsite_symbols: ctypes_job: only ${named:-0} frames named"
else
  skip "callsite_symbols: the NCCL double is not built: no ctypes job"
fi
