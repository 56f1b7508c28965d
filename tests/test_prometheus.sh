#!/usr/bin/env bash
# test_prometheus.sh — the live metrics (NCCLSCOPE_METRICS, docs/METRICS-EXPORT.md) read by the
# real thing: Debian's prometheus-node-exporter (textfile collector only, localhost) scraped by
# prometheus (localhost, 1 s scrape interval, storage in the scratch directory). A 2-rank ddp_job
# writes its metrics; Prometheus' HTTP API must give, per rank and operation, the calls and bytes
# of the job's own truth files, and the GPU-timed calls and bus bytes of those timed call by call.
# A 1-rank overlap_job in DDP's shape: its GPU communication and exposed communication seconds
# equal the job's own truth (the intervals its "GPU" ran). A hang_job with a stopped rank: the waiting rank's in-flight age
# is seen growing through Prometheus while it hangs. `promtool check metrics` on every file,
# `promtool check rules` on contrib/prometheus/ncclscope-rules.yml (loaded by this Prometheus);
# every query of the Grafana dashboard contrib/grafana/ncclscope.json accepted by Prometheus.
# Bounded: each wait has a deadline; everything started here is stopped by its pid.
source "$(dirname "$0")/lib.sh"
JOBS=$BUILD/tests
RULES=$ROOT/contrib/prometheus/ncclscope-rules.yml
NODEEXP=$(command -v prometheus-node-exporter || command -v node_exporter || true)
PROM=$(command -v prometheus || true)
PROMTOOL=$(command -v promtool || true)
if [ -z "$NODEEXP" ] || [ -z "$PROM" ] || [ -z "$PROMTOOL" ] || ! command -v python3 >/dev/null ||
   ! command -v curl >/dev/null || ! command -v jq >/dev/null; then
  skip "prometheus: needs prometheus, promtool, prometheus-node-exporter, python3, curl and jq (apt-get install prometheus prometheus-node-exporter curl jq; scripts/deps.sh --all)"
  exit 0
fi
started=()
stop_all() { for p in "${started[@]}"; do kill "$p" 2>/dev/null; done; for p in "${started[@]}"; do wait "$p" 2>/dev/null; done; }
trap 'stop_all; ncs_cleanup' EXIT

check "prometheus: promtool check rules on the shipped rules" "$PROMTOOL" check rules "$RULES"

# two free localhost ports
read -r P_NODE P_PROM < <(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
M=$T/metrics
mkdir -p "$T/truth"
mkdir -p "$M"

# 1. a job with the metrics on, then its files
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/trace NCCLSCOPE_METRICS=$M NCCLSCOPE_METRICS_MS=200 \
   bash "$ROOT/tests/jobs/launch.sh" 2 "$JOBS/ddp_job" --steps 25 --truth "$T/truth" >/dev/null 2>"$T/job.err")
check_eq "prometheus: ddp_job ran" 0 $?
nfiles=$(ls "$M"/ncclscope-*.prom 2>/dev/null | wc -l)
check_eq "prometheus: one .prom file per process" 2 "$nfiles"
check_eq "prometheus: no temporary left" 0 "$(ls -A "$M" | grep -c '\.tmp$')"
bad=0
for f in "$M"/ncclscope-*.prom; do "$PROMTOOL" check metrics <"$f" >"$T/lint.out" 2>&1 || { bad=1; sed 's/^/    /' "$T/lint.out" | head; }; done
check_eq "prometheus: promtool check metrics passes on every file" 0 "$bad"

# 2. the node exporter (textfile collector only) and Prometheus, on localhost
"$NODEEXP" --web.listen-address=127.0.0.1:$P_NODE --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$M" >"$T/nodeexp.log" 2>&1 &
started+=($!)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$RULES"]
scrape_configs:
  - job_name: ncclscope
    static_configs: [{targets: ["127.0.0.1:$P_NODE"]}]
EOF
"$PROM" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:$P_PROM \
  >"$T/prom.log" 2>&1 &
started+=($!)

