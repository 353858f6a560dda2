import Foundation
import Testing
import WebImageCoders

@testable import WebImage

@Suite("Download keys")
struct DownloadKeyTests {
    static let url = URL(string: "https://example.com/a.png")!

    struct Load: Sendable, CustomStringConvertible {
        var name: String
        var options: ImageOptions = []
        var context = ImageContext()
        var description: String { name }

        func key(unshareable: UInt64 = 1) -> ImageDownloadKey {
            ImageDownloadKey(url: DownloadKeyTests.url, options: options, context: context, unshareable: unshareable)
        }
    }

    static func context(_ change: (inout ImageContext) -> Void) -> ImageContext {
        var context = ImageContext()
        change(&context)
        return context
    }

    /// Each load against a plain load of the URL, and whether they may share one request.
    static let table: [(Load, shares: Bool)] = [
        (Load(name: "plain"), true),
        (Load(name: "priority and caching flags", options: [.highPriority, .retryFailed, .cacheMemoryOnly]), true),
        (Load(name: "refreshCached without a cached copy", options: .refreshCached), true),
        // Decoding is a stage after the download: these share the request, not the decode.
        (Load(name: "thumbnail", context: context { $0.thumbnailPixelSize = PixelSize(width: 64, height: 64) }), true),
        (Load(name: "scale down", options: .scaleDownLargeImages), true),
        (Load(name: "first frame", options: .decodeFirstFrameOnly), true),
        (Load(name: "undecoded", options: .avoidDecodeImage), true),
        (Load(name: "colour kept", context: context { $0.colorPolicy = .keep }), true),
        (Load(name: "invalid certificates allowed", options: .allowInvalidSSLCertificates), false),
        (Load(name: "cookies", options: .handleCookies), false),
        (
            Load(
                name: "conditional (ETag)",
                options: .refreshCached,
                context: context { $0.cachedResponse = .init(etag: "\"v1\"") }
            ),
            false
        ),
        (
            Load(
                name: "conditional (Last-Modified)",
                options: .refreshCached,
                context: context { $0.cachedResponse = .init(lastModified: "Mon, 23 Nov 2026 10:00:00 GMT") }
            ),
            false
        ),
        (
            Load(
                name: "compared with cached bytes",
                options: .ignoreCachedResponse,
                context: context { $0.cachedResponse = .init(data: Data([1, 2, 3])) }
            ),
            false
        ),
        (Load(name: "request modifier", context: context { $0.requestModifier = { $0 } }), false),
    ]

    @Test("Which loads share a request with a plain load", arguments: table)
    func sharing(load: Load, shares: Bool) {
        #expect((load.key() == Load(name: "plain").key()) == shares)
    }

    /// Loads that share a request with a plain load, and whether they share its decode too.
    static let decodeTable: [(Load, sharesDecode: Bool)] = [
        (Load(name: "plain"), true),
        (Load(name: "priority and caching flags", options: [.highPriority, .retryFailed, .cacheMemoryOnly]), true),
        (Load(name: "thumbnail", context: context { $0.thumbnailPixelSize = PixelSize(width: 64, height: 64) }), false),
        (Load(name: "scale down", options: .scaleDownLargeImages), false),
        (Load(name: "first frame", options: .decodeFirstFrameOnly), false),
        (Load(name: "undecoded", options: .avoidDecodeImage), false),
        (Load(name: "colour kept", context: context { $0.colorPolicy = .keep }), false),
        (Load(name: "another time limit", context: context { $0.maxDecodeDuration = nil }), false),
        (Load(name: "other coders", context: context { $0.coders = ImageCodersManager() }), false),
    ]

    @Test("Which loads share a decode with a plain load", arguments: decodeTable)
    func decodeSharing(load: Load, sharesDecode: Bool) {
        let plain = ImageDecodeRequest(options: [], context: ImageContext()).key
        #expect((ImageDecodeRequest(options: load.options, context: load.context).key == plain) == sharesDecode)
    }

    @Test("Equal settings share; other validators, bytes or a second request modifier do not")
    func sameSettings() {
        for (load, _) in Self.table where load.context.requestModifier == nil {
            #expect(load.key(unshareable: 1) == load.key(unshareable: 2), "\(load)")
        }
        let modified = Load(name: "modifier", context: Self.context { $0.requestModifier = { $0 } })
        #expect(modified.key(unshareable: 1) != modified.key(unshareable: 2))
        let v1 = Load(
            name: "v1",
            options: .refreshCached,
            context: Self.context { $0.cachedResponse = .init(etag: "\"v1\"") }
        )
        let v2 = Load(
            name: "v2",
            options: .refreshCached,
            context: Self.context { $0.cachedResponse = .init(etag: "\"v2\"") }
        )
        #expect(v1.key() != v2.key())
        let bytes = { (data: Data) in
            Load(
                name: "bytes",
                options: .ignoreCachedResponse,
                context: Self.context { $0.cachedResponse = .init(data: data) }
            )
        }
        #expect(bytes(Data([1])).key() != bytes(Data([2])).key())
    }
}
