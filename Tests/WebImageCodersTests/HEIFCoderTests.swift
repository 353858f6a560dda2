import Foundation
import Testing
import WebImageTestEncoders
import WebImageTestSupport

@testable import WebImageCoders

@Suite("HEIC/HEIF decoding")
struct HEIFCoderTests {
    static let red = RGBA(r: 230, g: 20, b: 20)
    static let blue = RGBA(r: 20, g: 20, b: 230)

    static func isClose(_ pixel: RGBA, _ color: RGBA, tolerance: Int = 24) -> Bool {
        abs(Int(pixel.r) - Int(color.r)) <= tolerance && abs(Int(pixel.g) - Int(color.g)) <= tolerance
            && abs(Int(pixel.b) - Int(color.b)) <= tolerance && abs(Int(pixel.a) - Int(color.a)) <= tolerance
    }

    @Test("A still image decodes close to its source; the data sniffs as HEIC and its header reads")
    func still() throws {
        let source = GeneratedImages.gradient(width: 96, height: 64)
        let data = try HEIFTestEncoder.encode(source)
        #expect(ImageFormat(sniffing: data) == .heic)
        #expect(ImageHeader(data) == ImageHeader(format: .heic, size: PixelSize(width: 96, height: 64), frameCount: 1))
        let image = try ImageCodersManager.shared.decode(data)
        #expect(image.format == .heic && image.width == 96 && image.height == 64 && image.frames.count == 1)
        #expect(!image.hasAlpha && !image.bitmap.containsTransparency)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 4)
    }

    @Test("Alpha survives: translucent pixels stay translucent")
    func alpha() throws {
        let source = GeneratedImages.translucentGradient(width: 40, height: 30)
        let image = try HEIFCoder().decode(try HEIFTestEncoder.encode(source), options: .init())
        #expect(image.hasAlpha)
        #expect(GeneratedImages.meanDifference(image.bitmap, source) < 4)
    }

    @Test("Every irot/imir orientation is applied by the decode: the result is upright", arguments: 1...8)
    func orientation(raw: Int) throws {
        let orientation = try #require(ImageOrientation(rawValue: raw))
        // Six 16×16 blocks of distinct colours: the layout shows any turn or mirror.
        let colors: [RGBA] = [
            .init(r: 240, g: 10, b: 10), .init(r: 10, g: 240, b: 10), .init(r: 10, g: 10, b: 240),
            .init(r: 240, g: 240, b: 10), .init(r: 10, g: 240, b: 240), .init(r: 240, g: 10, b: 240),
        ]
        let source = GeneratedImages.blocks(width: 48, height: 32, colors: colors, blockSize: 16)
        let data = try HEIFTestEncoder.encode(source, orientation: orientation)
        let expected = source.applyingOrientation(orientation)
        for apply in [false, true] {
            let image = try HEIFCoder().decode(data, options: .init(applyOrientation: apply))
            #expect(image.orientation == .up)
            #expect(image.width == expected.width && image.height == expected.height)
            #expect(ImageHeader(data)?.size == PixelSize(width: expected.width, height: expected.height))
            for y in stride(from: 8, to: expected.height, by: 16) {
                for x in stride(from: 8, to: expected.width, by: 16) {
                    #expect(Self.isClose(image.bitmap[x, y], expected[x, y]), "orientation \(raw) at \(x),\(y)")
                }
            }
        }
    }

