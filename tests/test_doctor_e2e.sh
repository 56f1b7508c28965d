#!/usr/bin/env bash
# test_doctor_e2e.sh — `ncclscope doctor` and `report` on traces of real runs: ddp_job on the
# NCCL double under the shim, with the NVML double describing the machine (topologies in
# tests/doubles/topos/ and tests/fixtures/topo/07-p4d-24xlarge-8x-a100-nv12-tabs.txt). The NCCL
# double picks transports as NCCL 2.28 would; the shim captures its log and the topology.
# Each verdict: one run that makes it fire, one where it stays silent.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
TOPOS=$ROOT/tests/doubles/topos
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -x "$J" ] || [ ! -f "$SHIM" ]; then skip "doctor e2e: ddp_job or shim not built"; exit 0; fi

# job NAME NRANKS TOPO [ENV...]: traces in $T/NAME; compute time keeps it from being comm-bound
CUS=20000
if [ -n "${NCS_SANITIZER:-}" ]; then
  # the sanitizer slows the NCCL double's collectives (TSan: 57% of the window in NCCL with
  # 20 ms of compute per step); 10x the compute keeps the healthy job compute-bound
  CUS=200000; echo "# $NCS_SANITIZER build: compute per step raised from 20 to 200 ms (comm-bound bound relaxed)"
fi
job() {
  local name=$1 n=$2 topo=$3; shift 3
  env "$@" NVMLDOUBLE_TOPO="$topo" NCCLSCOPE_DIR="$T/$name" LD_PRELOAD="$SHIM" \
    bash "$L" "$n" "$J" --steps 2 --compute-us "$CUS" >"$T/$name.out" 2>&1 || echo "job $name failed" >&2
}
doctor() { "$NCS" doctor "$T/$1" >"$T/$1.doc" 2>&1; echo $? >"$T/$1.rc"; }
fired() { grep -q "^PROBLEM $2:" "$T/$1.doc"; }
# healthy NAME: no verdict fired except those that judge measured times (comm-bound, low-busbw,
# gpu-idle, and straggler / slow-ranks, which judge arrival times and busbw across ranks:
# on 2 shared cores a loaded run of the doubles can be slow enough for either; they are printed,
# and tested where they must fire or stay silent on synthetic traces, test_topo_doctor)
healthy() {
  local timed; timed=$(grep -oE '^PROBLEM (comm-bound|low-busbw|gpu-idle|straggler|slow-ranks)' "$T/$1.doc" | tr '\n' ' ')
  [ -n "$timed" ] && echo "# $1: timing verdicts under this load: $timed"
  ! grep '^PROBLEM ' "$T/$1.doc" | grep -qvE '^PROBLEM (comm-bound|low-busbw|gpu-idle|straggler|slow-ranks)'
}

job nv18 4 "$TOPOS/nvswitch-8x-h100-nv18.txt"; doctor nv18
ok=no; healthy nv18 && case $(cat "$T/nv18.rc") in 0|1) ok=yes ;; esac
check_eq "NVSwitch H100 box, defaults: healthy (no verdict but the timing ones; exit 0, or 1 for those)" yes "$ok"
"$NCS" dump "$T/nv18" >"$T/nv18.dump" 2>&1
check "NVSwitch box: the trace holds NCCL's 'via P2P/CUMEM' lines (Hopper: no /read) and NVLS available" \
  sh -c "grep -q 'NCCL_LOG.*via P2P/CUMEM\$' '$T/nv18.dump' && grep -q 'NCCL_LOG.*NVLS multicast support is available' '$T/nv18.dump'"
check "NVSwitch box: TOPO_GPU/TOPO_LINK records in the trace" sh -c "\"$NCS\" report --json '$T/nv18' | grep -q '\"cell\": \"NV18\"'"
"$NCS" report "$T/nv18" >"$T/nv18.rep" 2>&1
check "report: topology with NV18>P2P overlay and the transport matrix" \
  sh -c "grep -q 'NV18>P2P' '$T/nv18.rep' && grep -qE '^  communicator 4 ranks \(ncclCommInitRank\): 8 connections \(P2P 8' '$T/nv18.rep'"
