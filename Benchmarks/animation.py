#!/usr/bin/env python3
"""Animations resized a frame at a time beside the whole-animation path, in one run.

Writes a WIDTHxHEIGHT animated GIF of FRAMES frames (grey bands under a moving square, each
frame 40-70 ms; written here, a sub-rectangle per frame) and the same animation as an animated
WebP and an AVIF sequence (`webimage fetch` converts it), then for each source, each round in
the same order:

  CLI frames   webimage fetch --thumbnail 256x256 -o out.webp (frames decoded, reduced and
               encoded one at a time)
  CLI resize   webimage fetch --resize 256x256 -o out.webp (the manager decodes and resizes a
               frame at a time)
  CLI whole    the same with --options progressive-load: the loader decodes every frame at full
               size, then the transformer resizes them (the path every animation took before)
  proxy frames GET /_/rs:fit:256:256/plain/local:///SOURCE (the source's format kept)
  proxy whole  the same with mb:1000000000: max_bytes takes the whole-animation render (it may
               re-encode smaller, so it needs the whole result; at 1 GB it encodes once)

Each proxy row has its own `webimage serve` (one worker), so its peak RSS (VmHWM) is its
own. CLI peak RSS is GNU-time-style wait4 of a child of this small Python process. Times are
medians over the rounds. Prints one Markdown table.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request

from fetch_cost import run
from serve import free_port, rss_kib, wait_for


def write_gif(path, width, height, frames):
    """A GIF89a of `frames` frames: full bands first, then a 1/4-side square per frame."""

    def lzw(indices):
        # Literal codes only (9 bits, a clear code every 250): valid LZW any decoder reads.
        codes = []
        for start in range(0, len(indices), 250):
            codes.append(256)
            codes.extend(indices[start:start + 250])
        codes.append(257)
        codes.extend([257] * (-len(codes) % 8))
        out = bytearray()
        for group in range(0, len(codes), 8):
            value = 0
            for shift, code in enumerate(codes[group:group + 8]):
                value |= code << (9 * shift)
            out += value.to_bytes(9, "little")
        blocks = bytearray([8])
        for start in range(0, len(out), 255):
            chunk = out[start:start + 255]
            blocks += bytes([len(chunk)]) + chunk
        return bytes(blocks + b"\x00")

    palette = bytearray()
    for index in range(256):
        palette += bytes([index, (index * 3) % 256, 255 - index])
    data = bytearray(b"GIF89a")
    data += width.to_bytes(2, "little") + height.to_bytes(2, "little") + bytes([0xF7, 0, 0]) + palette
    data += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    side = max(1, min(width, height) // 4)
    for number in range(frames):
        delay = 4 + number % 4
        data += b"\x21\xf9\x04\x04" + delay.to_bytes(2, "little") + b"\x00\x00"
        if number == 0:
            left, top, w, h = 0, 0, width, height
            pixels = [60 if (i // width) // 32 % 2 == 0 else 190 for i in range(width * height)]
        else:
            left, top, w, h = (number * 37) % (width - side), (number * 23) % (height - side), side, side
            shade = (number * 53) % 256
            pixels = [(shade + (i % side) // 16) % 256 for i in range(side * side)]
        data += b"\x2c" + b"".join(v.to_bytes(2, "little") for v in (left, top, w, h)) + b"\x00"
        data += lzw(pixels)
    data += b"\x3b"
    with open(path, "wb") as f:
        f.write(data)


def frame_count(webimage, path):
    """Frames of an image file, by `webimage info --json`."""
    out = subprocess.run([webimage, "info", "--json", "file://" + path], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[0]).get("frames", 1)


def proxy_row(webimage, folder, scratch, path, rounds):
    """Starts a server of its own, GETs `path` `rounds` times; returns (median s, peak MB, bytes)."""
    port = free_port()
    cache = tempfile.mkdtemp(dir=scratch)
    server = subprocess.Popen(
        [webimage, "serve", "--bind", f"127.0.0.1:{port}", "--insecure", "--local-root", folder,
         "--cache-dir", cache, "--workers", "1", "--max-src-resolution", "100",
         "--processing-timeout", "120"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(base + "/health")
        times, size = [], 0
        for _ in range(rounds):
            started = time.perf_counter()
            with urllib.request.urlopen(base + path, timeout=300) as response:
                size = len(response.read())
            times.append(time.perf_counter() - started)
        return statistics.median(times), rss_kib(server.pid, "VmHWM") / 1024, size
    finally:
        server.terminate()
        server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", default="512x512")
    parser.add_argument("--frames", type=int, default=100)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    scratch = tempfile.mkdtemp(prefix="webimage-animation-")
    try:
        folder = os.path.join(scratch, "sources")
        os.mkdir(folder)
        gif = os.path.join(folder, "anim.gif")
        webp = os.path.join(folder, "anim.webp")
        avif = os.path.join(folder, "anim.avif")
        write_gif(gif, width, height, args.frames)
        run([args.webimage, "fetch", "--no-disk-cache", "--quality", "90", "-o", webp, "file://" + gif])
        run([args.webimage, "fetch", "--no-disk-cache", "--quality", "60", "-o", avif, "file://" + gif])
        out = os.path.join(scratch, "out.webp")
        rows = []
        for source in (gif, webp, avif):
            name = os.path.basename(source)
            frames = frame_count(args.webimage, source)
            for label, flags in (("CLI frames", ["--thumbnail"]), ("CLI resize", ["--resize"]),
                                 ("CLI whole", ["--options", "progressive-load", "--resize"])):
                results = [
                    run([args.webimage, "fetch", "--no-disk-cache", "--memory-cache", "0", *flags, "256x256",
                         "-o", out, "file://" + source])
                    for _ in range(args.rounds)
                ]
                kept = frame_count(args.webimage, out)
                rows.append((name, frames, label, statistics.median(r[0] for r in results),
                             max(r[1] for r in results), os.path.getsize(out), kept))
            for label, options in (("proxy frames", "rs:fit:256:256"), ("proxy whole", "rs:fit:256:256/mb:1000000000")):
                seconds, peak, size = proxy_row(args.webimage, folder, scratch,
                                                f"/_/{options}/plain/local:///{name}", args.rounds)
                rows.append((name, frames, label, seconds, peak, size, None))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"Animations {width}x{height} x {args.frames} frames resized to fit 256x256, "
          f"median of {args.rounds} rounds\n")
    print("| source | path | seconds | peak RSS MB | result bytes | frames kept |")
    print("|---|---|---:|---:|---:|---:|")
    for name, frames, label, seconds, peak, size, kept in rows:
        kept_text = "" if kept is None else f"{kept} of {frames}"
        print(f"| {name} | {label} | {seconds:.3f} | {peak:.0f} | {size} | {kept_text} |")


if __name__ == "__main__":
    main()
