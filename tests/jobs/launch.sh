#!/usr/bin/env bash
# launch.sh N CMD [ARGS...] — a torchrun-like launcher for the test jobs.
# Starts N copies of CMD with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
# MASTER_ADDR, MASTER_PORT and NCCLDOUBLE_RDZV (a fresh directory where rank 0 publishes
# the NCCL unique id, see tests/jobs/job_util.h). Waits for all; if one fails, the others
# are killed. Exit status: 0 if all succeeded, else the first failure's status.
# LAUNCH_NODES=M spreads ranks over M simulated hosts (NCCLDOUBLE_NODE, LOCAL_RANK per host).
set -u
if [ $# -lt 2 ] || ! [ "$1" -ge 1 ] 2>/dev/null; then
  echo "usage: launch.sh N CMD [ARGS...]" >&2; exit 2
fi
n=$1; shift
nodes=${LAUNCH_NODES:-1}
per=$(( (n + nodes - 1) / nodes ))
rdzv=$(mktemp -d "${TMPDIR:-/tmp}/ncs-rdzv.XXXXXX")
pids=()
cleanup() { rm -rf "$rdzv"; }
trap cleanup EXIT
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; exit 130' INT TERM
for ((r = 0; r < n; r++)); do
  RANK=$r LOCAL_RANK=$((r % per)) WORLD_SIZE=$n LOCAL_WORLD_SIZE=$per GROUP_RANK=$((r / per)) \
  NCCLDOUBLE_NODE=$((r / per)) MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
  NCCLDOUBLE_RDZV=$rdzv "$@" &
  pids+=($!)
done
status=0
left=$n
while [ "$left" -gt 0 ]; do
  wait -n -p done_pid "${pids[@]}" 2>/dev/null
  rc=$?
  [ -z "${done_pid:-}" ] && break
  left=$((left - 1))
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$rc
    for p in "${pids[@]}"; do [ "$p" != "$done_pid" ] && kill "$p" 2>/dev/null; done
  fi
  unset done_pid
done
wait 2>/dev/null
exit "$status"
