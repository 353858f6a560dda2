import Foundation

extension HTTPSession {
    /// The request to follow for a redirect response, or `nil` when it is not followed.
    func redirect(
        after head: Response,
        request: Request,
        visited: Set<String>,
        redirects: Int,
        task: HTTPSessionTask,
        delegate: (any HTTPSessionTaskDelegate)?
    ) async throws -> Request? {
        let policy = configuration.redirectPolicy
        guard policy.follow, [301, 302, 303, 307, 308].contains(head.statusCode),
            let location = head.headers[.location]
        else { return nil }
        func refuse(_ reason: String) -> HTTPSessionError {
            HTTPSessionError(
                .redirectRefused,
                url: request.url,
                message: "\(request.url): redirect (\(head.statusCode)) to \(location.prefix(200)) refused: \(reason)",
                response: head
            )
        }
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL else {
            throw refuse("not a URL")
        }
        if let failure = target.httpValidationFailure { throw refuse(failure) }
        if let reason = configuration.redirectValidator?(target) { throw refuse(reason) }
        if request.url.scheme?.lowercased() == "https", target.scheme?.lowercased() == "http",
            !policy.allowsInsecureRedirects
        {
            throw refuse("it leaves https for plain http")
        }
        guard redirects < policy.maximumCount else {
            throw HTTPSessionError(
                .tooManyRedirects,
                url: request.url,
                message: "\(task.originalRequest.url): more than \(policy.maximumCount) redirects",
                response: head
            )
        }
        // `visited` is empty until the first redirect: then only the first URL was seen.
        let targetText = target.absoluteString
        let isVisited =
            visited.isEmpty ? targetText == task.originalRequest.url.absoluteString : visited.contains(targetText)
        guard policy.allowCycles || !isVisited else {
            throw HTTPSessionError(
                .redirectLoop,
                url: request.url,
                message: "\(task.originalRequest.url): redirect loop back to \(target)",
                response: head
            )
        }
        var next = request
        next.url = target
        // 303, and 301/302 after POST, become GET without a body (as browsers do).
        if head.statusCode == 303 || ([301, 302].contains(head.statusCode) && request.method == .post) {
            if next.method != .head { next.method = .get }
            next.body = nil
            next.headers[.contentType] = nil
            next.headers[.contentLength] = nil
        }
        // Across origins only headers known to be safe go along (the session's default headers
        // are added again when the request is made): credentials, cookies, proxy credentials and
        // any custom header (an API key) stay with the origin they were meant for.
        if target.host?.lowercased() != request.url.host?.lowercased() || target.port != request.url.port
            || target.scheme?.lowercased() != request.url.scheme?.lowercased()
        {
            next.headers.removeAll { !Self.crossOriginSafeHeaders.contains($0.name) }
        }
        if let delegate { return await delegate.task(task, willPerformRedirection: head, newRequest: next) }
        return next
    }

    /// Headers a redirect to another origin keeps (what they say is no secret and no instruction
    /// about a resource on the first origin).
    static let crossOriginSafeHeaders: Set<HTTPField.Name> = [
        .accept, .acceptLanguage, .acceptEncoding, .userAgent, .contentType, .contentLength, .cacheControl,
        HTTPField.Name("Pragma")!,
    ]
}
