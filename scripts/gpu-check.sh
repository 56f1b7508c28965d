#!/usr/bin/env bash
# gpu-check.sh — validation on a machine with NVIDIA GPUs (issue 3). Builds the shim and the
# decoder, runs a small PyTorch DDP job under torchrun (as many ranks as GPUs) without and with
# the shim, and prints: step time with/without (overhead %), NCCL call counts recorded by the
# shim against the counts the job made itself, the compute-to-communication ratio and the busbw
# table; then (issue 15) DDP with and without overlap under the shim: exposed communication
# from kernel activity against the step-time change. Record its output in
# docs/GPU-VALIDATION.md with the machine and versions.
# Usage: bash scripts/gpu-check.sh [STEPS]      (needs python3 with torch, and nvidia-smi)
# Also (issue 24): nccl-tests all_reduce_perf on one GPU, plain (-I 1) and with -G, and a JAX psum,
# each under the shim. Everything in one call: the device tool lends 15 minutes a session.
set -u
cd "$(dirname "$0")/.."
STEPS=${1:-60}
OUTDIR=${OUT:-/tmp}/gpu-check
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no nvidia-smi: not a GPU machine"; exit 2; }
nvidia-smi topo -m || true
python3 - <<'PY' || { echo "no torch"; exit 2; }
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())), "gpus", torch.cuda.device_count())
PY
NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())')
[ "$NGPU" -ge 1 ] || { echo "no GPU visible"; exit 2; }
# The shim converts a GPU time against the nearest clock anchor, which may be recorded after the
# event (shim/gputime.c): that needs cudaEventElapsedTime to give a negative time when its end
# event completed before its start event, as the CUDA double does. Printed, not assumed.
python3 - <<'PY' || echo "event sign check: failed to run"
import torch
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
a.record(); torch.cuda._sleep(2000000); b.record(); torch.cuda.synchronize()
back, fwd = b.elapsed_time(a), a.elapsed_time(b)
print("event sign check: elapsed(a->b) %.4f ms, elapsed(b->a) %.4f ms: %s" % (fwd, back,
      "negative as the shim needs" if back < 0 and abs(back + fwd) < 0.01 else "NOT the negative of a->b (shim/gputime.c's anchors after an event are wrong here)"))
PY

echo "== build"
make -s shim decoder 2>&1 | tail -5 || exit 1

cat > "$OUTDIR/ddp.py" <<'PY'
# A small DDP training loop that counts its own collectives.
import os, sys, time, json, torch, torch.distributed as dist
steps = int(sys.argv[1]); out = sys.argv[2]
dist.init_process_group("nccl")
rank = dist.get_rank(); world = dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)]).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(64, 4096, device="cuda")
times = []
for i in range(steps):
    torch.cuda.synchronize(); t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    ddp(x).sum().backward()
    opt.step()
    torch.cuda.synchronize(); times.append(time.perf_counter() - t)
extra = torch.ones(1 << 20, device="cuda")
for _ in range(10):
    dist.all_reduce(extra)
