#!/usr/bin/env bash
# test_logcap.sh — shim/logcap.c: NCCL's debug log captured into the trace while the user sees
# exactly what they would have seen without the shim, in the same place. Runs ddp_job on the
# NCCL/NVML doubles (tests/doubles/topos/nvswitch-8x-h100-nv18.txt) with and without the shim
# for each NCCL_DEBUG setting and compares NCCL's lines (pid/tid/pointers normalised).
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
L=$ROOT/tests/jobs/launch.sh
# a copy: the NCCL_DEBUG_FILE=/proc/self/fd/N runs at the end make NCCL write its log into whatever
# file N is at that moment, and the NVML double opening the topology is one of them (it happened:
# the tracked file was overwritten with a rank's log)
TOPO=$T/nvswitch-8x-h100-nv18.txt
cp "$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt" "$TOPO"
export LD_LIBRARY_PATH=$DOUBLES${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NVMLDOUBLE_TOPO=$TOPO
if [ ! -x "$J" ] || [ ! -f "$SHIM" ]; then skip "logcap: ddp_job or shim not built"; exit 0; fi
norm() { sed -E 's/^[^ ]+:[0-9]+:[0-9]+ /H:P:T /; s/0x[0-9a-f]+/0xX/g; s/^\[[0-9: -]+\] //' | sort; }

run_pair() { # NAME ENV...: stdout+stderr with and without the shim
  local name=$1; shift
  env "$@" bash "$L" 2 "$J" --steps 1 >"$T/$name.plain" 2>&1
  env "$@" NCCLSCOPE_DIR="$T/tr-$name" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 1 >"$T/$name.shim" 2>&1
}

run_pair unset
check_eq "NCCL_DEBUG unset: output identical with the shim (no NCCL line appears)" \
  "$(norm <"$T/unset.plain")" "$(norm <"$T/unset.shim")"
check_eq "NCCL_DEBUG unset: no NCCL line at all" 0 "$(grep -c 'NCCL' "$T/unset.shim")"
for setting in "NCCL_DEBUG=INFO" "NCCL_DEBUG=WARN" "NCCL_DEBUG=VERSION" "NCCL_DEBUG=TRACE" \
               "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL" "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=^INIT" \
               "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=P2P,COLL"; do
  name=$(echo "$setting" | tr -c 'A-Za-z0-9\n' '_')
  # shellcheck disable=SC2086
  run_pair "$name" $setting
  a=$(grep 'NCCL' "$T/$name.plain" | norm); b=$(grep 'NCCL' "$T/$name.shim" | norm)
  if [ -n "$a" ] || [ "$setting" = "NCCL_DEBUG=WARN" ]; then
    check_eq "$setting: the user's NCCL lines are exactly those without the shim ($(printf '%s\n' "$a" | grep -c .) lines)" "$a" "$b"
  else
    fail "$setting: the run without the shim printed no NCCL line (test setup)"
  fi
done

# NCCL_DEBUG_FILE with %h and %p: same files, same content
mkdir -p "$T/f1" "$T/f2"
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/f1/nccl.%h.%p.log" bash "$L" 2 "$J" --steps 1 >"$T/file.plain" 2>&1
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/f2/nccl.%h.%p.log" NCCLSCOPE_DIR="$T/tr-file" LD_PRELOAD="$SHIM" \
  bash "$L" 2 "$J" --steps 1 >"$T/file.shim" 2>&1
check_eq "NCCL_DEBUG_FILE=%h.%p: one file per process, as without the shim" \
  "$(ls "$T/f1" | wc -l)" "$(ls "$T/f2" | wc -l)"
check "NCCL_DEBUG_FILE: file names carry host and pid" sh -c "ls '$T/f2' | grep -q \"^nccl\.$(hostname | cut -d. -f1)\.[0-9]*\.log$\""
check_eq "NCCL_DEBUG_FILE: the same lines in the files" "$(cat "$T"/f1/* | norm)" "$(cat "$T"/f2/* | norm)"
check_eq "NCCL_DEBUG_FILE: nothing on stdout in either run" "$(grep -c NCCL "$T/file.plain")" "$(grep -c NCCL "$T/file.shim")"

# The file's name as NCCL 2.28 makes it (src/debug.cc, ncclDebugInit): %% is '%', an unknown %q
# stays, %h is the host name up to its first '.' with '%' and '/' made '-'; and no file at all
# at VERSION (NCCL prints its banner on stdout then). The shim opens exactly what NCCL alone
# would have, so plain and shim runs make the same files with the same lines.
# name_runs TAG PREFIX...: one rank with NCCL_DEBUG_FILE=$T/TAG-{plain,shim}/n.%%.%q.%h.%p.log,
# each run's command prefixed by PREFIX (env settings, an unshare)
name_runs() {
  local tag=$1 m pre; shift
  for m in plain shim; do
    mkdir -p "$T/$tag-$m"
    pre=; [ $m = shim ] && pre=$SHIM
    "$@" env NCCL_DEBUG_FILE="$T/$tag-$m/n.%%.%q.%h.%p.log" NCCLSCOPE_DIR="$T/tr-$tag" LD_PRELOAD="$pre" \
      "$J" --steps 1 >"$T/$tag-$m.out" 2>&1
    echo "rc=$?" >>"$T/$tag-$m.out"
  done
}
names() { ls "$1" | sed -E 's/\.[0-9]+\.log$/.PID.log/'; }
host=$(hostname | cut -d. -f1 | tr '%/' '--')
for lvl in INFO WARN VERSION; do
  name_runs "name-$lvl" env NCCL_DEBUG=$lvl
  want="n.%.%q.$host.PID.log"; [ $lvl = VERSION ] && want=
  check_eq "NCCL_DEBUG=$lvl NCCL_DEBUG_FILE=n.%%.%q.%h.%p.log: the file NCCL alone makes ($([ -n "$want" ] && echo "$want" || echo none)), with the shim too" \
    "$want|$want" "$(names "$T/name-$lvl-plain")|$(names "$T/name-$lvl-shim")"
  check_eq "NCCL_DEBUG=$lvl with a file: the same output and lines, with and without the shim" \
    "$(norm <"$T/name-$lvl-plain.out"; cat "$T/name-$lvl-plain"/* 2>/dev/null | norm)" \
    "$(norm <"$T/name-$lvl-shim.out"; cat "$T/name-$lvl-shim"/* 2>/dev/null | norm)"
done
check "NCCL_DEBUG=VERSION with a file: the banner on stdout" grep -q '^NCCL version' "$T/name-VERSION-shim.out"
# a hostile host name ('/' and '%' in it), set in a UTS namespace of the runs' own
cat >"$T/sethost.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) { /* sethost NAME CMD...: runs CMD with the host name NAME */
  if (argc < 3 || sethostname(argv[1], strlen(argv[1])) != 0) { perror("sethostname"); return 111; }
  execvp(argv[2], argv + 2);
  perror("execvp");
  return 112;
}
C
if ${CC:-cc} -o "$T/sethost" "$T/sethost.c" 2>/dev/null && unshare -u "$T/sethost" 'ev/il%p.node.x' true 2>/dev/null; then
  name_runs name-host unshare -u "$T/sethost" 'ev/il%p.node.x' env NCCL_DEBUG=INFO
  check_eq "host name 'ev/il%p.node.x': %h gives ev-il-p in the file name, with and without the shim" \
    "n.%.%q.ev-il-p.PID.log|n.%.%q.ev-il-p.PID.log" "$(names "$T/name-host-plain")|$(names "$T/name-host-shim")"
  check_eq "host name 'ev/il%p.node.x': the same output and lines, with and without the shim" \
    "$(norm <"$T/name-host-plain.out"; cat "$T/name-host-plain"/* 2>/dev/null | norm)" \
    "$(norm <"$T/name-host-shim.out"; cat "$T/name-host-shim"/* 2>/dev/null | norm)"
