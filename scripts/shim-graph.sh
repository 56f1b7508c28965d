#!/usr/bin/env bash
# shim-graph.sh [BUILD] — which shim/ file uses which (from the built objects: a symbol one
# file uses and another defines), one "a -> b: symbols" line per pair, then the loops (sets
# of files that reach each other), or "loops: none". Calls of `dlsym` are left out: it is
# libc's function, which dlsym.c interposes, not an import of dlsym.c.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
O=$BUILD/obj/shim
ls "$O"/*.o >/dev/null 2>&1 || { echo "shim-graph: no objects in $O (run make first)" >&2; exit 2; }
for o in "$O"/*.o; do
  f=$(basename "$o" .o)
  nm "$o" | awk -v f="$f" 'NF == 3 && $2 ~ /^[TDBRVC]$/ {print "D", f, $3} NF == 2 && ($1 == "U" || $1 == "w") {print "U", f, $2}'
done | awk '
  $1 == "D" { def[$3] = $2 }
  $1 == "U" && $3 != "dlsym" { n++; uf[n] = $2; us[n] = $3 }
  END {
    for (i = 1; i <= n; i++) if ((us[i] in def) && def[us[i]] != uf[i]) {
      k = uf[i] " -> " def[us[i]]; if (!(k in e)) order[++m] = k; e[k] = e[k] " " us[i]
      a[uf[i], def[us[i]]] = 1; node[uf[i]] = 1; node[def[us[i]]] = 1
    }
    for (i = 1; i <= m; i++) print order[i] ":" e[order[i]] | "sort"
    close("sort")
    for (k in node) for (x in node) for (y in node) if (a[x, k] && a[k, y]) a[x, y] = 1
    loops = ""
    for (x in node) if (a[x, x]) loops = loops " " x
    print "loops:" (loops == "" ? " none" : loops)
  }'
