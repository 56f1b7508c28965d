#!/usr/bin/env bash
# test_callsite_memo.sh — call sites when the shim answers from its memo (shim/callsite.c: a
# stack once unwound is recognised again by the return addresses at the same distances above
# the caller's stack pointer; docs/SHIM.md "Call sites"). tests/jobs/path_job.c issues every
# AllReduce from one line of issue() (one return address for the wrapper), reached along paths
# that change from call to call: via_alpha -> issue and via_beta -> issue (the same immediate
# caller, different outer frames), and a recursion descend x (d + 1) -> issue at depths 0..12 in
# a mixed order (the same site at different stack depths), on 2 threads, 4 rounds. It writes its
# truth: per call, its own functions on the stack, innermost first.
# Checked, for every AllReduce of every thread, against that truth: the recorded stack (ncclscope
# dump's CALLSITE frames) named with the job binary's own symbol table (nm), the job's frames
# innermost first, is the job's path cut to NCCLSCOPE_CALLSITE_DEPTH frames; one id per such
# stack and one stack per id (alpha and beta apart; the depths apart until the cut makes them
# equal); at the default depth (8) and at 16 (the deepest the memo keeps) and 24 (beyond it: every
# call unwinds). With NCCLSCOPE_DEBUG=1 the shim says how many captures unwound: at depth 8 at
# most two per distinct stack and thread, out of 328 AllReduce calls (the memo answered the rest).
source "$(dirname "$0")/lib.sh"
tsan_sites_skip "callsite_memo: every check (path_job --threads 2: its threads unwind, then exit)" && exit 0
JOB=$BUILD/tests/path_job
for f in "$SHIM" "$NCS" "$JOB" "$DOUBLES/libnccl.so.2"; do [ -e "$f" ] || { skip "callsite_memo: $f not built"; exit 0; }; done
command -v nm >/dev/null || { skip "callsite_memo: nm (binutils) is not installed: the job's symbols cannot be read"; exit 0; }
nm -S --defined-only "$JOB" >"$T/syms"

cat >"$T/check.py" <<'PY'
import re, struct, subprocess, sys
ncs, job, syms_file, truth_file, trdir, depth = sys.argv[1:7]
depth = int(depth)
# the job binary's own functions (nm -S) and where its image starts (first PT_LOAD, page)
syms = []
for line in open(syms_file):
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        syms.append((int(p[0], 16), int(p[1], 16), p[3].split(".")[0]))
with open(job, "rb") as f:
    elf = f.read()
phoff, = struct.unpack_from("<Q", elf, 0x20)
phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
loads = [struct.unpack_from("<IIQQ", elf, phoff + i * phentsize) for i in range(phnum)]
image = min(v for t, _, _, v in loads if t == 1) & ~0xfff
def name(off):
    a = image + off - 1  # a return address may be one past its call: look up a - 1
    for s, n, nm in syms:
        if s <= a < s + n: return nm
    return "?%x" % off
truth = [l.split() for l in open(truth_file)]
import glob
calls = {}      # thread -> [stack names]
ids = {}        # id -> stack names
bad = []
for path in sorted(glob.glob(trdir + "/*.ncs")):
    out = subprocess.run([ncs, "dump", path], capture_output=True, text=True).stdout
    mods, sites, cur = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"MODULE module=(\d+) base=\S+ path=(\S+)", line)
        if m: mods[m.group(1)] = m.group(2)
        m = re.match(r"CALLSITE id=(\d+) frames=\d+", line)
        if m: cur = sites.setdefault(m.group(1), []); cur.clear(); continue
        m = re.match(r"  #\d+ module=(\d+) offset=0x([0-9a-f]+)", line)
        if m and cur is not None: cur.append((m.group(1), int(m.group(2), 16))); continue
        m = re.match(r"CALL op=AllReduce thread=(\d+) .* callsite=(\d+) ", line)
        if m:
            fr = sites.get(m.group(2), [])
            names = []
            for mod, off in fr:
                if mods.get(mod) != job: break
                names.append(name(off))
            calls.setdefault((path, m.group(1)), []).append((m.group(2), names, len(fr)))
if not calls: print("no AllReduce calls in", trdir); sys.exit(1)
n = 0
for key, seq in calls.items():
    if len(seq) != len(truth):
        bad.append("%s: %d calls, the job made %d" % (key, len(seq), len(truth))); continue
    for (cid, names, nframes), want in zip(seq, truth):
        n += 1
        if names != want[:depth] or nframes > depth:
            bad.append("id %s: %s, the job's path %s" % (cid, " ".join(names), " ".join(want[:depth])))
        ids.setdefault(cid, set()).add(tuple(names))
stacks = {}
for cid, s in ids.items():
    if len(s) != 1: bad.append("id %s names %d stacks" % (cid, len(s)))
    for st in s: stacks.setdefault(st, set()).add(cid)
for st, c in stacks.items():
    if len(c) != 1: bad.append("stack %s has %d ids" % (" ".join(st), len(c)))
print("ok" if not bad else bad[:5], n, len(stacks))
PY

run() { # DEPTH: one run, stderr kept
  rm -rf "$T/tr$1"
  NCCLSCOPE_DEBUG=1 NCCLSCOPE_CALLSITE_DEPTH=$1 NCCLSCOPE_DIR="$T/tr$1" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 60 \
    "$JOB" --threads 2 --rounds 4 --truth "$T/truth" >"$T/job$1.out" 2>"$T/job$1.err"
}
# the distinct stacks the truth holds, cut to D frames of the job
distinct() { cut -d' ' -f1-"$1" "$T/truth" | sort -u | wc -l; }

run 8
check_eq "callsite_memo: path_job runs (2 threads, 4 rounds)" 0 "$?"
calls=$((2 * $(wc -l <"$T/truth")))
got=$(python3 "$T/check.py" "$NCS" "$JOB" "$T/syms" "$T/truth" "$T/tr8" 8 2>&1)
check_eq "callsite_memo: depth 8: every call's stack is the job's own path (alpha and beta through one caller, recursion at 13 depths, coroutine stacks), one id per stack" \
  "ok $calls $(distinct 8)" "$got"
unwound=$(sed -n 's/.*call sites: \([0-9]*\) captures unwound the stack.*/\1/p' "$T/job8.err")
# besides the AllReduce stacks, each thread's GetUniqueId, CommInitRank and CommDestroy unwind
bound=$((2 * 2 * ($(distinct 8) + 3)))
check "callsite_memo: depth 8: the memo answered (${unwound:-no} captures unwound, at most $bound: two per stack and thread)" \
  test -n "$unwound" -a "${unwound:-0}" -le "$bound"
for d in 16 24; do
  run $d
  got=$(python3 "$T/check.py" "$NCS" "$JOB" "$T/syms" "$T/truth" "$T/tr$d" $d 2>&1)
  check_eq "callsite_memo: depth $d: every call's stack is the job's own path, one id per stack" "ok $calls $(distinct $d)" "$got"
done
