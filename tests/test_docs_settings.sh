#!/usr/bin/env bash
# test_docs_settings.sh — every setting the code reads is documented: each "NCCLSCOPE_X" string
# in shim/ and decoder/ (the environment variables the shim and the CLI read) has an entry in
# the man page's ENVIRONMENT section, and each shim setting a row in docs/SHIM.md's table.
source "$(dirname "$0")/lib.sh"
man=$ROOT/docs/man/ncclscope.1
envsec=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$man")
read_by() { grep -rhoE '"NCCLSCOPE_[A-Z_]+"' "$ROOT/$1" | tr -d '"' | sort -u; }
shim_vars=$(read_by shim)
all_vars=$(printf '%s\n%s\n' "$shim_vars" "$(read_by decoder)" | sort -u)
check "settings: the code reads some ($(echo "$all_vars" | wc -l))" test "$(echo "$all_vars" | wc -l)" -ge 10
missing=""
for v in $all_vars; do
  printf '%s\n' "$envsec" | grep -qx "\.B $v" || missing="$missing $v"
done
check_eq "settings: every one read by the shim or the CLI is in the man page's ENVIRONMENT" "" "$missing"
missing=""
for v in $shim_vars; do
  grep -q "^| \`$v\`" "$ROOT/docs/SHIM.md" || missing="$missing $v"
done
check_eq "settings: every shim setting has a row in docs/SHIM.md" "" "$missing"
