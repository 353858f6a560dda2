import CAVIF
import Foundation

/// Writes an AVIF image sequence a frame at a time: libavif's encoder keeps the AV1 stream's
/// state between frames, so the frames are never held together. Each frame is converted to
/// YUV (4:4:4 with an alpha plane when the first frame has alpha, else 4:2:0), encoded and
/// freed before the next; its duration is kept in milliseconds. libavif 0.11 writes no loop
/// count: readers play sequences forever.
///
/// Buffers: the encoder and its output (`avifRWData`, which libavif grows while it writes) are
/// libavif's, freed here (`avifEncoderDestroy` in `deinit`, `avifRWDataFree` after copying the
/// file out); each frame's planes are ours, made and destroyed around its `avifEncoderAddImage`.
/// Not thread-safe: one owner adds the frames in order.
final class AVIFAnimationWriter {
    private let encoder: UnsafeMutablePointer<avifEncoder>
    private let size: PixelSize
    private let deadline: CodingDeadline
    private var withAlpha: Bool?
    private var framesAdded = 0

    /// An encoder for frames of `size` at the options' quality, AVIF speed and AV1 encoder
    /// (SVT-AV1 gives way to aom for the odd sizes it refuses).
    init(size: PixelSize, options: ImageEncodingOptions) throws(CoderError) {
        guard size.width > 0, size.height > 0 else {
            throw .encodingFailed(.avif, "cannot write a \(size.width)×\(size.height) sequence")
        }
        var codec = options.avifEncoder ?? .automatic
        if codec == .svt, size.width % 2 == 1 || size.height % 2 == 1, AVIFEncoderChoice.aom.isAvailable {
            codec = .aom
        }
        let speed = min(max(options.avifSpeed ?? AVIFCoder().speed, 0), 10)
        encoder = try AVIFEncoding(speed: speed, codec: codec, options: options).makeEncoder()
        self.size = size
        deadline = CodingDeadline(options)
    }

    deinit { avifEncoderDestroy(encoder) }

    /// Encodes the next frame.
    /// - Throws: `encodingFailed` for a frame of another size or one libavif refuses;
    ///   `limitExceeded` when the time limit passed or the cancellation was raised.
    func add(_ frame: DecodedImage.Frame) throws(CoderError) {
        try frame.checkSize(size, number: framesAdded + 1, format: .avif)
        try deadline.check(.avif, "encoding")
        let alpha = withAlpha ?? frame.bitmap.hasAlpha
        withAlpha = alpha
        let planes = try AVIFEncoding.image(from: frame.bitmap, withAlpha: alpha)
        defer { avifImageDestroy(planes) }
        let milliseconds = UInt64(max(1, (frame.duration * 1000).rounded()))
        // SVT-AV1 makes this thread real-time when it starts (see ThreadScheduling).
        let scheduling = ThreadScheduling()
        defer { scheduling.restore() }
        try AVIFEncoding.check(
            avifEncoderAddImage(encoder, planes, milliseconds, AVIF_ADD_IMAGE_FLAG_NONE.rawValue),
            "cannot encode frame \(framesAdded + 1)"
        )
        framesAdded += 1
    }

    /// The file, once every frame is added.
    /// - Throws: `encodingFailed` before any frame or when libavif cannot finish it.
    func finish() throws(CoderError) -> Data {
        guard withAlpha != nil else { throw .encodingFailed(.avif, "the sequence has no frame") }
        try deadline.check(.avif, "encoding")
        let scheduling = ThreadScheduling()
        defer { scheduling.restore() }
        var output = avifRWData(data: nil, size: 0)
        defer { avifRWDataFree(&output) }
        try AVIFEncoding.check(avifEncoderFinish(encoder, &output), "cannot finish the file")
        guard let bytes = output.data else { throw .encodingFailed(.avif, "the encoder wrote nothing") }
        return Data(bytes: bytes, count: output.size)
    }
}
