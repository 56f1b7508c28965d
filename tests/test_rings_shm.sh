#!/usr/bin/env bash
# test_rings_shm.sh — where the rings file lives (shim/rings.c, docs/SHIM.md "Buffering"):
#   - with a roomy tmpfs on /dev/shm, the file is there and `<trace>.rings` is a link to it,
#     named from numbers only; a kill -9 then loses nothing (the decoder reads through the
#     link); the file is mode 0600;
#   - with a small /dev/shm (a private 64 MiB tmpfs in a new mount namespace, a container's
#     default size), the file is `<trace>.rings` itself, and a kill -9 still loses nothing;
#   - a killed process's file on /dev/shm is given back by the next traced process (one that
#     records for 10 s; in a /dev/shm of the test's own where a mount namespace can be had): copied
#     over the link next to its trace, removed from /dev/shm, still read by the decoder;
#     a clean exit leaves neither the link nor the file; a link whose file is not on this host
#     is reported as such by the decoder.
# The truth: the job's own count of returned calls (it says "done" after its last call).
source "$(dirname "$0")/lib.sh"
JOB=$BUILD/tests/rate_job
for f in "$SHIM" "$NCS" "$JOB"; do [ -e "$f" ] || { fail "rings_shm: $f not built"; exit 0; }; done

