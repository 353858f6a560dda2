#!/usr/bin/env python3
"""The per-image cost of `webimage fetch`, whole process, beside its references in one run.

Writes COUNT distinct JPEGs (`webimage-benchmarks --write-photos`), serves them from nginx on
127.0.0.1 (one worker, keep-alive, no access log), and times, each round in the same order:

  curl       curl --parallel --parallel-max 6, every body to /dev/null (the raw floor)
  AsyncHTTPClient  the same GETs through AsyncHTTPClient alone, 6 at a time, each body collected
             (`webimage-http-benchmarks --fetch-list`; with --http-benchmarks): the HTTP stack
             webimage fetch is built on, without the pipeline
  AsyncHTTPClient, session settings  the same with the settings HTTPSession gives it (timeouts,
             decompression, no redirects, its default headers, no tracer unless tracing is
             bootstrapped: `--fetch-list … --matched`): what
             those settings cost the client, apart from what our code costs
  HTTPSession  the same GETs through HTTPSession's `data(for:)` (`--fetch-list … --session`): the
             session's cost apart from the downloader's, the manager's and the CLI's
  raw        webimage fetch --concurrency 6 --options avoid-decode-image (bytes only)
  decoded    webimage fetch --concurrency 6 (each image decoded to RGBA)
  decoded, from files  the same files as file:// URLs (read on the disk-read queue, decoded on
             the decode queue): the pipeline's cost without HTTP, beside the C decode that reads
             the same files
  C decode   libjpeg-turbo decoding the same files from disk on both cores
             (`webimage-benchmarks --decode-floor 2`; the decoded floor)
  AsyncHTTPClient + C decode  (with --http-benchmarks) the same GETs through AsyncHTTPClient alone,
             each body decoded by libjpeg-turbo on a thread per core while its request's task
             waits (`--fetch-list … --decode`): the client and the decodes with no pipeline, decoding
             off the event loops and Swift's pool as webimage must
  AsyncHTTPClient + C decode on its loops  the same through the client's delegate API, each body
             decoded on the event loop that read it (`--decode-on-loop`; a loop per core): not one
             thread woken for a hand-off, the least the client and the decodes can cost together
  start      webimage fetch (and, with --http-benchmarks, the AsyncHTTPClient benchmark) given an
             empty list: what starting and ending the process costs, apart from the images. The
             summary also compares raw and AsyncHTTPClient with their starts taken away.

webimage runs with --no-disk-cache and --memory-cache 0: every image comes from the network.
Wall and CPU time (user + system) are medians over the rounds; peak RSS is the largest child RSS
seen (wait4); context switches (wait4's voluntary and involuntary, all threads) are medians: on a
machine whose cores the decodes keep busy, every hop between threads (event loop, Swift's pool,
the decode queue) is a wake-up that preempts a decoder, and this column counts them. nginx's CPU
time per run (its run time in /proc/PID/schedstat) is the share of the cores the server takes,
which the C decode never pays; the summary also gives what the decoded fetch would take if its
CPU and nginx's filled every core without a gap. Prints one Markdown table and, with --json, a
JSON object. With --perf DIR, records
`perf record -g` of one raw and one decoded fetch into DIR (perf report -i DIR/raw.data) and
splits the raw fetch's samples between our code and the HTTP client's: each sample goes to the
innermost frame of either on its stack (the runtime and libc work a frame calls is its own).
"""

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(argv, stdout=subprocess.DEVNULL):
    """Runs argv to its end; returns (seconds, peak RSS in MB, CPU seconds: user + system).
    Fails loudly on a non-zero exit."""
    return measured(argv, stdout)[:3]


