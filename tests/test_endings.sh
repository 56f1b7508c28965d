#!/usr/bin/env bash
# test_endings.sh — verdicts for the ways a job ends badly (issue 26 item 2; docs/DOCTOR.md
# "Bad endings"), each from a job whose ending is known: every init failed (the real NCCL
# 2.28.9 without a driver: NCCL's own error text in the evidence), a non-blocking init aborted
# in progress (nb_job -a), communicators aborted and revoked mid-collective (lifecycle_job:
# the last rank never joins), processes killed inside ncclCommInitRank under the hang
# threshold (hang_job --no-init), and a healthy job where none of them fires.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests
LAUNCH=$ROOT/tests/jobs/launch.sh
[ -f "$SHIM" ] && [ -x "$NCS" ] || { skip "endings: shim or decoder not built"; exit 0; }
command -v python3 >/dev/null || { skip "endings: python3 not installed"; exit 0; }
ENDINGS='["init-failed", "init-aborted", "comm-aborted", "ended-in-nccl"]'
# ids DIR: the verdict ids of doctor --json (extra args to doctor after DIR)
ids() { local d=$1; shift; "$NCS" doctor --json "$@" "$d" 2>/dev/null | python3 -c 'import json,sys; print(" ".join(v["id"] for v in json.load(sys.stdin)["verdicts"]))'; }
# evidence DIR ID: that verdict's evidence lines
evidence() { "$NCS" doctor --json "$1" 2>/dev/null | python3 -c 'import json,sys; [print(e) for v in json.load(sys.stdin)["verdicts"] if v["id"]==sys.argv[1] for e in v["evidence"]]' "$2"; }

# 1. every init failed: the real NCCL without a driver
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$CUDA_HOME/include/nccl.h" ] && [ -f "$CUDA_HOME/lib/libnccl.so.2" ]; then
  cat >"$T/real.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <nccl.h>
int main(void) {
  ncclUniqueId id; memset(&id, 0, sizeof id); ncclGetUniqueId(&id);
  ncclComm_t comm = NULL;
  ncclResult_t rc = ncclCommInitRank(&comm, 1, id, 0);
  printf("%d %s\n", (int)rc, ncclGetErrorString(rc));
  return 0;
}
C
  if cc -std=c11 -I"$CUDA_HOME/include" -o "$T/real" "$T/real.c" -L"$CUDA_HOME/lib" -l:libnccl.so.2 -Wl,-rpath,"$CUDA_HOME/lib" 2>/dev/null; then
    out=$(cd "$T" && NCCL_DEBUG= NCCLSCOPE_DIR="$T/real-tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./real)
    rc=${out%% *}
    if [ "$rc" != 0 ]; then
      "$NCS" doctor "$T/real-tr" >"$T/real.doc" 2>&1
      check_eq "init failed (real NCCL, rc $rc): doctor exits 1" 1 "$?"
      check "init failed: doctor's verdict is init-failed" sh -c "echo '$(ids "$T/real-tr")' | grep -qw init-failed"
      evidence "$T/real-tr" init-failed >"$T/real.ev"
      check "init failed: the evidence gives NCCL's return code $rc" grep -q "CommInitRank returned $rc " "$T/real.ev"
      check "init failed: the evidence quotes NCCL's own error (CUDA driver version is insufficient)" \
        grep -q 'NCCL said: .*CUDA driver version is insufficient' "$T/real.ev"
      check "init failed: and says no communicator was made" grep -q "no communicator was made" "$T/real.ev"
      "$NCS" report "$T/real-tr" >"$T/real.rep" 2>&1
      check_eq "init failed: report exits 1" 1 "$?"
      check "init failed: report's headline is not 'healthy' and names init-failed" \
        sh -c "! head -1 '$T/real.rep' | grep -q healthy && grep -q 'PROBLEM init-failed' '$T/real.rep'"
    else
      skip "endings: ncclCommInitRank succeeded here (a GPU?): no failed init to judge"
    fi
  else
    skip "endings: cannot build a program against the real NCCL"
  fi
else
  skip "endings: no real NCCL in $CUDA_HOME"
fi

# 2. a non-blocking init aborted before it completed (rank 1 never calls init)
NCCLSCOPE_DIR="$T/nba" LD_PRELOAD="$SHIM" timeout 60 "$LAUNCH" 2 "$J/nb_job" -a >"$T/nba.out" 2>&1
check_eq "init aborted: nb_job -a exits 0" 0 "$?"
"$NCS" doctor "$T/nba" >/dev/null 2>&1
check_eq "init aborted: doctor exits 1" 1 "$?"
check_eq "init aborted: the verdict is init-aborted" "init-aborted" "$(ids "$T/nba")"
check "init aborted: rank 0 named" sh -c "'$NCS' doctor --json '$T/nba' | grep -q 'rank 0 (host .*): communicator .* aborted at .* while its non-blocking init was still in progress'"
"$NCS" report "$T/nba" >"$T/nba.rep" 2>&1
check_eq "init aborted: report exits 1, never healthy" "1 0" "$? $(head -1 "$T/nba.rep" | grep -c healthy)"

# 3. aborted and revoked mid-collective: lifecycle_job, the last of 3 ranks never joins
mkdir -p "$T/lc.truth"
NCCLSCOPE_DIR="$T/lc" LD_PRELOAD="$SHIM" timeout 120 "$LAUNCH" 3 "$J/lifecycle_job" --truth "$T/lc.truth" >"$T/lc.out" 2>&1
check_eq "comm aborted: lifecycle_job 3 ranks exits 0" 0 "$?"
nc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["never_completed"])' "$T/lc.truth/truth-rank0.json" 2>/dev/null)
evidence "$T/lc" comm-aborted >"$T/lc.ev"
check "comm aborted: doctor's verdict comm-aborted" sh -c "echo '$(ids "$T/lc")' | grep -qw comm-aborted"
check_eq "comm aborted: one evidence line per communicator rank 0 left in flight (its truth: $nc)" "$nc" "$(grep -c '^communicator ' "$T/lc.ev")"
check "comm aborted: the world communicator aborted, never entered by rank 2, entered by ranks 0-1 (the culprit first)" \
  grep -q "(3 ranks) aborted by .*never entered by rank 2; entered by ranks 0-1" "$T/lc.ev"
