import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import WebImageCoders

/// Answers every request from the origin's route table.
struct OriginResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let state: OriginState

    // shape: issue 33 splits this (named in its notes: the load task owning its stages, or a long function doing several jobs)
    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
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
        state.enter()
        var leaveOnReturn = true
        defer { if leaveOnReturn { state.leave() } }

        if recorded.path == "/echo" {
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(data: recorded.json))
            )
        }
        if recorded.path == "/multipart" {
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(data: MultipartReader.describe(recorded)))
            )
        }
        guard let route = state.routes.withLock({ $0[recorded.path] }) else {
            return Response(
                status: .notFound,
                body: .init(byteBuffer: ByteBuffer(string: "no route for \(recorded.path)"))
            )
        }
        let behavior = route.behavior
        if let (user, password) = behavior.requiredBasicAuth {
            let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
            if recorded.header("authorization") != expected {
                return Response(
                    status: .unauthorized,
                    headers: [.wwwAuthenticate: "Basic realm=\"origin\""],
                    body: .init(byteBuffer: ByteBuffer(string: "credentials required"))
                )
            }
        }
        if behavior.stall { try await state.wait { false } }
        if let gate = behavior.gate { try await state.wait { gate.isOpen } }
        if behavior.delay > .zero { try await state.pause(behavior.delay) }

        var headers = HTTPFields()
        for (name, value) in route.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        // Conditional GETs: a validator matching the route's ETag / Last-Modified is "not modified".
        func routeHeader(_ name: String) -> String? {
            route.headers.first { $0.0.lowercased() == name }?.1
        }
        let notModified =
            route.status == 200
            && ((recorded.header("if-none-match").map { $0 == routeHeader("etag") } ?? false)
                || (recorded.header("if-none-match") == nil
                    && recorded.header("if-modified-since").map { $0 == routeHeader("last-modified") } ?? false))
        if notModified {
            if behavior.notModifiedDeclaresLength { headers[.contentLength] = String(route.body.count) }
            return Response(status: .notModified, headers: headers)
        }
        if route.status == 304 || route.status == 204 || recorded.method == "HEAD" && behavior.truncateAfter == nil {
            if recorded.method == "HEAD" { headers[.contentLength] = String(route.body.count) }
            return Response(status: .init(code: route.status), headers: headers)
        }
        var payload = route.body
        var status = HTTPResponse.Status(code: route.status)
        // Byte ranges: "bytes=N-" when If-Range is absent or matches the route's ETag or Last-Modified.
        let ifRange = recorded.header("if-range")
        if route.status == 200, let range = recorded.header("range"), range.hasPrefix("bytes="),
            let start = Int(range.dropFirst(6).split(separator: "-").first ?? ""), start < payload.count,
            ifRange == nil || ifRange == headers[.eTag] || ifRange == headers[.lastModified]
        {
            headers[.contentRange] = "bytes \(start)-\(payload.count - 1)/\(payload.count)"
            payload = payload.subdata(in: payload.startIndex + start..<payload.endIndex)
            status = .partialContent
        }
        let sendCount = min(payload.count, behavior.truncateAfter ?? payload.count)
        let chunkSize = max(1, behavior.chunkSize ?? max(1, payload.count))
        let declaredLength: Int? = behavior.chunkedEncoding ? nil : payload.count
        let finalPayload = payload
        // The body closure outlives this call: it leaves the concurrency count when it ends.
        leaveOnReturn = false
        let state = self.state
        return Response(
            status: status,
            headers: headers,
            body: ResponseBody(contentLength: declaredLength) { writer in
                defer { state.leave() }
                var offset = 0
                do {
                    while offset < sendCount {
                        let end = min(sendCount, offset + chunkSize)
                        try await writer.write(
                            ByteBuffer(
                                bytes: finalPayload[finalPayload.startIndex + offset..<finalPayload.startIndex + end]
                            )
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
                if sendCount < finalPayload.count { throw OriginError.stopped }  // close mid-body
                try await writer.finish(nil)
            }
        )
    }
}
