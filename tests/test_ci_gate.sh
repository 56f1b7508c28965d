#!/usr/bin/env bash
# test_ci_gate.sh — the CI recipe works as shipped: .github/workflows/ncclscope-gate.yml is valid
# YAML whose steps are run here, in order, on the CPU doubles (baseline recorded, traced run, gate
# through scripts/ci-gate.sh); the markdown table reaches $GITHUB_STEP_SUMMARY; the gate passes
# the same job and fails when NVLink is lost (NCCL_P2P_DISABLE=1). Timing thresholds are opened
# wide in the gate checks (-- --busbw-drop ...), so only the transport change decides: the
# outcome cannot depend on machine load.
source "$(dirname "$0")/lib.sh"
WF=$ROOT/.github/workflows/ncclscope-gate.yml
if ! python3 -c 'import yaml' 2>/dev/null; then
  skip "ci gate: python3-yaml not installed (apt-get install python3-yaml): workflow not parsed"
  exit 0
fi
# The workflow's env and the run steps we execute, as shell assignments (bash-quoted).
python3 - "$WF" >"$T/wf.sh" 2>"$T/wf.err" <<'PY'
import sys, yaml, shlex
wf = yaml.safe_load(open(sys.argv[1]))
job = wf["jobs"]["nccl-gate"]
for k, v in job.get("env", {}).items():
    print(f"export {k}={shlex.quote(str(v))}")
names = [s.get("name", "") for s in job["steps"]]
print("STEPS=(" + " ".join(shlex.quote(n) for n in names) + ")")
for i, s in enumerate(job["steps"]):
    if "run" in s:
        print(f"STEP_{i}={shlex.quote(s['run'])}")
PY
check_eq "ci gate: the workflow is valid YAML with a nccl-gate job" 0 "$?"
source "$T/wf.sh"
check "ci gate: the workflow builds, records a baseline, traces a run and gates it" \
  sh -c "printf '%s\n' \"\$@\" | grep -q '^Build\$' && printf '%s\n' \"\$@\" | grep -q '^Gate\$'" _ "${STEPS[@]}"
step() { # step NAME: the run text of that step, with build/ ($PWD/build/ too) as this build
  local i
  for i in "${!STEPS[@]}"; do
    if [ "${STEPS[$i]}" = "$1" ]; then
      local v="STEP_$i"
      printf '%s\n' "${!v}" | sed -e "s#\\\$PWD/build/#$BUILD/#g" -e "s#build/#$BUILD/#g"
      return 0
    fi
  done
  return 1
}
export BASELINE=$T/baseline TRACES=$T/traces GITHUB_STEP_SUMMARY=$T/summary.md
export JOB=${JOB//build\//$BUILD/}
cd "$ROOT"
bash -euo pipefail -c "$(step 'Record a baseline when none is stored')" >"$T/base.out" 2>&1
check_eq "ci gate: baseline step records 3 runs" 3 "$(ls -d "$BASELINE"/run* 2>/dev/null | wc -l)"
bash -euo pipefail -c "$(step 'Traced run')" >"$T/run.out" 2>&1
check "ci gate: traced run wrote traces" sh -c "ls '$T'/traces/*.ncs >/dev/null"

# The Gate step as written, then the same with loose timing thresholds (deterministic).
gate=$(step Gate)
check "ci gate: the Gate step calls scripts/ci-gate.sh" sh -c "printf '%s' '$gate' | grep -q 'scripts/ci-gate.sh'"
bash "$ROOT/scripts/ci-gate.sh" >/dev/null 2>&1
check_eq "ci gate: usage error exits 2" 2 "$?"
LOOSE=(-- --busbw-drop 10000 --time-rise 10000 --share-rise 100)
: >"$GITHUB_STEP_SUMMARY"
bash "$ROOT/scripts/ci-gate.sh" --ncclscope "$NCS" "$BASELINE"/run* "$TRACES" "${LOOSE[@]}" >"$T/gate1.out" 2>&1
check_eq "ci gate: the same job passes (exit 0)" 0 "$?"
check "ci gate: markdown table written to \$GITHUB_STEP_SUMMARY" grep -q '^|' "$GITHUB_STEP_SUMMARY"

NCCL_P2P_DISABLE=1 TRACES=$T/p2p-off bash -euo pipefail -c "$(step 'Traced run')" >"$T/run2.out" 2>&1
: >"$GITHUB_STEP_SUMMARY"
bash "$ROOT/scripts/ci-gate.sh" --ncclscope "$NCS" "$BASELINE"/run* "$T/p2p-off" "${LOOSE[@]}" >"$T/gate2.out" 2>&1
check_eq "ci gate: NVLink lost (NCCL_P2P_DISABLE=1) fails the gate (exit 1)" 1 "$?"
check "ci gate: the summary names the lost transport" grep -qi 'P2P' "$GITHUB_STEP_SUMMARY"
check "ci gate: the step log says REGRESSION" grep -q 'REGRESSION' "$T/gate2.out"
