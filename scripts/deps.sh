#!/usr/bin/env bash
# deps.sh [--all] — installs the Debian packages the build needs when they are missing
# (build-essential, libzstd-dev, zlib1g-dev, libunwind-dev); with --all also those some tests use (ltrace,
# clang for libFuzzer, chromium for the HTML test, jq, bc, python3 and python3-yaml, binutils,
# man-db and groff-base for the man page check, curl, prometheus, prometheus-node-exporter for the
# metrics test, lintian and mmdebstrap for the package check), and then makes the clean Debian root
# the package test installs into (scripts/deb-root.sh, once per machine; a failure there only
# warns: that check then says SKIP). Does nothing when everything is there. apt-get needs root: otherwise it prints the command to run, and
# fails only when a package the build needs is missing (tests without theirs say SKIP).
set -eu
build=(build-essential libzstd-dev zlib1g-dev libunwind-dev)
extra=(ltrace clang chromium jq bc python3 python3-yaml binutils man-db groff-base curl prometheus prometheus-node-exporter lintian mmdebstrap)
pkgs=("${build[@]}")
[ "${1:-}" = --all ] && pkgs+=("${extra[@]}")
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
deb_root() {
  [ "${1:-}" = --all ] && [ "$(id -u)" -eq 0 ] || return 0
  bash "$(dirname "$0")/deb-root.sh" || echo "ncclscope: no clean Debian root: the package install check will say SKIP" >&2
}
if [ ${#need[@]} -eq 0 ]; then deb_root "${1:-}"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ncclscope: missing packages: ${need[*]}" >&2
  echo "  run: sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
  for p in "${build[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || exit 1; done
  exit 0
fi
echo "ncclscope: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
deb_root "${1:-}"
