import Foundation
import WebImage
import WebImageHTTP

// Every ```swift block of README.md, compiled: ReadmeSnippetsTests checks that each block's
// lines appear here in order, so the README cannot show code that does not build.

/// README: Quick start — async/await.
func readmeAsync(url: URL) async throws {
    let result = try await ImageManager.shared.loadImage(with: url)
    print(result.image?.width ?? 0, result.cacheType)  // .none (network), .memory or .disk
}

/// README: Quick start — completion handlers.
func readmeCompletion(url: URL) {
    let options: ImageOptions = [.retryFailed, .progressiveLoad]
    let operation = ImageManager.shared.loadImage(with: url, options: options) { image, _, error, _, finished, _ in
        // finished == false: a progressive preview; error?.code says what went wrong.
        print(image?.width ?? 0, finished, error?.code.rawValue ?? "ok")
    }
    operation.cancel()  // stops only this caller's interest
}

/// README: Quick start — a request and a task.
func readmeTask(url: URL) async throws {
    let request = ImageRequest(url: url, priority: .high, transformers: [.resize(width: 200), .roundCorners(16)])
    let task = ImageManager.shared.imageTask(with: request)
    task.priority = .veryHigh  // moves the download while it waits for a slot
    for await progress in task.progress { print(progress.fraction ?? 0) }
    let image = try await task.image  // throws WebImageError, typed
    print(image.width)
}

/// README: Quick start — a transformer.
func readmeTransformer(url: URL) async throws {
    let context = ImageContext(
        transformer: PipelineTransformer([
            ResizeTransformer(size: PixelSize(width: 200, height: 200), mode: .fill),
            RoundCornerTransformer(radius: 16),
        ])
    )
    let avatar = try await ImageManager.shared.loadImage(with: url, context: context)
    print(avatar.image?.width ?? 0)  // 200, cached under its own key
}

/// README: Quick start — prefetch.
func readmePrefetch(urls: [URL]) async {
    let counts = await ImagePrefetcher.shared.prefetch(urls)
    print(counts.finished, counts.failed)
}

/// README: Quick start — an animation with frames decoded on demand, played from a bounded buffer.
func readmeAnimation(url: URL, tick: TimeInterval, show: (Bitmap) -> Void) async throws {
    let result = try await ImageManager.shared.loadImage(with: url, options: .decodeFramesOnDemand)
    if let animation = result.image?.animation {
        let player = AnimatedImagePlayer(animation: animation, maxBufferSize: 16 << 20)
        // on each display tick:
        if let frame = player.advance(by: tick) { show(frame.bitmap) }
    }
}

/// README: Quick start — bind to a target.
final class Thumbnail: ImageTarget {
    func display(_ image: DecodedImage?) {
        // draw `image` (nil clears)
    }
}

func readmeTarget(thumbnail: Thumbnail, url: URL, placeholder: DecodedImage) {
    thumbnail.setImage(with: url, placeholder: placeholder)  // cancels the previous load
}

/// README: Configuration.
func readmeConfiguration(pinnedCertificate: URL) throws -> ImageManager {
    var cacheConfiguration = ImageCache.Configuration()
    cacheConfiguration.memoryLimits = MemoryCache.Limits(costLimit: 256 << 20)
    cacheConfiguration.disk.maxAge = .seconds(3 * 24 * 3600)
    cacheConfiguration.disk.maxSize = 512 << 20
    let cache = ImageCache(namespace: "avatars", configuration: cacheConfiguration)

    var sessionConfiguration = HTTPSession.Configuration()
    sessionConfiguration.securityPolicy = .pinning(
        certificates: [try SecurityPolicy.certificate(contentsOf: pinnedCertificate)]
    )
    var downloaderConfiguration = ImageDownloader.Configuration()
    downloaderConfiguration.maxConcurrentDownloads = 4
    downloaderConfiguration.downloadTimeout = .seconds(30)
    downloaderConfiguration.headers[.authorization] = "Bearer abc123"
    let downloader = ImageDownloader(
        configuration: downloaderConfiguration,
        session: HTTPSession(configuration: sessionConfiguration)
    )
    return ImageManager(cache: cache, loader: downloader)
}
