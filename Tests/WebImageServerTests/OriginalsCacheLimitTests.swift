import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageServer

/// `--cache-size` holds on every write, not only at the ten-minute sweep.
@Suite("webimage serve: the originals cache keeps its size limit", .timeLimit(.minutes(2)))
struct OriginalsCacheLimitTests {
    @Test("40 distinct sources of about 100 KB through a 1 MB originals cache leave at most 1 MB on disk")
    func cacheSizeHoldsOnWrite() async throws {
        let signer = try URLSigner(pairs: [try .init(keyHex: "00ff", saltHex: "")])
        var configuration = ImageProxyConfiguration(signer: signer)
        configuration.sourcePolicy.allowsLoopback = true
        // The in-process origin answers late when the whole suite keeps both cores busy (the 5 s
        // default ran out there): this test is about the cache's size, not the timeout.
        configuration.limits.downloadTimeout = .seconds(60)
        let folder = try TemporaryDirectory(prefix: "webimage-serve-cache-limit")
        let limit = 1 << 20
        let manager = ImageProxy.makeManager(
            configuration: configuration,
            cacheDirectory: folder.url,
            cacheSize: Int64(limit)
        )
        let proxy = ImageProxy(configuration: configuration, manager: manager)
        let origin = try await OriginServer.start()
        do {
            // Noise does not compress: each PNG is about 100 KB.
            for index in 0..<40 {
                let png = try PNGCoder().encode(
                    DecodedImage(
                        bitmap: GeneratedImages.noise(width: 180, height: 140, seed: UInt64(index + 1)),
                        format: .png
                    ),
                    as: .png,
                    options: .init()
                )
                origin.setRoute("/\(index).png", .data(png, contentType: "image/png", cacheControl: "max-age=86400"))
            }
            var largest = 0
            for index in 0..<40 {
                let path = "/w:20/plain/\(origin.url("/\(index).png").absoluteString)"
                let response = await proxy.respond(path: "/" + signer.signature(for: path) + path)
                #expect(response.status == 200, "\(index): \(String(decoding: response.body, as: UTF8.self))")
                largest = max(largest, Self.folderSize(folder.url))
            }
            // Then: the folder never went past the limit (plus the one entry between its write and
            // its trim), and the newest source is still cached.
            #expect(largest <= limit + 120_000, "the originals cache peaked at \(largest) bytes")
            #expect(largest > limit / 4, "the cache was used at all")
            let newest = "/w:30/plain/\(origin.url("/39.png").absoluteString)"
            let again = await proxy.respond(path: "/" + signer.signature(for: newest) + newest)
            #expect(again.status == 200)
            #expect(origin.requestCount(for: "/39.png") == 1)
        } catch {
            Issue.record(error)
        }
        await origin.stop()
        folder.remove()
    }

    /// Bytes of the regular files under `folder`.
    static func folderSize(_ folder: URL) -> Int {
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
        var total = 0
        while let file = enumerator?.nextObject() as? URL {
            total += (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }
}
