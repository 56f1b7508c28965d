#!/usr/bin/env bash
# test_deb.sh — `make deb` builds a Debian package (scripts/make-deb.sh): dpkg-deb --info shows
# its name, the CLI's version and its dependencies; --contents holds the CLI, the shim, the
# gzipped man page, the completion, the dashboard and the rules; lintian reports no error (skipped,
# saying why, when lintian is absent); the CLI and shim extracted from it trace a 2-rank job whose
# report equals the job's own truth; then the package installed with apt-get into a clean root
# (scripts/deb-root.sh) traces a job from the installed paths and purges cleanly.
source "$(dirname "$0")/lib.sh"
# same_as_truth REPORT_JSON TRUTH_DIR: the report's calls, count and bytes per rank and op equal
# the 2-rank job's own (ddp_job --truth)
same_as_truth() {
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
rep = json.load(open(sys.argv[1]))
truths = sorted(glob.glob(sys.argv[2] + "/truth-rank*.json"))
assert len(truths) == 2 and len(rep["ranks"]) == 2, "ranks %d, truths %d" % (len(rep["ranks"]), len(truths))
for t in truths:
    want = json.load(open(t))
    r = [x for x in rep["ranks"] if x["rank"] == want["rank"]][0]
    got = {k: {"calls": v["calls"], "count": v["count"], "bytes": v["bytes"]} for k, v in r["ops"].items()}
    assert got == want["ops"], (got, want["ops"])
PY
}
if ! command -v dpkg-deb >/dev/null; then skip "deb: dpkg-deb not installed (not a Debian system)"; exit 0; fi
if [ ! -x "$NCS" ] || [ ! -f "$SHIM" ]; then skip "deb: not built"; exit 0; fi
deb=$(make -s --no-print-directory -C "$ROOT" BUILD="$BUILD" deb 2>"$T/make.err" | tail -1)
check "deb: make deb builds a package" test -f "$deb"
[ -f "$deb" ] || { sed 's/^/    /' "$T/make.err" | head; exit 0; }
version=$("$NCS" --version | awk '{print $2}')
dpkg-deb --info "$deb" >"$T/info" 2>&1
check_eq "deb: Package is ncclscope" "ncclscope" "$(awk '/^ Package:/ {print $2}' "$T/info")"
check_eq "deb: Version is the CLI's" "$version" "$(awk '/^ Version:/ {print $2}' "$T/info")"
check_eq "deb: Architecture is this machine's" "$(dpkg --print-architecture)" "$(awk '/^ Architecture:/ {print $2}' "$T/info")"
check "deb: depends on libzstd1 (the CLI links it)" grep -q '^ Depends:.*libzstd1' "$T/info"
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$T/contents"
for f in /usr/bin/ncclscope /usr/lib/ncclscope/libncclscope.so /usr/share/man/man1/ncclscope.1.gz \
         /usr/share/bash-completion/completions/ncclscope /usr/share/ncclscope/grafana/ncclscope.json \
         /usr/share/ncclscope/prometheus/ncclscope-rules.yml /usr/share/doc/ncclscope/copyright \
         /usr/share/doc/ncclscope/changelog.gz; do
  check "deb: holds $f" grep -qx "$f" "$T/contents"
done
check_eq "deb: every file owned by root" "" "$(dpkg-deb --contents "$deb" | awk '$2 != "root/root"' | head -3)"

if command -v lintian >/dev/null; then
  lintian "$deb" >"$T/lintian" 2>&1
  check_eq "deb: lintian reports no error" "" "$(grep '^E:' "$T/lintian" | head -5)"
  grep '^W:' "$T/lintian" | sed 's/^/    lintian /' | head -5
else
  skip "deb: lintian not installed (apt-get install lintian): the package's policy checks not run"
fi

# the extracted package traces a job on its own (run finds the shim at ../lib/ncclscope)
dpkg-deb -x "$deb" "$T/root"
mkdir -p "$T/truth"
env -u NCCLSCOPE_SHIM "$T/root/usr/bin/ncclscope" run -o "$T/tr" -- \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/ddp_job" --steps 4 --truth "$T/truth" >"$T/run.out" 2>&1
check_eq "deb: the extracted 'ncclscope run' traces a job (exit 0)" 0 "$?"
check_eq "deb: one trace per rank" 2 "$(ls "$T"/tr/*.ncs 2>/dev/null | wc -l)"
pre=$(env -u NCCLSCOPE_SHIM "$T/root/usr/bin/ncclscope" run -o "$T/tr2" -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null | tail -1)
check_eq "deb: the extracted 'run' preloads the extracted shim" "$T/root/usr/lib/ncclscope/libncclscope.so" "$(readlink -f "$pre")"
"$T/root/usr/bin/ncclscope" report --json "$T/tr" >"$T/r.json" 2>"$T/r.err"
check "deb: the extracted CLI's report equals the job's truth per rank and op" same_as_truth "$T/r.json" "$T/truth"

