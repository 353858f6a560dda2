#!/usr/bin/env python3
"""Whole-process thumbnail benchmark: 12 photos of 4000x3000 JPEG -> 256 px thumbnails, PNG and JPEG.

Rows, in the same run on the same files: `webimage fetch --thumbnail 256x256` (file URLs, one
process for all twelve), `vipsthumbnail` (one process for all twelve), Pillow (draft + thumbnail +
save) twice: timed inside Python (interpreter start-up not counted) and as one whole Python process
for all twelve (start-up and `import PIL` counted, as webimage's are), ImageMagick `convert -thumbnail`
(one process per file, as it is used) and a bare libjpeg-turbo DCT 1/8 decode of the same files
(in-process, no resize or encode: the floor). Each row is the median of --runs runs: wall time and
CPU time (user + system of the process and its children). The runs are taken in rounds, each tool
once per round, so that a slow spell of a shared machine falls on every tool alike rather than on
whichever ran then. JPEG output is quality 85 everywhere.

Run through Benchmarks/thumbnails.sh, which installs the reference tools and builds the binaries.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_process(command):
    """Runs one command, returns (wall ms, CPU ms of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def measure_in_rounds(runs, bodies, fresh_output, after_each):
    """Runs every body once per round, runs + 1 rounds (the first warms the page cache and is
    dropped); returns each body's (median wall ms, median CPU ms), in order."""
    walls, cpus = [[] for _ in bodies], [[] for _ in bodies]
    for index in range(runs + 1):
        for position, body in enumerate(bodies):
            fresh_output()
            wall, cpu = body()
            after_each(position)
            if index:
                walls[position].append(wall)
                cpus[position].append(cpu)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus)]


def pillow_thumbnails(photos, output, extension):
    from PIL import Image

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    for path in photos:
        with Image.open(path) as image:
            image.draft("RGB", (256, 256))
            image.thumbnail((256, 256))
            name = os.path.splitext(os.path.basename(path))[0]
            options = {"quality": 85} if extension == "jpg" else {}
            image.save(os.path.join(output, f"{name}.{extension}"), **options)
    return (time.perf_counter() - start_wall) * 1000, (time.process_time() - start_cpu) * 1000


def pillow_process(photos, output, extension):
    """The same Pillow work as one fresh interpreter process: (wall ms, CPU ms of the process)."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from thumbnails import pillow_thumbnails; "
        "pillow_thumbnails(sys.argv[4:], sys.argv[2], sys.argv[3])"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    return run_process([sys.executable, "-c", script, here, output, extension, *photos])


def check_outputs(output, extension, count, label):
    names = [name for name in os.listdir(output) if name.endswith("." + extension)]
    if len(names) != count:
        sys.exit(f"thumbnails: {label} wrote {len(names)} .{extension} files, expected {count}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webimage", required=True, help="path of the release webimage binary")
    parser.add_argument("--benchmarks", required=True, help="path of the release webimage-benchmarks binary")
    parser.add_argument("--photos", required=True, help="folder of the 12 photos (photo1.jpg ...)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--convert", default="/usr/bin/convert", help="ImageMagick's convert")
    arguments = parser.parse_args()

    photos = sorted(
        os.path.join(arguments.photos, name) for name in os.listdir(arguments.photos) if name.endswith(".jpg")
    )
    output = tempfile.mkdtemp(prefix="webimage-thumbnails-")

    def fresh_output():
        shutil.rmtree(output)
        os.mkdir(output)

    rows = []
    for extension in ("png", "jpg"):
        quality = ["--quality", "85"] if extension == "jpg" else []
        webimage = [
            arguments.webimage, "fetch", "--quiet", "--no-disk-cache", "--thumbnail", "256x256",
            "--format", "png" if extension == "png" else "jpeg", *quality,
            "--output-template", os.path.join(output, "%s." + extension),
            *("file://" + path for path in photos),
        ]  # fmt: skip
        vips_target = os.path.join(output, "%s." + extension) + ("[Q=85]" if extension == "jpg" else "")
        vips = ["vipsthumbnail", "--size", "256x256", "-o", vips_target, *photos]

        def convert_all():
            wall = cpu = 0.0
            for path in photos:
                name = os.path.splitext(os.path.basename(path))[0]
                target = os.path.join(output, f"{name}.{extension}")
                quality_flag = ["-quality", "85"] if extension == "jpg" else []
                one_wall, one_cpu = run_process([arguments.convert, path, "-thumbnail", "256x256", *quality_flag, target])
                wall += one_wall
                cpu += one_cpu
            return wall, cpu

        labelled = (
            ("webimage fetch --thumbnail 256x256", lambda: run_process(webimage)),
            ("vipsthumbnail --size 256x256", lambda: run_process(vips)),
            ("Pillow draft + thumbnail + save", lambda: pillow_thumbnails(photos, output, extension)),
            ("Pillow, whole process (start-up counted)", lambda: pillow_process(photos, output, extension)),
            ("ImageMagick convert -thumbnail 256x256", convert_all),
        )
        results = measure_in_rounds(
            arguments.runs,
            [body for _, body in labelled],
            fresh_output,
            lambda position: check_outputs(output, extension, len(photos), labelled[position][0]),
        )
        for (label, _), (wall, cpu) in zip(labelled, results):
            rows.append((extension.upper().replace("JPG", "JPEG"), label, wall, cpu))

    def bare_decode():
        result = subprocess.run([arguments.benchmarks, "--eighth-decode", *photos], check=True,
                                capture_output=True, text=True)  # fmt: skip
        return float(result.stdout.strip()), float("nan")

    floor = measure_in_rounds(arguments.runs, [bare_decode], fresh_output, lambda _: None)[0][0]
    shutil.rmtree(output)

    print(f"{len(photos)} photos of 4000x3000 -> 256 px, median of {arguments.runs} runs, {os.cpu_count()} cores")
    print("| output | tool | wall ms | CPU ms | wall / Pillow | CPU / Pillow | CPU / Pillow process "
          "| wall / bare 1/8 decode |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for output_format, label, wall, cpu in rows:
        pillow_wall, pillow_cpu = next(
            (w, c) for f, l, w, c in rows if f == output_format and l.startswith("Pillow draft")
        )
        process_cpu = next(c for f, l, _, c in rows if f == output_format and l.startswith("Pillow, whole"))
        print(f"| {output_format} | {label} | {wall:.0f} | {cpu:.0f} | {wall / pillow_wall:.2f} | {cpu / pillow_cpu:.2f} "
              f"| {cpu / process_cpu:.2f} | {wall / floor:.2f} |")
    print(f"| - | bare libjpeg-turbo DCT 1/8 decode (in-process, no resize, no encode) | {floor:.0f} | - | - | - | - "
          "| 1.00 |")


if __name__ == "__main__":
    main()
