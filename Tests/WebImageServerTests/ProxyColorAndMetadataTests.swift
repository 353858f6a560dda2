import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@testable import WebImageCoders
@testable import WebImageServer

/// imgproxy's `strip_color_profile`, `strip_metadata` and `keep_copyright` over HTTP, with the
/// server's defaults, against a Display P3 JPEG whose EXIF names a camera, an artist and a
/// copyright holder.
@Suite("webimage serve: colour profiles and metadata, imgproxy's way", .timeLimit(.minutes(3)))
struct ProxyColorAndMetadataTests {
    typealias Fixture = ImageProxyServerTests.Fixture

    static let colors: [RGBA] = [RGBA(r: 200, g: 100, b: 50), RGBA(r: 40, g: 160, b: 90), RGBA(r: 90, g: 80, b: 200)]

    /// A little-endian EXIF block with Make (271), Orientation (274) = 1, Artist (315) and
    /// Copyright (33432), the ASCII values stored after IFD0.
    static let exif: [UInt8] = {
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16) }
        let strings: [(Int, [UInt8])] = [
            (271, Array("Camera Maker\0".utf8)), (315, Array("Ann Artist\0".utf8)),
            (33432, Array("(c) 2026 Ann Artist\0".utf8)),
        ]
        let entryCount = 4
        var data: [UInt8] = []
        let dataStart = 8 + 2 + entryCount * 12 + 4
        var entries: [(Int, [UInt8])] = []
        for (tag, text) in strings {
            entries.append((tag, le16(tag) + le16(2) + le32(text.count) + le32(dataStart + data.count)))
            data += text
            if data.count % 2 == 1 { data.append(0) }
        }
        entries.append((274, le16(274) + le16(3) + le32(1) + le16(1) + le16(0)))
        entries.sort { $0.0 < $1.0 }
        return [0x49, 0x49, 0x2A, 0x00] + le32(8) + le16(entryCount) + entries.flatMap(\.1) + le32(0) + data
    }()

    static func start(_ configure: (inout ImageProxyConfiguration) -> Void = { _ in }) async throws -> Fixture {
        let fixture = try await ImageProxyServerTests.start(configure)
        var image = DecodedImage(
            bitmap: GeneratedImages.blocks(width: 48, height: 16, colors: colors, blockSize: 16),
            format: .jpeg
        )
        image.colorProfile = .displayP3
        image.exif = Data(exif)
        let jpeg = try JPEGCoder().encode(image, as: .jpeg, options: .init(quality: 1))
        fixture.origin.setRoute("/p3.jpg", .data(jpeg, contentType: "image/jpeg"))
        return fixture
    }

    /// The result for `options`, decoded keeping its profile and EXIF.
    static func result(_ fixture: Fixture, _ options: String, suffix: String = "@png") async throws -> DecodedImage {
        let (response, body) = try await fixture.get(fixture.url(options, "/p3.jpg", suffix: suffix))
        try #require(response.statusCode == 200, "\(options): \(String(decoding: body.prefix(300), as: UTF8.self))")
        var decoding = ImageDecodingOptions(colorPolicy: .keep)
        decoding.keepsMetadata = true
        return try ImageCodersManager.shared.decode(body, options: decoding)
    }

    static func ascii(_ image: DecodedImage, _ tag: Int) -> String? {
        image.exif.flatMap { EXIFDirectory([UInt8]($0)) }?.ascii(tag).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("Converted to sRGB and untagged by default; scp:0 keeps the pixels and writes the profile")
    func colorProfile() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let source = try JPEGCoder().decode(
            try JPEGCoder().encode(
                {
                    var image = DecodedImage(
                        bitmap: GeneratedImages.blocks(width: 48, height: 16, colors: Self.colors, blockSize: 16),
                        format: .jpeg
                    )
                    image.colorProfile = .displayP3
                    return image
                }(),
                as: .jpeg,
                options: .init(quality: 1)
            ),
            options: ImageDecodingOptions(colorPolicy: .keep)
        )
        let converted = try source.applyingColorPolicy(.convertToSRGB, deadline: CodingDeadline(ImageDecodingOptions()))

        // The default first: the decoded-source cache must not answer scp:0 with converted pixels.
        let byDefault = try await Self.result(fixture, "rs:fit:48:16")
        #expect(byDefault.colorProfile == nil)
        #expect(byDefault.bitmap[8, 8] == converted.bitmap[8, 8] && byDefault.bitmap[8, 8] != source.bitmap[8, 8])
        let kept = try await Self.result(fixture, "rs:fit:48:16/scp:0")
        #expect(kept.colorProfile?.data == ColorProfile.displayP3.data)
        #expect(kept.bitmap[8, 8] == source.bitmap[8, 8])
        for suffix in ["@jpg", "@webp", "@avif"] {
            let other = try await Self.result(fixture, "rs:fit:48:16/strip_color_profile:false", suffix: suffix)
            #expect(other.colorProfile?.data == ColorProfile.displayP3.data, "\(suffix)")
        }
        await fixture.stop()

        // --no-strip-color-profile: kept by default, scp:1 converts.
        let keeping = try await Self.start { $0.defaultOptions.stripColorProfile = false }
        defer { Task { await keeping.stop() } }
        #expect(try await Self.result(keeping, "rs:fit:48:16").colorProfile?.data == ColorProfile.displayP3.data)
        #expect(try await Self.result(keeping, "rs:fit:48:16/scp:1").colorProfile == nil)
        await keeping.stop()
    }

    @Test("EXIF: stripped to the artist and copyright by default, kcr:0 strips all, sm:0 keeps it upright")
    func metadata() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        for suffix in ["@jpg", "@png", "@webp"] {
            let stripped = try await Self.result(fixture, "rs:fit:24:8", suffix: suffix)
            #expect(Self.ascii(stripped, 315) == "Ann Artist", "\(suffix)")
            #expect(Self.ascii(stripped, 33432) == "(c) 2026 Ann Artist", "\(suffix)")
            #expect(Self.ascii(stripped, 271) == nil, "\(suffix): the camera is stripped")
        }
        let bare = try await Self.result(fixture, "rs:fit:24:8/kcr:0", suffix: "@jpg")
        #expect(bare.exif == nil)
        let whole = try await Self.result(fixture, "rs:fit:24:8/sm:0", suffix: "@jpg")
        #expect(Self.ascii(whole, 271) == "Camera Maker" && Self.ascii(whole, 315) == "Ann Artist")
        #expect(whole.orientation == .up)
        await fixture.stop()

        // --no-strip-metadata keeps it all; --no-keep-copyright strips it all.
        let keeping = try await Self.start { $0.defaultOptions.stripMetadata = false }
        defer { Task { await keeping.stop() } }
        #expect(Self.ascii(try await Self.result(keeping, "rs:fit:24:8", suffix: "@jpg"), 271) == "Camera Maker")
        await keeping.stop()
        let bareServer = try await Self.start { $0.defaultOptions.keepCopyright = false }
        defer { Task { await bareServer.stop() } }
        #expect(try await Self.result(bareServer, "rs:fit:24:8", suffix: "@jpg").exif == nil)
        await bareServer.stop()
    }
}
