#!/usr/bin/env bash
# test_shim_gpu.sh — GPU timing in the shim, on the CPU doubles (libcudart.so.13 with
# asynchronous streams and events, libnccl.so.2 with a link model): a job written here makes
# ungrouped collectives whose device time (NCCLDOUBLE_LAT_US) is far longer than their host
# time, a group over two streams, a call on a stream capturing a CUDA graph, a non-blocking
# communicator (ncclInProgress) and an abort with an operation in flight. Checks: same output
# with and without the shim; timing=gpu; one GPU_TIME per timed call, after its CALL, with
# the device duration (not the host one) and on the trace's clock; one per stream for the
# group; the captured call flagged and never given events; NCCLSCOPE_GPU_TIMING=0 and a
# process without CUDA fall back to host timing. Then the DDP-shaped job on 4 ranks: exact
# per-rank calls/count/bytes against the job's own ground truth, identical output.
. "$(dirname "$0")/lib.sh"
[ -f "$SHIM" ] && [ -x "$NCS" ] || { fail "shim_gpu: shim or decoder missing"; exit 1; }
if [ ! -f "$DOUBLES/libnccl.so.2" ] || [ ! -f "$DOUBLES/libcudart.so.13" ]; then
  skip "shim_gpu: CPU doubles not built in $DOUBLES"; exit 0
fi
CC=${CC:-cc}
cat >"$T/gjob.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "include/cuda_double.h"
#include "ncclscope/nccl_abi.h"
#define P(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(P)
#define CK(x) do { int e_ = (int)(x); if (e_) { printf("error %d at line %d\n", e_, __LINE__); exit(1); } } while (0)
static void stamp(void *p) { *(uint64_t *)p = cudaDoubleNowNs(); }
int main(int argc, char **argv) {
  int abort_mode = argc > 1 && !strcmp(argv[1], "abort");
  setvbuf(stdout, NULL, _IONBF, 0);
  CK(cudaSetDevice(0));
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  ncclComm_t c, nb;
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg; cfg.magic = 0xcafebeef; cfg.version = 22809; cfg.blocking = 0;
  cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = cfg.splitShare = cfg.trafficClass = NCCL_CONFIG_UNDEF_INT;
  cfg.collnetEnable = cfg.CTAPolicy = cfg.shrinkShare = cfg.nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
  cfg.nChannelsPerNetPeer = cfg.nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
  int rc = ncclCommInitRankConfig(&nb, 1, id, 0, &cfg);
  printf("init rc=%d\n", rc);
  ncclResult_t st = ncclInProgress;
  while (st == ncclInProgress) { CK(ncclCommGetAsyncError(nb, &st)); if (st == ncclInProgress) usleep(1000); }
  printf("ready %d\n", (int)st);
  /* NCCL 2.28 launches a non-blocking communicator's operations from a thread (they return
   * ncclInProgress and are not timed): the timed calls below use a blocking communicator */
  CK(ncclGetUniqueId(&id));
  CK(ncclCommInitRank(&c, 1, id, 0));
  cudaStream_t s1, s2;
  CK(cudaStreamCreate(&s1)); CK(cudaStreamCreate(&s2));
  float *b;
  CK(cudaMalloc((void **)&b, 4096));
  for (int i = 0; i < 8; i++) b[i] = 1.0f;
  if (argc > 1 && !strcmp(argv[1], "clock")) {
    /* the stream's own clock around each call: a host function stamps the double's monotonic
     * time when the stream reaches it, just before and just after the call's work */
    static uint64_t tb[20], ta[20];
    for (int i = 0; i < 20; i++) {
      CK(cudaLaunchHostFunc(s1, stamp, &tb[i]));
      CK(ncclAllReduce(b, b, 8, ncclFloat32, ncclSum, c, s1));
      CK(cudaLaunchHostFunc(s1, stamp, &ta[i]));
      if (i % 5 == 4) { CK(cudaStreamSynchronize(s1)); usleep(3000); }
    }
    CK(cudaStreamSynchronize(s1));
    const char *path = getenv("CLOCK_TRUTH");
    FILE *tf = path ? fopen(path, "w") : NULL;
    for (int i = 0; tf && i < 20; i++) fprintf(tf, "%llu %llu\n", (unsigned long long)tb[i], (unsigned long long)ta[i]);
    if (tf) fclose(tf);
    printf("clock done\n");
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "multi")) {
    /* one process, two devices: CommInitAll, then a group with one AllReduce per device */
    ncclComm_t cs[2];
    int devs[2] = {0, 1};
    CK(ncclCommInitAll(cs, 2, devs));
    cudaStream_t ss[2];
    float *bb[2];
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d)); CK(cudaStreamCreate(&ss[d])); CK(cudaMalloc((void **)&bb[d], 64));
      for (int i = 0; i < 8; i++) bb[d][i] = (float)(d + 1);
    }
    CK(cudaSetDevice(0));
    for (int k = 0; k < 3; k++) {
      CK(ncclGroupStart());
      for (int d = 0; d < 2; d++) CK(ncclAllReduce(bb[d], bb[d], 8, ncclFloat32, ncclSum, cs[d], ss[d]));
      CK(ncclGroupEnd());
    }
    for (int d = 0; d < 2; d++) CK(cudaStreamSynchronize(ss[d]));
    printf("multi values %g %g\n", bb[0][0], bb[1][0]);
    for (int d = 0; d < 2; d++) CK(ncclCommDestroy(cs[d]));
    return 0;
  }
  if (abort_mode) {
    CK(ncclAllReduce(b, b, 8, ncclFloat32, ncclSum, c, s1));
    printf("abort rc=%d\n", ncclCommAbort(c));
    return 0;
  }
  for (int i = 0; i < 3; i++) CK(ncclAllReduce(b, b, 8, ncclFloat32, ncclSum, c, s1));
  CK(ncclGroupStart());
  CK(ncclAllReduce(b, b, 8, ncclFloat32, ncclSum, c, s1));
  CK(ncclAllReduce(b + 16, b + 16, 8, ncclFloat32, ncclSum, c, s2));
  CK(ncclGroupEnd());
  CK(cudaStreamSynchronize(s1)); CK(cudaStreamSynchronize(s2));
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
  CK(ncclAllReduce(b + 32, b + 32, 8, ncclFloat32, ncclSum, c, s2));
  CK(cudaStreamEndCapture(s2, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s2)); CK(cudaGraphLaunch(ge, s2));
  CK(cudaStreamSynchronize(s2));
  printf("last error %d\n", (int)cudaGetLastError());
  printf("values %g %g\n", b[0], b[16]);
  printf("destroy rc=%d\n", ncclCommDestroy(c));
  printf("destroy rc=%d\n", ncclCommDestroy(nb));
  return 0;
}
C
if ! $CC -std=c11 -D_GNU_SOURCE -I"$ROOT/tests/doubles" -I"$ROOT/include" -o "$T/gjob" "$T/gjob.c" \
     -L"$DOUBLES" -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,"$DOUBLES" 2>"$T/cc.err"; then
  fail "shim_gpu: cannot build the test job"; sed 's/^/    /' "$T/cc.err" | head; exit 1