check "comm aborted: a revoked communicator too" grep -q ") revoked by rank" "$T/lc.ev"
"$NCS" report "$T/lc" >/dev/null 2>&1
check_eq "comm aborted: report exits 1" 1 "$?"

# 4. killed inside ncclCommInitRank, well under the hang threshold: rank 1 never calls init,
# rank 0 waits in it; both killed (-9) once rank 0's trace shows it inside the init
setsid env NCCLSCOPE_DIR="$T/ki" NCCLSCOPE_FLUSH_MS=50 LD_PRELOAD="$SHIM" "$LAUNCH" 2 "$J/hang_job" --no-init 1 >/dev/null 2>&1 &
lp=$!
seen=0
for _ in $(seq 1 400); do
  for f in "$T"/ki/*.ncs; do
    [ -f "$f" ] && "$NCS" dump "$f" 2>/dev/null | grep -q '^INFLIGHT .*op=CommInitRank' && seen=1
  done
  [ $seen = 1 ] && break
  sleep 0.05
done
kill -9 -- -"$lp" 2>/dev/null; wait "$lp" 2>/dev/null
check_eq "killed in init: rank 0's trace showed it inside CommInitRank before the kill" 1 "$seen"
got=$(ids "$T/ki" --hang-after 600)
check_eq "killed in init: doctor --hang-after 600 (not judged a hang): ended-in-nccl" "ended-in-nccl" "$got"
"$NCS" doctor --hang-after 600 "$T/ki" >"$T/ki.doc" 2>&1
check_eq "killed in init: doctor exits 1" 1 "$?"
check "killed in init: the evidence says inside CommInitRank, in flight since T" grep -q "its trace ends inside CommInitRank, in flight since " "$T/ki.doc"
"$NCS" report "$T/ki" >"$T/ki.rep" 2>/dev/null
check "killed in init: report's headline is never 'healthy'" sh -c "! head -1 '$T/ki.rep' | grep -q healthy"

# 5. a healthy job: none of these
NCCLSCOPE_DIR="$T/ok" LD_PRELOAD="$SHIM" timeout 60 "$LAUNCH" 2 "$J/hang_job" --steps 20 >/dev/null 2>&1
check_eq "healthy job: hang_job exits 0" 0 "$?"
got=$(ids "$T/ok")
check "healthy job: no bad-ending verdict ($got)" python3 -c 'import sys,json; sys.exit(1 if set(sys.argv[1].split()) & set(json.loads(sys.argv[2])) else 0)' "$got" "$ENDINGS"
"$NCS" report "$T/ok" >/dev/null 2>&1
check_eq "healthy job: report exits 0" 0 "$?"
