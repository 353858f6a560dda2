import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
@_spi(WebImageInternals) import WebImageCoders

/// Answers every request from the origin's route table.
struct OriginResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let state: OriginState

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        let recorded = try await record(&request)
        state.enter()
        var leaveOnReturn = true
        defer { if leaveOnReturn { state.leave() } }
        if let description = Self.describe(recorded) { return description }
        guard let route = state.routes.withLock({ $0[recorded.path] }) else {
            return Response(
                status: .notFound,
                body: .init(byteBuffer: ByteBuffer(string: "no route for \(recorded.path)"))
            )
        }
        let behavior = route.behavior
        if let refusal = Self.unauthorized(recorded, behavior: behavior) { return refusal }
        if behavior.stall { try await state.wait { false } }
        if let gate = behavior.gate { try await state.wait { gate.isOpen } }
        if behavior.delay > .zero { try await state.pause(behavior.delay) }

        var headers = HTTPFields()
        for (name, value) in route.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        if let bodiless = Self.bodilessAnswer(route, to: recorded, headers: headers) { return bodiless }
        let (status, payload) = Self.range(of: route, for: recorded, headers: &headers)
        // The body outlives this call: it leaves the concurrency count when it ends.
        leaveOnReturn = false
        return Response(status: status, headers: headers, body: stream(payload, behavior: behavior))
    }

    /// Reads the whole request and records it (counted, and kept while recording is on).
    private func record(_ request: inout Request) async throws -> OriginRecordedRequest {
        let body = try await request.collectBody(upTo: 512 * 1024 * 1024)
        let recorded = OriginRecordedRequest(
            method: request.method.rawValue,
            target: (request.method == .connect ? request.head.authority : request.head.path) ?? "",
            path: request.uri.path,
            query: request.uri.query ?? "",
            headers: request.headers.map { ($0.name.canonicalName, $0.value) },
            body: Data(buffer: body)
        )
        state.total.withLock { $0 += 1 }
        if state.recording.withLock({ $0 }) { state.requests.withLock { $0.append(recorded) } }
        return recorded
    }

    /// `/echo` and `/multipart` describe the request as JSON (no route is asked); `nil` for
    /// other paths.
    private static func describe(_ recorded: OriginRecordedRequest) -> Response? {
        let description: Data
        switch recorded.path {
        case "/echo": description = recorded.json
        case "/multipart": description = MultipartReader.describe(recorded)
        default: return nil
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: description))
        )
    }

    /// A 401 challenge when the route wants basic credentials the request does not carry.
    private static func unauthorized(_ recorded: OriginRecordedRequest, behavior: OriginRoute.Behavior) -> Response? {
        guard let (user, password) = behavior.requiredBasicAuth else { return nil }
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        guard recorded.header("authorization") != expected else { return nil }
        return Response(
            status: .unauthorized,
            headers: [.wwwAuthenticate: "Basic realm=\"origin\""],
            body: .init(byteBuffer: ByteBuffer(string: "credentials required"))
        )
    }

    /// An answer without a body: 304 for a validator matching the route's ETag or
    /// Last-Modified, the route's own 204 or 304, and HEAD.
    private static func bodilessAnswer(
        _ route: OriginRoute,
        to recorded: OriginRecordedRequest,
        headers: HTTPFields
    ) -> Response? {
        var headers = headers
        func routeHeader(_ name: String) -> String? { route.headers.first { $0.0.lowercased() == name }?.1 }
        let ifNoneMatch = recorded.header("if-none-match")
        let notModified =
            route.status == 200
            && ((ifNoneMatch.map { $0 == routeHeader("etag") } ?? false)
                || (ifNoneMatch == nil
                    && recorded.header("if-modified-since").map { $0 == routeHeader("last-modified") } ?? false))
        if notModified {
            if route.behavior.notModifiedDeclaresLength { headers[.contentLength] = String(route.body.count) }
            return Response(status: .notModified, headers: headers)
        }
        let head = recorded.method == "HEAD"
        guard route.status == 304 || route.status == 204 || head && route.behavior.truncateAfter == nil else {
            return nil
        }
        if head { headers[.contentLength] = String(route.body.count) }
        return Response(status: .init(code: route.status), headers: headers)
    }

    /// The status and bytes to send: the route's, or from a byte range ("bytes=N-") when
    /// If-Range is absent or matches the route's ETag or Last-Modified (206).
    private static func range(
        of route: OriginRoute,
        for recorded: OriginRecordedRequest,
        headers: inout HTTPFields
    ) -> (HTTPResponse.Status, Data) {
        let payload = route.body
        let ifRange = recorded.header("if-range")
        guard route.status == 200, let range = recorded.header("range"), range.hasPrefix("bytes="),
            let start = Int(range.dropFirst(6).split(separator: "-").first ?? ""), start < payload.count,
            ifRange == nil || ifRange == headers[.eTag] || ifRange == headers[.lastModified]
        else { return (HTTPResponse.Status(code: route.status), payload) }
        headers[.contentRange] = "bytes \(start)-\(payload.count - 1)/\(payload.count)"
        return (.partialContent, payload.subdata(in: payload.startIndex + start..<payload.endIndex))
    }

    /// The body as the route's behaviour sends it: in chunks at an interval, cut after some
    /// bytes (the connection then closes mid-body), with or without a Content-Length. Leaves
    /// the concurrency count when it ends.
    private func stream(_ payload: Data, behavior: OriginRoute.Behavior) -> ResponseBody {
        let sendCount = min(payload.count, behavior.truncateAfter ?? payload.count)
        let chunkSize = max(1, behavior.chunkSize ?? max(1, payload.count))
        let state = self.state
        return ResponseBody(contentLength: behavior.chunkedEncoding ? nil : payload.count) { writer in
            defer { state.leave() }
            var offset = 0
            var chunksSent = 0
            do {
                while offset < sendCount {
                    if chunksSent > 0, let release = behavior.chunkRelease {
                        let needed = chunksSent
                        try await state.wait { release.releasedCount >= needed }
                    }
                    chunksSent += 1
                    let end = min(sendCount, offset + chunkSize)
                    try await writer.write(
                        ByteBuffer(bytes: payload[payload.startIndex + offset..<payload.startIndex + end])
                    )
                    offset = end
                    if offset < sendCount && behavior.chunkInterval > .zero {
                        try await state.pause(behavior.chunkInterval)
                    }
                }
            } catch {
                state.abandoned.withLock { $0 += 1 }
                throw error
            }
            if sendCount < payload.count { throw OriginError.stopped }  // close mid-body
            try await writer.finish(nil)
        }
    }
}
