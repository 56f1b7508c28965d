#!/usr/bin/env bash
# test_proxy_events.sh — the NCCL double's ProxyOp/ProxyStep profiler events (nd_profiler.c,
# nd_proxy.c; docs/DOUBLES.md "Profiler events"). A profiler plugin built here (v5, and v4 for
# NCCL's v4 adapter) logs every event it gets; ddp_job runs on 4 ranks over 2 simulated hosts
# (LAUNCH_NODES=2: ranks 0-1 on host 0, 2-3 on host 1, so the ring hops 1->2 and 3->0 and the
# tree's 1-2 link are NET/IB). The expected ProxyOps are computed here, independently of the
# double, from NCCL 2.28.9's arithmetic as its source writes it (src/enqueue.cc calcCollChunking
# and addP2pToPlan, src/proxy.cc ncclProxySaveOp/NeedProxy, src/plugin/profiler.cc
# ncclProfilerStartProxyOpEvent), from what the plugin itself saw of each task (Coll/P2p
# descriptor: function, count, datatype, algorithm, protocol, channels, root/peer) and the
# launcher's host layout: per task the set of (channel, peer, isSend, nSteps, chunkSize) must be
# equal, every ProxyOp has nSteps ProxyStep events numbered 0..nSteps-1 with the states NCCL
# records (send: SendGPUWait, SendPeerWait_v4, SendWait; recv: RecvWait, RecvFlushWait,
# RecvGPUWait), one ProxyOpInProgress_v4, the process's pid, and the steps come no earlier than
# their kernel's device start (pTimer; the plugin's CLOCK_MONOTONIC is the device clock's domain).
# None on one host (NVLink only), none when the mask does not ask, steps only when asked; a
# captured plan with NET proxy ops emits its task events at every replay (capture_job); the NCCL
# Inspector (when ../shared has its source) still writes its files on the 2-host job.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset NCCL_PROFILER_PLUGIN NCCL_DEBUG NCCL_ALGO NCCL_PROTO NCCLDOUBLE_NCHANNELS NCCLSCOPE_PROFILER NCCL_IB_DISABLE NCCL_NET
if [ ! -x "$J" ]; then skip "proxy events: ddp_job not built"; exit 0; fi
if ! command -v python3 >/dev/null; then skip "proxy events: python3 needed to read the event logs"; exit 0; fi