else
  skip "hostile host name: this machine does not let the test set a host name (unshare -u)"
fi

# what the trace holds, whatever the user asked
"$NCS" dump "$T/tr-unset" >"$T/dump-unset" 2>&1
check "trace with NCCL_DEBUG unset holds the connection lines (NCCL_LOG records)" grep -q 'NCCL_LOG.* via P2P/CUMEM' "$T/dump-unset"
check "trace holds the version and Init COMPLETE lines" sh -c "grep -q 'NCCL_LOG.*NCCL version 2.28.9' '$T/dump-unset' && grep -q 'NCCL_LOG.*Init COMPLETE' '$T/dump-unset'"
check "trace records the user's environment, not the shim's (no NCCL_DEBUG_FILE=/proc/...)" \
  sh -c "! grep -q 'env.NCCL_DEBUG_FILE' '$T/dump-unset' && ! grep -q 'env.NCCL_DEBUG=' '$T/dump-unset'"
"$NCS" nccl-log --json <(grep -o 'line=.*' "$T/dump-unset" | sed 's/^line=//') >"$T/nl.json" 2>&1
check "captured lines parse with nccl-log: 4 P2P connections (2 ranks x 2 channels)" grep -q '"P2P": 4' "$T/nl.json"

NCCLSCOPE_DIR="$T/tr-env" LD_PRELOAD="$SHIM" NCCL_DEBUG_SUBSYS=COLL bash "$L" 1 "$J" --steps 1 >/dev/null 2>&1
check "env of the traced process unchanged in its trace (NCCL_DEBUG_SUBSYS=COLL recorded)" \
  sh -c "\"$NCS\" dump '$T/tr-env' | grep -q 'env.NCCL_DEBUG_SUBSYS=COLL'"

