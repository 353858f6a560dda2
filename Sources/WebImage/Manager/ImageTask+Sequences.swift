import WebImageCoders

extension ImageTask {
    /// The load's steps from now on, ending after ``Event/finished(_:)`` or by throwing the
    /// load's ``WebImageError``. Ending the iteration early, or cancelling the Swift task reading
    /// it, cancels the load.
    public var events: Events { Events(task: self, cancelsTask: true) }

    /// Bytes received, from now on; ends with the load (whatever its outcome).
    public var progress: AsyncStream<Progress> {
        stream { event in
            if case .progress(let progress) = event { return progress }
            return nil
        }
    }

    /// Progressive previews (``ImageOptions/progressiveLoad``), from now on; ends with the load.
    public var previews: AsyncStream<DecodedImage> {
        stream { event in
            if case .preview(let image) = event { return image }
            return nil
        }
    }

    private func stream<Element: Sendable>(_ pick: @escaping @Sendable (Event) -> Element?) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(64))
        let id = listen { delivery in
            switch delivery {
            case .event(let event): if let element = pick(event) { continuation.yield(element) }
            case .end: continuation.finish()
            }
        }
        continuation.onTermination = { [weak self] _ in self?.stopListening(id) }
        return stream
    }

    /// An `AsyncSequence` of a task's ``Event``s whose failure is a typed ``WebImageError``.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = Event
        public typealias Failure = WebImageError

        let stream: AsyncStream<Delivery>

        init(task: ImageTask, cancelsTask: Bool) {
            let (stream, continuation) = AsyncStream.makeStream(of: Delivery.self)
            let id = task.listen { delivery in
                continuation.yield(delivery)
                if case .end = delivery { continuation.finish() }
            }
            continuation.onTermination = { [weak task] termination in
                task?.stopListening(id)
                if cancelsTask, case .cancelled = termination { task?.cancel() }
            }
            self.stream = stream
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

        /// Yields the events, then ``Event/finished(_:)`` or throws.
        public struct AsyncIterator: AsyncIteratorProtocol {
            public typealias Element = Event
            public typealias Failure = WebImageError

            var base: AsyncStream<Delivery>.AsyncIterator
            var ended = false

            public mutating func next(isolation actor: isolated (any Actor)?) async throws(WebImageError) -> Event? {
                guard !ended, let delivery = await base.next(isolation: actor) else { return nil }
                return try step(delivery)
            }

            public mutating func next() async throws(WebImageError) -> Event? {
                guard !ended, let delivery = await base.next() else { return nil }
                return try step(delivery)
            }

            private mutating func step(_ delivery: Delivery) throws(WebImageError) -> Event? {
                switch delivery {
                case .event(let event): return event
                case .end(.success(let result)):
                    ended = true
                    return .finished(result)
                case .end(.failure(let error)):
                    ended = true
                    throw error
                }
            }
        }
    }
}
