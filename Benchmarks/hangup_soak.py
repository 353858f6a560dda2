#!/usr/bin/env python3
"""Hang-ups in flight against one `webimage serve` process (issue 42).

Writes COUNT photos of 2000x1333 (`webimage-benchmarks --write-photos`) and starts one server
reading them from disk (`local://`, --local-root). Each round runs `wrk -c CONNECTIONS -d
SECONDS` against their JPEG results enlarged to 4000 px (el:1, progressive off, q90: encodes of
about 10 MP), round-robin; wrk closes its connections at the end with requests in flight, in the
encode for most of them. After every round the same process must still run and answer /health.
Then, optionally, the same with --processing-timeout rounds (deadlines inside the encodes).

Prints one line per round (requests, answers by status from /metrics, the server's RSS) and
exits 1 when the server died or stopped answering. Run through Benchmarks/hangup-soak.sh.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import free_port, rss_kib, start_serve  # noqa: E402


def statuses(metrics_port):
    """webimage_requests_total by status, from the metrics listener."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith('webimage_requests_total{status="'):
            status = line.split('"')[1]
            counts[status] = int(float(line.rsplit(" ", 1)[1]))
    return counts


def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
            return response.status == 200
    except OSError:
        return False


def soak(args, photos, names, workdir, timeout):
    metrics_port = free_port()
    arguments = ["--local-root", photos, "--cache-dir", os.path.join(workdir, f"cache-{timeout}"),
                 "--workers", str(args.workers), "--metrics-bind", f"127.0.0.1:{metrics_port}"]
    if timeout:
        arguments += ["--processing-timeout", timeout]
    server = start_serve(args.webimage, arguments, None)
    label = f"--processing-timeout {timeout}" if timeout else "no processing timeout"
    script = os.path.join(workdir, "paths.lua")
    with open(script, "w") as lua:
        paths = ", ".join(f'"/_/rs:fit:4000:4000/el:1/q:90/plain/local:///{name}@jpg"' for name in names)
        lua.write(f"local paths = {{{paths}}}\nlocal n = 0\n"
                  "request = function()\n  n = n + 1\n  return wrk.format('GET', paths[n % #paths + 1])\nend\n")
    print(f"\n{label}: {args.rounds} rounds of wrk -c {args.connections} -d {args.seconds}s, "
          f"one server (pid {server.process.pid}, {args.workers} workers)")
    print("round  wrk requests  answers by status            server RSS   alive  /health")
    alive = True
    for round_number in range(1, args.rounds + 1):
        run = subprocess.run(["wrk", "-t", "2", "-c", str(args.connections), "-d", f"{args.seconds}s", "-s", script,
                              f"http://127.0.0.1:{server.port}"], capture_output=True, text=True)
        requests = next((line.split()[0] for line in run.stdout.splitlines() if "requests in" in line), "?")
        time.sleep(0.5)  # the hang-ups' cancellations reach the work
        running = server.process.poll() is None
        answering = running and healthy(server.port)
        counts = statuses(metrics_port) if answering else {}
        rss = rss_kib(server.process.pid, "VmRSS") // 1024 if running else 0
        summary = " ".join(f"{status}:{count}" for status, count in sorted(counts.items()))
        print(f"{round_number:>5}  {requests:>12}  {summary:<27}  {rss:>7} MB   {'yes' if running else 'NO':>5}  "
              f"{'200' if answering else 'none'}")
        if not answering:
            alive = False
            print(f"webimage serve died or stopped answering in round {round_number} "
                  f"(exit status {server.process.poll()})", file=sys.stderr)
            break
    if server.process.poll() is None:
        server.process.terminate()
        server.process.wait(timeout=30)
    return alive


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--benchmarks", required=True, help="webimage-benchmarks, to write the photos")
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeouts", default="0.3,0.15",
                        help="processing timeouts for the deadline rounds, comma-separated ('' for none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="webimage-hangup-") as workdir:
        photos = os.path.join(workdir, "photos")
        subprocess.run([args.benchmarks, "--write-photos", photos, str(args.count), "2000x1333"], check=True)
        names = sorted(os.listdir(photos))
        ok = soak(args, photos, names, workdir, None)
        for timeout in filter(None, args.timeouts.split(",")):
            ok = soak(args, photos, names, workdir, timeout) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
