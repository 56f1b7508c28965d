#!/usr/bin/env bash
# build-inspector.sh SRC [OUT] — builds NVIDIA's NCCL Inspector profiler plugin, unmodified,
# out of tree: its own Makefile run from OUT (default build/inspector) with the sources read
# from SRC (a checkout of NVIDIA/nccl's plugins/profiler/inspector; NCCL_INSPECTOR_SRC when no
# argument is given). Nothing is written into SRC: the Makefile's objects and its
# generated version.cc land in OUT. Prints the path of libnccl-profiler-inspector.so on success.
# Cached: a library newer than every source file of SRC is reused. Needs a C++17 compiler and
# CUDA headers (CUDA_HOME, default /usr/local/cuda: cuda.h, cuda_runtime.h, lib64/libcudart.so);
# exits 2 with the reason on stderr when one is missing, 1 when the build fails (log in OUT/build.log).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${1:-${NCCL_INSPECTOR_SRC:-}}
[ -n "$SRC" ] || { echo "usage: build-inspector.sh SRC [OUT] (SRC: NVIDIA/nccl's plugins/profiler/inspector)" >&2; exit 2; }
OUT=${2:-$ROOT/build/inspector}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -f "$SRC/Makefile" ] && [ -f "$SRC/inspector_plugin.cc" ] || { echo "no NCCL Inspector sources in $SRC (NCCL_INSPECTOR_SRC=<NVIDIA/nccl checkout>/plugins/profiler/inspector)" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || { echo "no C++ compiler ($CXX)" >&2; exit 2; }
[ -f "$CUDA_HOME/include/cuda.h" ] && [ -f "$CUDA_HOME/include/cuda_runtime.h" ] ||
  { echo "no CUDA headers in $CUDA_HOME/include" >&2; exit 2; }
ls "$CUDA_HOME"/lib64/libcudart.so* >/dev/null 2>&1 || { echo "no libcudart.so in $CUDA_HOME/lib64" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LIB=$OUT/libnccl-profiler-inspector.so
exec 9>"$OUT/.build.lock" && flock 9   # one build at a time (tests run side by side, tests/run.sh)
if [ -f "$LIB" ] && [ -z "$(find "$SRC" -type f -newer "$LIB" -print -quit)" ]; then echo "$LIB"; exit 0; fi
# SRCDIR/VPATH point the Makefile's pattern rules and include paths at SRC; the working
# directory (OUT) takes obj/, version.cc and the library.
if ! make -C "$OUT" -f "$SRC/Makefile" SRCDIR="$SRC" VPATH="$SRC" CXX="$CXX" CUDA_HOME="$CUDA_HOME" \
     -j"${JOBS:-2}" >"$OUT/build.log" 2>&1 || [ ! -f "$LIB" ]; then
  echo "NCCL Inspector build failed (log: $OUT/build.log)" >&2
  tail -5 "$OUT/build.log" >&2
  exit 1
fi
echo "$LIB"
