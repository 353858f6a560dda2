#!/usr/bin/env bash
# Builds the release `webimage` binary as it is installed and measured, and prints its path.
# On Linux it carries the Swift runtime and Foundation inside (--static-swift-stdlib): it runs
# where only the codec libraries are installed, and starts about 6 ms sooner (no symbol lookups
# across fifteen more shared libraries; Benchmarks/fetch-cost.sh). Its own build folder
# (.build-static) keeps `swift build -c release` of the other products incremental.
#
#   binary="$(scripts/build-webimage.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."

flags=(-c release)
if [ "$(uname -s)" = Linux ]; then
    flags+=(--static-swift-stdlib --build-path .build-static)
fi
swift build "${flags[@]}" --product webimage >&2
echo "$(swift build "${flags[@]}" --show-bin-path)/webimage"
