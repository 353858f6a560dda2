#!/usr/bin/env python3
"""The figures of issue 30 (the proxy under attack) for one `webimage serve` binary, on loopback.

    python3 Benchmarks/defences.py --webimage "$(scripts/build-webimage.sh)" [--parts slow,descriptors,...]

Parts (each starts its own server with --insecure --allow-loopback and stops it):
  slow         200 clients send a request head one byte a second: connections still open after 30 s
  descriptors  RLIMIT_NOFILE 1024 (soft and hard), 1,100 silent connections: /health latency
  enlarge      a 64x64 PNG as rs:fill:8192:8192:1@webp: status and the server's peak RSS
  timeout      --processing-timeout 0.5s on a long render: CPU seconds spent after the 504
  cachesize    --cache-size 1M, 40 distinct sources of about 233 KB: bytes left in the cache folder
Run it against two binaries (before and after a change) on the same machine to compare.
"""
import argparse, http.server, os, random, shutil, socket, struct, subprocess, sys, tempfile, threading, time, zlib


def png(width, height, noise=False, seed=0):
    rng = random.Random(seed)
    rows = []
    for y in range(height):
        if noise:
            rows.append(b"\0" + bytes(rng.getrandbits(8) for _ in range(width * 3)))
        else:
            rows.append(b"\0" + b"".join(bytes((x * 4 % 256, y * 4 % 256, 128)) for x in range(width)))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b"")


class Origin:
    """Serves generated files from a temporary folder on 127.0.0.1."""

    def __init__(self, files):
        self.folder = tempfile.mkdtemp(prefix="defences-origin-")
        for name, data in files.items():
            with open(os.path.join(self.folder, name), "wb") as handle:
                handle.write(data)
        folder = self.folder

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=folder, **kwargs)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def stop(self):
        self.server.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


class Server:
    """`webimage serve` on 127.0.0.1, port picked by the server."""

    def __init__(self, binary, extra=(), shell_prefix=None):
        self.cache = tempfile.mkdtemp(prefix="defences-cache-")
        arguments = [binary, "serve", "--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json",
                     "--cache-dir", self.cache, *extra]
        if shell_prefix:
            arguments = ["/bin/sh", "-c", shell_prefix + ' && exec "$0" "$@"', *arguments]
        self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.process.stdout.readline().decode()
        self.port = int(line.rsplit(":", 1)[1].split('"')[0])

    def rss_peak_mb(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self):
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def get(self, path, timeout=60):
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as connection:
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                part = connection.recv(65536)
                if not part:
                    break
                data += part
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
        return status, time.monotonic() - started

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.cache, ignore_errors=True)


def is_open(sock):
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def part_slow(binary):
    server = Server(binary)
    clients = []
    for _ in range(200):
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"GET /health HTTP/1.1\r\n")
        clients.append(client)
    for second in range(30):
        time.sleep(1)
        for client in clients:
            try:
                client.send(b"X")
            except OSError:
                pass
    still_open = sum(1 for client in clients if is_open(client))
    for client in clients:
        client.close()
    server.stop()
    print(f"slow: {still_open} of 200 slow clients still connected after 30 s")


def part_descriptors(binary):
    server = Server(binary, shell_prefix="ulimit -n 1024")
    silent = []
    for _ in range(1100):
        try:
            silent.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        except OSError:
            break
    time.sleep(0.5)
    try:
        status, seconds = server.get("/health", timeout=10)
        result = f"{status} in {seconds * 1000:.0f} ms"
    except OSError as error:
        result = f"no answer in 10 s ({error.__class__.__name__})"
    for connection in silent:
        connection.close()
    server.stop()
    print(f"descriptors: {len(silent)} silent connections, /health from a new client: {result}")


def part_enlarge(binary, extra=()):
    origin = Origin({"tiny.png": png(64, 64)})
    # A long processing timeout: a build that admits the request shows what it costs in full.
    server = Server(binary, ["--processing-timeout", "600s", *extra])
    before = server.rss_peak_mb()
    status, seconds = server.get(f"/insecure/rs:fill:8192:8192:1/cb:1/plain/{origin.url('tiny.png')}@webp", timeout=300)
    print(f"enlarge{' ' + ' '.join(extra) if extra else ''}: status {status} in {seconds:.1f} s, "
          f"server peak RSS {server.rss_peak_mb():.0f} MB (idle peak before {before:.0f} MB)")
    server.stop()
    origin.stop()


def part_timeout(binary):
    origin = Origin({"tiny.png": png(64, 64)})
    server = Server(binary, ["--processing-timeout", "0.5s"])
    # 36 megapixels: under the default result limits, seconds of resampling and AVIF encoding.
    status, seconds = server.get(f"/insecure/rs:fill:6000:6000:1/cb:2/plain/{origin.url('tiny.png')}@avif", timeout=300)
    at_answer = server.cpu_seconds()
    time.sleep(15)
    after = server.cpu_seconds()
    print(f"timeout: status {status} after {seconds:.2f} s; CPU in the 15 s after the answer: {after - at_answer:.2f} s")
    server.stop()
    origin.stop()


def part_cachesize(binary):
    files = {f"{index}.png": png(280, 280, noise=True, seed=index) for index in range(40)}
    size = len(files["0.png"])
    origin = Origin(files)
    server = Server(binary, ["--cache-size", "1M"])
    for name in files:
        server.get(f"/insecure/w:50/plain/{origin.url(name)}")
    time.sleep(1)
    total = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(server.cache) for name in names)
    print(f"cachesize: 40 sources of {size / 1000:.0f} KB with --cache-size 1M leave {total / 1e6:.2f} MB on disk")
    server.stop()
    origin.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--parts", default="slow,descriptors,enlarge,timeout,cachesize")
    arguments = parser.parse_args()
    for part in arguments.parts.split(","):
        if part == "enlarge":
            part_enlarge(arguments.webimage)
            if "--max-result-resolution" in subprocess.run([arguments.webimage, "serve", "--help"],
                                                           capture_output=True, text=True).stdout:
                part_enlarge(arguments.webimage, ["--max-result-resolution", "70"])
        else:
            globals()[f"part_{part}"](arguments.webimage)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
