#!/usr/bin/env bash
# The per-image cost of `webimage fetch` (issue 33): 1,000 generated JPEGs served by nginx on
# loopback, fetched 6 at a time by `curl --parallel`, by AsyncHTTPClient alone and by `webimage
# fetch` (bytes only, then decoded), beside libjpeg-turbo decoding the same files on both cores
# straight from C (Benchmarks/fetch_cost.py says how). Installs nginx and curl when missing, builds the release
# binaries, writes the photos into a temporary folder and prints one Markdown table.
#
#   Benchmarks/fetch-cost.sh [--rounds 5] [--count 1000] [--size 690x460] [--perf DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh nginx curl

webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2
swift build -c release --package-path Benchmarks --product webimage-http-benchmarks >&2

python3 Benchmarks/fetch_cost.py --webimage "$webimage" \
    --benchmarks Benchmarks/.build/release/webimage-benchmarks \
    --http-benchmarks Benchmarks/.build/release/webimage-http-benchmarks "$@"
