#!/usr/bin/env bash
# bench-scale.sh [BUILD] — decode time and peak memory of the whole-job view at scale.
# For each rank count in SIZES (default "8 128 1024") it writes CALLS (default 100000)
# collectives per rank with `ncclscope synth` into BENCH_DIR (default a fresh
# $TMPDIR/ncs-bench-scale.XXXXXX of this run's own, so that two runs on one machine never share
# or delete each other's traces; emptied after each size and removed at the end), then times,
# side by side on the same files:
#   html   — `ncclscope html --no-doctor`, i.e. decoder/io/jobload.c: files decoded in parallel
#            (one thread per CPU), clock alignment, per-op statistics and the cross-rank
#            straggler analysis (the doctor's own second pass is left out);
#            The loader picks lockstep or whole-file reading, whichever keeps less (jobload.h);
#   html1  — the same with NCCLSCOPE_THREADS=1 (the parallel speed-up is html1 / html);
#   lock   — html with NCCLSCOPE_LOCKSTEP=1: files advanced a chunk at a time in lockstep
#            (memory bounded by ranks x chunk size, flat in trace length);
#   whole  — html with NCCLSCOPE_LOCKSTEP=0: each file read to its end before the next
#            (the straggler window grows with trace length);
#   report — `ncclscope report --json`: the report core reading files one after another,
#            with every analysis (metrics, stragglers) attached.
# Peak memory is the maximum resident set size (/usr/bin/time). The last line projects the
# largest size to 16384 ranks (time and per-rank memory scale with ranks; see BENCHMARKS.md).
#
# bench-scale.sh BUILD job — issue 27's figures instead: one job of JOB_RANKS (default 4096)
# ranks x JOB_CALLS (default 10000) collectives with every injected cause at once (rank R/64*61
# never enters the last collective, a straggler, a slow host, a desync; scripts/gen-traces.sh),
# then `report`, `doctor`, `html` and `timeline` (its default: the culprit ranks past 64) each
# RUNS times (default 3), one after another: wall s, CPU s (user + sys), peak RSS MiB, as
# min / median / max, with the load average before each command. Goal (issue 27): each under
# 30 s and 2 GiB on 2 cores.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
NCS=$BUILD/ncclscope
SIZES=${SIZES:-"8 128 1024"}
CALLS=${CALLS:-100000}
CHUNK=${CHUNK:-8192}   # calls per chunk (the real shim cuts a chunk every 500 ms)
DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ncs-bench-scale.XXXXXX")}
trap 'rm -rf "$DIR"' EXIT
[ -x "$NCS" ] || { echo "bench-scale: build first ($NCS missing)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-scale: needs /usr/bin/time (Debian package 'time')" >&2; exit 2; }
if [ "${2:-}" = job ]; then
  R=${JOB_RANKS:-4096}; C=${JOB_CALLS:-10000}; RUNS=${RUNS:-3}
  rm -rf "$DIR"; mkdir -p "$DIR"
  echo "# ncclscope bench-scale job: $R ranks x $C calls, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  t0=$(date +%s.%N)
  BUILD=$BUILD "$ROOT/scripts/gen-traces.sh" "$DIR/t" "$R" "$C" --missing $((R * 61 / 64)):"$C" \
    --straggler $((R * 19 / 64)):300:0.5 --slow-host $((R / 8 * 3 / 8)):500 --mismatch $((R * 31 / 64)):$((C / 4 + 2)) >/dev/null
  echo "# generated in $(echo "$(date +%s.%N) - $t0" | bc) s: $(du -sm "$DIR/t" | cut -f1) MB of traces"
  stats() { sort -n | awk '{v[NR]=$1} END {printf "%.2f / %.2f / %.2f", v[1], v[int((NR+1)/2)], v[NR]}'; }
  printf '%-9s | %-24s | %-24s | %-24s | %s\n' command "wall s min/med/max" "CPU s min/med/max" "peak MiB min/med/max" "load average before each run"
  for cmd in report doctor html timeline; do
    : >"$DIR/w"; : >"$DIR/c"; : >"$DIR/m"; loads=""
    for i in $(seq "$RUNS"); do
      loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
      case $cmd in
        html) set -- html "$DIR/t" -o "$DIR/o.html" ;;
        timeline) set -- timeline "$DIR/t" -o "$DIR/o.json.gz" ;;
        *) set -- "$cmd" "$DIR/t" ;;
      esac
      /usr/bin/time -f '%e %U %S %M' -o "$DIR/one" "$NCS" "$@" >"$DIR/out" 2>"$DIR/err" || true
      read -r e u sy m < <(tail -1 "$DIR/one") # "Command exited with non-zero status" comes first
      echo "$e" >>"$DIR/w"; echo "$u + $sy" | bc >>"$DIR/c"; echo $((m / 1024)) >>"$DIR/m"
    done
    printf '%-9s | %-24s | %-24s | %-24s |%s\n' "$cmd" "$(stats <"$DIR/w")" "$(stats <"$DIR/c")" "$(stats <"$DIR/m")" "$loads"
  done
  rm -rf "$DIR"
  exit 0
