#!/usr/bin/env bash
# test_shim_rooms.sh — the shim's files use each other in one direction only: no set of
# shim/ files reaches itself through the symbols they use (scripts/shim-graph.sh on the
# built objects), and the leaf base.c uses no other shim file.
. "$(dirname "$0")/lib.sh"
G=$ROOT/scripts/shim-graph.sh
ls "$BUILD"/obj/shim/*.o >/dev/null 2>&1 || { fail "shim_rooms: no shim objects in $BUILD/obj/shim"; exit 1; }
"$G" "$BUILD" >"$T/graph" 2>&1
check_eq "shim_rooms: no import loop between shim files" "loops: none" "$(tail -1 "$T/graph")"
check_eq "shim_rooms: base.c uses no other shim file" "" "$(grep '^base -> ' "$T/graph")"
check "shim_rooms: the writer names no collector (it walks the table it is handed)" \
  bash -c "! grep -E '^writer -> (collectors|logcap|profiler|topo|gputime|callsite|state):' '$T/graph'"
