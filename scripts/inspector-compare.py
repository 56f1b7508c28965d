#!/usr/bin/env python3
"""inspector-compare.py NCS INSPECTOR_DIR TRACE_DIR [--table] — NVIDIA's NCCL Inspector and
ncclscope on the same job, collective by collective (docs/PROFILER.md, "Beside the NCCL Inspector").

The Inspector writes one JSON object per line (<host>-pid<PID>.log: header with rank and n_ranks,
coll_perf or p2p_perf); ncclscope's traces are read with `NCS dump` (CALL, GPU_TIME, KERNEL,
PROCESS, COMM records). A process's Inspector file and its trace are paired by pid; within it,
a communicator by (rank, n_ranks). Per communicator and operation, the Inspector's records in
sequence order (coll_sn; p2p records in order of p2p_sn per Send/Recv) are paired with
ncclscope's calls of that operation in call order.

Prints one line per finding and a last line "ok N collectives, M p2p" when: every communicator
has the same number of records per operation on both sides, each pair has the same size
(coll_msg_size_bytes / p2p_msg_size_bytes = CALL bytes: count x datatype size; NCCL hands
AllGather and Broadcast to the profiler as bytes of ncclInt8, the same product), every Inspector
record is timed from the GPU (timing_source kernel_gpu: KernelCh pTimer), and its time lies
within ncclscope's CUDA-event GPU time of that call (or of its group) plus TOL_US (default 51:
the Inspector truncates to whole us, ncclscope stores GPU times at 256 ns and may lift an event
start by up to its anchor bracket, kept under 50 us, docs/SHIM.md). The kernel ran between
those events, so the Inspector's time can only be shorter, by the host's launch gap.
--table prints, per record, the Inspector's time beside ncclscope's event time and CUPTI
kernel time (the KERNEL record of the launch), in microseconds."""
import glob, json, os, re, subprocess, sys
from collections import defaultdict

