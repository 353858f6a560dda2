import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Anything that shows an image and loads it from a URL (UIImageView+WebCache and
/// UIView+WebCacheOperation, for any class).
///
/// Conform by implementing ``display(_:)``; then `target.setImage(with: url)` loads through an
/// ``ImageManager``, cancels the target's previous load under the same operation key, and shows
/// the placeholder and the result. One target can host several loads under different keys
/// (a button's states, a highlighted image). The table of running loads holds targets weakly.
///
/// `display(_:)` runs on the manager's callback queue when it has one, else on the thread that
/// produced the image (the caller's for memory hits and placeholders): set the manager's
/// `callbackQueue` to the main queue for UI targets.
public protocol ImageTarget: AnyObject, Sendable {
    /// Shows `image`; `nil` clears the target.
    func display(_ image: DecodedImage?)
}

extension ImageTarget {
    /// Loads `url` into this target.
    ///
    /// - Shows `placeholder` at once, unless `delayPlaceholder` (then only when the load fails).
    /// - Sets each image (previews too, with `progressiveLoad`) unless `avoidAutoSetImage`.
    /// - A `nil` URL shows the placeholder and completes with `invalidURL`.
    /// - A later `setImage` under the same `operationKey` cancels this one: its results are never
    ///   shown, and its `completed` gets `cancelled`.
    @discardableResult
    // shape: SDWebImage's sd_setImage(with:placeholderImage:options:context:progress:completed:) shape
    public func setImage(
        with url: URL?,
        placeholder: DecodedImage? = nil,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        operationKey: String? = nil,
        manager: ImageManager = .shared,
        progress: ImageManager.ProgressHandler? = nil,
        completed: ImageManager.CompletedHandler? = nil
    ) -> ImageLoadOperation? {
        let key = operationKey ?? String(describing: type(of: self))
        let table = TargetLoads.shared
        if let running = table.reuse(self, key, url, options, completed) { return running }
        let followers = LoadFollowers<ImageManager.CompletedHandler>()
        guard
            let (loadID, url) = table.start(
                self,
                key: key,
                url: url,
                placeholder: placeholder,
                options: options,
                display: display
            )
        else {
            completed?(nil, nil, .invalidURL(""), .none, true, nil)
            return nil
        }
        let operation = manager.loadImage(with: url, options: options, context: context, progress: progress) {
            [weak self] image, data, error, cacheType, finished, loadedURL in
            // A load replaced or cancelled since never touches the target; its caller still hears
            // how it ended (usually `cancelled`).
            if let self, table.isCurrent(self, key: key, loadID: loadID) {
                if finished { table.end(self, key: key, loadID: loadID) }
                if let image, !options.contains(.avoidAutoSetImage) {
                    display(image)
                } else if error != nil, options.contains(.delayPlaceholder) {
                    display(placeholder)
                }
            }
            completed?(image, data, error, cacheType, finished, loadedURL)
            guard finished else { return }
            for follower in followers.close() { follower(image, data, error, cacheType, finished, loadedURL) }
        }
        table.attach(operation, followers: followers, to: self, key: key, loadID: loadID)
        return operation
    }

    /// Cancels the load running under `operationKey` (default: the target's type name).
    public func cancelCurrentImageLoad(operationKey: String? = nil) {
        TargetLoads.shared.cancel(self, key: operationKey ?? String(describing: type(of: self)))
    }

    /// The URL of the latest `setImage` under `operationKey` (default: the target's type name).
    public func currentImageURL(operationKey: String? = nil) -> URL? {
        TargetLoads.shared.url(self, key: operationKey ?? String(describing: type(of: self)))
    }

    /// The URL of the latest `setImage` under the default key.
    public var currentImageURL: URL? { currentImageURL() }
}

/// The `completed` handlers of `setImage` calls that joined a running load
/// (``ImageOptions/reuseRunningLoad``); closed when the load ends, after which none can join.
final class LoadFollowers<Handler: Sendable>: Sendable {
    private struct State {
        var handlers: [Handler] = []
        var closed = false
    }

    private let state = Protected(State())

    /// Adds `handler`; `false` once the load has ended.
    func join(_ handler: Handler?) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            if let handler { state.handlers.append(handler) }
            return true
        }
    }

    /// Ends joining; returns the handlers to call with the load's result.
    func close() -> [Handler] {
        state.withLock { state in
            state.closed = true
            defer { state.handlers = [] }
            return state.handlers
        }
    }
}

/// Every target's running loads, by operation key, holding targets weakly.
final class TargetLoads: Sendable {
    static let shared = TargetLoads()

    private struct Load {
        var id: UInt64
        var url: URL?
        var operation: ImageLoadOperation?
        var running: Bool
        /// A `LoadFollowers` of the binding that started the load.
        var followers: (any AnyObject & Sendable)? = nil
    }