# query EXPR -> "labels value" lines, through the HTTP API
query() {
  curl -sf --max-time 5 -G "http://127.0.0.1:$P_PROM/api/v1/query" --data-urlencode "query=$1" |
    jq -r '.data.result[] | ((.metric | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" ")) + " " + .value[1])'
}
# waits until EXPR gives at least N series (30 s at most)
wait_series() {
  local end=$((SECONDS + 30))
  while [ $SECONDS -lt $end ]; do
    [ "$(query "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.5
  done
  return 1
}
check "prometheus: the job's series reach Prometheus through the node exporter" wait_series 'ncclscope_calls_total' 12

# 3. counters equal the job's truth, per rank and operation
query 'sum by (rank, op) (ncclscope_calls_total)' >"$T/calls.txt"
query 'sum by (rank, op) (ncclscope_bytes_total)' >"$T/bytes.txt"
cmp_truth() {
  python3 - "$T" <<'EOF'
import json, re, sys
t = sys.argv[1]
def load(name):
    got = {}
    for line in open("%s/%s" % (t, name)):
        labels, value = line.rsplit(" ", 1)
        kv = dict(x.split("=", 1) for x in labels.split())
        if kv["op"] in data_ops:
            got[(int(kv["rank"]), kv["op"])] = float(value)
    return got
import os
data_ops = {"AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
            "Gather", "Scatter", "Send", "Recv"}
if os.environ.get("GPU_OPS"):  # the GPU-timed figures: only these ops are timed call by call
    data_ops = set(os.environ["GPU_OPS"].split())
    for name in ("calls.txt", "bytes.txt"):  # rows of other ops must be 0
        for line in open("%s/%s" % (t, name)):
            labels, value = line.rsplit(" ", 1)
            op = dict(x.split("=", 1) for x in labels.split())["op"]
            if op not in data_ops and float(value) != 0:
                print("%s %s: %s, want 0 (timed as a group)" % (name, op, value)); sys.exit(1)
calls, nbytes = load("calls.txt"), load("bytes.txt")
want_c, want_b = {}, {}
for r in (0, 1):
    truth = json.load(open("%s/truth/truth-rank%d.json" % (t, r)))
    for op, v in truth["ops"].items():
        if op in data_ops:
            want_c[(r, op)] = float(v["calls"]); want_b[(r, op)] = float(v["bytes"])
bad = 0
for name, got, want in (("calls", calls, want_c), ("bytes", nbytes, want_b)):
    if got != want:
        bad = 1
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                print("%s rank %d %s: prometheus %s, truth %s" % (name, k[0], k[1], got.get(k), want.get(k)))
print("compared %d calls and %d bytes figures" % (len(want_c), len(want_b)))
sys.exit(bad)
EOF
}
check "prometheus: calls and bytes per rank and op equal the job's truth" cmp_truth
# GPU timing: every call outside a group has its GPU time (the doubles' events), so per rank and
# op the GPU-timed calls and their bus bytes are the truth's calls and bytes (2 ranks: the bus
# factor of these ops is 1); Send/Recv run inside ncclGroupStart/End, timed as a group, not a call
query 'sum by (rank, op) (ncclscope_gpu_timed_calls_total)' >"$T/calls.txt"
query 'sum by (rank, op) (ncclscope_gpu_bus_bytes_total)' >"$T/bytes.txt"
GPU_OPS="AllReduce AllGather Broadcast ReduceScatter" check "prometheus: GPU-timed calls and their bus bytes per rank and op equal the job's truth (calls outside groups)" cmp_truth
check_eq "prometheus: GPU seconds of every GPU-timed row above 0" "0" \
  "$(query 'count(ncclscope_gpu_call_seconds_total <= 0 and ncclscope_gpu_timed_calls_total > 0) or vector(0)' | awk '{print $NF}')"
check_eq "prometheus: process_up is 0 for both exited ranks" "2" \
  "$(query 'count(ncclscope_process_up == 0)' | awk '{print $NF}')"
check_eq "prometheus: nothing dropped" "0" "$(query 'sum(ncclscope_dropped_records_total)' | awk '{print $NF}')"
check_eq "prometheus: histogram count = calls" "0" \
  "$(query 'sum(ncclscope_call_duration_seconds_count) - sum(ncclscope_calls_total)' | awk '{print $NF}')"
check_eq "prometheus: the shipped rules loaded in Prometheus (11, NcclHang among them)" "11 1" \
  "$(curl -sf --max-time 5 "http://127.0.0.1:$P_PROM/api/v1/rules" |
     jq -r '[.data.groups[].rules[].name] | "\(length) \(map(select(. == "NcclHang")) | length)"')"

