#!/usr/bin/env bash
# test_decoder_rooms.sh — the decoder's rooms point one way (docs/ARCHITECTURE.md, "Rooms"):
# base < io < model < analysis < render < cmd. Every `#include "ROOM/..."` in decoder/ROOM2/*
# must name ROOM at or below ROOM2, and every command's entry function (cmd/commands.h's
# NCS_COMMANDS table, which cmd/main.c dispatches) must be defined in decoder/cmd/.
# Any upward include fails: there is no list of exceptions.
. "$(dirname "$0")/lib.sh"
D=$ROOT/decoder
rank() { case $1 in base) echo 0;; io) echo 1;; model) echo 2;; analysis) echo 3;; render) echo 4;; cmd) echo 5;; *) echo -1;; esac; }
: >"$T/bad"
for f in "$D"/*/*.[ch]; do
  own=${f#$D/}; room=${own%%/*}; r=$(rank "$room")
  [ "$r" -ge 0 ] || { echo "$own: not in a known room" >>"$T/bad"; continue; }
  grep -o '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/[^"]*"' "$f" | sed 's/.*"\(.*\)"/\1/' |
  while read -r inc; do
    ir=$(rank "${inc%%/*}"); [ "$ir" -ge 0 ] || continue
    [ "$ir" -gt "$r" ] && echo "$own includes $inc (upward)" >>"$T/bad"
  done
done
check_eq "decoder_rooms: no include against base < io < model < analysis < render < cmd" "" "$(cat "$T/bad")"
# Every entry function named in NCS_COMMANDS is defined in decoder/cmd/.
fns=$(sed -n 's/^[[:space:]]*X([^,]*,[[:space:]]*\(cmd_[a-z_]*\),.*/\1/p' "$D/cmd/commands.h")
[ -n "$fns" ] || fail "decoder_rooms: no entry functions found in cmd/commands.h"
for fn in $fns; do
  where=$(grep -l "^int $fn(int argc, char \*\*argv)" "$D"/*/*.c | sed "s#$D/##" | tr '\n' ' ')
  case "$where" in
    cmd/*) pass "decoder_rooms: $fn is defined in ${where% }";;
    *) fail "decoder_rooms: $fn is defined in [${where% }], not in cmd/";;
  esac
done
# Analyses (and the model stages they share) pass their state explicitly: no file-scope
# variable in analysis/ or model/ that one analysis could set for another to read (issue 31).
globals=$(grep -nE '^static [A-Za-z_][A-Za-z0-9_ ]*\**[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])* *(=[^=]|;)' \
            "$D"/analysis/*.c "$D"/model/*.c | grep -vE ':static const [^*]*(=|;)|\* *const [A-Za-z_]' | sed "s#$D/##")
check_eq "decoder_rooms: no file-scope mutable state in analysis/ or model/" "" "$globals"
