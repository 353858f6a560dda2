import WebImageCoders

/// How the proxy's encoders trade time for bytes, server-wide (imgproxy's `IMGPROXY_AVIF_SPEED`
/// and `IMGPROXY_JXL_EFFORT`, and the AV1 encoder libavif uses). Part of every result's ETag:
/// other settings make other bytes.
public struct ProxyEncoders: Sendable, Hashable {
    /// AVIF's speed, 0 (slowest, smallest) to 10 (fastest). Default 6: at equal SSIMULACRA2 about
    /// 10 % fewer bytes than imgproxy's 8 for about 3× the encode time (the README has the table).
    public var avifSpeed = 6
    /// The AV1 encoder. Default `.automatic` (aom on Debian).
    public var avifEncoder = AVIFEncoderChoice.automatic
    /// JPEG XL's effort, 1 (fastest) to 9 (smallest). Default 4, imgproxy's.
    public var jxlEffort = 4

    public init() {}

    /// Encoding options at `quality` (1–100) with these settings, no time limit (the render's
    /// deadline stops the work).
    func options(quality: Int) -> ImageEncodingOptions {
        var options = ImageEncodingOptions(quality: Double(quality) / 100, maxEncodeDuration: nil)
        options.avifSpeed = avifSpeed
        options.avifEncoder = avifEncoder
        options.jxlEffort = jxlEffort
        return options
    }

    /// The settings as an ETag input.
    var fingerprint: String { "avif-speed=\(avifSpeed),av1=\(avifEncoder.rawValue),jxl-effort=\(jxlEffort)" }
}
