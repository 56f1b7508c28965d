#!/usr/bin/env bash
# make-deb.sh BUILD — builds BUILD/ncclscope_<version>_<arch>.deb with dpkg-deb (`make deb`):
# the CLI (/usr/bin/ncclscope), the shim (/usr/lib/ncclscope/libncclscope.so, where the
# installed `ncclscope run` finds it), the man page (gzipped), bash completion, the Grafana
# dashboard and Prometheus rules (/usr/share/ncclscope/), the docs users read
# (/usr/share/doc/ncclscope/). Staged through `make install PREFIX=/usr DESTDIR=...`, so the
# package holds what an install holds. Prints the package's path.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
version=$("$BUILD/ncclscope" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
maint="${DEBFULLNAME:-ncclscope builders} <${DEBEMAIL:-ncclscope@example.org}>" # set DEBFULLNAME/DEBEMAIL to sign it
stage=$BUILD/deb/ncclscope
rm -rf "$BUILD/deb" && mkdir -p "$stage/DEBIAN"
make -s -C "$ROOT" BUILD="$BUILD" install PREFIX=/usr DESTDIR="$stage" >/dev/null
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/ncclscope" \
  "$stage/usr/lib/ncclscope/libncclscope.so"
gzip -9n "$stage/usr/share/man/man1/ncclscope.1"
install -D -m 0644 "$ROOT/contrib/grafana/ncclscope.json" "$stage/usr/share/ncclscope/grafana/ncclscope.json"
install -D -m 0644 "$ROOT/contrib/prometheus/ncclscope-rules.yml" "$stage/usr/share/ncclscope/prometheus/ncclscope-rules.yml"
doc=$stage/usr/share/doc/ncclscope
install -d -m 0755 "$doc"
for f in README.md docs/SHIM.md docs/CLI.md docs/METRICS.md docs/METRICS-EXPORT.md docs/DOCTOR.md; do
  install -m 0644 "$ROOT/$f" "$doc/$(basename "$f")"
done
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ncclscope
Comment: built from the ncclscope source tree; see README.md.

Files: *
Copyright: 2026 the ncclscope authors
License: unspecified
 No licence has been chosen for ncclscope yet; this package is for internal use.
EOF
date=$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}")
printf 'ncclscope (%s) unstable; urgency=medium\n\n  * Built from the source tree (make deb).\n\n -- %s  %s\n' \
  "$version" "$maint" "$date" | gzip -9n >"$doc/changelog.gz"
find "$stage" -type d -exec chmod 0755 {} +
size=$(du -k -s --exclude=DEBIAN "$stage" | awk '{print $1}')
cat >"$stage/DEBIAN/control" <<EOF
Package: ncclscope
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $size
Depends: libc6 (>= 2.34), libzstd1
Recommends: libunwind8
Suggests: prometheus-node-exporter
Section: devel
Priority: optional
Homepage: https://localhost/ncclscope
Description: NCCL call tracer for unmodified training jobs
 ncclscope traces every NCCL call of a job through an LD_PRELOAD library
 (libncclscope.so, one compressed trace per process) and explains it with the
 ncclscope command: report, doctor, html, timeline, compare, watch. With
 NCCLSCOPE_METRICS it also writes live metrics for Prometheus' node exporter;
 a Grafana dashboard and alert rules are in /usr/share/ncclscope.
EOF
out=$BUILD/ncclscope_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