"$NCS" report --json "$T/nv18" >"$T/nv18.json" 2>&1
check "report --json: ranks[].transports[] with P2P/CUMEM" \
  sh -c "grep -q '\"transport\": \"P2P\"' '$T/nv18.json' && grep -q '\"detail\": \"CUMEM\"' '$T/nv18.json'"

job nv18p2p 4 "$TOPOS/nvswitch-8x-h100-nv18.txt" NCCL_P2P_DISABLE=1; doctor nv18p2p
check "NCCL_P2P_DISABLE=1 on NV18: nvlink-unused fires, names the variable, exit 1" \
  sh -c "grep -q '^PROBLEM nvlink-unused' '$T/nv18p2p.doc' && grep -q 'NCCL_P2P_DISABLE=1' '$T/nv18p2p.doc' && [ \$(cat '$T/nv18p2p.rc') = 1 ]"
check "... with SHM between NVLinked GPUs as evidence" grep -q 'NV18, but NCCL connected them via SHM/direct/direct' "$T/nv18p2p.doc"

job mixed 4 "$TOPOS/mixed-4x-bridged-pairs.txt"; doctor mixed
"$NCS" report "$T/mixed" >"$T/mixed.rep" 2>&1
check "mixed box (bridged pairs, SYS between): NV4>P2P on bridges, SYS>SHM across, no nvlink verdict" \
  sh -c "grep -q 'NV4>P2P' '$T/mixed.rep' && grep -q 'SYS>SHM' '$T/mixed.rep' && ! grep -q '^PROBLEM nvlink-unused' '$T/mixed.doc'"
job mixedloc 4 "$TOPOS/mixed-4x-bridged-pairs.txt" NCCL_P2P_LEVEL=LOC; doctor mixedloc
check "mixed box with NCCL_P2P_LEVEL=LOC: nvlink-unused fires on the bridged pairs, next step names NCCL_P2P_LEVEL" \
  sh -c "grep -q 'GPU0) -> rank 1 (GPU1) are joined by NV4' '$T/mixedloc.doc' && grep -q 'next step: NCCL_P2P_LEVEL' '$T/mixedloc.doc'"

job pcie 4 "$TOPOS/pcie-8x-l40s-2socket.txt"; doctor pcie
check "8 PCIe L40S across two sockets: no nvlink verdict (exit $(cat "$T/pcie.rc"))" \
  sh -c "! grep -q -E '^PROBLEM (nvlink-unused|no-nvlink)' '$T/pcie.doc'"
"$NCS" report "$T/pcie" >"$T/pcie.rep" 2>&1
check "PCIe box: P2P within a PCIe switch (PIX>P2P), SHM across (NODE>SHM)" \
  sh -c "grep -q 'PIX>P2P' '$T/pcie.rep' && grep -q 'NODE>SHM' '$T/pcie.rep'"

sed 's/^# nvmldouble: name=.*/# nvmldouble: name=NVIDIA H100 80GB HBM3/' "$TOPOS/pcie-8x-l40s-2socket.txt" >"$T/h100-nolink.txt"
job nolink 4 "$T/h100-nolink.txt"; doctor nolink
check "H100 box whose NVLinks are down: no-nvlink fires with a fabricmanager next step" \
  sh -c "grep -q '^PROBLEM no-nvlink' '$T/nolink.doc' && grep -q fabricmanager '$T/nolink.doc'"

