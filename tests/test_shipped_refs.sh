#!/usr/bin/env bash
# test_shipped_refs.sh — what ships cites only what ships: no source, doc or output of the tool
# points at ../shared/ (the reference folder users do not have); the figures the tool relies on
# are in docs/REFERENCE-FIGURES.md, the real logs and topologies the tests read in tests/fixtures/.
# (scripts/gpu-check.sh and scripts/nccl-tests.sh look in ../shared for the nccl-tests source
# only when present, after the locations the user gives.)
source "$(dirname "$0")/lib.sh"
hits=$(cd "$ROOT" && grep -rln 'shared/reference\|\.\./shared' shim decoder include docs README.md Makefile scripts 2>/dev/null | grep -v '^scripts/gpu-check.sh$\|^scripts/nccl-tests.sh$')
check_eq "shipped refs: no shipped file cites ../shared" "" "$hits"
check "shipped refs: docs/REFERENCE-FIGURES.md ships" test -s "$ROOT/docs/REFERENCE-FIGURES.md"
if [ -x "$NCS" ]; then
  "$NCS" synth -o "$T/s" --ranks 4 --calls 100 >/dev/null 2>&1
  { "$NCS" report "$T/s"; "$NCS" report --json "$T/s"; "$NCS" doctor "$T/s"; "$NCS" html "$T/s" -o -; } >"$T/out" 2>&1
  check_eq "shipped refs: report, doctor and html output cite no ../shared file" 0 "$(grep -c 'shared/' "$T/out")"
fi
