import Foundation
import Testing
import WebImageTestSupport

@testable import WebImageCoders

/// Inputs the fuzzers found (scripts/fuzz.sh), kept so the fix stays fixed.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    /// `progressive` timeout (2026-11-22): a 1,479-byte GIF whose first frame never completes,
    /// fed a byte at a time. Each update parsed all the data again and allocated the 5×63,701
    /// canvas, so the work grew with the square of the size (over 20 s under ASan).
    static let gifFirstFrameNeverCompletes = Data(
        base64Encoded:
            "AEdJRjg3YQUAANX4AP8CAP///10s//////gC1AFLAAAAA1FwFlwAcnNA1xZJuXs1rXcehKOVvQARXzgq6Rotmdojef5myXZDEtrbqyLSFqMHlAXmJ/QGypIAlh4eKsAFJcC5JiXAaclPmgDK6zo2QDgamS0n8L4q2VMs+fHqwsQfr5q0HmRIlk4ZHQPobi2vBej1l6UATF2LwiAXOa+QdPVKugcAAAAAAAAAAOM2VrVBODpqZ00NaNF37iqY+p1PbxlnCOhZPXw9QGq3fz5AptgzAJBt//////////9xzwHIB5wyF+hOKUDBAvb3FFWitZ+VzL8pmdkq+d5LAQAAFgALF738SwhHuWvhnTv/wdJh1FLpPO+r6bsBXBW5LwCcoXwMwNFizwFw+O0UADpDBcg9pia6UjJ9RjKuXHJ+jOSRXwK8/BLc/1eGqJn62q6qq9Ah246OmzVlHDpEVhvrAcKPWzqAvzg1ADCs9WItgHts9jSAS88NdUF6u6RQWS9WLnlBCXCyCeBIJUw7a4jEGAiehaoqaP8MumefWjE9gt7xTGzupNvQobK3owwgXG2dAAi0JOcA+JaJTQAePfNf74IvF+GZwROf3PGqI4w/JhnqA6h8dPjtoEUrHx23EcJRT5tsNZUBEmrUdhV52tSRD04tH/ecpUPPm8NvN3WIlcoRUyE5Q/qvvc8CZDJSgmyxewAgt8W1BCDX4pLH38PO6QD5gDMFYC927ADIb3QuH7ICUAcC1HgWcKxT5UdVWSnIHFVWMcPhGNru/K3Y1AvKUKeUgV4CqKnRNNCiNTULF0E4Wm74GF7bufBOSwfT1DRTh/Qp78iA7Bj3WYDcg3LE/PVyBvtNxwIA25Zj2Nc75DWtiaUAdrlDxqENiVgD0lJji3uzGbh0HC+sAHu8ovKorVaAvVMyr3yVV9fOvNoCuZxkdrNk5leSQoW5Qlw+/7Jk21GpLnctvNPSF94JCxfCa7tg4SKAmqltbQBtyArIq72e+0f///////////////////////////////////////////////////////////////////////////////////////////////////////////+AdKWUZgDjsAaATMCTBMjWu5sBsn/ufnvICnAqXxR86FYGcKvXCLe6rlxyfozkkV8CvPwS3P84OmpnTQ1o0XfuKpj6nU9vGWcI6Fk9fD1Aard/PkCm2DMAkG3//////////3HPAcgHnDIX6E4pQMEC9vcUVaK1n5XMvymZ2Sr53ksBAAAWAAsXvfxLCEe5a+GdO//B0mHUUuk876vpuwFcFbkvAJyhfAzA0WLPAXD4SUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUlJSUntFAA6QwXIPaYmulIyfUYyrlxyfozkkV8CvPwS3P9XhqiZ+tquqqvQ246OmzVlHDpEVhvrAcKPWzqAvzg1ADCs9WItgHts9jSAS88NdUF6u6RQWS9WLnlBCXCyAAAAAAAAAAAAAAAAAAAACeBIJUw7a4jEGAiehaoqaP8MumefWjE9gt7xTGzupNvQobK3owwgXG2dAAi0JOcA+JaJTQAePfNf74IvF+GZwROf3PGqI4w/JhnqA6h8dPjtoEUrHxG3wh1RT5tsNZUBEmrUdhV52tSRD04tH/ecpUPPm8NvN3WIlcoRUyE5Q/qvvc8CZDJSgmyxewAgt8W1BCDX4m0AbcgKyKu9nvtH////////////////////////////////////////////////////////V4aomfrarqqr0NuOjps1ZRw6RFYb6wHCj1s6gL84NQAwrPViLYB7bPY0gEvPDXVBerukUFkvVi55QQlwsgngSCVMO2uIxBgInIWqKgAA1bgA//8AR0lGODdhAQAAKLgA/wIA/w=="
    )!

    @Test("A GIF fed a byte at a time is parsed a bounded number of times; the final decode matches")
    func gifByteAtATime() throws {
        let input = Self.gifFirstFrameNeverCompletes
        // The fuzz input's first byte chose the step (1 byte); the image is the rest.
        let image = Data(input.dropFirst())
        let decoder = try #require(
            ImageCodersManager.shared.makeIncrementalDecoder(forPrefix: image, options: .init())
                as? GIFIncrementalDecoder
        )
        for end in 1..<image.count { _ = try? decoder.update(image.prefix(end), isComplete: false) }
        // Attempts wait for the data to grow by an eighth (at least 1 KiB): one here, not 1,478.
        #expect(decoder.attempts <= 2, "\(decoder.attempts) attempts")
        let final = Result { try decoder.update(image, isComplete: true) }
        let oneShot = Result { try ImageCodersManager.shared.decode(image, options: .init()) }
        switch (final, oneShot) {
        case (.success(let a), .success(let b)): #expect(a?.frames.map(\.bitmap) == b.frames.map(\.bitmap))
        case (.failure, .failure): break
        default: Issue.record("the incremental and one-shot decodes disagree: \(final) vs \(oneShot)")
        }
    }

    /// `jxl` crash (2026-11-25): the header reader of a 123-byte ICO whose entry embeds a PNG
    /// `IHDR` of 4,216,241,277 × 4,294,967,295 multiplied the sides to compare entries and
    /// trapped on the overflow. `PixelSize.pixelCount` now saturates at `Int.max`.
    static let icoWithHugeEmbeddedPNG = Data(
        base64Encoded:
            "AAABAG1saWEAAAAsbWRoZAEAAAAAUklGRhwAAAAAAAnnLKDoAAAAACznoG1pbWXoAAAAAQAAAACJUE5HDQ0aDQAAAA1JSERS+068ff///////wAAAAAAABoKAAAnUkldRggAAAAAAOgDAAAAV0VCUFZQOAAAANbNqO+/"
    )!

    @Test("An ICO entry declaring 2³²-pixel sides is read without trapping, and refused by the limits")
    func icoHugeEmbeddedPNG() throws {
        let header = try #require(ImageHeader(Self.icoWithHugeEmbeddedPNG))
        #expect(header.format == .ico)
        #expect(header.size.pixelCount == Int.max)
        #expect(header.decodedByteCount(with: .init()) == 0)

        // Two entries, the second a PNG whose IHDR states 0xFFFFFFFF × 0xFFFFFFFF: compared
        // with the first entry's 16×16, it is the larger, without overflowing.
        var ico = Data([0, 0, 1, 0, 2, 0])
        let pngOffset = 6 + 2 * 16
        for (side, offset) in [(16, 0), (0, pngOffset)] {
            ico += [UInt8(side), UInt8(side), 0, 0, 1, 0, 32, 0, 0, 0, 0, 0]
            ico += withUnsafeBytes(of: UInt32(offset).littleEndian) { Data($0) }
        }
        ico += [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        ico += [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 8, 6, 0, 0, 0]
        let built = try #require(ImageHeader(ico))
        #expect(built.size == PixelSize(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF))
        #expect(PixelSize(width: Int.max, height: 2).pixelCount == Int.max)
        #expect(PixelSize(width: 3, height: 5).pixelCount == 15)

        let options = ImageDecodingOptions(scaleDownLimitBytes: 1 << 20)
        let target = options.targetSize(forSource: built.size)
        #expect(target.width * target.height * 4 <= 1 << 20)
    }

    /// `heic` report (2026-11-19): ASan saw a stack overflow inside libheif's memory reader on
    /// this 429-byte AVIF-branded file fed straight to HEIFCoder (production sends AVIF to
    /// libavif). It never recurred: not alone (hundreds of runs under ASan), not in 1,000,000
    /// heic runs. Kept so every CI run decodes it once more through libheif.
    static let avifBrandedForLibheif = Data(
        base64Encoded:
            "AAAALGZ0eXCpdmkyAAAAAGF2aWZhdmlzbXNmMWlzbzhtaWYxbWlhZk1BMUIAAADybWV0YQAAAAAAAAAoaGRscgAAAAAAAAAAcGljdAAAAAAAAAAAAAAAAGxpYmF2aWYAAAAADnBpdG0AAAAAAAEAAAAeaWxvYwAAAABEAAABAAEAAAABAAADzwAAACEAAAAoaWluZgAAAAAAAQAAABppbmZlAgAAAAABAABhdjAxQ29sb3IAAAAAamlwcnAAAABLaXBjbwAAABRpc3BlAAAAACgAAAABAAAAAQAAMRBwaXhpAAAAAAMICAgAAAAMYXYxQ4EADAAAAAATY29scm5jbHgAAgACAAKAAAAAF2lwbWEAAAAAAAAAAQABBAECgwQAAAKpbRdvdgAAAAAAAAAAAAAAAAAY//8AAAAMYXYxQ4EADAAAAAATY29scm5jbHgAAgACAAKAAAAAEGNjc3QAAAAAfAAAAAAAAEdtZGF0EgAKCQAAAAAAbXyEIDISEAC+AEkkkiQUgACud8+veaGVEgAyGjADgID9+Ea+AFFFFCQQQgAfgO88hC482e/A"
    )!

    @Test("The AVIF-branded file from the libheif report is refused with a CoderError by both decoders")
    func avifBrandedThroughLibheif() {
        let data = Self.avifBrandedForLibheif
        #expect(throws: CoderError.self) { try HEIFCoder().decode(data, options: .init()) }
        #expect(throws: CoderError.self) { try ImageCodersManager.shared.decode(data, options: .init()) }
    }
}
