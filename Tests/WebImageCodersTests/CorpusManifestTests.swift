import Foundation
import Testing
import WebImageCoders
import WebImageTestSupport

/// Runs every row of `$WEBIMAGE_CORPUS/MANIFEST.tsv` (skipped, with a printed note, when unset).
@Suite("Shared corpus (WEBIMAGE_CORPUS)")
struct CorpusManifestTests {
    /// HEIC and HEIF are one family: the corpus's `.heif` file carries the `heic` major brand
    /// (HEVC-coded), so either name is a correct sniff for both.
    static func sameFormat(_ sniffed: ImageFormat, _ expected: String) -> Bool {
        let expected = expected == "apng" ? "png" : expected
        if ["heic", "heif"].contains(expected) { return sniffed == .heic || sniffed == .heif }
        return sniffed.rawValue == expected
    }

    @Test("Each manifest row meets its expected outcome", arguments: Corpus.entriesOrNote)
    func manifestRow(entry: Corpus.Entry) throws {
        let data = try Data(contentsOf: entry.url)
        let sniffed = ImageFormat(sniffing: data)
        let result = Result { () throws(CoderError) in try ImageCodersManager.shared.decode(data) }
        switch entry.expected {
        case "decode-ok":
            #expect(Self.sameFormat(sniffed, entry.format), "sniffed \(sniffed)")
            let image = try result.get()
            #expect(image.width == entry.width && image.height == entry.height)
            #expect(image.sourceFrameCount == entry.frames)
            #expect(image.frames.count == entry.frames)
            if let orientation = entry.trait("exif-orientation") {
                #expect(image.orientation.rawValue == Int(orientation))
            }
            if entry.traits.contains("loop=forever") { #expect(image.loopCount == 0) }
            if let plays = entry.trait("num-plays") { #expect(image.loopCount == Int(plays)) }
            if let repeats = entry.trait("netscape-loop") { #expect(image.loopCount == Int(repeats)! + 1) }
            if entry.traits.contains("no-loop-extension") { #expect(image.loopCount == 1) }
            if !entry.traits.isDisjoint(with: ["alpha", "trns", "transparency"]) { #expect(image.hasAlpha) }
            try checkColor(entry, data: data, converted: image)
            // The header alone gives the same canvas and frame count.
            let header = try #require(ImageHeader(data), "no header read")
            #expect(header.format == sniffed)
            #expect(header.size == PixelSize(width: image.width, height: image.height))
            #expect(header.frameCount == entry.frames)
            #expect(header.orientation == (header.format == .jpeg ? image.orientation : nil), "header orientation")
        case "sniff":
            #expect(Self.sameFormat(sniffed, entry.format), "sniffed \(sniffed)")
            // Every sniffed format's header gives the listed size, decoder or not.
            let listed = try PixelSize(width: #require(entry.width), height: #require(entry.height))
            #expect(ImageHeader(data)?.size == listed, "header size")
            #expect(ImageHeader(data)?.frameCount == entry.frames, "header frame count")
            // A format we decode must decode at the listed size and frame count.
            guard ImageCodersManager.shared.decoder(for: ImageFormatDetails(sniffing: data)) != nil else {
                #expect(throws: CoderError.unsupportedFormat(sniffed)) { try result.get() }
                break
            }
            let image = try result.get()
            #expect(image.sourceSize == listed)
            #expect(image.frames.count == entry.frames && image.sourceFrameCount == entry.frames)
            if entry.traits.contains("alpha") { #expect(image.hasAlpha) }
        case "must-fail":
            if case .failure(let error) = result {
                #expect(!error.description.isEmpty)
            } else {
                Issue.record("\(entry.file) decoded but must fail")
            }
        default:  // no-crash: reaching here is the check; a success must be a sane image
            if case .success(let image) = result { #expect(image.width > 0 && image.height > 0) }
        }
    }

    /// Rows with an ICC profile keep it on request, and convert (the default) unless it is sRGB;
    /// a gAMA-only PNG converts as browsers show it.
    func checkColor(_ entry: Corpus.Entry, data: Data, converted: DecodedImage) throws {
        guard !entry.traits.isDisjoint(with: ["icc", "gama"]) else { return }
        let kept = try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions(colorPolicy: .keep))
        let ignored = try ImageCodersManager.shared.decode(data, options: ImageDecodingOptions(colorPolicy: .ignore))
        #expect(converted.colorProfile == nil && ignored.colorProfile == nil)
        // Bools, not arrays: a failing comparison of large arrays makes the test library diff them.
        let keptIsStored = kept.bitmap.pixels == ignored.bitmap.pixels
        #expect(keptIsStored, "keep and ignore leave the stored numbers")
        let unconverted = converted.bitmap.pixels == ignored.bitmap.pixels
        guard let profile = kept.colorProfile else {
            // An unreadable profile (jpeg-icc-after-sof.jpg's is 7 bytes of text) changes nothing.
            #expect(unconverted, "\(entry.file): no usable profile")
            return
        }
        if profile.isSRGB {
            #expect(unconverted, "an sRGB profile needs no transform")
        } else {
            #expect(!unconverted, "\(entry.file): converted from \(profile.colorSpace)")
        }
    }
}
