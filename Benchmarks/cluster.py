#!/usr/bin/env python3
"""The cluster load test: `webimage serve` nodes behind nginx (scripts/cluster.sh), driven by wrk.

2,000 variants (10 sizes fit into a box, JPEG q80) of 200 photos served by a local origin,
requested with Zipf-like popularity (the variant of rank r weighs 1/r) by 20 wrk connections:

  mix    a cold cluster under the Zipf mix for --duration seconds: requests/s, p50/p95/p99,
         nginx's cache hit ratio, origin requests per source, each node's peak RSS;
  kill   a long tail (1,000 sizes of each photo, Zipf) on a new cluster, one node killed with SIGKILL
         halfway while misses still arrive: errors seen by clients, what nginx logged after the kill;
  cold   every variant once through a new cluster's front (all misses), 20 wrk connections: variants/s,
         beside thumbor 7.8.0 nodes (HTTP loader, file storage for originals) behind the same
         nginx configuration; --cold-rounds turns, the ratio's median;
  warm   the Zipf mix again once every variant is cached, taking turns (--warm-rounds of
         --warm-duration seconds) with the ceiling, nginx serving the same variants straight from
         a warm proxy_cache of its own, and with nginx serving the same bytes as static files at
         the same URIs; all three with the same access log.

CLUSTER_SERVE_EXTRA (environment) adds options to every node's `webimage serve`, for experiments
(`CLUSTER_SERVE_EXTRA="--workers 4"`). Prints one Markdown table per part. Run through Benchmarks/cluster.sh, which installs nginx, wrk
and thumbor, builds the release binary and writes the photos.
"""

import argparse
import hashlib
import hmac
import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter

from serve import free_port, rss_kib, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
KEY = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
SALT = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
SIZES = [96, 128, 160, 200, 256, 320, 400, 512, 640, 800]
KILL_SIZES = 1000
LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster.lua")
SERVE_EXTRA = os.environ.get("CLUSTER_SERVE_EXTRA", "").split()
COLD_LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster-cold.lua")


def peak_rss_mb(pid):
    return rss_kib(pid, "VmHWM") / 1024


def decodes_reused(front):
    """Renders that found their decode kept in memory, and all renders, summed over the nodes."""
    hits = misses = 0
    for node in front.state["nodes"]:
        with urllib.request.urlopen(node["metrics"], timeout=10) as response:
            for line in response.read().decode().splitlines():
                match = re.match(r'webimage_decoded_source_lookups_total\{result="(hit|miss)"\} (\d+)', line)
                if match and match.group(1) == "hit":
                    hits += int(match.group(2))
                elif match:
                    misses += int(match.group(2))
    return hits, hits + misses


def sign(path):
    digest = hmac.new(bytes.fromhex(KEY), bytes.fromhex(SALT) + path.encode(), hashlib.sha256).digest()
    return "/" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode() + path


class Origin:
    """The photos over HTTP (Python's threading server), counting requests per path."""

    def __init__(self, photos, workdir):
        self.port = free_port()
        self.log = os.path.join(workdir, "origin.log")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1", "--directory", photos],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))

    def counts(self):
        counts = Counter()
        with open(self.log) as log:
            for line in log:
                match = re.search(r'"GET (/[^ ]+) HTTP', line)
                if match:
                    counts[match.group(1)] += 1
        return counts

    def reset(self):
        open(self.log, "w").close()

    def stop(self):
        self.process.terminate()
        self.process.wait()