cat >"$T/evlog.c" <<'EOF'
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "nccl_profiler/profiler.h"
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static uintptr_t ids;
static unsigned long long now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec;
}
static int init_any(void **ctx, int *mask) {
  pthread_mutex_lock(&mu);
  if (!out) {
    char p[512]; snprintf(p, sizeof p, "%s/ev.%d", getenv("EVLOG_DIR"), (int)getpid());
    out = fopen(p, "w");
    if (out) setvbuf(out, NULL, _IOLBF, 0);
  }
  pthread_mutex_unlock(&mu);
  *mask = atoi(getenv("EVLOG_MASK")); *ctx = &ids; return out ? 0 : 1;
}
static void start_any(void **h, unsigned type, void *parent, int rank, const void *u) {
  pthread_mutex_lock(&mu);
  uintptr_t id = ++ids;
  *h = (void *)id;
  fprintf(out, "S %lu %u %lu %d %llu", (unsigned long)id, type, (unsigned long)(uintptr_t)parent, rank, now());
  if (type == NCCL_PROFILE_COLL) { const struct nccl_prof_coll *c = u;
    fprintf(out, " %s %zu %s %d %s %s %u", c->func, c->count, c->datatype, c->root, c->algo, c->proto, c->nchannels); }
  if (type == NCCL_PROFILE_P2P) { const struct nccl_prof_p2p *p = u;
    fprintf(out, " %s %zu %s %d %u", p->func, p->count, p->datatype, p->peer, p->nchannels); }
  if (type == NCCL_PROFILE_PROXY_OP) { const struct nccl_prof_proxy_op *p = u;
    fprintf(out, " %d %u %d %d %d %d", p->pid, p->channel, p->peer, p->nsteps, p->chunk_size, p->is_send); }
  if (type == NCCL_PROFILE_PROXY_STEP) fprintf(out, " %d", ((const struct nccl_prof_proxy_step *)u)->step);
  if (type == NCCL_PROFILE_KERNEL_CH) { const struct nccl_prof_kernel_ch *k = u;
    fprintf(out, " %u %llu", k->channel, (unsigned long long)k->ptimer); }
  fputc('\n', out);
  pthread_mutex_unlock(&mu);
}
static int stop(void *h) {
  pthread_mutex_lock(&mu); fprintf(out, "E %lu %llu\n", (unsigned long)(uintptr_t)h, now()); pthread_mutex_unlock(&mu); return 0;
}
static int rec(void *h, int state, void *a) {
  union nccl_prof_state_args *s = a;
  pthread_mutex_lock(&mu);
  fprintf(out, "R %lu %d %llu %llu\n", (unsigned long)(uintptr_t)h, state, s ? (unsigned long long)s->ptimer : 0ull, now());
  pthread_mutex_unlock(&mu); return 0;
}
static int fin(void *c) { return 0; }
#ifdef V4
static int init4(void **c, int *m, const char *n, uint64_t h, int nn, int nr, int r, nccl_prof_logger_t l) { return init_any(c, m); }
static int start4(void *c, void **h, struct nccl_prof_descr_v4 *d) { start_any(h, d->type, d->parent, d->rank, &d->u); return 0; }
const struct nccl_profiler_v4 ncclProfiler_v4 = {"evlog4", init4, start4, stop, rec, fin};
#else
static int init5(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r, nccl_prof_logger_t l) { return init_any(c, m); }
static int start5(void *c, void **h, struct nccl_prof_descr_v5 *d) { start_any(h, (unsigned)d->type, d->parent, d->rank, &d->u); return 0; }
const struct nccl_profiler_v5 ncclProfiler_v5 = {"evlog5", init5, start5, stop, rec, fin};
#endif
EOF
if ! cc -shared -fPIC -I"$ROOT/include" -o "$T/evlog5.so" "$T/evlog.c" -lpthread 2>"$T/cc.err" ||
   ! cc -shared -fPIC -DV4 -I"$ROOT/include" -o "$T/evlog4.so" "$T/evlog.c" -lpthread 2>>"$T/cc.err"; then
  fail "proxy events: could not build the logging plugin: $(head -3 "$T/cc.err")"; exit 0
fi

# masks (profiler.h): Coll 2, P2p 4, ProxyOp 8, ProxyStep 16, KernelCh 64
ALL=$((2 | 4 | 8 | 16 | 64))
# run NAME PLUGIN MASK NODES ARGS...: ddp_job (or $JOB) on 4 ranks, events in $T/NAME
run() {
  local name=$1 plug=$2 mask=$3 nodes=$4; shift 4
  mkdir -p "$T/$name"
  EVLOG_DIR="$T/$name" EVLOG_MASK=$mask NCCL_PROFILER_PLUGIN="$T/$plug" LAUNCH_NODES=$nodes \
    bash "$L" 4 "${JOB:-$J}" "$@" >"$T/$name.out" 2>"$T/$name.err"
}
# ddp_job's sizes give TREE/LL (the 16 KiB bucket), RING with LL and LL128, P2P with LL and
# SIMPLE; NCCL_PROTO=Simple (the double follows it) gives SIMPLE's chunk and slice steps
D="--steps 1 --compute-us 100"
run net5 evlog5.so $ALL 2 $D
NCCL_PROTO=Simple run simple5 evlog5.so $ALL 2 $D
run net4 evlog4.so $ALL 2 $D
run one5 evlog5.so $ALL 1 $D
run opsonly evlog5.so $((2 | 4 | 8)) 2 $D
run noproxy evlog5.so $((2 | 4 | 64)) 2 $D
for r in net5 simple5 net4 one5 opsonly noproxy; do
  check "ddp_job with the logging plugin ($r) succeeds" grep -q "all results correct" "$T/$r.out"
