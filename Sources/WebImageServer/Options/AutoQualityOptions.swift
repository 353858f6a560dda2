import WebImageCoders

/// `autoquality|aq:METHOD:TARGET:MIN:MAX:ALLOWED_ERROR` as the URL gives it (imgproxy Pro's
/// option): every argument optional; what is missing comes from the server's
/// ``AutoQualitySettings``.
public struct AutoQualityOption: Sendable, Hashable, CustomStringConvertible {
    /// `none`, or the method (`ml` is read as `dssim`, as imgproxy does without networks).
    public var method: AutoQualitySettings.Method?
    public var target: Double?
    public var min: Int?
    public var max: Int?
    public var allowedError: Double?

    public init() {}

    /// Reads the option's arguments.
    /// - Throws: 400 `badOption` naming the argument that does not parse.
    init(_ arguments: ArgumentReader) throws(ProxyError) {
        try arguments.expect(1...5)
        if let name = arguments.argument(0) {
            guard let method = AutoQualitySettings.Method(name: name) else {
                throw .badOption("\(arguments.option.name): '\(name)' is not none, size, dssim, butteraugli or ml")
            }
            self.method = method
        }
        target = try arguments.number(1)
        min = try arguments.integer(2)
        max = try arguments.integer(3)
        allowedError = try arguments.number(4)
        if let target, target <= 0 { throw .badOption("\(arguments.option.name): the target must be above 0") }
        for bound in [min, max].compactMap({ $0 }) where !(1...100).contains(bound) {
            throw .badOption("\(arguments.option.name): qualities must be 1 to 100, got \(bound)")
        }
        if let allowedError, allowedError < 0 {
            throw .badOption("\(arguments.option.name): the allowed error must be 0 or more")
        }
    }

    public var description: String {
        [
            method?.rawValue, target.map { "\($0)" }, min.map(String.init), max.map(String.init),
            allowedError.map { "\($0)" },
        ]
        .map { $0 ?? "" }.joined(separator: ":")
    }
}

/// The server's autoquality (imgproxy Pro's `IMGPROXY_AUTOQUALITY_*`, with its defaults): off
/// unless a method is set here or in the URL. A quality in the URL (`q:`) turns the server's
/// default method off for that request; an `aq:` in the URL wins over both.
public struct AutoQualitySettings: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable {
        case none, size, dssim, butteraugli

        /// imgproxy's names; `ml` (a neural network's first guess, then DSSIM) is DSSIM here.
        public init?(name: String) {
            switch name.lowercased() {
            case "none": self = .none
            case "size": self = .size
            case "dssim", "ml": self = .dssim
            case "butteraugli": self = .butteraugli
            default: return nil
            }
        }
    }

    /// Default ``Method/none``.
    public var method = Method.none
    /// The measure's target: bytes for size, the difference otherwise. Default 0.02 (DSSIM).
    public var target = 0.02
    /// The lowest quality the search may pick. Default 70.
    public var min = 70
    /// The highest quality the search may pick. Default 80.
    public var max = 80
    /// Per-format lowest qualities (quality numbers mean different things per codec). Default
    /// AVIF 60.
    public var formatMin: [ImageFormat: Int] = [.avif: 60]
    /// Per-format highest qualities. Default AVIF 65.
    public var formatMax: [ImageFormat: Int] = [.avif: 65]
    /// How far from the target a difference may be and still be taken at once. Default 0.001.
    public var allowedError = 0.001
    /// The most encodes one request's search makes. Default 6.
    public var maxEncodes = 6

    public init() {}

    /// The formats whose quality autoquality chooses; others are written as always.
    public static let formats: Set<ImageFormat> = [.jpeg, .webp, .avif, .jxl]

    /// The search for one result in `format`: `nil` when autoquality is off for it (no method,
    /// a `q:` without `aq:`, or a format without a quality).
    /// - Throws: 400 `badOption` for a size search without a byte target, or a range whose
    ///   minimum is above its maximum.
    public func resolved(
        _ option: AutoQualityOption?,
        urlQuality: Int?,
        format: ImageFormat
    ) throws(ProxyError) -> AutoQuality? {
        guard Self.formats.contains(format) else { return nil }
        if option == nil, urlQuality != nil { return nil }
        let method = option?.method ?? self.method
        let chosen: AutoQuality.Method
        switch method {
        case .none: return nil
        case .size: chosen = .size
        case .dssim: chosen = .dssim
        case .butteraugli: chosen = .butteraugli
        }
        let target = option?.target ?? target
        if chosen == .size, target < 1 {
            throw .badOption("autoquality: size needs a target in bytes (aq:size:BYTES)")
        }
        let low = option?.min ?? formatMin[format] ?? min
        let high = option?.max ?? formatMax[format] ?? max
        guard low <= high else {
            throw .badOption("autoquality: the lowest quality (\(low)) is above the highest (\(high))")
        }
        return AutoQuality(
            method: chosen,
            target: target,
            range: low...high,
            allowedError: option?.allowedError ?? allowedError,
            maxEncodes: maxEncodes
        )
    }

    /// The settings as an ETag input.
    var fingerprint: String {
        let bounds = { (map: [ImageFormat: Int]) in
            map.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }.joined(
                separator: ","
            )
        }
        return
            "aq=\(method.rawValue):\(target):\(min)-\(max):\(bounds(formatMin))/\(bounds(formatMax)):\(allowedError):\(maxEncodes)"
    }
}
