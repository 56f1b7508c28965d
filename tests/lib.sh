# lib.sh — helpers for shell tests, sourced by tests/test_*.sh.
# Each check prints "PASS: name" or "FAIL: name"; tests/run.sh counts those lines.
# Variables: BUILD (build dir, absolute), ROOT (repo root), T (a fresh scratch dir).
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SHIM=$BUILD/libncclscope.so
NCS=$BUILD/ncclscope
DOUBLES=$BUILD/doubles
T=$(mktemp -d "${TMPDIR:-/tmp}/ncs-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
skip() { echo "SKIP: $*"; }
# check NAME CMD... : PASS when CMD exits 0
check() { local n=$1; shift; if "$@" >"$T/.check.out" 2>&1; then pass "$n"; else fail "$n"; sed 's/^/    /' "$T/.check.out" | head -20; fi; }
# check_eq NAME EXPECTED ACTUAL
check_eq() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2] got [$3]"; fi; }
