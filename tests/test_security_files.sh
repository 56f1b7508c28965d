#!/usr/bin/env bash
# test_security_files.sh — how the shim creates trace files (docs/FORMAT.md "File name and
# creation", docs/SECURITY.md): a symlink planted at the trace path is not followed, an
# existing file is not overwritten (the trace takes the next free name), files are mode 0600
# and a directory the shim creates 0700 whatever the umask, and nothing from the environment
# beyond the documented variables reaches the trace (raw decompressed bytes and the dump).
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "security files"; need_decoder "security files"; need_double "security files"
fault_build || { fail "security files: test programs build"; exit 0; }

host=$(hostname)
D=$T/traces; mkdir -p "$D"
# plant KIND: the job is started by a shell that plants KIND at <dir>/<host>-<its pid>.ncs and
# then execs the job, which keeps that pid.
plant() {
  local kind=$1
  rm -rf "$D"; mkdir -p "$D"
  echo "precious data" >"$T/victim"
  NCCLSCOPE_DIR=$D LD_PRELOAD=$SHIM FJOB=$FJOB KIND=$kind VICTIM=$T/victim HOST=$host bash -c '
    p="$NCCLSCOPE_DIR/$HOST-$$.ncs"
    case $KIND in
      symlink) ln -s "$VICTIM" "$p" ;;
      dangling) ln -s "$VICTIM.new" "$p" ;;
      file) echo "existing trace" >"$p" ;;
    esac
    exec "$FJOB" 3' >"$T/plant.out" 2>&1
  echo $?
}
rc=$(plant symlink)
check_eq "security: job runs with a symlink planted at its trace path" 0 "$rc"
check_eq "security: symlink target not written" "precious data" "$(cat "$T/victim")"
n=$(find "$D" -maxdepth 1 -type l | wc -l)
check_eq "security: planted symlink left as it was" 1 "$n"
f=$(find "$D" -maxdepth 1 -type f -name '*.ncs' | head -1)
[ -n "$f" ] && readable "$f" && pass "security: trace written under another name ($(basename "$f"))" \
  || fail "security: no readable trace beside the planted symlink: $(ls "$D")"

rc=$(plant dangling)
check_eq "security: job runs with a dangling symlink planted" 0 "$rc"
[ ! -e "$T/victim.new" ] && pass "security: dangling symlink not followed (target not created)" \
  || fail "security: the shim created the dangling symlink's target"

rc=$(plant file)
check_eq "security: job runs with an existing file at its trace path" 0 "$rc"
p=$(find "$D" -maxdepth 1 -type f -name '*.ncs' | xargs grep -l "existing trace" 2>/dev/null | head -1)
[ -n "$p" ] && pass "security: existing file not overwritten" || fail "security: existing file overwritten"
f=$(find "$D" -maxdepth 1 -type f -name '*-*-*.ncs' | head -1)
[ -n "$f" ] && readable "$f" && pass "security: trace takes the next free name ($(basename "$f"))" \
  || fail "security: no readable suffixed trace: $(ls "$D")"

# Modes, under a permissive and a strict umask.
for um in 000 022 077; do
  rm -rf "$T/m"
  (umask $um; NCCLSCOPE_DIR=$T/m/sub LD_PRELOAD=$SHIM "$FJOB" 2 >/dev/null 2>&1)
  f=$(traces "$T/m/sub" | head -1)
  check_eq "security: umask $um: trace file mode" 600 "$(stat -c %a "$f" 2>/dev/null)"
  check_eq "security: umask $um: created directory mode" 700 "$(stat -c %a "$T/m/sub" 2>/dev/null)"
done

# The environment: a secret in undocumented variables never reaches the trace; the documented
# ones (NCCL_*, rank variables) do.
rm -rf "$D"
S=hunter2-$RANDOM-secret
env SECRET_TOKEN="$S" AWS_SECRET_ACCESS_KEY="aws-$S" MY_NCCL_TOKEN="my-$S" NCCLX_KEY="x-$S" \
  HF_TOKEN="hf-$S" NCCL_DEBUG_SUBSYS=INIT RANK=0 WORLD_SIZE=1 \
  NCCLSCOPE_DIR="$D" LD_PRELOAD="$SHIM" "$FJOB" 3 >/dev/null 2>&1
f=$(traces "$D" | head -1)
if [ -z "$f" ]; then fail "security env: no trace"; exit 0; fi
"$FB/ncs_raw" "$f" >"$T/raw"
"$NCS" dump "$f" >"$T/dump" 2>&1
[ -s "$T/raw" ] && pass "security env: raw trace decompressed ($(stat -c %s "$T/raw") bytes)" || fail "security env: raw trace empty"
check_eq "security env: secret not in the raw trace" 0 "$(grep -a -c -- "$S" "$T/raw")"
check_eq "security env: secret not in the file itself" 0 "$(grep -a -c -- "$S" "$f")"
check_eq "security env: secret not in the dump" 0 "$(grep -a -c -- "$S" "$T/dump")"
grep -a -q "NCCL_DEBUG_SUBSYS" "$T/raw" && pass "security env: documented NCCL_* variable recorded" \
  || fail "security env: NCCL_DEBUG_SUBSYS missing from the trace"
grep -a -q "env.RANK" "$T/dump" && pass "security env: rank variable recorded" || fail "security env: RANK missing"
# Every env.* key in the trace is one of the documented ones.
bad=$(grep -a -o 'env\.[A-Za-z0-9_]*' "$T/dump" | sort -u | sed 's/^env\.//' | grep -v -E \
  '^(NCCL_.*|NCCLSCOPE_.*|CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES|RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|GROUP_RANK|NODE_RANK|MASTER_ADDR|MASTER_PORT|SLURM_PROCID|SLURM_LOCALID|SLURM_NTASKS|SLURM_JOB_ID|SLURM_NODEID|OMPI_COMM_WORLD_RANK|OMPI_COMM_WORLD_SIZE|OMPI_COMM_WORLD_LOCAL_RANK|PMI_RANK|PMI_SIZE|PMIX_RANK|MV2_COMM_WORLD_RANK|JAX_PROCESS_ID|TORCHELASTIC_RUN_ID|TORCHELASTIC_RESTART_COUNT|TORCHELASTIC_MAX_RESTARTS|SLURM_STEP_ID|SLURM_ARRAY_JOB_ID|SLURM_ARRAY_TASK_ID|OMPI_MCA_ess_base_jobid|PMIX_NAMESPACE|PBS_JOBID|LSB_JOBID|FLUX_JOB_ID|JAX_COORDINATOR_ADDRESS)$' | tr '\n' ' ')
check_eq "security env: only documented variables recorded" "" "$bad"