fi
cd "$T"
export NCCLDOUBLE_LAT_US=3000 NCCL_DEBUG=
LD_PRELOAD="$SAN_PRELOAD" ./gjob >plain.out 2>&1; prc=$?
NCCLSCOPE_DEBUG=1 NCCLSCOPE_DIR="$T/tr" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./gjob >shim.out 2>shim.err; src=$?
check_eq "shim_gpu: job exit status unchanged" "$prc" "$src"
check "shim_gpu: job output identical with and without the shim (values, cudaGetLastError)" cmp plain.out shim.out
"$NCS" dump tr/*.ncs >d 2>&1
check "shim_gpu: PROCESS says timing=gpu" grep -q '^  timing=gpu$' d
check "shim_gpu: non-blocking init recorded with ncclInProgress (rc 7, flag)" \
  grep -q '^CALL op=CommInitRankConfig .* rc=7 .* flags=2$' d
check "shim_gpu: ... and its COMM record marked non-blocking" grep -q '^COMM .*init_op=CommInitRankConfig .*flags=1 ' d
# ungrouped AllReduce calls: tcall of each, with its GPU_TIME
awk '
  /^CALL / { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    if ($2 == "op=AllReduce" && f["depth"] == 0) { seen[f["tcall"]] = NR; host[f["tcall"]] = f["duration"]; prev[f["tcall"]] = lastexit; cap[f["tcall"]] = f["flags"] }
    if (f["t_enter"] + f["duration"] > lastexit) lastexit = f["t_enter"] + f["duration"] }
  /^GPU_TIME kind=call/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); g[kv[1]] = kv[2] }
    r = g["ref"]; gpu[r] = g["duration"]; gflags[r] = g["flags"]; before[r] = (seen[r] && seen[r] < NR); start[r] = g["gpu_start"] }
  /^GPU_TIME kind=group/ { groups++ }
  END {
    for (t in seen) {
      if (cap[t] % 2 == 1) { ncap++; if (t in gpu) capgpu++; continue }
      n++
      if (!(t in gpu)) { miss++; continue }
      if (gflags[t] == 0 && gpu[t] >= 2900000) long++
      if (before[t]) ordered++
      # the start event is recorded after the previous call returned, and a converted start
      # is never earlier than the host time of its record (10 us for float rounding)
      if (start[t] >= prev[t] - 10000) near++
      printf "# call %d: host %d ns, device %d ns, device start %d ns after the previous call returned\n", t, host[t], gpu[t], start[t] - prev[t] > "/dev/stderr"
    }
    printf "timed=%d missing=%d long=%d ordered=%d near=%d captured=%d capgpu=%d groups=%d\n", n, miss, long, ordered, near, ncap, capgpu, groups
  }' d >sum 2>sum.figures
cat sum.figures
read -r line <sum
check_eq "shim_gpu: 3 ungrouped uncaptured calls, each with one GPU_TIME (after its CALL, device time >= the double's 3 ms, starting after the previous call returned: the trace's clock)" \
  "timed=3 missing=0 long=3 ordered=3 near=3 captured=1 capgpu=0 groups=2" "$line"
check "shim_gpu: the captured call is flagged (flags bit 0; bits 2-3: its placement) and never given events" \
  grep -qE '^CALL op=AllReduce .* flags=(1|5|9)$' d
check "shim_gpu: the group got one GPU_TIME per stream, referring to its GroupStart" \
  bash -c "g=\$(grep '^CALL op=GroupStart' d | sed 's/.* tcall=\([0-9]*\) .*/\1/'); [ \$(grep -c \"^GPU_TIME kind=group .* ref=\$g \" d) = 2 ]"