    private struct Entry {
        weak var target: (any AnyObject & Sendable)?
        var loads: [String: Load] = [:]
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var nextID: UInt64 = 1
        var sweepAt = 64
    }

    private let state = Protected(State())

    /// Cancels the key's previous load and records a new one; returns its id.
    func begin(_ target: any AnyObject & Sendable, key: String, url: URL?) -> UInt64 {
        let (id, previous) = state.withLock { state -> (UInt64, ImageLoadOperation?) in
            let id = state.nextID
            state.nextID += 1
            let identifier = ObjectIdentifier(target)
            var entry = state.entries[identifier].flatMap { $0.target === target ? $0 : nil } ?? Entry(target: target)
            let previous = entry.loads[key]?.operation
            entry.loads[key] = Load(id: id, url: url, operation: nil, running: true)
            state.entries[identifier] = entry
            if state.entries.count > state.sweepAt {
                state.entries = state.entries.filter { $0.value.target != nil }
                state.sweepAt = max(64, state.entries.count * 2)
            }
            return (id, previous)
        }
        previous?.cancel()
        return id
    }

    /// The first steps of every `setImage`: records the load (cancelling the key's previous
    /// one) and shows `placeholder` unless `delayPlaceholder`. With no URL the load ends here:
    /// the placeholder shows (delayed or not) and the result is `nil`; otherwise it is the new
    /// load's id and the URL to load. `display` runs on the caller's thread before this returns.
    func start(
        _ target: any AnyObject & Sendable,
        key: String,
        url: URL?,
        placeholder: DecodedImage?,
        options: ImageOptions,
        display: (DecodedImage?) -> Void
    ) -> (loadID: UInt64, url: URL)? {
        let loadID = begin(target, key: key, url: url)
        if !options.contains(.delayPlaceholder) { display(placeholder) }
        guard let url else {
            end(target, key: key, loadID: loadID)
            if options.contains(.delayPlaceholder) { display(placeholder) }
            return nil
        }
        return (loadID, url)
    }

    /// Records the running load's operation, and the handlers of calls that may join it
    /// (``ImageOptions/reuseRunningLoad``), unless it has already ended.
    func attach(
        _ operation: ImageLoadOperation,
        followers: (any AnyObject & Sendable)? = nil,
        to target: any AnyObject & Sendable,
        key: String,
        loadID: UInt64
    ) {
        state.withLock { state in
            let identifier = ObjectIdentifier(target)
            guard state.entries[identifier]?.loads[key]?.id == loadID,
                state.entries[identifier]?.loads[key]?.running == true
            else { return }
            state.entries[identifier]?.loads[key]?.operation = operation
            state.entries[identifier]?.loads[key]?.followers = followers
        }
    }

    /// With ``ImageOptions/reuseRunningLoad``, the operation the key is running for `url`, with
    /// `completed` added to its followers; `nil` without the option, or when the key runs no
    /// load of `url` (or it has just ended).
    func reuse<Handler: Sendable>(
        _ target: any AnyObject & Sendable,
        _ key: String,
        _ url: URL?,
        _ options: ImageOptions,
        _ completed: Handler?
    ) -> ImageLoadOperation? {
        guard options.contains(.reuseRunningLoad), let url else { return nil }
        return state.withLock { state in
            let entry = state.entries[ObjectIdentifier(target)]
            guard entry?.target === target, let load = entry?.loads[key], load.running, load.url == url,
                let operation = load.operation, (load.followers as? LoadFollowers<Handler>)?.join(completed) == true
            else { return nil }
            return operation
        }
    }

    func isCurrent(_ target: any AnyObject & Sendable, key: String, loadID: UInt64) -> Bool {
        state.withLock { $0.entries[ObjectIdentifier(target)]?.loads[key]?.id == loadID }
    }

    func end(_ target: any AnyObject & Sendable, key: String, loadID: UInt64) {
        state.withLock { state in
            let identifier = ObjectIdentifier(target)
            guard state.entries[identifier]?.loads[key]?.id == loadID else { return }
            state.entries[identifier]?.loads[key]?.operation = nil
            state.entries[identifier]?.loads[key]?.running = false
        }
    }

    func cancel(_ target: any AnyObject & Sendable, key: String) {
        let operation = state.withLock { state -> ImageLoadOperation? in
            let identifier = ObjectIdentifier(target)
            guard state.entries[identifier]?.target === target else { return nil }
            defer {
                state.entries[identifier]?.loads[key]?.operation = nil
                state.entries[identifier]?.loads[key]?.running = false
                // A cancelled load's late results are not shown.
                state.entries[identifier]?.loads[key]?.id = 0
            }
            return state.entries[identifier]?.loads[key]?.operation
        }
        operation?.cancel()
    }

    func url(_ target: any AnyObject & Sendable, key: String) -> URL? {
        state.withLock { state in
            let entry = state.entries[ObjectIdentifier(target)]
            return entry?.target === target ? entry?.loads[key]?.url : nil
        }
    }
}
