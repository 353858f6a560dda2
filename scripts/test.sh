#!/usr/bin/env bash
# Sets up a fresh machine and runs every check: bootstrap -> format lint -> build (warnings are
# errors) -> tests. Set WEBIMAGE_CORPUS to a corpus folder to include its MANIFEST.tsv checks.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh

echo "==> swift format lint --strict" >&2
swift format lint --strict --recursive --parallel Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Sources

echo "==> swift test (warnings as errors)" >&2
swift test -Xswiftc -warnings-as-errors "$@"