torch.cuda.synchronize()
steady = sorted(times[steps // 4:])
json.dump({"rank": rank, "world": world, "step_s_median": steady[len(steady) // 2],
           "explicit_allreduce": 10}, open(f"{out}/job-{rank}.json", "w"))
dist.destroy_process_group()
PY

run_job() { # $1 = label, rest = prefix command
  local label=$1; shift
  mkdir -p "$OUTDIR/$label"
  "$@" torchrun --standalone --nproc-per-node "$NGPU" "$OUTDIR/ddp.py" "$STEPS" "$OUTDIR/$label" \
    > "$OUTDIR/$label.log" 2>&1
  echo "$label: exit $?"
}
echo "== runs (A B A B)"
run_job base1 env
run_job shim1 build/ncclscope run -o "$OUTDIR/trace1" --
run_job base2 env
run_job shim2 build/ncclscope run -o "$OUTDIR/trace2" --

echo "== step time"
python3 - "$OUTDIR" <<'PY'
import json, sys, glob, statistics as st
d = sys.argv[1]
def med(label): return st.median(json.load(open(f))["step_s_median"] for f in glob.glob(f"{d}/{label}/job-*.json"))
b = st.median([med("base1"), med("base2")]); s = st.median([med("shim1"), med("shim2")])
print(f"step time without shim {b*1e3:.3f} ms, with shim {s*1e3:.3f} ms, overhead {100*(s-b)/b:+.2f} %")
PY
echo "== report (trace2)"
build/ncclscope report "$OUTDIR/trace2"
echo "== report --json calls per rank"
build/ncclscope report --json "$OUTDIR/trace2" > "$OUTDIR/report.json"
python3 - "$OUTDIR/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for rk in r.get("ranks", []):
    ops = {k: v.get("calls") for k, v in rk.get("ops", {}).items()}
    print("rank", rk.get("rank"), "timing", rk.get("timing"), "comm_s", rk.get("comm_s"),
          "wall_s", rk.get("wall_s"), "compute_to_comm", rk.get("compute_to_comm"), "calls", ops)
PY
echo "== doctor"
build/ncclscope doctor "$OUTDIR/trace2"; echo "doctor exit $?"

# ---- issue 15: exposed communication against the step-time change of overlap ----
# The same model twice under the shim: DDP as it runs (all-reduces of gradient buckets overlap
# the backward pass) and DDP made serial (backward under no_sync(), then every gradient
# all-reduced after it: all communication exposed). The step time saved by overlap should
# match the exposed communication it removed: (exposed_serial - exposed_overlap) per step
# against (step_serial - step_overlap). Also prints each run's GPU-time verdict (a hidden run
# must not be called communication-bound) and whether kernel activity was on.
echo "== overlap (issue 15): exposed communication vs step time"
cat > "$OUTDIR/ddp_overlap.py" <<'PY'
import os, sys, time, json, torch, torch.distributed as dist
steps, out, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(16)]).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(256, 4096, device="cuda")
times = []
for i in range(steps):
    torch.cuda.synchronize(); t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    if mode == "serial":
        with ddp.no_sync():
            ddp(x).sum().backward()
        for p in ddp.parameters():
            dist.all_reduce(p.grad)
    else:
        ddp(x).sum().backward()
    opt.step()
    torch.cuda.synchronize(); times.append(time.perf_counter() - t)
steady = sorted(times[steps // 4:])
json.dump({"rank": rank, "mode": mode, "steps": steps, "step_s_median": steady[len(steady) // 2],
           "step_s_sum": sum(times)}, open(f"{out}/job-{rank}.json", "w"))
dist.destroy_process_group()
PY
for mode in overlap serial; do
  mkdir -p "$OUTDIR/ov-$mode"
  build/ncclscope run -o "$OUTDIR/ov-trace-$mode" -- torchrun --standalone --nproc-per-node "$NGPU" \
    "$OUTDIR/ddp_overlap.py" "$STEPS" "$OUTDIR/ov-$mode" "$mode" > "$OUTDIR/ov-$mode.log" 2>&1
  echo "ov-$mode: exit $?"
  build/ncclscope report --json "$OUTDIR/ov-trace-$mode" > "$OUTDIR/ov-$mode.json"
done
python3 - "$OUTDIR" "$STEPS" <<'PY'
import json, sys, glob, statistics as st
d, steps = sys.argv[1], int(sys.argv[2])
def job(mode):
    js = [json.load(open(f)) for f in glob.glob(f"{d}/ov-{mode}/job-*.json")]
    return st.median(j["step_s_median"] for j in js)
def gpu(mode):
    r = json.load(open(f"{d}/ov-{mode}.json"))
    g = [rk.get("gpu_time", {}) for rk in r.get("ranks", [])]
    return g, [rk.get("verdict") for rk in r.get("ranks", [])]
rows = {}
for mode in ("overlap", "serial"):
    g, verdicts = gpu(mode)
    src = sorted(set(x.get("source") for x in g))
    exposed = st.median(x.get("exposed_comm_s", float("nan")) for x in g) if g else float("nan")
    hidden = st.median(x.get("hidden_share", float("nan")) for x in g) if g else float("nan")
    rows[mode] = (job(mode), exposed / steps, hidden, verdicts, src, [x.get("reason") for x in g][:1])
    print(f"{mode:8s} step {rows[mode][0]*1e3:9.3f} ms  exposed comm per step {rows[mode][1]*1e3:9.3f} ms  "
          f"hidden share {hidden:.2f}  kernel activity {src} {rows[mode][5]}  verdicts {verdicts}")
dstep = rows["serial"][0] - rows["overlap"][0]
dexp = rows["serial"][1] - rows["overlap"][1]
print(f"step time saved by overlap {dstep*1e3:.3f} ms; exposed communication removed {dexp*1e3:.3f} ms per step; "
      f"ratio {dexp/dstep if dstep else float('nan'):.2f} (1.00 = the exposed figure explains the step time change)")
PY

# ---- issue 24: the field's own client on the GPU: nccl-tests, unmodified, under the shim ----
# Builds nccl-tests (NCCL_TESTS_SRC, default ../shared/nccl-tests) against the NCCL that torch
# loads (its wheel ships nccl.h and libnccl.so.2) or CUDA_HOME's, one gencode for this GPU, then
# runs all_reduce_perf on one GPU with -I 1 (per-iteration CUDA-event times), plain and with -G
# (CUDA-graph replays), each under `ncclscope run`, and prints nccl-tests' rows beside the
# times ncclscope recorded for the same sizes. With one GPU an all-reduce has busbw 0 by
# definition (factor 2(n-1)/n), so times are compared, not busbw.
echo "== nccl-tests (issue 24)"
# On the device machine ../shared is absent: copy it first (cp -r ../shared/nccl-tests
# build/nccl-tests-src) and carry build/nccl-tests-src with the run.
NT_SRC=${NCCL_TESTS_SRC:-build/nccl-tests-src}
[ -d "$NT_SRC/src" ] || NT_SRC=../shared/nccl-tests
NT_BUILD=$OUTDIR/nccl-tests
NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
[ -f "$NCCL_DIR/include/nccl.h" ] || NCCL_DIR=${CUDA_HOME:-/usr/local/cuda}
CC_ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
if [ ! -d "$NT_SRC/src" ]; then
  echo "nccl-tests: no source at $NT_SRC (set NCCL_TESTS_SRC): skipped"
elif ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  echo "nccl-tests: no nvcc: skipped"
else
  NVCC_BIN=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
  # the wheel has lib/libnccl.so.2 but no libnccl.so for -lnccl: link through a folder of our own
  mkdir -p "$OUTDIR/nccl-home/lib"
  ln -sfn "$NCCL_DIR/include" "$OUTDIR/nccl-home/include"
  ln -sf "$NCCL_DIR/lib/libnccl.so.2" "$OUTDIR/nccl-home/lib/libnccl.so"
  timeout 400 make -s -C "$NT_SRC/src" build BUILDDIR="$NT_BUILD" NCCL_HOME="$OUTDIR/nccl-home" \
    NVCC="$NVCC_BIN" NVCC_GENCODE="-gencode=arch=compute_${CC_ARCH},code=sm_${CC_ARCH}" \
    "$NT_BUILD/all_reduce_perf" -j 8 > "$OUTDIR/nccl-tests-build.log" 2>&1
  echo "nccl-tests build: exit $? (NCCL from $NCCL_DIR, sm_$CC_ARCH)"
  for mode in plain graph; do
    extra=""; [ $mode = graph ] && extra="-G 4"
    [ $mode = graph ] || extra="-I 1"
    LD_LIBRARY_PATH="$NCCL_DIR/lib:${LD_LIBRARY_PATH:-}" timeout 120 build/ncclscope run -o "$OUTDIR/nt-$mode" -- \
      "$NT_BUILD/all_reduce_perf" -g 1 -b 1K -e 64M -f 8 -n 20 -w 5 $extra > "$OUTDIR/nt-$mode.out" 2>&1
    echo "nccl-tests $mode: exit $?"
    grep -E '^ *[0-9]+ +[0-9]+ +float' "$OUTDIR/nt-$mode.out" | head -12
    build/ncclscope report "$OUTDIR/nt-$mode" 2>&1 | sed -n '1,60p'
  done
fi

# ---- issue 24: a one-GPU JAX psum under the shim: what ncclscope sees of JAX's NCCL ----
# On one device XLA may compile psum without any NCCL call; the output says what was traced.
echo "== JAX psum (issue 24)"
cat > "$OUTDIR/jax_psum.py" <<'PY'
import jax, jax.numpy as jnp
print("jax", jax.__version__, "devices", jax.devices())
f = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
x = jnp.ones((jax.local_device_count(), 1 << 20))
for _ in range(20):
    y = f(x)
y.block_until_ready()
print("psum ok", float(y[0, 0]))
PY
timeout 120 build/ncclscope run -o "$OUTDIR/jax" -- python3 "$OUTDIR/jax_psum.py" > "$OUTDIR/jax.log" 2>&1
echo "jax: exit $?"; tail -5 "$OUTDIR/jax.log"
build/ncclscope report "$OUTDIR/jax" 2>&1 | sed -n '1,30p'
