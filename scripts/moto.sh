#!/usr/bin/env bash
# Installs moto[server] (an S3-compatible server the S3 source tests start on loopback) into a
# virtualenv outside the clone, once; prints the virtualenv's folder. Set WEBIMAGE_MOTO_VENV to
# use another place.
set -euo pipefail
venv="${WEBIMAGE_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/webimage/moto-venv}"
if [[ ! -x "$venv/bin/moto_server" ]]; then
    echo "moto: installing moto[server] into $venv" >&2
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]' >&2
fi
echo "$venv"