# off switch
NCCLSCOPE_NCCL_LOG=0 NCCLSCOPE_DIR="$T/tr-off" LD_PRELOAD="$SHIM" bash "$L" 2 "$J" --steps 1 >/dev/null 2>&1
check_eq "NCCLSCOPE_NCCL_LOG=0: no NCCL_LOG record" 0 "$("$NCS" dump "$T/tr-off" 2>/dev/null | grep -c '^NCCL_LOG')"

# fork and exec (tests/jobs/fork_job: a forked child and an exec'ed child make their own
# communicators): every process's NCCL lines still reach the user exactly as without the shim,
# and the exec'ed image records its own lines
F=$BUILD/tests/fork_job
if tsan_fork_skip "logcap: fork_job"; then :
elif [ -x "$F" ]; then
  for setting in "NCCL_DEBUG=INFO" "NCCL_DEBUG=WARN" "NCCLSCOPE_X=1"; do
    # shellcheck disable=SC2086
    env $setting "$F" -n 4 >"$T/fork.plain" 2>&1; rc0=$?
    # shellcheck disable=SC2086
    env $setting NCCLSCOPE_DIR="$T/tr-fork-$rc0${setting%%=*}" LD_PRELOAD="$SHIM" "$F" -n 4 >"$T/fork.shim" 2>&1; rc1=$?
    check_eq "fork_job, $setting: exit status and NCCL lines of parent and children unchanged" \
      "$rc0 $(norm <"$T/fork.plain")" "$rc1 $(norm <"$T/fork.shim")"
  done
  check "fork_job: the exec'ed image's trace holds its own Init COMPLETE line" \
    sh -c "for f in '$T'/tr-fork-0NCCLSCOPE_X/*; do \"$NCS\" dump \"\$f\" 2>/dev/null | grep -q 'exec-child' && \"$NCS\" dump \"\$f\" 2>/dev/null | grep -q '^NCCL_LOG.*Init COMPLETE' && exit 0; done; exit 1"
else
  skip "fork_job not built"
fi

