import Foundation
import WebImage

/// Loads one input and describes the outcome.
struct FetchJob: Sendable {
    let manager: ImageManager
    let options: ImageOptions
    let context: ImageContext
    let destination: Destination
    let output: OutputSettings
    let retries: Retries
    /// Bytes of images loaded earlier in this run, for memory hits (which carry no bytes).
    private let bytesByURL = Protected<[String: Int]>([:])

    init(
        manager: ImageManager,
        options: ImageOptions,
        context: ImageContext,
        destination: Destination,
        output: OutputSettings,
        retries: Retries = Retries(count: 0, fixedDelay: nil)
    ) {
        self.manager = manager
        self.options = options
        self.context = context
        self.destination = destination
        self.output = output
        self.retries = retries
    }

    /// `--retry` and `--retry-delay`.
    struct Retries: Sendable {
        var count: Int
        /// Seconds between attempts; `nil`: 1 s, doubling, at most 30 s.
        var fixedDelay: Double?

        func delay(beforeAttempt attempt: Int) -> Duration {
            if let fixedDelay { return .milliseconds(Int64(fixedDelay * 1000)) }
            return .seconds(min(30, 1 << min(attempt - 1, 5)))
        }

        /// Failures a later attempt may not repeat: the network, timeouts, and the statuses a
        /// server uses for "not now" (408, 429, 5xx).
        static func isTransient(_ error: WebImageError) -> Bool {
            switch error.code {
            case .networkError: return true
            case .invalidDownloadStatusCode:
                guard let status = error.statusCode else { return false }
                return status == 408 || status == 429 || (500...599).contains(status)
            default: return false
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
        var attempt = 0
        while true {
            do {
                // A retry must not be refused as a URL that failed before.
                let options = attempt == 0 ? options : options.union(.retryFailed)
                result = try await manager.loadImage(with: url, options: options, context: context) {
                    received,
                    expected in
                    bar.update(index, received: received, expected: expected)
                }
                break
            } catch {
                if attempt < retries.count, Retries.isTransient(error), !Task.isCancelled {
                    attempt += 1
                    Diagnostics.write(
                        "\(input): warning: \(StandardStream.cause(error.message, of: input)); retry \(attempt) of \(retries.count)"
                    )
                    try? await Task.sleep(for: retries.delay(beforeAttempt: attempt))
                    continue
                }
                report.error = error
                report.ms(clock.now - start)
                return report
            }
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
            report.frames = image.frames.count
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
                    report.frames = image.frames.count
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
