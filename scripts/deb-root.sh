#!/usr/bin/env bash
# deb-root.sh [DIR] — makes a clean Debian root for tests/test_deb.sh's install check: a
# minimal system of the host's release (mmdebstrap --variant=apt: the essential packages and apt,
# nothing of ours), unpacked in DIR (default $NCS_DEB_ROOT, else /var/cache/ncclscope/debian-root).
# The test never writes into it: it installs the package on an overlay above it. Made once per
# machine: does nothing when DIR/etc/debian_version exists. Needs root, mmdebstrap and the Debian
# mirror (1-4 minutes). Exit status 0 when the root is there at the end; otherwise it says why.
# One maker at a time (a lock beside DIR): two clones' .ci/run on a fresh machine at once make
# it once, and neither deletes the root the other's suite already installs on.
set -eu
dir=${1:-${NCS_DEB_ROOT:-/var/cache/ncclscope/debian-root}}
[ -f "$dir/etc/debian_version" ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "deb-root: needs root (mmdebstrap unpacks a system as root)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "deb-root: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || { echo "deb-root: /etc/os-release names no release (not Debian?)" >&2; exit 1; }
tmp="$dir.part.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock" && flock 9
[ -f "$dir/etc/debian_version" ] && exit 0   # made by another while this one waited
rm -rf "$tmp"
echo "deb-root: making a clean $suite root in $dir (mmdebstrap, a few minutes)" >&2
if ! mmdebstrap --quiet --variant=apt "$suite" "$tmp" >"$tmp.log" 2>&1; then
  echo "deb-root: mmdebstrap failed:" >&2; tail -5 "$tmp.log" >&2; rm -f "$tmp.log"; exit 1
fi
rm -f "$tmp.log"
rm -rf "$dir" && mv "$tmp" "$dir"
