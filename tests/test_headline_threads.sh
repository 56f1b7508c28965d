#!/usr/bin/env bash
# test_headline_threads.sh — ranks sharing a process (issue 26 item 1): a process holding 2 to 8
# ranks on threads, their calls interleaved in its trace: a rank per thread (ncclCommInitRank in
# each thread) in one process and in 2 processes of 3, and ncclCommInitAll. Against the job's own
# truth (tests/jobs/threads_job.c --truth "measured": every collective bracketed by the job's CUDA
# events on its stream, their union over all threads, and its window): the process's
# communication time never above the job's union and its window never above the job's, so the
# share is never above 100 %; and one figure everywhere: the headline's share equals the per-rank
# table's (the process's union, docs/METRICS.md), doctor's, html's and compare's; the one
# compute/comm ratio equals the rank's and its GPU-time figure; the profiler section counts each
# rank of the process. The bound is checked where every thread is on one GPU (NCCLDOUBLE_NGPUS=1,
# per-thread InitRank): the shim places one device's GPU times with one anchor, so it is exact up
# to the GPU_TIME resolution (256 ns an edge). ncclCommInitAll refuses a GPU twice (as NCCL does),
# so its threads are on GPUs of their own, each placed with its own anchor (off by up to its
# record-to-sync bracket): there only the figures' agreement is checked. Exact relations only,
# never a timing.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/threads_job
[ -f "$SHIM" ] && [ -x "$NCS" ] || { fail "headline threads: shim or decoder missing"; exit 1; }
[ -x "$J" ] || { skip "headline threads: $J not built"; exit 0; }
command -v jq >/dev/null || { skip "headline threads: jq not installed"; exit 0; }
export NCCL_DEBUG=
cd "$T"

