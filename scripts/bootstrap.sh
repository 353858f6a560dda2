#!/usr/bin/env bash
# Installs the system codec libraries swift-web-image links against, plus any Debian packages
# named as arguments (benchmarks pass their reference tools: scripts/bootstrap.sh libvips-tools).
# Does nothing when they are already present; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libavif-dev libheif-dev libjxl-dev liblcms2-dev libtiff-dev pkg-config libxml2 python3 "$@")

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
