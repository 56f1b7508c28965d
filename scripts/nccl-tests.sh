#!/usr/bin/env bash
# nccl-tests.sh — runs an unmodified NVIDIA nccl-tests binary on the CPU doubles of CUDA, NCCL and
# NVML (docs/DOUBLES.md), traced by the shim, on a simulated 8x H100 NVSwitch box: no GPU needed.
#
#   scripts/nccl-tests.sh [--src DIR] OUT -- BINARY [ARGS...]
#   scripts/nccl-tests.sh [--src DIR] --build-only BINARY...
#
# BINARY is a nccl-tests program (all_reduce_perf, or all_reduce): all_reduce, all_gather,
# reduce_scatter, broadcast, reduce, alltoall, alltoallv, sendrecv, gather, scatter, hypercube.
# ARGS are nccl-tests' own (-b -e -f -n -w -m -t -g -G -R -a -N -z -I -J ...). The traces go to OUT
# (read them with `ncclscope report OUT`), nccl-tests' stdout to OUT/nccl-tests.out and its stderr
# to OUT/nccl-tests.err, both also passed through. Exit: nccl-tests' status; 2 when it cannot run
# here (no nvcc, no nccl-tests source, a flag the doubles cannot serve), with the reason.
#
# Data checks (-c N, N > 0; nccl-tests' default is -c 1) run nccl-tests' verification kernels on
# the GPU, which the doubles cannot run (a launched kernel is only a timed item on its stream):
# the script passes -c 0 unless ARGS give -c, and refuses -c N > 0. Device-API
# implementations (-D N > 0) need NCCL's device communicators, which the NCCL double lacks.
#
# What is missing is built first: the shim and the doubles (make), and the nccl-tests binary, out
# of tree in BUILD/nccl-tests/ (kept; rebuilt when the source directory changes) with nvcc from
# CUDA_HOME (default /usr/local/cuda), device code as sm_90 PTX only and the CUDA runtime linked
# dynamically, so that the CUDA double stands in for it. The double never runs device code (a
# launch is a timed item on its stream), so no machine code is generated for it: ptxas's share
# of the build, about half of its CPU time, is skipped. NCCL's headers come from NCCL_HOME
# (default CUDA_HOME). The nccl-tests source: --src DIR, else NCCL_TESTS_SRC, else
# ../shared/nccl-tests next to this repository when present.
# Environment: BUILD (ncclscope's build directory, default build), NVMLDOUBLE_TOPO (the machine,
# default tests/doubles/topos/nvswitch-8x-h100-nv18.txt), CUDA_HOME, NCCL_HOME, NCCL_TESTS_SRC,
# NCCL_TESTS_JOBS (parallel compile jobs of the nccl-tests build, default 2).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NCCL_HOME=${NCCL_HOME:-$CUDA_HOME}
SRC=${NCCL_TESTS_SRC:-}
NTB=$BUILD/nccl-tests
PROGRAMS="all_reduce all_gather reduce_scatter broadcast reduce alltoall alltoallv sendrecv gather scatter hypercube"

die() { echo "nccl-tests.sh: $*" >&2; exit 2; }
usage() { sed -n '5,6p' "$0" | sed 's/^# *//' >&2; exit 2; }

