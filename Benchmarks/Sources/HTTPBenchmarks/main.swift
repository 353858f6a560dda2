import AsyncHTTPClient
import Foundation
import WebImageHTTP
import WebImageOrigin

// HTTP throughput: N GETs of a 100 KB body over loopback, C at a time, through HTTPSession and
// through raw AsyncHTTPClient (collecting each body pre-sized), against the same local origin
// in the same run. Reports requests per second (median of rounds) and the ratio.
//
//   swift run -c release --package-path Benchmarks webimage-http-benchmarks [--requests N] [--rounds R]

func argument(_ name: String, default value: Int) -> Int {
    CommandLine.arguments.firstIndex(of: name).flatMap {
        CommandLine.arguments.indices.contains($0 + 1) ? Int(CommandLine.arguments[$0 + 1]) : nil
    } ?? value
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

var rawConfiguration = HTTPClient.Configuration()
rawConfiguration.connectionPool = .init(
    idleTimeout: .seconds(60),
    concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency
)
let raw = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: rawConfiguration)

var sessionRates: [Double] = []
var rawRates: [Double] = []
for round in 0...rounds {
    // Alternate the order so neither side always runs on a warmer machine; round 0 warms up.
    let sessionFirst = round % 2 == 0
    for side in sessionFirst ? [0, 1] : [1, 0] {
        let rate: Double
        if side == 0 {
            rate = try await throughput { _ in try await session.data(for: request).0.count }
        } else {
            rate = try await throughput { _ in
                let response = try await raw.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(30))
                let expected = response.headers.first(name: "content-length").flatMap(Int.init) ?? 1024 * 1024
                return try await response.body.collect(upTo: expected).readableBytes
            }
        }
        if round > 0 { side == 0 ? sessionRates.append(rate) : rawRates.append(rate) }
    }
}
try await session.shutdown()
try await raw.shutdown()
await origin.stop()

let ours = median(sessionRates)
let reference = median(rawRates)
print("| \(requestCount) GETs × 100 KB, \(concurrency) at a time | requests/s (median of \(rounds)) |")
print("|---|---:|")
print(String(format: "| HTTPSession | %.0f |", ours))
print(String(format: "| raw AsyncHTTPClient | %.0f |", reference))
print(String(format: "| HTTPSession / raw | %.3f |", ours / reference))
