#!/usr/bin/env bash
# test_read_once.sh — every command reads each input file once (issue 14: "a decoder that reads
# each file once for all analyses"; docs/ARCHITECTURE.md "Reads per file"), as the decoder
# counts it itself (NCCLSCOPE_READ_COUNT, decoder/io/readcount.h): per path its reads (a pass
# that decodes it: a trace's chunks, a killed process's rings file, a text NCCL log) and its
# peeks (its header only). A second read of a file anywhere in a command fails here. No timing.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$NCS" ]; then fail "read once: $NCS not built"; exit 0; fi
LOG=$ROOT/tests/fixtures/nccl-logs/10-2.6.4-2gpu-nvlink-graph-search-tuning-table.log
"$NCS" synth -o "$T/a" --ranks 4 --hosts 2 --calls 400 --chunk-calls 50 >/dev/null 2>&1 || { fail "read once: synth"; exit 0; }
cp -r "$T/a" "$T/base1"; cp -r "$T/a" "$T/base2" # compare: each run its own files
"$NCS" synth -o "$T/b" --ranks 2 --hosts 1 --calls 100 --seed 7 >/dev/null 2>&1
mkdir "$T/two"; cp "$T/a"/* "$T/two/"; for f in "$T/b"/*; do cp "$f" "$T/two/b-${f##*/}"; done
cp -r "$T/two" "$T/two2"

# counts CMD...: over every path counted, "files N reads R peeks P" (R, P: the distinct counts,
# joined by /) ; the command's output is thrown away, its exit code shown when not 0 or 1
counts() {
  rm -f "$T/rc"
  NCCLSCOPE_READ_COUNT=$T/rc "$@" >/dev/null 2>&1; local rc=$?
  [ $rc -le 1 ] || echo -n "exit $rc: "
  [ -f "$T/rc" ] || { echo "nothing counted"; return; }
  echo "files $(wc -l <"$T/rc") reads $(cut -d' ' -f1 "$T/rc" | sort -nu | paste -sd/) peeks $(cut -d' ' -f2 "$T/rc" | sort -nu | paste -sd/)"
}
# every command on one job of 4 traces: each trace read once; peeks (the loader's look at the
# header for the job clock's origin) at most once
for cmd in "report" "report --json" "report --summary" "report --detail" "report --skip-warmup 1" \
           "doctor" "doctor --json" "html -o $T/x.html" "html --no-doctor -o $T/x.html" "timeline -o $T/x.json" \
           "timeline --max-kernels 0 -o $T/x.json" "jobs" "jobs --json" "watch --once"; do
  got=$(counts "$NCS" $cmd "$T/a")
  case $got in "files 4 reads 1 peeks 0" | "files 4 reads 1 peeks 1" | "files 4 reads 1 peeks 0/1")
    pass "read once: ${cmd%% -o *}: each of the 4 traces read once ($got)" ;;
  *) fail "read once: ${cmd%% -o *}: expected each of the 4 traces read once, got [$got]" ;; esac
done
check_eq "read once: dump FILE...: each read once" "files 4 reads 1 peeks 0" "$(counts "$NCS" dump "$T"/a/*.ncs)"
check_eq "read once: compare BASE BASE NEW: each run's 4 traces read once" "files 12 reads 1 peeks 1" \
  "$(counts "$NCS" compare "$T/base1" "$T/base2" "$T/a")"
check_eq "read once: nccl-log: the log read once" "files 1 reads 1 peeks 0" "$(counts "$NCS" nccl-log "$LOG")"
check_eq "read once: doctor LOG DIR: the log and each trace read once (the log's header peeked at: trace or log?)" \
  "files 5 reads 1 peeks 0/1" "$(counts "$NCS" doctor "$LOG" "$T/a")"

# past 64 files with no --ranks timeline reads every file twice (docs/ARCHITECTURE.md: a first read
# chooses the ranks written, so that only theirs are spooled); with --ranks once
"$NCS" synth -o "$T/w" --ranks 70 --hosts 7 --calls 20 >/dev/null 2>&1
check_eq "read once: timeline of 70 files: every trace read twice (the ranks chosen first), its header peeked once by each" \
  "files 70 reads 2 peeks 2" "$(counts "$NCS" timeline -o "$T/x.json" "$T/w")"
check_eq "read once: timeline --ranks 0-3 of 70 files: every trace read once" \
  "files 70 reads 1 peeks 1" "$(counts "$NCS" timeline --ranks 0-3 -o "$T/x.json" "$T/w")"

# --job: timeline reads every file once, the grouping comes with that read and the other jobs'
# events are left out of the output; report, doctor, html and compare first decode every file of
# the directory for the grouping, then read the picked job's files: those twice
# (docs/ARCHITECTURE.md lists it), the others once
jobcounts() { # jobcounts CMD...: "picked: R, others: R" (distinct read counts)
  rm -f "$T/rc"
  NCCLSCOPE_READ_COUNT=$T/rc "$@" >/dev/null 2>&1
  awk '{g = index($3, "/b-") ? "picked" : "others"; k = g ":" $1; if (!(k in s)) { s[k] = 1; v[g] = v[g] (v[g] == "" ? "" : "/") $1 }}
       END {printf "picked: %s, others: %s\n", v["picked"], v["others"]}' "$T/rc" 2>/dev/null
}
pick=$("$NCS" jobs --json "$T/two" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print([j["job"] for j in d["jobs"] if j["attempts"][0]["ranks"] == 2][0])' 2>/dev/null)
if [ -n "$pick" ]; then
  check_eq "read once: timeline --job: every trace read once, the picked job's and the others" \
    "picked: 1, others: 1" "$(jobcounts "$NCS" timeline -o "$T/x.json" --job "$pick" "$T/two")"
  for cmd in "report" "doctor" "html -o $T/x.html"; do
    check_eq "read once: ${cmd%% -o *} --job: the picked job's traces read twice (grouping read, then the command), the others once" \
      "picked: 2, others: 1" "$(jobcounts "$NCS" $cmd --job "$pick" "$T/two")"
  done
  check_eq "read once: compare --base-job --job: the picked job's traces of each run read twice, the others once" \
    "picked: 2, others: 1" "$(jobcounts "$NCS" compare --base-job "$pick" --job "$pick" "$T/two" "$T/two2")"
else
  fail "read once: jobs --json did not list the 2-rank job"
fi

# a killed process: its cut trace and its rings file (the calls the writer had not written),
# each read once by report, doctor and timeline
JOB=$BUILD/tests/rate_job
if [ -x "$JOB" ] && [ -f "$SHIM" ]; then
  d=$T/killed
  mkdir -p "$d"
  NCCLSCOPE_DIR=$d/tr NCCLSCOPE_FLUSH_MS=1000 LD_PRELOAD="$SHIM$SAN_PRELOAD" "$JOB" -n 2000 -t 1 -p >"$d/out" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do grep -q '^done' "$d/out" && break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if ls "$d"/tr/*.rings >/dev/null 2>&1; then
    for cmd in "report" "doctor" "timeline -o $T/k.json" "html -o $T/k.html"; do
      got=$(counts "$NCS" $cmd "$d/tr")
      case $got in "files 2 reads 1 peeks 0" | "files 2 reads 1 peeks 0/1")
        pass "read once: ${cmd%% -o *} on a killed process: its trace and its rings file read once each ($got)" ;;
      *) fail "read once: ${cmd%% -o *} on a killed process: expected the trace and its rings file read once each, got [$got]" ;; esac
    done
  else
    fail "read once: the killed job left no rings file"
  fi
else
  skip "read once: rate_job or the shim not built: the rings file's read not counted"
fi