def measured(argv, stdout=subprocess.DEVNULL):
    """`run`'s figures and the process's context switches (voluntary + involuntary, all its
    threads): each one a thread that slept and was woken, or was preempted."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"fetch_cost: {argv[0]} exited {code}: {stderr[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw


# Who a perf sample's CPU belongs to: the innermost frame of our modules or of the HTTP client
# (AsyncHTTPClient, SwiftNIO) on its stack; runtime, libc and Foundation work count for the frame
# that called them. Mangled Swift module names: `$s` + length + name.
OUR_MODULES = ("8WebImage", "12WebImageHTTP", "8webimage", "14WebImageCoders")
CLIENT_MODULES = ("15AsyncHTTPClient", "7NIOCore", "8NIOPosix", "8NIOHTTP1", "18NIOHTTPCompression", "6NIOSSL",
                  "17_NIODataStructures", "13NIOTLS")


def cpu_split(perf_data):
    """Shares of a perf recording's samples: ours, the HTTP client's, and the rest (kernel
    threads' and the scheduler's work, the runtime's own)."""
    script = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip,sym"], capture_output=True,
                            text=True, errors="replace", check=True).stdout
    counts = {"ours": 0, "HTTP client": 0, "other": 0}
    for sample in script.split("\n\n"):
        owner = "other"
        for line in sample.splitlines():
            parts = line.split(None, 1)
            if len(parts) < 2 or not parts[1].startswith("$s"):
                continue
            module = parts[1][2:]
            if module.startswith(OUR_MODULES):
                owner = "ours"
                break
            if module.startswith(CLIENT_MODULES):
                owner = "HTTP client"
                break
        counts[owner] += 1
    total = max(1, sum(counts.values()))
    return {name: round(100 * count / total, 1) for name, count in counts.items()}


def server_pids(scratch):
    """nginx's master (from its pid file in `scratch`) and its workers; [] when unreadable."""
    try:
        with open(os.path.join(scratch, "nginx.pid")) as f:
            master = int(f.read().strip())
        with open(f"/proc/{master}/task/{master}/children") as f:
            return [master] + [int(pid) for pid in f.read().split()]
    except (OSError, ValueError):
        return []


def server_cpu_seconds(pids):
    """CPU time the processes `pids` have spent so far, from the kernel's per-task run time
    (/proc/PID/schedstat, nanoseconds: the 10 ms ticks of /proc/PID/stat are too coarse here);
    0 when it cannot be read."""
    try:
        total = 0
        for pid in pids:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError):
        return 0.0


