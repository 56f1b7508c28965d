#!/usr/bin/env bash
# bench-ringfaults.sh [DIR] [ROUNDS] — what a ring's pages cost the thread that writes them
# (issue 30 item 1; BENCHMARKS.md "The calling thread's page faults"), outside the shim:
#   first-touch  one thread writes one byte per page of a 12 MiB shared mapping (a ring's size):
#                a file in DIR (default: /tmp), a file in /dev/shm, anonymous memory; then, for
#                the files, fdatasync (a writeback) and the same pass again; CPU and page faults
#                of the writing thread. `populate`: the same passes done by MADV_POPULATE_WRITE.
#   race         a thread writing 96-byte slots round the mapping at 1 M/s for 6 s, a second
#                thread populating ahead of it (2 MiB) every 1 ms or not at all, a third forcing
#                a writeback (fdatasync) every 1 s: the writing thread's page faults.
#   shim         (RF_SHIMS set: "NAME=path/to/libncclscope.so ...") the shim itself: one
#                thread at 1 M calls/s for RF_SECS (45) seconds (tests/jobs/rate_job on a stub
#                NCCL that returns at once, host timing, call sites off, the trace in DIR), each
#                shim in turn: the calling thread's page faults in all (rate_job's count), and
#                those taken between RF_WARM (10) seconds and 1 s before the end (the job's
#                threads' minflt, /proc/PID/task/*/stat, read at both moments: the faults that
#                recur once the first pass is over), per minute. RF_JOB: rate_job (default
#                build/tests/rate_job). The kernel's dirty_expire and dirty_writeback are
#                printed with it. Only this part runs when RF_SHIMS is set.
# Figures only; needs a C compiler. ROUNDS (3) repeats first-touch.
set -u
DIR=${1:-/tmp}
ROUNDS=${2:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/ncs-rf.XXXXXX")
trap 'rm -rf "$W"' EXIT
if [ -n "${RF_SHIMS:-}" ]; then
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  JOB=${RF_JOB:-$ROOT/build/tests/rate_job} SECS=${RF_SECS:-45} WARM=${RF_WARM:-10}
  mkdir -p "$W/stub"
  cc -O2 -shared -fPIC -I"$ROOT/include" -o "$W/stub/libnccl.so.2" "$ROOT/tests/faults/stub_nccl.c" || exit 2
  echo "bench-ringfaults shim: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ);" \
    "trace in $DIR ($(stat -f -c %T "$DIR")); dirty_expire $(cat /proc/sys/vm/dirty_expire_centisecs)0 ms," \
    "dirty_writeback $(cat /proc/sys/vm/dirty_writeback_centisecs)0 ms; 1 thread at 1 M calls/s"
  minflt() { # PID: "tid minflt" of each of the process's threads named like the job (not the shim's)
    local t
    for t in /proc/"$1"/task/*; do
      [ "$(cat "$t/comm" 2>/dev/null)" = rate_job ] && echo "${t##*/} $(awk '{print $10}' "$t/stat" 2>/dev/null)"
    done
  }
  for s in $RF_SHIMS; do
    name=${s%%=*} so=${s#*=}
    d=$(mktemp -d "$DIR/ncs-rf-shim.XXXXXX")
    LD_LIBRARY_PATH="$W/stub" NCCLSCOPE_DIR="$d" NCCLSCOPE_GPU_TIMING=0 NCCLSCOPE_CALLSITE_DEPTH=0 LD_PRELOAD="$so" \
      "$JOB" -n "$((SECS * 1000000))" -r 1000000 >"$d.out" &
    pid=$!
    sleep "$WARM"
    minflt "$pid" >"$d.a"
    sleep "$((SECS - WARM - 1))"
    minflt "$pid" >"$d.b"
    wait "$pid"
    # per thread alive at both moments: the faults between them
    r=$(awk 'NR == FNR {a[$1] = $2; next} ($1 in a) && $2 != "" {s += $2 - a[$1]} END {print s + 0}' "$d.a" "$d.b")
    all=$(sed -n 's/.*caller_faults=\([0-9]*\).*/\1/p' "$d.out")
    awk -v n="$name" -v all="$all" -v r="$r" -v secs="$SECS" -v w="$WARM" 'BEGIN {
      printf "%-8s %ds: %d faults on the calling thread (%.0f a minute); from %ds to %ds: %d (%.0f a minute)\n",
             n, secs, all, all * 60 / secs, w, secs - 1, r, r * 60 / (secs - 1 - w) }'
    rm -rf "$d" "$d.out" "$d.a" "$d.b"
  done
  exit 0
