#!/usr/bin/env bash
# test_gate_union_threads.sh — the CI gate's communication-share blocks (analysis/gate_samples.h,
# docs/COMPARE.md "Communication share") on traces whose calling threads' batches interleave
# (tests/jobs/rate_job.c on a stub NCCL whose calls return at once: each thread a rank of its
# own 1-rank communicator, one process, one trace; a chunk holds each thread's batch after
# another's of the same time). The truth is made here from the AllReduce host intervals on the
# job clock (`ncclscope timeline`'s ts and dur, in ns; as many as `ncclscope dump` shows, whose
# raw times the job clock maps with a slope that moves ends by a nanosecond), sorted and
# merged, the window (earliest start to latest end) cut into the gate's
# fine blocks (1 ms doubled until fewer than 4096 cover it) and its 8 parts taking the fine
# blocks' time in proportion to overlap, each part's share in percent. `compare A B --json`
# judges those blocks: its block_change_points is the Hodges-Lehmann shift (median of the 64
# differences B - A) and its drift_points the larger of the two runs' half-to-half shifts, both
# recomputed here from the truth's blocks; and no run is reported with blocks placed late
# (`blocks_late`; a recording with them is made again once, then skipped: below). The union
# taken in arrival order (before the lanes) got both wrong.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "gate union threads: needs python3"; exit 0; }
stub_nccl || { fail "gate union threads: the stub NCCL does not build"; exit 0; }

# run NAME FLUSH_MS RATE_JOB_ARGS...: the job under the shim, its trace in $T/NAME
run() {
  local name=$1 d=$T/$1
  shift
  stub_job "$d" "$@" ||
    { fail "$name: the job failed"; sed 's/^/    /' "$d/out" | head -5; return 1; }
  "$NCS" dump "$d"/*.ncs >"$d/dump" 2>/dev/null || { fail "$name: dump failed"; return 1; }
  "$NCS" timeline "$d" -o "$d/tl.json" >/dev/null 2>&1 || { fail "$name: timeline failed"; return 1; }
}

# blocks DIR: the truth's 8 blocks of a run, after the longest batch of one thread in its dump
# (0 when the timeline does not hold the dump's AllReduce calls)
blocks() {
  python3 -c '
import json, sys
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[2])
from ivtruth import dump_calls, timeline_calls, merge
_, calls, maxrun = dump_calls(open(sys.argv[1] + "/dump"), only_ok=False)
iv = timeline_calls(sys.argv[1] + "/tl.json")
if len(iv) != calls: maxrun = 0
merged = merge(iv)
t0, t1 = merged[0][0], max(e for s, e in merged)
bns = 1000000
while t1 - t0 >= 4096 * bns: bns *= 2
fine = [0.0] * 4096
for s, e in merged:
    t = s
    while t < e:
        b = (t - t0) // bns
        u = min(e, t0 + (b + 1) * bns)
        fine[b] += u - t
        t = u
span = float(t1 - t0)
out = []
for p in range(8):
    p0, p1 = span * p / 8, span * (p + 1) / 8
    c, b = 0.0, int(p0 / bns)
    while b < 4096 and b * bns < p1:
        lo, hi = max(b * bns, p0), min(b * bns + bns, p1)
        if hi > lo: c += fine[b] * (hi - lo) / bns
        b += 1
    out.append(100.0 * c / (p1 - p0))
print(maxrun, " ".join(repr(x) for x in out))
' "$1" "$ROOT/tests"
}

# A recording whose thread was held back by the machine's load (one of its batches written after
# the union committed past it) is one the union cannot place: compare says so (blocks_late), and
# its blocks are not the truth's. That is a race of the recording, not the case under test: the
# jobs are recorded once more, and a second such recording is a skip, never a pass.
for attempt in 1 2; do
rm -rf "$T/a" "$T/b"
run a 500 -n 100000 -t 2 -r 1000000 || exit 0
run b 100 -n 60000 -t 3 -r 500000 -d 60 || exit 0
"$NCS" compare --json "$T/a" "$T/b" >"$T/c.json" 2>"$T/c.err" || true
late=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["comm_share"].get("blocks_late", [])))' "$T/c.json" 2>/dev/null)
[ "${late:-0}" = 0 ] && break
[ $attempt = 2 ] && { skip "gate union threads: both recordings had a thread's batch written after the union committed past it (load): $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["comm_share"]["blocks_late"])' "$T/c.json")"; exit 0; }
done
ba=$(blocks "$T/a"); bb=$(blocks "$T/b")
got=$(python3 -c '
import json, sys
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
a = [float(x) for x in sys.argv[1].split()[1:]]
b = [float(x) for x in sys.argv[2].split()[1:]]
c = json.load(open(sys.argv[3]))["comm_share"]
hl = med([y - x for x in a for y in b])
dr = max(abs(med([y - x for x in v[:4] for y in v[4:]])) for v in (a, b))
ok = lambda x, y: abs(x - y) <= 1e-6 * max(1.0, abs(y))
print("ok" if ok(c["block_change_points"], hl) and ok(c["drift_points"], dr) and "blocks_late" not in c else "bad",
      c["blocks_base"], c["blocks_new"], "change %r (truth %r), drift %r (truth %r), late %s" %
      (c["block_change_points"], hl, c["drift_points"], dr, c.get("blocks_late", "none")))
' "$ba" "$bb" "$T/c.json" 2>&1)
read -r verdict nba nbb rest <<<"$got"
ra=${ba%% *}; rb=${bb%% *}
# the case is there: a thread's batch longer than the union's first buffer (4096 intervals)
if [ "$verdict" = ok ] && [ "$nba" = 8 ] && [ "$nbb" = 8 ] && [ "${ra:-0}" -gt 4096 ] && [ "${rb:-0}" -gt 4096 ]; then
  pass "compare's share blocks = the dump's union (2 threads vs 3 drifting, batches up to $ra / $rb calls): $rest"
else
  fail "compare's share blocks against the dump's union: $got; batches $ra / $rb (want > 4096)"
  head -3 "$T/c.err"
fi
