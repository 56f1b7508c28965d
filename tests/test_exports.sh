#!/usr/bin/env bash
# test_exports.sh — libncclscope.so exports only NCCL's entry points (nccl*), dlsym
# (shim/dlsym.c: ncclX looked up by handle reaches the wrappers), getenv and fopen
# (shim/envview.c: NCCL alone sees the shim's NCCL_DEBUG*), pipe2 (shim/callsite.c: libunwind's
# own pipe is moved to high descriptor numbers), the exec functions (shim/exec.c: an image's
# trace ends cleanly before it execs), and neither
# zstd (linked statically, hidden) nor libunwind (loaded privately at run time) shows in its
# dynamic symbol table, defined or imported.
. "$(dirname "$0")/lib.sh"
if ! command -v nm >/dev/null; then skip "exports: nm not installed"; exit 0; fi
[ -f "$SHIM" ] || { fail "exports: $SHIM missing"; exit 1; }
nm -D --defined-only "$SHIM" | awk 'NF >= 3 {print $3}' | sort >"$T/defined"
nm -D --undefined-only "$SHIM" | awk '{print $NF}' | sort >"$T/undefined"
bad=$(grep -v -e '^nccl' -e '^dlsym$' -e '^getenv$' -e '^fopen$' -e '^pipe2$' -e '^execve$' -e '^execv$' -e '^execvp$' -e '^execvpe$' -e '^execl$' -e '^execlp$' -e '^execle$' -e '^fexecve$' "$T/defined" | tr '\n' ' ')
check_eq "exports: every defined dynamic symbol starts with nccl, but dlsym, getenv, fopen, pipe2 and the 8 exec functions" "" "$bad"
check_eq "exports: the 8 exec functions" "execl execle execlp execv execve execvp execvpe fexecve" \
  "$(grep -E '^f?exec' "$T/defined" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "exports: dlsym is exported, unversioned (it stands in for every version of libc's)" "dlsym" \
  "$(nm -D --defined-only "$SHIM" | awk '$3 ~ /^dlsym/ {print $3}')"
pn=$(grep -c '^pnccl' "$T/defined")
check_eq "exports: no pnccl* exported (dlsym(RTLD_DEFAULT, pncclX) must reach NCCL)" "0" "$pn"
n=$(grep -v -c -e '^ncclProfiler_v[0-9]*$' -e '^dlsym$' -e '^getenv$' -e '^fopen$' -e '^pipe2$' -e '^execve$' -e '^execv$' -e '^execvp$' -e '^execvpe$' -e '^execl$' -e '^execlp$' -e '^execle$' -e '^fexecve$' "$T/defined")
check_eq "exports: the 43 entry points of NCCLSCOPE_PROTOTYPES are exported" "43" "$n"
check_eq "exports: and the profiler plugin interfaces (docs/PROFILER.md)" "ncclProfiler_v4 ncclProfiler_v5" \
  "$(grep '^ncclProfiler_v' "$T/defined" | tr '\n' ' ' | sed 's/ $//')"
z=$(grep -i -E 'zstd|^ZDICT|^HUF_|^FSE_' "$T/defined" "$T/undefined" | tr '\n' ' ')
check_eq "exports: no zstd symbol, defined or imported" "" "$z"
u=$(grep -E '^_?[Uu]nw|_Unwind_|^_U' "$T/defined" "$T/undefined" | tr '\n' ' ')
check_eq "exports: no libunwind/_Unwind symbol, defined or imported" "" "$u"
needed=$(readelf -d "$SHIM" 2>/dev/null | grep NEEDED | grep -i -E 'unwind|zstd|nccl|cuda' | tr '\n' ' ')
check_eq "exports: no DT_NEEDED on libunwind, libzstd, libnccl or CUDA" "" "$needed"

# pipe2 is exported only to move libunwind's pipe: every other caller must reach the next pipe2
# in the lookup order, so a tool preloaded after the shim that interposes pipe2 still sees the
# job's calls (and the job gets that tool's answer, as without the shim).
cat >"$T/spy.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
int spy_calls;
int pipe2(int fds[2], int flags) {
  spy_calls++;
  int (*next)(int[2], int) = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
  return next(fds, flags);
}
C
cat >"$T/pjob.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return 1;
  int cloexec = (fcntl(fds[1], F_GETFD) & FD_CLOEXEC) != 0;
  int *calls = (int *)dlsym(RTLD_DEFAULT, "spy_calls");
  printf("pipe %d %d cloexec %d spy %d\n", fds[0], fds[1], cloexec, calls ? *calls : -1);
  return 0;
}
C
if cc -shared -fPIC -o "$T/libspy.so" "$T/spy.c" 2>"$T/cc.err" && cc -o "$T/pjob" "$T/pjob.c" -ldl 2>>"$T/cc.err"; then
  plain=$(LD_PRELOAD="$T/libspy.so" "$T/pjob")
  shimmed=$(LD_PRELOAD="$SHIM $T/libspy.so" "$T/pjob")
  check_eq "exports: a pipe2 preloaded after the shim sees the job's call, same descriptors and flags" \
    "$plain" "$shimmed"
  check_eq "exports: (the spy itself counts the call without the shim)" "pipe 3 4 cloexec 1 spy 1" "$plain"
else
  fail "exports: pipe2 spy build: $(head -c 300 "$T/cc.err")"
fi
