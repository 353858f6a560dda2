import WebImageCoders

/// `format:best` (`f:best`, `@best`; imgproxy Pro's): the result is written in whichever of
/// the candidate formats gives the fewest bytes for it. Candidates are the preferred formats
/// and the one format negotiation picks from `Accept` (so one `Accept` bucket always gets the
/// same answer, and caches in front stay right). Flat images (complexity under
/// ``complexityThreshold``) are written losslessly (PNG, or lossless WebP or JPEG XL when they
/// are candidates); others lossy, trying the two most efficient candidates (AVIF, JPEG XL,
/// WebP, JPEG, in that order) at their own qualities or autoquality, or only the first above
/// ``maxResolution``. Animations take the negotiated format when it animates, else GIF.
public struct BestFormatSettings: Sendable, Hashable {
    /// Formats `best` may write besides the negotiated one (`IMGPROXY_PREFERRED_FORMATS`).
    /// Default JPEG, PNG, GIF, as imgproxy's.
    public var preferredFormats: [ImageFormat] = [.jpeg, .png, .gif]
    /// Below this `BestFormat.complexity(of:)` the result is written losslessly; 0 never
    /// (`IMGPROXY_BEST_FORMAT_COMPLEXITY_THRESHOLD`). Default 5.5.
    public var complexityThreshold = 5.5
    /// Above this many megapixels only the most efficient lossy candidate is encoded; 0: no
    /// limit (`IMGPROXY_BEST_FORMAT_MAX_RESOLUTION`). Default 0.
    public var maxResolution = 0.0
    /// A URL naming no format gets `best` (`IMGPROXY_BEST_FORMAT_BY_DEFAULT`). Default off.
    public var byDefault = false
    /// `best` still sends `skip_processing` formats as they are
    /// (`IMGPROXY_BEST_FORMAT_ALLOW_SKIPS`). Default off: `best` processes them.
    public var allowsSkips = false

    public init() {}

    /// The candidates for a result: the preferred formats and `negotiated`, in that order.
    func candidates(negotiated: ImageFormat?) -> [ImageFormat] {
        var formats = preferredFormats.filter { ProcessingOptions.outputFormats.contains($0) }
        if let negotiated, !formats.contains(negotiated) { formats.append(negotiated) }
        return formats
    }

    /// The settings as an ETag input.
    var fingerprint: String {
        "best=\(preferredFormats.map(\.rawValue).joined(separator: ",")):\(complexityThreshold):\(maxResolution)"
    }
}
