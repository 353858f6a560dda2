#!/usr/bin/env bash
# The image proxy's own overhead (issue 33): `webimage serve` fitting 100 photos of 2000x1333
# into 512x512 JPEG q80 over HTTP, beside libvips doing the same in-process as imgproxy does it
# (Benchmarks/proxy_vs_vips.py says how). Installs libvips-dev when missing, builds the release
# binaries, compiles Benchmarks/reference/vips_fit.c and prints one Markdown table.
#
#   Benchmarks/proxy-vs-vips.sh [--duration 30] [--threads 2] [--perf DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh libvips-dev

webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2

reference=$(mktemp -d "${TMPDIR:-/tmp}/webimage-vips-fit-XXXXXX")
trap 'rm -rf "$reference"' EXIT
# shellcheck disable=SC2046
cc -O2 -o "$reference/vips_fit" Benchmarks/reference/vips_fit.c $(pkg-config --cflags --libs vips) -lpthread

python3 Benchmarks/proxy_vs_vips.py --webimage "$webimage" \
    --benchmarks Benchmarks/.build/release/webimage-benchmarks --vips-fit "$reference/vips_fit" "$@"
