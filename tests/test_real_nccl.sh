#!/usr/bin/env bash
# test_real_nccl.sh — the shim in front of the real NCCL 2.28.9 (/usr/local/cuda): a program
# linked against the real libnccl.so.2 calls ncclGetVersion, ncclGetUniqueId and
# ncclCommInitRank (which fails here: no GPU, no driver) and prints every return code. With and
# without the shim: same exit status, same stdout; with it, the trace records those calls
# with the same return codes. SKIP when the real NCCL is not installed.
. "$(dirname "$0")/lib.sh"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/nccl.h" ] || [ ! -f "$CUDA_HOME/lib/libnccl.so.2" ]; then
  skip "real_nccl: no NCCL in $CUDA_HOME"; exit 0
fi
cat >"$T/real.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <nccl.h>
int main(void) {
  int v = 0;
  ncclResult_t rc = ncclGetVersion(&v);
  printf("GetVersion rc=%d version=%d\n", (int)rc, v);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  rc = ncclGetUniqueId(&id);
  printf("GetUniqueId rc=%d\n", (int)rc);
  ncclComm_t comm = NULL;
  errno = 0;
  rc = ncclCommInitRank(&comm, 1, id, 0);
  printf("CommInitRank rc=%d (%s)\n", (int)rc, ncclGetErrorString(rc));
  /* to stderr: is a CUDA runtime mapped into this process? (real NCCL links its own statically) */
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  int cudart = 0;
  while (m && fgets(line, sizeof line, m)) cudart += strstr(line, "libcudart") != NULL;
  if (m) fclose(m);
  fprintf(stderr, "cudart_mappings=%d\n", cudart);
  return rc == ncclSuccess ? 0 : 3;
}
C
if ! cc -std=c11 -I"$CUDA_HOME/include" -o "$T/real" "$T/real.c" -L"$CUDA_HOME/lib" -l:libnccl.so.2 \
     -Wl,-rpath,"$CUDA_HOME/lib" 2>"$T/cc.err"; then
  fail "real_nccl: cannot build the test program"; sed 's/^/    /' "$T/cc.err" | head; exit 1
fi
cd "$T"
export NCCL_DEBUG= NCCLSCOPE_DIR="$T/tr"
./real >"$T/plain.out" 2>"$T/plain.err"; plain_rc=$?
# LD_LIBRARY_PATH offers the toolkit's libcudart.so.13: a shim that loaded a CUDA runtime by
# name would find it. It must not: it only uses a runtime the application already loaded.
LD_LIBRARY_PATH="$CUDA_HOME/lib" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./real >"$T/shim.out" 2>"$T/shim.err"; shim_rc=$?
check_eq "real_nccl: same exit status with and without the shim" "$plain_rc" "$shim_rc"
check "real_nccl: same stdout with and without the shim" cmp "$T/plain.out" "$T/shim.out"
check_eq "real_nccl: the shim loads no CUDA runtime of its own (libcudart mappings, without/with)" \
  "$(grep cudart_mappings "$T/plain.err")" "$(grep cudart_mappings "$T/shim.err")"
grep -q '^CommInitRank rc=[1-9]' "$T/plain.out" && pass "real_nccl: ncclCommInitRank fails without a GPU ($(grep CommInitRank "$T/plain.out"))" \
  || fail "real_nccl: expected ncclCommInitRank to fail here: $(cat "$T/plain.out")"
f=$(ls "$T"/tr/*.ncs 2>/dev/null | head -1)
if [ -z "$f" ]; then fail "real_nccl: no trace written"; exit 0; fi
"$NCS" dump "$f" >"$T/dump" 2>&1
init_rc=$(sed -n 's/^CommInitRank rc=\([0-9]*\).*/\1/p' "$T/plain.out")
check "real_nccl: trace records CommInitRank with NCCL's return code $init_rc" \
  grep -q "^CALL op=CommInitRank .* rc=$init_rc " "$T/dump"
check "real_nccl: trace records the failed init as a COMM record with that rc" \
  grep -q "^COMM .*rc=$init_rc " "$T/dump"
check "real_nccl: with no CUDA runtime in the process, the trace says timing=host" grep -q "timing=host\$" "$T/dump"
ver=$(sed -n 's/.*version=\([0-9]*\)$/\1/p' "$T/plain.out")
check "real_nccl: PROCESS record carries nccl_version=$ver" grep -q "nccl_version=$ver\$" "$T/dump"
check "real_nccl: GetVersion and GetUniqueId recorded with rc=0" \
  bash -c "grep -q '^CALL op=GetVersion .* rc=0 ' '$T/dump' && grep -q '^CALL op=GetUniqueId .* rc=0 ' '$T/dump'"