done
# a CUDA graph (capture_job: 1 plain all-reduce, 2 captured, 3 replays): a plan with NET proxy
# ops is pushed by the host callback at every replay (src/enqueue.cc ncclLaunchPrepare,
# plan->hasProxyOps; hostStreamPlanTask), so its Coll events and ProxyOps come at each replay;
# without (one host, no KernelCh) the Coll events come once, at capture
CJ=$BUILD/tests/capture_job
JOB=$CJ run cap2 evlog5.so $ALL 2 -r 3
JOB=$CJ run cap1 evlog5.so 2 1 -r 3
check "capture_job with the logging plugin succeeds (2 hosts, 1 host)" eval 'grep -q "all ok" "$T/cap2.out" && grep -q "all ok" "$T/cap1.out"'
colls() { for f in "$T/$1"/ev.*; do awk '$1 == "S" && $3 == 2' "$f" | wc -l; done | sort -u | tr '\n' ' ' | sed 's/ $//'; }
check_eq "captured on 2 hosts: every rank sees 1 + 2 x 3 replays Coll events" 7 "$(colls cap2)"
check_eq "captured on 1 host, mask Coll: 1 + 2 Coll events (at capture)" 3 "$(colls cap1)"

cat >"$T/check.py" <<'EOF'
import glob, os, sys
STEPS = 8
BUFF = {"LL": 8 * 512 * 8 * 16, "LL128": 120 * 640 * 8 * 8, "SIMPLE": 1 << 22}   # init.cc defaults
GRAIN = {"LL": 16, "LL128": 32 * 8 // 16 * 15 * 8, "SIMPLE": 512}                # ncclProtoGrainSize
SIZE = {"ncclInt8": 1, "Unknown": 1, "ncclInt32": 4, "ncclUint32": 4, "ncclInt64": 8, "ncclUint64": 8,
        "ncclFloat16": 2, "ncclFloat32": 4, "ncclFloat64": 8, "ncclBfloat16": 2}
NRANKS = 4
node = lambda r: r * NODES // NRANKS            # launch.sh: NCCLDOUBLE_NODE = r / (ranks per host)
net = lambda a, b: a != b and node(a) != node(b)
cdiv = lambda a, b: -(-a // b)

def coll_expect(rank, func, count, dt, root, algo, proto, nch):
    """NCCL's proxy ops for one collective task: (channel, peer, isSend, nSteps, chunkSize)"""
    n = NRANKS
    pat = {("AllReduce", "RING"): "ringtwice", ("AllReduce", "TREE"): "treeupdown",
           ("AllGather", "RING"): "ring", ("ReduceScatter", "RING"): "ring",
           ("Broadcast", "RING"): "from", ("Reduce", "RING"): "to"}.get((func, algo))
    if pat is None: return []
    simple_ring = proto == "SIMPLE" and algo == "RING"
    csteps, ssteps = (4, 2) if simple_ring and func in ("AllReduce", "AllGather", "ReduceScatter") else (1, 1)
    chunk = BUFF[proto] // STEPS * csteps
    if proto == "LL": chunk //= 2
    if proto == "LL128": chunk = chunk // 16 * 15
    assert not (algo == "TREE" and proto == "LL128"), "not exercised here"
    chunk = chunk // GRAIN[proto] * GRAIN[proto]
    per_loop, chunks_loop = {"ringtwice": (2 * (n - 1), n), "ring": (n - 1, n)}.get(pat, (1, 1))
    prev, nxt = (rank - 1) % n, (rank + 1) % n
    up, down = rank - 1, rank + 1                        # the double's tree: a chain by rank
    out = []
    for c in range(nch):
        cnt = count // nch + (1 if c < count % nch else 0)
        if cnt == 0: continue
        nbytes = cnt * SIZE[dt] * (n if func in ("AllGather", "ReduceScatter") else 1)
        steps = per_loop * cdiv(nbytes, chunks_loop * chunk) * csteps
        hops = {"ringtwice": [(prev, 0), (nxt, 1)], "ring": [(prev, 0), (nxt, 1)],
                "from": ([(prev, 0)] if root != rank else []) + ([(nxt, 1)] if root != nxt else []),
                "to": ([(prev, 0)] if root != prev else []) + ([(nxt, 1)] if root != rank else []),
                "treeupdown": [(down, 0), (up, 1), (down, 1), (up, 0)]}[pat]
        for peer, snd in hops:
            if 0 <= peer < n and net(rank, peer):
                out.append((c, peer, snd, cdiv(steps, ssteps), chunk * ssteps))
    return out

def p2p_expect(rank, func, nbytes, peer, nch):
    if not net(rank, peer): return []
    ll = nbytes <= nch * 16384
    step = 65536 if ll else 1 << 17
    chunk = step // 4 if (not ll and nbytes < step) else step // 2 if nbytes < 8 * step else step
    data = chunk // 2 if ll else chunk
    snd = 1 if func == "Send" else 0
    if nbytes == 0: return [(0, peer, snd, 1, chunk)]
    part = cdiv(cdiv(nbytes, nch), 4096) * 4096
    out = []
    for c in range(nch):
        b, e = min(c * part, nbytes), min((c + 1) * part, nbytes)
        if e > b: out.append((c, peer, snd, cdiv(e - b, data), chunk))
    return out

def summary(d, mode):
  bad, nops, nsteps, ntasks, pids = [], 0, 0, 0, 0
  for f in sorted(glob.glob(d + "/ev.*")):
      pid = int(f.rsplit(".", 1)[1])
      ev, recs, stops, kstart = {}, {}, {}, {}
      for line in open(f):
          w = line.split()
          if w[0] == "S": ev[int(w[1])] = (int(w[2]), int(w[3]), int(w[4]), int(w[5]), w[6:])
          elif w[0] == "R": recs.setdefault(int(w[1]), []).append(int(w[2]))
          elif w[0] == "E": stops[int(w[1])] = int(w[2])
      kids = {}
      for i, (ty, par, rank, t, rest) in ev.items(): kids.setdefault(par, []).append(i)
      for i, (ty, par, rank, t, rest) in ev.items():
          if ty == 64: kstart.setdefault(par, []).append(int(rest[1]))   # KernelCh pTimer start
      pids += 1
      for i, (ty, par, rank, t, rest) in sorted(ev.items()):
          if ty not in (2, 4): continue
          ntasks += 1
          if ty == 2:
              func, count, dt, root, algo, proto, nch = rest[0], int(rest[1]), rest[2], int(rest[3]), rest[4], rest[5], int(rest[6])
              want = coll_expect(rank, func, count, dt, root, algo, proto, nch)
          else:
              func, count, dt, peer, nch = rest[0], int(rest[1]), rest[2], int(rest[3]), int(rest[4])
              want = p2p_expect(rank, func, count * SIZE[dt], peer, nch)
          ops = [k for k in kids.get(i, []) if ev[k][0] == 8]
          got = [(int(ev[k][4][1]), int(ev[k][4][2]), int(ev[k][4][5]), int(ev[k][4][3]), int(ev[k][4][4])) for k in ops]
          if sorted(got) != sorted(want):
              bad.append("%s rank %d %s: proxy ops %s, NCCL's arithmetic %s" % (f, rank, rest, sorted(got), sorted(want)))
          for k in ops:
              o = ev[k]
              nops += 1
              if int(o[4][0]) != pid: bad.append("ProxyOp %d pid %s, process %d" % (k, o[4][0], pid))
              if recs.get(k) != [19]: bad.append("ProxyOp %d states %s, want [19]" % (k, recs.get(k)))
              if k not in stops: bad.append("ProxyOp %d never stopped" % k)
              steps = sorted(ev[s][4] and int(ev[s][4][0]) for s in kids.get(k, []) if ev[s][0] == 16)
              if mode == "steps":
                  if steps != list(range(int(o[4][3]))): bad.append("ProxyOp %d steps %s, nSteps %s" % (k, steps, o[4][3]))
                  want_states = [8, 20, 9] if int(o[4][5]) else [10, 11, 12]
                  for s in kids.get(k, []):
                      nsteps += 1
                      if recs.get(s) != want_states: bad.append("ProxyStep %d states %s, want %s" % (s, recs.get(s), want_states))
                      if s not in stops: bad.append("ProxyStep %d never stopped" % s)
                      if kstart.get(i) and ev[s][3] < min(kstart[i]):
                          bad.append("ProxyStep %d at %d, before its kernel's device start %d" % (s, ev[s][3], min(kstart[i])))
              elif steps: bad.append("ProxyOp %d has %d ProxyStep events the mask did not ask for" % (k, len(steps)))
      stray = [k for k, e in ev.items() if e[0] in (8, 16) and ev.get(e[1], (0,))[0] not in (2, 4, 8)]
      if stray: bad.append("%d proxy events whose parent is not a Coll/P2p/ProxyOp event" % len(stray))
  for b in bad[:10]: print(b)
  return "files %d tasks %d proxyops %d proxysteps %d bad %d" % (pids, ntasks, nops, nsteps, len(bad))

for arg in sys.argv[1:]:          # NAME:HOSTS:steps|nosteps, one summary line each, last
    name, hosts, mode = arg.split(":")
    NODES = int(hosts)
    line = summary(sys.argv[0].rsplit("/", 1)[0] + "/" + name, mode)
    print("%s %s" % (name, line))
EOF
python3 "$T/check.py" net5:2:steps simple5:2:steps net4:2:steps one5:1:steps opsonly:2:nosteps cap2:2:steps >"$T/sum" 2>&1
# chk NAME: the summary line check.py printed for NAME ("files F tasks T proxyops O proxysteps S bad B")
chk() { sed -n "s/^$1 //p" "$T/sum"; }
field() { sed -n 's/.*\<'"$1"' \([0-9]*\).*/\1/p' <<<"$2" | head -1; }

for r in net5 simple5 net4 cap2; do
  s=$(chk $r)
  [ "$(field bad "$s")" = 0 ] || grep -v -E '^[a-z0-9]+ files ' "$T/sum" | sed 's/^/    /' | head -10
  check_eq "$r (2 hosts): every task's ProxyOps = NCCL's arithmetic, steps 0..nSteps-1 with NCCL's states, pid, after the kernel's device start" \
    0 "$(field bad "$s")"
  check "$r: (control) 4 processes logged, with ProxyOps and ProxySteps ($s)" \
    test "$(field files "$s")" = 4 -a "$(field proxyops "$s")" -gt 0 -a "$(field proxysteps "$s")" -gt 0
done
check_eq "v4 plugin (NCCL's v4 adapter): the same tasks, ProxyOps and ProxySteps as v5" \
  "$(chk net5)" "$(chk net4)"
s=$(chk one5)
check_eq "one host (NVLink only): no ProxyOp or ProxyStep event" "0 0 0" \
  "$(field proxyops "$s") $(field proxysteps "$s") $(field bad "$s")"
check "one host: (control) the tasks were seen ($s)" test "$(field tasks "$s")" -gt 0
s=$(chk opsonly)
check_eq "mask ProxyOp without ProxyStep: ProxyOps as NCCL's arithmetic, no ProxyStep" "0 0" \
  "$(field proxysteps "$s") $(field bad "$s")"
check "mask ProxyOp: (control) ProxyOps came ($s)" test "$(field proxyops "$s")" -gt 0
check_eq "mask without ProxyOp/ProxyStep (Coll, P2p, KernelCh, as the Inspector asks): no proxy event" \
  0 "$(cat "$T"/noproxy/ev.* | awk '$1 == "S" && ($3 == 8 || $3 == 16)' | wc -l)"

# the NCCL Inspector (unmodified, as test_inspector.sh builds it) on the 2-host job: it asks for
# Coll, P2p and KernelCh only, so no proxy event reaches it; it must still write its files (one
# per rank process, with the job's collectives)
SRC=${NCCL_INSPECTOR_SRC:-$ROOT/../shared/nccl-inspector}
if [ ! -f "$DOUBLES/libcuda.so.1" ]; then
  skip "proxy events: Inspector: the CUDA driver double is not built"
elif ! LIB=$(bash "$ROOT/scripts/build-inspector.sh" "$SRC" "$BUILD/inspector" 2>"$T/insp-build.err"); then
  skip "proxy events: Inspector not built: $(head -1 "$T/insp-build.err")"
else
  mkdir -p "$T/insp"   # made before the ranks start: the Inspector's stat-then-mkdir races (test_inspector.sh)
  NCCL_PROFILER_PLUGIN="$LIB" NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000 \
    NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=1 NCCL_INSPECTOR_DUMP_DIR="$T/insp" LAUNCH_NODES=2 \
    san_noleak bash "$L" 4 "$J" --steps 1 --compute-us 100 --linger-ms 3000 >"$T/insp.out" 2>"$T/insp.err"
  check "the NCCL Inspector on 2 hosts: ddp_job succeeds" grep -q "all results correct" "$T/insp.out"
  check_eq "the NCCL Inspector on 2 hosts: one file per rank process" 4 "$(ls "$T"/insp/*-pid*.log 2>/dev/null | wc -l)"
  check "the NCCL Inspector on 2 hosts: its files hold AllReduce records" \
    eval 'test "$(cat "$T"/insp/*-pid*.log | grep -c AllReduce)" -gt 0'
fi
