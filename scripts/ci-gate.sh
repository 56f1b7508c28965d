#!/usr/bin/env bash
# ci-gate.sh — the CI regression gate in one step, for any CI (the GitHub Actions workflow in
# .github/workflows/ncclscope-gate.yml calls it; tests/test_ci_gate.sh runs it on the doubles).
#
#   ci-gate.sh [--ncclscope BIN] [--] BASELINE_DIR... NEW_DIR [-- COMPARE_OPTIONS...]
#
# BASELINE_DIR: one or more trace directories of good runs (several widen the tolerance by their
# own spread, docs/COMPARE.md). NEW_DIR: the traces of this run. Writes compare's markdown
# table to $GITHUB_STEP_SUMMARY when that is set (else to stdout), prints the doctor's verdicts
# of the new run, and exits with compare's status: 0 no regression, 1 regression, 2 bad input.
set -u
NCS=${NCCLSCOPE:-ncclscope}
if [ "${1:-}" = --ncclscope ]; then NCS=$2; shift 2; fi
[ "${1:-}" = -- ] && shift
dirs=() opts=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; opts=("$@"); break; fi
  dirs+=("$1"); shift
done
if [ ${#dirs[@]} -lt 2 ]; then
  echo "usage: ci-gate.sh [--ncclscope BIN] BASELINE_DIR... NEW_DIR [-- COMPARE_OPTIONS...]" >&2
  exit 2
fi
summary=${GITHUB_STEP_SUMMARY:-/dev/stdout}
{
  echo "## ncclscope: NCCL regression gate"
  echo
} >>"$summary"
"$NCS" compare --markdown "${opts[@]}" "${dirs[@]}" >>"$summary"
rc=$?
new=${dirs[${#dirs[@]}-1]}
echo "ncclscope doctor $new:"
"$NCS" doctor "$new"
case $rc in
  0) echo "ncclscope gate: no regression" ;;
  1) echo "ncclscope gate: REGRESSION (table in the step summary)" ;;
  *) echo "ncclscope gate: could not compare (exit $rc)" ;;
esac
exit "$rc"
