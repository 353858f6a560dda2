import Foundation
@_spi(WebImageInternals) import WebImageCoders

extension HTTPSession {
    // MARK: async/await

    /// Sends `method` to `path` (resolved against ``baseURL``) and serializes the response.
    /// Cancelling the Swift task cancels the request.
    public func request<Serializer: ResponseSerializer>(
        _ method: HTTPRequest.Method,
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        let request = try requestSerializer.request(
            method: method,
            url: url(for: path),
            parameters: parameters,
            headers: headers
        )
        let (data, response) = try await data(for: request)
        return (response, try serializer.value(for: response, data: data))
    }

    public func get<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        try await request(.get, path, parameters: parameters, headers: headers, serializer: serializer)
    }

    /// HEAD: only the response head.
    public func head(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:]
    )
        async throws(HTTPSessionError) -> HTTPSession.Response
    {
        try await request(.head, path, parameters: parameters, headers: headers, serializer: .data).0
    }

    public func post<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        try await request(
            .post,
            path,
            parameters: parameters,
            headers: headers,
            requestSerializer: requestSerializer,
            serializer: serializer
        )
    }

    public func put<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        try await request(
            .put,
            path,
            parameters: parameters,
            headers: headers,
            requestSerializer: requestSerializer,
            serializer: serializer
        )
    }

    public func patch<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        try await request(
            .patch,
            path,
            parameters: parameters,
            headers: headers,
            requestSerializer: requestSerializer,
            serializer: serializer
        )
    }

    public func delete<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        serializer: Serializer
    ) async throws(HTTPSessionError) -> (HTTPSession.Response, Serializer.Value) {
        try await request(.delete, path, parameters: parameters, headers: headers, serializer: serializer)
    }

    // MARK: Completion handlers (AFHTTPSessionManager)

    /// Starts `method` to `path` and calls `success` with the serialized value or `failure` with
    /// the error (once). Returns the running task, or `nil` when the request cannot be built
    /// (`failure` has then been called).
    @discardableResult
    // shape: AFNetworking's convenience-method shape, one parameter per part of the request
    public func request<Serializer: ResponseSerializer>(
        _ method: HTTPRequest.Method,
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer,
        progress: (@Sendable (Progress) -> Void)? = nil,
        success: @escaping @Sendable (HTTPSessionTask, Serializer.Value) -> Void,
        failure: @escaping @Sendable (HTTPSessionTask?, HTTPSessionError) -> Void
    ) -> HTTPSessionTask? {
        let request: HTTPSession.Request
        do {
            request = try requestSerializer.request(
                method: method,
                url: url(for: path),
                parameters: parameters,
                headers: headers
            )
        } catch {
            failure(nil, error)
            return nil
        }
        let box = Protected<HTTPSessionTask?>(nil)
        let delegate = progress.map { ProgressForwarder(onProgress: $0) }
        let task = dataTask(with: request, delegate: delegate) { data, response, error in
            guard let task = box.withLock({ $0 }) else { return }
            if let error { return failure(task, error) }
            guard let response else { return failure(task, .cancelled(request.url)) }
            switch Result(catching: { () throws(HTTPSessionError) in try serializer.value(for: response, data: data) })
            {
            case .success(let value): success(task, value)
            case .failure(let error): failure(task, error)
            }
        }
        box.withLock { $0 = task }
        task.resume()
        return task
    }

    @discardableResult
    public func get<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        serializer: Serializer,
        progress: (@Sendable (Progress) -> Void)? = nil,
        success: @escaping @Sendable (HTTPSessionTask, Serializer.Value) -> Void,
        failure: @escaping @Sendable (HTTPSessionTask?, HTTPSessionError) -> Void
    ) -> HTTPSessionTask? {
        request(
            .get,
            path,
            parameters: parameters,
            headers: headers,
            serializer: serializer,
            progress: progress,
            success: success,
            failure: failure
        )
    }

    @discardableResult
    public func post<Serializer: ResponseSerializer>(
        _ path: String,
        parameters: HTTPParameters? = nil,
        headers: HTTPFields = [:],
        requestSerializer: some RequestSerializer = .urlEncoded,
        serializer: Serializer,
        progress: (@Sendable (Progress) -> Void)? = nil,
        success: @escaping @Sendable (HTTPSessionTask, Serializer.Value) -> Void,
        failure: @escaping @Sendable (HTTPSessionTask?, HTTPSessionError) -> Void
    ) -> HTTPSessionTask? {
        request(
            .post,
            path,
            parameters: parameters,
            headers: headers,
            requestSerializer: requestSerializer,
            serializer: serializer,
            progress: progress,
            success: success,
            failure: failure
        )
    }
}

/// Reports download progress to a closure after each chunk.
final class ProgressForwarder: HTTPSessionTaskDelegate {
    let onProgress: @Sendable (Progress) -> Void

    init(onProgress: @escaping @Sendable (Progress) -> Void) { self.onProgress = onProgress }

    func task(_ task: HTTPSessionTask, didReceive data: Data) { onProgress(task.progress) }
}