# same NAME DIR: report's headline share (median process), report's per-rank share at that
# median, doctor's, html's and compare's, in whole percent; and the ratio in the headline and
# at the median rank, with its basis
same() {
  local name=$1 dir=$2
  "$NCS" report --json "$dir" >"$name.json" 2>/dev/null
  local rep med doc htm cmp
  rep=$(jq -r '.headline.comm_share * 100 | round' "$name.json")
  med=$(jq -r '[.ranks[].comm_share | select(. != null)] | sort | .[((length - 1) / 2 | floor)] * 100 | round' "$name.json")
  doc=$("$NCS" doctor "$dir" 2>/dev/null | sed -n 's/^  communication: \([0-9]*\)% of the median.*/\1/p')
  "$NCS" html "$dir" -o "$name.html" 2>/dev/null
  htm=$(sed -n 's/.*<b>\([0-9]*\)%<\/b> of the median rank.*/\1/p' "$name.html")
  cmp=$("$NCS" compare --json "$dir" "$dir" 2>/dev/null | jq -r '.comm_share.new_pct | round')
  check_eq "headline threads: $name: one communication share in report's headline and table, doctor, html, compare" \
    "$rep $rep $rep $rep $rep" "$rep $med $doc $htm $cmp"
  # each process's window against its file's own records, read with `ncclscope dump`: the
  # earliest entry or GPU start to the latest exit or GPU end, every call in whatever order
  # the file holds them (a rank per thread: each thread's calls come in chunks, not in entry
  # order; a call entering before the file's first CALL record was once left out)
  local wbad="" f pid want got
  for f in "$dir"/*.ncs; do
    pid=${f##*-}; pid=${pid%.ncs}
    want=$("$NCS" dump "$f" 2>/dev/null | awk '
      /^CALL / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                 s = v["t_enter"]; e = v["t_enter"] + v["duration"] }
      /^GPU_TIME / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                 s = v["gpu_start"]; e = v["gpu_end"] }
      /^(CALL|GPU_TIME) / { if (lo == "" || s < lo) lo = s; if (e > hi) hi = e }
      END { printf "%d", hi - lo }')
    got=$(jq -r --argjson p "$pid" '.ranks[] | select(.pid == $p) | .wall_s * 1e9 | round' "$name.json")
    [ "$want" = "$got" ] || wbad="$wbad pid $pid: report $got ns, records $want ns;"
  done
  check_eq "headline threads: $name: each process's window = its records' span (every call, any file order)" "" "$wbad"
  check_eq "headline threads: $name: no share above 100 %" 0 \
    "$(jq '[.ranks[].comm_share | select(. != null and . > 1)] + [.headline.comm_share_max | select(. > 1)] | length' "$name.json")"
  # the one ratio: the headline's is the median-share process's, its GPU-time figure (kernel activity)
  check_eq "headline threads: $name: one compute/comm ratio (headline = the median rank's = its GPU-time figure, on GPU time)" \
    "true gpu_time" \
    "$(jq -r '. as $r | [.ranks[] | select(.comm_share != null)] | sort_by(.comm_share) | .[((length - 1) / 2 | floor)] as $m
              | $r | "\((.headline.compute_to_comm - $m.compute_to_comm | fabs) < 1e-9 and ($m.compute_to_comm - $m.gpu_time.compute_to_comm | fabs) < 1e-9) \(.headline.compute_to_comm_basis)"' "$name.json" 2>/dev/null)"
}

# against NAME TRUTH...: each process's comm_s and wall_s against its truth file (by pid)
against() {
  local name=$1; shift
  local bad=0 line="" f pid calls mcomm mwall comm wall
  for f in "$@"; do
    read -r pid calls mcomm mwall < <(jq -r '"\(.pid) \(.measured.calls) \(.measured.comm_ns) \(.measured.wall_ns)"' "$f")
    read -r comm wall < <(jq -r --argjson p "$pid" '.ranks[] | select(.pid == $p) | "\(.comm_s) \(.wall_s)"' "$name.json")
    line="$line pid $pid: comm $comm s of the job's $(awk -v m="$mcomm" 'BEGIN{printf "%.6f", m / 1e9}') s, window $wall s of $(awk -v m="$mwall" 'BEGIN{printf "%.6f", m / 1e9}') s;"
    awk -v c="$comm" -v w="$wall" -v mc="$mcomm" -v mw="$mwall" -v n="$calls" \
      'BEGIN { exit !(c != "" && c * 1e9 <= mc + 2 * 256 * n && w * 1e9 <= mw) }' || bad=$((bad + 1))
  done
  echo "    $name:$line"
  check_eq "headline threads: $name: each process's communication time within the job's own union of brackets, its window within the job's" 0 "$bad"
}

# one process, a rank per thread (ncclCommInitRank in each), every thread on GPU 0
for t in 2 3 5 8; do
  NCCLDOUBLE_NGPUS=1 NCCLSCOPE_DIR="$T/one$t" LD_PRELOAD="$SHIM$SAN_PRELOAD" bash "$ROOT/tests/jobs/launch.sh" 1 "$J" -t "$t" -n 60 --procs --truth "$T/one$t.truth" >/dev/null 2>"one$t.err"
  check_eq "headline threads: $t ranks on threads of one process (InitRank per thread) run" 0 "$?"
  same "one$t" "$T/one$t"
  against "one$t" "$T/one$t.truth.0"
  check_eq "headline threads: one$t: the headline counts $t ranks in 1 process" "$t 1" \
    "$(jq -r '"\(.headline.ranks) \(.headline.rank_processes)"' "one$t.json")"
  check_eq "headline threads: one$t: the profiler section counts every rank of the process" "$t $t $t" \
    "$(jq -r '[.profile.ops[] | select(.func == "AllReduce" or .func == "Broadcast" or .func == "AllGather") | .ranks] | map(tostring) | join(" ")' "one$t.json")"
done

# ncclCommInitAll: 4 ranks on 4 threads, a GPU each
NCCLSCOPE_DIR="$T/all4" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$J" -t 4 -n 60 --all --truth "$T/all4.truth" >/dev/null 2>all4.err
check_eq "headline threads: 4 ranks on threads of one process (ncclCommInitAll) run" 0 "$?"
same all4 "$T/all4"
check_eq "headline threads: all4: the headline counts 4 ranks in 1 process" "4 1" \
  "$(jq -r '"\(.headline.ranks) \(.headline.rank_processes)"' all4.json)"

# 2 processes x 3 threads: a rank per thread, 6 ranks of one communicator, each process on GPU 0
NCCLDOUBLE_NGPUS=1 NCCLSCOPE_DIR="$T/procs" LD_PRELOAD="$SHIM$SAN_PRELOAD" bash "$ROOT/tests/jobs/launch.sh" 2 "$J" -t 3 -n 60 --procs --truth "$T/procs.truth" >/dev/null 2>procs.err
check_eq "headline threads: 2 processes x 3 ranks on threads run" 0 "$?"
same procs "$T/procs"
against procs "$T/procs.truth.0" "$T/procs.truth.1"
check_eq "headline threads: procs: the headline counts 6 ranks in 2 processes" "6 2" \
  "$(jq -r '"\(.headline.ranks) \(.headline.rank_processes)"' procs.json)"
