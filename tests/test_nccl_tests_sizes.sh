#!/usr/bin/env bash
# test_nccl_tests_sizes.sh — the per-size table (`report --sizes`, JSON `sizes`, docs/METRICS.md
# "Per-size table") against NVIDIA's nccl-tests, unmodified, run on the CUDA, NCCL and NVML
# doubles under the shim (scripts/nccl-tests.sh; the build in BUILD/nccl-tests is shared with
# test_nccl_tests.sh). all_reduce_perf, all_gather_perf, reduce_scatter_perf and broadcast_perf
# (and, with two sizes and -n 5, reduce_perf, alltoall_perf and sendrecv_perf) run with -t 2 (two ranks, one thread each: every call outside a group, so each has its own
# GPU time), and all_reduce_perf also with -g 2 (two ranks on one thread: each iteration is a
# group of two like calls, which take the group's GPU time), three doubling sizes, -w 2, -n 10, -I 1 (per-iteration CUDA-event timing) and -J
# (nccl-tests' JSON); all_reduce_perf -g 2 -m 2 -G 10 (CUDA graphs) has its own arithmetic (at
# its run below). For every size nccl-tests printed and each placement the row must hold:
#
#   - the calls nccl-tests' own arithmetic makes (src/common.cu TimeTest / BenchTime): timed =
#     R x (N + 1) (BenchTime's untimed first call starts the steady run), warm-up = R x W
#     out-of-place (R x (W - 1) for the smallest size, whose first warm-up call is each
#     communicator's first call: first = R there), none in place — which also checks the shim's
#     in-place / out-of-place bits, since nccl-tests makes exactly N + 1 calls of each per size;
#   - median within 1% of nccl-tests' per-iteration p50_us (its JSON);
#   - busbw within 1% of the busbw nccl-tests printed, brought to that p50: bus_bw x time / p50
#     (nccl-tests' printed busbw is its S x factor / time; so this checks S and the factor too);
#   - median at most 1% above nccl-tests' printed time column (a wall-clock mean over N calls
#     cannot be shorter than the device's time per call).
# sendrecv_perf: each iteration is a group of one Send and one Recv (src/sendrecv.cu), a
# SendRecv row of S = count x size and busbw factor 1 (its getBw). The trace records no
# placement for Send and Recv, so one row per size (placement unknown) holds both of nccl-tests'
# columns: timed = R x 2 x (N + 1), warm-up and first as the out-of-place row above; its median
# and busbw are checked against each of nccl-tests' two columns.
#
# Why they agree, whatever the machine's load: the NCCL double ends a collective's kernel at the
# latest start of its ranks plus the model time (NCCLDOUBLE_LAT_US: 4 ms here, far above the
# host's cost to enqueue a call), the CUDA double's events and cudaEventElapsedTime follow that
# simulated device clock, and both nccl-tests (-I 1: events between iterations) and the shim
# (GPU_TIME: events around each call) read it. With calls queued ahead, each call's device time
# is the model time, so both medians are it; the few calls that waited for the other rank's
# thread (the first of a run) sit above the median in both. nccl-tests' printed time column is
# a wall-clock mean, which load inflates (a late wake-up from the final synchronize): it is
# checked one way only, and its two-way agreement is printed as a note, not asserted.
#
# SKIP as test_nccl_tests.sh: no nvcc, no nccl-tests source, a sanitizer build, no python3, or
# the one-time build not done in NCS_NCCL_TESTS_BUILD_S (200 s) on a loaded machine.
source "$(dirname "$0")/lib.sh"
SCRIPT=$ROOT/scripts/nccl-tests.sh
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SRC=${NCCL_TESTS_SRC:-$ROOT/../shared/nccl-tests}
# A trace older than format 5.1 has no placement bits: its rows say so (the committed 4.0 job).
if command -v python3 >/dev/null; then
  check_eq "a format 4.0 trace: its per-size rows all have placement unknown" "unknown" \
    "$("$BUILD/ncclscope" report --json "$ROOT/tests/golden/traces/job40" 2>/dev/null |
       python3 -c 'import json,sys; r=json.load(sys.stdin)["sizes"]["rows"]; print(" ".join(sorted({x["placement"] for x in r})) if r else "no rows")')"
fi
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then skip "nccl-tests sizes: nvcc not found at $CUDA_HOME/bin/nvcc"; exit 0; fi
if [ ! -r "$SRC/src/common.cu" ]; then skip "nccl-tests sizes: no nccl-tests source at $SRC (to run it: NCCL_TESTS_SRC=<a checkout of NVIDIA/nccl-tests> make test)"; exit 0; fi
if [ -n "$NCS_SANITIZER" ]; then skip "nccl-tests sizes: not under $NCS_SANITIZER (nccl-tests is built without it)"; exit 0; fi
command -v python3 >/dev/null || { skip "nccl-tests sizes: python3 needed to read the JSON"; exit 0; }
export BUILD NCCL_TESTS_SRC=$SRC

