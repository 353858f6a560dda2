#!/usr/bin/env bash
# Sets up a fresh machine and runs every check: bootstrap -> C shims under ASan/UBSan -> format
# lint -> build (warnings are errors) -> tests -> docs -> short fuzzing -> stress tests under
# ThreadSanitizer. Set WEBIMAGE_CORPUS to a corpus folder to include its MANIFEST.tsv checks (and
# fuzz seeds).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debug builds compile the coders and the C shims optimised (Package.swift): at -Onone the suites'
# megapixels took 6.5 minutes of CI, one animation test 5.5 of them.
export WEBIMAGE_OPTIMIZE_PIXELS=1

# nginx: the cluster tests put it in front of `webimage serve` nodes (scripts/cluster.sh). time:
# GNU time measures a child's peak memory on its own (the footprint tests).
scripts/bootstrap.sh nginx python3-venv time
# moto[server]: the S3 source tests sign requests against it on loopback.
WEBIMAGE_MOTO_VENV="$(scripts/moto.sh)"
export WEBIMAGE_MOTO_VENV

# The C shims alone, at -O2 under ASan + UBSan: every stop, deadline and error path (about a minute).
echo "==> C shims under AddressSanitizer and UndefinedBehaviorSanitizer" >&2
scripts/c-shims-check.sh

echo "==> swift format lint --strict" >&2
swift format lint --strict --recursive --parallel Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Sources \
    Fuzz/Package.swift Fuzz/Sources

# The library's continuations are hand-offs (WebImageCoders' HandOffContinuation.swift): the Swift
# runtime hides from ThreadSanitizer a checked continuation resumed before its task awaits, and the
# stress pass below then reports what the resume handed over (a decoded image) as a data race.
if grep -rn --include='*.swift' -E 'with(Checked|Unsafe)(Throwing)?Continuation' Sources \
    | grep -v 'Sources/WebImageCoders/Internal/HandOffContinuation.swift'; then
    echo "Sources: use withHandOffContinuation / withThrowingHandOffContinuation (see above)" >&2
    exit 1
fi

# The codec suites (and the encodes stopped at every check, the image processor's, and the
# memory footprint's twelve 3000x2000 fixtures) are CPU-bound and use no network: run in their
# own pass, they do not take the two cores from the network suites' in-process origins and
# timeouts. The hang-up suite keeps `webimage serve` encoding large results on both cores for
# two minutes, so it runs alone. The frame-by-frame proxy suite runs servers in the test process:
# beside the codec suites (synchronous tests, each holding one of the two cooperative-pool threads
# while it decodes) it once waited three minutes for a thread, so it has a pass of its own too.
cpu_bound='WebImageCodersTests|StoppedEncodeTests|ImageProcessorTests|MemoryFootprintTests|AnimationFootprintTests'
heavy="$cpu_bound|FrameByFrameRenderTests|ServeHangUpTests"
echo "==> swift test (warnings as errors): network, cache, pipeline and CLI suites" >&2
swift test -Xswiftc -warnings-as-errors --skip "$heavy" "$@"
echo "==> swift test: codec and other CPU-bound suites" >&2
swift test --skip-build -Xswiftc -warnings-as-errors --filter "$cpu_bound" "$@"
echo "==> swift test: webimage serve rendering animations a frame at a time" >&2
swift test --skip-build -Xswiftc -warnings-as-errors --filter FrameByFrameRenderTests "$@"
echo "==> swift test: webimage serve under hang-ups and deadlines" >&2
swift test --skip-build -Xswiftc -warnings-as-errors --filter ServeHangUpTests "$@"

# The reference docs must build without a DocC warning.
echo "==> DocC (warnings as errors)" >&2
scripts/docs.sh

# A short bounded pass of every fuzz target (libFuzzer + AddressSanitizer); a crash fails. A debug
# build: 8 minutes less to build than release, a minute more to run. The runs take one core for a
# few minutes, so they go on beside the ThreadSanitizer build; its tests start once they are done.
echo "==> fuzz (short pass): build" >&2
export WEBIMAGE_FUZZ_CONFIGURATION=debug
scripts/fuzz.sh --build
fuzz_log=.build/fuzz-short-pass.log
scripts/fuzz.sh --all -runs="${WEBIMAGE_FUZZ_RUNS:-2000}" > "$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill "$fuzz_pid" 2> /dev/null || true' EXIT

# The stress tests of the concurrent types, again under ThreadSanitizer (a separate build folder,
# so the plain build above stays incremental). Any report fails the run.
echo "==> swift build --sanitize=thread (beside the fuzz runs)" >&2
swift build --build-tests --sanitize=thread --build-path .build-tsan -Xswiftc -warnings-as-errors
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
echo "==> fuzz (short pass): runs" >&2
cat "$fuzz_log" >&2
if [ "$fuzz_status" -ne 0 ]; then
    echo "fuzz short pass failed (exit $fuzz_status)" >&2
    exit 1
fi
echo "==> swift test --sanitize=thread (stress tests)" >&2
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
    swift test --sanitize=thread --build-path .build-tsan -Xswiftc -warnings-as-errors --filter '[Ss]tress'
