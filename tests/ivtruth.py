"""ivtruth.py -- the truth the calling-thread tests compare the decoder's unions against
(test_metrics_exact_threads, test_html_share_threads, test_gate_union_threads): a trace's
AllReduce calls as `ncclscope dump` prints them and as `ncclscope timeline` places them on the
job clock, and their union made the plain way (sorted, then swept). Nothing here reads the
decoder's own figures."""
import json


def dump_calls(lines, only_ok=True):
    """The AllReduce CALL lines of a dump (with only_ok, those with rc 0): their host intervals
    (t_enter, t_enter + duration), how many, and the longest run of one thread's calls in a row
    (the case the tests need: a batch longer than the union's first buffer)."""
    iv, calls, run, maxrun, thr = [], 0, 0, 0, None
    for line in lines:
        if not line.startswith("CALL op=AllReduce "):
            continue
        x = dict(kv.split("=", 1) for kv in line.split()[1:])
        if only_ok and x["rc"] != "0":
            continue
        calls += 1
        run = run + 1 if x["thread"] == thr else 1
        thr = x["thread"]
        maxrun = max(maxrun, run)
        s = int(x["t_enter"])
        iv.append((s, s + int(x["duration"])))
    return iv, calls, maxrun


def timeline_calls(path):
    """The AllReduce calls of a timeline JSON on the job clock, in ns."""
    out = []
    for x in json.load(open(path))["traceEvents"]:
        if x.get("ph") == "X" and x.get("name") == "AllReduce":
            s = round(x["ts"] * 1000)
            out.append((s, s + round(x["dur"] * 1000)))
    return out


def merge(iv):
    """The union of the intervals as sorted, disjoint [start, end] pairs (empty ones dropped)."""
    merged = []
    for s, e in sorted(v for v in iv if v[1] > v[0]):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def union(iv):
    """The union's length."""
    return sum(e - s for s, e in merge(iv))


def lane_clips(lines):
    """The cases in a dump where docs/METRICS.md "Communication time" lets a streaming union
    clip a calling thread's intervals (model/ivlanes.h): a thread whose first AllReduce comes in
    a later chunk than the first chunk that holds any, and a thread whose AllReduce calls come
    back after two or more chunks without one. They happen when the job's threads are starved
    (a loaded machine): the exact figure is then not promised, only its documented bound. Returns
    one line per case (empty: the union must be exact)."""
    chunk, first, seen, out = 0, None, {}, []
    for line in lines:
        if line.startswith("-- chunk "):
            chunk += 1
            continue
        if not line.startswith("CALL op=AllReduce "):
            continue
        t = line.split(" thread=", 1)[1].split(" ", 1)[0]
        if first is None:
            first = chunk
        last = seen.get(t)
        if last is None and chunk > first:
            out.append("thread %s first came in chunk %d, after the first chunk with calls (%d)" % (t, chunk, first))
        elif last is not None and chunk - last > 2:
            out.append("thread %s came back in chunk %d after chunks %d..%d without a call" % (t, chunk, last + 1, chunk - 1))
        seen[t] = chunk
    return out
