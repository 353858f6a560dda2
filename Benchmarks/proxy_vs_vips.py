#!/usr/bin/env python3
"""The image proxy's own overhead against libvips in-process (issue 33).

COUNT photos of 2000x1333 (`webimage-benchmarks --write-photos`), each fit into 512x512 as JPEG
q80:

  webimage serve   over HTTP, CLIENTS keep-alive connections requesting the photos round-robin
                   for DURATION seconds; sources read from disk (`local://`, --local-root), the
                   decoded-source cache off (--decoded-cache-size 0), --workers = THREADS
  libvips          Benchmarks/reference/vips_fit.c, imgproxy's calls: vips_jpegload_buffer with
                   shrink 2/4/8, vips_resize (lanczos3), vips_jpegsave_buffer Q 80, on THREADS
                   threads, in-process, no HTTP, photos already in memory; once with standard
                   Huffman tables (as webimage writes them: the ratio), once with imgproxy's
                   optimize_coding

Both in the same run; prints images/s and the ratio (webimage / libvips). With --perf DIR, a
`perf record -g` of the server during a second load phase lands in DIR/serve.data.

Run through Benchmarks/proxy-vs-vips.sh, which installs libvips-dev, builds the binaries and
compiles the reference.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import check_result, load, start_serve  # noqa: E402


def start_local(binary, photos, cache_dir, workers):
    def path_for(photo, fmt):
        return f"/_/rs:fit:512:512/q:80/plain/local:///{photo}@jpg"

    arguments = ["--local-root", photos, "--decoded-cache-size", "0", "--cache-dir", cache_dir, "--workers", str(workers)]
    return start_serve(binary, arguments, path_for)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--benchmarks", required=True, help="the webimage-benchmarks binary")
    parser.add_argument("--vips-fit", required=True, help="the compiled Benchmarks/reference/vips_fit.c")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vips-rounds", type=int, default=3)
    parser.add_argument("--perf", help="record a perf profile of the server here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="webimage-vips-")
    server = None
    try:
        photos = os.path.join(workdir, "photos")
        subprocess.run([args.benchmarks, "--write-photos", photos, str(args.count), "2000x1333"], check=True)
        names = sorted(os.listdir(photos))
        server = start_local(args.webimage, photos, os.path.join(workdir, "cache"), args.threads)
        for name in names:  # warm-up, and every answer checked
            check_result(server, name, "jpeg")
        proxy = load(server, names, "jpeg", args.clients, args.duration)
        if proxy["failures"]:
            raise SystemExit(f"webimage serve: {proxy['failures']} failed requests")
        if args.perf:
            os.makedirs(args.perf, exist_ok=True)
            recorder = subprocess.Popen(
                ["perf", "record", "-g", "-p", str(server.process.pid), "-o", os.path.join(args.perf, "serve.data")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            load(server, names, "jpeg", args.clients, min(args.duration, 15))
            recorder.send_signal(2)
            recorder.wait(timeout=60)
        files = [os.path.join(photos, name) for name in names]

        def vips_fit(optimize):
            run = subprocess.run([args.vips_fit, str(args.threads), str(args.vips_rounds), str(optimize)] + files,
                                 check=True, capture_output=True, text=True)
            return json.loads(run.stdout)

        vips = vips_fit(0)
        vips_optimized = vips_fit(1)
        ratio = proxy["rate"] / vips["rate"]
        print(f"{len(names)} photos of 2000x1333 fit into 512x512 as JPEG q80, {args.threads} threads\n")
        print("| run | images/s | notes |")
        print("| --- | ---: | --- |")
        print(f"| webimage serve | {proxy['rate']:.1f} | over HTTP, {args.clients} connections, "
              f"p50 {proxy['p50']:.1f} ms, {proxy['requests']} requests, decoded-source cache off |")
        print(f"| libvips in-process | {vips['rate']:.1f} | jpegload shrink + resize + jpegsave Q 80, "
              f"{vips['images']} images, no HTTP |")
        print(f"| libvips, optimize_coding | {vips_optimized['rate']:.1f} | as imgproxy saves JPEG |")
        print(f"\nwebimage / libvips = {ratio:.2f} (target ≥ 1.5); "
              f"against optimize_coding {proxy['rate'] / vips_optimized['rate']:.2f}")
        if args.json:
            print(json.dumps({"webimage": proxy, "libvips": vips, "libvips_optimize_coding": vips_optimized,
                              "ratio": round(ratio, 2)}))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
