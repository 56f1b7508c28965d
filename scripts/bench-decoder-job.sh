#!/usr/bin/env bash
# bench-decoder-job.sh [BUILD] — the decoder rows of issue 14, side by side in one run, each
# figure min/median/max over REPS rounds (default 3), the sides interleaved within each round:
#   1. two traces of about ONE CALL records each (default 5,000,000; the test writer's DDP-like
#      AllReduce loop, as scripts/bench-decoder.sh): "rows", 65,536 records a chunk (1.3 MB of
#      rows: over chunk.h's column limit, so row chunks; ONE rounded up to whole chunks), and
#      "columns", 16,384 a chunk (what
#      the shim writes at DDP rates: column chunks, format 2.x); per trace, records per
#      CPU-second (user + system of the process: one core whatever the machine) of the bare
#      reader (test_trace_roundtrip --bench-read), of `zstd -d` on the same compressed chunks
#      (the zstd frames cut out of the trace and concatenated: a row chunk's payload, a column
#      chunk's zstd-coded columns), and of `ncclscope report`, reader and report before and after;
#   2. a job of RANKS ranks x CALLS collectives (default 1024 x 100,000, GPU times, 8 ranks per
#      host, one straggler; `ncclscope synth`): wall time, CPU seconds (user + system: the
#      figure a loaded machine distorts least) and peak RSS of `report`, `report --json`,
#      `doctor`, `html`, `timeline` (its temporary spool in $TMPDIR) and `compare` (the job
#      against itself read as a second run), on all
#      the machine's cores (NCCLSCOPE_THREADS unset), before and after; and `report` on one reader thread (NCCLSCOPE_THREADS=1, row report-1t): its wall
#      over report's is what the threads gain. Wall time means something only on an idle
#      machine: with the kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled
#      1) a session gets its share of the CPUs whatever its threads, so one other busy session
#      on 2 cores leaves the decoder's threads one core (wall ~ CPU at any thread count); the
#      script prints the setting.
# "before" is the decoder (and its test_trace_roundtrip reader) built from git ref BASE (or
# BENCH_BEFORE_REV; unset: only "after" runs) in a scratch worktree; "after" is BUILD (default
# build). The traces are written by BUILD's test_trace_roundtrip (and synth). The load average is
# printed at the start and end of each part. Outputs go to /dev/null; exit codes 0 and 1
# (findings) are accepted, anything else stops the script. A "before" of another major trace
# format (4.0 changed only the chunk checksum) reads the same records written by its own test
# writer and synth, and the script prints both sizes; a "before" that still cannot read a trace
# (e.g. 2.1 columns before 2.1) is left out of that trace's rows and says so.
# ONE=0 leaves part 1 out, RANKS=0 part 2; JOB=DIR
# reuses a job that `ncclscope synth` wrote (its RANKS and CALLS are then the directory's).
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
declare -A NCS=([after]=$BUILD/ncclscope) RD=([after]=$GEN)
SIDES=after
if [ -n "$BASE" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE"
  make -s -C "$W/base" BUILD="$W/base/build" -j"$(nproc)" decoder "$W/base/build/tests/test_trace_roundtrip" >/dev/null
  NCS[before]=$W/base/build/ncclscope
  RD[before]=$W/base/build/tests/test_trace_roundtrip
  SIDES="before after"
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
fmt_major() { "$1" --version | sed -n 's/.*trace format \([0-9]*\)\..*/\1/p'; }
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
echo "## 1. two traces of about $ONE CALL records (rows: 65536 a chunk; columns: 16384 a chunk): M records per CPU-second, min/median/max of $REPS (load $(load))"
# rows: whole chunks only (a short last chunk would be written as columns)
"$GEN" --bench-write "$W/rows.ncs" $(( (ONE + 65535) / 65536 * 65536 )) 65536 >/dev/null
"$GEN" --bench-write "$W/columns.ncs" "$ONE" 16384 >/dev/null
# A "before" of another major format gets the same records from its own test writer (4.0 changed
# only the chunk checksum: the files are the same size; checked below)
declare -A TR=([after]=)
if [ -n "$BASE" ] && [ "$(fmt_major "${NCS[before]}")" != "$(fmt_major "${NCS[after]}")" ]; then
  TR[before]=.before
  "${RD[before]}" --bench-write "$W/rows.before.ncs" $(( (ONE + 65535) / 65536 * 65536 )) 65536 >/dev/null
  "${RD[before]}" --bench-write "$W/columns.before.ncs" "$ONE" 16384 >/dev/null
  for kind in rows columns; do
    [ "$(stat -c %s "$W/$kind.ncs")" = "$(stat -c %s "$W/$kind.before.ncs")" ] ||
      echo "note: $kind: before's trace (format $(fmt_major "${NCS[before]}").x) is $(stat -c %s "$W/$kind.before.ncs") bytes, after's $(stat -c %s "$W/$kind.ncs")"
  done
  echo "(before reads traces of format $(fmt_major "${NCS[before]}").x written by its own test writer, after those of $(fmt_major "${NCS[after]}").x)"
fi
declare -A RECS
for kind in rows columns; do RECS[$kind]=$("$GEN" --bench-read "$W/$kind.ncs" | sed -n 's/^records \([0-9]*\).*/\1/p'); done
for kind in rows columns; do
python3 - "$W/$kind.ncs" "$W/$kind.zst" "$kind" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
out = open(sys.argv[2], 'wb')
at = struct.unpack_from('<I', d, 12)[0]            # file header size (docs/FORMAT.md)
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
kinds = []
while at + 40 <= len(d):                           # chunk header: magic, payload bytes, ...
    magic, payload = struct.unpack_from('<II', d, at)
    flags = struct.unpack_from('<I', d, at + 36)[0]
    if magic != 0x4B43534E: break
    p = d[at + 40:at + 40 + payload]
    if not flags & 4:                              # rows: the payload is one zstd frame
        out.write(p); kinds.append('rows')
    else:                                          # columns (2.x): the zstd frames of its columns
        kinds.append('columns')
        n, i = varint(p, 0); cols = []
        for _ in range(n):
            desc = []
            for _ in range(6): x, i = varint(p, i); desc.append(x)
            if desc[1] & 512:                      # keyed (2.1): keys, after
                for _ in range(2): x, i = varint(p, i)
            cols.append(desc)                      # id, flags, count, first, width, stored
        for cid, cfl, cnt, first, width, stored in cols:
            if cfl & 4: out.write(p[i:i + stored])
            i += stored
    at += 40 + payload
if set(kinds[:-1]) != {sys.argv[3]}:                # the last chunk, shorter, may be the other kind
    sys.exit('%s: chunks are %s, not %s' % (sys.argv[1], sorted(set(kinds)), sys.argv[3]))
EOF
zstd -q -t "$W/$kind.zst" || { echo "the chunk payloads of $kind are not zstd frames" >&2; exit 1; }
done
for kind in rows columns; do
  : >"$W/$kind.zstd"; for side in $SIDES; do : >"$W/$kind.reader.$side"; : >"$W/$kind.report.$side"; done
done
for i in $(seq "$REPS"); do
  for kind in rows columns; do
    for side in $SIDES; do "${RD[$side]}" --bench-read "$W/$kind${TR[$side]:-}.ncs" | sed -n '/(rc 0)/s/.*cpu \([0-9.]*\) s.*/0 \1 0/p' >>"$W/$kind.reader.$side"; done
    timed "$W/$kind.zstd" zstd -q -d -c "$W/$kind.zst"
    for side in $SIDES; do
      if [ "$side" = before ] && [ ! -s "$W/$kind.reader.before" ]; then continue; fi
      timed "$W/$kind.report.$side" "${NCS[$side]}" report "$W/$kind${TR[$side]:-}.ncs"
    done
  done
done
printf '%-8s %-26s %-18s %-18s %s\n' trace what "M records/CPU-s" "CPU s" "peak MiB"
for kind in rows columns; do
  for side in $SIDES; do
    f=$W/$kind.reader.$side
    if [ ! -s "$f" ]; then printf '%-8s %-26s %s\n' $kind "$side: reader alone" "(did not read it whole: a format newer than that reader)"; continue; fi
    printf '%-8s %-26s %-18s %-18s %s\n' $kind "$side: reader alone" "$(stats $(rate "$f" "${RECS[$kind]}"))" "$(stats $(col "$f" 2))" "-"
  done
  f=$W/$kind.zstd
  printf '%-8s %-26s %-18s %-18s %s\n' $kind "zstd -d (same chunks)" "$(stats $(rate "$f" "${RECS[$kind]}"))" "$(stats $(col "$f" 2))" "$(stats $(col "$f" 3))"
  for side in $SIDES; do
    f=$W/$kind.report.$side
    [ -s "$f" ] || continue
    printf '%-8s %-26s %-18s %-18s %s\n' $kind "$side: ncclscope report" "$(stats $(rate "$f" "${RECS[$kind]}"))" "$(stats $(col "$f" 2))" "$(stats $(col "$f" 3))"
  done
done
echo "(load at the end $(load); rows: $(stat -c %s "$W/rows.ncs") bytes, ${RECS[rows]} records; columns: $(stat -c %s "$W/columns.ncs") bytes, ${RECS[columns]} records)"
rm -f "$W"/rows.* "$W"/columns.*
fi
[ "$RANKS" = 0 ] && exit 0

hosts=$(( RANKS >= 8 ? RANKS / 8 : 1 ))
JB=
jb() { [ "$1" = before ] && printf '%s' "$JB"; return 0; }
if [ -n "${JOB:-}" ]; then ln -s "$(cd "$JOB" && pwd)" "$W/job"; RANKS=$(ls "$W/job/" | grep -c '\.ncs$'); CALLS="(from $JOB)"
else "${NCS[after]}" synth -o "$W/job" --ranks "$RANKS" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
       --straggler 3:50:0.1 --chunk-calls 8192 >/dev/null
     if [ -n "$BASE" ] && [ "$(fmt_major "${NCS[before]}")" != "$(fmt_major "${NCS[after]}")" ]; then
       "${NCS[before]}" synth -o "$W/job.before" --ranks "$RANKS" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
         --straggler 3:50:0.1 --chunk-calls 8192 >/dev/null
       JB=.before
       echo "(before reads the job as its own synth wrote it, format $(fmt_major "${NCS[before]}").x: $(du -sbL "$W/job.before" | cut -f1) bytes, after's $(du -sbL "$W/job" | cut -f1))"
     fi
   fi
echo "(autogroup scheduling: $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo unknown))"
echo "## 2. $RANKS ranks x $CALLS calls on $(nproc) CPUs ($(du -sLm "$W/job" | cut -f1) MiB in $(ls "$W/job/" | wc -l) files): min/median/max of $REPS (load $(load))"
# compare reads the job as two runs: jobB holds links to the same files (hard where the file
# system allows, symbolic otherwise), so both runs decode in full.
for d in $(printf '%s\n' "$W/job$(jb before)" "$W/job" | sort -u); do
  mkdir -p "$d.B"; for f in "$d"/*; do ln "$(readlink -f "$f")" "$d.B/" 2>/dev/null || ln -s "$(readlink -f "$f")" "$d.B/"; done
done
CMDS="report report-1t report-json doctor html timeline compare"
for cmd in $CMDS; do for side in $SIDES; do : >"$W/$cmd.$side"; done; done
for i in $(seq "$REPS"); do
  for cmd in $CMDS; do
    for side in $SIDES; do
      case $cmd in
        report) timed "$W/$cmd.$side" "${NCS[$side]}" report "$W/job$(jb $side)" ;;
        report-1t) timed "$W/$cmd.$side" env NCCLSCOPE_THREADS=1 "${NCS[$side]}" report "$W/job$(jb $side)" ;;
        report-json) timed "$W/$cmd.$side" "${NCS[$side]}" report --json "$W/job$(jb $side)" ;;
        doctor) timed "$W/$cmd.$side" "${NCS[$side]}" doctor "$W/job$(jb $side)" ;;
        html) timed "$W/$cmd.$side" "${NCS[$side]}" html "$W/job$(jb $side)" -o "$W/r.html" ;;
        timeline) timed "$W/$cmd.$side" "${NCS[$side]}" timeline "$W/job$(jb $side)" -o "$W/t.json" ;;
        compare) timed "$W/$cmd.$side" "${NCS[$side]}" compare "$W/job$(jb $side)" "$W/job$(jb $side).B" ;;
      esac
    done
  done
done
printf '%-8s %-14s %-22s %-22s %-22s\n' side command wall_s cpu_s peak_MiB
for cmd in $CMDS; do
  for side in $SIDES; do
    f=$W/$cmd.$side
    printf '%-8s %-14s %-22s %-22s %-22s\n' "$side" "$cmd" "$(stats $(col "$f" 1))" "$(stats $(col "$f" 2))" "$(stats $(col "$f" 3))"
  done
done
echo "(load at the end $(load))"