build_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --src) [ $# -ge 2 ] || usage; SRC=$2; shift 2 ;;
    --src=*) SRC=${1#--src=}; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
if [ "$build_only" = 1 ]; then
  [ $# -ge 1 ] || usage
  names=("$@")
else
  [ $# -ge 3 ] && [ "$2" = "--" ] || usage
  OUT=$1
  shift 2
  names=("$1")
  shift
fi

# program NAME: the nccl-tests program name (all_reduce_perf) of NAME, or nothing
program() {
  local n=${1##*/}
  n=${n%_perf}
  case " $PROGRAMS " in *" $n "*) echo "${n}_perf" ;; esac
}
progs=()
for n in "${names[@]}"; do
  p=$(program "$n")
  [ -n "$p" ] || die "$n is not a nccl-tests program (one of: $PROGRAMS)"
  progs+=("$p")
done

# Flags the doubles cannot serve, said before anything is built.
args=("$@")
have_check=0
i=0
while [ $i -lt ${#args[@]} ]; do
  a=${args[$i]} v=
  case $a in
    -c|--check|-D|--device_implementation) v=${args[$((i + 1))]:-} ;;
    -c*) v=${a#-c} ;;
    -D*) v=${a#-D} ;;
    --check=*|--device_implementation=*) v=${a#*=} ;;
  esac
  case $a in
    -c*|--check*)
      have_check=1
      [ "$((v + 0))" = 0 ] 2>/dev/null ||
        die "data checks (-c $v) run nccl-tests' verification kernels on the GPU; the CUDA double cannot run device code (use -c 0)" ;;
    -D*|--device_implementation*)
      [ "$((v + 0))" = 0 ] 2>/dev/null ||
        die "-D $v (device-API implementation) runs kernels that communicate through a device communicator (ncclDevCommCreate), which the doubles cannot run" ;;
  esac
  i=$((i + 1))
done
[ "$have_check" = 1 ] || args=(-c 0 "${args[@]}")

# What the build needs.
NVCC=$CUDA_HOME/bin/nvcc
[ -x "$NVCC" ] || die "nvcc not found at $NVCC (set CUDA_HOME): nccl-tests cannot be built"
[ -r "$NCCL_HOME/include/nccl.h" ] || die "nccl.h not found in $NCCL_HOME/include (set NCCL_HOME): nccl-tests cannot be built"
if [ -z "$SRC" ] && [ -d "$ROOT/../shared/nccl-tests" ]; then SRC=$ROOT/../shared/nccl-tests; fi
[ -n "$SRC" ] || die "no nccl-tests source: give --src DIR or NCCL_TESTS_SRC (https://github.com/NVIDIA/nccl-tests)"
[ -r "$SRC/src/common.cu" ] && [ -r "$SRC/src/Makefile" ] || die "$SRC is not a nccl-tests source tree (no src/common.cu)"
SRC=$(cd "$SRC" && pwd)

# The shim, the decoder and the doubles.
if [ ! -f "$BUILD/libncclscope.so" ] || [ ! -x "$BUILD/ncclscope" ] || [ ! -f "$BUILD/doubles/libnccl.so.2" ] ||
   [ ! -f "$BUILD/doubles/libcudart.so.13" ] || [ ! -f "$BUILD/doubles/libnvidia-ml.so.1" ]; then
  make -s -C "$ROOT" BUILD="$BUILD" shim decoder doubles >&2 || die "building ncclscope failed"
fi

# The nccl-tests programs, out of tree; a build dir made from another source is started afresh.
# One build at a time (tests run side by side, tests/run.sh): the lock is held while checking and
# building, and closed before the run so the job does not inherit it.
mkdir -p "$BUILD" && exec 9>"$BUILD/.nccl-tests.lock" && flock 9
if [ -f "$NTB/.source" ] && [ "$(cat "$NTB/.source")" != "$SRC" ]; then rm -rf "$NTB"; fi
missing=()
for p in "${progs[@]}"; do [ -x "$NTB/$p" ] || missing+=("$NTB/$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  mkdir -p "$NTB" && echo "$SRC" >"$NTB/.source"
  echo "nccl-tests.sh: building ${missing[*]##*/} from $SRC into $NTB (sm_90 PTX, a few minutes on 2 cores)" >&2
  # CXXSTD is given because nccl-tests' common.mk finds the CUDA version with `which $(NVCC)`,
  # which fails once NVCC carries a flag; --cudart shared links libcudart.so.13 dynamically.
  make -s -C "$SRC/src" BUILDDIR="$NTB" NCCL_HOME="$NCCL_HOME" CUDA_HOME="$CUDA_HOME" CXXSTD=-std=c++17 \
    NVCC_GENCODE="-gencode=arch=compute_90,code=compute_90" NVCC="$NVCC --cudart shared" \
    -j"${NCCL_TESTS_JOBS:-2}" "${missing[@]}" >&2 || die "building nccl-tests failed"
fi
exec 9>&-
[ "$build_only" = 1 ] && exit 0

# The run: the doubles first on the library path, the shim through `ncclscope run`.
mkdir -p "$OUT" || die "cannot create $OUT"
export NVMLDOUBLE_TOPO=${NVMLDOUBLE_TOPO:-$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt}
export LD_LIBRARY_PATH=$BUILD/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$BUILD/ncclscope" run -o "$OUT" -- "$NTB/${progs[0]}" "${args[@]}" 2> >(tee "$OUT/nccl-tests.err" >&2) |
  tee "$OUT/nccl-tests.out"
exit "${PIPESTATUS[0]}"