def start_nginx(root, port, scratch):
    conf = os.path.join(scratch, "nginx.conf")
    with open(conf, "w") as f:
        f.write(
            f"""
worker_processes 1;
daemon off;
error_log {scratch}/error.log warn;
pid {scratch}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path {scratch}/body;
    proxy_temp_path {scratch}/proxy;
    fastcgi_temp_path {scratch}/fastcgi;
    uwsgi_temp_path {scratch}/uwsgi;
    scgi_temp_path {scratch}/scgi;
    types {{ image/jpeg jpg; }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""
        )
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx, "-c", conf, "-p", scratch], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None:
                sys.exit(f"fetch_cost: nginx exited: {process.stderr.read().decode(errors='replace')}")
            time.sleep(0.1)
    process.kill()
    sys.exit("fetch_cost: nginx did not start")


@contextlib.contextmanager
def served_photos(benchmarks, count, size, prefix):
    """COUNT distinct JPEGs of SIZE (`webimage-benchmarks --write-photos`) in a fresh scratch folder,
    served by nginx on 127.0.0.1: yields (scratch folder, sorted photo paths, URLs); stops nginx and
    removes the folder on every path out."""
    scratch = tempfile.mkdtemp(prefix=prefix)
    os.chmod(scratch, 0o755)  # nginx's workers (nobody, when started as root) read the photos
    nginx = None
    try:
        photos = os.path.join(scratch, "photos")
        subprocess.run([benchmarks, "--write-photos", photos, str(count), size], check=True,
                       stdout=subprocess.DEVNULL)
        files = sorted(os.path.join(photos, name) for name in os.listdir(photos))
        port = free_port()
        nginx = start_nginx(photos, port, scratch)
        yield scratch, files, [f"http://127.0.0.1:{port}/{os.path.basename(path)}" for path in files]
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--benchmarks", required=True, help="the webimage-benchmarks binary")
    parser.add_argument("--http-benchmarks", help="the webimage-http-benchmarks binary (adds the AsyncHTTPClient row)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--size", default="690x460", help="WxH of the photos (about 56 KB at q85)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--perf", help="record perf profiles of one raw and one decoded fetch here")
    args = parser.parse_args()

    with served_photos(args.benchmarks, args.count, args.size, "webimage-fetch-cost-") as (scratch, files, urls):
        mean_kb = statistics.mean(os.path.getsize(path) for path in files) / 1000
        url_list = os.path.join(scratch, "urls.txt")
        with open(url_list, "w") as f:
            f.write("\n".join(urls) + "\n")
        file_list = os.path.join(scratch, "files.txt")
        with open(file_list, "w") as f:
            f.write("".join(f"file://{path}\n" for path in files))
        empty_list = os.path.join(scratch, "empty.txt")
        open(empty_list, "w").close()
        curl_config = os.path.join(scratch, "curl.conf")
        with open(curl_config, "w") as f:
            for url in urls:
                f.write(f'url = "{url}"\noutput = "/dev/null"\n')

        c = str(args.concurrency)
        def fetch_list(path):
            return [args.webimage, "fetch", "-q", "--no-disk-cache", "--memory-cache", "0",
                    "--concurrency", c, "--max-downloads", c, "--input", path]

        def client_list(path):
            return [args.http_benchmarks, "--fetch-list", path, "--concurrency", c]

        fetch = fetch_list(url_list)
        commands = {
            "curl": ["curl", "--silent", "--fail", "--parallel", "--parallel-max", c, "--config", curl_config],
            "raw": fetch + ["--options", "avoid-decode-image"],
            "decoded": fetch,
            "decoded, from files": fetch_list(file_list),
            "C decode": [args.benchmarks, "--decode-floor", "2"] + files,
            "webimage start": fetch_list(empty_list),
        }
        if args.http_benchmarks:
            reference = client_list(url_list)
            commands = {"AsyncHTTPClient": reference,
                        "AsyncHTTPClient, session settings": reference + ["--matched"],
                        "HTTPSession": reference + ["--session"],
                        "AsyncHTTPClient + C decode": reference + ["--decode"],
                        "AsyncHTTPClient + C decode on its loops": reference + ["--decode-on-loop"],
                        "AsyncHTTPClient start": client_list(empty_list),
                        **commands}
            order = ("curl", "AsyncHTTPClient", "AsyncHTTPClient, session settings", "HTTPSession", "raw", "decoded",
                     "decoded, from files", "C decode", "AsyncHTTPClient + C decode",
                     "AsyncHTTPClient + C decode on its loops",
                     "webimage start", "AsyncHTTPClient start")
            commands = {name: commands[name] for name in order}
        times = {name: [] for name in commands}
        cpu = {name: [] for name in commands}
        switches = {name: [] for name in commands}
        server = {name: [] for name in commands}
        rss = {name: 0.0 for name in commands}
        run(commands["curl"])  # warm the page cache and nginx
        nginx_pids = server_pids(scratch)
        for _ in range(args.rounds):
            for name, argv in commands.items():
                served_before = server_cpu_seconds(nginx_pids)
                seconds, peak, cpu_seconds, switched = measured(argv)
                server[name].append(server_cpu_seconds(nginx_pids) - served_before)
                times[name].append(seconds)
                cpu[name].append(cpu_seconds)
                switches[name].append(switched)
                rss[name] = max(rss[name], peak)
        split = None
        if args.perf:
            os.makedirs(args.perf, exist_ok=True)
            for name in ("raw", "decoded"):
                out = os.path.join(args.perf, f"{name}.data")
                run(["perf", "record", "-g", "-o", out, "--"] + commands[name])
            split = cpu_split(os.path.join(args.perf, "raw.data"))

        median = {name: statistics.median(values) for name, values in times.items()}
        median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
        result = {
            "images": args.count,
            "mean_kb": round(mean_kb, 1),
            "rounds": args.rounds,
            "seconds": {name: round(value, 3) for name, value in median.items()},
            "cpu_seconds": {name: round(value, 3) for name, value in median_cpu.items()},
            "peak_rss_mb": {name: round(value, 1) for name, value in rss.items()},
            "context_switches": {name: round(statistics.median(values)) for name, values in switches.items()},
            "server_cpu_seconds": {name: round(statistics.median(values), 3) for name, values in server.items()},
            "raw_over_curl": round(median["raw"] / median["curl"], 2),
            "decoded_over_c_decode": round(median["decoded"] / median["C decode"], 2),
            "decoded_from_files_over_c_decode": round(median["decoded, from files"] / median["C decode"], 2),
            "decoded_from_files_cpu_over_c_decode_cpu": round(
                median_cpu["decoded, from files"] / median_cpu["C decode"], 2),
        }
        # The decoded fetch's CPU and nginx's, spread over every core without a gap: what the
        # decoded row would take if nothing ever waited. Against the real row it splits the gap to
        # the floor into CPU spent and cores left idle.
        cores = os.cpu_count() or 1
        full_use = (median_cpu["decoded"] + statistics.median(server["decoded"])) / cores
        result["decoded_at_full_core_use_over_c_decode"] = round(full_use / median["C decode"], 2)
        if "AsyncHTTPClient" in median:
            result["async_http_client_over_curl"] = round(median["AsyncHTTPClient"] / median["curl"], 2)
            result["raw_over_async_http_client"] = round(median["raw"] / median["AsyncHTTPClient"], 2)
            result["raw_cpu_over_async_http_client_cpu"] = round(median_cpu["raw"] / median_cpu["AsyncHTTPClient"], 2)
            result["session_cpu_over_async_http_client_cpu"] = round(
                median_cpu["HTTPSession"] / median_cpu["AsyncHTTPClient"], 2)
            result["raw_over_matched_client"] = round(median["raw"] / median["AsyncHTTPClient, session settings"], 2)
            result["raw_over_async_http_client_without_starts"] = round(
                (median["raw"] - median["webimage start"]) / (median["AsyncHTTPClient"] - median["AsyncHTTPClient start"]), 2)
            # The client and the decodes alone against the C floor: the share of the decoded
            # target the HTTP client and the server take before any of the library's own work.
            result["client_and_decode_over_c_decode"] = round(
                median["AsyncHTTPClient + C decode"] / median["C decode"], 2)
            result["client_and_decode_on_loops_over_c_decode"] = round(
                median["AsyncHTTPClient + C decode on its loops"] / median["C decode"], 2)
            result["decoded_over_client_and_decode"] = round(median["decoded"] / median["AsyncHTTPClient + C decode"], 2)
            result["decoded_over_client_and_decode_on_loops"] = round(
                median["decoded"] / median["AsyncHTTPClient + C decode on its loops"], 2)
        print(f"{args.count} JPEGs of {mean_kb:.0f} KB from nginx on loopback, {c} at a time, "
              f"median of {args.rounds} rounds (whole process)\n")
        print("| run | wall (s) | per image (ms) | CPU (s) | peak RSS (MB) | context switches | nginx CPU (s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in commands:
            print(f"| {name} | {median[name]:.3f} | {median[name] * 1000 / args.count:.2f} | {median_cpu[name]:.3f} "
                  f"| {rss[name]:.0f} | {result['context_switches'][name]} "
                  f"| {result['server_cpu_seconds'][name]:.3f} |")
        print(f"\nraw / curl = {result['raw_over_curl']}; "
              f"decoded / C decode = {result['decoded_over_c_decode']} (issue 46's target ≤ 1.3); "
              f"without HTTP (decoded from files / C decode) = {result['decoded_from_files_over_c_decode']}, "
              f"by CPU {result['decoded_from_files_cpu_over_c_decode_cpu']}; decoded with its CPU and nginx's "
              f"spread over the {cores} cores without a gap = {result['decoded_at_full_core_use_over_c_decode']}× "
              f"the C decode")
        if "AsyncHTTPClient" in median:
            print(f"AsyncHTTPClient alone / curl = {result['async_http_client_over_curl']}; "
                  f"raw / AsyncHTTPClient = {result['raw_over_async_http_client']} (issue 46's target ≤ 1.15); "
                  f"raw / AsyncHTTPClient with the session's settings = {result['raw_over_matched_client']}; "
                  f"without each process's start = {result['raw_over_async_http_client_without_starts']}; "
                  f"CPU, raw / AsyncHTTPClient = {result['raw_cpu_over_async_http_client_cpu']}, "
                  f"HTTPSession / AsyncHTTPClient = {result['session_cpu_over_async_http_client_cpu']}")
            print(f"AsyncHTTPClient + C decode / C decode = {result['client_and_decode_over_c_decode']} "
                  f"(decoding on the loops: {result['client_and_decode_on_loops_over_c_decode']}); "
                  f"decoded / AsyncHTTPClient + C decode = {result['decoded_over_client_and_decode']} "
                  f"(on the loops: {result['decoded_over_client_and_decode_on_loops']}): the library's own share")
        if split:
            result["raw_cpu_split_percent"] = split
            print(f"raw's CPU (perf samples, by the innermost of our frames or the client's on the stack): "
                  f"ours {split['ours']} %, HTTP client {split['HTTP client']} %, other {split['other']} %")
        if args.json:
            print(json.dumps(result))


if __name__ == "__main__":
    main()
