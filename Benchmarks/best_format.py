#!/usr/bin/env python3
"""Bytes and look per encoding method (issue 44).

The photo set: scikit-image 0.26.0's bundled colour photos (BSD-3-Clause): astronaut, chelsea,
coffee, hubble_deep_field, ihc, motorcycle_left, motorcycle_right, retina, rocket.

  libvips     `vips thumbnail` to fit 512 (its lossless resize, the reference), then saved as
              imgproxy's open-source defaults do: JPEG Q 80 with optimize_coding, WebP Q 79,
              AVIF Q 63 at imgproxy's speed 8 (heifsave effort 1, AV1)
  webimage    `webimage serve` (--local-root, --format-negotiation, a browser's Accept) for
              rs:fit:512:512 at its fixed defaults (@jpg q80, @webp 79, @avif 63), with
              aq:dssim (imgproxy's default target 0.02 and the server's default ranges; then
              the target and ranges given), and @best; the reference is the same URL as @png

Every result is decoded to PNG by `webimage fetch` and scored with SSIMULACRA2 (ssimulacra2
0.3.0, higher is better) against its pipeline's reference. Each request's time is the median of
ROUNDS sequential requests on the warm server (the source cached, the result not: a cache
buster per round). Prints one Markdown table: mean and largest bytes, bytes against libvips's
JPEG, mean and lowest score, and ms per request.

Run through Benchmarks/best-format.sh, which installs libvips-tools and the Python reference.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import start_serve  # noqa: E402

PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "hubble_deep_field.jpg", "ihc.png",
          "motorcycle_left.png", "motorcycle_right.png", "retina.jpg", "rocket.jpg"]
BROWSER = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"


def photo_set(workdir):
    """The photos, copied out of the installed scikit-image's data folder."""
    import skimage
    data = os.path.join(os.path.dirname(skimage.__file__), "data")
    folder = os.path.join(workdir, "photos")
    os.makedirs(folder)
    for name in PHOTOS:
        shutil.copy(os.path.join(data, name), folder)
    return folder


