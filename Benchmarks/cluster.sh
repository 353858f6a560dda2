#!/usr/bin/env bash
# The cluster load test (Benchmarks/cluster.py says what it measures): three `webimage serve`
# nodes behind nginx (scripts/cluster.sh) under wrk, beside thumbor 7.8.0 behind the same nginx
# configuration and nginx serving the same bytes as static files. Installs nginx, wrk and thumbor
# (Benchmarks/.venv-thumbor) when missing, builds the release binary, writes 200 photos.
#
#   Benchmarks/cluster.sh [--duration 300] [--warm-duration 10] [--warm-rounds 5] [--cold-rounds 5] [--parts cold,warm,mix,kill]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh nginx wrk
thumbor=$(Benchmarks/thumbor-venv.sh)

webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2

photos=$(mktemp -d "${TMPDIR:-/tmp}/webimage-cluster-photos-XXXXXX")
trap 'rm -rf "$photos"' EXIT
Benchmarks/.build/release/webimage-benchmarks --write-photos "$photos" 200 2000x1333 >&2
python3 Benchmarks/cluster.py --webimage "$webimage" --thumbor "$thumbor" \
    --photos "$photos" "$@"
