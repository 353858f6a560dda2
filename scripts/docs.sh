#!/usr/bin/env bash
# Builds the reference documentation (DocC) of the library modules; any DocC warning fails.
# Archives land in .build/plugins/Swift-DocC/outputs/. Dependencies are not documented here:
# a bare `swift package generate-documentation` also builds theirs, with their warnings.
set -euo pipefail
cd "$(dirname "$0")/.."

swift package generate-documentation --warnings-as-errors \
    --target WebImage --target WebImageHTTP --target WebImageCoders --target WebImageServer "$@"
