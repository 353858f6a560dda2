import CWebImageShims
import Foundation

/// What an image's header says about it, read without decoding: the format, the canvas size and,
/// for animations, the frame count.
///
/// ```swift
/// if let header = ImageHeader(data) {
///     print(header.size, header.frameCount)      // 4096×4096 15
/// }
/// ```
///
/// Reads JPEG (up to the frame header), PNG and APNG (up to the first `IDAT`), GIF (every block
/// header, skipping pixel data), WebP (every chunk header), AVIF (libavif's container parse:
/// the primary image's size and the sequence's frame count), HEIC/HEIF (libheif's container
/// parse: the primary image as displayed), JPEG XL (libjxl's codestream and frame headers),
/// BMP (the DIB header), TIFF (the first IFD) and ICO (the largest entry); nothing is
/// decompressed and no pixel memory is allocated. The figures are what the file *declares*: a decoder may still
/// reject the data.
public struct ImageHeader: Sendable, Hashable {
    /// The format the data was recognised as.
    public var format: ImageFormat
    /// The canvas (JPEG: the frame) size, as stored (before EXIF orientation).
    public var size: PixelSize
    /// Frames the file declares: 1 for still images; APNG's `acTL` count; GIF's image
    /// descriptors and WebP's `ANMF` chunks, counted up to the end of the data.
    public var frameCount: Int
    /// The EXIF orientation, when the header holds it before the image data: JPEG's first
    /// `Exif` APP1 segment (`.up` without one, as the decoder reads it). `nil` for the other
    /// formats (not read).
    public var orientation: ImageOrientation?
    /// Bytes the decoder holds besides the pixels while it decodes: a progressive JPEG's
    /// whole-image coefficient buffer (2 bytes a coefficient, every component at its stored
    /// resolution whatever the DCT scale: 3 bytes a pixel for 4:2:0, 6 for 4:4:4); 0 otherwise.
    /// Counted whole, though on Linux the decoder hands back the rows its output has passed, so
    /// the decode peaks near the larger of the buffer and the pixels, not their sum.
    public var decoderWorkingBytes = 0
    /// A baseline JPEG's scan read ahead of libjpeg when it is decoded at 1/8 (the value store and
    /// Huffman tables of `jpeg_scan_ahead.c`, at most); 0 for other images.
    var eighthScaleWorkingBytes = 0

    /// Reads the header of `data`; `nil` for SVG, PDF and unrecognised data, or when the header
    /// is truncated or invalid (zero dimensions included).
    public init?(_ data: Data) {
        let parsed: ImageHeader? = data.withUnsafeBytes { bytes in
            let reader = HeaderReader(bytes: bytes)
            let format = ImageFormat(sniffing: data)
            switch format {
            case .png: return reader.png()
            case .gif: return reader.gif()
            case .jpeg: return reader.jpeg()
            case .webp: return reader.webp()
            case .avif: return AVIFCoder.header(bytes)
            case .heic, .heif: return HEIFCoder.header(bytes, format: format)
            case .jxl: return JXLCoder.header(bytes)
            case .bmp: return reader.bmp()
            case .tiff: return reader.tiff()
            case .ico: return reader.ico()
            default: return nil
            }
        }
        guard let parsed, parsed.size.width > 0, parsed.size.height > 0, parsed.frameCount > 0 else { return nil }
        self = parsed
    }

    init(format: ImageFormat, size: PixelSize, frameCount: Int, orientation: ImageOrientation? = nil) {
        self.format = format
        self.size = size
        self.frameCount = frameCount
        self.orientation = orientation
    }

