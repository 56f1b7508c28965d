#!/usr/bin/env bash
# test_fault_dirs.sh — the trace directory missing, unwritable or symlinked: the job's stdout
# and exit code never change; a trace, when one can be written, is readable and where it
# should be. Tests run as root, so "unwritable" is made with a file where the directory should
# be, a directory under /proc, and (when mount is allowed) a read-only bind mount.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/faults/common.sh"
need_shim "fault dirs"; need_decoder "fault dirs"; need_double "fault dirs"
fault_build || { fail "fault dirs: test programs build"; exit 0; }

run_job "$T/base" -- "$FJOB" 5
# same NAME DIR: runs the job with NCCLSCOPE_DIR=DIR and checks output and exit code.
same() {
  run_job "$T/r" NCCLSCOPE_DIR="$2" LD_PRELOAD="$SHIM" -- "$FJOB" 5
  if [ "$(cat "$T/r.rc")" = "$(cat "$T/base.rc")" ] && cmp -s "$T/base.out" "$T/r.out"; then
    pass "fault dirs $1: job unchanged"
  else
    fail "fault dirs $1: job changed: exit $(cat "$T/r.rc"), $(diff "$T/base.out" "$T/r.out" | head -3 | tr '\n' ' ') $(head -c 200 "$T/r.err")"
  fi
}
# one_trace NAME DIR: exactly one readable trace in DIR.
one_trace() {
  local f=($(traces "$2"))
  if [ ${#f[@]} -ne 1 ]; then fail "fault dirs $1: ${#f[@]} traces in $2"; return; fi
  readable "${f[0]}" && pass "fault dirs $1: trace readable" || fail "fault dirs $1: $STATS"
}

# Missing, nested several levels: created, mode 0700 at each level the shim made.
same "missing nested dir" "$T/a/b/c"
one_trace "missing nested dir" "$T/a/b/c"
check_eq "fault dirs: created directory mode" 700 "$(stat -c %a "$T/a/b/c" 2>/dev/null)"
# Relative default (./ncclscope-trace) in a fresh working directory.
mkdir -p "$T/cwd"
(cd "$T/cwd" && env LD_PRELOAD="$SHIM" "$FJOB" 5 >"$T/cwd.out" 2>&1)
cmp -s "$T/base.out" "$T/cwd.out" && pass "fault dirs default dir: job unchanged" || fail "fault dirs default dir: job changed"
one_trace "default ./ncclscope-trace" "$T/cwd/ncclscope-trace"

# A regular file where the directory should be.
echo "not a directory" >"$T/file"
same "file in place of the directory" "$T/file"
check_eq "fault dirs: the file is untouched" "not a directory" "$(cat "$T/file")"
same "path through a file" "$T/file/sub"
# Unwritable even for root.
same "directory under /proc" "/proc/self/ncclscope-test"
same "empty NCCLSCOPE_DIR" ""
same "very long path" "$T/$(printf 'x%.0s' $(seq 1 300))/$(printf 'y%.0s' $(seq 1 300))"
# Over 511 bytes the shim records nothing: cut short, the path named another directory (an
# ancestor, or a directory of a cut name the shim created) and the trace went there.
mkdir -p "$T/long"
same "path of 512 bytes" "$T/long/$(printf 'x%.0s' $(seq 1 200))/$(printf 'y%.0s' $(seq 1 $((512 - ${#T} - 207))))"
check_eq "fault dirs path of 512 bytes: nothing recorded, no directory made" "0 0" \
  "$(find "$T/long" -mindepth 1 | wc -l) $(traces "$T/long" | wc -l)"
d=$T/fits
while [ $((${#d} + 101)) -le 511 ]; do d=$d/$(printf 'w%.0s' $(seq 1 100)); done
d=$d/$(printf 'v%.0s' $(seq 1 $((510 - ${#d}))))
same "path of exactly 511 bytes (${#d})" "$d"
one_trace "path of exactly 511 bytes" "$d"

# Symlinked directory: the link is a directory the user chose; the trace lands in its target.
mkdir -p "$T/real"
ln -s "$T/real" "$T/link"
same "symlinked directory" "$T/link"
one_trace "symlinked directory" "$T/real"
ln -s "$T/nowhere" "$T/dangling"
same "dangling symlink as directory" "$T/dangling"
[ ! -e "$T/nowhere" ] || [ -d "$T/nowhere" ] && pass "fault dirs dangling symlink: nothing but a directory made" \
  || fail "fault dirs dangling symlink: $T/nowhere is not a directory"

# Read-only bind mount (needs CAP_SYS_ADMIN; skipped where mount is not allowed).
mkdir -p "$T/ro"
if mount --bind "$T/ro" "$T/ro" 2>/dev/null && mount -o remount,bind,ro "$T/ro" 2>/dev/null; then
  same "read-only bind mount" "$T/ro"
  check_eq "fault dirs read-only mount: no trace" "" "$(traces "$T/ro")"
  umount "$T/ro"
else
  umount "$T/ro" 2>/dev/null
  skip "fault dirs read-only bind mount: mount not permitted here"
fi
