import ArgumentParser
import WebImageCoders
import WebImageServer

extension ServeCommand {
    /// Qualities per format, the canonical header, JPEG XL negotiation and the encoders' speed and
    /// effort (imgproxy's `IMGPROXY_FORMAT_QUALITY`, `IMGPROXY_SET_CANONICAL_HEADER`,
    /// `IMGPROXY_AUTO_JXL`, `IMGPROXY_AVIF_SPEED`, `IMGPROXY_JXL_EFFORT`).
    func applyEncoders(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        for entry in try settings.list("format-quality", flags: formatQuality, imgproxy: ["IMGPROXY_FORMAT_QUALITY"]) {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let format = ProcessingOptions.format(named: parts[0].lowercased()),
                let value = Int(parts[1]), (1...100).contains(value)
            else { throw ValidationError("--format-quality '\(entry)' is not FORMAT=QUALITY (1 to 100)") }
            configuration.formatQuality[format] = value
        }
        configuration.setsCanonicalHeader = try settings.switchedOn(
            "set-canonical-header",
            flag: setCanonicalHeader,
            imgproxy: ["IMGPROXY_SET_CANONICAL_HEADER"]
        )
        configuration.negotiatesJXL = try settings.switchedOn(
            "auto-jxl",
            flag: autoJXL,
            imgproxy: ["IMGPROXY_AUTO_JXL"]
        )
        var encoders = ProxyEncoders()
        encoders.avifSpeed = try settings.value(
            "avif-speed",
            flag: avifSpeed,
            default: encoders.avifSpeed,
            imgproxy: ["IMGPROXY_AVIF_SPEED"]
        ) { text in try Self.bounded(ServeSettings.integer(text), 0...10) }
        encoders.avifEncoder = try settings.value(
            "avif-encoder",
            flag: avifEncoder.map { try Self.avifEncoder($0) },
            default: encoders.avifEncoder,
            parse: Self.avifEncoder
        )
        encoders.jxlEffort = try settings.value(
            "jxl-effort",
            flag: jxlEffort,
            default: encoders.jxlEffort,
            imgproxy: ["IMGPROXY_JXL_EFFORT"]
        ) { text in try Self.bounded(ServeSettings.integer(text), 1...9) }
        for (name, value, range) in [
            ("avif-speed", encoders.avifSpeed, 0...10), ("jxl-effort", encoders.jxlEffort, 1...9),
        ]
        where !range.contains(value) {
            throw ValidationError("--\(name) must be \(range.lowerBound) to \(range.upperBound), got \(value)")
        }
        configuration.encoders = encoders
    }

    private static func bounded(_ value: Int, _ range: ClosedRange<Int>) throws -> Int {
        guard range.contains(value) else {
            throw ValidationError("must be \(range.lowerBound) to \(range.upperBound), got \(value)")
        }
        return value
    }

    /// An AV1 encoder this libavif has.
    private static func avifEncoder(_ text: String) throws -> AVIFEncoderChoice {
        let names = AVIFEncoderChoice.allCases.map(\.rawValue).joined(separator: ", ")
        guard let choice = AVIFEncoderChoice(rawValue: text.lowercased()) else {
            throw ValidationError("--avif-encoder '\(text)' is not one of \(names)")
        }
        guard choice.isAvailable else {
            throw ValidationError("--avif-encoder '\(text)': libavif here has no such encoder")
        }
        return choice
    }
}
