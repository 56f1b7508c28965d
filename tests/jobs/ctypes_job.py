#!/usr/bin/env python3
"""ctypes_job.py -- reaches the NCCL double only through Python's ctypes (ctypes.CDLL, i.e.
dlopen with RTLD_LOCAL, and dlsym by handle), as vLLM's pynccl and other Python wrappers do.

Usage: ctypes_job.py DOUBLES_DIR CALLS TRUTH_JSON [SECOND_LIBNCCL]
One rank: ncclGetVersion, ncclGetUniqueId, ncclCommInitRank(nranks 1), CALLS all-reduces of
512 floats (result checked), CALLS // 2 all-gathers of 64 floats, ncclCommDestroy. Writes what
it called to TRUTH_JSON ({"rank", "nranks", "ops": {"Op": {"calls", "count", "bytes"}}}).
With SECOND_LIBNCCL (a copy of the double at another path), also calls that copy's
ncclGetVersion once: a second NCCL, which the shim does not trace (not in the truth).
Exit 1 on a failed call or a wrong result."""
import ctypes
import json
import os
import sys

doubles, calls, truth = sys.argv[1], int(sys.argv[2]), sys.argv[3]
second = sys.argv[4] if len(sys.argv) > 4 else None
cudart = ctypes.CDLL(os.path.join(doubles, "libcudart.so.13"))
nccl = ctypes.CDLL(os.path.join(doubles, "libnccl.so.2"))


def ok(rc, what):
    if rc != 0:
        sys.exit("ctypes_job: %s failed: %d" % (what, rc))


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


FLOAT32, SUM = 7, 0  # ncclFloat32, ncclSum
version = ctypes.c_int()
ok(nccl.ncclGetVersion(ctypes.byref(version)), "ncclGetVersion")
uid = UniqueId()
ok(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
ok(cudart.cudaSetDevice(0), "cudaSetDevice")
comm = ctypes.c_void_p()
nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
ok(nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0), "ncclCommInitRank")
stream = ctypes.c_void_p()
ok(cudart.cudaStreamCreate(ctypes.byref(stream)), "cudaStreamCreate")
AR, AG = 512, 64
buf = ctypes.c_void_p()
out = ctypes.c_void_p()
ok(cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(AR * 4)), "cudaMalloc")
ok(cudart.cudaMalloc(ctypes.byref(out), ctypes.c_size_t(AR * 4)), "cudaMalloc")
host = (ctypes.c_float * AR)(*([2.5] * AR))
coll = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
nccl.ncclAllReduce.argtypes = coll
nccl.ncclAllGather.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
H2D, D2H = 1, 2
for i in range(calls):
    ok(cudart.cudaMemcpy(buf, host, ctypes.c_size_t(AR * 4), H2D), "cudaMemcpy")
    ok(nccl.ncclAllReduce(buf, out, AR, FLOAT32, SUM, comm, stream), "ncclAllReduce")
    ok(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
    res = (ctypes.c_float * AR)()
    ok(cudart.cudaMemcpy(res, out, ctypes.c_size_t(AR * 4), D2H), "cudaMemcpy")
    if res[0] != 2.5 or res[AR - 1] != 2.5:
        sys.exit("ctypes_job: all-reduce %d: wrong result %r" % (i, res[0]))
for i in range(calls // 2):
    ok(nccl.ncclAllGather(buf, out, AG, FLOAT32, comm, stream), "ncclAllGather")
ok(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
ok(nccl.ncclCommDestroy(comm), "ncclCommDestroy")
if second:
    other = ctypes.CDLL(second)
    v2 = ctypes.c_int()
    ok(other.ncclGetVersion(ctypes.byref(v2)), "second ncclGetVersion")
ops = {"GetVersion": (1, 0), "GetUniqueId": (1, 0), "CommInitRank": (1, 0),
       "AllReduce": (calls, calls * AR), "AllGather": (calls // 2, (calls // 2) * AG), "CommDestroy": (1, 0)}
with open(truth, "w") as f:
    json.dump({"rank": 0, "nranks": 1,
               "ops": {k: {"calls": c, "count": n, "bytes": n * 4} for k, (c, n) in ops.items() if c}}, f)
print("ctypes_job: %d all-reduces, %d all-gathers, NCCL %d" % (calls, calls // 2, version.value))