check "shim_gpu: no GPU_TIME failed" bash -c "! grep -q '^GPU_TIME .*flags=[1-9]' d"
calls=$(sed -n 's/.*GPU timing: \([0-9]*\) CUDA calls on application threads for \([0-9]*\) NCCL calls.*/\1 \2/p' shim.err)
# steady state: 3 ungrouped x 4 (peek, capture check, 2 event records) + 2 group members x 2
# (peek, capture check) + 2 streams x 2 event records at GroupEnd + the captured call x 2 = 22;
# once per event slot (5 used): cudaGetDevice + 2 cudaEventCreate = 15
check_eq "shim_gpu: CUDA calls made by the shim on the application thread / NCCL calls timed" "37 6" "$calls"

# abort with an operation in flight: no hang, a readable trace
NCCLSCOPE_DIR="$T/tra" LD_PRELOAD="$SHIM$SAN_PRELOAD" timeout 20 ./gjob abort >abort.out 2>&1; arc=$?
check_eq "shim_gpu: CommAbort with an operation in flight: job ends normally" "0" "$arc"
check "shim_gpu: ... trace decodes, COMM_END by CommAbort, the call's GPU_TIME present (done or failed)" \
  bash -c "'$NCS' dump tra/*.ncs >da 2>&1 && grep -q '^COMM_END .*op=CommAbort' da && grep -q '^GPU_TIME kind=call' da"

