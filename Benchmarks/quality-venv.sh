#!/usr/bin/env bash
# Installs the quality benchmark's reference tools into Benchmarks/.venv-quality, skipped when
# they are there: ssimulacra2 0.3.0 (a Python SSIMULACRA2 on numpy and scipy) and
# scikit-image 0.26.0, whose wheel carries the photo set. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=Benchmarks/.venv-quality
if ! "$venv/bin/python" -c "import ssimulacra2, skimage" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet ssimulacra2==0.3.0 scikit-image==0.26.0 >&2
fi
echo "$(pwd)/$venv/bin/python"
