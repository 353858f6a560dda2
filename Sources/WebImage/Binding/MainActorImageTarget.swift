import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// ``ImageTarget`` for main-actor types (views, view models): ``display(_:)`` and the completion
/// run on the main actor, so a `@MainActor` class conforms without `nonisolated` hops.
///
/// ```swift
/// @MainActor final class AvatarView: MainActorImageTarget {
///     var shown: DecodedImage?
///     func display(_ image: DecodedImage?) { shown = image }
/// }
/// avatarView.setImage(with: url, placeholder: placeholder)
/// ```
///
/// Loads share ``ImageTarget``'s bookkeeping: a new `setImage` under the same operation key
/// cancels the previous load, and a replaced or cancelled load never reaches ``display(_:)``.
/// Results hop to the main actor in the order the manager produced them (placeholder, previews,
/// image); a memory hit is shown before `setImage` returns.
@MainActor
public protocol MainActorImageTarget: AnyObject, Sendable {
    /// Shows `image`; `nil` clears the target.
    // shape: a requirement without a body (the measure runs on into the extension below)
    func display(_ image: DecodedImage?)
}

extension MainActorImageTarget {
    /// Loads `url` into this target; see ``ImageTarget/setImage(with:placeholder:options:context:operationKey:manager:progress:completed:)-(URL?,_,_,_,_,_,_,_)``
    /// for the placeholder and option rules. `completed` runs once on the main actor with the
    /// outcome (`cancelled` when a later load or ``cancelCurrentImageLoad(operationKey:)``
    /// replaced this one).
    @discardableResult
    // shape: SDWebImage's sd_setImage(with:placeholderImage:options:context:progress:completed:) shape
    public func setImage(
        with url: URL?,
        placeholder: DecodedImage? = nil,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        operationKey: String? = nil,
        manager: ImageManager = .shared,
        completed: (@MainActor (Result<ImageLoadResult, WebImageError>) -> Void)? = nil
    ) -> ImageLoadOperation? {
        let key = operationKey ?? String(describing: type(of: self))
        let table = TargetLoads.shared
        let followers = LoadFollowers<MainActorCompletion>()
        if let running = table.reuse(self, key, url, options, completed as MainActorCompletion?) { return running }
        guard
            let (loadID, url) = table.start(
                self,
                key: key,
                url: url,
                placeholder: placeholder,
                options: options,
                display: { display($0) }
            )
        else {
            completed?(.failure(.invalidURL("")))
            return nil
        }
        let apply: @MainActor (DecodedImage?, Result<ImageLoadResult, WebImageError>?) -> Void = {
            [weak self] image, outcome in
            if let self, table.isCurrent(self, key: key, loadID: loadID) {
                if outcome != nil { table.end(self, key: key, loadID: loadID) }
                if let image, !options.contains(.avoidAutoSetImage) {
                    self.display(image)
                } else if case .failure = outcome, options.contains(.delayPlaceholder) {
                    self.display(placeholder)
                }
            }
            guard let outcome else { return }
            completed?(outcome)
            for follower in followers.close() { follower(outcome) }
        }
        // What arrives while the manager's call runs (a memory hit, on this thread) is shown as
        // soon as it returns; later events go through the main queue, in arrival order.
        let early = Protected<[Arrival]?>([])
        let show: @Sendable (DecodedImage?, Result<ImageLoadResult, WebImageError>?) -> Void = { image, outcome in
            let held = early.withLock { arrivals -> Bool in
                guard arrivals != nil else { return false }
                arrivals?.append(Arrival(image: image, outcome: outcome))
                return true
            }
            if !held { DispatchQueue.main.async { MainActor.assumeIsolated { apply(image, outcome) } } }
        }
        let operation = manager.loadImage(
            with: url,
            options: options,
            context: context,
            preview: { image in show(image, nil) },
            completion: { outcome in show(try? outcome.get().image, outcome) }
        )
        table.attach(operation, followers: followers, to: self, key: key, loadID: loadID)
        for arrival in early.withLock({ arrivals in
            defer { arrivals = nil }
            return arrivals ?? []
        }) {
            apply(arrival.image, arrival.outcome)
        }
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
}

/// What a main-actor target's `setImage` completes with.
typealias MainActorCompletion = @MainActor @Sendable (Result<ImageLoadResult, WebImageError>) -> Void

/// An event that reached a main-actor target while its `setImage` call was still running.
private struct Arrival: Sendable {
    var image: DecodedImage?
    var outcome: Result<ImageLoadResult, WebImageError>?
}
