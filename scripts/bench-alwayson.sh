#!/usr/bin/env bash
# bench-alwayson.sh [BUILD] [ROUNDS] [STEPS] [CALLS] — the cost of leaving ncclscope on (issue 29
# item 6), side by side in one run, arms interleaved in every round (ROUNDS, default 5):
#   plain     no shim
#   shim      the shim, defaults (unbounded trace)
#   alwayson  the shim with NCCLSCOPE_KEEP=30m,2G and NCCLSCOPE_METRICS (rewritten every 100 ms,
#             the setting's floor: the most the exporter can cost)
#   nokact    alwayson with NCCLSCOPE_KERNELS=0 (part 1 only): GPU timing, no kernel activity
#   nogpu     alwayson with NCCLSCOPE_GPU_TIMING=0 (part 1 only): no CUDA event, no kernel
#             activity; nokact minus nogpu is what GPU timing costs, alwayson minus nokact
#             what kernel activity costs (the double's CUPTI and the shim's KERNEL records)
# 1. Step time of a DDP-shaped job (tests/jobs/ddp_job.c, 2 ranks, STEPS steps of BENCH_COMPUTE_US
#    of compute, default 2000: the job's default, about 11 collectives a step, a step far shorter than
#    a real model's, so the shim's share is at its largest; STEPS default 200, --measure), in two shapes: "sync", the host waits for each step before
#    queueing the next (every microsecond the shim adds on the host is in the step), and
#    "ahead", the host queues up to 4 steps ahead of the GPU (--ahead 4, as a training loop
#    does), where the GPU's schedule is the double's model alone unless the host falls behind.
#    Figures: the host step time (the job's wall time from the start of step 0 to the end of
#    the last, over the steps; the slower rank's) and the step time on the CUDA double's
#    simulated device clock (truth "device_step_ns"). Beside them, for the shim arms: calls the
#    trace holds against the job's own count (whole-run calls for the bounded trace) and the
#    records the shim says it dropped. And the CPU time per step (user + system, both ranks and
#    every thread: the double's, the shim's writer): the load lengthens wall times far more
#    than CPU times, so the CPU the shim adds per step, over the step time, bounds what it can
#    add to a step even where the wall-clock spread hides it.
# 2. Per-call cost: tests/jobs/rate_job, a tight loop of CALLS 8-float all-reduces (default
#    300000) on the NCCL double, GPU timing off (on the double, the CUDA event pool's drops make
#    the GPU-timed path's cost depend on how far the simulated device lags): the calling
#    thread's CPU per call (the hot path), the process's (the writer's work included), and the
#    AllReduce calls the trace lost (the job's count minus the trace's whole-run count).
# 3. The CUDA double's share (tests/jobs/event_cost, no shim): what the CUDA calls the shim makes
#    around one timed NCCL call (cudaStreamIsCapturing, two cudaEventRecord, one cudaEventQuery)
#    cost on the double by themselves, on the calling thread and in the process, per call; set
#    beside what GPU timing adds per call in part 1's sync shape (nokact minus nogpu, host step
#    time over the calls a rank makes a step, and CPU over every call): the rest is the shim's own
#    (event pool, polling, GPU_TIME records); and what kernel activity adds (alwayson minus nokact). A real driver records an event in
#    about 1-2 us; the double takes a lock, a getpid system call, an allocation and a wake-up of
#    its stream thread for each.
# Prints min / median / max per arm and each median against plain (part 1) or shim (part 2),
# with the load average: on a shared machine the spread is the load's.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${2:-5}
STEPS=${3:-200}
CALLS=${4:-300000}
COMPUTE_US=${BENCH_COMPUTE_US:-2000}
SHIM=$BUILD/libncclscope.so JOB=$BUILD/tests/ddp_job RATE=$BUILD/tests/rate_job NCS=$BUILD/ncclscope EVC=$BUILD/tests/event_cost
for f in "$SHIM" "$JOB" "$RATE" "$NCS" "$EVC"; do [ -e "$f" ] || { echo "build first: make BUILD=$BUILD" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "bench-alwayson: needs jq" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-alwayson.XXXXXX")
trap 'rm -rf "$W"' EXIT
ARMS="plain shim alwayson"
ARMS1="$ARMS nokact nogpu"
echo "always-on cost: $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS interleaved rounds"

# the shim's environment for ARM in directory D (none for plain)
arm_env() {
  case $1 in
    plain) echo "NCS_PLAIN=1" ;;
    shim) echo "NCCLSCOPE_DIR=$2/tr LD_PRELOAD=$SHIM" ;;
    alwayson) echo "NCCLSCOPE_DIR=$2/tr NCCLSCOPE_KEEP=30m,2G NCCLSCOPE_METRICS=$2/m NCCLSCOPE_METRICS_MS=100 LD_PRELOAD=$SHIM" ;;
    nokact) echo "NCCLSCOPE_DIR=$2/tr NCCLSCOPE_KERNELS=0 NCCLSCOPE_KEEP=30m,2G NCCLSCOPE_METRICS=$2/m NCCLSCOPE_METRICS_MS=100 LD_PRELOAD=$SHIM" ;;
    nogpu) echo "NCCLSCOPE_DIR=$2/tr NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_KEEP=30m,2G NCCLSCOPE_METRICS=$2/m NCCLSCOPE_METRICS_MS=100 LD_PRELOAD=$SHIM" ;;
  esac
}
# "traced dropped" of the trace in D: calls it holds (whole-run for a bounded trace) and the
# records the shim counted as dropped; AllReduce only when $2 = AllReduce
traced() {
  "$NCS" report --json "$1/tr" 2>/dev/null | jq -r --arg op "${2:-}" '
    (if .window then (if $op == "" then .window.whole_run_calls else [.window.whole_run[] | select(.op == $op) | .calls] | add end)
     else (if $op == "" then [.ranks[].calls] | add else [.ranks[].ops[$op].calls // 0] | add end) end) as $c
    | "\($c // 0) \([.ranks[].dropped] | add // 0)"'
}
# part 1: one ddp_job run, ARM ROUND SHAPE; appends "host_us device_us jobcalls traced dropped
# cpu_ms" to $W/ddp-SHAPE.ARM (cpu_ms: user + system CPU of the launcher and both ranks, every
# thread, per step)
ddp() {
  local d=$W/ddp-$1-$2-$3 a=
  [ "$3" = ahead ] && a="--ahead 4"
  mkdir -p "$d/truth"
  local t cpu TIMEFORMAT='%U %S'
  cpu=$( { time env $(arm_env "$1" "$d") bash "$ROOT/tests/jobs/launch.sh" 2 "$JOB" --steps "$STEPS" --compute-us "$COMPUTE_US" $a --measure \
           --truth "$d/truth" >/dev/null 2>&1; } 2>&1 | awk -v s="$STEPS" '{ printf "%.4f", ($1 + $2) * 1000 / s }')
  t=$(jq -s --argjson s "$STEPS" '"\(map(.measured.wall_ns) | max / $s / 1000) \(map(.device_step_ns) | max / 1000) \(map(.ops[].calls) | add)"' -r \
    "$d"/truth/truth-rank*.json 2>/dev/null)
  if [ "$1" = plain ]; then echo "$t - - $cpu"; else echo "$t $(traced "$d") $cpu"; fi >>"$W/ddp-$3.$1"
  rm -rf "$d"
}
# part 2: one rate_job run; appends "caller_ns proc_ns lost dropped" to $W/call.ARM
call() {
  local d=$W/call-$1-$2 out
  mkdir -p "$d"
  out=$(env $(arm_env "$1" "$d") NCCLSCOPE_GPU_TIMING=0 "$RATE" -n "$CALLS" 2>/dev/null | head -1)
  g() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $out"; }
  if [ "$1" = plain ]; then echo "$(g caller_cpu_ns_per_call) $(g cpu_ns_per_call) - -"
  else read -r c dr <<<"$(traced "$d" AllReduce)"; echo "$(g caller_cpu_ns_per_call) $(g cpu_ns_per_call) $((CALLS - c)) $dr"; fi >>"$W/call.$1"
  rm -rf "$d"
}
# part 3: one event_cost run; appends "thread_ns process_ns" (added per call) to $W/events
events() {
  "$EVC" -n 20000 -k 11 | sed -n 's/.* added_thread_ns=\([-0-9.]*\) added_process_ns=\([-0-9.]*\).*/\1 \2/p' >>"$W/events"
}
for ((k = 1; k <= ROUNDS; k++)); do
  for arm in $ARMS1; do
    ddp "$arm" "$k" sync; ddp "$arm" "$k" ahead
    case " $ARMS " in *" $arm "*) call "$arm" "$k" ;; esac
  done
  events
done

# mmm FILE COL: "min / median / max" of column COL
mmm() {
  awk -v k="$2" '$k != "-" && $k != "" {print $k}' "$1" | sort -g |
    awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.5g / %.5g / %.5g", a[1], m, a[NR]}'
}
med() { mmm "$1" "$2" | awk -F' / ' '{print $2}'; }
vs() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%+.2f %%", (a / b - 1) * 100; else printf "-"}'; }
sum() { awk -v k="$2" '$k != "-" {s += $k} END {print s + 0}' "$1"; }

echo
echo "1. ddp_job, 2 ranks, $STEPS steps of $COMPUTE_US us compute (step time: host wall / steps, slower rank; device: the double's clock)"
printf '%-15s %-28s %-10s %-28s %-10s %-24s %-22s %s\n' "shape arm" "host step us min/med/max" "vs plain" "device step us min/med/max" \
  "vs plain" "CPU ms/step min/med/max" "added CPU / dev. step" "calls traced / job's, dropped (all rounds)"
for shape in sync ahead; do
  hb=$(med "$W/ddp-$shape.plain" 1) db=$(med "$W/ddp-$shape.plain" 2) cb=$(med "$W/ddp-$shape.plain" 6)
  for arm in $ARMS1; do
    f=$W/ddp-$shape.$arm
    tr="-"
    [ "$arm" != plain ] && tr="$(sum "$f" 4) / $(sum "$f" 3), $(sum "$f" 5)"
    printf '%-15s %-28s %-10s %-28s %-10s %-24s %-22s %s\n' "$shape $arm" "$(mmm "$f" 1)" "$(vs "$(med "$f" 1)" "$hb")" "$(mmm "$f" 2)" \
      "$(vs "$(med "$f" 2)" "$db")" "$(mmm "$f" 6)" \
      "$(awk -v c="$(med "$f" 6)" -v b="$cb" -v d="$(med "$W/ddp-$shape.plain" 2)" 'BEGIN { printf "%+.2f %%", (c - b) * 1000 / d * 100 }')" "$tr"
  done
done
echo
echo "2. rate_job, 1 thread, $CALLS calls as fast as it can, GPU timing off (ns per call: calling thread's CPU; process CPU, writer included)"
printf '%-9s %-28s %-10s %-28s %-10s %s\n' arm "caller CPU ns min/med/max" "vs shim" "process CPU ns min/med/max" "vs shim" "AllReduce calls lost / job's, dropped (all rounds)"
cb=$(med "$W/call.shim" 1) pb=$(med "$W/call.shim" 2)
for arm in $ARMS; do
  f=$W/call.$arm
  lo="-"
  [ "$arm" != plain ] && lo="$(sum "$f" 3) / $((CALLS * ROUNDS)), $(sum "$f" 4)"
  printf '%-9s %-28s %-10s %-28s %-10s %s\n' "$arm" "$(mmm "$f" 1)" "$(vs "$(med "$f" 1)" "$cb")" "$(mmm "$f" 2)" \
    "$(vs "$(med "$f" 2)" "$pb")" "$lo"
done
echo
# calls a rank makes a step (the job's count over both ranks and the steps, set-up calls included)
cps=$(awk -v s="$STEPS" '{ c = $3 } END { printf "%.2f", c / 2 / s }' "$W/ddp-sync.alwayson")
echo "3. GPU timing's cost per timed call: the CUDA double's event calls alone (event_cost, no shim) beside what it adds to ddp_job sync ($cps calls a rank a step)"
printf '%-58s %s\n' "the double's calls, calling thread, ns/call min/med/max" "$(mmm "$W/events" 1)"
printf '%-58s %s\n' "the double's calls, process (its stream thread too)" "$(mmm "$W/events" 2)"
ha=$(med "$W/ddp-sync.nokact" 1) hn=$(med "$W/ddp-sync.nogpu" 1) ca=$(med "$W/ddp-sync.nokact" 6) cn=$(med "$W/ddp-sync.nogpu" 6)
ck=$(med "$W/ddp-sync.alwayson" 6)
printf '%-62s %s\n' "GPU timing (nokact - nogpu), host step time per call of a rank" "$(awk -v a="$ha" -v b="$hn" -v c="$cps" 'BEGIN { printf "%.0f ns", (a - b) * 1000 / c }')"
printf '%-62s %s\n' "GPU timing (nokact - nogpu), CPU per call, every thread" "$(awk -v a="$ca" -v b="$cn" -v c="$cps" 'BEGIN { printf "%.0f ns", (a - b) * 1e6 / (2 * c) }')"
printf '%-62s %s\n' "  of which the shim's own (minus the double's process figure)" "$(awk -v a="$ca" -v b="$cn" -v c="$cps" -v d="$(med "$W/events" 2)" 'BEGIN { printf "%.0f ns", (a - b) * 1e6 / (2 * c) - d }')"
printf '%-62s %s\n' "kernel activity (alwayson - nokact), CPU per call, every thread" "$(awk -v a="$ck" -v b="$ca" -v c="$cps" 'BEGIN { printf "%.0f ns", (a - b) * 1e6 / (2 * c) }')"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
