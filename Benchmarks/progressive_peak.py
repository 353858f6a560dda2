#!/usr/bin/env python3
"""Peak resident memory of one `webimage fetch` of twelve 12 MP JPEGs: baseline, half or all progressive.

Writes 12 distinct 4000x3000 JPEGs (`webimage-benchmarks --write-photos`), makes progressive copies
of them with `jpegtran -progressive` (lossless: the same pixels; Debian's libjpeg-turbo-progs,
installed through scripts/bootstrap.sh when missing) and fetches three sets as `file://` URLs in
one process each, with the CLI's defaults and a fresh disk cache per run: all baseline, six
progressive and six baseline (issue 46's set), all progressive. Each binary given runs in turn,
--runs times; the peak is GNU time's maximum resident set size, printed in MB (10^6 bytes) as the
median and the highest of the runs.

  python3 Benchmarks/progressive_peak.py --benchmarks Benchmarks/.build/release/webimage-benchmarks \\
      --webimage NEW/webimage [--webimage OLD/webimage] [--runs 7]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_kib(binary, urls, cache):
    """Runs one fetch of `urls` under GNU time; returns its peak RSS in KiB."""
    shutil.rmtree(cache, ignore_errors=True)
    report = cache + ".time"
    result = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report, binary, "fetch", "--cache-dir", cache] + urls,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"progressive_peak: {binary} fetch failed ({result.returncode}): {result.stderr.strip()}")
    with open(report) as f:
        return int(f.read().split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", action="append", required=True, help="a webimage binary (repeat to compare)")
    parser.add_argument("--benchmarks", required=True, help="the webimage-benchmarks binary (writes the photos)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for binary in args.webimage + [args.benchmarks, "/usr/bin/time"]:
        if not os.access(binary, os.X_OK):
            sys.exit(f"progressive_peak: {binary}: not an executable file (GNU time: Debian's `time`)")
    if shutil.which("jpegtran") is None:
        subprocess.run([os.path.join(ROOT, "scripts", "bootstrap.sh"), "libjpeg-turbo-progs"], check=True)

    with tempfile.TemporaryDirectory(prefix="webimage-progressive-peak-") as scratch:
        baseline, progressive = os.path.join(scratch, "baseline"), os.path.join(scratch, "progressive")
        os.makedirs(progressive)
        subprocess.run([args.benchmarks, "--write-photos", baseline, "12"], check=True, stdout=subprocess.DEVNULL)
        names = [f"photo{n}.jpg" for n in range(1, 13)]
        for name in names:
            subprocess.run(["jpegtran", "-progressive", "-copy", "all", "-outfile", os.path.join(progressive, name),
                            os.path.join(baseline, name)], check=True)
        sets = {
            "12 baseline": [os.path.join(baseline, n) for n in names],
            "6 progressive + 6 baseline": [os.path.join(progressive if i % 2 == 0 else baseline, n)
                                           for i, n in enumerate(names)],
            "12 progressive": [os.path.join(progressive, n) for n in names],
        }
        cache = os.path.join(scratch, "cache")
        peaks = {(binary, name): [] for binary in args.webimage for name in sets}
        for run_index in range(args.runs):
            binaries = args.webimage if run_index % 2 == 0 else list(reversed(args.webimage))
            for name, files in sets.items():
                for binary in binaries:
                    peaks[(binary, name)].append(peak_kib(binary, ["file://" + path for path in files], cache))

    print(f"Twelve 4000x3000 JPEGs through one `webimage fetch` (file URLs, CLI defaults), {args.runs} runs each\n")
    print("| binary | files | peak RSS MB, median | highest |")
    print("| --- | --- | ---: | ---: |")
    for (binary, name), values in peaks.items():
        median_mb = statistics.median(values) * 1024 / 1e6
        print(f"| {binary} | {name} | {median_mb:.0f} | {max(values) * 1024 / 1e6:.0f} |")


if __name__ == "__main__":
    main()