def to_png(webimage, source, target):
    """Any format we read (AVIF and JPEG XL too) as a lossless PNG, by `webimage fetch`."""
    subprocess.run([webimage, "fetch", "--no-disk-cache", "--format", "png", "--quality", "100",
                    "--color", "ignore", "-o", target, "file://" + source],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def score(reference_png, distorted_png):
    from ssimulacra2 import compute_ssimulacra2_with_alpha
    return float(compute_ssimulacra2_with_alpha(reference_png, distorted_png))


def vips_rows(photos, workdir, webimage):
    """libvips's resize, then its saves at imgproxy's defaults."""
    saves = {
        "libvips JPEG q80 (optimize_coding)": ("jpg", ["jpegsave", "--Q", "80", "--optimize-coding"]),
        "libvips WebP q79": ("webp", ["webpsave", "--Q", "79"]),
        "libvips AVIF q63 (speed 8)": ("avif", ["heifsave", "--Q", "63", "--compression", "av1", "--effort", "1"]),
    }
    rows = {label: [] for label in saves}
    for name in PHOTOS:
        stem = os.path.splitext(name)[0]
        resized = os.path.join(workdir, f"vips-{stem}.v")
        subprocess.run(["vips", "thumbnail", os.path.join(photos, name), resized, "512"], check=True)
        reference = os.path.join(workdir, f"vips-{stem}.png")
        subprocess.run(["vips", "copy", resized, reference], check=True)
        for label, (extension, command) in saves.items():
            out = os.path.join(workdir, f"vips-{stem}.{extension}")
            started = time.perf_counter()
            subprocess.run(["vips", command[0], resized, out] + command[1:], check=True)
            elapsed = (time.perf_counter() - started) * 1000
            decoded = out + ".png"
            to_png(webimage, out, decoded)
            rows[label].append((os.path.getsize(out), score(reference, decoded), elapsed))
    return rows


def fetch(port, path):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Accept": BROWSER})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
        kind = response.headers.get("Content-Type", "")
    return body, kind, (time.perf_counter() - started) * 1000


def webimage_rows(webimage, photos, workdir, rounds, methods):
    # A generous processing timeout: an autoquality request encodes several times, and the
    # benchmark may share the machine.
    server = start_serve(webimage, ["--local-root", photos, "--format-negotiation", "--decoded-cache-size", "0",
                                    "--processing-timeout", "300", "--cache-dir", os.path.join(workdir, "cache")],
                         None)
    rows = {label: [] for label in methods}
    kinds = {label: {} for label in methods}
    try:
        for name in PHOTOS:
            stem = os.path.splitext(name)[0]
            reference_body, _, _ = fetch(server.port, f"/_/rs:fit:512:512/plain/local:///{name}@png")
            reference = os.path.join(workdir, f"ours-{stem}.png")
            with open(reference, "wb") as out:
                out.write(reference_body)
            for label, (options, suffix) in methods.items():
                times = []
                for round_ in range(rounds):
                    path = f"/_/rs:fit:512:512/{options}cb:{round_}/plain/local:///{name}{suffix}"
                    body, kind, elapsed = fetch(server.port, path)
                    times.append(elapsed)
                kinds[label][kind] = kinds[label].get(kind, 0) + 1
                result = os.path.join(workdir, f"ours-{stem}-{len(rows[label])}-{abs(hash(label))}")
                with open(result, "wb") as out:
                    out.write(body)
                to_png(webimage, result, result + ".png")
                rows[label].append((len(body), score(reference, result + ".png"), statistics.median(times)))
    finally:
        server.process.terminate()
        server.process.wait(timeout=30)
    return rows, kinds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", type=float, default=0.02, help="the aq:dssim target of the best rows")
    args = parser.parse_args()
    methods = {
        "webimage JPEG q80": ("", "@jpg"),
        "webimage WebP q79": ("", "@webp"),
        "webimage AVIF q63": ("", "@avif"),
        "webimage JPEG aq:dssim:0.02 (70-80)": ("aq:dssim/", "@jpg"),
        "webimage AVIF aq:dssim:0.02 (60-65)": ("aq:dssim/", "@avif"),
        f"webimage AVIF aq:dssim:{args.target} (30-90)": (f"aq:dssim:{args.target}:30:90/", "@avif"),
        "webimage best (fixed qualities)": ("", "@best"),
        f"webimage best aq:dssim:{args.target} (30-90)": (f"aq:dssim:{args.target}:30:90/", "@best"),
        "webimage AVIF aq:size:12000 (30-90)": ("aq:size:12000:30:90/", "@avif"),
        "webimage JPEG aq:size:12000 (30-90)": ("aq:size:12000:30:90/", "@jpg"),
    }
    workdir = tempfile.mkdtemp(prefix="webimage-best-")
    try:
        photos = photo_set(workdir)
        rows = vips_rows(photos, workdir, args.webimage)
        ours, kinds = webimage_rows(args.webimage, photos, workdir, args.rounds, methods)
        rows.update(ours)
        baseline = statistics.mean(size for size, _, _ in rows["libvips JPEG q80 (optimize_coding)"])
        print(f"{len(PHOTOS)} photos of scikit-image 0.26.0 fit into 512x512; SSIMULACRA2 against each "
              "pipeline's lossless resize; ms: libvips's save alone (CLI, one process each), webimage's whole "
              f"request (median of {args.rounds})\n")
        print("| method | mean bytes | largest | × libvips JPEG | mean score | lowest score | ms | formats |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for label, values in rows.items():
            sizes = [size for size, _, _ in values]
            scores = [value for _, value, _ in values]
            times = [elapsed for _, _, elapsed in values]
            written = ", ".join(f"{kind.split('/')[-1]} {count}" for kind, count in sorted(kinds.get(label, {}).items()))
            print(f"| {label} | {statistics.mean(sizes):,.0f} | {max(sizes):,} | {statistics.mean(sizes) / baseline:.2f} | "
                  f"{statistics.mean(scores):.2f} | {min(scores):.1f} | {statistics.median(times):.0f} | {written} |")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
