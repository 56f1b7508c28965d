#!/usr/bin/env bash
# test_logcap.sh — shim/logcap.c: NCCL's debug log captured into the trace while the user sees
# exactly what they would have seen without the shim, in the same place. Runs ddp_job on the
# NCCL/NVML doubles (tests/doubles/topos/nvswitch-8x-h100-nv18.txt) with and without the shim
# for each NCCL_DEBUG setting and compares NCCL's lines (pid/tid/pointers normalised).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
TOPO=$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NVMLDOUBLE_TOPO=$TOPO
if [ ! -x "$J" ] || [ ! -f "$SHIM" ]; then skip "logcap: ddp_job or shim not built"; exit 0; fi
norm() { sed -E 's/^[^ ]+:[0-9]+:[0-9]+ /H:P:T /; s/0x[0-9a-f]+/0xX/g; s/^\[[0-9: -]+\] //' | sort; }

run_pair() { # NAME ENV...: stdout+stderr with and without the shim
  local name=$1; shift
  env "$@" bash "$L" 2 "$J" --steps 1 >"$T/$name.plain" 2>&1
  env "$@" NCCLSCOPE_DIR="$T/tr-$name" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 1 >"$T/$name.shim" 2>&1
}

run_pair unset
check_eq "NCCL_DEBUG unset: output identical with the shim (no NCCL line appears)" \
  "$(norm <"$T/unset.plain")" "$(norm <"$T/unset.shim")"
check_eq "NCCL_DEBUG unset: no NCCL line at all" 0 "$(grep -c 'NCCL' "$T/unset.shim")"
for setting in "NCCL_DEBUG=INFO" "NCCL_DEBUG=WARN" "NCCL_DEBUG=VERSION" "NCCL_DEBUG=TRACE" \
               "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL" "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=^INIT" \
               "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=P2P,COLL"; do
  name=$(echo "$setting" | tr -c 'A-Za-z0-9\n' '_')
  # shellcheck disable=SC2086
  run_pair "$name" $setting
  a=$(grep 'NCCL' "$T/$name.plain" | norm); b=$(grep 'NCCL' "$T/$name.shim" | norm)
  if [ -n "$a" ] || [ "$setting" = "NCCL_DEBUG=WARN" ]; then
    check_eq "$setting: the user's NCCL lines are exactly those without the shim ($(printf '%s\n' "$a" | grep -c .) lines)" "$a" "$b"
  else
    fail "$setting: the run without the shim printed no NCCL line (test setup)"
  fi
done

# NCCL_DEBUG_FILE with %h and %p: same files, same content
mkdir -p "$T/f1" "$T/f2"
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/f1/nccl.%h.%p.log" bash "$L" 2 "$J" --steps 1 >"$T/file.plain" 2>&1
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/f2/nccl.%h.%p.log" NCCLSCOPE_DIR="$T/tr-file" LD_PRELOAD="$SHIM" \
  bash "$L" 2 "$J" --steps 1 >"$T/file.shim" 2>&1
check_eq "NCCL_DEBUG_FILE=%h.%p: one file per process, as without the shim" \
  "$(ls "$T/f1" | wc -l)" "$(ls "$T/f2" | wc -l)"
check "NCCL_DEBUG_FILE: file names carry host and pid" sh -c "ls '$T/f2' | grep -q \"^nccl\.$(hostname | cut -d. -f1)\.[0-9]*\.log$\""
check_eq "NCCL_DEBUG_FILE: the same lines in the files" "$(cat "$T"/f1/* | norm)" "$(cat "$T"/f2/* | norm)"
check_eq "NCCL_DEBUG_FILE: nothing on stdout in either run" "$(grep -c NCCL "$T/file.plain")" "$(grep -c NCCL "$T/file.shim")"

# what the trace holds, whatever the user asked
"$NCS" dump "$T/tr-unset" >"$T/dump-unset" 2>&1
check "trace with NCCL_DEBUG unset holds the connection lines (NCCL_LOG records)" grep -q 'NCCL_LOG.* via P2P/CUMEM' "$T/dump-unset"
check "trace holds the version and Init COMPLETE lines" sh -c "grep -q 'NCCL_LOG.*NCCL version 2.28.9' '$T/dump-unset' && grep -q 'NCCL_LOG.*Init COMPLETE' '$T/dump-unset'"
check "trace records the user's environment, not the shim's (no NCCL_DEBUG_FILE=/proc/...)" \
  sh -c "! grep -q 'env.NCCL_DEBUG_FILE' '$T/dump-unset' && ! grep -q 'env.NCCL_DEBUG=' '$T/dump-unset'"
"$NCS" nccl-log --json <(grep -o 'line=.*' "$T/dump-unset" | sed 's/^line=//') >"$T/nl.json" 2>&1
check "captured lines parse with nccl-log: 4 P2P connections (2 ranks x 2 channels)" grep -q '"P2P": 4' "$T/nl.json"

NCCLSCOPE_DIR="$T/tr-env" LD_PRELOAD="$SHIM" NCCL_DEBUG_SUBSYS=COLL bash "$L" 1 "$J" --steps 1 >/dev/null 2>&1
check "env of the traced process unchanged in its trace (NCCL_DEBUG_SUBSYS=COLL recorded)" \
  sh -c "\"$NCS\" dump '$T/tr-env' | grep -q 'env.NCCL_DEBUG_SUBSYS=COLL'"

# off switch
NCCLSCOPE_NCCL_LOG=0 NCCLSCOPE_DIR="$T/tr-off" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 1 >/dev/null 2>&1
check_eq "NCCLSCOPE_NCCL_LOG=0: no NCCL_LOG record" 0 "$("$NCS" dump "$T/tr-off" 2>/dev/null | grep -c '^NCCL_LOG')"

# fork and exec (tests/jobs/fork_job: a forked child and an exec'ed child make their own
# communicators): every process's NCCL lines still reach the user exactly as without the shim,
# and the exec'ed image records its own lines
F=$BUILD/tests/fork_job
if [ -x "$F" ]; then
  for setting in "NCCL_DEBUG=INFO" "NCCL_DEBUG=WARN" "NCCLSCOPE_X=1"; do
    # shellcheck disable=SC2086
    env $setting "$F" -n 4 >"$T/fork.plain" 2>&1; rc0=$?
    # shellcheck disable=SC2086
    env $setting NCCLSCOPE_DIR="$T/tr-fork-$rc0${setting%%=*}" LD_PRELOAD="$SHIM" "$F" -n 4 >"$T/fork.shim" 2>&1; rc1=$?
    check_eq "fork_job, $setting: exit status and NCCL lines of parent and children unchanged" \
      "$rc0 $(norm <"$T/fork.plain")" "$rc1 $(norm <"$T/fork.shim")"
  done
  check "fork_job: the exec'ed image's trace holds its own Init COMPLETE line" \
    sh -c "for f in '$T'/tr-fork-0NCCLSCOPE_X/*; do \"$NCS\" dump \"\$f\" 2>/dev/null | grep -q 'exec-child' && \"$NCS\" dump \"\$f\" 2>/dev/null | grep -q '^NCCL_LOG.*Init COMPLETE' && exit 0; done; exit 1"
else
  skip "fork_job not built"
fi