LAUNCH_NODES=2 job sock 4 "$TOPOS/nvswitch-8x-h100-nv18.txt" NCCL_IB_DISABLE=1; doctor sock
check "2 nodes with NCCL_IB_DISABLE=1: socket-not-ib fires" grep -q '^PROBLEM socket-not-ib' "$T/sock.doc"
LAUNCH_NODES=2 job noib 4 "$TOPOS/nvswitch-8x-h100-nv18.txt" NCCLDOUBLE_IB=0; doctor noib
check "2 nodes without IB devices: socket-not-ib fires (NET/IB found no device)" \
  sh -c "grep -q '^PROBLEM socket-not-ib' '$T/noib.doc' && grep -q 'no device' '$T/noib.doc'"
LAUNCH_NODES=2 job ib 4 "$TOPOS/nvswitch-8x-h100-nv18.txt"; doctor ib
check "2 nodes over NET/IB: socket-not-ib silent, nvlink-unused silent (NET is inter-node)" \
  sh -c "! grep -q -E '^PROBLEM (socket-not-ib|nvlink-unused)' '$T/ib.doc'"

job ver 2 "$TOPOS/bridge-2x-a6000-nv4.txt"; doctor ver
check "bridged pair, one NCCL version: healthy (no verdict but the timing ones)" healthy ver
# one job whose rank 1 loads NCCL 2.27.3 (the NCCL double reports NCCLDOUBLE_VERSION)
env NVMLDOUBLE_TOPO="$TOPOS/bridge-2x-a6000-nv4.txt" NCCLSCOPE_DIR="$T/mix" LD_PRELOAD="$SHIM" bash "$L" 2 \
  bash -c 'if [ "$RANK" = 1 ]; then export NCCLDOUBLE_VERSION=22703; fi; exec "$0" "$@"' "$J" --steps 2 \
  --compute-us "$CUS" >"$T/mix.out" 2>&1 || echo "job mix failed" >&2
doctor mix
check "one job, rank 1 on NCCL 2.27.3: nccl-version-mismatch fires" \
  sh -c "grep -q '^PROBLEM nccl-version-mismatch' '$T/mix.doc' && grep -q '2.27.3' '$T/mix.doc' && grep -q '2.28.9' '$T/mix.doc'"
# a second run into the same directory is another job (docs/CLI.md): doctor lists them, exit 2
NCCLDOUBLE_VERSION=22703 job ver 2 "$TOPOS/bridge-2x-a6000-nv4.txt"; doctor ver
check "a second run in the same directory: doctor refuses two jobs (exit 2), listing them" \
  sh -c "[ \$(cat '$T/ver.rc') = 2 ] && grep -q 'hold 2 jobs' '$T/ver.doc' && grep -q '^job 2:' '$T/ver.doc'"

job p4d 8 "$ROOT/tests/fixtures/topo/07-p4d-24xlarge-8x-a100-nv12-tabs.txt"; doctor p4d
"$NCS" report "$T/p4d" >"$T/p4d.rep" 2>&1
check "real p4d matrix (fixtures/topo/07): 8 ranks over NV12 via P2P/CUMEM/read, healthy" \
  sh -c "grep -q 'NV12>P2P' '$T/p4d.rep' && ! grep -q '^PROBLEM nvlink' '$T/p4d.doc' && \"$NCS\" dump '$T/p4d' | grep -q 'via P2P/CUMEM/read'"

# CUDA_VISIBLE_DEVICES=2,3: NCCL prints cudaDev 0/1 but nvmlDev 2/3 in brackets; the doctor maps
# ranks to the right physical GPUs (the NV4-bridged pair GPU2-GPU3 of the mixed box)
job cvd 2 "$TOPOS/mixed-4x-bridged-pairs.txt" CUDA_VISIBLE_DEVICES=2,3 NCCL_P2P_LEVEL=LOC; doctor cvd
check "CUDA_VISIBLE_DEVICES=2,3: nvlink-unused names GPU2 -> GPU3 (NV4), not GPU0/GPU1" \
  sh -c "grep -q 'rank 0 (GPU2) -> rank 1 (GPU3) are joined by NV4' '$T/cvd.doc' && \"$NCS\" dump '$T/cvd' | grep -q 'cudaDev 0 nvmlDev 2'"
