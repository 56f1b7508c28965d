#!/usr/bin/env bash
# test_topo_nvml.sh — the NVML double fed every real `nvidia-smi topo -m` output in
# tests/fixtures/topo/ (tests/fixtures/README.md says where each comes from) and the scenario files in
# tests/doubles/topos/, read back through the shim's NVML collector (shim/topo.c) into
# TOPO_GPU/TOPO_LINK records and out of `ncclscope report --json`: GPU count, the GPU0-GPU1
# cell as nvidia-smi prints it, names and PCIe links from the scenario directives.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -x "$J" ] || [ ! -f "$SHIM" ] || [ ! -f "$DOUBLES/libnvidia-ml.so.1" ]; then skip "topo: job, shim or NVML double not built"; exit 0; fi

# topo FILE: prints "<ngpus> <GPU0-GPU1 cell>" as the decoder reads it back from a traced run
topo() {
  local d=$T/tr-$(basename "$1" .txt)
  NVMLDOUBLE_TOPO=$1 NCCLSCOPE_DIR=$d LD_PRELOAD=$SHIM bash "$L" 1 "$J" --steps 1 >/dev/null 2>&1
  "$NCS" report --json "$d" >"$d.json" 2>&1
  echo "$(grep -c '"uuid"' "$d.json") $(grep -o '"cell": "[^"]*"' "$d.json" | head -1 | sed 's/.*: "//; s/"//')"
}

S=$ROOT/tests/fixtures/topo
while read -r file want; do
  [ -f "$S/$file" ] || { fail "$file: missing"; continue; }
  check_eq "fixtures/topo/$file: GPUs and GPU0-GPU1 cell" "$want" "$(topo "$S/$file")"
done <<'LIST'
01-g6e-12xlarge-4x-l40s-pcie-node.txt 4 NODE
02-5gpu-rtx5090-4090-pcie-sys-phb-node.txt 5 SYS
03-2x-rtx3090-pcie-sys-numa-na-tabs.txt 2 SYS
04-2x-rtx5090-phb-tabs-plus-p2p-matrix-gns.txt 2 PHB
05-2x-rtx3090-phb-tabs-plus-p2p-matrix-ok.txt 2 PHB
06-2x-gpu-node-indented-wrapped-legend.txt 2 NODE
07-p4d-24xlarge-8x-a100-nv12-tabs.txt 8 NV12
08-8x-a100-nv12-10nic-pxb-pix-damaged-columns.txt 8 NV12
09-2x-a100-nv12-8nic-empty-affinity.txt 2 NV12
10-4x-h100-nv6-4nic-pix-sys.txt 4 NV6
11-p5-48xlarge-8x-h100-nv18.txt 8 NV18
12-8x-h20-vm-nv18-8nic-pix-node-sys.txt 8 NV18
13-gb200-4gpu-nv18.txt 4 NV18
LIST
d=$T/tr-02-5gpu-rtx5090-4090-pcie-sys-phb-node.json
check "02 (5 GPUs): GPU1-GPU2 PHB and GPU1-GPU3 NODE read back" \
  sh -c "grep -A4 '\"a\": 1,' '$d' | grep -A3 '\"b\": 2,' | grep -q '\"cell\": \"PHB\"' && grep -A4 '\"a\": 1,' '$d' | grep -A3 '\"b\": 3,' | grep -q '\"cell\": \"NODE\"'"

D=$ROOT/tests/doubles/topos
check_eq "topos/nvswitch-8x-h100-nv18.txt" "8 NV18" "$(topo "$D/nvswitch-8x-h100-nv18.txt")"
check "nvswitch: name and PCIe Gen5 x16 from the directives" \
  sh -c "grep -q '\"name\": \"NVIDIA H100 80GB HBM3\"' '$T/tr-nvswitch-8x-h100-nv18.json' && grep -q '\"pcie_gen\": 5' '$T/tr-nvswitch-8x-h100-nv18.json'"
check_eq "topos/pcie-8x-l40s-2socket.txt" "8 PIX" "$(topo "$D/pcie-8x-l40s-2socket.txt")"
check "pcie-8x: GPU0-GPU4 across sockets is SYS, GPU0-GPU2 NODE" \
  sh -c "grep -A4 '\"a\": 0,' '$T/tr-pcie-8x-l40s-2socket.json' | grep -A3 '\"b\": 4,' | grep -q SYS && grep -A4 '\"a\": 0,' '$T/tr-pcie-8x-l40s-2socket.json' | grep -A3 '\"b\": 2,' | grep -q NODE"
check_eq "topos/bridge-2x-a6000-nv4.txt" "2 NV4" "$(topo "$D/bridge-2x-a6000-nv4.txt")"
check_eq "topos/mixed-4x-bridged-pairs.txt" "4 NV4" "$(topo "$D/mixed-4x-bridged-pairs.txt")"
check "mixed: GPU2 is an A5000 at x8, GPU0-GPU2 SYS" \
  sh -c "grep -q '\"name\": \"NVIDIA RTX A5000\"' '$T/tr-mixed-4x-bridged-pairs.json' && grep -q '\"pcie_width\": 8' '$T/tr-mixed-4x-bridged-pairs.json'"

# no NVML (no NVMLDOUBLE_TOPO: the double fails like a machine without the driver): no record
NCCLSCOPE_DIR=$T/tr-none LD_PRELOAD=$SHIM bash "$L" 1 "$J" --steps 1 >/dev/null 2>&1
check_eq "without NVML: no TOPO records, the run still traced" "0 yes" \
  "$("$NCS" report --json "$T/tr-none" | grep -c '"uuid"') $([ -n "$(ls "$T/tr-none")" ] && echo yes)"
# a damaged description: nvmlInit fails, nothing is recorded, the job is unaffected
printf 'GPU0 GPU1\nGPU0 X BOGUS\nGPU1 BOGUS X\n' >"$T/bad.txt"
NVMLDOUBLE_TOPO=$T/bad.txt NCCLSCOPE_DIR=$T/tr-bad LD_PRELOAD=$SHIM bash "$L" 1 "$J" --steps 1 >"$T/bad.out" 2>&1
check_eq "unparsable topology: job still succeeds, no TOPO record" "0 0" "$? $("$NCS" report --json "$T/tr-bad" | grep -c '"uuid"')"