TOL_US = float(os.environ.get("TOL_US", "51"))
# the calls that launch work of their own, as the Inspector names them (AlltoAll, Gather and
# Scatter reach the profiler as Send/Recv tasks: not paired here)
LAUNCHING = ("AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "Send", "Recv")


def kv(line):
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", line))


def read_trace(ncs, path):
    out = subprocess.run([ncs, "dump", path], capture_output=True, text=True).stdout
    t = {"pid": None, "comms": {}, "calls": [], "gpu": {}, "kernels": []}
    in_process = False
    for line in out.splitlines():
        if line.startswith("PROCESS "):
            in_process = True
            continue
        if in_process and line.startswith("  pid="):
            t["pid"] = int(line.split("=", 1)[1])
            continue
        if not line.startswith(" "):
            in_process = False
        if line.startswith("COMM "):
            d = kv(line)
            t["comms"][d["comm"]] = (int(d["rank"]), int(d["nranks"]))
        elif line.startswith("CALL "):
            t["calls"].append(kv(line))
        elif line.startswith("GPU_TIME "):
            d = kv(line)
            t["gpu"][(d["kind"], d["thread"], d["ref"])] = int(d["duration"])
        elif line.startswith("KERNEL ") and "class=nccl" in line:
            t["kernels"].append(kv(line))
    return t


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    ncs, idir, tdir = sys.argv[1:4]
    table = "--table" in sys.argv[4:]
    traces = {}
    for f in sorted(glob.glob(os.path.join(tdir, "*.ncs"))):
        t = read_trace(ncs, f)
        if t["pid"] is not None:
            traces[t["pid"]] = t
    bad, ncoll, np2p = [], 0, 0
    files = sorted(glob.glob(os.path.join(idir, "*-pid*.log")))
    if not files:
        bad.append("no Inspector output in %s" % idir)
    seen_pids = set()
    rows = []
    for f in files:
        pid = int(re.search(r"-pid(\d+)\.log$", f).group(1))
        seen_pids.add(pid)
        t = traces.get(pid)
        if not t:
            bad.append("pid %d: Inspector output but no ncclscope trace" % pid)
            continue
        ins = defaultdict(list)  # (rank, nranks, op) -> records
        for line in open(f):
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            h = d["header"]
            if "coll_perf" in d:
                p = d["coll_perf"]
                ins[(h["rank"], h["n_ranks"], p["coll"])].append(
                    (p["coll_sn"], p["coll_msg_size_bytes"], p["coll_exec_time_us"], p.get("coll_timing_source")))
            elif "p2p_perf" in d:
                p = d["p2p_perf"]
                ins[(h["rank"], h["n_ranks"], p["p2p"])].append(
                    (p["p2p_sn"], p["p2p_msg_size_bytes"], p["p2p_exec_time_us"], p.get("p2p_timing_source")))
        # ncclscope: calls per (rank, nranks, op), in call order; the GPU time of each (its group's
        # when grouped); the NCCL kernel of each launch (ungrouped call or group), in order
        ncs = defaultdict(list)
        kernels = iter(sorted(t["kernels"], key=lambda k: int(k["start"])))
        launch_kernel = {}
        for c in t["calls"]:
            if c["op"] not in LAUNCHING or c["comm"] == "0" or c["rc"] != "0" or c["bytes"] == "0":
                continue
            if c["comm"] not in t["comms"]:
                continue
            rank, nranks = t["comms"][c["comm"]]
            grouped = c["depth"] != "0"
            key = ("group", c["thread"], c["group"]) if grouped else ("call", c["thread"], c["tcall"])
            if key not in launch_kernel:
                launch_kernel[key] = next(kernels, None)
            k = launch_kernel[key]
            ncs[(rank, nranks, c["op"])].append((int(c["bytes"]), t["gpu"].get(key), k and int(k["duration"])))
        for key in sorted(set(ins) | set(ncs)):
            a, b = sorted(ins.get(key, [])), ncs.get(key, [])
            where = "pid %d rank %d/%d %s" % (pid, key[0], key[1], key[2])
            if len(a) != len(b):
                bad.append("%s: Inspector %d records, ncclscope %d calls" % (where, len(a), len(b)))
                continue
            for i, ((sn, size, us, src), (nbytes, gpu_ns, k_ns)) in enumerate(zip(a, b)):
                if key[2] in ("Send", "Recv"):
                    np2p += 1
                else:
                    ncoll += 1
                if size != nbytes:
                    bad.append("%s #%d: Inspector %d bytes, ncclscope %d" % (where, i, size, nbytes))
                if src != "kernel_gpu":
                    bad.append("%s #%d: Inspector timing source %s" % (where, i, src))
                if gpu_ns is None:
                    bad.append("%s #%d: ncclscope has no GPU time" % (where, i))
                elif us * 1000.0 > gpu_ns + TOL_US * 1000.0:
                    bad.append("%s #%d: Inspector %d us > ncclscope GPU time %.1f us + %g" % (where, i, us, gpu_ns / 1e3, TOL_US))
                rows.append((pid, key[0], key[2], i, size, us, gpu_ns, k_ns))
    for pid in traces:
        if pid not in seen_pids:
            bad.append("pid %d: ncclscope trace but no Inspector output" % pid)
    if table:
        print("| rank | op | # | bytes | Inspector us | ncclscope event us | ncclscope kernel us |")
        print("|---|---|---|---|---|---|---|")
        for pid, rank, op, i, size, us, gpu_ns, k_ns in rows:
            print("| %d | %s | %d | %d | %d | %s | %s |" % (rank, op, i, size, us,
                  "%.1f" % (gpu_ns / 1e3) if gpu_ns is not None else "-", "%.1f" % (k_ns / 1e3) if k_ns else "-"))
    for b in bad:
        print(b)
    if not bad:
        print("ok %d collectives, %d p2p" % (ncoll, np2p))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
