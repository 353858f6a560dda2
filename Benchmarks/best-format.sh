#!/usr/bin/env bash
# Bytes at the same look (issue 44): scikit-image's colour photos fit into 512x512 by
# `webimage serve` at fixed qualities (JPEG 80, WebP 79, AVIF 63), with autoquality and with
# format:best, beside libvips saving its own resize as imgproxy's open-source defaults do;
# every result scored with SSIMULACRA2 against the same pipeline's lossless resize
# (Benchmarks/best_format.py says how). Installs libvips-tools and the Python reference
# (Benchmarks/quality-venv.sh) when missing, builds the release binary, prints one Markdown table.
#
#   Benchmarks/best-format.sh [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh libvips-tools
python="$(Benchmarks/quality-venv.sh)"
webimage="$(scripts/build-webimage.sh)"
"$python" Benchmarks/best_format.py --webimage "$webimage" "$@"
