#!/usr/bin/env bash
# Installs thumbor 7.8.0 (the benchmarks' reference image server) into Benchmarks/.venv-thumbor,
# skipped when it is there, and prints the path of its `thumbor` command.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=Benchmarks/.venv-thumbor
if ! "$venv/bin/thumbor" --version 2>/dev/null | grep -q "v7.8.0"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet thumbor==7.8.0 >&2
fi
echo "$(pwd)/$venv/bin/thumbor"