# accuracy of the clock conversion: the stream's own time just before / after each call's work
NCCLDOUBLE_LAT_US=1000 CLOCK_TRUTH="$T/clock.truth" NCCLSCOPE_DIR="$T/trk" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./gjob clock >/dev/null 2>&1
"$NCS" dump trk/*.ncs >dk 2>&1
grep '^CALL op=AllReduce .* depth=0 ' dk | sed 's/.* tcall=\([0-9]*\) .*/\1/' >k.tcalls
errs=$(awk 'FNR == NR { tc[++n] = $1; next }
            FILENAME ~ /truth/ { tb[++m] = $1; ta[m] = $2; next }
            /^GPU_TIME kind=call/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); g[kv[1]] = kv[2] } s[g["ref"]] = g["gpu_start"]; e[g["ref"]] = g["gpu_end"] }
            END { if (m != 20 || n != 20) exit
                  for (i = 1; i <= 20; i++) { r = tc[i]; if (!(r in s)) exit
                    # never late: a conversion is early by at most its anchor bracket (a lift
                    # only undoes part of that), so start <= end <= the stamp after the work
                    if (s[r] > e[r] || e[r] > ta[i] + 10000) late++
                    d = s[r] - tb[i]; print (d < 0 ? -d : d); d = e[r] - ta[i]; print (d < 0 ? -d : d) }
                  print "late " late + 0 > "late" }' k.tcalls "$T/clock.truth" dk | sort -n)
n=$(echo "$errs" | grep -c .)
med=$(echo "$errs" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)] + 0}')
worst=$(echo "$errs" | tail -1)
echo "# figures: GPU clock conversion on the CPU double, 40 times (20 calls, start and end): median error $med ns, worst $worst ns"
# The error is the anchor's record-to-sync bracket: a few us on an idle machine, hundreds of us
# or more when the double's stream thread waits for a core, so its size is a figure (above;
# BENCHMARKS.md), and the check is what holds at any load: 20 calls, 40 times, none late.
check_eq "shim_gpu: GPU_TIME start/end of 20 calls against the stream's own stamps: 40 compared, none after the stamp that follows the work" \
  "40 late 0" "$n $(cat late 2>/dev/null)"

# several devices in one process
NCCLDOUBLE_NGPUS=2 LD_PRELOAD="$SAN_PRELOAD" ./gjob multi >multi-plain.out 2>&1
NCCLDOUBLE_NGPUS=2 NCCLSCOPE_DIR="$T/trm" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./gjob multi >multi.out 2>&1
check "shim_gpu: two devices in one process (CommInitAll): output identical" cmp multi-plain.out multi.out
"$NCS" dump trm/*.ncs >dm 2>&1
check_eq "shim_gpu: CommInitAll: two COMM records, one comm_id, ranks 0/1 on devices 0/1" "1 0:0 1:1" \
  "$(sed -n 's/^COMM comm=[0-9]* comm_id=\([0-9a-f]*\) .*init_op=CommInitAll .*/\1/p' dm | sort -u | wc -l) $(sed -n 's/^COMM .* rank=\([0-9]*\) nranks=2 device=\([0-9]*\) init_op=CommInitAll .*/\1:\2/p' dm | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "shim_gpu: 3 groups over two devices: 2 GPU_TIMEs each (one per stream), none failed" "6 0" \
  "$(grep -c '^GPU_TIME kind=group' dm) $(grep -c '^GPU_TIME .*flags=[1-9]' dm)"

# host fallback
NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_DIR="$T/trh" LD_PRELOAD="$SHIM$SAN_PRELOAD" ./gjob >/dev/null 2>&1
"$NCS" dump trh/*.ncs >dh 2>&1
check_eq "shim_gpu: NCCLSCOPE_GPU_TIMING=0: timing=host, no GPU_TIME" "1 0" \
  "$(grep -c '^  timing=host$' dh) $(grep -c '^GPU_TIME' dh)"

# ---- the DDP-shaped job on 4 ranks against its ground truth ----
JOB=$BUILD/tests/ddp_job
if [ ! -x "$JOB" ] || [ ! -f "$ROOT/tests/jobs/launch.sh" ]; then skip "shim_gpu: ddp_job not built"; exit 0; fi
unset NCCLDOUBLE_LAT_US
mkdir -p truth
bash "$ROOT/tests/jobs/launch.sh" 4 "$JOB" --steps 4 >ddp-plain.out 2>ddp-plain.err; p4=$?
NCCLSCOPE_DIR="$T/tr4" LD_PRELOAD="$SHIM" bash "$ROOT/tests/jobs/launch.sh" 4 "$JOB" --steps 4 --truth "$T/truth" \
  >ddp-shim.out 2>ddp-shim.err; s4=$?
check_eq "shim_gpu: ddp_job 4 ranks: exit status unchanged" "$p4" "$s4"
check "shim_gpu: ddp_job 4 ranks: output identical with and without the shim" cmp ddp-plain.out ddp-shim.out
check_eq "shim_gpu: ddp_job 4 ranks: one trace per rank" "4" "$(ls tr4/*.ncs 2>/dev/null | wc -l)"
bad=0 checked=0
for f in tr4/*.ncs; do
  "$NCS" dump "$f" >df 2>&1
  r=$(sed -n 's/^  env.RANK=//p' df)
  tf=truth/truth-rank$r.json
  [ -f "$tf" ] || { bad=$((bad + 1)); echo "    no truth for rank $r"; continue; }
  # op calls count bytes, from the truth and from the trace
  sed -n 's/^ *"\([A-Za-z]*\)": {"calls": \([0-9]*\), "count": \([0-9]*\), "bytes": \([0-9]*\)}.*/\1 \2 \3 \4/p' "$tf" | sort >want
  awk '/^CALL /{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } c[f["op"]]++; n[f["op"]] += f["count"]; b[f["op"]] += f["bytes"] }
       END { for (o in c) print o, c[o], n[o], b[o] }' df | sort >got
  if cmp -s want got; then checked=$((checked + 1)); else bad=$((bad + 1)); echo "    rank $r:"; diff want got | head -5 | sed 's/^/    /'; fi
