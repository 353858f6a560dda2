import AsyncHTTPClient
import CDirectCodecs
import Foundation
import NIOCore
import WebImageHTTP
import WebImageOrigin

// HTTP throughput: N GETs of a 100 KB body over loopback, C at a time, through HTTPSession and
// through raw AsyncHTTPClient (collecting each body pre-sized), against the same local origin
// in the same run. Reports requests per second (median of rounds) and the ratio.
//
//   swift run -c release --package-path Benchmarks webimage-http-benchmarks [--requests N] [--rounds R] [--side K]
//
// Reference mode: `--fetch-list FILE [--concurrency C] [--matched | --session | --delegate]` GETs every URL in
// FILE (one per line) once, C (6) at a time, through AsyncHTTPClient alone with its defaults (or,
// with `--matched`, with the settings HTTPSession gives it; with `--session`, through HTTPSession
// itself; with `--delegate`, through AsyncHTTPClient's delegate API, which runs on the event loop
// with no Swift task per body part), collecting each body, and exits: the HTTP stack's own cost
// inside `webimage fetch` (Benchmarks/fetch-cost.sh times the whole process). `--matched-except
// LIST` is `--matched` without the settings LIST names (comma-separated: `timeouts`,
// `decompression`, `headers`, `tracing`), to tell what each one costs. `--decode` decodes each
// collected body whole to RGBA with libjpeg-turbo (`direct_jpeg_decode`) on a thread per core, off
// Swift's pool as webimage decodes, each request's task waiting for its decode: the least any
// pipeline on this client can cost, its client and decode and nothing else. `--decode-on-loop`
// goes through the delegate API and decodes each body on the event loop that read it (one loop
// per core, no hand-off at all): what the client and the decodes cost with no thread ever woken
// for them, a floor no pipeline that keeps decoding off its loops reaches.

func argument(_ name: String, default value: Int) -> Int {
    CommandLine.arguments.firstIndex(of: name).flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? value
}

