#!/usr/bin/env bash
# deps.sh [--all] — installs the Debian packages the build needs when they are missing
# (build-essential, libzstd-dev, libunwind-dev); with --all also those some tests use (ltrace,
# clang for libFuzzer, chromium for the HTML test, jq, bc, python3, binutils). Does nothing
# when everything is there. Needs root for apt-get; otherwise prints the command to run.
set -eu
pkgs=(build-essential libzstd-dev libunwind-dev)
[ "${1:-}" = --all ] && pkgs+=(ltrace clang chromium jq bc python3 binutils)
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing packages: ${need[*]}; run: sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "installing: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