timeout -k 5 "${NCS_NCCL_TESTS_BUILD_S:-200}" bash "$SCRIPT" --build-only all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv \
  >"$T/build.log" 2>&1
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  skip "nccl-tests sizes: the build did not finish in ${NCS_NCCL_TESTS_BUILD_S:-200} s (load); kept in $BUILD/nccl-tests, the next run goes on"
  exit 0
fi
check_eq "nccl-tests builds (all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv)" 0 "$rc"
[ "$rc" = 0 ] || { sed 's/^/    /' "$T/build.log" | tail -20; exit 0; }

# verify.py OP NT_JSON REPORT_JSON R W N LABEL: one "ok|FAIL|note <what>" line per check
cat >"$T/verify.py" <<'EOF'
import json, sys
op, ntf, repf, R, W, N, label = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
nt = json.load(open(ntf))
rows = [r for r in json.load(open(repf))["sizes"]["rows"] if r["op"] == op]
res = nt["results"]
smallest = min(r["size"] for r in res)
def near(a, b): return b > 0 and abs(a - b) <= 0.01 * b
# SendRecv: the trace has no placement for Send and Recv, so one row per size pools nccl-tests'
# out-of-place and in-place calls: timed R x 2 x (N + 1), each placement's columns checked on it
pooled = op == "SendRecv"
if pooled:
    print("%s %s: %d rows, one (placement unknown) for each of nccl-tests' %d sizes" %
          ("ok" if len(rows) == len(res) and all(r["placement"] == "unknown" for r in rows) else "FAIL", label, len(rows), len(res)))
else:
    print("%s %s: %d rows, both placements of each of nccl-tests' %d sizes, none of unknown placement" %
          ("ok" if len(rows) == 2 * len(res) and all(r["placement"] != "unknown" for r in rows) else "FAIL", label, len(rows), len(res)))
worst = 0.0
for t in res:
    size = t["size"]
    for pl, key in (("out-of-place", "out_of_place"), ("in-place", "in_place")):
        m = [r for r in rows if r["bytes"] == size and r["placement"] == ("unknown" if pooled else pl)]
        name = "%s %d B %s" % (label, size, pl)
        if len(m) != 1:
            print("FAIL %s: %d rows in the table" % (name, len(m)))
            continue
        r, printed, it = m[0], t[key], t[key + "_per_iter"]
        oop = pl == "out-of-place" or pooled
        want = ((2 if pooled else 1) * R * (N + 1), R * (W - 1 if size == smallest else W) if oop else 0,
                R if size == smallest and oop else 0)
        got = (r["timed"], r["warmup"], r["first"])
        if not pooled or pl == "out-of-place":
            print("%s %s: timed, warm-up, first = %s (nccl-tests' arithmetic) got %s, %s-timed" %
                  ("ok" if got == want and r["timing"] == "gpu" else "FAIL", name, want, got, r["timing"]))
        p50 = it["p50_us"]
        print("%s %s: median %.3f us within 1%% of nccl-tests' p50 %.3f us" %
              ("ok" if r["median_us"] is not None and near(r["median_us"], p50) else "FAIL", name, r["median_us"] or 0, p50))
        bus = printed["bus_bw"] * printed["time"] / p50
        print("%s %s: busbw %.6f GB/s within 1%% of nccl-tests' %.6f at its time %.2f us, brought to its p50 (%.6f)" %
              ("ok" if r["busbw_gbps"] is not None and near(r["busbw_gbps"], bus) else "FAIL", name,
               r["busbw_gbps"] or 0, printed["bus_bw"], printed["time"], bus))
        print("%s %s: median no more than 1%% above nccl-tests' printed (wall-clock mean) time %.2f us" %
              ("ok" if r["median_us"] is not None and r["median_us"] <= 1.01 * printed["time"] else "FAIL", name, printed["time"]))
        worst = max(worst, abs(printed["time"] - (r["median_us"] or 0)) / printed["time"])
print("note %s: nccl-tests' wall-clock time column is at most %.2f%% from the medians on this run (load-dependent, not asserted)" % (label, 100 * worst))
EOF