fi
echo "# ncclscope bench-scale: $(nproc) CPUs, CALLS=$CALLS per rank, CHUNK=$CHUNK calls, $(date -u +%Y-%m-%dT%H:%MZ), load average at start: $(cut -d' ' -f1 /proc/loadavg)"
printf '%6s %9s %11s %8s %7s | %8s %8s %10s %8s | %7s %7s | %7s %8s | %8s %8s %10s\n' ranks calls/rank total_calls trace_MB gen_s \
  html_s html_MB Mcalls/s html1_s lock_s lock_MB whole_s whole_MB report_s rep_MB Mcalls/s
last=""
for n in $SIZES; do
  rm -rf "$DIR"; mkdir -p "$DIR"
  hosts=$(( n >= 8 ? n / 8 : 1 ))
  t0=$(date +%s.%N)
  "$NCS" synth -o "$DIR/t" --ranks "$n" --hosts "$hosts" --calls "$CALLS" --threads "$(nproc)" \
    --straggler 3:50:0.1 --chunk-calls "$CHUNK" >/dev/null
  gen=$(echo "$(date +%s.%N) - $t0" | bc)
  mb=$(du -sm "$DIR/t" | cut -f1)
  /usr/bin/time -f '%e %M' -o "$DIR/h.time" "$NCS" html --no-doctor "$DIR/t" -o "$DIR/r.html" >/dev/null 2>&1
  NCCLSCOPE_THREADS=1 /usr/bin/time -f '%e %M' -o "$DIR/h1.time" "$NCS" html --no-doctor "$DIR/t" -o "$DIR/r.html" >/dev/null 2>&1
  NCCLSCOPE_LOCKSTEP=1 /usr/bin/time -f '%e %M' -o "$DIR/hl.time" "$NCS" html --no-doctor "$DIR/t" -o "$DIR/r.html" >/dev/null 2>&1
  NCCLSCOPE_LOCKSTEP=0 /usr/bin/time -f '%e %M' -o "$DIR/hw.time" "$NCS" html --no-doctor "$DIR/t" -o "$DIR/r.html" >/dev/null 2>&1
  /usr/bin/time -f '%e %M' -o "$DIR/r.time" "$NCS" report --json "$DIR/t" >"$DIR/r.json" 2>/dev/null || true
  read -r hs hk <"$DIR/h.time"; read -r h1s h1k <"$DIR/h1.time"; read -r rs rk <"$DIR/r.time"
  read -r hls hlk <"$DIR/hl.time"; read -r hws hwk <"$DIR/hw.time"
  total=$(( n * CALLS ))
  complete=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"]["complete"])' "$DIR/r.json" 2>/dev/null || echo "?")
  printf '%6d %9d %11d %8d %7.1f | %8.2f %8.0f %10.1f %8.2f | %7.2f %7.0f | %7.2f %8.0f | %8.2f %8.0f %10.1f   (collectives lined up: %s)\n' \
    "$n" "$CALLS" "$total" "$mb" "$gen" "$hs" "$((hk / 1024))" "$(echo "$total / $hs / 1000000" | bc -l)" "$h1s" \
    "$hls" "$((hlk / 1024))" "$hws" "$((hwk / 1024))" \
    "$rs" "$((rk / 1024))" "$(echo "$total / $rs / 1000000" | bc -l)" "$complete"
  last="$n $hs $hk $rs $rk $mb"
  rm -rf "$DIR"
done
set -- $last
if [ $# -eq 6 ]; then
  f=$(echo "16384 / $1" | bc -l)
  [ "$(echo "$2 > 0" | bc)" = 1 ] || exit 0
  printf 'projection to 16384 ranks x %d calls (x%.0f the %d-rank run): trace %.0f GB; html %.0f s on %d CPUs; report %.0f s; memory: see BENCHMARKS.md\n' \
    "$CALLS" "$f" "$1" "$(echo "$6 * $f / 1024" | bc -l)" "$(echo "$2 * $f" | bc -l)" "$(nproc)" "$(echo "$4 * $f" | bc -l)"
fi
