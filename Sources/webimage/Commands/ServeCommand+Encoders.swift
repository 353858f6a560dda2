import ArgumentParser
import Foundation
import WebImageCoders
import WebImageServer

extension ServeCommand {
    /// Qualities per format, the canonical header, JPEG XL negotiation and the encoders' speed and
    /// effort (imgproxy's `IMGPROXY_FORMAT_QUALITY`, `IMGPROXY_SET_CANONICAL_HEADER`,
    /// `IMGPROXY_AUTO_JXL`, `IMGPROXY_AVIF_SPEED`, `IMGPROXY_JXL_EFFORT`).
    func applyEncoders(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        for entry in try settings.list("format-quality", flags: formatQuality, imgproxy: ["IMGPROXY_FORMAT_QUALITY"]) {
            let (format, value) = try Self.formatQuality(entry, setting: "format-quality")
            configuration.formatQuality[format] = value
        }
        settings.showDefault("format-quality", as: Self.described(configuration.formatQuality))
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
        configuration.negotiatesWebP = try settings.switchedOn(
            "auto-webp",
            flag: autoWebP,
            imgproxy: ["IMGPROXY_AUTO_WEBP", "IMGPROXY_ENABLE_WEBP_DETECTION"]
        )
        configuration.negotiatesAVIF = try settings.switchedOn(
            "auto-avif",
            flag: autoAVIF,
            imgproxy: ["IMGPROXY_AUTO_AVIF", "IMGPROXY_ENABLE_AVIF_DETECTION"]
        )
        for (setting, flag, variable, format) in [
            ("enforce-webp", enforceWebP, "IMGPROXY_ENFORCE_WEBP", OutputFormatChoice.NegotiatedFormats.webp),
            ("enforce-avif", enforceAVIF, "IMGPROXY_ENFORCE_AVIF", .avif),
            ("enforce-jxl", enforceJXL, "IMGPROXY_ENFORCE_JXL", .jxl),
        ]
        where try settings.switchedOn(setting, flag: flag, imgproxy: [variable]) {
            configuration.enforcedFormats.insert(format)
        }
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
        try applyAutoQuality(settings, to: &configuration)
    }

    /// imgproxy Pro's `IMGPROXY_AUTOQUALITY_*`.
    private func applyAutoQuality(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        var autoQuality = AutoQualitySettings()
        autoQuality.method = try settings.value(
            "autoquality-method",
            flag: try perImage.autoQualityMethod.map(Self.autoQualityMethod),
            default: autoQuality.method,
            imgproxy: ["IMGPROXY_AUTOQUALITY_METHOD"],
            parse: Self.autoQualityMethod
        )
        autoQuality.target = try settings.value(
            "autoquality-target",
            flag: perImage.autoQualityTarget,
            default: autoQuality.target,
            imgproxy: ["IMGPROXY_AUTOQUALITY_TARGET"]
        ) { text in try Self.positive(ServeSettings.number(text)) }
        autoQuality.min = try settings.value(
            "autoquality-min",
            flag: perImage.autoQualityMin,
            default: autoQuality.min,
            imgproxy: ["IMGPROXY_AUTOQUALITY_MIN"]
        ) { text in try Self.bounded(ServeSettings.integer(text), 1...100) }
        autoQuality.max = try settings.value(
            "autoquality-max",
            flag: perImage.autoQualityMax,
            default: autoQuality.max,
            imgproxy: ["IMGPROXY_AUTOQUALITY_MAX"]
        ) { text in try Self.bounded(ServeSettings.integer(text), 1...100) }
        autoQuality.allowedError = try settings.value(
            "autoquality-allowed-error",
            flag: perImage.autoQualityAllowedError,
            default: autoQuality.allowedError,
            imgproxy: ["IMGPROXY_AUTOQUALITY_ALLOWED_ERROR"]
        ) { text in try ServeSettings.number(text) }
        for (name, flags, variable) in [
            ("autoquality-format-min", perImage.autoQualityFormatMin, "IMGPROXY_AUTOQUALITY_FORMAT_MIN"),
            ("autoquality-format-max", perImage.autoQualityFormatMax, "IMGPROXY_AUTOQUALITY_FORMAT_MAX"),
        ] {
            for entry in try settings.list(name, flags: flags, imgproxy: [variable]) {
                let (format, value) = try Self.formatQuality(entry, setting: name)
                if name.hasSuffix("min") {
                    autoQuality.formatMin[format] = value
                } else {
                    autoQuality.formatMax[format] = value
                }
            }
            settings.showDefault(
                name,
                as: Self.described(name.hasSuffix("min") ? autoQuality.formatMin : autoQuality.formatMax)
            )
        }
        for (name, value) in [("autoquality-min", autoQuality.min), ("autoquality-max", autoQuality.max)]
        where !(1...100).contains(value) {
            throw ValidationError("--\(name) must be 1 to 100, got \(value)")
        }
        // Flags skip the parse closures above: their values are checked here.
        guard autoQuality.target > 0, autoQuality.target.isFinite else {
            throw ValidationError("--autoquality-target must be above 0, got \(autoQuality.target)")
        }
        guard autoQuality.allowedError >= 0 else {
            throw ValidationError("--autoquality-allowed-error must be 0 or more, got \(autoQuality.allowedError)")
        }
        guard autoQuality.min <= autoQuality.max else {
            throw ValidationError(
                "--autoquality-min (\(autoQuality.min)) is above --autoquality-max (\(autoQuality.max))"
            )
        }
        configuration.autoQuality = autoQuality
        try applyBestFormat(settings, to: &configuration)
    }