NCS=$BUILD/ncclscope
R=2 W=2
# PROGRAM:OP:HOW:LAST_SIZE:N — HOW: -t 2 (a thread per rank) or -g 2 (a group per iteration)
for run in all_reduce:AllReduce:-t:256K:10 all_gather:AllGather:-t:256K:10 reduce_scatter:ReduceScatter:-t:256K:10 \
           broadcast:Broadcast:-t:256K:10 all_reduce:AllReduce:-g:256K:10 reduce:Reduce:-t:128K:5 alltoall:AlltoAll:-t:128K:5 \
           sendrecv:SendRecv:-t:128K:5; do
  IFS=: read -r prog op how e N <<<"$run"
  bin=${prog}_perf out=$T/$prog$how L="$op $how $R" f=$T/$op$how
  NCCLDOUBLE_LAT_US=4000 NCCLDOUBLE_BW_GBPS=20 bash "$SCRIPT" "$out" -- "$bin" -b 64K -e "$e" -f 2 "$how" $R -w $W -n $N \
    -I 1 -J "$out/nt.json" >"$f.stdout" 2>"$f.stderr"
  rc=$?
  check_eq "$L: nccl-tests exits 0" 0 "$rc"
  [ "$rc" = 0 ] || { sed 's/^/    /' "$f.stderr" | tail -20; continue; }
  if ! "$NCS" report --json "$out" >"$f.report.json" 2>"$f.report.err"; then
    fail "$L: report --json"; sed 's/^/    /' "$f.report.err" | head; continue
  fi
  python3 "$T/verify.py" "$op" "$out/nt.json" "$f.report.json" $R $W $N "$L" >"$f.checks" 2>&1 ||
    { fail "$L: verify.py"; sed 's/^/    /' "$f.checks" | tail; continue; }
  while IFS= read -r line; do
    case $line in ok\ *) pass "${line#ok }" ;; note\ *) echo "note: ${line#note }" ;; *) fail "${line#FAIL }" ;; esac
  done <"$f.checks"
  # the text table shows the same rows
  "$NCS" report --sizes "$op" "$out" >"$f.txt" 2>&1
  if [ "$op" = SendRecv ]; then pl=unknown k=1; else pl='(out-of-place|in-place)' k=2; fi
  rows=$(python3 -c 'import json,sys; print(int(sys.argv[2]) * len(json.load(open(sys.argv[1]))["results"]))' "$out/nt.json" $k)
  check_eq "$L: report --sizes $op prints its $rows rows (nccl-tests' sizes x $k placements), and no other op's" "$rows 0" \
    "$(grep -cE "^  $op +$R float32 .* $pl " "$f.txt") $(awk '/^Per size:/ { on = 1; next } on && /^  [A-Z]/ && $1 != "op" && $1 != "'"$op"'"' "$f.txt" | wc -l)"
done

# -G (CUDA-graph mode, src/common.cu BenchTime): per size and placement nccl-tests makes one
# uncaptured call (the sync), captures its N timed iterations of M aggregated calls (-m: one
# group of M calls per iteration) and launches the graph G times; its time column is the wall
# time of the G launches over N x M x G. The per-size table counts each captured call as its
# replays (each timed on its kernel's device interval, a kernel running the M calls of an
# iteration giving each its share), so on a communicator the sync and the captured calls make
# one run of 1 + N x M x G calls, longer than the W warm-up calls: timed = R x (1 + N x M x G)
# (replayed R x N x M x G of them), warm-up R x W out-of-place (R x (W - 1) and first R for the
# smallest size), none in place; captured_calls = R x sizes x 2 x N x M, replayed_calls G times
# that. Checked exactly on every run, with busbw x median = nccl-tests' busbw x time (S x
# factor) and the median no more than 1% above its time (a wall-clock mean cannot be shorter
# than the device's time per call).
# nccl-tests cannot time iterations under -G (it turns -I off): its printed time is a wall-clock
# mean, which the host's late wake-ups inflate. -g 2 (one thread: no wait for another thread's
# launch) and 1 s of device time per BenchTime (N x M x G = 100 calls of 10 ms) keep that under
# 1% on a loaded machine (0.4-0.75% at load 27), not always (a 30 ms stall at load 33 was 1.5%):
# so the two-way comparisons with its wall-clock columns (busbw within 1%, the replays' time)
# are printed as figures (note lines), not asserted: under load they measure the host.
G=10 NG=5 M=2
L="AllReduce -g $R -m $M -G $G"
cat >"$T/verifyG.py" <<'EOF'
import json, sys
ntf, repf, label = sys.argv[1], sys.argv[2], sys.argv[8]
R, W, N, M, G = (int(x) for x in sys.argv[3:8])
res = json.load(open(ntf))["results"]
full = json.load(open(repf))
rep = full["sizes"]
rows = [r for r in rep["rows"] if r["op"] == "AllReduce"]
smallest = min(t["size"] for t in res)
want_cap = R * len(res) * 2 * N * M
def near(a, b): return a is not None and b > 0 and abs(a - b) <= 0.01 * b
print("%s %s: captured_calls %d = R x sizes x 2 x N x M = %d, replayed_calls %d = that x G = %d" %
      ("ok" if (rep["captured_calls"], rep["replayed_calls"]) == (want_cap, want_cap * G) else "FAIL", label,
       rep["captured_calls"], want_cap, rep["replayed_calls"], want_cap * G))
