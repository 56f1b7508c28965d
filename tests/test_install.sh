#!/usr/bin/env bash
# test_install.sh — `make install PREFIX=... DESTDIR=...` puts the CLI, the shim, the man page and
# the bash completion where the docs say; the installed `ncclscope run` finds the installed shim
# and traces a job; the man page renders and has a section for every command `ncclscope help`
# lists; the completion script loads and completes commands; `make uninstall` removes it all.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ] || [ ! -f "$SHIM" ]; then skip "install: not built"; exit 0; fi
D=$T/dest P=/opt/ncs
make -s -C "$ROOT" BUILD="$BUILD" install PREFIX=$P DESTDIR="$D" >"$T/install.out" 2>&1
check_eq "install: make install exits 0" 0 "$?"
for f in bin/ncclscope lib/ncclscope/libncclscope.so share/man/man1/ncclscope.1 \
         share/bash-completion/completions/ncclscope; do
  check "install: $P/$f installed" test -s "$D$P/$f"
done
check "install: the installed CLI runs" sh -c "'$D$P/bin/ncclscope' --version | grep -q '^ncclscope '"
# The installed `run` finds the installed shim (../lib/ncclscope from bin/), not the build's.
env -u NCCLSCOPE_SHIM LD_LIBRARY_PATH="$DOUBLES" NVMLDOUBLE_TOPO="$ROOT/tests/doubles/topos/nvswitch-8x-h100-nv18.txt" \
  "$D$P/bin/ncclscope" run -o "$T/tr" -- bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/ddp_job" --steps 3 \
  >"$T/run.out" 2>&1
check_eq "install: installed 'ncclscope run' traces a job (exit 0)" 0 "$?"
check_eq "install: one trace per rank" 2 "$(ls "$T"/tr/*.ncs 2>/dev/null | wc -l)"

MAN=$D$P/share/man/man1/ncclscope.1
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$MAN" >"$T/man.txt" 2>"$T/man.err"
  check_eq "install: man page renders without warnings" "" "$(grep -v '^$' "$T/man.err")"
  check "install: man page has NAME and SYNOPSIS" sh -c "grep -q '^NAME' '$T/man.txt' && grep -q '^SYNOPSIS' '$T/man.txt'"
else
  skip "install: man not installed (apt-get install man-db): rendering not checked"
fi
miss=""
for c in $("$NCS" help | awk '/^  [a-z]/ {print $1}'); do
  [ "$c" = help ] && continue
  grep -q "^\.B $c\$" "$MAN" || miss="$miss $c"
done
check_eq "install: every command of 'ncclscope help' has a man page entry" "" "$miss"

COMP=$D$P/share/bash-completion/completions/ncclscope
check "install: completion script is valid bash" bash -n "$COMP"
got=$(PATH="$D$P/bin:$PATH" bash -c "source '$COMP'; COMP_WORDS=(ncclscope rep); COMP_CWORD=1; _ncclscope; echo \${COMPREPLY[*]}")
check_eq "install: completion completes 'rep' to report" report "$got"
got=$(PATH="$D$P/bin:$PATH" bash -c "source '$COMP'; COMP_WORDS=(ncclscope report --js); COMP_CWORD=2; _ncclscope; echo \${COMPREPLY[*]}")
check_eq "install: completion completes 'report --js' to --json" --json "$got"

make -s -C "$ROOT" BUILD="$BUILD" uninstall PREFIX=$P DESTDIR="$D" >/dev/null 2>&1
check_eq "install: make uninstall leaves no file" "" "$(find "$D" -type f)"
