#!/usr/bin/env bash
# Whole-process thumbnail benchmark (12 photos of 4000×3000 → 256 px, PNG and JPEG output):
# webimage fetch beside vipsthumbnail, Pillow, ImageMagick and a bare libjpeg-turbo 1/8 decode.
# Installs the reference tools first, skipped when present (Debian libvips-tools and imagemagick
# through scripts/bootstrap.sh, Pillow through pip), builds the release binaries, writes the photos
# into a temporary folder and prints one Markdown table (Benchmarks/thumbnails.py says what each
# row measures).
#
#   Benchmarks/thumbnails.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh libvips-tools imagemagick
python3 -c 'import PIL' 2>/dev/null || python3 -m pip install --quiet pillow >&2

webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2

photos=$(mktemp -d "${TMPDIR:-/tmp}/webimage-photos-XXXXXX")
trap 'rm -rf "$photos"' EXIT
Benchmarks/.build/release/webimage-benchmarks --write-photos "$photos" 12
python3 Benchmarks/thumbnails.py --webimage "$webimage" \
    --benchmarks Benchmarks/.build/release/webimage-benchmarks --photos "$photos" "$@"