# the per-rank replay time (graph_replays.time_s: each replayed call its share of its kernel,
# M calls to a kernel): N x M x G calls per size, placement and rank at nccl-tests' time per call
rt = sum((r.get("graph_replays") or {}).get("time_s") or 0 for r in full["ranks"])
want_rt = sum(R * N * M * G * t[k]["time"] * 1e-6 for t in res for k in ("out_of_place", "in_place"))
print("note %s: replayed calls' time %.4f s against R x N x M x G x nccl-tests' wall-clock time per call, summed: %.4f s" %
      (label, rt, want_rt))
worst = 0.0
for t in res:
    for pl, key in (("out-of-place", "out_of_place"), ("in-place", "in_place")):
        m = [r for r in rows if r["bytes"] == t["size"] and r["placement"] == pl]
        name = "%s %d B %s" % (label, t["size"], pl)
        if len(m) != 1:
            print("FAIL %s: %d rows in the table" % (name, len(m))); continue
        r, printed = m[0], t[key]
        oop, small = pl == "out-of-place", t["size"] == smallest
        want = (R * (1 + N * M * G), R * N * M * G, (R * (W - 1) if small else R * W) if oop else 0, R if oop and small else 0)
        got = (r["timed"], r["replayed"], r["warmup"], r["first"])
        print("%s %s: timed, replayed, warm-up, first = %s (nccl-tests' arithmetic) got %s, %s-timed" %
              ("ok" if got == want and r["timing"] == "gpu" else "FAIL", name, want, got, r["timing"]))
        sf, ntsf = (r["busbw_gbps"] or 0) * (r["median_us"] or 0), printed["bus_bw"] * printed["time"]
        print("%s %s: busbw x median %.3f = nccl-tests' busbw x time %.3f (S x factor, within 1%%)" %
              ("ok" if near(sf, ntsf) else "FAIL", name, sf, ntsf))
        print("%s %s: median %.2f us no more than 1%% above nccl-tests' printed time %.2f us" %
              ("ok" if r["median_us"] is not None and r["median_us"] <= 1.01 * printed["time"] else "FAIL", name,
               r["median_us"] or 0, printed["time"]))
        worst = max(worst, abs((r["busbw_gbps"] or 0) - printed["bus_bw"]) / printed["bus_bw"])
print("note %s: busbw at most %.2f%% from nccl-tests' printed (wall-clock) busbw on this run" % (label, 100 * worst))
EOF
out=$T/all_reduce-G
NCCLDOUBLE_LAT_US=10000 NCCLDOUBLE_BW_GBPS=20 bash "$SCRIPT" "$out" -- all_reduce_perf -b 64K -e 128K -f 2 -g $R -w $W -n $NG \
  -m $M -G $G -J "$out/nt.json" >"$T/G.stdout" 2>"$T/G.stderr"
rc=$?
ok=0
if [ "$rc" = 0 ] && "$NCS" report --json "$out" >"$T/G.json" 2>"$T/G.err" &&
   python3 "$T/verifyG.py" "$out/nt.json" "$T/G.json" $R $W $NG $M $G "$L" >"$T/G.checks" 2>&1; then
  ok=1
fi
check_eq "$L: nccl-tests exits 0" 0 "$rc"
if [ "$ok" = 1 ]; then
  while IFS= read -r line; do
    case $line in ok\ *) pass "${line#ok }" ;; note\ *) echo "note: ${line#note }" ;; *) fail "${line#FAIL }" ;; esac
  done <"$T/G.checks"
  "$NCS" report --sizes AllReduce "$out" >"$T/G.txt" 2>&1
  check_eq "$L: the text table says which timed calls are replays, and what the captured calls count as" \
    "4 1" "$(grep -cE "^  AllReduce .* gpu \($((R * NG * M * G)) of them graph replays\)$" "$T/G.txt") $(grep -c "^  captured into CUDA graphs: $((R * 2 * 2 * NG * M)) calls, counted as their $((R * 2 * 2 * NG * M * G)) replays" "$T/G.txt")"
else
  [ "$rc" = 0 ] && { fail "$L: report --json or its checks"; sed 's/^/    /' "$T/G.err" "$T/G.checks" 2>/dev/null | tail -10; }
  sed 's/^/    /' "$T/G.stderr" | tail -10
fi
"$NCS" report --sizes Bogus "$T/all_reduce-t" >"$T/bogus.out" 2>&1
check_eq "report --sizes Bogus: refused as bad usage (exit 2)" 2 "$?"
check "... saying what it takes" grep -q "takes 'all' or a collective's name" "$T/bogus.out"