fi
cat >"$W/ft.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#define SZ (12u<<20)
static double cpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static long flt(void){struct rusage r;getrusage(RUSAGE_THREAD,&r);return r.ru_minflt;}
static void touch(char*p){for(size_t o=0;o<SZ;o+=4096)p[o]=1;}
int main(int c,char**v){ int anon=!strcmp(v[1],"anon"); int pop=atoi(v[2]); int fd=-1;
  if(!anon){fd=open(v[1],O_RDWR|O_CREAT|O_TRUNC,0600); posix_fallocate(fd,0,SZ);}
  char*p=anon?mmap(0,SZ,3,MAP_PRIVATE|MAP_ANONYMOUS,-1,0):mmap(0,SZ,3,MAP_SHARED,fd,0); madvise(p,SZ,MADV_RANDOM);
  double c0=cpu(); long f0=flt();
  if(pop) madvise(p,SZ,MADV_POPULATE_WRITE); else touch(p);
  double c1=cpu(); long f1=flt();
  double c2=0,c3=0; long f2=0,f3=0;
  if(!anon){ fdatasync(fd); c2=cpu(); f2=flt(); if(pop) madvise(p,SZ,MADV_POPULATE_WRITE); else touch(p); c3=cpu(); f3=flt(); }
  double c4=cpu(); madvise(p,SZ,MADV_POPULATE_WRITE); double c5=cpu();
  printf("%-22s %s first pass %.2f ms (%ld faults, %.2f us/page); after fdatasync %.2f ms (%ld faults); populate of present pages %.3f ms\n",v[1],pop?"populate":"touch   ",(c1-c0)*1e3,f1-f0,(c1-c0)*1e6/3072,(c3-c2)*1e3,f3-f2,(c5-c4)*1e3);
  if(!anon) unlink(v[1]); return 0;}
C
cat >"$W/rf.c" <<'C'
/* ring page-fault microbenchmark: producer writes 96-byte slots into a 12 MiB shared mapping
 * at RATE calls/s; a "writer" thread advances tail and optionally MADV_POPULATE_WRITEs ahead of
 * head; a third thread forces writeback (fdatasync) every SYNC_MS. Reports producer minor faults. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#define SLOTS 131072
#define SZ ((size_t)SLOTS * 96)
static char *ring; static int fd; static _Atomic long head, stop_; static long ahead; static long rate; static int sync_ms;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static long prod_faults; static double prod_cpu;
static void *producer(void*a){ long h=0; double t0=now();
  while(!atomic_load(&stop_)){ double due=t0+(double)h/rate; while(now()<due); 
    memset(ring+(h%SLOTS)*96,(int)h,96); atomic_store_explicit(&head,++h,memory_order_release);}
  struct rusage ru; getrusage(RUSAGE_THREAD,&ru); prod_faults=ru.ru_minflt+ru.ru_majflt; prod_cpu=ru.ru_utime.tv_sec+ru.ru_stime.tv_sec+(ru.ru_utime.tv_usec+ru.ru_stime.tv_usec)*1e-6; return 0;}
static long wr_faults; static double wr_cpu;
static void *writer(void*a){ long done=0; /* populated up to slot index `done` (absolute) */
  while(!atomic_load(&stop_)){ long h=atomic_load(&head); long want=h+ahead;
    if(ahead && want>done){ long ps=4096; long from=done*96/ps*ps, to=(want*96+ps-1)/ps*ps; if(to-from>(long)SZ) from=to-SZ;
      for(long o=from;o<to;){ long ro=o%SZ; long n=to-o; if(n>(long)SZ-ro) n=SZ-ro; madvise(ring+ro,n,MADV_POPULATE_WRITE); o+=n; }
      done=want; }
    usleep(1000);}
  struct rusage ru; getrusage(RUSAGE_THREAD,&ru); wr_faults=ru.ru_minflt; wr_cpu=ru.ru_utime.tv_sec+ru.ru_stime.tv_sec+(ru.ru_utime.tv_usec+ru.ru_stime.tv_usec)*1e-6; return 0;}
static void *syncer(void*a){ while(!atomic_load(&stop_)){ usleep(sync_ms*1000); fdatasync(fd);} return 0;}
int main(int c,char**v){ const char*path=v[1]; rate=atol(v[2]); ahead=atol(v[3]); sync_ms=atoi(v[4]); double secs=atof(v[5]);
  fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0600); if(posix_fallocate(fd,0,SZ)){perror("falloc");return 1;}
  ring=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); madvise(ring,SZ,MADV_RANDOM);
  pthread_t p,w,s; pthread_create(&p,0,producer,0); pthread_create(&w,0,writer,0); if(sync_ms) pthread_create(&s,0,syncer,0);
  usleep(secs*1e6); atomic_store(&stop_,1); pthread_join(p,0); pthread_join(w,0); if(sync_ms) pthread_join(s,0);
  printf("%s rate=%ld ahead=%ld sync_ms=%d secs=%.0f calls=%ld producer_faults=%ld (%.0f/min) producer_cpu=%.2fs writer_faults=%ld writer_cpu=%.3fs\n",path,rate,ahead,sync_ms,secs,atomic_load(&head),prod_faults,prod_faults*60/secs,prod_cpu,wr_faults,wr_cpu);
  unlink(path); return 0;}
C
cc -O2 -o "$W/ft" "$W/ft.c" && cc -O2 -pthread -o "$W/rf" "$W/rf.c" || { echo "bench-ringfaults: does not build" >&2; exit 2; }
echo "bench-ringfaults: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ); $DIR is $(stat -f -c %T "$DIR")"
for ((r = 1; r <= ROUNDS; r++)); do
  for f in "$DIR/ncs-rf-$$.test" "/dev/shm/ncs-rf-$$.test" anon; do "$W/ft" "$f" 0; "$W/ft" "$f" 1; done
done
for f in "$DIR/ncs-rf-$$.race" "/dev/shm/ncs-rf-$$.race"; do
  for ahead in 0 21845; do "$W/rf" "$f" 1000000 "$ahead" 1000 6; done
done