# the shipped dashboard's queries are PromQL Prometheus accepts (its variables as "all")
dash_bad=0; dash_n=0
while IFS= read -r e; do
  e=${e//\$host/.*}; e=${e//\$comm/.*}; e=${e//\$__rate_interval/1m}
  dash_n=$((dash_n + 1))
  st=$(curl -s --max-time 5 -G "http://127.0.0.1:$P_PROM/api/v1/query" --data-urlencode "query=$e" | jq -r .status)
  [ "$st" = success ] || { dash_bad=$((dash_bad + 1)); echo "    rejected: $e"; }
done < <(jq -r '.panels[].targets[].expr' "$ROOT/contrib/grafana/ncclscope.json")
check_eq "prometheus: every query of contrib/grafana/ncclscope.json ($dash_n) is accepted" "0 1" "$dash_bad $((dash_n >= 10))"

# 4. exposed communication: overlap_job in DDP's shape (4 buckets a step, the last one after the
# backward pass) on 1 rank, about 3.5 s: the union of its NCCL kernels and their part with no
# compute beside them, read through Prometheus once it exited, equal the job's own truth (the
# intervals its "GPU" ran, tests/jobs/overlap_job.c) within the trace's kernel resolution
# per kernel edge + 5 us (the clock conversion), as test_overlap.sh holds the decoder; the
# counters never went down (lined up piecewise, a horizon about 2 s old, while it ran)
rm -f "$M"/ncclscope-*.prom
mkdir -p "$T/ov"
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/ov NCCLSCOPE_METRICS=$M NCCLSCOPE_METRICS_MS=200 NCCLDOUBLE_LAT_US=300 \
   bash "$ROOT/tests/jobs/launch.sh" 1 "$JOBS/overlap_job" --mode ddp --steps 700 --truth "$T/ov" >/dev/null 2>"$T/ov.err")
check_eq "prometheus: overlap_job ran" 0 $?
ovpid=$(ls "$M"/ncclscope-*.prom 2>/dev/null | sed -n 's/.*-\([0-9]*\)\.prom$/\1/p' | head -1)
check "prometheus: the overlap job's final file reaches Prometheus" \
  wait_series "ncclscope_process_up{pid=\"$ovpid\"} == 0 and on (host, pid) ncclscope_gpu_exposed_comm_seconds_total > 0" 1
res=$("$NCS" dump "$T"/ov/*.ncs 2>/dev/null | sed -n 's/.*kernel_resolution_ns=\([0-9]*\).*/\1/p' | head -1)
gcomm=$(query "ncclscope_gpu_comm_seconds_total{pid=\"$ovpid\"}" | awk '{print $NF}')
gexp=$(query "ncclscope_gpu_exposed_comm_seconds_total{pid=\"$ovpid\"}" | awk '{print $NF}')
cmp_gpu() { # GOT_S TRUTH_KEY
  python3 - "$T/ov/truth-rank0.json" "$1" "$2" "${res:-1}" <<'PY'
import json, sys
truth = json.load(open(sys.argv[1]))
got, key, res = float(sys.argv[2] or "nan"), sys.argv[3], int(sys.argv[4])
want = truth[key] / 1e9
tol = (2 * res * truth["kernels"] + 5000) / 1e9
print("prometheus %.9f s, truth %.9f s, tolerance %.9f s" % (got, want, tol))
sys.exit(0 if abs(got - want) <= tol else 1)
PY
}
check "prometheus: GPU communication seconds (union of NCCL kernels) = the job's truth ($gcomm s)" cmp_gpu "$gcomm" comm_ns
check "prometheus: exposed communication seconds = the job's truth ($gexp s)" cmp_gpu "$gexp" exposed_ns
check_eq "prometheus: the GPU communication counters never went down" "0" \
  "$(query "sum(resets(ncclscope_gpu_exposed_comm_seconds_total{pid=\"$ovpid\"}[10m]) + resets(ncclscope_gpu_comm_seconds_total{pid=\"$ovpid\"}[10m]))" | awk '{print $NF}')"
mid=$(query "max_over_time((ncclscope_gpu_exposed_comm_seconds_total{pid=\"$ovpid\"} and on (host, pid) ncclscope_process_up == 1)[10m:250ms])" | awk '{print $NF}')
echo "# prometheus: exposed seconds seen while the overlap job ran: ${mid:-none} (of $gexp at its end)"

# 5. a hang: rank 1 stops before step 3; rank 0's collective never finishes. Its in-flight age,
# read through Prometheus while the job hangs, is above 1 s (the job itself is stopped after).
rm -f "$M"/ncclscope-*.prom
(cd "$T" && LD_PRELOAD=$SHIM NCCLSCOPE_DIR=$T/trace-hang NCCLSCOPE_METRICS=$M NCCLSCOPE_METRICS_MS=200 \
   exec bash "$ROOT/tests/jobs/launch.sh" 2 "$JOBS/hang_job" --stop 1:3 >/dev/null 2>&1) &
hang=$!
started+=($hang)
check "prometheus: a hang's in-flight age over 1 s, seen through Prometheus while it hangs" \
  wait_series 'max by (host, pid) (ncclscope_inflight_oldest_seconds) > 1 and on (host, pid) ncclscope_process_up == 1' 1
kill "$hang" 2>/dev/null
wait "$hang" 2>/dev/null
check "prometheus: node exporter read every file without error" bash -c \
  "! grep -qi 'level=error' '$T/nodeexp.log'"
