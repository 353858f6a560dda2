#!/usr/bin/env bash
# Animations resized a frame at a time (issue 43) beside the whole-animation path: a 512² ×
# 100-frame animated GIF and WebP fit into 256×256 by `webimage fetch` and `webimage serve`, each
# path's median time and peak resident memory (Benchmarks/animation.py says how). Builds the
# release binary, writes the animations into a temporary folder and prints one Markdown table.
#
#   Benchmarks/animation.sh [--rounds 5] [--size 512x512] [--frames 100]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
webimage="$(scripts/build-webimage.sh)"
python3 Benchmarks/animation.py --webimage "$webimage" "$@"
