#!/usr/bin/env bash
# Issue 42's check, outside CI: ten rounds of `wrk -c 8 -d 5s` against enlarged JPEG results on
# one `webimage serve` process (wrk hangs up with requests in the encode at the end of each),
# then rounds whose processing deadline falls inside the encodes; the server must survive them
# all. Installs wrk when missing, builds the release binaries. Benchmarks/hangup_soak.py says more.
#
#   Benchmarks/hangup-soak.sh [--rounds 10] [--seconds 5] [--connections 8] [--timeouts 0.3,0.15]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh wrk
webimage="$(scripts/build-webimage.sh)"
swift build -c release --package-path Benchmarks --product webimage-benchmarks >&2
python3 Benchmarks/hangup_soak.py --webimage "$webimage" --benchmarks Benchmarks/.build/release/webimage-benchmarks "$@"