if let index = CommandLine.arguments.firstIndex(of: "--fetch-list"), CommandLine.arguments.count > index + 1 {
    let width = argument("--concurrency", default: 6)
    let urls = try String(contentsOfFile: CommandLine.arguments[index + 1], encoding: .utf8)
        .split(whereSeparator: \.isNewline).map(String.init)
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: width)
    // --matched: the client as HTTPSession configures it for the CLI (15 s connect and read
    // timeouts, decompression, no redirects, the session's default headers, no tracer): what
    // those settings cost AsyncHTTPClient, apart from what the session's own code costs.
    let omitted = CommandLine.arguments.firstIndex(of: "--matched-except").map { index in
        guard CommandLine.arguments.indices.contains(index + 1) else {
            fatalError("--matched-except: missing its list (timeouts, decompression, headers, tracing)")
        }
        return Set(CommandLine.arguments[index + 1].split(separator: ",").map(String.init))
    }
    if let unknown = omitted?.subtracting(["timeouts", "decompression", "headers", "tracing"]), !unknown.isEmpty {
        fatalError(
            "--matched-except: unknown settings \(unknown.sorted()); known: timeouts, decompression, headers, tracing"
        )
    }
    let matched = CommandLine.arguments.contains("--matched") || omitted != nil
    let matches = { (setting: String) in matched && omitted?.contains(setting) != true }
    if matches("timeouts") { configuration.timeout = .init(connect: .seconds(15), read: .seconds(15)) }
    if matches("decompression") { configuration.decompression = .enabled(limit: .ratio(100)) }
    if matched { configuration.redirectConfiguration = .disallow }
    // No tracer unless tracing was bootstrapped (the client's default is a no-op tracer's spans).
    if matches("tracing") { configuration.tracing.tracer = HTTPSession.Configuration().tracer }
    let sendsSessionHeaders = matches("headers")
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    let standardHeaders = HTTPSession.Configuration.standardHeaders
    // --session: through HTTPSession (`data(for:)`, configured as the image downloader's), so the
    // session's own cost shows apart from the downloader's and the manager's.
    var sessionConfiguration = HTTPSession.Configuration()
    sessionConfiguration.maximumConnectionsPerHost = width
    sessionConfiguration.postsTaskNotifications = false
    let session =
        CommandLine.arguments.contains("--session") ? HTTPSession(configuration: sessionConfiguration) : nil
    let decodesOnLoop = CommandLine.arguments.contains("--decode-on-loop")
    let viaDelegate = CommandLine.arguments.contains("--delegate") || decodesOnLoop
    let lanes = CommandLine.arguments.contains("--decode") ? DecodeLanes() : nil
    @Sendable func fetch(_ url: String) async throws -> Int {
        if viaDelegate {
            let request = try HTTPClient.Request(url: url)
            let accumulator = ResponseAccumulator(request: request, maxBodySize: 64 * 1024 * 1024)
            let deadline = NIODeadline.now() + TimeAmount.seconds(30)
            let task: HTTPClient.Task<HTTPClient.Response> = client.execute(
                request: request,
                delegate: accumulator,
                deadline: deadline
            )
            let response = try await task.futureResult.flatMapThrowing { response in
                if decodesOnLoop, let body = response.body { try decodeJPEG(body, url: url) }
                return response
            }.get()
            guard response.status == .ok else { throw HTTPClientError.remoteConnectionClosed }
            return response.body?.readableBytes ?? 0
        }
        if let session {
            guard let url = URL(string: url) else { throw HTTPClientError.invalidURL }
            let (data, response) = try await session.data(for: HTTPSession.Request(url: url))
            guard response.statusCode == 200 else { throw HTTPClientError.remoteConnectionClosed }
            return data.count
        }
        var request = HTTPClientRequest(url: url)
        if sendsSessionHeaders {
            for field in standardHeaders { request.headers.add(name: field.name.rawName, value: field.value) }
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw HTTPClientError.remoteConnectionClosed }
        let body = try await response.body.collect(upTo: 64 * 1024 * 1024)
        if let lanes { try await lanes.decode(body, url: url) }
        return body.readableBytes
    }
    try await withThrowingTaskGroup(of: Int.self) { group in
        var pending = urls[...]
        for _ in 0..<width { if let url = pending.popFirst() { group.addTask { try await fetch(url) } } }
        while try await group.next() != nil {
            if let url = pending.popFirst() { group.addTask { try await fetch(url) } }
        }
    }
    try await client.shutdown().get()
    try await session?.shutdown()
    exit(0)
}

/// A thread per core decoding JPEGs in arrival order; the submitting task waits for its decode.
final class DecodeLanes: Sendable {
    private let jobs = NSCondition()
    // Safety: every access is between `jobs.lock()` and `jobs.unlock()`: the lanes' loop reads and
    // removes under the lock (`wait()` gives it up and takes it back before returning, so the
    // emptiness check after a wake-up holds it too), and `decode` appends under it. The lock
    // orders all accesses, so no two overlap and each sees the last one's writes.
    nonisolated(unsafe) private var pending: [@Sendable () -> Void] = []

    init(threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        for index in 0..<threads {
            let thread = Thread { [self] in
                while true {
                    jobs.lock()
                    while pending.isEmpty { jobs.wait() }
                    let job = pending.removeFirst()
                    jobs.unlock()
                    job()
                }
            }
            thread.name = "decode-\(index)"
            thread.start()
        }
    }

    /// Decodes `body` (a JPEG) to RGBA on a lane; throws when libjpeg fails, naming `url`.
    func decode(_ body: ByteBuffer, url: String) async throws {
        let decoded = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            jobs.lock()
            pending.append { continuation.resume(returning: (try? decodeJPEG(body, url: url)) != nil) }
            jobs.signal()
            jobs.unlock()
        }
        guard decoded else { throw DecodeFailed(url: url) }
    }
}

struct DecodeFailed: Error, CustomStringConvertible {
    var url: String
    var description: String { "\(url): libjpeg-turbo could not decode the body" }
}

