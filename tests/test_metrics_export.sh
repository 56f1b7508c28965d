#!/usr/bin/env bash
# test_metrics_export.sh — NCCLSCOPE_METRICS without Prometheus (test_prometheus.sh reads the
# same files through the real node exporter and Prometheus): the files' counters equal each
# job's own truth (ddp_job, 2 ranks; fork_job: the parent, its NCCL-using child and its exec'ed
# child each have their own file, the idle child none); a process that never calls NCCL writes
# nothing; a metrics directory that cannot be made changes nothing the job sees (same stdout,
# status) and costs no call in the trace; the shim imports no socket call (no listening socket).
source "$(dirname "$0")/lib.sh"
JOBS=$BUILD/tests
command -v python3 >/dev/null || { skip "metrics export: needs python3"; exit 0; }

# prom_cmp ranks MDIR TDIR: every truth-rank<R>.json's calls and bytes per data op equal the sum
#   over MDIR's files of rank R's ncclscope_calls_total / ncclscope_bytes_total
# prom_cmp fork MDIR TDIR: one file per truth-<role>-<pid>.json, its AllReduce calls the truth's
prom_cmp() {
  python3 - "$@" <<'PY'
import glob, json, re, sys
mode, mdir, tdir = sys.argv[1:4]
def read(f):
    out = {}
    for line in open(f):
        m = re.match(r'(\w+)\{(.*)\} (\S+)$', line.strip())
        if m:
            lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            k = (m.group(1), lab.get("rank"), lab.get("op"))
            out[k] = out.get(k, 0) + float(m.group(3))
    return out
bad = []
if mode == "ranks":
    got = {}
    for f in glob.glob(mdir + "/ncclscope-*.prom"):
        for k, v in read(f).items():
            got[k] = got.get(k, 0) + v
    truths = glob.glob(tdir + "/truth-rank*.json")
    if not truths: bad.append("no truth file")
    for t in truths:
        tr = json.load(open(t)); r = str(tr["rank"])
        for op in ("AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv"):
            o = tr["ops"].get(op, {"calls": 0, "bytes": 0})
            for fld, met in (("calls", "ncclscope_calls_total"), ("bytes", "ncclscope_bytes_total")):
                if got.get((met, r, op), 0) != o[fld]:
                    bad.append("rank %s %s %s: %s != %s" % (r, op, fld, got.get((met, r, op), 0), o[fld]))
else:
    want = {}
    for t in glob.glob(tdir + "/truth-*.json"):
        tr = json.load(open(t)); want[str(tr["pid"])] = tr["ops"].get("AllReduce", {}).get("calls", 0)
    files = {re.sub(r".*-(\d+)\.prom$", r"\1", f): f for f in glob.glob(mdir + "/ncclscope-*.prom")}
    if not want or set(files) != set(want): bad.append("files %s, truth %s" % (sorted(files), sorted(want)))
    for pid, f in files.items():
        c = sum(v for k, v in read(f).items() if k[0] == "ncclscope_calls_total" and k[2] == "AllReduce")
        if c != want.get(pid): bad.append("pid %s: %s != %s" % (pid, c, want.get(pid)))
for b in bad[:10]: print(b)
sys.exit(1 if bad else 0)
PY
}

# 1. ddp_job, 2 ranks: calls and bytes per rank and op, from the files, equal the truth
mkdir -p "$T/truth" "$T/m"
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/tr NCCLSCOPE_METRICS=m NCCLSCOPE_METRICS_MS=100 \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$JOBS/ddp_job" --steps 12 --truth "$T/truth" >"$T/s.out" 2>/dev/null)
check_eq "metrics export: ddp_job ran" 0 $?
check_eq "metrics export: a relative NCCLSCOPE_METRICS is the start directory's, one file per rank" 2 \
  "$(ls "$T"/m/ncclscope-*.prom 2>/dev/null | wc -l)"
check "metrics export: calls and bytes per rank and op equal ddp_job's truth" prom_cmp ranks "$T/m" "$T/truth"
(cd "$T" && bash "$ROOT/tests/jobs/launch.sh" 2 "$JOBS/ddp_job" --steps 12 >"$T/p.out" 2>/dev/null)
check "metrics export: the job's stdout is the same as without the shim" cmp "$T/p.out" "$T/s.out"

# 2. fork_job: each process that used NCCL has its own file with its own calls; the idle child none
if ! tsan_fork_skip "metrics export: fork_job"; then
mkdir -p "$T/ft" "$T/fm"
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/ftr NCCLSCOPE_METRICS=$T/fm NCCLSCOPE_METRICS_MS=100 \
  "$JOBS/fork_job" --truth "$T/ft" -n 40 >/dev/null 2>&1)
check_eq "metrics export: fork_job ran" 0 $?
check "metrics export: fork_job: one file per NCCL-using process, its AllReduce calls its truth" \
  prom_cmp fork "$T/fm" "$T/ft"
idle=$(ls "$T"/ft/idle-*.json 2>/dev/null | sed 's/.*idle-//; s/\.json//')
check "metrics export: fork_job's idle child wrote no metrics file" \
  test -n "$idle" -a -z "$(ls "$T"/fm/ncclscope-*-"$idle".prom 2>/dev/null)"
fi

# 3. inert: a process that never calls NCCL creates no metrics directory
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_METRICS=$T/inert bash -c 'echo hi' >/dev/null)
check "metrics export: a process without NCCL creates no metrics directory" test ! -e "$T/inert"

# 4. a metrics directory that cannot be made: the job as without it, its trace complete
mkdir -p "$T/truth4"
: >"$T/notadir"
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/tr4 NCCLSCOPE_METRICS=$T/notadir/m NCCLSCOPE_METRICS_MS=100 \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$JOBS/ddp_job" --steps 12 --truth "$T/truth4" >"$T/s4.out" 2>/dev/null)
check_eq "metrics export: unwritable metrics directory: the job succeeds" 0 $?
check "metrics export: unwritable metrics directory: same stdout as without the shim" cmp "$T/p.out" "$T/s4.out"
"$NCS" report --json "$T/tr4" >"$T/r4.json" 2>/dev/null
read -r got4 want4 < <(python3 -c "
import json
d = json.load(open('$T/r4.json'))
got = sum(r['ops'].get('AllReduce', {}).get('calls', 0) for r in d['ranks'])
want = sum(json.load(open('$T/truth4/truth-rank%d.json' % r))['ops']['AllReduce']['calls'] for r in (0, 1))
print(got, want)" 2>/dev/null)
check "metrics export: unwritable metrics directory: every AllReduce in the trace (${got4:-?} of ${want4:-?})" \
  test -n "${want4:-}" -a "${got4:-x}" = "${want4:-y}"
check_eq "metrics export: no temporary file left" "" "$(find "$T" -name '.ncclscope-*.tmp' | head -3)"
# no listening socket inside the job (docs/METRICS-EXPORT.md: the node exporter serves the
# files): the shim imports none of the socket calls, so it can open no socket of its own
command -v nm >/dev/null || { skip "metrics export: no nm (binutils) to list the shim's imports"; exit 0; }
imp=$(nm -D --undefined-only "$SHIM" | awk '{print $NF}' | sed 's/@.*//' |
  grep -xE 'socket|socketpair|bind|listen|accept|accept4|connect' | tr '\n' ' ')
check_eq "metrics export: the shim imports no socket call (socket, bind, listen, accept, connect)" "" "$imp"