class Front:
    """A cluster behind nginx: ours through scripts/cluster.sh, or thumbor nodes with the same config."""

    def __init__(self, kind, webimage, thumbor, origin_port, workdir, nodes):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=f"cluster-{kind}-", dir=workdir)
        self.processes = []
        self.origin_port = origin_port
        if kind == "webimage":
            environment = dict(os.environ, WEBIMAGE_KEY=KEY, WEBIMAGE_SALT=SALT)
            subprocess.run([CLUSTER, "up", "--detach", "--dir", self.dir, "--nodes", str(nodes), "--port", "0",
                            "--webimage", webimage, "--", "--allow-loopback"] + SERVE_EXTRA,
                           env=environment, check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(self.dir, "cluster.json")) as state:
                self.state = json.load(state)
            self.front = self.state["front"]
            self.pids = [node["pid"] for node in self.state["nodes"]]
        else:
            addresses = []
            for index in range(nodes):
                port = free_port()
                config = os.path.join(self.dir, f"thumbor{index}.conf")
                with open(config, "w") as conf:
                    conf.write(
                        "LOADER = 'thumbor.loaders.http_loader'\n"
                        "STORAGE = 'thumbor.storages.file_storage'\n"
                        f"FILE_STORAGE_ROOT_PATH = {os.path.join(self.dir, f'storage{index}')!r}\n"
                        "RESULT_STORAGE = None\n"
                        f"ENGINE_THREADPOOL_SIZE = {os.cpu_count() or 2}\n"
                        "QUALITY = 80\nAUTO_WEBP = False\nMAX_AGE = 31536000\n")
                process = subprocess.Popen(
                    [thumbor, "--port", str(port), "--ip", "127.0.0.1", "--conf", config, "--log-level", "error"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.processes.append(process)
                addresses += ["--node", f"127.0.0.1:{port}"]
                wait_for(f"http://127.0.0.1:{port}/healthcheck")
            port = free_port()
            run = os.path.join(self.dir, "nginx")
            os.makedirs(run)
            with open(os.path.join(run, "nginx.conf"), "w") as conf:
                subprocess.run([CLUSTER, "config", "--listen", f"127.0.0.1:{port}", "--run", run] + addresses,
                               check=True, stdout=conf)
            self.processes.append(subprocess.Popen(
                ["nginx", "-e", os.path.join(run, "error.log"), "-p", run + "/", "-c",
                 os.path.join(run, "nginx.conf"), "-g", "daemon off;"]))
            self.front = f"http://127.0.0.1:{port}"
            self.pids = [process.pid for process in self.processes[:-1]]
            wait_for(self.front + "/", any_status=True)

    def path(self, photo, size):
        source = f"http://127.0.0.1:{self.origin_port}/{photo}"
        if self.kind == "webimage":
            return sign(f"/rs:fit:{size}:{size}/q:80/plain/{source}@jpg")
        return f"/unsafe/fit-in/{size}x{size}/filters:quality(80):format(jpeg)/{source[len('http://'):]}"

    def access_log(self):
        return os.path.join(self.dir, "nginx", "access.log")

    def hit_ratio(self):
        statuses = Counter()
        with open(self.access_log()) as log:
            for line in log:
                match = re.search(r"cache=(\S+)", line)
                if match:
                    statuses[match.group(1)] += 1
        total = sum(statuses.values())
        return statuses["HIT"] / total if total else 0.0, statuses

    def log_after(self, offset):
        """(status, cache status) counts of the access log's lines after byte `offset`."""
        counts = Counter()
        with open(self.access_log(), "rb") as log:
            log.seek(offset)
            for line in log.read().decode(errors="replace").splitlines():
                match = re.search(r'" (\d{3}) .*cache=(\S+)', line)
                if match:
                    counts[f"{match.group(1)} {match.group(2)}"] += 1
        return counts

    def stop(self):
        if self.kind == "webimage":
            subprocess.run([CLUSTER, "down", "--dir", self.dir], stderr=subprocess.DEVNULL)
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def zipf_paths(paths, count, seed):
    """`count` requests over `paths`, the path of rank r drawn with weight 1/r."""
    rng = random.Random(seed)
    ranked = paths[:]
    rng.shuffle(ranked)
    weights = [1.0 / rank for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights=weights, k=count)


def run_wrk(front, paths_file, duration, connections, during=None):
    """wrk with cluster.lua replaying paths_file; `during` runs in a thread while it loads."""
    environment = dict(os.environ, WRK_PATHS=paths_file)
    process = subprocess.Popen(
        ["wrk", "-t", "2", "-c", str(connections), "-d", f"{int(duration)}s", "--timeout", "30s", "-s", LUA, front],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if during:
        during()
    out, err = process.communicate()
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit(f"wrk printed no summary: {out}\n{err}")


def cold_pass(front, paths, connections, workdir):
    """Every path once through wrk, `connections` at a time (one connection a wrk thread):
    variants/s from the first request to the last answer, and the non-200 count."""
    paths_file = write_paths(workdir, "cold-paths.txt", paths)
    marker = os.path.join(workdir, "cold-done")
    for index in range(connections):
        if os.path.exists(f"{marker}.{index}"):
            os.remove(f"{marker}.{index}")
    environment = dict(os.environ, WRK_PATHS=paths_file, WRK_THREADS=str(connections), WRK_MARKER=marker)
    process = subprocess.Popen(
        ["wrk", "-t", str(connections), "-c", str(connections), "-d", "600s", "--timeout", "60s", "-s", COLD_LUA,
         front], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        markers = [f"{marker}.{index}" for index in range(min(connections, len(paths)))]
        deadline = time.monotonic() + 600
        while not all(os.path.exists(name) for name in markers):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("cold pass: wrk ended or timed out before every path was answered")
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait()
    rows = []
    for name in markers:
        with open(name) as done:
            rows.append([float(field) for field in done.read().split()])
    elapsed = max(row[1] for row in rows) - min(row[0] for row in rows)
    failures = Counter({"non-200": int(sum(row[3] for row in rows))})
    return sum(row[2] for row in rows) / elapsed, +failures


def write_paths(workdir, name, paths):
    path = os.path.join(workdir, name)
    with open(path, "w") as out:
        out.write("\n".join(paths) + "\n")
    return path


def wrk_row(label, result):
    errors = result["errors"]
    return (f"| {label} | {result['requests'] / (result['duration_us'] / 1e6):.0f} | {result['p50_ms']:.2f} "
            f"| {result['p95_ms']:.2f} | {result['p99_ms']:.2f} | {result['requests']} "
            f"| {errors['status']} | {errors['connect'] + errors['read'] + errors['write'] + errors['timeout']} |")


def reference_nginx(workdir, name, front, server):
    """A second nginx with the front's access log and file settings, serving `server` (the body of
    a server block after `listen`); returns its process and URL."""
    run = os.path.join(workdir, name)
    os.makedirs(run)
    port = free_port()
    with open(os.path.join(front.dir, "nginx", "nginx.conf")) as front_conf:
        log = re.search(r"\n\s*(log_format webimage .*?;)\n\s*access_log [^;]*? webimage( [^;]*)?;",
                        front_conf.read(), re.S)
    with open(os.path.join(run, "nginx.conf"), "w") as conf:
        user = "user root root;" if os.getuid() == 0 else ""
        conf.write(f"""{user}
worker_processes auto; pid {run}/nginx.pid; error_log {run}/error.log warn;
events {{ worker_connections 4096; }}
http {{ client_body_temp_path {run}/b; proxy_temp_path {run}/p; fastcgi_temp_path {run}/f;
  uwsgi_temp_path {run}/u; scgi_temp_path {run}/s; default_type image/jpeg; server_tokens off;
  {log.group(1)}
  access_log {run}/access.log webimage{log.group(2) or ""};
  sendfile on; tcp_nopush on; keepalive_requests 10000;
  open_file_cache max=20000 inactive=60s; open_file_cache_valid 30s;
  proxy_cache_path {run}/cache levels=1:2 keys_zone=ceiling:32m inactive=30d use_temp_path=off;
  server {{ listen 127.0.0.1:{port}; merge_slashes off; {server} }} }}
""")
    process = subprocess.Popen(["nginx", "-e", f"{run}/error.log", "-p", run + "/", "-c", f"{run}/nginx.conf",
                                "-g", "daemon off;"])
    return process, f"http://127.0.0.1:{port}"


def fetch_all(base, paths, store=None):
    """GETs every path in turn over one connection; writes each body under `store` when given."""
    host, port = base[len("http://"):].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    for path in paths:
        connection.request("GET", path)
        body = connection.getresponse().read()
        if store:
            file = os.path.join(store, path.lstrip("/"))
            os.makedirs(os.path.dirname(file), exist_ok=True)
            with open(file, "wb") as out:
                out.write(body)
    connection.close()


def warm_part(args, ours, paths, workdir, out, header):
    """Cached hits through the cluster's front beside two references with the same access log,
    taking turns (a busy moment of the machine hits all alike; ratios are medians of the
    rounds'): the ceiling, nginx serving the same variants straight from a warm proxy_cache of
    its own (filled through the front once; no maps, hashing or added headers), and nginx serving
    the same bytes as static files at the same URIs."""
    static = os.path.join(workdir, "static")
    fetch_all(ours.front, paths, store=static)
    order = zipf_paths(list(range(len(paths))), 200_000, seed=2)
    requests_file = write_paths(workdir, "warm.txt", [paths[i] for i in order])
    references = []
    try:
        references.append(reference_nginx(workdir, "cache-nginx", ours, f"""location / {{
    proxy_pass {ours.front}; proxy_http_version 1.1; proxy_set_header Connection "";
    proxy_hide_header X-Cache-Status; proxy_cache ceiling; }}"""))
        references.append(reference_nginx(workdir, "static-nginx", ours, f"root {static};"))
        for _, url in references:
            wait_for(url + paths[0])
        fetch_all(references[0][1], paths)
        rounds = []
        for _ in range(args.warm_rounds):
            rounds.append([run_wrk(url, requests_file, args.warm_duration, args.connections)
                           for url in [ours.front] + [url for _, url in references]])
    finally:
        for process, _ in references:
            process.terminate()
            process.wait()
    out.append(f"\nWarm: every variant cached, Zipf mix, {args.connections} connections, "
               f"{args.warm_rounds} rounds of {args.warm_duration:.0f} s each, taking turns\n")
    out.append(header)
    rate = lambda result: result["requests"] / result["duration_us"]
    by_cache, by_static = [], []
    for number, (front, cache, files) in enumerate(rounds, 1):
        out.append(wrk_row(f"{number}: cluster front, all hits", front))
        out.append(wrk_row(f"{number}: nginx from its warm cache (ceiling)", cache))
        out.append(wrk_row(f"{number}: nginx static files", files))
        by_cache.append(rate(front) / rate(cache))
        by_static.append(rate(front) / rate(files))
    for label, ratios in (("the warm-cache ceiling", by_cache), ("static files", by_static)):
        out.append(f"\ncached hits / {label}, per round: {', '.join(f'{r:.3f}' for r in ratios)}; "
                   f"median {sorted(ratios)[len(ratios) // 2]:.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--thumbor", required=True)
    parser.add_argument("--photos", required=True)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--duration", type=float, default=300, help="seconds of the mix and kill runs")
    parser.add_argument("--warm-duration", type=float, default=10, help="seconds of each warm and reference run")
    parser.add_argument("--warm-rounds", type=int, default=5, help="turns of the warm and reference runs")
    parser.add_argument("--cold-rounds", type=int, default=5, help="turns of the cold passes, ours then thumbor's")
    parser.add_argument("--parts", default="cold,warm,mix,kill")
    args = parser.parse_args()
    parts = set(args.parts.split(","))

    photos = sorted(name for name in os.listdir(args.photos) if name.endswith(".jpg"))
    variants = [(photo, size) for photo in photos for size in SIZES]
    workdir = tempfile.mkdtemp(prefix="webimage-cluster-bench-")
    origin = Origin(args.photos, workdir)
    fronts = []
    out = []
    try:
        wait_for(f"http://127.0.0.1:{origin.port}/{photos[0]}", timeout=60)
        header = "| run | req/s | p50 ms | p95 ms | p99 ms | requests | non-2xx | socket errors |\n|---|---:|---:|---:|---:|---:|---:|---:|"
        if parts & {"cold", "warm"}:
            out.append(f"\nCold variants ({len(variants)} distinct, each once, {args.connections} at a time, "
                       f"{args.nodes} nodes behind nginx; new clusters each round, taking turns)\n")
            out.append("| round | webimage serve variants/s | thumbor 7.8.0 variants/s | ratio | failures "
                       "| ours: decodes reused | ours: node peak RSS MB |\n|---|---:|---:|---:|---:|---:|---:|")
            ratios = []
            rounds = args.cold_rounds if "cold" in parts else 1
            for number in range(1, rounds + 1):
                ours = Front("webimage", args.webimage, args.thumbor, origin.port, workdir, args.nodes)
                fronts.append(ours)
                ours_paths = [ours.path(photo, size) for photo, size in variants]
                ours_rate, ours_failures = cold_pass(
                    ours.front, random.Random(number).sample(ours_paths, len(ours_paths)), args.connections, workdir)
                reused, renders = decodes_reused(ours)
                ours_memory = (f"{reused}/{renders} ({100 * reused / max(1, renders):.0f} %) "
                               f"| {', '.join(f'{peak_rss_mb(pid):.0f}' for pid in ours.pids)}")
                if number < rounds:
                    ours.stop()
                    fronts.remove(ours)
                if "cold" not in parts:
                    out.append(f"| {number} | {ours_rate:.1f} | | | {sum(ours_failures.values())} | {ours_memory} |")
                    continue
                theirs = Front("thumbor", args.webimage, args.thumbor, origin.port, workdir, args.nodes)
                fronts.append(theirs)
                thumbor_paths = [theirs.path(photo, size) for photo, size in variants]
                rate, failures = cold_pass(
                    theirs.front, random.Random(number).sample(thumbor_paths, len(thumbor_paths)), args.connections,
                    workdir)
                theirs.stop()
                fronts.remove(theirs)
                ratios.append(ours_rate / rate)
                out.append(f"| {number} | {ours_rate:.1f} | {rate:.1f} | {ours_rate / rate:.2f}x "
                           f"| {sum(ours_failures.values()) + sum(failures.values())} | {ours_memory} |")
            if ratios:
                out.append(f"\nwebimage serve / thumbor, cold variants: median {sorted(ratios)[len(ratios) // 2]:.2f}x")
            if "warm" in parts:
                warm_part(args, ours, ours_paths, workdir, out, header)
            ours.stop()
            fronts.remove(ours)

        for part in ("mix", "kill"):
            if part not in parts:
                continue
            origin.reset()
            front = Front("webimage", args.webimage, args.thumbor, origin.port, workdir, args.nodes)
            fronts.append(front)
            # The kill run asks for a long tail (1,000 sizes of each photo): misses keep coming
            # when the node dies, so clients see both its cached keys and its misses move.
            run_variants = variants if part == "mix" else [
                (photo, size) for photo in photos for size in range(64, 64 + KILL_SIZES)]
            paths = [front.path(photo, size) for photo, size in run_variants]
            requests_file = write_paths(workdir, f"{part}.txt", zipf_paths(paths, 500_000, seed=3))
            log_at_kill = []

            def kill_halfway():
                time.sleep(args.duration / 2)
                log_at_kill.append(os.path.getsize(front.access_log()))
                os.kill(front.pids[0], signal.SIGKILL)

            result = run_wrk(front.front, requests_file, args.duration, args.connections,
                             during=None if part == "mix" else kill_halfway)
            ratio, statuses = front.hit_ratio()
            counts = origin.counts()
            per_source = sorted(counts.values())
            rss = [peak_rss_mb(pid) for pid in front.pids]
            title = "Mix" if part == "mix" else "Long-tail mix with node 1 killed (SIGKILL) halfway"
            out.append(f"\n{title}: {len(run_variants)} variants of {len(photos)} sources, Zipf, "
                       f"{args.connections} connections, {args.duration:.0f} s, from a cold cluster\n")
            out.append(header)
            out.append(wrk_row(part, result))
            out.append(f"\ncache: {ratio:.3f} hits ({dict(statuses)}); origin requests per source: "
                       f"{len(counts)} sources fetched, max {per_source[-1] if per_source else 0}, "
                       f"total {sum(per_source)}; node peak RSS MB: {', '.join(f'{mb:.0f}' for mb in rss)}")
            if log_at_kill:
                after = front.log_after(log_at_kill[0])
                out.append(f"after the kill: {sum(after.values())} requests logged by nginx, by status and cache: "
                           f"{dict(sorted(after.items()))}")
            front.stop()
            fronts.remove(front)
        print("\n".join(out))
    finally:
        for front in fronts:
            front.stop()
        origin.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
