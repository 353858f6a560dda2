#!/usr/bin/env python3
"""Every numeric processing option of `webimage serve` with numbers no integer holds, against one
server: each request must be answered (200, 400 or 422), the server must stay up, and its peak
resident memory is reported (a size that saturates must never become a giant bitmap).

Option templates (crops, gravity and its offsets, extend, padding, dpr with and without enlarging,
zoom, trim, rotation, blur, sharpen, pixelate, watermark position, spacing and scale, quality,
max bytes, autoquality, expiry…) are filled with 1e30, 2^64, -1e30, 1e-30, -0, NaN, inf, 2^31 and
Int64.max, over a JPEG and an APNG of the corpus (WEBIMAGE_CORPUS), with a watermark configured.
Exits 1 on a crash or an unexpected answer. Outside CI (about a minute with a release binary):

    WEBIMAGE_CORPUS=… python3 Benchmarks/extreme_options.py --webimage .build-static/…/webimage
"""

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

# A 20×10 half-transparent red PNG.
WATERMARK = ("iVBORw0KGgoAAAANSUhEUgAAABQAAAAKCAYAAAC0VX7mAAAAG0lEQVR4nGP8z8DQwEBFwERNw0YNHDVwsBgIANvhAZNPKS3qAAAAA"
             "ElFTkSuQmCC")
NUMBERS = ["99999999999999999999", "1e30", "-1e30", "1e-30", "-0", "nan", "inf", "-99999999999999999999", "0.5",
           "2147483648", "-2147483649", "9223372036854775807"]
TEMPLATES = [
    "rs:fit:{}:{}", "rs:fill:{}:{}:1:1", "s:{}:{}", "w:{}", "h:{}", "mw:{}", "mh:{}", "z:{}", "z:{}:{}", "dpr:{}",
    "dpr:{}/el:1/w:10", "z:{}/el:1/w:10", "ex:1:ce:{}:{}", "exar:1:ce:{}:{}", "g:ce:{}:{}", "g:fp:{}:{}",
    "g:nowe:{}:{}/rs:fill:50:50", "c:{}:{}", "c:{}:{}:ce:{}:{}", "c:0.5:0.5:fp:{}:{}", "t:{}", "t:{}:ff0000:1:1",
    "pd:{}", "pd:{}:{}:{}:{}", "pd:10/dpr:{}", "rot:{}", "bl:{}", "sh:{}", "pix:{}", "wm:{}", "wm:1:ce:{}:{}:{}",
    "wm:1:re:{}:{}:{}", "wm:0.5:ce:0:0:{}", "q:{}", "fq:jpeg:{}", "mb:{}", "aq:size:{}", "aq:dssim:{}",
    "bg:{}:{}:{}", "exp:{}", "ar:{}", "rt:{}", "dpr:{}/pd:5", "rs:fit:{}:{}/el:1/dpr:2", "c:{}:{}/el:1/rs:fill:100:100",
    "w:100/dpr:{}/ex:1", "pd:{}/el:1",
]
SOURCES = ["jpeg-baseline-227x149.jpg", "apng-20-frames.png"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--corpus", default=os.environ.get("WEBIMAGE_CORPUS"))
    args = parser.parse_args()
    if not args.corpus:
        sys.exit("extreme_options: --corpus or WEBIMAGE_CORPUS names the image corpus")
    with tempfile.TemporaryDirectory(prefix="webimage-extreme-") as cache:
        server = subprocess.Popen(
            [args.webimage, "serve", "--insecure", "--bind", "127.0.0.1:0", "--cache-dir", cache, "--local-root",
             args.corpus, "--watermark-data", WATERMARK, "--processing-timeout", "20"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            base = re.search(r"http://[0-9.:]+", server.stdout.readline()).group(0)
            answers, unexpected = {}, []
            for template, number, source in itertools.product(TEMPLATES, NUMBERS, SOURCES):
                options = template.replace("{}", number)
                try:
                    with urllib.request.urlopen(f"{base}/insecure/{options}/plain/local:///{source}", timeout=60) as r:
                        r.read()
                        status = r.status
                except urllib.error.HTTPError as error:
                    status = error.code
                except OSError as error:
                    status = f"{type(error).__name__}"
                answers[status] = answers.get(status, 0) + 1
                if status not in (200, 400, 422):
                    unexpected.append((options, source, status))
                if server.poll() is not None:
                    sys.exit(f"extreme_options: the server died at {options} on {source}")
            with open(f"/proc/{server.pid}/status") as status_file:
                peak = int(re.search(r"VmHWM:\s+(\d+)", status_file.read()).group(1)) // 1024
            total = sum(answers.values())
            print(f"{total} requests: " + ", ".join(f"{k} × {v}" for k, v in sorted(answers.items(), key=str))
                  + f"; peak resident memory {peak} MB")
            for item in unexpected[:20]:
                print("unexpected:", item)
            sys.exit(1 if unexpected else 0)
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
