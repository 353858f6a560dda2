import Foundation
import Logging
@_spi(WebImageInternals) import WebImageCoders
import WebImageHTTP

/// Retries and resumed bodies: a transient failure waits as the retry strategy says and sends
/// the request again inside the same operation (its callers see one outcome); a body cut after
/// some bytes continues with `Range`/`If-Range` when the server offers ranges and a validator,
/// as Nuke's resumable data does.
extension DownloadOperation {
    /// The next attempt: its wait, and the bytes it continues.
    struct RetryPlan: Sendable {
        var attempt: Int
        var delay: Duration
        var partial: PartialBody?
    }

    /// An attempt's outcome with `partial` (the bytes it continued) put back in front: a `206`
    /// that starts where they end becomes the whole body with status 200. `resumed` is `false`
    /// when the server sent some other range (the caller starts over), `nil` when nothing was
    /// continued or the server sent the whole body instead (a 200: it replaces the bytes).
    static func joining(
        _ partial: PartialBody?,
        data: Data,
        response: HTTPSession.Response?,
        error: HTTPSessionError?
    ) -> (data: Data, response: HTTPSession.Response?, resumed: Bool?) {
        guard let partial, var response, response.statusCode == 206 else { return (data, response, nil) }
        guard let range = ContentRange(response.headers[values: .contentRange].first),
            range.first == partial.data.count
        else { return (data, response, false) }
        response.statusCode = 200
        response.headers[.contentRange] = nil
        if let total = range.total { response.headers[.contentLength] = String(total) }
        return (partial.data + data, response, true)
    }

    /// The next attempt after this one failed transiently, when the strategy allows it and a
    /// caller still wants the load; `nil` otherwise (the outcome is delivered as it is).
    func retryPlan(
        attempt: Int,
        data: Data,
        response: HTTPSession.Response?,
        error: HTTPSessionError?,
        _ configuration: ImageDownloader.Configuration
    ) -> RetryPlan? {
        guard let strategy = context.retryStrategy ?? configuration.retryStrategy, error?.code != .cancelled,
            state.withLock({ $0.machine.isWanted })
        else { return nil }
        let failure = DownloadRetryContext(
            url: url,
            attempt: attempt,
            statusCode: error == nil ? response?.statusCode : nil,
            error: error,
            retryAfter: DownloadRetryContext.retryAfter(response?.headers[values: .retryAfter].first)
        )
        guard failure.isTransient, let delay = strategy.retryDelay(for: failure) else { return nil }
        let partial = error == nil ? nil : Self.resumable(data, response: response)
        return RetryPlan(attempt: attempt + 1, delay: delay, partial: partial)
    }

    /// The bytes a cut transfer can continue from: some arrived, the response was the whole
    /// representation (200), the server accepts byte ranges, and it has a strong `ETag` or a
    /// `Last-Modified` for `If-Range`.
    static func resumable(_ data: Data, response: HTTPSession.Response?) -> PartialBody? {
        guard let response, response.statusCode == 200, !data.isEmpty,
            response.headers[values: .acceptRanges].contains(where: { $0.lowercased() == "bytes" })
        else { return nil }
        guard let validator = response.rangeValidator else { return nil }
        return PartialBody(data: data, validator: validator)
    }

    /// Waits `plan.delay` (cancelled with the load) and sends the next attempt.
    func scheduleRetry(
        _ plan: RetryPlan,
        of request: HTTPSession.Request,
        options: ImageOptions,
        in environment: ImageDownloadEnvironment,
        then onFinish: @escaping @Sendable () -> Void
    ) {
        environment.configuration.logger.notice(
            "download retried",
            metadata: [
                "url": "\(url)", "attempt": "\(plan.attempt)", "after": "\(plan.delay)",
                "resumeAt": "\(plan.partial?.data.count ?? 0)",
            ]
        )
        // Previews were fed this attempt's bytes: a transfer that starts over would feed them again.
        if plan.partial == nil {
            state.withLock { $0.machine.runningWork?.previews }?.stop()
        }
        let wait = Task { [self] in
            try? await Task.sleep(for: plan.delay)
            guard !Task.isCancelled, state.withLock({ $0.machine.isWanted }) else { return onFinish() }
            send(
                request,
                attempt: plan.attempt,
                partial: plan.partial,
                options: options,
                in: environment,
                then: onFinish
            )
        }
        if !state.withLock({ $0.machine.attach({ $0.retryWait = wait }, initial: Work()) }) { wait.cancel() }
    }
}

/// A `Content-Range: bytes first-last/total` value (`total` may be `*`).
struct ContentRange: Equatable {
    var first: Int
    var last: Int
    var total: Int?

    init?(_ value: String?) {
        guard let value, value.hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1).compactMap { Int($0) } ?? []
        guard parts.count == 2, bounds.count == 2, bounds[0] >= 0, bounds[1] >= bounds[0] else { return nil }
        first = bounds[0]
        last = bounds[1]
        total = Int(parts[1])
    }
}
