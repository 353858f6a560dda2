import Foundation
import WebImage
import WebImageHTTP

// Every ```swift block of MIGRATING.md, compiled: ReadmeSnippetsTests checks that each block's
// lines appear here in order, so the guide cannot show code that does not build.

/// A view of some UI toolkit, shown as an ImageTarget.
final class AvatarView: ImageTarget {
    func display(_ image: DecodedImage?) {}
}

/// MIGRATING: 1. Load into a view with a placeholder.
func migratingTarget(avatarView: AvatarView, url: URL, placeholder: DecodedImage) {
    avatarView.setImage(with: url, placeholder: placeholder)
}

/// MIGRATING: 2. Prefetch.
func migratingPrefetch(urls: [URL]) async {
    let counts = await ImagePrefetcher.shared.prefetch(urls)
    print("\(counts.finished) cached, \(counts.failed) failed")
}

/// MIGRATING: 3. Resize and round the corners.
func migratingTransform(url: URL) async throws {
    let request = ImageRequest(
        url: url,
        transformers: [.resize(width: 200, height: 200, mode: .fill), .roundCorners(16)]
    )
    let avatar = try await ImageManager.shared.loadImage(with: request)
    print(avatar.image?.width ?? 0)
}

/// MIGRATING: 4. A cache of your own.
func migratingCache() -> ImageManager {
    var configuration = ImageCache.Configuration()
    configuration.disk.maxAge = .seconds(3 * 24 * 3600)
    configuration.disk.maxSize = 512 << 20
    let cache = ImageCache(namespace: "avatars", configuration: configuration)
    return ImageManager(cache: cache, loader: .shared)
}

/// MIGRATING: 5. Custom headers.
func migratingHeaders(url: URL) async throws {
    ImageDownloader.shared.setValue("Bearer abc123", forHTTPHeaderField: "Authorization")
    var context = ImageContext()
    context.requestModifier = { request in
        var request = request
        request.headers[HTTPField.Name("X-Client")!] = "gallery"
        return request
    }
    _ = try await ImageManager.shared.loadImage(with: ImageRequest(url: url, context: context))
}

/// MIGRATING: 6. Progressive previews.
func migratingProgressive(url: URL) async throws {
    let task = ImageManager.shared.imageTask(with: ImageRequest(url: url, options: .progressiveLoad))
    for await preview in task.previews {
        print("preview \(preview.width)×\(preview.height)")
    }
    let image = try await task.image
    print(image.width)
}

/// MIGRATING: 7. Cancel on reuse.
final class AvatarCell {
    let avatarView = AvatarView()
    var task: ImageTask?

    func prepareForReuse() {
        avatarView.cancelCurrentImageLoad()  // setImage(with:) also cancels the previous load
        task?.cancel()
    }
}

/// MIGRATING: 8. Clear the caches.
func migratingClear() async {
    ImageCache.shared.clearMemory()
    await ImageCache.shared.clear(cacheType: .disk)
}

/// MIGRATING: 9. Your own cache key.
func migratingKey() -> ImageManager {
    var configuration = ImageManager.Configuration()
    configuration.cacheKeyFilter = { url in url.path }  // one entry whatever the query string
    return ImageManager(cache: ImageCache.shared, loader: .shared, configuration: configuration)
}

/// MIGRATING: 10. Revalidate with the server.
func migratingRevalidate(url: URL) async throws {
    let task = ImageManager.shared.imageTask(with: ImageRequest(url: url, cachePolicy: .revalidate))
    for try await event in task.events {
        switch event {
        case .cached(let cached): print("show the cached image first", cached.cacheType)
        case .finished(let result): print("current image", result.image?.width ?? 0)
        case .progress, .preview, .info: break
        }
    }
}

/// MIGRATING: typed errors.
func migratingErrors(url: URL) async {
    do {
        _ = try await ImageManager.shared.loadImage(with: ImageRequest(url: url))
    } catch {
        // `error` is a WebImageError: no cast.
        print(error.code, error.statusCode ?? 0, error.coderError?.code ?? "")
    }
}

/// MIGRATING: completion handlers with Result.
func migratingResult(url: URL) {
    ImageManager.shared.loadImage(with: url) { result in
        switch result {
        case .success(let loaded): print(loaded.image?.width ?? 0, loaded.cacheType)
        case .failure(let error): print(error.message)
        }
    }
}
