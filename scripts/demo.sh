#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: `webimage demo`, the whole pipeline offline
# (generated images, a local origin on 127.0.0.1, network / memory / disk passes).
# Extra arguments go to the demo (`scripts/demo.sh --json`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
swift build --product webimage >&2
exec .build/debug/webimage demo "$@"