    /// The most bytes of decoded pixels a decode of this image with `options` holds at once
    /// (RGBA, 4 bytes a pixel): every frame at full size, or one with
    /// ``ImageDecodingOptions/firstFrameOnly``; a GIF, APNG, WebP or AVIF animation delivered smaller than
    /// its canvas, every reduced frame and one frame's canvases (it is reduced frame by frame). A JPEG decoded smaller (a thumbnail, a scale-down
    /// limit, shrink on load) counts the DCT-scaled size its decoder allocates instead of the
    /// full frame (by the decoder's own N/8 rule), and a progressive one its coefficient buffer
    /// (``decoderWorkingBytes``). An animation decoded with
    /// ``ImageDecodingOptions/framesOnDemand`` counts its first frame's canvases only. 0 when the
    /// options' pixel, frame or animation limits refuse the image (its decoder stops before
    /// allocating pixels).
    public func decodedByteCount(with options: ImageDecodingOptions) -> Int {
        let frames = options.firstFrameOnly ? 1 : frameCount
        if frames > 1, options.framesOnDemand, AnimatedImage.formats.contains(format) {
            let working = AnimatedImage.bytesPerFrame(of: format, canvas: size)
            let admitted = size.pixelCount <= options.maxPixelCount && frames <= options.maxFrameCount
            return admitted && working <= options.maxAnimationBytes ? working : 0
        }
        if frames > 1, let reduced = reducedAnimationByteCount(with: options) { return reduced }
        let canvas = size.width.multipliedReportingOverflow(by: size.height)
        let animation = canvas.partialValue.multipliedReportingOverflow(by: 4 * frames)
        guard !canvas.overflow, canvas.partialValue <= options.maxPixelCount, frames <= options.maxFrameCount,
            !animation.overflow, frames == 1 || animation.partialValue <= options.maxAnimationBytes
        else { return 0 }
        let numerator = jpegDCTNumerator(with: options)
        let frame = format == .jpeg ? JPEGCoder.dctScaled(size, by: numerator) : size
        let working = decoderWorkingBytes + (numerator == 1 ? eighthScaleWorkingBytes : 0)
        return frame.width * frame.height * 4 * frames + working
    }

    /// A GIF, APNG, WebP or AVIF animation reduced frame by frame (``AnimatedImage``): the reduced frames and
    /// one frame's canvases, 0 when the reduced frames are over the animation limit; `nil` when
    /// the options keep the canvas size, or one frame's canvases are over the limit (the
    /// animation is then decoded whole, as the decoders do).
    private func reducedAnimationByteCount(with options: ImageDecodingOptions) -> Int? {
        guard AnimatedImage.formats.contains(format), size.pixelCount <= options.maxPixelCount else { return nil }
        let target = options.targetSize(forSource: size, orientation: orientation ?? .up)
        guard target.pixelCount < size.pixelCount else { return nil }
        let working = AnimatedImage.bytesPerFrame(of: format, canvas: size)
        guard working <= options.maxAnimationBytes else { return nil }  // decoded whole (see the decoder)
        let reduced = target.pixelCount.multipliedReportingOverflow(by: 4 * frameCount)
        guard frameCount <= options.maxFrameCount, !reduced.overflow, reduced.partialValue <= options.maxAnimationBytes
        else { return 0 }
        return reduced.partialValue + working
    }

    /// The bitmap a decode with `options` allocates for one frame: JPEG's DCT-scaled size, by
    /// the decoder's own rule (the smallest N/8 covering the delivered size or the shrink-on-load
    /// minimum), for the header's EXIF orientation or the larger of both when it is unknown; the
    /// full canvas for the other formats. With neither a thumbnail box nor a scale-down limit
    /// this is also the decoded image's size.
    package func decodedFrameSize(with options: ImageDecodingOptions) -> PixelSize {
        guard format == .jpeg else { return size }
        return JPEGCoder.dctScaled(size, by: jpegDCTNumerator(with: options))
    }

    /// The N of a JPEG decode's N/8 DCT scale with `options` (8 for the other formats).
    private func jpegDCTNumerator(with options: ImageDecodingOptions) -> Int {
        guard format == .jpeg else { return 8 }
        return (orientation.map { [$0] } ?? [.up, .right]).map {
            JPEGCoder.dctScale(of: size, covering: options.reductionFloor(forSource: size, orientation: $0))
        }.max() ?? 8
    }
}

