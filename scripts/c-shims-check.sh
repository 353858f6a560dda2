#!/usr/bin/env bash
# Builds the C shims with their test harness (Tests/CShimSanitizerTests) at -O2 under
# AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer, and runs it: every encoder and
# row-wise decoder stopped at each of its check points, with a spent deadline, on errors from the
# libraries, truncated and damaged inputs. Any sanitizer report or failed check fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

out=.build/c-shims
mkdir -p "$out"
cc=${CC:-cc}
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
"$cc" -std=gnu11 -O2 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
    -Wall -Wextra -Werror -Wno-unused-parameter \
    -I Sources/CWebImageShims/include -I Sources/CWebImageShims -I Sources/CWebImageSystem/include \
    Sources/CWebImageShims/*.c Sources/CWebImageSystem/malloc_tuning.c Tests/CShimSanitizerTests/shim_harness.c \
    $(pkg-config --cflags --libs libjpeg libpng libtiff-4 lcms2) -lm \
    -o "$out/shim-harness"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    "$out/shim-harness"
