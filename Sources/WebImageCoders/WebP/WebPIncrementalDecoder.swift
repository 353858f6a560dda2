import CWebP
import Foundation

/// Feeds WebP data to libwebp's incremental decoder and previews the rows decoded so far (rows
/// not yet decoded are transparent). An animated WebP shows its first frame once that frame's
/// `ANMF` chunk has arrived; the final result is a one-shot decode.
final class WebPIncrementalDecoder: IncrementalImageDecoding {
    private let options: ImageDecodingOptions
    private var decoder: OpaquePointer?
    private var fed = 0
    private var lastRows = 0
    private var stopped = false
    /// An animation: previewed by its first frame, once.
    private var animated = false
    /// The ICCP profile, read once the header has come (it precedes the image data).
    private var profile: ColorProfile?

    init(options: ImageDecodingOptions) {
        self.options = options
    }

    deinit {
        if let decoder { WebPIDelete(decoder) }
    }

    func update(_ data: Data, isComplete: Bool) throws(CoderError) -> DecodedImage? {
        if isComplete { return try WebPCoder().decode(data, options: options) }
        guard !stopped, data.count > fed else { return nil }
        if animated { return firstFrame(of: data) }
        if decoder == nil {
            // Wait for the header: the size must pass the pixel limit, and animations are skipped.
            var features = WebPBitstreamFeatures()
            let status = data.withUnsafeBytes {
                WebPGetFeatures($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count, &features)
            }
            guard status == VP8_STATUS_OK else {
                stopped = status != VP8_STATUS_NOT_ENOUGH_DATA
                return nil
            }
            let size = PixelSize(width: Int(features.width), height: Int(features.height))
            guard (try? options.checkPixelLimit(size, format: .webp)) != nil else {
                stopped = true
                return nil
            }
            if features.has_animation != 0 {
                animated = true
                return firstFrame(of: data)
            }
            if options.colorPolicy != .ignore { profile = WebPCoder.embeddedProfile(in: data, partial: true) }
            decoder = WebPINewRGB(MODE_RGBA, nil, 0, 0)
            guard decoder != nil else {
                stopped = true
                return nil
            }
        }
        let status = data.withUnsafeBytes { bytes in
            WebPIAppend(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + fed, bytes.count - fed)
        }
        fed = data.count
        guard status == VP8_STATUS_OK || status == VP8_STATUS_SUSPENDED else {
            stopped = true
            return nil
        }
        var lastRow: Int32 = 0
        var width: Int32 = 0
        var height: Int32 = 0
        var stride: Int32 = 0
        guard let rgba = WebPIDecGetRGB(decoder, &lastRow, &width, &height, &stride), lastRow > lastRows,
            width > 0, height > 0
        else { return nil }
        lastRows = Int(lastRow)
        var pixels = [UInt8](repeating: 0, count: Int(width) * Int(height) * 4)
        for row in 0..<Int(lastRow) {
            let start = row * Int(width) * 4
            pixels.withUnsafeMutableBufferPointer {
                ($0.baseAddress! + start).update(from: rgba + row * Int(stride), count: Int(width) * 4)
            }
        }
        let bitmap = Bitmap(width: Int(width), height: Int(height), hasAlpha: true, pixels: pixels)
        // Previews show the colours the final image will have.
        let image = DecodedImage(frames: [.init(bitmap: bitmap)], format: .webp, isPartial: true, colorProfile: profile)
        // A preview gets the time budget of its own (ImageDecodingOptions.maxDecodeDuration).
        return try (consume image).finished(with: options, deadline: CodingDeadline(options))
    }

    /// The first frame of an animation, once its `ANMF` chunk is whole: the data up to that
    /// chunk's end, the RIFF size set to match, is a one-frame animation the one-shot decoder
    /// composes as it composes frame 1 of the whole. `nil` until then; once shown, no more.
    private func firstFrame(of data: Data) -> DecodedImage? {
        fed = data.count
        guard let prefix = Self.firstFrameData(data) else { return nil }
        stopped = true
        var frameOptions = options
        frameOptions.firstFrameOnly = true
        guard var image = try? WebPCoder().decode(prefix, options: frameOptions) else { return nil }
        image.isPartial = true
        return image
    }

    /// `data` cut after the first `ANMF` chunk (padded to an even length) with the RIFF size
    /// rewritten; `nil` when that chunk has not fully arrived.
    static func firstFrameData(_ data: Data) -> Data? {
        guard let first = WebPFrameDecoder.frameChunks(data).first, first.offset + 8 + first.size <= data.count else {
            return nil
        }
        let end = first.offset + 8 + first.size
        var prefix = Data(data.prefix(end))
        if end & 1 == 1 { prefix.append(0) }
        WebPFrameDecoder.setRIFFSize(of: &prefix)
        return prefix
    }
}
