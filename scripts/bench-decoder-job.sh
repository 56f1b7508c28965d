#!/usr/bin/env bash
# bench-decoder-job.sh [BUILD] — the decoder rows of issue 14, side by side in one run, each
# figure min/median/max over REPS rounds (default 3), the sides interleaved within each round:
#   1. one trace of ONE CALL records (default 5,000,000; the test writer's DDP-like AllReduce
#      loop, as scripts/bench-decoder.sh): records per CPU-second (user + system of the process:
#      one core whatever the machine) of the bare reader (test_trace_roundtrip --bench-read),
#      of `zstd -d` on the same compressed chunks (the zstd frames cut out of the trace and
#      concatenated: a row chunk's payload, a column chunk's zstd-coded columns), and of
#      `ncclscope report`, before and after;
#   2. a job of RANKS ranks x CALLS collectives (default 1024 x 100,000, GPU times, 8 ranks per
#      host, one straggler; `ncclscope synth`): wall time, CPU seconds (user + system: the
#      figure a loaded machine distorts least) and peak RSS of `report`, `report --json`,
#      `doctor` and `html`, on all the machine's cores (NCCLSCOPE_THREADS unset), before and
#      after.
# "before" is the decoder built from git ref BASE (or BENCH_BEFORE_REV; unset: only "after" runs)
# in a scratch worktree; "after" is BUILD (default build). The load average is printed at the
# start and end of each part. Outputs go to /dev/null; exit codes 0 and 1 (findings) are
# accepted, anything else stops the script. ONE=0 leaves part 1 out; JOB=DIR reuses a job that
# `ncclscope synth` wrote (its RANKS and CALLS are then the directory's).
# Example: BASE=923821a REPS=3 scripts/bench-decoder-job.sh build
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BASE=${BASE:-${BENCH_BEFORE_REV:-}}
REPS=${REPS:-3}; ONE=${ONE:-5000000}; RANKS=${RANKS:-1024}; CALLS=${CALLS:-100000}
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-benchjob.XXXXXX")
cleanup() { [ -n "$BASE" ] && git -C "$ROOT" worktree remove --force "$W/base" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
GEN=$BUILD/tests/test_trace_roundtrip
[ -x "$BUILD/ncclscope" ] && [ -x "$GEN" ] || { echo "build first: make BUILD=$BUILD decoder $GEN" >&2; exit 2; }
for t in /usr/bin/time zstd python3; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
declare -A NCS=([after]=$BUILD/ncclscope)
SIDES=after
if [ -n "$BASE" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE"
  make -s -C "$W/base" BUILD="$W/base/build" -j"$(nproc)" decoder >/dev/null
  NCS[before]=$W/base/build/ncclscope
  SIDES="before after"
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "# bench-decoder-job: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), before=${BASE:-none}$([ -n "$BASE" ] && echo " ($(git -C "$ROOT" rev-parse --short "$BASE"))") after=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- decoder include || echo '+changes'), REPS=$REPS"
# stats VALUES...: "min/median/max"
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s/%s/%s", v[1], v[int((NR+1)/2)], v[NR]}'; }
# timed OUT CMD...: runs CMD, appends "wall_s cpu_s rss_MiB" to OUT
timed() {
  local out=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$W/t" "$@" >/dev/null 2>"$W/err" || { rc=$?; [ $rc -eq 1 ] || { echo "failed ($rc): $* $(head -c 300 "$W/err")" >&2; exit 1; }; }
  tail -n 1 "$W/t" | awk '{printf "%s %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' >>"$out"
}
col() { awk -v c="$2" '{print $c}' "$1"; }
# M records per CPU-s of each run in $1 ($2 records; a run under the 10 ms resolution of time(1) is left out)
rate() { for c in $(col "$1" 2); do [ "$c" != 0.00 ] && echo "$2 / $c / 1000000" | bc -l | xargs printf '%.1f\n'; done; return 0; }

if [ "$ONE" != 0 ]; then
echo "## 1. one trace, $ONE CALL records: M records per CPU-second, min/median/max of $REPS (load $(load))"
"$GEN" --bench-write "$W/one.ncs" "$ONE" >/dev/null
recs=$("$GEN" --bench-read "$W/one.ncs" | sed -n 's/^records \([0-9]*\).*/\1/p')
python3 - "$W/one.ncs" "$W/one.zst" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
out = open(sys.argv[2], 'wb')
at = struct.unpack_from('<I', d, 12)[0]            # file header size (docs/FORMAT.md)
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
while at + 40 <= len(d):                           # chunk header: magic, payload bytes, ...
    magic, payload = struct.unpack_from('<II', d, at)
    flags = struct.unpack_from('<I', d, at + 36)[0]
    if magic != 0x4B43534E: break
    p = d[at + 40:at + 40 + payload]
    if not flags & 4:                              # rows: the payload is one zstd frame
        out.write(p)
    else:                                          # columns (2.0): the zstd frames of its columns
        n, i = varint(p, 0); cols = []
        for _ in range(n):
            desc = []
            for _ in range(6): x, i = varint(p, i); desc.append(x)
            cols.append(desc)                      # id, flags, count, first, width, stored
        for cid, cfl, cnt, first, width, stored in cols:
            if cfl & 4: out.write(p[i:i + stored])
            i += stored
    at += 40 + payload
EOF
zstd -q -t "$W/one.zst" || { echo "the chunk payloads are not zstd frames" >&2; exit 1; }
: >"$W/reader"; : >"$W/zstd"; for side in $SIDES; do : >"$W/one.$side"; done
for i in $(seq "$REPS"); do
  "$GEN" --bench-read "$W/one.ncs" | sed -n 's/.*cpu \([0-9.]*\) s.*/0 \1 0/p' >>"$W/reader"
  timed "$W/zstd" zstd -q -d -c "$W/one.zst"
  for side in $SIDES; do timed "$W/one.$side" "${NCS[$side]}" report "$W/one.ncs"; done
done
printf '%-34s %-18s %-18s %s\n' what "M records/CPU-s" "CPU s" "peak MiB"
printf '%-34s %-18s %-18s %s\n' "reader alone" "$(stats $(rate "$W/reader" "$recs"))" "$(stats $(col "$W/reader" 2))" "-"
printf '%-34s %-18s %-18s %s\n' "zstd -d (same chunks)" "$(stats $(rate "$W/zstd" "$recs"))" "$(stats $(col "$W/zstd" 2))" "$(stats $(col "$W/zstd" 3))"
for side in $SIDES; do
  printf '%-34s %-18s %-18s %s\n' "$side: ncclscope report" "$(stats $(rate "$W/one.$side" "$recs"))" "$(stats $(col "$W/one.$side" 2))" "$(stats $(col "$W/one.$side" 3))"
done
echo "(load at the end $(load); $(stat -c %s "$W/one.ncs") bytes, $recs records)"
rm -f "$W/one.ncs" "$W/one.zst"
fi

hosts=$(( RANKS >= 8 ? RANKS / 8 : 1 ))
if [ -n "${JOB:-}" ]; then ln -s "$(cd "$JOB" && pwd)" "$W/job"; RANKS=$(ls "$W/job/" | grep -c '\.ncs$'); CALLS="(from $JOB)"
else "${NCS[after]}" synth -o "$W/job" --ranks "$RANKS" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
       --straggler 3:50:0.1 --chunk-calls 8192 >/dev/null; fi
echo "## 2. $RANKS ranks x $CALLS calls on $(nproc) CPUs ($(du -sLm "$W/job" | cut -f1) MiB in $(ls "$W/job/" | wc -l) files): min/median/max of $REPS (load $(load))"
for cmd in report report-json doctor html; do for side in $SIDES; do : >"$W/$cmd.$side"; done; done
for i in $(seq "$REPS"); do
  for cmd in report report-json doctor html; do
    for side in $SIDES; do
      case $cmd in
        report) timed "$W/$cmd.$side" "${NCS[$side]}" report "$W/job" ;;
        report-json) timed "$W/$cmd.$side" "${NCS[$side]}" report --json "$W/job" ;;
        doctor) timed "$W/$cmd.$side" "${NCS[$side]}" doctor "$W/job" ;;
        html) timed "$W/$cmd.$side" "${NCS[$side]}" html "$W/job" -o "$W/r.html" ;;
      esac
    done
  done
done
printf '%-8s %-14s %-22s %-22s %-22s\n' side command wall_s cpu_s peak_MiB
for cmd in report report-json doctor html; do
  for side in $SIDES; do
    f=$W/$cmd.$side
    printf '%-8s %-14s %-22s %-22s %-22s\n' "$side" "$cmd" "$(stats $(col "$f" 1))" "$(stats $(col "$f" 2))" "$(stats $(col "$f" 3))"
  done
done
echo "(load at the end $(load))"