done
check_eq "shim_gpu: ddp_job 4 ranks: every rank's calls/count/bytes per op equal the job's ground truth" "4 0" "$checked $bad"
check_eq "shim_gpu: ddp_job 4 ranks: the same comm_id on every rank" "1" \
  "$(for f in tr4/*.ncs; do "$NCS" dump "$f" | sed -n 's/^COMM comm=1 comm_id=\([0-9a-f]*\) .*/\1/p'; done | sort -u | wc -l)"
check_eq "shim_gpu: ddp_job 4 ranks: identical collective sequence (op, seq, count) on every rank" "1" \
  "$(for f in tr4/*.ncs; do "$NCS" dump "$f" | awk '/^CALL / && / seq=[1-9]/ && !/op=(Send|Recv)/ {print $2, $6, $7}' | md5sum; done | sort -u | wc -l)"

# ---- every operation of the NCCL double (coll_check: all collectives, PreMulSum, groups over
# two streams, zero counts, CommSplit by parity, then with one rank out) on 4 ranks: output
# identical; every split communicator has one comm_id shared by exactly its nranks ranks ----
CC2=$BUILD/tests/coll_check
if [ ! -x "$CC2" ]; then skip "shim_gpu: coll_check not built"; exit 0; fi
bash "$ROOT/tests/jobs/launch.sh" 4 "$CC2" >cc-plain.out 2>&1; c0=$?
NCCLSCOPE_DIR="$T/trc" LD_PRELOAD="$SHIM" bash "$ROOT/tests/jobs/launch.sh" 4 "$CC2" >cc-shim.out 2>&1; c1=$?
check_eq "shim_gpu: coll_check 4 ranks: exit status unchanged" "$c0" "$c1"
check "shim_gpu: coll_check 4 ranks: output identical with and without the shim" cmp cc-plain.out cc-shim.out
for f in trc/*.ncs; do "$NCS" dump "$f" >"$f.d" 2>&1; done
split=$(cat trc/*.d | sed -n 's/^COMM comm=[0-9]* comm_id=\([0-9a-f]*\) .* nranks=\([0-9]*\) .*init_op=CommSplit .*/\1 \2/p' | sort | uniq -c | awk '{print $3 "x" $1}' | sort | tr '\n' ' ')
check_eq "shim_gpu: coll_check: 3 split communicators (2, 2 and 3 ranks), each comm_id on exactly its nranks ranks" "2x2 2x2 3x3 " "$split"
check "shim_gpu: coll_check: split communicators' parent is the first communicator" \
  bash -c "p=\$(sed -n 's/^COMM comm=1 comm_id=\([0-9a-f]*\) .*/\1/p' trc/*.d | head -1); grep -q \"init_op=CommSplit parent_id=\$p \" trc/*.d"
check_eq "shim_gpu: coll_check: no GPU_TIME failed, no drop" "0 0" \
  "$(cat trc/*.d | grep -c '^GPU_TIME .*flags=[1-9]') $(cat trc/*.d | grep '^== end' | grep -vc 'dropped 0')"
