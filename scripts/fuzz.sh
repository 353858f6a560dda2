#!/usr/bin/env bash
# Builds webimage-fuzz (libFuzzer + AddressSanitizer, Fuzz/ package) and runs fuzz targets.
#
#   scripts/fuzz.sh TARGET [libFuzzer flags]   e.g. scripts/fuzz.sh jpeg -max_total_time=600
#   scripts/fuzz.sh --all [libFuzzer flags]    every target in turn (CI: scripts/fuzz.sh --all -runs=2000)
#   scripts/fuzz.sh --build                    only build the binary
#
# WEBIMAGE_FUZZ_CONFIGURATION=debug builds in 13 minutes instead of 21 from scratch and runs
# about a third slower (the short pass of scripts/test.sh); release (the default) is for long runs.
#
# Targets: sniff (format and header) decode jpeg png gif webp avif heic jxl bmp ico tiff thumbnail progressive
# disk-entry http, proxy-path (request paths and options) and render (options and a format applied to
# a generated image, stopped at a check the input picks).
# Seeds come from our own encoders, plus the images of $WEBIMAGE_CORPUS when it is set. Inputs
# that grow coverage collect in .build/fuzz/corpus/TARGET; a crash leaves its input in
# .build/fuzz/crashes/ and fails the run (then add it as a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
    sed -n '2,15p' "$0" >&2
    exit 2
fi

configuration=${WEBIMAGE_FUZZ_CONFIGURATION:-release}
swift build --package-path Fuzz -c "$configuration" -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld \
    --product webimage-fuzz >&2
binary=Fuzz/.build/$configuration/webimage-fuzz
if [ "$1" = "--build" ]; then exit 0; fi
work=.build/fuzz
mkdir -p "$work/seeds" "$work/crashes"
# No leak check while writing seeds: libheif 1.15's x265 plugin leaks ~1 KB per HEIC encode
# (inside x265_malloc); the fuzz runs below keep LeakSanitizer on.
ASAN_OPTIONS=detect_leaks=0 "$binary" --make-seeds "$work/seeds"
if [ -n "${WEBIMAGE_CORPUS:-}" ] && [ -d "$WEBIMAGE_CORPUS" ]; then
    find "$WEBIMAGE_CORPUS" -maxdepth 1 -type f \( -name '*.jpg' -o -name '*.png' -o -name '*.gif' -o -name '*.webp' -o -name '*.avif' -o -name '*.avifs' \
        -o -name '*.heic' -o -name '*.heif' -o -name '*.jxl' \) \
        -size -512k -exec cp {} "$work/seeds/" \;
fi

all_targets="sniff decode jpeg png gif webp avif heic jxl bmp ico tiff thumbnail animated progressive disk-entry http proxy-path render"
target=$1
shift
if [ "$target" = "--all" ]; then targets=$all_targets; else targets=$target; fi

for name in $targets; do
    echo "==> fuzz $name $*" >&2
    mkdir -p "$work/corpus/$name"
    # Swift's backtracer would symbolicate a trap for longer than -timeout, so libFuzzer
    # reported a crash as a timeout; its own deadly-signal handler names the trap at once.
    SWIFT_BACKTRACE=enable=no WEBIMAGE_FUZZ_TARGET=$name "$binary" -max_len=262144 -rss_limit_mb=3072 -timeout=20 \
        -artifact_prefix="$work/crashes/$name-" -print_final_stats=1 "$@" "$work/corpus/$name" "$work/seeds" 2>&1 |
        grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|Done|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" >&2 ||
        true
    if ls "$work/crashes/$name-"* > /dev/null 2>&1; then
        echo "fuzz $name: crash inputs in $work/crashes/" >&2
        exit 1
    fi
done
