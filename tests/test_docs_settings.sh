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
# The commands' settings: each has a row in docs/CLI.md's table, and only base/settings.c reads
# them (cmd/run.c looks at the shim's own settings for the job it starts).
missing=""
for v in $(read_by decoder/base/settings.c); do
  grep -q "^| \`$v\`" "$ROOT/docs/CLI.md" || missing="$missing $v"
done
check_eq "settings: every decoder setting has a row in docs/CLI.md's table" "" "$missing"
others=$(grep -rlE 'getenv\("NCCLSCOPE_' "$ROOT/decoder" | sed "s#$ROOT/decoder/##" | grep -vx 'base/settings.c' | grep -vx 'cmd/run.c' | tr '\n' ' ')
check_eq "settings: no decoder file but base/settings.c reads a decoder setting (cmd/run.c: the shim's)" "" "$others"
shim_read_by_run=$(grep -hoE 'getenv\("NCCLSCOPE_[A-Z_]+"' "$ROOT/decoder/cmd/run.c" | sed 's/.*"\(.*\)"/\1/' | sort -u)
notshim=""
for v in $shim_read_by_run; do printf '%s\n' "$shim_vars" | grep -qx "$v" || notshim="$notshim $v"; done
check_eq "settings: cmd/run.c reads only shim settings itself" "" "$notshim"
# FORMAT.md's title names the version the code writes (include/ncclscope/format.h).
code_ver=$(sed -n 's/^#define NCS_FORMAT_STRING "\([0-9.]*\)".*/\1/p' "$ROOT/include/ncclscope/format.h")
doc_ver=$(sed -n '1s/^# The ncclscope trace format, version \([0-9.]*\)$/\1/p' "$ROOT/docs/FORMAT.md")
check_eq "docs: FORMAT.md's title names the format version the shim writes ($code_ver)" "$code_ver" "$doc_ver"
