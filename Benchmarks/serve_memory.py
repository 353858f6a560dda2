#!/usr/bin/env python3
"""What an idle `webimage serve` keeps after a burst of mixed traffic, with and without
--free-memory-interval, in one run; and that the burst leaves the server whole.

For each setting (10 s, the default, then 0: never) one server reads the image corpus from disk
(--local-root WEBIMAGE_CORPUS). CLIENTS threads then spend SECONDS on a mix over every corpus
file and a dozen option sets (resizes, enlargements to 3000 px, AVIF, JPEG XL, WebP, PNG, blur):
whole requests, HEADs, clients that hang up before or during the answer, slow readers of large
PNGs, three pipelined requests, half-closed connections and random bytes. Then the clients stop
and the server idles for IDLE seconds.

Prints, per setting: resident memory before, at its peak and after the idle time; descriptors
before and after; answers by status; /health after the burst; and exits 1 when a server died,
stopped answering or kept descriptors. Run through Benchmarks/serve-memory.sh.
"""

import argparse
import collections
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import rss_kib  # noqa: E402

OPTIONS = ["rs:fit:300:300", "rs:fill:100:100/f:png", "f:webp", "rs:fit:64:64/f:gif", "f:jpg/q:50",
           "rs:fit:200:0/f:avif", "w:50/f:best", "rs:force:3000:3000/f:png", "crop:50:50/f:jxl",
           "rs:force:2000:2000/f:jpg", "bl:5/rs:fit:1500:1500", "f:webp/q:10"]
KINDS = ["whole", "whole", "head", "hang-up before", "hang-up during", "slow reader", "pipelined",
         "half-closed", "garbage"]


def request(path, method="GET"):
    return f"{method} {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()


def reset(connection):
    """Closes with a RST, as a client that crashed or gave up does."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def client(port, names, seed, stop, counts, lock):
    rnd = random.Random(seed)

    def path(option=None):
        return f"/insecure/{option or rnd.choice(OPTIONS)}/plain/local:///{rnd.choice(names)}"

    while time.monotonic() < stop:
        kind = rnd.choice(KINDS)
        outcome = kind
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=120) as connection:
                if kind == "garbage":
                    connection.sendall(os.urandom(rnd.randint(1, 3000)) + b"\r\n\r\n")
                    connection.settimeout(15)
                    connection.recv(65536)
                elif kind == "hang-up before":
                    connection.sendall(request(path()))
                    time.sleep(rnd.random() * 0.05)
                    reset(connection)
                elif kind == "hang-up during":
                    connection.sendall(request(path()))
                    connection.recv(rnd.randint(1, 20000))
                    reset(connection)
                elif kind == "slow reader":
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    connection.sendall(request(path("rs:force:3000:3000/f:png")))
                    started = time.monotonic()
                    while time.monotonic() - started < 3 and connection.recv(1024):
                        time.sleep(0.01)
                elif kind == "pipelined":
                    connection.sendall(request(path()) + request(path(), "HEAD") + request("/health"))
                    data = b""
                    while data.count(b"HTTP/1.1 ") < 3:
                        part = connection.recv(1 << 20)
                        if not part:
                            outcome = "pipelined, short"
                            break
                        data += part
                elif kind == "half-closed":
                    connection.sendall(request(path()))
                    connection.shutdown(socket.SHUT_WR)
                    while connection.recv(1 << 20):
                        pass
                else:
                    connection.sendall(request(path(), "HEAD" if kind == "head" else "GET"))
                    head = connection.recv(1 << 16)
                    status = re.match(rb"HTTP/1.1 (\d+)", head)
                    outcome = f"status {status.group(1).decode() if status else 'none'}"
        except OSError as error:
            outcome = f"{kind}: {type(error).__name__}"
        with lock:
            counts[outcome] += 1


def health(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(request("/health"))
            return connection.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def run(binary, corpus, names, interval, args):
    server = subprocess.Popen(
        [binary, "serve", "--insecure", "--bind", "127.0.0.1:0", "--local-root", corpus,
         "--free-memory-interval", interval] + args.serve_args,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        port = int(re.search(r":(\d+)\s*$", line.strip()).group(1))
        pid = server.pid
        before = (rss_kib(pid, "VmRSS") // 1024, descriptors(pid))
        counts = collections.Counter()
        lock = threading.Lock()
        stop = time.monotonic() + args.seconds
        threads = [threading.Thread(target=client, args=(port, names, seed, stop, counts, lock))
                   for seed in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        alive = server.poll() is None
        answered = alive and health(port)
        time.sleep(args.idle)
        alive = alive and server.poll() is None
        after = (rss_kib(pid, "VmRSS") // 1024, descriptors(pid)) if alive else (0, 0)
        peak = rss_kib(pid, "VmHWM") // 1024 if alive else 0
        return {"interval": interval, "before": before, "peak": peak, "after": after, "alive": alive,
                "health": answered, "counts": counts}
    finally:
        server.terminate()
        server.wait(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--corpus", default=os.environ.get("WEBIMAGE_CORPUS"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--idle", type=float, default=15)
    parser.add_argument("serve_args", nargs="*", help="more `serve` flags, after --")
    args = parser.parse_args()
    if not args.corpus:
        sys.exit("serve_memory: --corpus or WEBIMAGE_CORPUS names the image corpus")
    with open(os.path.join(args.corpus, "MANIFEST.tsv")) as manifest:
        names = [line.split("\t")[0] for line in manifest.read().splitlines()[1:] if line]
    failed = False
    print(f"{args.clients} clients for {args.seconds:.0f} s over {len(names)} corpus files, then {args.idle:.0f} s idle")
    print("| --free-memory-interval | RSS before (MB) | peak (MB) | idle after (MB) | descriptors before/after | answers |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for interval in ("10", "0"):
        result = run(args.webimage, args.corpus, names, interval, args)
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items()) if k.startswith("status"))
        print(f"| {interval} | {result['before'][0]} | {result['peak']} | {result['after'][0]} | "
              f"{result['before'][1]}/{result['after'][1]} | {statuses} |")
        others = {k: v for k, v in result["counts"].items() if not k.startswith("status")}
        print(f"  other outcomes: {dict(sorted(others.items()))}")
        if not (result["alive"] and result["health"]):
            print(f"  FAILED: the server {'stopped answering' if result['alive'] else 'died'}")
            failed = True
        elif result["after"][1] > result["before"][1] + 2:
            print("  FAILED: descriptors kept after the burst")
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
