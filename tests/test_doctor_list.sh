#!/usr/bin/env bash
# test_doctor_list.sh — the doctor's checks are declared once (NCS_DOCTOR_CHECK_LIST,
# decoder/analysis/doctor.h): docs/DOCTOR.md describes exactly those checks, in that order (a
# "### `id` —" heading or a "- `id` —" item; NOTE verdicts are not checks), every id is one
# the code gives a verdict (a string in analysis/doctor.c or analysis/hang.c), and `doctor` on
# a healthy job names the list in its "no check fired" line.
. "$(dirname "$0")/lib.sh"
D=$ROOT/decoder/analysis
list=$(sed -n '/#define NCS_DOCTOR_CHECK_LIST/,/^$/p' "$D/doctor.h" | grep -o 'X("[a-z-]*"' | sed 's/X("\(.*\)"/\1/')
[ "$(echo "$list" | wc -l)" -ge 10 ] || fail "doctor_list: NCS_DOCTOR_CHECK_LIST not found in analysis/doctor.h"
docs=$(grep -oE '^(### |- )`[a-z-]+` — ' "$ROOT/docs/DOCTOR.md" | sed 's/^[#-]* *`\([a-z-]*\)`.*/\1/')
check_eq "doctor_list: docs/DOCTOR.md describes the checks of NCS_DOCTOR_CHECK_LIST, in its order" "$(echo $list)" "$(echo $docs)"
missing=""
for id in $list; do grep -q "\"$id\"" "$D/doctor.c" "$D/hang.c" || missing="$missing $id"; done
check_eq "doctor_list: every check's id is a verdict id in analysis/doctor.c or analysis/hang.c" "" "$missing"
"$NCS" synth -o "$T/ok" --ranks 4 --calls 200 --no-gpu --seed 7 >/dev/null 2>&1 || fail "doctor_list: synth failed"
line=$("$NCS" doctor "$T/ok" 2>/dev/null | sed -n 's/^healthy: no check fired (checks: \(.*\))$/\1/p')
if [ -z "$line" ]; then skip "doctor_list: the synthetic job was not found healthy, so no 'no check fired' line to compare"
else check_eq "doctor_list: doctor's 'no check fired' line names the list" "$(echo $list | sed 's/ /, /g')" "$line"; fi