/// Bounds-checked big- and little-endian reads over a header's bytes.
private struct HeaderReader {
    let bytes: UnsafeRawBufferPointer

    func byte(_ offset: Int) -> Int? { offset >= 0 && offset < bytes.count ? Int(bytes[offset]) : nil }

    func uint16BE(_ offset: Int) -> Int? {
        guard let high = byte(offset), let low = byte(offset + 1) else { return nil }
        return high << 8 | low
    }

    func uint16LE(_ offset: Int) -> Int? {
        guard let low = byte(offset), let high = byte(offset + 1) else { return nil }
        return high << 8 | low
    }

    func uint24LE(_ offset: Int) -> Int? {
        guard let low = uint16LE(offset), let high = byte(offset + 2) else { return nil }
        return high << 16 | low
    }

    func uint32BE(_ offset: Int) -> Int? {
        guard let high = uint16BE(offset), let low = uint16BE(offset + 2) else { return nil }
        return high << 16 | low
    }

    func uint32LE(_ offset: Int) -> Int? {
        guard let low = uint16LE(offset), let high = uint16LE(offset + 2) else { return nil }
        return high << 16 | low
    }

    /// A four-letter chunk type; `nil` past the end or when it is not printable ASCII (damage,
    /// or zeros: a walk over them would take one step per 8 bytes of nothing).
    func tag(_ offset: Int) -> String? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        let letters = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4])
        guard letters.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: letters, as: UTF8.self)
    }

    /// IHDR, then chunks up to the first IDAT for an `acTL`.
    func png() -> ImageHeader? {
        guard tag(12) == "IHDR", let width = uint32BE(16), let height = uint32BE(20) else { return nil }
        var frames = 1
        var offset = 8
        while let length = uint32BE(offset), let type = tag(offset + 4), type != "IDAT", type != "IEND" {
            if type == "acTL", let declared = uint32BE(offset + 8) { frames = declared }
            offset += 12 + length
        }
        return ImageHeader(format: .png, size: PixelSize(width: width, height: height), frameCount: frames)
    }

    /// The logical screen, then every block's header (pixel data is skipped sub-block by
    /// sub-block) to count the image descriptors.
    func gif() -> ImageHeader? {
        guard let width = uint16LE(6), let height = uint16LE(8), let flags = byte(10) else { return nil }
        var offset = 13 + (flags & 0x80 != 0 ? 3 << ((flags & 7) + 1) : 0)
        var frames = 0
        func skipSubBlocks(from start: Int) -> Int? {
            var position = start
            while let length = byte(position) {
                position += 1
                if length == 0 { return position }
                position += length
            }
            return nil
        }
        scan: while let introducer = byte(offset) {
            switch introducer {
            case 0x2C:  // image descriptor, optional local colour table, LZW code size, data
                guard let localFlags = byte(offset + 9) else { break scan }
                frames += 1
                offset += 10 + (localFlags & 0x80 != 0 ? 3 << ((localFlags & 7) + 1) : 0) + 1
            case 0x21:  // extension: label, then sub-blocks
                offset += 2
            default:  // trailer, or damage: the decoder has the last word
                break scan
            }
            guard let next = skipSubBlocks(from: offset) else { break }
            offset = next
        }
        return ImageHeader(format: .gif, size: PixelSize(width: width, height: height), frameCount: max(1, frames))
    }

    /// Markers up to the first frame header (SOF0–SOF15 but DHT, JPG and DAC). Stray bytes
    /// between segments are skipped, as libjpeg does.
    func jpeg() -> ImageHeader? {
        var offset = 2
        var orientation: ImageOrientation?
        while let value = byte(offset) {
            guard value == 0xFF else {
                offset += 1
                continue
            }
            guard let marker = byte(offset + 1) else { return nil }
            switch marker {
            case 0xFF:  // fill byte
                offset += 1
                continue
            case 0x01, 0xD0...0xD7:  // no payload
                offset += 2
                continue
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                guard let height = uint16BE(offset + 5), let width = uint16BE(offset + 7) else { return nil }
                var header = ImageHeader(
                    format: .jpeg,
                    size: PixelSize(width: width, height: height),
                    frameCount: 1,
                    orientation: orientation ?? .up
                )
                // Progressive frames (SOF2, SOF6, SOF10, SOF14) are decoded through a buffer of
                // every coefficient; baseline ones (SOF0, SOF1) at 1/8 have their scan read ahead.
                let coefficientBytes = jpegCoefficientBytes(frame: offset, width: width, height: height)
                if [0xC2, 0xC6, 0xCA, 0xCE].contains(marker) {
                    header.decoderWorkingBytes = coefficientBytes
                } else if marker == 0xC0 || marker == 0xC1 {
                    header.eighthScaleWorkingBytes = wi_jpeg_scan_ahead_bytes(coefficientBytes / 128)
                }
                return header
            case 0xD9, 0xDA:  // end of image or start of scan before any frame header
                return nil
            default:
                guard let length = uint16BE(offset + 2), length >= 2 else { return nil }
                if marker == 0xE1, orientation == nil,
                    let exif = exifOrientation(segment: offset + 4, length: length - 2)
                {
                    orientation = exif
                }
                offset += 2 + length
            }
        }
        return nil
    }

    /// The size of libjpeg's whole-image coefficient buffer for the frame header at `frame`: per
    /// component, its 8×8 blocks (rounded up to its sampling factors) of 64 two-byte coefficients.
    private func jpegCoefficientBytes(frame: Int, width: Int, height: Int) -> Int {
        guard let count = byte(frame + 9), count > 0 else { return 0 }
        // Each component's sampling factors (at least 1): two passes over the frame header, no
        // array (this runs on every download's first bytes).
        func factors(_ index: Int) -> (h: Int, v: Int)? {
            byte(frame + 11 + 3 * index).map { (max($0 >> 4, 1), max($0 & 15, 1)) }
        }
        var (maxH, maxV) = (1, 1)
        for index in 0..<count {
            guard let factor = factors(index) else { return 0 }
            (maxH, maxV) = (max(maxH, factor.h), max(maxV, factor.v))
        }
        func roundUp(_ value: Int, _ multiple: Int) -> Int { (value + multiple - 1) / multiple * multiple }
        var total = 0
        for index in 0..<count {
            guard let factor = factors(index) else { return 0 }
            let columns = (width * factor.h + maxH * 8 - 1) / (maxH * 8)
            let rows = (height * factor.v + maxV * 8 - 1) / (maxV * 8)
            total += roundUp(columns, factor.h) * roundUp(rows, factor.v) * 64 * 2
        }
        return total
    }

    /// The orientation in an APP1 segment's `length` bytes at `start`, when they are EXIF (the
    /// decoder reads the first such segment; an EXIF block without the tag reads as `.up`).
    private func exifOrientation(segment start: Int, length: Int) -> ImageOrientation? {
        guard length >= 6, start + length <= bytes.count else { return nil }
        let segment = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        guard segment.starts(with: Array("Exif\0\0".utf8)) else { return nil }
        return EXIFReader.orientation(in: segment) ?? .up
    }

    /// The DIB header after the 14-byte file header: `BITMAPCOREHEADER` (16-bit sizes) or any
    /// later one (32-bit; a negative height is a top-down bitmap).
    func bmp() -> ImageHeader? {
        guard let headerSize = uint32LE(14) else { return nil }
        let width: Int
        let height: Int
        if headerSize == 12 {
            guard let w = uint16LE(18), let h = uint16LE(20) else { return nil }
            (width, height) = (w, h)
        } else {
            guard headerSize >= 16, let w = uint32LE(18), let h = uint32LE(22) else { return nil }
            (width, height) = (Int(Int32(truncatingIfNeeded: w)), abs(Int(Int32(truncatingIfNeeded: h))))
        }
        guard width > 0 else { return nil }
        return ImageHeader(format: .bmp, size: PixelSize(width: width, height: height), frameCount: 1)
    }

    /// `ImageWidth` and `ImageLength` of the first IFD (SHORT or LONG), in the file's byte order.
    func tiff() -> ImageHeader? {
        let bigEndian = byte(0) == 0x4D
        func u16(_ offset: Int) -> Int? { bigEndian ? uint16BE(offset) : uint16LE(offset) }
        func u32(_ offset: Int) -> Int? { bigEndian ? uint32BE(offset) : uint32LE(offset) }
        guard let ifd = u32(4), let entries = u16(ifd) else { return nil }
        var width: Int?
        var height: Int?
        for index in 0..<entries {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return nil }
            guard tag == 256 || tag == 257 else { continue }
            let value = type == 3 ? u16(entry + 8) : type == 4 ? u32(entry + 8) : nil
            if tag == 256 { width = value } else { height = value }
        }
        guard let width, let height else { return nil }
        return ImageHeader(format: .tiff, size: PixelSize(width: width, height: height), frameCount: 1)
    }

    /// The largest entry of the icon directory; a PNG-compressed entry's size is its `IHDR`'s
    /// (a directory byte of 0 means 256 or more).
    func ico() -> ImageHeader? {
        guard let count = uint16LE(4), count > 0 else { return nil }
        var largest: PixelSize?
        for index in 0..<count {
            let entry = 6 + index * 16
            guard let w = byte(entry), let h = byte(entry + 1), let offset = uint32LE(entry + 12) else { break }
            var size = PixelSize(width: w == 0 ? 256 : w, height: h == 0 ? 256 : h)
            let embedded = HeaderReader(bytes: UnsafeRawBufferPointer(rebasing: bytes[min(offset, bytes.count)...]))
            if embedded.uint32BE(0) == 0x8950_4E47, embedded.tag(12) == "IHDR",
                let pngWidth = embedded.uint32BE(16), let pngHeight = embedded.uint32BE(20)
            {
                size = PixelSize(width: pngWidth, height: pngHeight)
            }
            if largest.map({ size.pixelCount > $0.pixelCount }) ?? true { largest = size }
        }
        return largest.map { ImageHeader(format: .ico, size: $0, frameCount: 1) }
    }

    /// `VP8 `, `VP8L` or `VP8X` (then every chunk header, counting `ANMF`).
    func webp() -> ImageHeader? {
        guard let type = tag(12), let length = uint32LE(16) else { return nil }
        let payload = 20
        switch type {
        case "VP8 ":
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            guard byte(payload + 3) == 0x9D, byte(payload + 4) == 0x01, byte(payload + 5) == 0x2A,
                let width = uint16LE(payload + 6), let height = uint16LE(payload + 8)
            else { return nil }
            return ImageHeader(
                format: .webp,
                size: PixelSize(width: width & 0x3FFF, height: height & 0x3FFF),
                frameCount: 1
            )
        case "VP8L":
            guard byte(payload) == 0x2F, let bits = uint32LE(payload + 1) else { return nil }
            return ImageHeader(
                format: .webp,
                size: PixelSize(width: (bits & 0x3FFF) + 1, height: (bits >> 14 & 0x3FFF) + 1),
                frameCount: 1
            )
        case "VP8X":
            guard let flags = byte(payload), let width = uint24LE(payload + 4), let height = uint24LE(payload + 7)
            else { return nil }
            var frames = 0
            if flags & 0x02 != 0, let riffSize = uint32LE(4) {
                let end = min(bytes.count, 8 + riffSize)
                var offset = payload + length + (length & 1)
                while offset + 8 <= end, let chunk = tag(offset), let size = uint32LE(offset + 4) {
                    if chunk == "ANMF" { frames += 1 }
                    offset += 8 + size + (size & 1)
                }
            }
            return ImageHeader(
                format: .webp,
                size: PixelSize(width: width + 1, height: height + 1),
                frameCount: max(1, frames)
            )
        default:
            return nil
        }
    }
}
