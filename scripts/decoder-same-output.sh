#!/usr/bin/env bash
# decoder-same-output.sh [BUILD] — the decoder's whole output, before vs after a change, byte for
# byte: `report`, `report --json`, `report --detail`, `doctor`, `doctor --json` and `html` of
# several synthetic jobs (`ncclscope synth`: GPU times with a straggler, host times only, 16 ranks
# on 2 hosts with a missing and a mismatched collective, per-host communicators), the test
# writer's fixtures (its two ranks alone; all its traces together: the two ranks, a cut trace
# that is a second claim to rank 1, hostile strings), the committed shim-traced job
# (tests/golden/traces/job) and, when the shim
# is built, traces with kernel activity (tests/jobs/overlap_job under the shim and the CUPTI
# double: DDP buckets, half overlap, one serial rank), each at NCCLSCOPE_THREADS=1, 2 and 4.
# "before" is the decoder built from git ref BASE in a scratch worktree, or the binary BEFORE;
# "after" is BUILD's (default build); each output is compared at the same thread count. An
# output that differs is rerun with "before" three times: when "before" itself gives different
# output from run to run (a tie decided by which reader thread comes first) it is reported as a
# note and not counted.
# html's "decoded in N s" is blanked (the one figure that varies between runs). Prints one line
# per difference and a count; exits 1 when anything differs, 2 on bad usage.
# Example: BASE=origin/main scripts/decoder-same-output.sh build
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
AFTER=$BUILD/ncclscope
GEN=$BUILD/tests/test_trace_roundtrip
[ -x "$AFTER" ] && [ -x "$GEN" ] || { echo "build first: make BUILD=$BUILD decoder $GEN" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-sameout.XXXXXX")
cleanup() { [ -n "${BASE:-}" ] && git -C "$ROOT" worktree remove --force "$W/base" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
if [ -n "${BASE:-}" ]; then
  git -C "$ROOT" worktree add -q --detach "$W/base" "$BASE" || exit 2
  make -s -C "$W/base" BUILD="$W/base/build" -j2 decoder >/dev/null 2>&1 || { echo "could not build $BASE" >&2; exit 2; }
  BEFORE=$W/base/build/ncclscope
fi
[ -n "${BEFORE:-}" ] && [ -x "$BEFORE" ] || { echo "give BASE=<git ref> or BEFORE=<ncclscope binary>" >&2; exit 2; }

# the corpus: one directory (or file list) per job
C=$W/corpus
mkdir -p "$C/fx"
"$AFTER" synth -o "$C/s-gpu" --ranks 4 --calls 300 --straggler 2:300 --seed 5 >/dev/null &&
"$AFTER" synth -o "$C/s-host" --ranks 4 --calls 200 --no-gpu --seed 7 >/dev/null &&
"$AFTER" synth -o "$C/s-16" --ranks 16 --hosts 2 --calls 3000 --straggler 5:80:0.2 --missing 3:1500 \
  --mismatch 7:2000 --seed 11 --chunk-calls 512 >/dev/null &&
"$AFTER" synth -o "$C/s-comms" --ranks 8 --hosts 2 --calls 1000 --host-comms --noise 20 --seed 13 >/dev/null &&
"$GEN" --write "$C/fx" >/dev/null || { echo "could not write the corpus" >&2; exit 2; }
# the test writer's fixtures: its two ranks alone (fx2), and all its traces (fx: its cut trace
# claims rank 1 of the same communicator a second time, docs/METRICS.md "Two traces claim one
# rank"; decoders before that rule gave output varying with the thread count here)
mkdir "$C/fx2" && cp "$C/fx/rank0.ncs" "$C/fx/rank1.ncs" "$C/fx2/"
jobs="s-gpu s-host s-16 s-comms fx2 fx"
cp -r "$ROOT/tests/golden/traces/job" "$C/golden-job" && jobs="$jobs golden-job"
SHIM=$BUILD/libncclscope.so
if [ -x "$BUILD/tests/overlap_job" ] && [ -f "$SHIM" ]; then
  k() { # k NAME RANKS LAT_US ARGS...
    local name=$1 np=$2 lat=$3; shift 3
    mkdir -p "$C/$name"
    NCCLSCOPE_DIR=$C/$name NCCLDOUBLE_LAT_US=$lat LD_PRELOAD=$SHIM \
      bash "$ROOT/tests/jobs/launch.sh" "$np" "$BUILD/tests/overlap_job" "$@" >/dev/null 2>&1 &&
      jobs="$jobs $name" || echo "note: overlap_job $name failed; left out" >&2
  }
  k k-ddp 2 1000 --mode ddp --steps 12 --compute-us 2000
  k k-half 2 1000 --mode half --steps 10 --compute-us 1000
  k k-serial 1 1000 --mode serial --steps 10 --compute-us 500
else
  echo "note: no shim or overlap_job in $BUILD: no traces with kernel activity" >&2
fi

# A "before" reader of an older major format reads the corpus rewritten for it: headers marked
# with its version (3.1 or 4.0) and, before 4.0, chunks summed the 3.x way (FNV-1a). What else
# changed since: 5.0 added CALL_RUN records, which a writer puts only in row chunks over 1 MiB
# raw (none in this corpus: checked, the script stops otherwise); 4.0 only the checksum
# (docs/FORMAT.md "Versioning"). No command but `dump` prints the version. The two copies take
# turns behind the corpus's path (a symbolic link), so that outputs naming files are the same.
CB=
fmt_major() { "$1" --version | sed -n 's/.*trace format \([0-9]*\)\..*/\1/p'; }
BM=$(fmt_major "$BEFORE") AM=$(fmt_major "$AFTER")
if [ "$BM" -ge 3 ] 2>/dev/null && [ "$BM" -lt "$AM" ]; then
  CB=$W/corpus-old
  mv "$C" "$W/corpus-new" && cp -r "$W/corpus-new" "$CB" && ln -s corpus-new "$C" || exit 2
  find "$CB" -name '*.ncs' -print0 | xargs -0 python3 -c '
import struct, sys
to, cur = int(sys.argv[1]), int(sys.argv[2])
def fnv(b, h=0x811c9dc5):
    for c in b: h = ((h ^ c) * 0x01000193) & 0xffffffff
    return h
for p in sys.argv[3:]:
    d = bytearray(open(p, "rb").read())
    if len(d) < 64 or d[:8] != b"NCSTRACE" or struct.unpack_from("<H", d, 8)[0] != cur: continue
    struct.pack_into("<HH", d, 8, to, 1 if to == 3 else 0)
    o = struct.unpack_from("<I", d, 12)[0]
    while o + 40 <= len(d) and struct.unpack_from("<I", d, o)[0] == 0x4B43534E:
        n, raw = struct.unpack_from("<II", d, o + 4)
        if o + 40 + n > len(d): break
        if raw > (1 << 20) and cur >= 5 and to < 5: sys.exit(p + ": a chunk over 1 MiB of rows may hold CALL_RUN records")
        if to < 4: struct.pack_into("<I", d, o + 32, fnv(d[o + 40:o + 40 + n], fnv(d[o:o + 32])))
        o += 40 + n
    open(p, "wb").write(d)' "$BM" "$AM" || { echo "could not rewrite the corpus for a $BM.x reader" >&2; exit 2; }
  echo "note: before reads trace format $BM.x: its corpus is the same chunks marked $BM.x$([ "$BM" -lt 4 ] && echo ', FNV-1a checksums')"
fi

# out BIN THREADS NAME CMD...: the command's stdout (html: its file) and exit code
out() {
  local bin=$1 th=$2; shift 2
  local cmd=$1 dir=$C/$2; shift 2
  if [ -n "$CB" ]; then if [ "$bin" = "$BEFORE" ]; then ln -sfn corpus-old "$C"; else ln -sfn corpus-new "$C"; fi; fi
  case $cmd in
    html) NCCLSCOPE_THREADS=$th timeout -k 2 120 "$bin" html "$@" "$dir" -o "$W/o.html" >/dev/null 2>&1; local rc=$?
          sed 's/decoded in [0-9.]* s/decoded in N s/' "$W/o.html" 2>/dev/null; rm -f "$W/o.html"; echo "exit $rc" ;;
    *) NCCLSCOPE_THREADS=$th timeout -k 2 120 "$bin" "$cmd" "$@" "$dir" 2>&1; echo "exit $?" ;;
  esac
}
diffs=0 runs=0 varies=0
for j in $jobs; do
  for c in "report" "report --json" "report --detail" "doctor" "doctor --json" "html"; do
    set -- $c
    for th in 1 2 4; do
      runs=$((runs + 1))
      out "$BEFORE" "$th" "$1" "$j" "${@:2}" >"$W/ref"
      out "$AFTER" "$th" "$1" "$j" "${@:2}" >"$W/got"
      cmp -s "$W/ref" "$W/got" && continue
      # a difference: is the output of "before" itself the same from run to run at this count?
      same=1
      for k in 1 2 3; do out "$BEFORE" "$th" "$1" "$j" "${@:2}" >"$W/again"; cmp -s "$W/ref" "$W/again" || same=0; done
      if [ $same = 0 ]; then
        varies=$((varies + 1)); echo "note: $c $j (threads $th): before's own output varies from run to run; not counted"
      else
        diffs=$((diffs + 1)); echo "DIFFERS: $c $j (threads $th)"
        diff "$W/ref" "$W/got" | head -6 | sed 's/^/    /'
      fi
    done
  done
done
echo "$runs outputs compared ($(echo $jobs | wc -w) jobs x 6 commands x threads 1, 2, 4), $diffs differ, $varies vary run to run before the change too"
[ "$diffs" = 0 ]