# NCCL's log reaches the shim through no descriptor at all (a stream of the shim's own, shim/envview.c):
# the process holds no pipe that both it and NCCL write (the old capture pipe, whose descriptors
# a job closing every descriptor could hand back, and a spawned child inherit). A tiny program
# lists its pipes read and written twice.
cat >"$T/nb.c" <<'C'
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *ncclComm_t;
int ncclGetUniqueId(ncclUniqueId *); int ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
int ncclCommDestroy(ncclComm_t);
int main(void) {
  ncclUniqueId id; ncclComm_t c;
  ncclGetUniqueId(&id);
  if (ncclCommInitRank(&c, 1, id, 0)) return 1;
  usleep(300000);
  /* per pipe inode: read ends, write ends, blocking write ends; the capture pipe is the one
   * this process both reads (the shim) and writes twice (the shim's end and NCCL's fopen) */
  unsigned long ino[64]; int r[64] = {0}, w[64] = {0}, b[64] = {0}, x[64] = {0}, np = 0;
  DIR *d = opendir("/proc/self/fd"); struct dirent *e;
  while ((e = readdir(d))) {
    char p[300], l[64]; snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(p, l, 63); if (n <= 0) continue; l[n] = 0;
    if (strncmp(l, "pipe:[", 6)) continue;
    unsigned long i = strtoul(l + 6, NULL, 10); int k = 0;
    while (k < np && ino[k] != i) k++;
    if (k == np) { if (np == 64) continue; ino[np++] = i; }
    int fd = atoi(e->d_name), fl = fcntl(fd, F_GETFL);
    if ((fl & O_ACCMODE) == O_RDONLY) r[k]++;
    else { w[k]++; if (!(fl & O_NONBLOCK)) b[k]++; if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) x[k]++; }
  }
  for (int k = 0; k < np; k++) if (r[k] && w[k] >= 2) printf("%d %d %d\n", w[k], b[k], x[k]);
  ncclCommDestroy(c);
  return 0;
}
C
if ${CC:-cc} -o "$T/nb" "$T/nb.c" -L"$DOUBLES" -l:libnccl.so.2 -Wl,-rpath,"$DOUBLES" 2>"$T/nb.err"; then
  out=$(NCCLSCOPE_DIR="$T/tr-nb" LD_PRELOAD="$SHIM$SAN_PRELOAD" "$T/nb" </dev/null 2>/dev/null | tail -1)
  check_eq "no capture pipe: NCCL logs into the shim through no descriptor" "" "$out"
else
  fail "non-blocking check: test program did not build: $(head -3 "$T/nb.err")"
fi

