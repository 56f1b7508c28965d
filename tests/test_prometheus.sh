#!/usr/bin/env bash
# test_prometheus.sh — the live metrics (NCCLSCOPE_METRICS, docs/METRICS-EXPORT.md) read by the
# real thing: Debian's prometheus-node-exporter (textfile collector only, localhost) scraped by
# prometheus (localhost, 1 s scrape interval, storage in the scratch directory). A 2-rank ddp_job
# writes its metrics; Prometheus' HTTP API must give, per rank and operation, the calls and bytes
# of the job's own truth files. A hang_job with a stopped rank: the waiting rank's in-flight age
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
trap 'stop_all; rm -rf "$T"' EXIT

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
        got[(int(kv["rank"]), kv["op"])] = float(value)
    return got
calls, nbytes = load("calls.txt"), load("bytes.txt")
data_ops = {"AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
            "Gather", "Scatter", "Send", "Recv"}
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
check_eq "prometheus: process_up is 0 for both exited ranks" "2" \
  "$(query 'count(ncclscope_process_up == 0)' | awk '{print $NF}')"
check_eq "prometheus: nothing dropped" "0" "$(query 'sum(ncclscope_dropped_records_total)' | awk '{print $NF}')"
check_eq "prometheus: histogram count = calls" "0" \
  "$(query 'sum(ncclscope_call_duration_seconds_count) - sum(ncclscope_calls_total)' | awk '{print $NF}')"
check_eq "prometheus: the shipped rules loaded in Prometheus (10, NcclHang among them)" "10 1" \
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

# 4. a hang: rank 1 stops before step 3; rank 0's collective never finishes. Its in-flight age,
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
