#!/usr/bin/env python3
"""AVIF bytes at equal look against encode time, per AV1 encoder and speed (issue 44).

The photo set and scoring of Benchmarks/best_format.py: scikit-image's colour photos fit into
512x512 by `webimage serve`, every result decoded by `webimage fetch` and scored with
SSIMULACRA2 against the same server's lossless resize. For each encoder (aom, SVT-AV1, rav1e
through libavif) and speed, one server (`--avif-speed`, `--avif-encoder`) answers each photo at
a few qualities; the mean bytes at the TARGET score (default 75.2: libvips's JPEG q80 scores 76.2
on this set, less the one point issue 44 allows) are interpolated between the two qualities
either side, on the logarithm of the bytes. Each request's time is the median of ROUNDS on the
warm server. Prints one Markdown table, against aom at speed 8 (imgproxy's default).

Run through Benchmarks/avif-speeds.sh.
"""

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_format import PHOTOS, fetch, photo_set, score, to_png  # noqa: E402
from serve import start_serve  # noqa: E402

CONFIGURATIONS = [("aom", speed) for speed in (9, 8, 7, 6, 5)] + [("svt", 8), ("svt", 6), ("rav1e", 8), ("rav1e", 6)]
QUALITIES = [50, 56, 63, 70, 76]


class EncoderFailed(Exception):
    """A request the server could not answer with this encoder and speed."""


def measure(webimage, photos, workdir, encoder, speed, rounds):
    """Per quality: mean bytes, mean score, median ms per request."""
    server = start_serve(webimage, ["--local-root", photos, "--decoded-cache-size", "0", "--processing-timeout",
                                    "300", "--avif-speed", str(speed), "--avif-encoder", encoder,
                                    "--cache-dir", os.path.join(workdir, f"cache-{encoder}-{speed}")], None)
    rows = {}
    try:
        references = {}
        for name in PHOTOS:
            body, _, _ = fetch(server.port, f"/_/rs:fit:512:512/plain/local:///{name}@png")
            references[name] = os.path.join(workdir, f"ref-{name}.png")
            with open(references[name], "wb") as out:
                out.write(body)
        for quality in QUALITIES:
            sizes, scores, times = [], [], []
            for name in PHOTOS:
                elapsed = []
                for round_ in range(rounds):
                    path = f"/_/rs:fit:512:512/q:{quality}/cb:{round_}/plain/local:///{name}@avif"
                    try:
                        body, _, ms = fetch(server.port, path)
                    except urllib.error.HTTPError as error:
                        raise EncoderFailed(f"{path}: {error.code} {error.read()[:200].decode(errors='replace')}")
                    elapsed.append(ms)
                result = os.path.join(workdir, f"out-{encoder}-{speed}-{quality}-{name}.avif")
                with open(result, "wb") as out:
                    out.write(body)
                to_png(webimage, result, result + ".png")
                sizes.append(len(body))
                scores.append(score(references[name], result + ".png"))
                times.append(statistics.median(elapsed))
            rows[quality] = (statistics.mean(sizes), statistics.mean(scores), statistics.median(times))
    finally:
        server.stop()
    return rows


def bytes_at(rows, target):
    """Mean bytes where the mean score crosses `target` (log-linear between two qualities)."""
    points = sorted(rows.values(), key=lambda row: row[1])
    for (low_bytes, low_score, _), (high_bytes, high_score, _) in zip(points, points[1:]):
        if low_score <= target <= high_score and high_score > low_score:
            fraction = (target - low_score) / (high_score - low_score)
            return math.exp(math.log(low_bytes) + fraction * (math.log(high_bytes) - math.log(low_bytes)))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", type=float, default=75.2)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="webimage-avif-speeds-")
    try:
        photos = photo_set(workdir)
        results = {}
        failures = {}
        for encoder, speed in CONFIGURATIONS:
            try:
                results[(encoder, speed)] = measure(args.webimage, photos, workdir, encoder, speed, args.rounds)
            except EncoderFailed as failure:
                failures[(encoder, speed)] = str(failure)
        baseline = results[("aom", 8)]
        base_bytes = bytes_at(baseline, args.target)
        base_ms = statistics.median(row[2] for row in baseline.values())
        print(f"{len(PHOTOS)} photos fit into 512x512; mean bytes at a mean SSIMULACRA2 of {args.target} "
              f"(interpolated between qualities {QUALITIES}); ms: median request, median of {args.rounds}\n")
        print("| AV1 encoder | speed | bytes at equal look | × aom speed 8 | score at q63 | ms per request | × aom speed 8 |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for (encoder, speed), rows in results.items():
            at = bytes_at(rows, args.target)
            ms = statistics.median(row[2] for row in rows.values())
            shown = f"{at:,.0f} | {at / base_bytes:.2f}" if at and base_bytes else "– | –"
            print(f"| {encoder} | {speed} | {shown} | {rows[63][1]:.1f} | {ms:.0f} | {ms / base_ms:.2f} |")
        for (encoder, speed), failure in failures.items():
            print(f"| {encoder} | {speed} | failed: {failure} | | | | |")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