# A destination that would block NCCL itself (a FIFO whose buffer is full and that nobody reads,
# a FIFO nobody has opened for reading) blocks only the shim's forwarder thread: the job ends
# promptly with its own exit status and output, and its trace is complete (FINAL chunk) with the
# NCCL lines recorded up to the end. (Without the shim such a job would hang in NCCL's own
# fwrite/fopen, so the reference run writes NCCL_DEBUG_FILE to a regular file.)
# "Promptly" is checked against a hang, not a duration: the shim's exit deadline is raised to
# 60 s and the job gets 40 s; logcap gives up on a blocked destination after 1 s, so a job held
# until the exit deadline (the old code) is killed by the timeout, at any load. ms is a figure.
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/blk-ref.log" bash "$L" 2 "$J" --steps 1 >"$T/blk.plain" 2>&1; rc_ref=$?
mkfifo "$T/full" "$T/noreader"
exec 8<>"$T/full" # holds the FIFO open (reader and writer) without ever reading it
dd if=/dev/zero of="$T/full" bs=4096 count=64 oflag=nonblock 2>/dev/null # fill it up to EAGAIN
for dest in full noreader; do
  t0=$(ms_now)
  # logcap gives up on the destination after min(1 s, NCCLSCOPE_EXIT_MS / 3); a reader stuck in
  # the forwarding write (the old code) held the writer until the whole exit deadline
  NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/$dest" NCCLSCOPE_DIR="$T/tr-blk-$dest" LD_PRELOAD="$SHIM" NCCLSCOPE_EXIT_MS=60000 \
    timeout -k 2 40 bash "$L" 2 "$J" --steps 1 >"$T/blk-$dest.shim" 2>&1; rc=$?
  ms=$(( $(ms_now) - t0 ))
  check "NCCL_DEBUG_FILE=$dest FIFO: the job ends well before the shim's 60-s exit deadline (not killed at 40 s; took ${ms} ms)" \
    test "$rc" != 124 -a "$rc" != 137
  check_eq "NCCL_DEBUG_FILE=$dest FIFO: exit status and job output unchanged" \
    "$rc_ref $(grep -v NCCL "$T/blk.plain" | norm)" "$rc $(grep -v NCCL "$T/blk-$dest.shim" | norm)"
  n=0 nfinal=0 ninit=0
  for f in "$T/tr-blk-$dest"/*.ncs; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    "$NCS" dump "$f" >"$T/blk-dump" 2>&1
    grep -q '^-- chunk .* final$' "$T/blk-dump" && nfinal=$((nfinal + 1))
    grep -q '^NCCL_LOG.*Init COMPLETE' "$T/blk-dump" && ninit=$((ninit + 1))
  done
  check_eq "NCCL_DEBUG_FILE=$dest FIFO: 2 traces, each with a FINAL chunk and its Init COMPLETE line" "2 2 2" "$n $nfinal $ninit"
  check "NCCL_DEBUG_FILE=$dest FIFO: ncclscope report reads the traces (exit 0)" "$NCS" report "$T/tr-blk-$dest"
done
# NCCLSCOPE_DEBUG=1 says what the blocked destination did not get
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/full" NCCLSCOPE_DIR="$T/tr-blk-dbg" NCCLSCOPE_DEBUG=1 LD_PRELOAD="$SHIM" \
  timeout -k 2 20 "$J" --steps 1 >/dev/null 2>"$T/blk-dbg.err"
check "NCCL_DEBUG_FILE=full FIFO, NCCLSCOPE_DEBUG=1: the lines not forwarded are reported" \
  grep -q 'NCCL_DEBUG destination blocks: [1-9][0-9]* bytes of NCCL lines not forwarded' "$T/blk-dbg.err"
exec 8<&-

# A healthy but slow FIFO reader gets every line it would have got without the shim, and the
# trace still ends with a FINAL chunk holding the lines.
mkfifo "$T/slow"
slow_run() { # OUT ENV...: runs the job with NCCL_DEBUG_FILE=$T/slow read by a slow reader into OUT
  local out=$1; shift
  (sleep 0.3; cat "$T/slow" >"$out") &
  local rd=$!
  env NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$T/slow" "$@" bash "$L" 2 "$J" --steps 1 >/dev/null 2>&1
  local rc=$?
  wait "$rd"
  return $rc
}
slow_run "$T/slow.plain"; rc0=$?
slow_run "$T/slow.shim" NCCLSCOPE_DIR="$T/tr-slow" LD_PRELOAD="$SHIM"; rc1=$?
check_eq "slow FIFO reader: exit status and the NCCL lines it reads unchanged ($(grep -c NCCL "$T/slow.plain") lines)" \
  "$rc0 $(norm <"$T/slow.plain")" "$rc1 $(norm <"$T/slow.shim")"
check "slow FIFO reader: traces end with a FINAL chunk (ncclscope report exit 0)" "$NCS" report "$T/tr-slow"

# The shim's own values seen as the user's (NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=/proc/self/fd/N
# without NCCLSCOPE_SAVED_*: what a posix_spawn'ed child can inherit while its parent's reader
# restores the environment): when /proc/self/fd/N is the child's own capture pipe (or NCCL's
# descriptor of it), forwarding must not feed the lines back to the reader (the old code looped
# until the pipe was full, then blocked the reader in write() and lost the final chunk).
NCCLSCOPE_DIR="$T/tr-selfref" LD_PRELOAD="$SHIM" "$J" --steps 1 >/dev/null 2>&1
ref=$("$NCS" dump "$T/tr-selfref" 2>/dev/null | grep -c '^NCCL_LOG') # one rank, NCCL_DEBUG unset
ok=0 bad=""
for n in 3 4 5 6 7 8; do
  t0=$(ms_now)
  env -u NCCLSCOPE_SAVED_NCCL_DEBUG -u NCCLSCOPE_SAVED_NCCL_DEBUG_FILE NCCL_DEBUG=INFO NCCL_DEBUG_FILE=/proc/self/fd/$n \
    timeout -k 2 40 env NCCLSCOPE_DIR="$T/tr-self$n" NCCLSCOPE_EXIT_MS=60000 LD_PRELOAD="$SHIM" "$J" --steps 1 >"$T/self$n.out" 2>&1
  rc=$? ms=$(( $(ms_now) - t0 ))
  "$NCS" dump "$T/tr-self$n" >"$T/self$n.dump" 2>&1
  logs=$(grep -c '^NCCL_LOG' "$T/self$n.dump") final=$(grep -c '^-- chunk .* final$' "$T/self$n.dump")
  if [ "$rc" = 0 ] && [ "$final" = 1 ] && [ "$logs" = "$ref" ] && [ "$ref" -gt 0 ]; then ok=$((ok + 1))
  else bad="$bad fd$n(rc=$rc ${ms}ms final=$final logs=$logs)"; fi
done
check_eq "NCCL_DEBUG_FILE=/proc/self/fd/3..8 (the shim's own values): exit 0 before the 40-s timeout (exit deadline 60 s), FINAL chunk, each line recorded once ($ref lines)${bad:+:$bad}" 6 "$ok"
