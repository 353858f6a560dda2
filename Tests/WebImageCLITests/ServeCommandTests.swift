import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("webimage serve", .timeLimit(.minutes(1)))
struct ServeCommandTests {
    /// `webimage serve ARGS` running until `stop()`; `url` is what its listening line names.
    final class RunningServer: Sendable {
        let process: Process
        let url: String
        /// The metrics URL its listening line names, with `--metrics-bind`.
        let metricsURL: String?

        private init(process: Process, url: String, metricsURL: String?) {
            self.process = process
            self.url = url
            self.metricsURL = metricsURL
        }

        /// Starts the binary and waits, on a thread of its own (not the cooperative pool), for
        /// its listening line.
        /// `shell`, when given, runs first in `/bin/sh`, which then `exec`s the server (`ulimit -n 1024`).
        /// `standardErrorPipe`, when given, takes standard error instead of `standardError`.
        static func start(
            _ arguments: [String],
            standardError: URL? = nil,
            standardErrorPipe: Pipe? = nil,
            shell: String? = nil,
            environment: [String: String] = [:]
        ) async throws
            -> RunningServer
        {
            // Tests check behaviour, not speed: a debug build on a busy machine must not reach
            // the download or processing timeout (tests of a timeout pass their own).
            var arguments = arguments
            for (flag, seconds) in [("--download-timeout", "60"), ("--processing-timeout", "120")]
            where !arguments.contains(flag) {
                arguments += [flag, seconds]
            }
            let process = Process()
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            if let shell {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments =
                    ["-c", "\(shell) && exec \"$0\" \"$@\"", CLIRunner.executable.path, "serve"] + arguments
            } else {
                process.executableURL = CLIRunner.executable
                process.arguments = ["serve"] + arguments
            }
            let output = Pipe()
            process.standardOutput = output
            if let standardErrorPipe {
                process.standardError = standardErrorPipe
            } else if let standardError {
                try Data().write(to: standardError)
                process.standardError = try FileHandle(forWritingTo: standardError)
            } else {
                process.standardError = FileHandle.nullDevice
            }
            try process.run()
            let line: Data = await withCheckedContinuation { continuation in
                Thread {
                    var line = Data()
                    while let byte = try? output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty,
                        byte != Data("\n".utf8)
                    {
                        line.append(byte)
                    }
                    continuation.resume(returning: line)
                }.start()
            }
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: String]
            return RunningServer(process: process, url: object?["listening"] ?? "", metricsURL: object?["metrics"])
        }

