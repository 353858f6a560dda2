#!/usr/bin/env bash
# The image proxy benchmark: `webimage serve` beside thumbor 7.8.0 on ~100 photos of 2000×1333
# fit into 512×512 (JPEG q80, WebP, PNG), 2 concurrent clients (Benchmarks/serve.py says how).
# Installs thumbor into Benchmarks/.venv-thumbor first (skipped when it is there), builds the
# release binaries, writes the photos into a temporary folder and prints one Markdown table.
#
#   Benchmarks/serve.sh [--duration SECONDS] [--formats jpeg,webp,png] [--soak SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
thumbor=$(Benchmarks/thumbor-venv.sh)

webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2

photos=$(mktemp -d "${TMPDIR:-/tmp}/webimage-serve-photos-XXXXXX")
trap 'rm -rf "$photos"' EXIT
Benchmarks/.build/release/webimage-benchmarks --write-photos "$photos" 100 2000x1333
"$(dirname "$thumbor")/python" Benchmarks/serve.py --webimage "$webimage" --thumbor "$thumbor" \
    --photos "$photos" "$@"
