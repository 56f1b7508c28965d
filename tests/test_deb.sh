#!/usr/bin/env bash
# test_deb.sh — `make deb` builds a Debian package (scripts/make-deb.sh): dpkg-deb --info shows
# its name, the CLI's version and its dependencies; --contents holds the CLI, the shim, the
# gzipped man page, the completion, the dashboard and the rules; lintian reports no error (skipped,
# saying why, when lintian is absent); the CLI and shim extracted from it trace a 2-rank job whose
# report equals the job's own truth.
source "$(dirname "$0")/lib.sh"
if ! command -v dpkg-deb >/dev/null; then skip "deb: dpkg-deb not installed (not a Debian system)"; exit 0; fi
if [ ! -x "$NCS" ] || [ ! -f "$SHIM" ]; then skip "deb: not built"; exit 0; fi
deb=$(make -s -C "$ROOT" BUILD="$BUILD" deb 2>"$T/make.err" | tail -1)
check "deb: make deb builds a package" test -f "$deb"
[ -f "$deb" ] || { sed 's/^/    /' "$T/make.err" | head; exit 0; }
version=$("$NCS" --version | awk '{print $2}')
dpkg-deb --info "$deb" >"$T/info" 2>&1
check_eq "deb: Package is ncclscope" "ncclscope" "$(awk '/^ Package:/ {print $2}' "$T/info")"
check_eq "deb: Version is the CLI's" "$version" "$(awk '/^ Version:/ {print $2}' "$T/info")"
check_eq "deb: Architecture is this machine's" "$(dpkg --print-architecture)" "$(awk '/^ Architecture:/ {print $2}' "$T/info")"
check "deb: depends on libzstd1 (the CLI links it)" grep -q '^ Depends:.*libzstd1' "$T/info"
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$T/contents"
for f in /usr/bin/ncclscope /usr/lib/ncclscope/libncclscope.so /usr/share/man/man1/ncclscope.1.gz \
         /usr/share/bash-completion/completions/ncclscope /usr/share/ncclscope/grafana/ncclscope.json \
         /usr/share/ncclscope/prometheus/ncclscope-rules.yml /usr/share/doc/ncclscope/copyright \
         /usr/share/doc/ncclscope/changelog.gz; do
  check "deb: holds $f" grep -qx "$f" "$T/contents"
done
check_eq "deb: every file owned by root" "" "$(dpkg-deb --contents "$deb" | awk '$2 != "root/root"' | head -3)"

if command -v lintian >/dev/null; then
  lintian "$deb" >"$T/lintian" 2>&1
  check_eq "deb: lintian reports no error" "" "$(grep '^E:' "$T/lintian" | head -5)"
  grep '^W:' "$T/lintian" | sed 's/^/    lintian /' | head -5
else
  skip "deb: lintian not installed (apt-get install lintian): the package's policy checks not run"
fi

# the extracted package traces a job on its own (run finds the shim at ../lib/ncclscope)
dpkg-deb -x "$deb" "$T/root"
mkdir -p "$T/truth"
env -u NCCLSCOPE_SHIM "$T/root/usr/bin/ncclscope" run -o "$T/tr" -- \
  bash "$ROOT/tests/jobs/launch.sh" 2 "$BUILD/tests/ddp_job" --steps 4 --truth "$T/truth" >"$T/run.out" 2>&1
check_eq "deb: the extracted 'ncclscope run' traces a job (exit 0)" 0 "$?"
check_eq "deb: one trace per rank" 2 "$(ls "$T"/tr/*.ncs 2>/dev/null | wc -l)"
pre=$(env -u NCCLSCOPE_SHIM "$T/root/usr/bin/ncclscope" run -o "$T/tr2" -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null | tail -1)
check_eq "deb: the extracted 'run' preloads the extracted shim" "$T/root/usr/lib/ncclscope/libncclscope.so" "$(readlink -f "$pre")"
"$T/root/usr/bin/ncclscope" report --json "$T/tr" >"$T/r.json" 2>"$T/r.err"
check "deb: the extracted CLI's report equals the job's truth per rank and op" python3 - "$T/r.json" "$T/truth" <<'PY'
import glob, json, sys
rep = json.load(open(sys.argv[1]))
truths = sorted(glob.glob(sys.argv[2] + "/truth-rank*.json"))
assert len(truths) == 2 and len(rep["ranks"]) == 2, "ranks %d, truths %d" % (len(rep["ranks"]), len(truths))
for t in truths:
    want = json.load(open(t))
    r = [x for x in rep["ranks"] if x["rank"] == want["rank"]][0]
    got = {k: {"calls": v["calls"], "count": v["count"], "bytes": v["bytes"]} for k, v in r["ops"].items()}
    assert got == want["ops"], (got, want["ops"])
PY