    @Test("A thumbnail request the embedded thumbnail covers decodes the thumbnail; a larger one the image")
    func embeddedThumbnail() throws {
        // The thumbnail is made from another colour, so the pixels say which one was decoded.
        let data = try HEIFTestEncoder.encode(
            GeneratedImages.solid(width: 256, height: 128, color: Self.red),
            thumbnail: GeneratedImages.solid(width: 256, height: 128, color: Self.blue),
            thumbnailBox: 64
        )
        let small = try HEIFCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 48, height: 48)))
        #expect(small.width == 48 && small.height == 24)
        #expect(small.sourceSize == PixelSize(width: 256, height: 128))
        #expect(Self.isClose(small.bitmap[24, 12], Self.blue))
        let exact = try HEIFCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 64, height: 64)))
        #expect(exact.width == 64 && exact.height == 32 && Self.isClose(exact.bitmap[32, 16], Self.blue))
        let large = try HEIFCoder().decode(data, options: .init(thumbnailPixelSize: PixelSize(width: 100, height: 100)))
        #expect(large.width == 100 && large.height == 50)
        #expect(Self.isClose(large.bitmap[50, 25], Self.red))
        let full = try HEIFCoder().decode(data, options: .init())
        #expect(full.width == 256 && Self.isClose(full.bitmap[128, 64], Self.red))
        // Enforced: the thumbnail whatever the size asked, and it is the source size then.
        var enforcing = ImageDecodingOptions()
        enforcing.prefersEmbeddedThumbnail = true
        let enforced = try HEIFCoder().decode(data, options: enforcing)
        #expect(enforced.width == 64 && enforced.sourceSize == PixelSize(width: 64, height: 32))
        #expect(Self.isClose(enforced.bitmap[32, 16], Self.blue))
        let none = try HEIFCoder().decode(
            try HEIFTestEncoder.encode(GeneratedImages.solid(width: 32, height: 16, color: Self.red)),
            options: enforcing
        )
        #expect(none.width == 32 && Self.isClose(none.bitmap[16, 8], Self.red), "no thumbnail: the image")
    }

    @Test("A collection of images decodes its primary image")
    func collection() throws {
        let data = try HEIFTestEncoder.encode(
            GeneratedImages.solid(width: 64, height: 48, color: Self.blue),
            others: [GeneratedImages.solid(width: 32, height: 32, color: Self.red)]
        )
        let image = try HEIFCoder().decode(data, options: .init())
        #expect(image.width == 64 && image.height == 48 && Self.isClose(image.bitmap[10, 10], Self.blue))
        #expect(ImageHeader(data)?.size == PixelSize(width: 64, height: 48))
    }

    @Test("Limits: the pixel limit refuses from the container; a declared-huge image fails fast")
    func limits() throws {
        let data = try HEIFTestEncoder.encode(GeneratedImages.gradient(width: 64, height: 64))
        #expect(throws: CoderError.limitExceeded(.heic, "64×64 is over the 4032-pixel limit")) {
            try HEIFCoder().decode(data, options: .init(maxPixelCount: 64 * 63))
        }
        // The image's `ispe` box says 60000×60000 (3.6 gigapixels); the coded image is 64×64.
        var huge = data
        let ispe = try #require(huge.firstRange(of: Data("ispe".utf8)))
        let dimensions = ispe.upperBound + 4
        huge.replaceSubrange(dimensions..<dimensions + 8, with: [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60])
        let start = ContinuousClock.now
        do {
            _ = try HEIFCoder().decode(huge, options: .init())
            Issue.record("a declared 60000×60000 image decoded")
        } catch {
            #expect(error.code == "limitExceeded", "\(error)")
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    // libheif 1.15's dav1d plugin leaks its input when a decode fails (found by fuzzing this
    // coder with AVIF seeds): AV1-coded HEIF never reaches it; AVIFCoder decodes it.
    @Test("AV1-coded HEIF (AVIF) is refused with unsupportedFormat: HEIFCoder decodes HEVC only")
    func refusesAV1() throws {
        let avif = try AVIFCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 32, height: 32), format: .avif),
            as: .avif,
            options: .init()
        )
        #expect(throws: CoderError.unsupportedFormat(.heic)) { try HEIFCoder().decode(avif, options: .init()) }
        #expect(try ImageCodersManager.shared.decode(avif).format == .avif, "the manager sends it to AVIFCoder")
        let heic = try HEIFTestEncoder.encode(GeneratedImages.gradient(width: 32, height: 32))
        func types(_ data: Data) -> Set<String> { data.withUnsafeBytes { HEIFContainer($0).types } }
        #expect(types(avif).contains("av01") && !types(avif).contains("hvc1"))
        #expect(types(heic).contains("hvc1") && !types(heic).contains("av01"))
        for cut in stride(from: 0, to: heic.count, by: 13) { _ = types(heic.prefix(cut)) }  // never reads past the end
        #expect(types(Data("not a heif file at all".utf8)).isEmpty)
    }

    // Found by the heic fuzz target: a 684-byte HEIC whose grid declares a 28009×26161 canvas
    // (ispe says less); libheif 1.15 allocated 2.9 GB for it, then crashed.
    @Test("A grid declaring a canvas over the pixel limit is refused before libheif allocates it")
    func oversizedGrid() throws {
        let data = try #require(
            Data(
                base64Encoded: [
                    "AAAAHGZ0eXBoZWljAAAAAG1pZjFoZWljbWlhZgAAAbdtZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAA",
                    "AAAAAA5waXRtAAAAAAACAAAAEGlkYXQAAAAAAEAAMAAAADhpbG9jAQAAAERAAAIAAQAAAAAAAAHbAAEAAAAAAAAAtwACAAAA",
                    "AAAAAAwAAQAAAAAAAAAIAAAAOGlpbmYAAAAAAAIAAAAVaW5mZQIAAAEAAQAAaHZjMQAAAAAVaW5mZQIAAAAAAgAAZ3JpZAAA",
                    "AADiaXBycAAAAL9pcGNvAAAAdmh2Y0MBA3AAAAAAAAAAAAAe8AD8/fj4AAAPAyAAAQAYQAEMAf//A3AAAAMAkAAAAwAAAwAe",
                    "ugJAIQABACpCAQEDcAAAAwCQAAADAAADAB6gIIEFlurkprm4EBAwIAAAAwAgAAADACEiAAEABkQBwXPAiQAAABRpc3BlAAAA",
                    "AAAAAEAAAABBAAAACWlybwN0AAAAFGlzcGUAAAAAAAAAMQAAAEIAAAAQcGl4aQAAAAADCAgIAAAAG2lwbWEAAAAAAAAAAgAB",
                    "AoECAAIDAwSFAAAAGmlyZWYAAAAAAAAADmRpbWcAAgABAAEAAAC/bWRhdAAAALMoAa8GOFr3tt/Dh/5Bjeh/Qn5ONGhlaWY4",
                    "Qm94X3BpeGlF2SSF/iyUJ0tbdodlUklGRtwAAABXRUJQVlA2WAoAAAASU949wiPaaIoswucRxBAHi3Wp5TZrn2t7koH0VvqQ",
                    "ayTGN8QAVNvEgdV88qYKi0h4he+LyfuD1/cSE6Uk7FvwDrfVZY2KANjUm3LQYaSEP3NxrhNAOVXoECg3UuZr/PIamOuOXHDQ",
                    "aHJeMRrJGNXmpzIBJpri67RcSsmDHdZDtCNS8IW2xXBmvyFX",
                ].joined()
            )
        )
        let sizes = data.withUnsafeBytes { HEIFContainer($0).derivedImageSizes }
        #expect(sizes.contains { $0.width * $0.height > 100_000_000 }, "\(sizes)")
        #expect {
            try HEIFCoder().decode(data, options: .init())
        } throws: { error in
            guard case .limitExceeded(.heic, _)? = error as? CoderError else { return false }
            return true
        }
        // A real grid (the corpus's phone photo, when present) reads its true canvas.
        if let corpus = ProcessInfo.processInfo.environment["WEBIMAGE_CORPUS"],
            let photo = try? Data(contentsOf: URL(fileURLWithPath: corpus + "/heic-1440x960.heic")),
            photo.withUnsafeBytes({ HEIFContainer($0).types.contains("grid") })
        {
            #expect(
                photo.withUnsafeBytes { HEIFContainer($0).derivedImageSizes } == [PixelSize(width: 1440, height: 960)]
            )
        }
    }

    @Test("The picture size of the HEVC parameter sets is checked against the pixel limit before decoding")
    func codedSize() throws {
        let heic = try HEIFTestEncoder.encode(GeneratedImages.gradient(width: 96, height: 64))
        #expect(heic.withUnsafeBytes { HEIFContainer($0).codedImageSizes } == [PixelSize(width: 96, height: 64)])
        // The same file with its ispe saying 8×8: libde265 would still decode 96×64.
        var shrunk = heic
        let ispe = try #require(shrunk.firstRange(of: Data("ispe".utf8)))
        for (index, byte) in [0, 0, 0, 8, 0, 0, 0, 8].enumerated() { shrunk[ispe.upperBound + 4 + index] = UInt8(byte) }
        #expect(ImageHeader(shrunk)?.size == PixelSize(width: 8, height: 8))
        #expect {
            try HEIFCoder().decode(shrunk, options: .init(maxPixelCount: 1000))
        } throws: { error in
            guard case .limitExceeded(.heic, let detail)? = error as? CoderError else { return false }
            return detail.contains("96×64")
        }
        #expect(throws: Never.self) { try HEIFCoder().decode(heic, options: .init(maxPixelCount: 96 * 64)) }
    }

    // Found by the heic fuzz target: a 526-byte HEIC whose grid lists itself as its tile
    // (iref dimg 2 → 2); libheif 1.15 recursed until the stack overflowed (a segfault in
    // `webimage info`).
    @Test("A derived image made from itself is refused before libheif decodes it")
    func derivationLoop() throws {
        let data = try #require(
            Data(
                base64Encoded: [
                    "AAAAGGZ0eXBoZWljAAAAAG1pZjFoZWljAAABt21ldGEAAAAAAAAAIWhkbHIAAAAAAAAAAHBpY3QAAAAAAAAAAAAAAAAAAAAA",
                    "DnBpdG0AAAAAAAIAAAAQaWRhdAAAAAAAgQABAAAAOGlsb2MBAAAAREAAAgABAAAAAAAAAdcAAQAAAAAAAAA3AAIAAQAAAAAA",
                    "AAABAAAAAAAAAAgAAAA4aWluZgAAAAAAAgAAABVpbmZlAgAAAQABAABodmMxAAAAABVpbmZlAgAAAAACAABncmlkAAAAAOJp",
                    "cHJwAAAAv2lwY28AAAB2aHZjQwEDcAAAAAAAAAAAAB7wAPz9+PgAAA8DIAABABhAAQwB//8DcAAAAwCQAAADAAADAB66AkAh",
                    "AAEAKkIBAQNwAAADAJAAAAMAAAMAHqAggQWW6q6a5uBAQMCAAAADAIAAAAMAhCIAAQAGRAHBc8GJAAAAFGlzcGUAAAAAAAAA",
                    "QAAAAEAAAAAJaXJvJQMAAAAUaXNwZQAAAAAAAAABAAAAAQAAABBwaXhpAAAAAAMICAgAAAAbaXBtYQAAAAAAAAACAAECgQIA",
                    "AgMDBIUAAAAaaXJlZgD//AAAAAAOZGltZwACAAEAAgAAAD9tZGF0AAAAMygBrwYyFoc0iSDwvk1///4ln//+1O2s1snrhH6A",
                    "Y8fkt5CRnvRfexhS5Tx0IPScU7nNgA==",
                ].joined()
            )
        )
        #expect(data.withUnsafeBytes { HEIFContainer($0).hasDerivationLoop })
        #expect {
            try HEIFCoder().decode(data, options: .init())
        } throws: { error in
            guard case .corruptData(.heic, let detail)? = error as? CoderError else { return false }
            return detail.contains("made from itself")
        }
        // The same loop behind a reference box whose size field is garbage: libheif reads the
        // entries anyway, so the check must too.
        let garbled = try #require(
            Data(
                base64Encoded: [
                    "AAAAGGZ0eXBoZWljAAAAAG1pZjFoZWljAAABt21ldGEAAAAAAAAAIWhkbHIAAAAAAAACAHBpY3QAAAAAAAAAAAAAAAAAAAAA",
                    "DnBpdG0AAAAAAAIAAAAQaWRhdAAAAAAIAQABAAAAOGlsb2MBAAAAREAAAgABAAAAAAAAAdcAAQAAAAAAAAA3AAIAAQAAAAAA",
                    "AAABAAAAAAAAAAgAAAA4aWluZgAAAAAAAgAAABVpbmZlAgAAAQABAABodmMxAAAAABVpbmZlAgAAAAACAABncmlkAAAAAOJp",
                    "cHJwAAAAv2lwY28AAAB2aHZjQwEDcAAAAAAAAAAAAB7wAPz9+PgAAA8DIAABABhAAQwB//8DcAAAAwCQAAADAAADAB66AkAh",
                    "AAEAKkIBAQNwAAADAJAAAAMAAAMAHqAggQWW6q6a5uBAQMCAAAADAIAAAAMAhCIAAQAGRAHBc8GJAAAAFGlzcGUAAAAAAAAA",
                    "QAAAAEAAAAAJaXJvdAMAAAAUaXNwZQAAAAAAAAABAAAAAQAAABBwaXhpAAAAAAMICAgAAAAbaXBtYQAAAAAAAAACAAECgQIA",
                    "AgMDBIUAAAAaaXJlZgAAAP3///8OZGltZwACAAEAAgABAAAAAAAAAdcAAQAAAAAAAAA3ACDwvk1///4ln//+1O2s1snrhH6A",
                    "Y8fkt5CRnvRfexhS5Tx0IPScU7nNgGGGlnM=",
                ].joined()
            )
        )
        #expect(garbled.withUnsafeBytes { HEIFContainer($0).hasDerivationLoop })
        #expect(throws: CoderError.self) { try HEIFCoder().decode(garbled, options: .init()) }
        let heic = try HEIFTestEncoder.encode(GeneratedImages.gradient(width: 32, height: 32))
        #expect(!heic.withUnsafeBytes { HEIFContainer($0).hasDerivationLoop })
    }

    @Test("Truncated, damaged and foreign data fail with a CoderError, never a crash")
    func badInput() throws {
        let data = try HEIFTestEncoder.encode(GeneratedImages.noise(width: 64, height: 64), lossless: false)
        for cut in [12, 40, data.count / 3, data.count / 2, data.count - 8] {
            #expect(throws: CoderError.self, "cut at \(cut)") {
                try HEIFCoder().decode(data.prefix(cut), options: .init())
            }
        }
        var damaged = data
        for index in stride(from: data.count / 2, to: data.count, by: 7) { damaged[index] ^= 0x5A }
        _ = try? HEIFCoder().decode(damaged, options: .init())  // either outcome, no crash
        #expect(throws: CoderError.self) { try HEIFCoder().decode(Data("not an image".utf8), options: .init()) }
        #expect(throws: CoderError.self) { try HEIFCoder().decode(Data(), options: .init()) }
        #expect(throws: CoderError.encodingFailed(.heic, "the HEIF coder only decodes")) {
            try HEIFCoder().encode(
                DecodedImage(bitmap: GeneratedImages.noise(width: 4, height: 4), format: .heic),
                as: .heic,
                options: .init()
            )
        }
    }
}