    /// imgproxy Pro's `IMGPROXY_PREFERRED_FORMATS` and `IMGPROXY_BEST_FORMAT_*`.
    private func applyBestFormat(_ settings: ServeSettings, to configuration: inout ImageProxyConfiguration) throws {
        var best = BestFormatSettings()
        let preferred = try settings.value(
            "preferred-formats",
            flag: perImage.preferredFormats,
            default: best.preferredFormats.map(\.rawValue).joined(separator: ","),
            imgproxy: ["IMGPROXY_PREFERRED_FORMATS"]
        ) { $0 }
        best.preferredFormats = try Self.formats(preferred)
        best.complexityThreshold = try settings.value(
            "best-format-complexity-threshold",
            flag: perImage.bestFormatComplexityThreshold,
            default: best.complexityThreshold,
            imgproxy: ["IMGPROXY_BEST_FORMAT_COMPLEXITY_THRESHOLD"]
        ) { text in try Self.notNegative(ServeSettings.number(text)) }
        best.maxResolution = try settings.value(
            "best-format-max-resolution",
            flag: perImage.bestFormatMaxResolution,
            default: best.maxResolution,
            imgproxy: ["IMGPROXY_BEST_FORMAT_MAX_RESOLUTION"]
        ) { text in try Self.notNegative(ServeSettings.number(text)) }
        best.byDefault = try settings.switchedOn(
            "best-format-by-default",
            flag: perImage.bestFormatByDefault,
            imgproxy: ["IMGPROXY_BEST_FORMAT_BY_DEFAULT"]
        )
        best.allowsSkips = try settings.switchedOn(
            "best-format-allow-skips",
            flag: perImage.bestFormatAllowSkips,
            imgproxy: ["IMGPROXY_BEST_FORMAT_ALLOW_SKIPS"]
        )
        for (name, value) in [
            ("best-format-complexity-threshold", best.complexityThreshold),
            ("best-format-max-resolution", best.maxResolution),
        ] where !(value >= 0 && value.isFinite) {
            throw ValidationError("--\(name) must be 0 or more, got \(value)")
        }
        configuration.bestFormat = best
    }

    /// Qualities per format as the settings write them: `avif=63,webp=79`.
    private static func described(_ qualities: [ImageFormat: Int]) -> String {
        qualities.map { "\($0.key.rawValue)=\($0.value)" }.sorted().joined(separator: ",")
    }

    /// A comma-separated list of formats the proxy writes.
    private static func formats(_ text: String) throws -> [ImageFormat] {
        try text.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let format = ProcessingOptions.format(named: name), ProcessingOptions.outputFormats.contains(format)
            else { throw ValidationError("--preferred-formats: '\(name)' is not a format the proxy writes") }
            return format
        }
    }

    private static func notNegative(_ value: Double) throws -> Double {
        guard value >= 0, value.isFinite else { throw ValidationError("must be 0 or more, got \(value)") }
        return value
    }

    private static func autoQualityMethod(_ text: String) throws -> AutoQualitySettings.Method {
        guard let method = AutoQualitySettings.Method(name: text) else {
            throw ValidationError("--autoquality-method '\(text)' is not one of none, size, dssim, butteraugli, ml")
        }
        return method
    }

    private static func positive(_ value: Double) throws -> Double {
        guard value > 0, value.isFinite else { throw ValidationError("must be above 0, got \(value)") }
        return value
    }

    /// `FORMAT=QUALITY` (1 to 100).
    static func formatQuality(_ entry: String, setting: String) throws -> (ImageFormat, Int) {
        let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let format = ProcessingOptions.format(named: parts[0].lowercased()),
            let value = Int(parts[1]), (1...100).contains(value)
        else { throw ValidationError("--\(setting) '\(entry)' is not FORMAT=QUALITY (1 to 100)") }
        return (format, value)
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
