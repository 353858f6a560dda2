#!/usr/bin/env bash
# The matrix-shaper colour kernels alone (Benchmarks/color_kernel.c says what it prints), built
# with the C compiler SwiftPM uses (clang; CC to choose another) at -O2 against the shims' sources.
#
#   Benchmarks/color-kernel.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh >/dev/null
out=.build/color-kernel
mkdir -p "$out"
cc=${CC:-$(command -v clang || command -v cc)}
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter \
    -I Sources/CWebImageShims/include -I Sources/CWebImageShims \
    Sources/CWebImageShims/*.c Benchmarks/color_kernel.c \
    $(pkg-config --cflags --libs libjpeg libpng libtiff-4 lcms2) -lm -ldl \
    -o "$out/color-kernel"
"$out/color-kernel"
