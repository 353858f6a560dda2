import CAVIF
import Foundation

/// AVIF image sequences a frame at a time through libavif: each frame costs one AV1 frame's
/// decode (libavif keeps the codec's reference frames between calls), and a jump goes by way of
/// the nearest key frame before it (`avifDecoderNthImage`), not from the first frame.
///
/// Buffers: `bytes` is ours, a copy of the data made here and freed in `deinit` after the
/// decoder; libavif reads it in place and never frees it. The decoder's image and planes are
/// libavif's, valid until its next decode call; each canvas is converted into a `Bitmap` of our
/// own. Not thread-safe (``AnimationFrameDecoder``).
final class AVIFFrameDecoder: AnimationFrameDecoder {
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    private let decoder: UnsafeMutablePointer<avifDecoder>
    private let size: PixelSize
    private let frameCount: Int
    private let hasAlpha: Bool
    private let readsProfile: Bool
    private(set) var position = 0
    private(set) var colorProfile: ColorProfile?

    /// Parses the container; no frame is decoded.
    /// - Throws: `corruptData` or `truncatedData` when libavif cannot parse it.
    init(data: Data, options: ImageDecodingOptions) throws(CoderError) {
        let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = data.copyBytes(to: bytes)
        do throws(CoderError) {
            decoder = try Self.parsed(UnsafeBufferPointer(rebasing: bytes[0..<data.count]))
        } catch {
            bytes.deallocate()
            throw error
        }
        self.bytes = bytes
        let image = decoder.pointee.image.pointee
        size = PixelSize(width: Int(image.width), height: Int(image.height))
        frameCount = Int(decoder.pointee.imageCount)
        hasAlpha = decoder.pointee.alphaPresent == AVIF_TRUE
        readsProfile = options.colorPolicy != .ignore
    }

    deinit {
        avifDecoderDestroy(decoder)
        bytes.deallocate()
    }

    func nextCanvas(within deadline: CodingDeadline) throws(CoderError) -> Bitmap? {
        guard position < frameCount else { return nil }
        try deadline.check(.avif)
        try AVIFCoder.check(avifDecoderNthImage(decoder, UInt32(position)), "cannot decode frame \(position + 1)")
        let canvas = try AVIFCoder.rgba(decoder.pointee.image, size: size, hasAlpha: hasAlpha)
        if readsProfile, colorProfile == nil { colorProfile = AVIFCoder.colorProfile(decoder.pointee.image.pointee) }
        position += 1
        return canvas
    }

    func rewind() throws(CoderError) { position = 0 }

    func skip(to index: Int) -> Bool {
        position = min(max(index, 0), frameCount)
        return true
    }

    /// The sequence's facts from its container: the size, each frame's duration, alpha and
    /// orientation; no frame is decoded. Sequences loop forever, as the whole decode has them.
    /// - Throws: `corruptData`/`truncatedData` when it cannot be parsed or has no frames;
    ///   `limitExceeded` when the canvas is over ``ImageDecodingOptions/maxPixelCount``.
    static func info(of data: Data, options: ImageDecodingOptions) throws(CoderError) -> AnimationInfo {
        let read = data.withUnsafeBytes { raw in
            Result { () throws(CoderError) -> AnimationInfo in
                let decoder = try parsed(raw.assumingMemoryBound(to: UInt8.self))
                defer { avifDecoderDestroy(decoder) }
                let image = decoder.pointee.image.pointee
                let count = Int(decoder.pointee.imageCount)
                guard count > 0 else { throw .corruptData(.avif, "the AVIF sequence has no frames") }
                var durations: [TimeInterval] = []
                durations.reserveCapacity(count)
                for index in 0..<count {
                    var timing = avifImageTiming()
                    try AVIFCoder.check(
                        avifDecoderNthImageTiming(decoder, UInt32(index), &timing),
                        "cannot read frame \(index + 1)'s timing"
                    )
                    durations.append(count > 1 ? timing.duration : 0)
                }
                return AnimationInfo(
                    format: .avif,
                    canvasSize: PixelSize(width: Int(image.width), height: Int(image.height)),
                    durations: durations,
                    loopCount: 0,
                    mayHaveAlpha: decoder.pointee.alphaPresent == AVIF_TRUE,
                    orientation: AVIFCoder.orientation(image)
                )
            }
        }
        let info = try read.get()
        try options.checkPixelLimit(info.canvasSize, format: .avif)
        return info
    }

    /// A decoder with the whole decode's settings that has parsed `bytes` (which must outlive it).
    private static func parsed(
        _ bytes: UnsafeBufferPointer<UInt8>
    ) throws(CoderError) -> UnsafeMutablePointer<avifDecoder> {
        let decoder = try AVIFCoder.makeDecoder()
        do throws(CoderError) {
            try AVIFCoder.check(avifDecoderSetIOMemory(decoder, bytes.baseAddress, bytes.count), "cannot read the data")
            try AVIFCoder.check(avifDecoderParse(decoder), "cannot read the AVIF header")
        } catch {
            avifDecoderDestroy(decoder)
            throw error
        }
        return decoder
    }
}
