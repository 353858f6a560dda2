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
}
