import Foundation
import WebImage
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// Loads one input and describes the outcome.
struct FetchJob: Sendable {
    let manager: ImageManager
    let options: ImageOptions
    let context: ImageContext
    let destination: Destination
    let output: OutputSettings
    /// Bytes of images loaded earlier in this run, for memory hits (which carry no bytes).
    private let bytesByURL = Protected<[String: Int]>([:])

    init(
        manager: ImageManager,
        options: ImageOptions,
        context: ImageContext,
        destination: Destination,
        output: OutputSettings
    ) {
        self.manager = manager
        self.options = options
        self.context = context
        self.destination = destination
        self.output = output
    }

    /// `--retry` and `--retry-delay`: the downloader's retry strategy (transient failures only:
    /// network errors, timeouts, 408, 429, 500, 502, 503, 504; `Retry-After` honoured), which
    /// writes a warning before each retry.
    struct Retries: Sendable {
        var count: Int
        /// Seconds between attempts; `nil`: 1 s, doubling, at most 30 s.
        var fixedDelay: Double?

        var strategy: some ImageRetryStrategy {
            let fixed = fixedDelay.map { Duration.milliseconds(Int64($0 * 1000)) }
            return Reporting(
                count: count,
                backoff: BackoffRetryStrategy(
                    maximumRetryCount: count,
                    initialDelay: fixed ?? .seconds(1),
                    maximumDelay: fixed ?? .seconds(30),
                    jitter: 0
                )
            )
        }

        /// Writes `URL: warning: cause; retry N of M` before each retry.
        struct Reporting: ImageRetryStrategy {
            var count: Int
            var backoff: BackoffRetryStrategy

            func retryDelay(for failure: DownloadRetryContext) -> Duration? {
                guard let delay = backoff.retryDelay(for: failure) else { return nil }
                let input = failure.url.absoluteString
                let cause =
                    failure.error.map { StandardStream.cause($0.message, of: input) } ?? failure.statusCode.map {
                        "HTTP status \($0)"
                    } ?? "failed"
                Diagnostics.write("\(input): warning: \(cause); retry \(failure.attempt) of \(count)")
                return delay
            }
        }
    }

    func load(_ input: String, index: Int, bar: ProgressBar) async -> FetchReport {
        var report = FetchReport(url: input)
        let clock = ContinuousClock()
        let start = clock.now
        guard let url = URL(string: input), !input.isEmpty else {
            report.error = WebImageError.invalidURL(input)
            report.ms(clock.now - start)
            return report
        }
        let result: ImageLoadResult
        do {
            // Transient failures are retried inside the download (the downloader's strategy).
            result = try await manager.loadImage(with: url, options: options, context: context) { received, expected in
                bar.update(index, received: received, expected: expected)
            }
        } catch {
            report.error = error
            report.ms(clock.now - start)
            return report
        }
        report.ok = true
        report.cacheType = result.cacheType
        if let data = result.data {
            bytesByURL.withLock { $0[input] = data.count }
            report.bytes = data.count
            report.format = ImageFormat(sniffing: data)
        } else {
            report.bytes = bytesByURL.withLock { $0[input] }
            report.format = result.image?.format
        }
        if let image = result.image {
            report.width = image.width
            report.height = image.height
            report.frames = image.animation?.frameCount ?? image.frames.count
            report.format = report.format ?? image.format
        }
        if destination != .none {
            do {
                let written = try write(result, input: input, index: index)
                report.output = written.path
                if let image = written.image {
                    // The line describes the file: a re-encoded image's own size, format and frames.
                    report.width = image.width
                    report.height = image.height
                    report.frames = image.animation?.frameCount ?? image.frames.count
                    report.format = written.format
                }
            } catch {
                report.ok = false
                report.outputError = "\(input): \(error.message)"
            }
        }
        report.ms(clock.now - start)
        return report
    }
}
