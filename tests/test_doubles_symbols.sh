#!/usr/bin/env bash
# test_doubles_symbols.sh — the doubles export what the real libraries export, the same way:
# every NCCL entry point of include/ncclscope/nccl_abi.h as a strong pncclX and a weak ncclX
# (as /usr/local/cuda/lib/libnccl.so.2, NCCL 2.28.9, does), the right sonames, and every
# CUDA function the CUDA double implements (nvcc's __cuda* registration and launch entry points
# too) exists under that name in the real libcudart.so.13, and every one is exported under the
# version node libcudart.so.13, as the real runtime exports its symbols (programs linked against
# it ask for symbol@libcudart.so.13).
source "$(dirname "$0")/lib.sh"
NCCLD=$DOUBLES/libnccl.so.2
CUDAD=$DOUBLES/libcudart.so.13
REAL_NCCL=${CUDA_HOME:-/usr/local/cuda}/lib/libnccl.so.2
REAL_CUDART=${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13
names=$(sed -n 's/^ *X([^,]*, *\([A-Za-z]*\),.*/\1/p' "$ROOT/include/ncclscope/nccl_abi.h")
check "entry point list parsed from nccl_abi.h ($(echo "$names" | wc -w) names)" test "$(echo "$names" | wc -w)" -ge 41
# binding LIB SYMBOL: nm's type letter for SYMBOL (version suffix ignored), empty if absent;
# each library's symbol table is read once
binding() {
  local cache=$T/nm.$(echo "$1" | tr '/' '_')
  [ -f "$cache" ] || nm -D --defined-only "$1" 2>/dev/null | awk '{ sub(/@.*/, "", $3); print $3, $2 }' >"$cache"
  awk -v s="$2" '$1 == s { print $2 }' "$cache"
}
bad=""
for n in $names; do
  [ "$(binding "$NCCLD" "pnccl$n")" = T ] || bad="$bad pnccl$n"
  [ "$(binding "$NCCLD" "nccl$n")" = W ] || bad="$bad nccl$n"
done
check_eq "double: pncclX strong (T), ncclX weak (W) for every entry point" "" "$bad"
if [ -r "$REAL_NCCL" ]; then
  bad=""
  for n in $names; do
    [ "$(binding "$REAL_NCCL" "pnccl$n")" = T ] && [ "$(binding "$REAL_NCCL" "nccl$n")" = W ] || bad="$bad $n"
  done
  check_eq "real NCCL 2.28.9 binds them the same way" "" "$bad"
else
  skip "real NCCL binding comparison: $REAL_NCCL not present"
fi
check_eq "libnccl.so.2 double soname" "libnccl.so.2" \
  "$(readelf -d "$NCCLD" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
check_eq "libcudart.so.13 double soname" "libcudart.so.13" \
  "$(readelf -d "$CUDAD" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
cuda_names=$(sed -n 's/^cudaError_t \(cuda[A-Za-z]*\)(.*/\1/p; s/^const char \*\(cuda[A-Za-z]*\)(.*/\1/p;
  s/^[a-zA-Z_]* [*]*\(__cuda[A-Za-z_]*\)(.*/\1/p' "$ROOT/tests/doubles/include/cuda_double.h" | grep -v '^cudaDouble')
bad=""
for n in $cuda_names; do [ "$(binding "$CUDAD" "$n")" = T ] || bad="$bad $n"; done
check_eq "CUDA double exports all $(echo "$cuda_names" | wc -l) runtime functions it declares" "" "$bad"
if [ -r "$REAL_CUDART" ]; then
  bad=""
  for n in $cuda_names; do [ -n "$(binding "$REAL_CUDART" "$n")" ] || bad="$bad $n"; done
  check_eq "each of them exists in the real libcudart.so.13" "" "$bad"
else
  skip "real libcudart comparison: $REAL_CUDART not present"
fi
check_eq "the CUDA double declares nvcc's registration and launch entry points (7 or more __cuda*)" 1 \
  "$([ "$(echo "$cuda_names" | grep -c '^__cuda')" -ge 7 ] && echo 1)"
# version LIB: "name version" for every defined dynamic function or object of LIB
versions() { objdump -T "$1" | awk '$2 == "g" && $4 != "*UND*" && NF >= 7 { print $NF, $(NF-1) }'; }
unversioned=$(versions "$CUDAD" | awk '$2 != "libcudart.so.13" { print $1 }' | tr '\n' ' ')
nexp=$(versions "$CUDAD" | wc -l)
[ "$nexp" -ge "$(echo "$cuda_names" | wc -l)" ] || unversioned="only $nexp exports read by objdump $unversioned"
check_eq "CUDA double: every export ($nexp) under the version node libcudart.so.13" "" "$unversioned"
check_eq "CUDA double: exports nothing but cuda* and __cuda* (and the version node)" "" \
  "$(versions "$CUDAD" | awk '$1 !~ /^(__)?cuda/ && $1 != "libcudart.so.13" { print $1 }' | tr '\n' ' ')"
if [ -r "$REAL_CUDART" ]; then
  check_eq "the real libcudart.so.13 exports under the same node" "" \
    "$(versions "$REAL_CUDART" | awk '$2 != "libcudart.so.13" { print $1 }' | head -5 | tr '\n' ' ')"
else
  skip "real libcudart version node: $REAL_CUDART not present"
fi
# the CUDA driver double (tests/doubles/cudadrv, for the NCCL Inspector): soname, and every
# function it exports exists in the real driver (CUDA's stub libcuda.so, the driver's link-time
# stand-in, lists the driver's exports)
CUDRV=$DOUBLES/libcuda.so.1
REAL_CUDRV_STUB=${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so
if [ -f "$CUDRV" ]; then
  check_eq "libcuda.so.1 double soname" "libcuda.so.1" \
    "$(readelf -d "$CUDRV" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
  drv_names=$(nm -D --defined-only "$CUDRV" | awk '$2 == "T" { print $3 }')
  check "driver double exports cuGetErrorString, cuDeviceGet, cuDeviceGetUuid (the Inspector's lookups)" \
    test "$(echo "$drv_names" | grep -c -x -E 'cuGetErrorString|cuDeviceGet|cuDeviceGetUuid')" = 3
  if [ -r "$REAL_CUDRV_STUB" ]; then
    bad=""
    for n in $drv_names; do [ -n "$(binding "$REAL_CUDRV_STUB" "$n")" ] || bad="$bad $n"; done
    check_eq "each of the $(echo "$drv_names" | wc -l) driver double's exports exists in the real driver (stub)" "" "$bad"
  else
    skip "real driver comparison: $REAL_CUDRV_STUB not present"
  fi
else
  skip "CUDA driver double not built"
fi
