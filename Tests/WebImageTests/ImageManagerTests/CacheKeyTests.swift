import Foundation
import Testing
import WebImageCoders

@testable import WebImage

@Suite("Cache keys")
struct CacheKeyTests {
    static let thumbnail = PixelSize(width: 64, height: 64)

    /// Keys that the old `-thumbnail(WxH)` / `-transformerKey` suffixes made equal in pairs, plus
    /// sources and transformer keys holding the versioned form's own separators.
    static let keys: [ImageCacheKey] = [
        ImageCacheKey(source: "https://e.com/a.png"),
        ImageCacheKey(source: "https://e.com/a.png", thumbnail: thumbnail),
        ImageCacheKey(source: "https://e.com/a.png-thumbnail(64x64)"),
        ImageCacheKey(source: "https://e.com/a.png", transformerKeys: ["round(8)"]),
        ImageCacheKey(source: "https://e.com/a.png-round(8)"),
        ImageCacheKey(source: "https://e.com/a.png", transformerKeys: ["a", "b"]),
        ImageCacheKey(source: "https://e.com/a.png", transformerKeys: ["a-b"]),
        ImageCacheKey(source: "https://e.com/a.png", transformerKeys: ["a|transform=1|b"]),
        ImageCacheKey(source: "https://e.com/a.png", thumbnail: thumbnail, transformerKeys: ["round(8)"]),
        ImageCacheKey(source: "https://e.com/a.png", thumbnail: PixelSize(width: 6, height: 464)),
        ImageCacheKey(source: "https://e.com/a.png", colorPolicy: .keep),
        ImageCacheKey(source: "https://e.com/a.png", colorPolicy: .ignore),
        ImageCacheKey(source: "https://e.com/a.png", thumbnail: thumbnail, colorPolicy: .keep, transformerKeys: ["a"]),
        ImageCacheKey(source: "https://e.com/a.png|color=keep"),
        ImageCacheKey(source: "19|https://e.com/a.png", thumbnail: thumbnail),
        ImageCacheKey(source: "x|thumbnail=64x64", transformerKeys: ["k"]),
        ImageCacheKey(source: "x", thumbnail: thumbnail, transformerKeys: ["k"]),
        ImageCacheKey(source: "\u{1}webimage-key:1|3|abc"),
        ImageCacheKey(source: "abc"),
        ImageCacheKey(source: "bild-ü.png", transformerKeys: ["ß→ss", "🙂"]),
        ImageCacheKey(source: ""),
        ImageCacheKey(source: "", thumbnail: thumbnail),
    ]

    @Test("Every key round-trips through its raw value, and different keys never share one")
    func injective() {
        var seen: [String: ImageCacheKey] = [:]
        for key in Self.keys {
            let raw = key.rawValue
            #expect(ImageCacheKey(rawValue: raw) == key, "\(key)")
            if let other = seen[raw] { Issue.record("\(key) and \(other) both serialize as \(raw.debugDescription)") }
            seen[raw] = key
        }
        #expect(seen.count == Self.keys.count)
    }

    @Test("An original's raw value is its source; derived keys are versioned", arguments: keys)
    func rawForm(key: ImageCacheKey) {
        if key.isDerived || key.source.hasPrefix("\u{1}") {
            #expect(key.rawValue.hasPrefix("\u{1}webimage-key:1|"))
            if key.source.hasPrefix("\u{1}") {
                #expect(key.original.rawValue != key.source, "a source that looks versioned is escaped")
            } else {
                #expect(key.original.rawValue == key.source)
            }
        } else {
            #expect(key.rawValue == key.source)
        }
    }

    static let unreadable: [String] = [
        "\u{1}webimage-key:2|1|a",  // a later version
        "\u{1}webimage-key:1|",  // no source
        "\u{1}webimage-key:1|9|abc",  // shorter than its length
        "\u{1}webimage-key:1|1|a|thumbnail=64",  // no height
        "\u{1}webimage-key:1|1|a|thumbnail=64x64|extra",  // trailing bytes
        "\u{1}webimage-key:1|1|a|transform=5|ab",  // a short transformer key
        "\u{1}webimage-key:1|1|\u{00FC}",  // the length cuts a character in half
    ]

    @Test("Versioned raw values this version cannot read are refused", arguments: unreadable)
    func refused(raw: String) {
        #expect(ImageCacheKey(rawValue: raw) == nil)
    }

    @Test("The manager's keys: filter, thumbnail, transformers (a pipeline gives one each)")
    func managerKeys() {
        let manager = ImageManager(
            cache: ImageCache(directory: URL(fileURLWithPath: "/nonexistent-cache")),
            loader: DownloaderFixtures.downloader()
        )
        let url = URL(string: "https://e.com/a.png?token=1")!
        #expect(manager.cacheKey(for: url) == url.absoluteString)
        var context = ImageContext()
        context.thumbnailPixelSize = Self.thumbnail
        context.transformer = PipelineTransformer([
            RoundCornerTransformer(radius: 8), PipelineTransformer([FlipTransformer(horizontal: true)]),
        ])
        let typed = manager.imageCacheKey(for: url, context: context)
        #expect(typed.thumbnail == Self.thumbnail)
        #expect(typed.transformerKeys.count == 2)
        #expect(manager.cacheKey(for: url, context: context) == typed.rawValue)
        var filtering = ImageManager.Configuration()
        filtering.cacheKeyFilter = { $0.path }
        let filtered = ImageManager(cache: manager.imageCache, loader: manager.imageLoader, configuration: filtering)
        #expect(filtered.cacheKey(for: url) == "/a.png")
        #expect(filtered.imageCacheKey(for: url, context: context).original.rawValue == "/a.png")
        // The old suffix form of the same thumbnail names another original now.
        let suffixed = URL(string: "https://e.com/a.png-thumbnail(64x64)")!
        var thumbnailOnly = ImageContext()
        thumbnailOnly.thumbnailPixelSize = Self.thumbnail
        #expect(
            manager.cacheKey(for: suffixed)
                != manager.cacheKey(for: URL(string: "https://e.com/a.png")!, context: thumbnailOnly)
        )
    }
}
