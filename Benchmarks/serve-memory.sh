#!/usr/bin/env bash
# What an idle `webimage serve` keeps after a minute of mixed traffic over the image corpus
# (whole, dropped, slowly read, pipelined and garbage requests), with --free-memory-interval 10 s
# and with 0, in one run; fails when a server dies, stops answering or keeps descriptors. Needs
# WEBIMAGE_CORPUS; builds the release binary. Benchmarks/serve_memory.py says more.
#
#   Benchmarks/serve-memory.sh [--seconds 60] [--clients 24] [--idle 15] [-- more serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."

webimage="$(scripts/build-webimage.sh)"
python3 Benchmarks/serve_memory.py --webimage "$webimage" "$@"
