#!/usr/bin/env bash
# gen-traces.sh OUTDIR [RANKS] [CALLS] [SYNTH OPTIONS...] — writes synthetic traces in the real
# format for RANKS ranks x CALLS collectives (defaults 8 x 10000) into OUTDIR, through
# `ncclscope synth` (decoder/io/synth.c): 8 ranks per host, per-host clock offsets and drift,
# GPU times, deterministic for a seed. Extra options go to synth, e.g.
#   scripts/gen-traces.sh /tmp/t 64 100000 --straggler 5:300:0.2 --missing 7:5000 --seed 3
#   (also --mismatch R:SEQ, a desync; --slow-host H:PCT, host H's link PCT% slower)
# BUILD (default build) names the build directory holding ncclscope.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[ $# -ge 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
out=$1; ranks=${2:-8}; calls=${3:-10000}
shift $(( $# < 3 ? $# : 3 ))
hosts=$(( ranks >= 8 ? ranks / 8 : 1 ))
threads=$(nproc 2>/dev/null || echo 2)
exec "$BUILD/ncclscope" synth -o "$out" --ranks "$ranks" --hosts "$hosts" --calls "$calls" --threads "$threads" "$@"
