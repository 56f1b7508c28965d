#!/usr/bin/env bash
# test_shm_leftovers.sh — the NCCL double's segments left on /dev/shm are told apart by the test
# that made them (tests/shm_leftovers.sh shm_segments, tests/doubles/nccl/nd_internal.h
# nd_name_tag): their names start with a tag of the TMPDIR their job ran with, and tests/run.sh
# gives every test a TMPDIR of its own. So two suites on one machine (two clones tested at once,
# two tests each) never count or delete each other's segments. Truths: FNV-1a 64's published
# values, the segment name the job itself published in its rendezvous file, the files on
# /dev/shm.
source "$(dirname "$0")/lib.sh"
J=$BUILD/tests/ddp_job
[ -x "$J" ] && [ -f "$DOUBLES/libnccl.so.2" ] || { fail "shm_leftovers: ddp_job or the NCCL double not built"; exit 0; }
made=()
trap 'rm -f "${made[@]}"; ncs_cleanup' EXIT

# nd_tag is FNV-1a 64 (published values: "a", "foobar"); no TMPDIR: all zeros
check_eq "shm_leftovers: nd_tag of 'a', 'foobar' and '' (FNV-1a 64)" \
  "af63dc4c8601ec8c 85944171f73967e8 0000000000000000" "$(nd_tag a) $(nd_tag foobar) $(nd_tag '')"

# a job's rank 0 waiting for a rank that never comes, killed -9: its segment stays on /dev/shm.
# Every segment here is dated an hour back at once, and looked for since two hours back: a suite
# whose shm_leftovers.sh predates the tags (another clone's, on a shared machine) deletes every
# unmapped segment modified since its test began, and would take these.
old=$((EPOCHSECONDS - 3600)) since=$((EPOCHSECONDS - 7200))
own=$T/own other=$T/other
mkdir -p "$own" "$other" "$T/rdzv"
TMPDIR=$own RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 NCCLDOUBLE_RDZV=$T/rdzv \
  "$J" --steps 1 >"$T/job.out" 2>&1 &
pid=$!
seg=
for ((i = 0; i < 300; i++)); do
  id=$(ls "$T"/rdzv/*.id 2>/dev/null | head -1)
  [ -n "$id" ] && seg=/dev/shm$(dd if="$id" bs=1 skip=8 count=64 2>/dev/null | tr -d '\0')
  [ -n "$id" ] && [ -e "$seg" ] && break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -n "$seg" ] && made+=("$seg") && touch -d "@$old" "$seg"
check "shm_leftovers: the killed rank's segment (named in its rendezvous file: ${seg##*/}) is on /dev/shm" test -e "$seg"
case ${seg##*/} in
  ncclD."$(nd_tag "$own")".*) pass "shm_leftovers: its name starts with the tag of the job's TMPDIR" ;;
  *) fail "shm_leftovers: segment [${seg##*/}] does not start with ncclD.$(nd_tag "$own")." ;;
esac

# beside it, unmapped segments of another test (another TMPDIR), of a double built before the
# tag (ncclD.<pid>.<n>.<random>), and one of this TMPDIR that a live process holds mapped
for f in "ncclD.$(nd_tag "$other").$$.0.0000000000000001" "ncclD.$$.0.0000000000000002" \
         "ncclD.$(nd_tag "$own").$$.0.0000000000000003"; do
  : >"/dev/shm/$f" && touch -d "@$old" "/dev/shm/$f" && made+=("/dev/shm/$f")
done
python3 -c 'import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR); os.ftruncate(fd, 4096); m = mmap.mmap(fd, 4096)
print("mapped", flush=True); time.sleep(30)' "/dev/shm/ncclD.$(nd_tag "$own").$$.0.0000000000000003" >"$T/holder" &
holder=$!
for ((i = 0; i < 100; i++)); do grep -q mapped "$T/holder" && break; sleep 0.1; done

check_eq "shm_leftovers: shm_segments of the job's TMPDIR: its dead segment only" "$seg" "$(shm_segments "$since" "$own")"
check_eq "shm_leftovers: shm_segments of another TMPDIR: its own unmapped one only" \
  "/dev/shm/ncclD.$(nd_tag "$other").$$.0.0000000000000001" "$(shm_segments "$since" "$other")"
shm_give_back "$T/none" "$since" "$own"
check_eq "shm_leftovers: giving back the job's TMPDIR's deletes its dead segment, leaves the others" \
  "gone there there there" \
  "$(for f in "${made[@]}"; do [ -e "$f" ] && echo -n "there " || echo -n "gone "; done | sed 's/ $//')"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null || true