/// Decodes `body` (a JPEG) whole to RGBA with libjpeg-turbo, then frees the pixels.
func decodeJPEG(_ body: ByteBuffer, url: String) throws {
    var (width, height): (UInt32, UInt32) = (0, 0)
    let status = body.withUnsafeReadableBytes { bytes in
        direct_jpeg_decode(bytes.bindMemory(to: UInt8.self).baseAddress!, bytes.count, 1, &width, &height)
    }
    guard status == 0 else { throw DecodeFailed(url: url) }
}

let requestCount = argument("--requests", default: 1000)
let rounds = argument("--rounds", default: 5)
let concurrency = 6
let bodySize = 100 * 1024

/// Runs `count` loads `width` at a time; returns requests per second.
func throughput(_ load: @escaping @Sendable (Int) async throws -> Int) async throws -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try await withThrowingTaskGroup(of: Int.self) { group in
        var next = 0
        for _ in 0..<concurrency {
            let index = next
            group.addTask { try await load(index) }
            next += 1
        }
        while let received = try await group.next() {
            precondition(received == bodySize, "short body: \(received)")
            if next < requestCount {
                let index = next
                group.addTask { try await load(index) }
                next += 1
            }
        }
    }
    let elapsed = clock.now - start
    return Double(requestCount) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

let origin = try await OriginServer.start()
origin.setRoute(
    "/blob",
    OriginRoute(headers: [("Content-Type", "application/octet-stream")], body: Data(count: bodySize))
)
let url = origin.url("/blob")

var configuration = HTTPSession.Configuration()
configuration.maximumConnectionsPerHost = concurrency
let session = HTTPSession(configuration: configuration)
let request = HTTPSession.Request(url: url)

/// Raw AsyncHTTPClient: with its defaults, and configured like HTTPSession's defaults
/// (decompression on, the same default headers) so both sides do the same work.
func rawClient(matched: Bool) -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(
        idleTimeout: .seconds(60),
        concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency
    )
    if matched { configuration.decompression = .enabled(limit: .ratio(100)) }
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}
let rawDefault = rawClient(matched: false)
let rawMatched = rawClient(matched: true)
let sessionHeaders = HTTPSession.Configuration.standardHeaders

func rawLoad(_ client: HTTPClient, headers: Bool) async throws -> Int {
    var clientRequest = HTTPClientRequest(url: url.absoluteString)
    if headers {
        for field in sessionHeaders { clientRequest.headers.add(name: field.name.rawName, value: field.value) }
    }
    let response = try await client.execute(clientRequest, timeout: .seconds(30))
    let expected = response.headers.first(name: "content-length").flatMap(Int.init) ?? 1024 * 1024
    return try await response.body.collect(upTo: expected).readableBytes
}

let sides = ["HTTPSession", "raw AsyncHTTPClient, matched configuration", "raw AsyncHTTPClient, defaults"]
/// `--side K` runs only side K (0, 1 or 2): one side alone, to profile it.
let onlySide = argument("--side", default: -1)
var rates: [[Double]] = Array(repeating: [], count: sides.count)
for round in 0...rounds {
    // Rotate the order so no side always runs on a warmer machine; round 0 warms up.
    for offset in 0..<sides.count {
        let side = (round + offset) % sides.count
        if onlySide >= 0, side != onlySide { continue }
        let rate: Double
        switch side {
        case 0: rate = try await throughput { _ in try await session.data(for: request).0.count }
        case 1: rate = try await throughput { _ in try await rawLoad(rawMatched, headers: true) }
        default: rate = try await throughput { _ in try await rawLoad(rawDefault, headers: false) }
        }
        if round > 0 { rates[side].append(rate) }
    }
}
try await session.shutdown()
try await rawDefault.shutdown().get()
try await rawMatched.shutdown().get()
await origin.stop()

let medians = rates.map { $0.isEmpty ? .nan : median($0) }
print(
    "| \(requestCount) GETs × 100 KB, \(concurrency) at a time | requests/s (median of \(rounds)) | HTTPSession / this |"
)
print("|---|---:|---:|")
for (index, name) in sides.enumerated() where !rates[index].isEmpty {
    print("| \(name) | \(Int(medians[index].rounded())) | \(String(format: "%.3f", medians[0] / medians[index])) |")
}