        /// SIGTERM, then the exit status.
        func stop() -> Int32 {
            process.terminate()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    @Test("Serves resized images on the port it prints, and exits 0 on SIGTERM")
    func serves() async throws {
        let origin = try await OriginServer.start()
        let photo = try PNGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 120, height: 80), format: .png),
            as: .png,
            options: .init()
        )
        origin.setRoute("/a.png", .data(photo, contentType: "image/png"))
        let folder = try TemporaryDirectory(prefix: "webimage-serve")
        defer { folder.remove() }
        let log = folder.url.appendingPathComponent("stderr.log")
        let server = try await RunningServer.start(
            [
                "--bind", "127.0.0.1:0", "--insecure", "--allow-loopback", "--json", "--cache-dir", folder.url.path,
                "--metrics-bind", "127.0.0.1:0", "--workers", "2", "--queue", "4",
            ],
            standardError: log
        )
        #expect(server.url.hasPrefix("http://127.0.0.1:"))
        #expect(
            server.metricsURL?.hasPrefix("http://127.0.0.1:") == true
                && server.metricsURL?.hasSuffix("/metrics") == true
        )
        let session = HTTPSession()
        let (data, response) = try await session.data(
            for: .init(
                url: try #require(URL(string: "\(server.url)/_/w:60/plain/\(origin.url("/a.png").absoluteString)"))
            )
        )
        #expect(response.statusCode == 200 && response.headers[.contentType] == "image/png")
        let image = try ImageCodersManager.shared.decode(data)
        #expect(image.width == 60 && image.height == 40)
        let metricsURL = try #require(server.metricsURL.flatMap(URL.init(string:)))
        let (metrics, _) = try await session.data(for: .init(url: metricsURL))
        #expect(String(decoding: metrics, as: UTF8.self).contains(#"webimage_requests_total{status="200"} 1"#))
        try await session.shutdown()
        #expect(server.stop() == 0)
        // One JSON line per request on standard error: status, time, path and source host.
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        let entries = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(entries.count == 1, "\(lines)")
        #expect(entries.first?["status"] as? Int == 200 && entries.first?["source"] as? String == "127.0.0.1")
        #expect((entries.first?["ms"] as? Double).map { $0 >= 0 } == true)
        await origin.stop()
    }

    @Test("Without a key it refuses to start, saying why; bad flags are usage errors")
    func refusesWithoutKey() async throws {
        let noKey = try await CLIRunner.runDetached(
            ["serve", "--bind", "127.0.0.1:0"],
            environment: ["WEBIMAGE_KEY": ""]
        )
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("no signing key"), "\(noKey.stderr)")
        let badKey = try await CLIRunner.runDetached(["serve", "--key", "xyz", "--salt", "00"])
        #expect(badKey.status == 2 && badKey.stderr.contains("not hex"), "\(badKey.stderr)")
        let unpaired = try await CLIRunner.runDetached(["serve", "--key", "00"])
        #expect(unpaired.status == 2 && unpaired.stderr.contains("one salt per key"))
        let bind = try await CLIRunner.runDetached(["serve", "--insecure", "--bind", "nowhere"])
        #expect(bind.status == 2 && bind.stderr.contains("--bind 'nowhere'"))
        let workers = try await CLIRunner.runDetached(["serve", "--insecure", "--workers", "0"])
        #expect(workers.status == 2 && workers.stderr.contains("--workers"), "\(workers.stderr)")
        let metrics = try await CLIRunner.runDetached(["serve", "--insecure", "--metrics-bind", "nowhere"])
        #expect(metrics.status == 2 && metrics.stderr.contains("--metrics-bind 'nowhere'"), "\(metrics.stderr)")
        let decodedCache = try await CLIRunner.runDetached(["serve", "--insecure", "--decoded-cache-size", "lots"])
        #expect(
            decodedCache.status == 2 && decodedCache.stderr.contains("--decoded-cache-size")
                && decodedCache.stderr.contains("'lots' is not a size"),
            "\(decodedCache.stderr)"
        )
        let preset = try await CLIRunner.runDetached(["serve", "--insecure", "--preset", "x=frobnicate:1"])
        #expect(
            preset.status == 2 && preset.stderr.contains("unknown or unsupported option 'frobnicate'"),
            "\(preset.stderr)"
        )
        let folder = try TemporaryDirectory(prefix: "webimage-watermark")
        defer { folder.remove() }
        let notAnImage = folder.url.appendingPathComponent("mark.txt")
        try Data("not an image".utf8).write(to: notAnImage)
        for (arguments, expected) in [
            (["--watermark-path", notAnImage.path], "--watermark-path: the data is not an image"),
            (["--watermark-path", folder.url.path + "/missing.png"], "--watermark-path '"),
            (["--watermark-data", "!!!"], "--watermark-data is not base64"),
            (["--watermark-url", "ftp://x/y.png"], "--watermark-url 'ftp://x/y.png' is not an http(s) URL"),
            (["--watermark-url", "http://x/y.png", "--watermark-data", "AAAA"], "give one of --watermark-path"),
            (["--watermark-opacity", "2"], "--watermark-opacity must be 0 to 1"),
        ] {
            let run = try await CLIRunner.runDetached(["serve", "--insecure"] + arguments)
            #expect(run.status == 2 && run.stderr.contains(expected), "\(arguments): \(run.stderr)")
        }
    }

    @Test("An unusable --cache-dir (a file, a folder under a file) stops the start with exit 2, naming it and why")
    func refusesUnusableCacheDirectory() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-serve-cache-dir")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)

        let isFile = try await CLIRunner.runDetached([
            "serve", "--insecure", "--bind", "127.0.0.1:0", "--cache-dir", file.path,
        ])
        #expect(isFile.status == 2, "\(isFile.stderr)")
        #expect(isFile.stderr.contains("--cache-dir '\(file.path)': is a file, not a folder"), "\(isFile.stderr)")

        let under = file.appendingPathComponent("originals").path
        let underFile = try await CLIRunner.runDetached([
            "serve", "--insecure", "--bind", "127.0.0.1:0", "--cache-dir", under,
        ])
        #expect(underFile.status == 2, "\(underFile.stderr)")
        #expect(underFile.stderr.contains("'\(file.path)' is a file, not a folder"), "\(underFile.stderr)")
        #expect(!underFile.stdout.contains("listening"))

        // A missing folder is created, and the server starts.
        let fresh = folder.url.appendingPathComponent("new/originals")
        let server = try await RunningServer.start([
            "--insecure", "--bind", "127.0.0.1:0", "--json", "--cache-dir", fresh.path,
        ])
        let started = !server.url.isEmpty
        #expect(server.stop() == 0)
        #expect(started)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: fresh.path, isDirectory: &isDirectory) && isDirectory.boolValue)
    }

    @Test("With 1,100 silent connections and 1024 descriptors, /health from a new client is answered")
    func holdsItsDescriptors() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-serve-descriptors")
        defer { folder.remove() }
        // Given: soft and hard limit 1024 (nothing to raise): the default cap is 768.
        let server = try await RunningServer.start(
            ["--bind", "127.0.0.1:0", "--insecure", "--json", "--cache-dir", folder.url.path],
            shell: "ulimit -n 1024"
        )
        let port = try #require(URL(string: server.url)?.port)
        // The 1,100 clients live in a child process: this test process keeps its descriptors
        // few (Foundation's Process.run, used by suites running beside this one, walks them).
        let clients = """
            import json, socket, sys, time
            port = int(sys.argv[1])
            silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(1100)]
            started = time.monotonic()
            client = socket.create_connection(("127.0.0.1", port), timeout=8)
            client.sendall(b"GET /health HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
            answer = b""
            try:
                while b"\\r\\n\\r\\n" not in answer:
                    part = client.recv(4096)
                    if not part:
                        break
                    answer += part
            except OSError:
                pass
            ms = (time.monotonic() - started) * 1000
            def closed(s):
                s.setblocking(False)
                try:
                    return s.recv(1) == b""
                except BlockingIOError:
                    return False
                except OSError:
                    return True
            print(json.dumps({"head": answer[:40].decode("latin-1"), "ms": ms,
                              "closed": sum(closed(s) for s in silent[:300])}))
            """
        let run = try await CLIRunner.runDetached(
            ["-c", clients, String(port)],
            program: URL(fileURLWithPath: "/usr/bin/python3")
        )
        #expect(server.stop() == 0)
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        // Then: answered (long before the 10 s read deadline), and the longest-idle made room.
        let head = object?["head"] as? String ?? ""
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(run.stdout) \(run.stderr)")
        #expect((object?["closed"] as? Int ?? 0) > 0, "\(run.stdout)")
    }

    @Test("With standard error never read, requests go on being answered; lines that did not fit are counted")
    func requestLogNeverHoldsUpRequests() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-serve-log")
        defer { folder.remove() }
        let errors = Pipe()
        let server = try await RunningServer.start(
            ["--bind", "127.0.0.1:0", "--insecure", "--json", "--cache-dir", folder.url.path],
            standardErrorPipe: errors
        )
        let port = try #require(URL(string: server.url)?.port)
        // When: 3,600 requests refused at once (an unknown option), each logging a line of some
        // 360 bytes (its path is cut at 300): the pipe (64 KiB) fills, then the log's 1 MiB.
        // Nothing reads standard error meanwhile; a request not answered in 20 s ends its client.
        let clients = """
            import concurrent.futures, http.client, json, sys
            port = int(sys.argv[1])
            def client(number):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
                statuses = []
                for index in range(600):
                    try:
                        connection.request("GET", f"/insecure/zz:1/plain/{'a' * 300}{number}-{index}")
                        response = connection.getresponse()
                        response.read()
                        statuses.append(response.status)
                    except OSError as error:
                        statuses.append(repr(error))
                        break
                return statuses
            with concurrent.futures.ThreadPoolExecutor(6) as pool:
                statuses = [s for part in pool.map(client, range(6)) for s in part]
            print(json.dumps({"answered": sum(s == 400 for s in statuses), "other": [s for s in statuses if s != 400][:3]}))
            """
        let run = try await CLIRunner.runDetached(
            ["-c", clients, String(port)],
            program: URL(fileURLWithPath: "/usr/bin/python3")
        )
        // Then: read standard error to its end (on a thread of its own) while the server stops:
        // the log catches up, and before ending says how many lines it dropped.
        let log = Task { try await onOwnThread { errors.fileHandleForReading.readDataToEndOfFile() } }
        #expect(server.stop() == 0)
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["answered"] as? Int == 3600, "\(run.stdout) \(run.stderr)")
        let lines = String(decoding: try await log.value, as: UTF8.self).split(separator: "\n")
        let entries = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let logged = entries.filter { $0["status"] as? Int == 400 }.count
        let dropped = entries.compactMap { $0["dropped_log_lines"] as? Int }.reduce(0, +)
        #expect(dropped > 0 && logged > 0, "\(logged) logged, \(dropped) dropped")
        #expect(logged + dropped == 3600, "\(logged) logged, \(dropped) dropped, \(lines.count) lines")
    }

    @Test("After a burst of AVIF and WebP encodes, freed memory goes back to the system; an idle server is left alone")
    func releasesFreedMemory() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-serve-memory")
        defer { folder.remove() }
        let photo = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.photoLike(width: 1000, height: 750, detail: 0.8), format: .jpeg),
            as: .jpeg,
            options: .init(quality: 0.9)
        )
        try photo.write(to: folder.url.appendingPathComponent("photo.jpg"))
        let server = try await RunningServer.start([
            "--bind", "127.0.0.1:0", "--insecure", "--json", "--metrics-bind", "127.0.0.1:0",
            "--cache-dir", folder.url.appendingPathComponent("cache").path, "--local-root", folder.url.path,
            "--decoded-cache-size", "0", "--free-memory-interval", "1s",
        ])
        defer { _ = server.stop() }
        let pid = server.process.processIdentifier
        let session = HTTPSession()
        let metricsURL = try #require(server.metricsURL.flatMap(URL.init(string:)))
        func released() async throws -> (count: Double, bytes: Double) {
            let text = String(decoding: try await session.data(for: .init(url: metricsURL)).0, as: UTF8.self)
            func value(_ name: String) -> Double {
                let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                return line.flatMap { Double($0.split(separator: " ")[1]) } ?? -1
            }
            return (value("webimage_memory_releases_total"), value("webimage_memory_released_bytes_total"))
        }
        // Given: two intervals with nothing answered: nothing to release, so no release.
        try await Task.sleep(for: .milliseconds(2500))
        #expect(try await released().count == 0)
        let start = Self.statusMegabytes(pid: pid, "VmRSS")
        // When: twelve encodes of growing sizes, six at once (libaom's buffers fragment the heap).
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            var statuses: [Int] = []
            for index in 0..<12 {
                if index >= 6, let status = try await group.next() { statuses.append(status) }
                let side = 500 + 40 * index
                let format = index.isMultiple(of: 2) ? "avif" : "webp"
                let url = try #require(
                    URL(string: "\(server.url)/insecure/rs:force:\(side):\(side)/f:\(format)/plain/local:///photo.jpg")
                )
                group.addTask { try await session.data(for: .init(url: url)).1.statusCode }
            }
            return try await group.reduce(into: statuses) { $0.append($1) }
        }
        #expect(statuses.count == 12 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        // Then: resident memory falls back by at least 40 % of what the burst added at its peak
        // (without releases it stays within a few percent of the peak).
        var resident = 0.0
        var peak = 0.0
        let fellBack = await waitUntil(
            {
                resident = Self.statusMegabytes(pid: pid, "VmRSS")
                peak = Self.statusMegabytes(pid: pid, "VmHWM")
                return resident <= peak - 0.4 * (peak - start)
            },
            timeout: .seconds(30)
        )
        #expect(fellBack, "resident \(resident) MB, peak \(peak) MB, \(start) MB before the burst")
        let (count, bytes) = try await released()
        #expect(count >= 1 && bytes > 0, "\(count) releases, \(bytes) bytes")
        try await session.shutdown()
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`) in megabytes; 0 when unreadable.
    private static func statusMegabytes(pid: Int32, _ field: String) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        let kilobytes = line?.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        return kilobytes / 1024
    }

    @Test("The soft descriptor limit is raised to the hard limit at start")
    func raisesTheDescriptorLimit() async throws {
        let folder = try TemporaryDirectory(prefix: "webimage-serve-rlimit")
        defer { folder.remove() }
        let server = try await RunningServer.start(
            ["--bind", "127.0.0.1:0", "--insecure", "--json", "--cache-dir", folder.url.path],
            shell: "ulimit -S -n 256 && ulimit -H -n 4096"
        )
        let limits =
            (try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)) ?? ""
        #expect(server.stop() == 0)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
        let numbers = line?.split(separator: " ").compactMap { Int($0) } ?? []
        #expect(numbers == [4096, 4096], "\(line ?? "no limits line")")
    }
}
