#!/usr/bin/env python3
"""The image proxy benchmark, in the shape of imgproxy's published harness.

About 100 photos of 2000x1333, each fit into 512x512 (JPEG q80, also WebP and PNG), requested
by 2 concurrent keep-alive clients, against `webimage serve` and thumbor (one process,
ENGINE_THREADPOOL_SIZE = the core count, originals read from disk by its file loader, no result
storage) in the same run on this machine. Prints requests/s, p50/p95 latency and each server's
peak RSS as one Markdown table, thumbor's JPEG rate beside ours.

`webimage serve` fetches originals from a plain HTTP origin on 127.0.0.1 once (the warm-up) and
reads them from its disk cache after that; thumbor reads them from the same folder on disk. The
warm-up also makes both servers load their code paths before the measured phase.

With --soak SECONDS it then runs JPEG load against `webimage serve` alone for that long and
reports its resident memory over time (the "RSS flat over 10 minutes" check).

Run through Benchmarks/serve.sh, which installs thumbor into a virtualenv and builds the binaries.
"""

import argparse
import http.client
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

FORMATS = {"jpeg": ("jpg", "image/jpeg"), "webp": ("webp", "image/webp"), "png": ("png", "image/png")}


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid, field):
    """VmHWM (peak) or VmRSS (now) of a process, in KiB."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_for(url, timeout=30, any_status=False):
    """Until `url` answers 200 (any HTTP status with `any_status`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError:
            if any_status:
                return
            time.sleep(0.1)
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within {timeout} s")


class Server:
    """One server under test: its process, and the request path for a photo and format."""

    def __init__(self, name, process, port, path_for):
        self.name = name
        self.process = process
        self.port = port
        self.path_for = path_for

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_serve(binary, arguments, path_for):
    """`webimage serve` on a free loopback port with `arguments`; its port from the JSON line."""
    process = subprocess.Popen(
        [binary, "serve", "--bind", "127.0.0.1:0", "--insecure", "--json"] + arguments,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    try:
        listening = json.loads(line)["listening"]
    except (ValueError, KeyError):
        process.kill()
        raise SystemExit(f"webimage serve did not start: {line!r}")
    return Server("webimage serve", process, int(listening.rsplit(":", 1)[1]), path_for)


def start_webimage(binary, origin_port, cache_dir, workers):
    def path_for(photo, fmt):
        extension = FORMATS[fmt][0]
        return f"/_/rs:fit:512:512/q:80/plain/http://127.0.0.1:{origin_port}/{photo}@{extension}"

    return start_serve(binary, ["--allow-loopback", "--cache-dir", cache_dir, "--workers", str(workers)], path_for)


def start_thumbor(binary, photos, workdir, workers):
    port = free_port()
    config = os.path.join(workdir, "thumbor.conf")
    with open(config, "w") as conf:
        conf.write(
            "LOADER = 'thumbor.loaders.file_loader'\n"
            f"FILE_LOADER_ROOT_PATH = {photos!r}\n"
            "STORAGE = 'thumbor.storages.no_storage'\n"
            "RESULT_STORAGE = None\n"
            f"ENGINE_THREADPOOL_SIZE = {workers}\n"
            "QUALITY = 80\n"
            "AUTO_WEBP = False\n"
            "MAX_AGE = 0\n")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--ip", "127.0.0.1", "--conf", config, "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(f"http://127.0.0.1:{port}/healthcheck")

    def path_for(photo, fmt):
        return f"/unsafe/fit-in/512x512/filters:format({fmt}):quality(80)/{photo}"

    return Server("thumbor 7.8.0", process, port, path_for)


def check_result(server, photo, fmt):
    """One request, checked: 200, the asked format, 512 px on the long side."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request("GET", server.path_for(photo, fmt))
    response = connection.getresponse()
    body = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{server.name} answered {response.status} for {photo} as {fmt}: {body[:200]!r}")
    content_type = response.getheader("Content-Type", "")
    if content_type != FORMATS[fmt][1]:
        raise SystemExit(f"{server.name} sent {content_type} for {fmt}")
    try:
        from PIL import Image
        with Image.open(io.BytesIO(body)) as image:
            if max(image.size) != 512:
                raise SystemExit(f"{server.name} made {image.size} of {photo}, not 512 on the long side")
    except ImportError:
        pass
    return len(body)


def load(server, photos, fmt, clients, duration):
    """`clients` keep-alive connections requesting the photos round-robin for `duration` seconds."""
    latencies = []
    failures = []
    lock = threading.Lock()
    deadline = time.perf_counter() + duration

    def client(offset):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        mine = []
        index = offset
        while time.perf_counter() < deadline:
            photo = photos[index % len(photos)]
            index += clients
            started = time.perf_counter()
            try:
                connection.request("GET", server.path_for(photo, fmt))
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    failures.append(response.status)
                    continue
            except (OSError, http.client.HTTPException) as error:
                failures.append(str(error))
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
                continue
            mine.append(time.perf_counter() - started)
        connection.close()
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(offset,)) for offset in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()

    def percentile(fraction):
        return latencies[min(len(latencies) - 1, int(fraction * len(latencies)))] * 1000 if latencies else 0

    return {"rate": len(latencies) / elapsed, "p50": percentile(0.5), "p95": percentile(0.95),
            "requests": len(latencies), "failures": len(failures)}


def soak(server, photos, clients, seconds):
    """JPEG load for `seconds`, sampling the server's resident memory every 10 s."""
    samples = []
    stop = threading.Event()

    def sample():
        start = time.time()
        while not stop.is_set():
            samples.append((time.time() - start, rss_kib(server.process.pid, "VmRSS")))
            stop.wait(10)

    sampler = threading.Thread(target=sample)
    sampler.start()
    result = load(server, photos, "jpeg", clients, seconds)
    stop.set()
    sampler.join()
    return result, samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--thumbor", required=True)
    parser.add_argument("--photos", required=True)
    parser.add_argument("--duration", type=float, default=30, help="seconds of load per server and format")
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--formats", default="jpeg,webp,png")
    parser.add_argument("--soak", type=float, default=0, help="then JPEG load on webimage alone, seconds")
    args = parser.parse_args()

    photos = sorted(name for name in os.listdir(args.photos) if name.endswith(".jpg"))
    formats = [fmt.strip() for fmt in args.formats.split(",") if fmt.strip()]
    workers = os.cpu_count() or 2
    workdir = tempfile.mkdtemp(prefix="webimage-serve-bench-")
    origin = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(free_port()), "--bind", "127.0.0.1", "--directory", args.photos],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    origin_port = int(origin.args[3])
    servers = []
    try:
        wait_for(f"http://127.0.0.1:{origin_port}/{photos[0]}")
        servers = [start_webimage(args.webimage, origin_port, os.path.join(workdir, "cache"), workers),
                   start_thumbor(args.thumbor, args.photos, workdir, workers)]
        for server in servers:
            for fmt in formats:
                for photo in photos:
                    check_result(server, photo, fmt)
        rows = []
        for fmt in formats:
            for server in servers:
                result = load(server, photos, fmt, args.clients, args.duration)
                rows.append((fmt, server, result))
                print(f"{server.name} {fmt}: {result['rate']:.1f} req/s", file=sys.stderr)
        print(f"\n{len(photos)} photos of 2000x1333 fit into 512x512, q80, {args.clients} clients, "
              f"{args.duration:.0f} s per row, {workers} cores\n")
        print("| format | server | req/s | p50 ms | p95 ms | requests | failures | peak RSS MB |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for fmt, server, result in rows:
            peak = rss_kib(server.process.pid, "VmHWM") / 1024
            print(f"| {fmt} | {server.name} | {result['rate']:.1f} | {result['p50']:.1f} | {result['p95']:.1f} "
                  f"| {result['requests']} | {result['failures']} | {peak:.0f} |")
        rates = {(fmt, server.name): result["rate"] for fmt, server, result in rows}
        print()
        for fmt in formats:
            ours, theirs = rates[(fmt, servers[0].name)], rates[(fmt, servers[1].name)]
            print(f"{fmt}: webimage serve / thumbor = {ours / theirs:.2f}x")
        if args.soak > 0:
            servers[1].stop()
            result, samples = soak(servers[0], photos, args.clients, args.soak)
            print(f"\nSoak: JPEG load on webimage serve for {args.soak:.0f} s, {result['rate']:.1f} req/s, "
                  f"{result['failures']} failures")
            print("| seconds | RSS MB |\n|---:|---:|")
            for at, kib in samples:
                print(f"| {at:.0f} | {kib / 1024:.0f} |")
    finally:
        for server in servers:
            server.stop()
        origin.terminate()
        origin.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
