# shm_leftovers.sh — sourced by tests/lib.sh and tests/run.sh: what the tests' own processes
# left on the host's /dev/shm. A process that ends without its exit handlers (_exit, kill -9,
# a fork child that calls NCCL) leaves its rings file there (docs/SHIM.md "The rings file");
# a test directory deleted afterwards leaves nothing that would ever give it back, and each
# holds memory (up to 18 MiB), so the tests give back their own.
#
# shm_leftovers DIR SINCE [WAIT]: prints the paths of this user's rings files on /dev/shm
# modified since SINCE (seconds since the epoch) whose process is gone (or a zombie) and whose
# trace (the path in the file's header, docs/FORMAT.md "Rings file": bytes 104-1127,
# NUL-terminated) lies under DIR. WAIT (seconds, default 0): how long to wait for the processes
# of such files that are still there (a kill -9 of a job's process group returns before every
# member has died; a test's exit must not race their teardown). One find, and one python3 when
# it found any, whatever the number of files.
shm_leftovers() {
  local c
  c=$(find /dev/shm -maxdepth 1 -name "ncclscope-$EUID-*.rings" -newermt "@$2" 2>/dev/null)
  [ -n "$c" ] || return 0
  printf '%s\n' "$c" | python3 -c '
import os, sys, time
under = sys.argv[1].rstrip("/") + "/"
deadline = time.monotonic() + float(sys.argv[2])
def gone(pid):
    try:
        with open("/proc/" + pid + "/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
for path in sys.stdin.read().split("\n"):
    pid = path.rsplit("/", 1)[-1].split("-")[2] if path.count("-") >= 3 else ""
    if not pid.isdigit():
        continue
    try:
        with open(path, "rb") as f:
            trace = f.read(1128)[104:].split(b"\0", 1)[0]
    except OSError:
        continue
    if not trace.decode("utf-8", "replace").startswith(under):
        continue
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if gone(pid):
        print(path)
' "$1" "${3:-0}"
}
# nd_tag DIR: the tag the NCCL double puts first in its segment names (/dev/shm/ncclD.<tag>.*)
# when its process runs with TMPDIR=DIR: FNV-1a 64 of DIR's bytes, 16 hex digits; all zeros for
# an empty DIR (tests/doubles/nccl/nd_internal.h nd_name_tag).
nd_tag() {
  local LC_ALL=C s=$1 h=0 i c
  if [ -n "$s" ]; then
    h=$((0xcbf29ce484222325))
    for ((i = 0; i < ${#s}; i++)); do printf -v c '%d' "'${s:i:1}"; h=$(((h ^ (c & 255)) * 0x100000001b3)); done
  fi
  printf '%016x\n' "$h"
}
# shm_segments SINCE DIR: prints the NCCL double's segments (tests/doubles/nccl/nd_shm.c) made
# by processes that ran with TMPDIR=DIR (their name's tag: nd_tag), modified since SINCE, that no
# live process has mapped: a rank killed while it waited for its peers (a scenario of test_hang)
# leaves the name, which only the last rank to join removes. tests/run.sh gives every test a
# TMPDIR of its own, so another test's segments (the one beside it, another clone's suite, another
# user's) are never taken for this one's. Read from every process's maps, only when there is
# such a segment at all. A segment modified in the last second may be one a live job has just
# made and not yet mapped (shm_open, ftruncate, mmap): then the maps are read again a second
# later, and only what is still there and unmapped counts.
shm_segments() {
  local c
  c=$(find /dev/shm -maxdepth 1 -name "ncclD.$(nd_tag "$2").*" -newermt "@$1" 2>/dev/null | sort)
  [ -n "$c" ] || return 0
  c=$(comm -23 <(printf '%s\n' "$c") <(cat /proc/[0-9]*/maps 2>/dev/null | grep -o '/dev/shm/ncclD\.[^ ]*' | sort -u))
  [ -n "$c" ] || return 0
  if printf '%s\n' "$c" | xargs -d '\n' -r stat -c %Y 2>/dev/null | awk -v t=$((EPOCHSECONDS - 1)) '$1 >= t {y = 1} END {exit !y}'; then
    sleep 1
    c=$(printf '%s\n' "$c" | xargs -d '\n' -r ls -d 2>/dev/null | sort)
    [ -n "$c" ] || return 0
    c=$(comm -23 <(printf '%s\n' "$c") <(cat /proc/[0-9]*/maps 2>/dev/null | grep -o '/dev/shm/ncclD\.[^ ]*' | sort -u))
  fi
  [ -n "$c" ] && printf '%s\n' "$c"
  return 0
}
# shm_give_back DIR SINCE TMP: deletes what shm_leftovers DIR SINCE 10 and shm_segments SINCE TMP
# print (the test is over: nothing will read those files through links that are about to be
# deleted, nor join those segments).
shm_give_back() { { shm_leftovers "$1" "$2" 10; shm_segments "$2" "$3"; } | while IFS= read -r f; do rm -f "$f"; done; }