# A clean root (issue 29 item 5): `apt-get install ./ncclscope_*.deb` into a minimal Debian of
# the host's release that has nothing of ours (made once per machine by scripts/deb-root.sh,
# which `scripts/deps.sh --all` runs), then a traced job from the installed paths only, then a
# purge. The root stays untouched: everything happens on an overlay above it, in a mount and
# PID namespace of its own, so nothing is left mounted when the test ends.
croot=${NCS_DEB_ROOT:-/var/cache/ncclscope/debian-root}
why=
if [ "$(id -u)" -ne 0 ]; then why="not root (chroot and mounts need it)"
elif [ -n "$NCS_SANITIZER" ]; then why="a $NCS_SANITIZER build: its CLI and shim need lib$NCS_SANITIZER, which a clean root does not have (exit 127)"
elif [ ! -f "$croot/etc/debian_version" ]; then why="no clean root at $croot (make it: bash scripts/deb-root.sh; needs mmdebstrap and the Debian mirror)"
elif ! command -v unshare >/dev/null || ! command -v chroot >/dev/null; then why="unshare or chroot missing"
elif ! unshare --mount --pid --fork true 2>/dev/null; then why="new mount and PID namespaces refused here (a container without CAP_SYS_ADMIN?)"
fi
if [ -n "$why" ]; then
  skip "deb: install into a clean root: $why"
  exit 0
fi
# What the job needs from the build (the package does not ship test jobs): the job, the NCCL and
# CUDA doubles it links by RPATH ($ORIGIN/../doubles), and the launcher.
mkdir -p "$T/up/opt/ncs/tests" "$T/up/opt/ncs/doubles" "$T/up/tmp" "$T/work" "$T/mnt"
cp "$BUILD/tests/ddp_job" "$T/up/opt/ncs/tests/"
cp -a "$BUILD"/doubles/*.so* "$T/up/opt/ncs/doubles/"
cp "$ROOT/tests/jobs/launch.sh" "$T/up/opt/ncs/"
cp "$deb" "$T/up/tmp/ncclscope.deb"
cat >"$T/up/opt/ncs/inroot.sh" <<'SH'
# Runs inside the clean root. Every step prints a line "step rc".
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
apt-get install -y -q /tmp/ncclscope.deb >/tmp/apt.out 2>&1; echo "install $?"
dpkg-query -W -f='${Status}\n' ncclscope >/tmp/status 2>&1; echo "status $?"
for f in /usr/bin/ncclscope /usr/lib/ncclscope/libncclscope.so /usr/share/man/man1/ncclscope.1.gz \
         /usr/share/bash-completion/completions/ncclscope /usr/share/ncclscope/grafana/ncclscope.json; do
  [ -f "$f" ] || echo "missing $f"
done
mkdir -p /tmp/truth
ncclscope run -o /tmp/tr -- bash /opt/ncs/launch.sh 2 /opt/ncs/tests/ddp_job --steps 4 --truth /tmp/truth >/tmp/run.out 2>&1; echo "run $?"
ncclscope report --json /tmp/tr >/tmp/r.json 2>/tmp/r.err; echo "report $?"
apt-get purge -y -q ncclscope >/tmp/purge.out 2>&1; echo "purge $?"
left=0; for f in /usr/bin/ncclscope /usr/lib/ncclscope /usr/share/ncclscope; do [ -e "$f" ] && left=1; done; echo "left $left"
SH
# (the suite's own TMPDIR, tests/run.sh, is not in the clean root: the root gets none, as a user's would)
unshare --mount --pid --fork --propagation private sh -c '
  set -e
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/up,workdir=$2/work" "$2/mnt" 2>"$2/overlay.err" || {
    echo "overlay-failed"; exit 0; }
  mount -t proc proc "$2/mnt/proc"
  mount -t tmpfs tmpfs "$2/mnt/dev/shm"
  env -u TMPDIR chroot "$2/mnt" /bin/bash /opt/ncs/inroot.sh' sh "$croot" "$T" >"$T/inroot.out" 2>&1
if grep -q overlay-failed "$T/inroot.out"; then
  skip "deb: install into a clean root: the kernel refused an overlay mount ($(head -1 "$T/overlay.err"))"
  exit 0
fi
step() { awk -v s="$1" '$1 == s {print $2}' "$T/inroot.out"; }
check_eq "deb: clean root: apt-get install ./ncclscope.deb succeeds" 0 "$(step install)"
[ "$(step install)" = 0 ] || sed 's/^/    /' "$T/up/tmp/apt.out" | tail -5
check_eq "deb: clean root: dpkg says installed" "install ok installed" "$(cat "$T/up/tmp/status" 2>/dev/null)"
check_eq "deb: clean root: CLI, shim, man page, completion, dashboard in place" "" "$(grep '^missing' "$T/inroot.out")"
check_eq "deb: clean root: the installed 'ncclscope run' traces a 2-rank job (exit 0)" 0 "$(step run)"
check_eq "deb: clean root: the installed CLI reads the traces (exit 0)" 0 "$(step report)"
check "deb: clean root: the installed CLI's report equals the job's truth per rank and op" same_as_truth "$T/up/tmp/r.json" "$T/up/tmp/truth"
check_eq "deb: clean root: apt-get purge succeeds and leaves none of its files" "0 0" "$(step purge) $(step left)"