# killed DIR CALLS [WRAP]: the job makes CALLS, says "done", is killed -9 (WRAP: a command
# prefix, e.g. a new mount namespace); prints the trace's path
killed() {
  local d=$1 n=$2 i
  shift 2
  mkdir -p "$d"
  "$@" env NCCLSCOPE_DIR="$d/tr" NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n "$n" -p >"$d/out" 2>&1 &
  local pid=$!
  for ((i = 0; i < 300; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
  # the job's own process (under unshare it is a child of the wrapper)
  local victim
  victim=$(pgrep -g 0 -f "^$JOB -n $n -p" | head -1) # of this test's process group (tests run side by side)
  kill -9 "${victim:-$pid}" 2>/dev/null
  wait "$pid" 2>/dev/null
  ls "$d"/tr/*.ncs 2>/dev/null | head -1
}

# Where it can, the first part runs in a private mount namespace with a /dev/shm of its own
# (8 GiB tmpfs, empty): other processes' leftovers on the host's /dev/shm (earlier tests kill
# and _exit traced processes) would make the next process's giving back take longer than the
# test waits. IN: the prefix that runs a command there (empty: the host's /dev/shm).
private_shm 8g 600
calls() { $IN "$NCS" dump "$1" 2>/dev/null | awk -v op="$2" '$1 == "CALL" && $0 ~ ("op=" op " ") {n++} END {print n + 0}'; }

shm_ok=1
if [ "$($IN stat -f -c %T /dev/shm 2>/dev/null)" != tmpfs ]; then shm_ok=0; why="/dev/shm is not a tmpfs here"
elif [ "$($IN df -k --output=avail /dev/shm | tail -1)" -lt $((4 << 20)) ]; then shm_ok=0; why="/dev/shm has under 4 GiB free here (the shim leaves it alone)"
fi

if [ $shm_ok = 1 ]; then
  f=$(killed "$T/shm" 3000 $IN)
  to=$(readlink "$f.rings" 2>/dev/null)
  case "$to" in
    /dev/shm/ncclscope-"$(id -u)"-[0-9]*-[0-9a-f]*.rings) pass "rings_shm: <trace>.rings links to /dev/shm (${to##*/})" ;;
    *) fail "rings_shm: <trace>.rings is not a link to /dev/shm: [$to] $(ls -l "$f.rings" 2>&1)" ;;
  esac
  check_eq "rings_shm: the file on /dev/shm is mode 0600" 600 "$($IN stat -c %a "$to" 2>/dev/null)"
  check_eq "rings_shm: kill -9 through the link: every returned call" 3000 "$(calls "$f" AllReduce)"

  # the next traced process that records for 10 s gives the dead one's file back (copied over
  # the link, removed); it runs 13 s. Beside it, files of a process killed before it wrote the
  # header (empty, or zeros): nothing to read, deleted; the same of a live process: left.
  deadpid=$($IN sh -c 'echo $$'); u=$(id -u)
  $IN sh -c "truncate -s 0 /dev/shm/ncclscope-$u-$deadpid-00000000000000e0.rings; truncate -s 65536 /dev/shm/ncclscope-$u-$deadpid-00000000000000e1.rings; truncate -s 65536 /dev/shm/ncclscope-$u-$$-00000000000000e2.rings"
  d=$T/next
  mkdir -p "$d"
  $IN env NCCLSCOPE_DIR=$d/tr NCCLSCOPE_FLUSH_MS=50 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 100 -i 12000 >"$d/out" 2>&1 &
  pid=$!
  for ((i = 0; i < 250; i++)); do [ -L "$f.rings" ] || break; sleep 0.1; done
  wait "$pid"
  if [ -L "$f.rings" ]; then
    fail "rings_shm: the next process did not give the dead one's file back: $(ls -l "$f.rings")"
  else
    [ -f "$f.rings" ] && pass "rings_shm: the next traced process copied the dead one's file next to its trace" \
      || fail "rings_shm: nothing left next to the trace: $(ls -l "$(dirname "$f")")"
    $IN test -e "$to" && fail "rings_shm: $to still on /dev/shm" || pass "rings_shm: and removed it from /dev/shm"
    check_eq "rings_shm: the copy still gives every returned call" 3000 "$(calls "$f" AllReduce)"
  fi
  check_eq "rings_shm: a dead process's files without a header (empty, zeros) deleted, a live one's left" "gone gone there" \
    "$(for x in "$deadpid-00000000000000e0" "$deadpid-00000000000000e1" "$$-00000000000000e2"; do $IN test -e "/dev/shm/ncclscope-$u-$x.rings" && echo -n "there " || echo -n "gone "; done | sed 's/ $//')"
  $IN rm -f "/dev/shm/ncclscope-$u-$$-00000000000000e2.rings"
  # a link whose file is not on this host (read elsewhere, after a reboot): the report says so
  mkdir -p "$T/dangle"
  cp "$f" "$T/dangle/x.ncs"
  ln -s "/dev/shm/ncclscope-$(id -u)-1-0000000000000000.rings" "$T/dangle/x.ncs.rings"
  "$NCS" report "$T/dangle/x.ncs" >"$T/dangle/rep" 2>&1
  grep -q "x.ncs.rings links to /dev/shm/ncclscope-$(id -u)-1-0000000000000000.rings, which is not here" "$T/dangle/rep" \
    && pass "rings_shm: a link to a file that is not here: the report says so" \
    || fail "rings_shm: a dangling link: $(grep -i -m2 'cut\|rings' "$T/dangle/rep")"
  nf=$(ls "$d"/tr/*.ncs 2>/dev/null | head -1)
  check_eq "rings_shm: a clean exit leaves no link" 0 "$(ls "$d/tr" | grep -c '\.rings$')"
  check_eq "rings_shm: and no file of its own on /dev/shm" "" "$($IN ls /dev/shm | grep "^ncclscope-$(id -u)-$pid-")"
  check_eq "rings_shm: the next process's own calls" 100 "$(calls "$nf" AllReduce)"
else
  skip "rings_shm: rings on /dev/shm: $why"
fi
[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
IN=

# a container's /dev/shm (64 MiB): left to the job, the rings file sits next to the trace
if unshare --mount --propagation private true 2>/dev/null; then
  f=$(killed "$T/small" 3000 unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"' sh)
  if [ -n "$f" ] && [ -f "$f.rings" ] && [ ! -L "$f.rings" ]; then
    pass "rings_shm: a 64 MiB /dev/shm is left alone: <trace>.rings is the file itself"
  else
    fail "rings_shm: with a 64 MiB /dev/shm: $(ls -l "$T/small/tr" 2>&1 | tr '\n' ' ')"
  fi
  check_eq "rings_shm: and a kill -9 still loses nothing" 3000 "$(calls "$f" AllReduce)"
else
  skip "rings_shm: a small /dev/shm: no private mount namespace here (unshare --mount refused)"
fi

