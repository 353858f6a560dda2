import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// Decodes kept for the next size of the same source: found only when the decode would be the
/// same, bounded by bytes, and never changing a result.
@Suite("webimage serve: decoded sources kept for their other sizes", .timeLimit(.minutes(3)))
struct DecodedSourceCacheTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    static func lookups(_ fixture: Fixture) async throws -> (hits: Int, misses: Int) {
        let text = try await ProxyLoadTests.metrics(fixture)
        func count(_ result: String) -> Int? {
            let prefix = #"webimage_decoded_source_lookups_total{result="\#(result)"} "#
            return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
                Int($0.dropFirst(prefix.count))
            }
        }
        return (try #require(count("hit"), "\(text)"), try #require(count("miss"), "\(text)"))
    }

    @Test(
        "Sizes that decode at the same DCT scale share one decode; a larger scale or another frame rule decodes again"
    )
    func sharesDecodesOfOneScale() async throws {
        let fixture = try await ImageProxyServerTests.start(metrics: true)
        defer { Task { await fixture.stop() } }
        // The 800×600 photo has no EXIF orientation: w:100 needs 100×75 and w:90 90×68, both met
        // by 1/8 (100×75); w:300 needs 300×225 (3/8).
        for (options, suffix, hits, misses) in [
            ("w:100", "", 0, 1), ("w:90", "", 1, 1), ("w:300", "", 1, 2), ("w:80", "", 2, 2),
            // PNG can animate: all frames are decoded, another key.
            ("w:100", "@png", 2, 3), ("w:90", "@png", 3, 3),
        ] {
            let (response, body) = try await fixture.get(fixture.url(options, "/photo.jpg", suffix: suffix))
            #expect(response.statusCode == 200)
            let width = Int(options.dropFirst(2))!
            #expect(try ImageCodersManager.shared.decode(body).width == width)
            let counted = try await Self.lookups(fixture)
            #expect(counted.hits == hits && counted.misses == misses, "after \(options)\(suffix): \(counted)")
        }
        var held = (100 * 75 * 2 + 300 * 225) * 4  // 100×75 and 300×225 RGBA, and 100×75 for the PNG key
        var text = try await ProxyLoadTests.metrics(fixture)
        #expect(text.contains("webimage_decoded_source_cache_bytes \(held)"), "\(text)")
        // The same pixels stored turned (EXIF 6): shown 600×800, so w:100 is a sixth of the
        // source and needs 134×100 as stored (2/8, 200×150), planned from the header's EXIF.
        let turned = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 800, height: 600), format: .jpeg, orientation: .right),
            as: .jpeg,
            options: .init(quality: 0.9)
        )
        fixture.origin.setRoute("/turned.jpg", .data(turned, contentType: "image/jpeg"))
        let (response, body) = try await fixture.get(fixture.url("w:100", "/turned.jpg"))
        #expect(response.statusCode == 200)
        let image = try ImageCodersManager.shared.decode(body)
        #expect(image.width == 100 && image.height == 133 && image.orientation == .up)
        held += 200 * 150 * 4
        text = try await ProxyLoadTests.metrics(fixture)
        #expect(text.contains("webimage_decoded_source_cache_bytes \(held)"), "\(text)")
        await fixture.stop()
    }

    @Test("A result is the same bytes whether its decode was kept or made for it")
    func resultsDoNotDependOnTheCache() async throws {
        let cached = try await ImageProxyServerTests.start(metrics: true)
        defer { Task { await cached.stop() } }
        let uncached = try await ImageProxyServerTests.start { $0.decodedSourceCacheSize = 0 }
        defer { Task { await uncached.stop() } }
        #expect(uncached.proxy.decodedSources == nil)
        // Warm the cache with one size, then ask both proxies for sizes that reuse it.
        _ = try await cached.get(cached.url("rs:fit:200:200", "/photo.jpg"))
        for options in ["rs:fit:150:150", "rs:fill:120:120/g:nowe", "w:64/q:50", "rs:fit:200:200"] {
            let (first, kept) = try await cached.get(cached.url(options, "/photo.jpg"))
            let (second, fresh) = try await uncached.get(uncached.url(options, "/photo.jpg"))
            #expect(first.statusCode == 200 && second.statusCode == 200)
            #expect(
                kept == fresh,
                "\(options): \(kept.count) bytes from the kept decode, \(fresh.count) from a new one"
            )
            #expect(first.headers[.eTag] == second.headers[.eTag])
        }
        // fit:200, fit:150 and fill:120 decode at 2/8 (200×150), w:64 at 1/8: three of five kept.
        let counted = try await Self.lookups(cached)
        #expect(counted.hits == 3 && counted.misses == 2, "\(counted)")
        await cached.stop()
        await uncached.stop()
    }

    @Test("Two sources of one size and format are never confused; one source's bytes under two URLs decode apart")
    func keyedBySource() async throws {
        let fixture = try await ImageProxyServerTests.start(metrics: true)
        defer { Task { await fixture.stop() } }
        for (path, seed) in [("/red.jpg", 0), ("/blue.jpg", 1), ("/red-again.jpg", 0)] {
            let bitmap = Bitmap(
                width: 400,
                height: 300,
                fill: seed == 0 ? RGBA(r: 220, g: 30, b: 30, a: 255) : RGBA(r: 30, g: 30, b: 220, a: 255)
            )
            let data = try JPEGCoder().encode(DecodedImage(bitmap: bitmap, format: .jpeg), as: .jpeg, options: .init())
            fixture.origin.setRoute(path, .data(data, contentType: "image/jpeg"))
        }
        let (_, red) = try await fixture.get(fixture.url("w:50", "/red.jpg", suffix: "@png"))
        let (_, blue) = try await fixture.get(fixture.url("w:50", "/blue.jpg", suffix: "@png"))
        let redPixel = try ImageCodersManager.shared.decode(red).bitmap.pixels
        let bluePixel = try ImageCodersManager.shared.decode(blue).bitmap.pixels
        #expect(redPixel[0] > 200 && redPixel[2] < 60, "red: \(redPixel.prefix(4))")
        #expect(bluePixel[0] < 60 && bluePixel[2] > 200, "blue: \(bluePixel.prefix(4))")
        var counted = try await Self.lookups(fixture)
        #expect(counted.hits == 0 && counted.misses == 2)
        // The same bytes at another URL: the key holds the URL too (the fingerprint is XXH64,
        // which a crafted source could collide with).
        let (_, again) = try await fixture.get(fixture.url("w:50", "/red-again.jpg", suffix: "@png"))
        #expect(again == red)
        counted = try await Self.lookups(fixture)
        #expect(counted.hits == 0 && counted.misses == 3)
        await fixture.stop()
    }

    @Test("The cache keeps to its budget, least recently used first, and refuses an image over a quarter of it")
    func budget() throws {
        #expect(DecodedSourceCache(budget: 0) == nil)
        let cache = try #require(DecodedSourceCache(budget: 100 * 100 * 4 * 4))  // four 100×100 decodes
        func key(_ name: String, _ side: Int = 100) -> DecodedSourceCache.Key {
            .init(
                sourceURL: "https://images.example/\(name).jpg",
                sourceFingerprint: name,
                decodedSize: PixelSize(width: side, height: side),
                firstFrameOnly: true,
                maxFrameCount: 1,
                colorPolicy: .convertToSRGB,
                keepsMetadata: false
            )
        }
        func image(_ side: Int) -> DecodedImage {
            DecodedImage(bitmap: Bitmap(width: side, height: side, fill: RGBA(r: 1, g: 2, b: 3, a: 255)), format: .jpeg)
        }
        for name in ["a", "b", "c", "d"] { cache.store(image(100), for: key(name)) }
        #expect(cache.cost == 4 * 40_000)
        _ = cache.image(for: key("a"))  // a is now the most recent; b the oldest
        cache.store(image(100), for: key("e"))
        #expect(cache.cost <= cache.budget)
        #expect(cache.image(for: key("b")) == nil, "the least recently used goes first")
        #expect(cache.image(for: key("a")) != nil && cache.image(for: key("e")) != nil)
        #expect(cache.image(for: key("a", 50)) == nil, "another decoded size is another entry")
        cache.store(image(101), for: key("big", 101))
        #expect(cache.image(for: key("big", 101)) == nil, "over a quarter of the budget: not kept")
    }
}
