#!/usr/bin/env bash
# AVIF bytes at equal SSIMULACRA2 against time, per AV1 encoder and speed (issue 44; the README's
# table and the reason for `--avif-speed`'s default). Installs the Python reference
# (Benchmarks/quality-venv.sh) when missing, builds the release binary, prints one Markdown table.
#
#   Benchmarks/avif-speeds.sh [--rounds 3] [--target 75.2]
set -euo pipefail
cd "$(dirname "$0")/.."

python="$(Benchmarks/quality-venv.sh)"
webimage="$(scripts/build-webimage.sh)"
"$python" Benchmarks/avif_speeds.py --webimage "$webimage" "$@"
